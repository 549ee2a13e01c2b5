"""Differentiable functions and the nodes of the backward graph.

Every differentiable op is a `Function`: `forward(ctx, *args)` computes with the dispatcher under
no_grad, `backward(ctx, *grads)` is written with genesis ops, so one backward serves every device
and, run with grad mode on, is itself differentiable (higher-order gradients).

`Function.apply` gives every call a `ctx`: with grad mode on and some input requiring grad, a
`BackwardNode` that becomes the outputs' `grad_fn`; otherwise an `UntrackedNode`, which records
nothing. `records(*args)` answers that question up front, so that a hot op whose forward makes no
view can skip its Function altogether and compute its values alone. A BackwardNode keeps its
inputs' graph edges (`_edges`, one per argument; `next_functions` shows them as PyTorch does),
the tensors saved for backward with their versions, and the inputs' metadata (shape, dtype,
device) that lets the engine check and materialize gradients and backward formulas sum
gradients to the input shapes.
"""

import sys
import weakref
from types import MappingProxyType

from .. import memory_formats
from . import anomaly_mode, autocast_state, forward_ad, grad_mode, graph

_new = object.__new__


class Node:
    """A node of the backward graph: maps output gradients to input gradients."""

    _edges = ()
    _tensor_hooks = MappingProxyType({})
    _retain_grad_refs = MappingProxyType({})
    _pre_hooks = None
    _post_hooks = None
    _hooked = False  # a hook was registered on the node or its outputs: the engine looks for them

    def name(self):
        return type(self).__name__

    @property
    def next_functions(self):
        """The graph edges as PyTorch shows them: a (node, output index) pair per tensor input,
        (None, 0) for one that needs no gradient; arguments that are not tensors have none."""
        skipped = self._non_tensor_args
        return tuple([(None, 0) if edge is None else edge
                      for i, edge in enumerate(self._edges) if i not in skipped])

    _non_tensor_args = ()

    def __repr__(self):
        return f"<{self.name()} object at {hex(id(self))}>"

    @property
    def metadata(self):
        """A dict kept on the node for the user's own annotations."""
        return self.__dict__.setdefault("_metadata", {})

    def register_hook(self, hook):
        """`hook(grad_inputs, grad_outputs)` runs after this node computes its input gradients;
        what it returns (if not None) replaces grad_inputs."""
        return _add_hook(self, "_post_hooks", hook)

    def register_prehook(self, hook):
        """`hook(grad_outputs)` runs before this node, after its outputs' tensor hooks; a tuple
        it returns replaces grad_outputs."""
        return _add_hook(self, "_pre_hooks", hook)

    def tensor_hooks(self, output_nr):
        """The hooks of this node's output `output_nr` (the dict `Tensor.register_hook` fills)."""
        if "_tensor_hooks" not in self.__dict__:
            self._tensor_hooks = {}
        self._hooked = True
        return self._tensor_hooks.setdefault(output_nr, {})

    def retain_grad_of(self, tensor):
        """Set `tensor.grad` (an output of this node) whenever a gradient reaches it."""
        if "_retain_grad_refs" not in self.__dict__:
            self._retain_grad_refs = {}
        self._hooked = True
        self._retain_grad_refs[tensor._output_nr] = weakref.ref(tensor)


graph.Node.register(Node)


def _add_hook(node, attr, hook):
    """Register `hook` in the node's dict `attr` (made on first use); returns its handle."""
    from ..tensor import RemovableHandle
    hooks = node.__dict__.get(attr)
    if hooks is None:
        hooks = node.__dict__[attr] = {}
    node._hooked = True
    return RemovableHandle(hooks, hook)


class AccumulateGrad(Node):
    """The sink for a leaf tensor: adds incoming gradients into `leaf.grad`."""

    num_outputs = 1

    def __init__(self, leaf):
        self.variable = leaf

    def run_hooks(self, grad):
        """The leaf's tensor hooks, in registration order; each may replace the gradient."""
        hooks = self.variable._hooks
        if hooks:
            for hook in list(hooks.values()):
                result = hook(grad)
                if result is not None:
                    grad = result
        return grad

    def accumulate(self, grad, create_graph):
        """Add `grad` (hooks already run) into the leaf's `.grad`.

        The first gradient is stored without a copy when nothing else can see it (as PyTorch's
        AccumulateGrad steals a gradient it holds the only reference to); otherwise it is cloned
        so that `.grad` never aliases a tensor the user or the graph still holds. Later gradients
        are added in place, or out of place when `create_graph` or `.grad` has a history.
        """
        leaf = self.variable
        if leaf.grad is None:
            if create_graph:
                leaf.grad = grad.clone()
            else:
                leaf.grad = grad.detach() if _may_steal(grad, leaf) else _laid_out_as(grad, leaf)
        elif create_graph or leaf.grad.requires_grad:
            leaf.grad = leaf.grad + grad
        else:
            leaf.grad.add_(grad)
        if leaf._post_accumulate_hooks:
            for hook in list(leaf._post_accumulate_hooks.values()):
                hook(leaf)


