"""How a Function call with a dual input gives its outputs tangents (forward-mode AD).

A user's Function gives them with its `jvp(ctx, *tangents)`, as in PyTorch. Among Genesis's own
Functions, a `linear` one (views, copies: linear in its first argument, the others being
parameters) applies itself to that argument's tangent, so a view's tangent is the same view of
its input's tangent. Every other one pushes the tangents through its own backward by the
double-backward trick: g(u) = J^T u is linear in the cotangent u, so the gradient of g(u) . t
with respect to u is J t. That backward runs on the node its forward just filled, so forward
runs once and a random op's tangent follows its own draw.

An in-place op writes its result's tangent into the tangent its tensor has (`assign_tangent`),
so views sharing that tangent see the write.
"""

from . import forward_ad, function, grad_mode
from .forward_ad import set_tangent, tangent_of


def apply_dual(cls, args, kwargs):
    """`cls.apply(*args, **kwargs)` where some argument is a dual tensor: the outputs, recorded
    in the graph as usual, with their tangents."""
    tensor = function.tensor_type()
    tangents = [tangent_of(a) if isinstance(a, tensor) else None for a in args]
    requires = tuple([isinstance(a, tensor) and function._requires_grad(a) for a in args])
    needs = requires if not cls._internal else tuple(
        [r or t is not None for r, t in zip(requires, tangents)])
    ctx = function.node_for(cls, args, needs)
    outputs = _forward(cls, ctx, args, kwargs)
    keep = grad_mode.is_grad_enabled() and (any(requires) or any(
        t is not None and t.requires_grad for t in tangents))
    with forward_ad.suspended():
        pushed = _output_tangents(cls, ctx, args, kwargs, tangents, outputs, keep)
    if grad_mode.is_grad_enabled() and any(requires):
        function.record_inputs(ctx, args, requires)
        outputs = function._wire_outputs(ctx, args, outputs)
    elif grad_mode.is_grad_enabled():
        function._mark_untracked_view(outputs)
    _attach(ctx, outputs, pushed)
    return outputs


def _forward(cls, ctx, args, kwargs):
    """The Function's forward with grad mode off and no tangents flowing inside it."""
    state = grad_mode._state
    enabled, state.enabled = state.enabled, False
    try:
        with forward_ad.suspended():
            return function._forward(cls, ctx, args, kwargs)
    finally:
        state.enabled = enabled


def _output_tangents(cls, ctx, args, kwargs, tangents, outputs, keep):
    """The tangent of each output (a tuple, one per output; None where there is none)."""
    if not any(_differentiable(o) for o in _as_tuple(outputs)):
        return (None,) * len(_as_tuple(outputs))
    if not cls._internal:
        return _user_jvp(cls, ctx, args, tangents)
    if cls.linear and all(t is None for t in tangents[1:]):
        return _as_tuple(cls.apply(tangents[0], *args[1:], **kwargs))
    return _through_backward(ctx, _as_tuple(outputs), tangents, keep)


def _user_jvp(cls, ctx, args, tangents):
    """A user's `jvp(ctx, *tangents)`: zeros for a tensor input without a tangent, None for
    other arguments; `ctx.saved_tensors` reads what forward gave `ctx.save_for_forward`."""
    tensor = function.tensor_type()
    given = [t if t is not None or not isinstance(a, tensor) else a.new_zeros(a.shape)
             for a, t in zip(args, tangents)]
    ctx._jvp_saved = ctx.__dict__.get("_saved_for_forward", ())
    try:
        return _as_tuple(cls.jvp(ctx, *given))
    finally:
        del ctx._jvp_saved


def _through_backward(ctx, outputs, tangents, keep):
    """J t for one node by the double-backward trick: its backward at dummy cotangents u, then
    the gradient of (backward . tangents) with respect to u."""
    from .engine import grad
    tensor = function.tensor_type()
    with grad_mode.enable_grad(), forward_ad.pushing_tangents():
        dummies = tuple([_dummy(o) if isinstance(o, tensor) else None for o in outputs])
        vjps = ctx.apply(dummies)
        pairs = [(g, t) for g, t in zip(vjps, tangents) if g is not None and t is not None]
        for g, _ in pairs:
            if not g.requires_grad:
                raise NotImplementedError(f"Trying to use forward AD with {ctx.name()} that does "
                                          "not support it because it has not been implemented "
                                          "yet.")
        wrt = [u for u in dummies if u is not None and u.requires_grad]
        if not pairs or not wrt:
            return (None,) * len(outputs)
        pushed = iter(grad([g for g, _ in pairs], wrt, [t.to(g.dtype) for g, t in pairs],
                           create_graph=keep, allow_unused=True, materialize_grads=True))
        return tuple([_unshared(next(pushed), tangents) if u is not None and u.requires_grad
                      else None for u in dummies])


def _unshared(pushed, tangents):
    """`pushed`, copied where it shares memory with an input's tangent (an op whose backward
    passes the gradient on as is): a new output's tangent is its own."""
    storage = pushed._storage
    if any(t is not None and t._storage is storage for t in tangents):
        return pushed.clone()
    return pushed


def _dummy(out):
    """A zero cotangent for `out`, to differentiate against where the output is floating."""
    u = out.new_zeros(out.shape)
    return u.requires_grad_() if _differentiable(out) else u


def _differentiable(out):
    """Whether `out` is a tensor that can carry a tangent (a floating or complex one)."""
    return hasattr(out, "_fw_grad") and (out.dtype.is_floating_point or out.dtype.is_complex)


def _as_tuple(outputs):
    return outputs if isinstance(outputs, tuple) else (outputs,)


def _attach(ctx, outputs, pushed):
    """Give each floating output its tangent; an output written in place (dirty) has its own
    tangent overwritten."""
    if len(pushed) != len(_as_tuple(outputs)):
        raise RuntimeError(f"{ctx.name()}.jvp returned an incorrect number of tangents (expected "
                           f"{len(_as_tuple(outputs))}, got {len(pushed)})")
    for out, tangent in zip(_as_tuple(outputs), pushed):
        if tangent is None or not _differentiable(out):
            continue
        if id(out) in ctx._dirty:
            assign_tangent(out, tangent)
        else:
            set_tangent(out, tangent)


def assign_tangent(t, tangent):
    """After an in-place write of `t`: its tangent becomes `tangent` (zeros for None), written
    into the tangent t (or the base it views) already has."""
    own = tangent_of(t)
    if own is None:
        if tangent is None:
            return
        own = _base_tangent_view(t)
        if own is None:
            set_tangent(t, tangent)
            return
    if tangent is own:
        return
    with forward_ad.suspended():
        if tangent is None:
            own.zero_()
        else:
            own.copy_(tangent)


def _base_tangent_view(t):
    """For a view without a tangent, the same view of its base's tangent (zeros given to a base
    without one), which becomes its tangent; None for a tensor that is no view."""
    from .views import _geometry, make_view
    base = t._base
    if base is None:
        return None
    if tangent_of(base) is None:
        set_tangent(base, base.new_zeros(base.shape))
    own = make_view(tangent_of(base), *_geometry(t))
    set_tangent(t, own)
    return own