_REFS_OF_ARGUMENT = (lambda obj: sys.getrefcount(obj))(object())
_FRESH_REFS = {}


def name_node(tensor, name):
    """Show PyTorch's node name for the op that made `tensor` (e.g. "MseLossBackward0") as its
    grad_fn's name, where Genesis composes the op of several steps or runs it under a shared
    Function: what printing the tensor and grad_fn.name() show. The caller's op always makes a
    new node; returns `tensor`."""
    node = tensor.grad_fn
    if node is not None:
        node.node_name = name
    return tensor


def _fresh_refcounts(tensor):
    """Reference counts of the backend array and storage of a tensor fresh from a kernel."""
    key = tensor.device.type
    if key not in _FRESH_REFS:
        from .. import dtypes
        from ..dispatch import kernel
        from ..tensor import Tensor
        fresh = Tensor._make(kernel("empty", key)((1,), dtypes.float32), tensor.device)
        _FRESH_REFS[key] = (sys.getrefcount(fresh._data), sys.getrefcount(fresh._storage))
    return _FRESH_REFS[key]


def _may_steal(grad, leaf):
    """True when `grad` can become `leaf.grad` as it is: same layout (unless
    enforce_grad_layout_policy(False) waives it), and no one else holds it.

    `grad` must be referenced only by AccumulateGrad.accumulate's argument (one frame more than
    a bare argument), not be a view, and its array and storage must be referenced only by itself,
    so no other tensor can see its memory. This relies on kernels returning fresh arrays (views
    are made with `make_view`, which sets `_base`).
    """
    data_refs, storage_refs = _fresh_refcounts(grad)
    return (sys.getrefcount(grad) - 1 <= _REFS_OF_ARGUMENT and grad._base is None
            and grad.dtype is leaf.dtype
            and (grad._data.strides == leaf._data.strides or grad.stride() == leaf.stride()
                 or not grad_mode._state.grad_layout)
            and sys.getrefcount(grad._data) <= data_refs
            and sys.getrefcount(grad._storage) <= storage_refs)


def _laid_out_as(grad, leaf):
    """A copy of `grad` under PyTorch's gradient layout contract: at the leaf's strides where
    the leaf is non-overlapping and dense (a channels_last weight gets a channels_last .grad),
    else row-major."""
    shape, strides, grad = leaf._data.shape, leaf.stride(), grad.detach()
    if not memory_formats.non_overlapping_and_dense(shape, strides):
        return grad.clone(memory_format=memory_formats.contiguous_format)
    if grad.stride() == strides:
        return grad.clone()
    return grad.new_empty((grad.numel(),)).as_strided(tuple(shape), strides).copy_(grad)


def grad_accumulator(leaf):
    """The one AccumulateGrad node of a leaf (made on first use, kept while the graph holds it)."""
    node = leaf._grad_accumulator() if leaf._grad_accumulator is not None else None
    if node is None:
        node = AccumulateGrad(leaf)
        leaf._grad_accumulator = weakref.ref(node)
    return node


def edge_of(tensor):
    """The graph edge a gradient for `tensor` flows along: (node, output index), or None."""
    if tensor._base is not None:
        refresh_view(tensor)
    if not tensor._requires_grad:
        return None
    if tensor.grad_fn is not None:
        return (tensor.grad_fn, tensor._output_nr)
    return (grad_accumulator(tensor), 0)


def refresh_view(view):
    """Give `view` a history through its base when the base's history changed since it was made.

    Only views made with grad mode on take part (`_base_grad_fn`, set when they are made, is the
    base's grad_fn then); views made under no_grad stay out of the graph, as in PyTorch.

    An in-place write to the base (or to another view of it) gives the base a new grad_fn; the
    view then reads the new values, so its gradient must flow through the new history, as an
    `AsStrided` view of the base (PyTorch regenerates view grad_fns the same way).
    """
    base, made_from = view._base, view.__dict__.get("_base_grad_fn", view)
    if made_from is view or not base._requires_grad or base.grad_fn is made_from:
        return
    from .views import AsStrided
    with grad_mode.enable_grad():
        fresh = AsStrided.apply(base, tuple(view.shape), view.stride(), view.storage_offset())
    view.grad_fn, view._output_nr, view._requires_grad = fresh.grad_fn, 0, True
    view._base_grad_fn = base.grad_fn


class _SavedOutput:
    """A saved output of the node itself, kept without its grad_fn so no reference cycle forms."""

    __slots__ = ("data", "output_nr")

    def __init__(self, data, output_nr):
        self.data, self.output_nr = data, output_nr


class BackwardNode(Node):
    """The `ctx` of one Function call; in the graph it is that call's backward."""

    _saved = ()
    _released = False
    _non_differentiable = ()
    _dirty = ()
    _output_meta = ()
    _input_meta = ()
    num_outputs = 1
    materialize_grads = True
    _jvp_saved = None  # what save_for_forward kept, while the Function's jvp runs

    def __init__(self, function_cls, needs_input_grad):
        self._function = function_cls
        self.needs_input_grad = needs_input_grad

    def name(self):
        """PyTorch's node name: "MulBackward0" for Genesis's own ops (a Function may set
        `ctx.node_name`), "SquareBackward" for a user's custom Function `Square`."""
        function = self._function
        return self.__dict__.get("node_name") or function.__name__ + (
            "Backward0" if function._internal else "Backward")

    def __repr__(self):
        """A user's Function's node shows its module as PyTorch's does
        (`<genesis.autograd.function.SquareBackward object at 0x...>`)."""
        where = "" if self._function._internal else "genesis.autograd.function."
        return f"<{where}{self.name()} object at {hex(id(self))}>"

    def save_for_backward(self, *tensors):
        hooks = graph.current_hooks()
        if hooks is None:
            self._saved = tuple([None if t is None else (t, t._version) for t in tensors])
        else:
            self._saved = tuple([None if t is None else (_Packed(hooks, t), None)
                                 for t in tensors])

    def save_for_forward(self, *tensors):
        """Keep tensors for the Function's jvp, which reads them as `ctx.saved_tensors`."""
        self._saved_for_forward = tensors

    @property
    def saved_tensors(self):
        if self._jvp_saved is not None:
            return self._jvp_saved
        if self._released:
            raise RuntimeError(
                "Trying to backward through the graph a second time (or directly access saved "
                "tensors after they have already been freed). Saved intermediate values of the "
                "graph are freed when you call .backward() or autograd.grad(). Specify "
                "retain_graph=True if you need to backward through the graph a second time or if "
                "you need to access saved tensors after calling backward.")
        return tuple([None if entry is None else self._unpack(*entry) for entry in self._saved])

    def _unpack(self, saved, version):
        if isinstance(saved, _Packed):
            return saved.unpack()
        t = saved.data if isinstance(saved, _SavedOutput) else saved
        if t._version != version:
            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified by an "
                f"inplace operation: [{t.dtype.name} tensor of shape {list(t.shape)}], which is "
                f"saved by {self.name()}, is at version {t._version}; expected version {version} "
                f"instead. Hint: the operation that failed was {self.name()}; clone the tensor "
                "before modifying it in place.")
        if isinstance(saved, _SavedOutput):
            t = t.detach()
            t.grad_fn, t._output_nr, t._requires_grad = self, saved.output_nr, True
        return t

    def input_shape(self, i):
        """The shape of input `i` when it needs a gradient, else None."""
        meta = self._input_meta[i]
        return None if meta is None else meta[0]

    def mark_non_differentiable(self, *tensors):
        self._non_differentiable = tuple(id(t) for t in tensors)

    def mark_dirty(self, *tensors):
        self._dirty = tuple(id(t) for t in tensors)

    def set_materialize_grads(self, value):
        self.materialize_grads = bool(value)

    def release(self):
        """Free what backward needed (after a backward pass without retain_graph).

        Saved tensors and tensors stored as ctx attributes (alone or in a tuple or list) go;
        reading either afterwards raises the "backward through the graph a second time" error.
        """
        attrs = self.__dict__
        attrs["_saved"] = ()
        attrs["_released"] = True
        for key in [key for key, value in attrs.items() if key[0] != "_"
                    and key not in _GRAPH_FIELDS and _holds_tensor(value)]:
            del attrs[key]

    def __getattr__(self, key):
        if key.startswith("_saved_"):
            return self._saved_value(key)
        if not key.startswith("__") and self.__dict__.get("_released"):
            self.saved_tensors
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{key}'")

    def _saved_value(self, key):
        """`grad_fn._saved_self`, `_saved_other`, `_saved_result`...: what the node saved, by
        PyTorch's argument name (the node's or its Function's `saved_names`, one per saved
        entry, None for one without a name); a Python scalar operand where it saved no tensor.
        After backward, PyTorch's freed-graph error."""
        names = self.__dict__.get("saved_names") or getattr(self._function, "saved_names", ())
        name = key[len("_saved_"):]
        if name not in names:
            raise AttributeError(f"'{self.name()}' object has no attribute '{key}'")
        index = names.index(name)
        value = self.saved_tensors[index]
        scalars = self.__dict__.get("scalars")
        return scalars[index] if value is None and scalars else value

    def apply(self, grads):
        """Run the Function's backward and check each gradient against its input's metadata."""
        result = self._function.backward(self, *grads)
        if not isinstance(result, tuple):
            result = (result,)
        input_meta = self._input_meta
        if len(result) < len(input_meta):
            raise RuntimeError(f"function {self.name()} returned an incorrect number of gradients "
                               f"(expected {len(input_meta)}, got {len(result)})")
        return tuple([None if g is None or meta is None
                      else g if g._data.shape == meta[0] and g.dtype is meta[1]
                      and g.device is meta[2] else _check_grad(self, i, g, meta)
                      for i, (g, meta) in enumerate(zip(result, input_meta))])


class UntrackedNode(BackwardNode):
    """The `ctx` of a call that records no graph (grad mode off, or no input needs a gradient):
    forward runs as usual, but what it saves is kept as is, without version snapshots, since no
    backward will read it. No input needs a gradient from it. Function.apply sets its
    `_function` and `needs_input_grad` itself (no __init__ call: this is the hot path)."""

    __init__ = object.__init__

    def save_for_backward(self, *tensors):
        self._plain = tensors

    @property
    def saved_tensors(self):
        return self.__dict__.get("_plain", ())


_GRAPH_FIELDS = frozenset(("needs_input_grad", "num_outputs", "node_name",
                           "materialize_grads"))


def _holds_tensor(value):
    if isinstance(value, (tuple, list)):
        return any(isinstance(v, _tensor_type) for v in value)
    return isinstance(value, _tensor_type)


def _check_grad(node, index, grad, meta):
    """Validate one returned gradient: right shape, cast to the input's dtype; None passes
    (BackwardNode.apply passes on those whose shape, dtype and device object match without
    calling it)."""
    if grad is None or meta is None:
        return None
    shape, dtype, device = meta
    if grad._data.shape != shape:
        raise RuntimeError(f"Function {node.name()} returned an invalid gradient at index {index} - "
                           f"got {list(grad.shape)} but expected shape compatible with {list(shape)}")
    if grad.dtype is not dtype:
        grad = grad.to(dtype)
    if grad.device != device:
        raise RuntimeError(f"Function {node.name()} returned a gradient at index {index} on "
                           f"{grad.device}, expected {device}")
    return grad


def _requires_grad(tensor):
    """Whether `tensor` needs a gradient (a view first catches up with its base)."""
    if tensor._base is not None:
        refresh_view(tensor)
    return tensor._requires_grad


class Function:
    """Base class of differentiable ops, and of users' custom autograd functions.

    Subclasses define `forward(ctx, *args)` and `backward(ctx, *grad_outputs)` as staticmethods
    and are called through `apply`; or, as in PyTorch 2, `forward(*args)` plus
    `setup_context(ctx, inputs, output)`. Backward returns one gradient per forward argument
    (None for non-tensors and inputs that need none).
    """

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("a Function subclass must implement forward")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("a Function subclass must implement backward to be differentiated")

    setup_context = None
    _internal = False
    # Linear in its first argument, the others being parameters (a view, a copy): in forward
    # mode the Function applied to that argument's tangent gives its output's tangent.
    linear = False

    def __init_subclass__(cls, **kwargs):
        """Genesis's own Functions are kernels to autocast: the ops inside their forward follow
        no autocast policy. Users' Functions run their forward as any other code, as in
        PyTorch."""
        super().__init_subclass__(**kwargs)
        cls._internal = cls.__module__.startswith("genesis.")

    @staticmethod
    def jvp(ctx, *tangents):
        """The outputs' tangents given the inputs' (forward-mode AD); a Function used with dual
        tensors must define it."""
        raise NotImplementedError("You must implement the jvp function for custom "
                                  "autograd.Function to use it with forward mode AD.")

    @classmethod
    def apply(cls, *args, **kwargs):
        if _dual_state.active and has_dual(args):
            from .tangents import apply_dual
            return apply_dual(cls, args, kwargs)
        state = grad_mode._state
        enabled = state.enabled
        if enabled:
            tensor_cls = _tensor_type or _load_tensor_type()
            for a in args:  # records(*args), inlined
                if isinstance(a, tensor_cls) and (a._requires_grad if a._base is None
                                                  else _requires_grad(a)):
                    return _apply_tracked(cls, args, kwargs)
            state.enabled = False
        ctx = UntrackedNode()
        ctx._function, ctx.needs_input_grad = cls, (False,) * len(args)
        try:
            if cls._internal and autocast_state._state.active:
                outputs = _forward(cls, ctx, args, kwargs)
            elif cls.setup_context is None:
                outputs = cls.forward(ctx, *args, **kwargs)
            else:
                outputs = _call_forward(cls, ctx, args, kwargs)
        finally:
            state.enabled = enabled
        if enabled and (type(outputs) is not _tensor_type or outputs._base is not None):
            _mark_untracked_view(outputs)
        return outputs


def _forward(cls, ctx, args, kwargs):
    """Run `cls`'s forward with `ctx` (grad mode already off); Genesis's own Functions run
    theirs with autocast suspended, its policy having been applied where the op was called."""
    amp = autocast_state._state
    if not (amp.active and cls._internal):
        if cls.setup_context is None:  # _call_forward's usual case, inlined
            return cls.forward(ctx, *args, **kwargs)
        return _call_forward(cls, ctx, args, kwargs)
    amp.suspended += 1
    amp.active = False
    try:
        return _call_forward(cls, ctx, args, kwargs)
    finally:
        amp.suspended -= 1
        amp.active = True


def _call_forward(cls, ctx, args, kwargs):
    """`forward(ctx, *args)`, or PyTorch 2's `forward(*args)` then `setup_context`."""
    if cls.setup_context is None:
        return cls.forward(ctx, *args, **kwargs)
    outputs = cls.forward(*args, **kwargs)
    cls.setup_context(ctx, args, outputs)
    return outputs


def _apply_tracked(cls, args, kwargs):
    """A call the graph records: forward under no_grad with a BackwardNode as ctx, which
    becomes the grad_fn of the differentiable outputs."""
    tensor_cls = _tensor_type
    needs = tuple([isinstance(a, tensor_cls) and (a._requires_grad if a._base is None
                                                  else _requires_grad(a)) for a in args])
    ctx = node_for(cls, args, needs)
    state = grad_mode._state
    state.enabled = False
    try:
        outputs = _forward(cls, ctx, args, kwargs)
    finally:
        state.enabled = True
    return _wire_outputs(ctx, args, outputs)


def node_for(cls, args, needs):
    """The BackwardNode of a call of `cls` on `args`, whose inputs flagged in `needs` want a
    gradient."""
    ctx = _new(BackwardNode)  # BackwardNode(cls, needs) without the __init__ call
    ctx._function = cls
    if anomaly_mode._enabled:
        anomaly_mode.record_forward(ctx)
    record_inputs(ctx, args, needs)
    return ctx


def record_inputs(ctx, args, needs):
    """Set the node's needs_input_grad, its inputs' graph edges and the metadata of those that
    want a gradient."""
    tensor_cls = _tensor_type
    ctx.needs_input_grad = needs
    edges, input_meta, non_tensors = [], [], []
    for i, (a, need) in enumerate(zip(args, needs)):
        if need:
            edges.append(edge_of(a))
            input_meta.append((a._data.shape, a.dtype, a.device))
        else:
            if isinstance(a, tensor_cls):
                edges.append(edge_of(a))
            else:
                edges.append(None)
                non_tensors.append(i)
            input_meta.append(None)
    ctx._edges, ctx._input_meta = tuple(edges), tuple(input_meta)
    if non_tensors:
        ctx._non_tensor_args = tuple(non_tensors)


def records(*args):
    """Whether a Function call on `args` would be recorded in the graph (grad mode is on and
    some tensor argument requires grad; a view first catches up with its base) or give its
    outputs tangents (a dual argument). An op whose forward makes no view may skip its Function
    and compute the values alone when not."""
    if _dual_state.active and has_dual(args):
        return True
    if not grad_mode._state.enabled:
        return False
    tensor_cls = _tensor_type or _load_tensor_type()
    for a in args:
        if isinstance(a, tensor_cls) and (a._requires_grad if a._base is None
                                          else _requires_grad(a)):
            return True
    return False


_tensor_type = None
_dual_state = forward_ad._state


def has_dual(args):
    """Whether tangents flow through a call on `args`: inside a dual level (forward-mode AD),
    some argument carries one."""
    if not _dual_state.active:
        return False
    for a in args:
        if getattr(a, "_fw_grad", None) is not None:
            return True
    return False


def _load_tensor_type():
    global _tensor_type
    from ..tensor import Tensor
    _tensor_type = Tensor
    return Tensor


def tensor_type():
    """genesis.Tensor, imported on first use (genesis.tensor imports this package)."""
    return _tensor_type or _load_tensor_type()


def _wire_outputs(ctx, args, outputs):
    """Attach `ctx` as grad_fn of each differentiable output; returns the outputs.

    An input returned as is (and not marked dirty) comes back as a new view of it, as in
    PyTorch. A dirty input that is a view rebases its base's history on this node.
    """
    if isinstance(outputs, tuple):
        wired = tuple([_wire_output(ctx, args, nr, out) for nr, out in enumerate(outputs)])
        ctx._output_meta = tuple([_output_meta(out) for out in wired])
        ctx.num_outputs = len(wired)
    else:  # one output: num_outputs keeps its class default, 1
        wired = _wire_output(ctx, args, 0, outputs)
        ctx._output_meta = (_output_meta(wired),)
    if ctx._saved:
        ctx._saved = tuple([_pack_output(entry, ctx) for entry in ctx._saved])
    return wired


def _output_meta(out):
    """(shape, dtype, device) of a tensor output, which the engine checks gradients against;
    None for anything else."""
    return (out._data.shape, out.dtype, out.device) if hasattr(out, "_requires_grad") else None


def _is_input(out, args):
    """Whether `out` is one of `args` itself (`in` would compare tensors elementwise)."""
    for a in args:
        if a is out:
            return True
    return False


def _wire_output(ctx, args, nr, out):
    """Make `ctx` the grad_fn of output `nr` when it is differentiable; returns the output."""
    if not hasattr(out, "_requires_grad"):
        return out
    key = id(out)
    dirty = key in ctx._dirty
    if not dirty and _is_input(out, args):
        out = _alias_of(out)
    if key in ctx._non_differentiable or not out.dtype.is_floating_point:
        out._requires_grad = False
        return out
    if dirty and out.is_leaf and out._requires_grad:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")
    out._requires_grad, out.grad_fn, out._output_nr = True, ctx, nr
    if out._base is not None:
        _attach_view(out, dirty)
    return out


def _mark_untracked_view(outputs):
    """Views of a base outside the graph join the graph if the base later gets a history."""
    for out in outputs if isinstance(outputs, tuple) else (outputs,):
        if getattr(out, "_base", None) is not None and not out._base._requires_grad:
            out._base_grad_fn = None


def _alias_of(t):
    """A new tensor viewing all of `t` (shares memory, version counter and base)."""
    from .views import make_view
    return make_view(t, tuple(t.shape), t.stride(), t.storage_offset())


def _attach_view(out, dirty):
    """Record the base history a view output was made from; rebase the base for dirty views."""
    out._base_grad_fn = out._base.grad_fn
    if dirty:
        from .views import rebase_history
        rebase_history(out, out)


class _Packed:
    """A saved tensor as a saved_tensors_hooks pack hook stored it (autograd/graph.py)."""

    __slots__ = ("packed", "unpack_hook")
    grad_fn = None  # never the node's own output (_pack_output leaves it alone)

    def __init__(self, hooks, tensor):
        pack_hook, self.unpack_hook = hooks
        self.packed = pack_hook(tensor)

    def unpack(self):
        return self.unpack_hook(self.packed)


def _pack_output(entry, ctx):
    """A saved (tensor, version) entry, with the node's own outputs held without their grad_fn."""
    if entry is None or isinstance(entry[0], _SavedOutput) or entry[0].grad_fn is not ctx:
        return entry
    t, version = entry
    return (_SavedOutput(t.detach(), t._output_nr), version)


class once_differentiable:
    """Decorator for a backward that is not itself differentiable: runs it under no_grad."""

    def __new__(cls, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(ctx, *grads):
            with grad_mode.no_grad():
                return fn(ctx, *grads)
        return wrapper
