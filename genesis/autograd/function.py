"""Differentiable functions and the nodes of the backward graph.

Every differentiable op is a `Function`: `forward(ctx, *args)` computes with the dispatcher under
no_grad, `backward(ctx, *grads)` is written with genesis ops, so one backward serves every device
and, run with grad mode on, is itself differentiable (higher-order gradients).

`Function.apply` makes a `BackwardNode` (the `ctx`) when some input requires grad. The node keeps
its inputs' graph edges (`next_functions`), the tensors saved for backward with their versions,
and the metadata that lets the engine check and materialize gradients.
"""

from . import grad_mode


class Node:
    """A node of the backward graph: maps output gradients to input gradients."""

    def __init__(self):
        self.next_functions = ()
        self._tensor_hooks = {}
        self._retain_grad_refs = {}

    def name(self):
        return type(self).__name__

    def __repr__(self):
        return f"<{self.name()} object at {hex(id(self))}>"

    def register_hook(self, hook):
        """`hook(grad_inputs, grad_outputs)` runs after this node computes its input gradients."""
        from ..tensor import RemovableHandle
        if not hasattr(self, "_post_hooks"):
            self._post_hooks = {}
        return RemovableHandle(self._post_hooks, hook)


class AccumulateGrad(Node):
    """The sink for a leaf tensor: adds incoming gradients into `leaf.grad`."""

    num_outputs = 1

    def __init__(self, leaf):
        super().__init__()
        self.variable = leaf

    def accumulate(self, grad, create_graph):
        leaf = self.variable
        if leaf._hooks:
            for hook in list(leaf._hooks.values()):
                result = hook(grad)
                if result is not None:
                    grad = result
        if leaf.grad is None:
            leaf.grad = grad if create_graph else grad.detach().clone()
        elif create_graph or leaf.grad.requires_grad:
            leaf.grad = leaf.grad + grad
        else:
            leaf.grad.add_(grad.detach())


def grad_accumulator(leaf):
    """The one AccumulateGrad node of a leaf (made on first use, kept while the graph holds it)."""
    node = leaf._grad_accumulator() if leaf._grad_accumulator is not None else None
    if node is None:
        import weakref
        node = AccumulateGrad(leaf)
        leaf._grad_accumulator = weakref.ref(node)
    return node


def edge_of(tensor):
    """The graph edge a gradient for `tensor` flows along: (node, output index), or None."""
    if not tensor._requires_grad:
        return None
    if tensor.grad_fn is not None:
        return (tensor.grad_fn, tensor._output_nr)
    return (grad_accumulator(tensor), 0)


class BackwardNode(Node):
    """The `ctx` of one Function call; in the graph it is that call's backward."""

    def __init__(self, function_cls):
        super().__init__()
        self._function = function_cls
        self._saved = ()
        self._released = False
        self._non_differentiable = ()
        self._dirty = ()
        self.materialize_grads = True
        self.needs_input_grad = ()

    def name(self):
        """PyTorch-style node name, e.g. "MulBackward0"; a Function may set `ctx.node_name`."""
        return self.__dict__.get("node_name") or self._function.__name__ + "Backward0"

    def save_for_backward(self, *tensors):
        self._saved = tuple(None if t is None else (t, t._version) for t in tensors)

    @property
    def saved_tensors(self):
        if self._released:
            raise RuntimeError(
                "Trying to backward through the graph a second time (or directly access saved "
                "tensors after they have already been freed). Saved intermediate values of the "
                "graph are freed when you call .backward() or autograd.grad(). Specify "
                "retain_graph=True if you need to backward through the graph a second time or if "
                "you need to access saved tensors after calling backward.")
        out = []
        for entry in self._saved:
            if entry is None:
                out.append(None)
                continue
            t, version = entry
            if t._version != version:
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been modified by an "
                    f"inplace operation: [{t.dtype.name} tensor of shape {list(t.shape)}], which is "
                    f"output of {self.name()}'s input, is at version {t._version}; expected "
                    f"version {version} instead. Hint: the operation that failed was "
                    f"{self.name()}; clone the tensor before modifying it in place.")
            out.append(t)
        return tuple(out)

    def mark_non_differentiable(self, *tensors):
        self._non_differentiable = tuple(id(t) for t in tensors)

    def mark_dirty(self, *tensors):
        self._dirty = tuple(id(t) for t in tensors)

    def set_materialize_grads(self, value):
        self.materialize_grads = bool(value)

    def release(self):
        """Free what backward needed (after a backward pass without retain_graph).

        Saved tensors and tensors stored as ctx attributes go; reading either afterwards raises
        the "backward through the graph a second time" error.
        """
        self._saved = ()
        self._released = True
        for key, value in list(self.__dict__.items()):
            if not key.startswith("_") and hasattr(value, "_requires_grad"):
                delattr(self, key)

    def __getattr__(self, key):
        if not key.startswith("__") and self.__dict__.get("_released"):
            self.saved_tensors
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{key}'")

    def apply(self, grads):
        """Run the Function's backward and check each gradient against its input's metadata."""
        result = self._function.backward(self, *grads)
        if not isinstance(result, tuple):
            result = (result,)
        if len(result) < len(self._input_meta):
            raise RuntimeError(f"function {self.name()} returned an incorrect number of gradients "
                               f"(expected {len(self._input_meta)}, got {len(result)})")
        return tuple(_check_grad(self, i, g, meta) for i, (g, meta)
                     in enumerate(zip(result, self._input_meta)))


def _check_grad(node, index, grad, meta):
    """Validate one returned gradient: right shape, cast to the input's dtype; None passes."""
    if grad is None or meta is None:
        return None if meta is None else grad
    shape, dtype, device = meta
    if tuple(grad.shape) != shape:
        raise RuntimeError(f"Function {node.name()} returned an invalid gradient at index {index} - "
                           f"got {list(grad.shape)} but expected shape compatible with {list(shape)}")
    if grad.dtype is not dtype:
        grad = grad.to(dtype)
    if grad.device != device:
        raise RuntimeError(f"Function {node.name()} returned a gradient at index {index} on "
                           f"{grad.device}, expected {device}")
    return grad


class Function:
    """Base class of differentiable ops, and of users' custom autograd functions.

    Subclasses define `forward(ctx, *args)` and `backward(ctx, *grad_outputs)` as staticmethods
    and are called through `apply`. Backward returns one gradient per forward argument (None for
    non-tensors and inputs that need none).
    """

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("a Function subclass must implement forward")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("a Function subclass must implement backward to be differentiated")

    @classmethod
    def apply(cls, *args, **kwargs):
        from ..tensor import Tensor
        ctx = BackwardNode(cls)
        record = grad_mode.is_grad_enabled() and any(
            isinstance(a, Tensor) and a._requires_grad for a in args)
        if record:
            ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a._requires_grad for a in args)
        with grad_mode.no_grad():
            outputs = cls.forward(ctx, *args, **kwargs)
        if not record:
            return outputs
        ctx.next_functions = tuple(edge_of(a) if isinstance(a, Tensor) else None for a in args)
        ctx._input_meta = tuple((tuple(a.shape), a.dtype, a.device)
                                if isinstance(a, Tensor) and a._requires_grad else None for a in args)
        return _wire_outputs(ctx, args, outputs)


def _wire_outputs(ctx, args, outputs):
    """Attach `ctx` as grad_fn of each differentiable output; returns outputs as given."""
    single = not isinstance(outputs, tuple)
    outs = (outputs,) if single else outputs
    inputs_by_id = {id(a): a for a in args}
    wired, meta = [], []
    for nr, out in enumerate(outs):
        if out is None or not hasattr(out, "_requires_grad"):
            wired.append(out)
            meta.append(None)
            continue
        if id(out) in inputs_by_id and id(out) not in ctx._dirty:
            out = out.detach()
            out._base = None
        if id(out) in ctx._non_differentiable or not out.dtype.is_floating_point:
            out._requires_grad = False
        else:
            if id(out) in ctx._dirty and out.is_leaf and out._requires_grad:
                raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                                   "operation.")
            out._requires_grad = True
            out.grad_fn = ctx
            out._output_nr = nr
        wired.append(out)
        meta.append((tuple(out.shape), out.dtype, out.device))
    ctx._output_meta = tuple(meta)
    ctx.num_outputs = len(outs)
    return wired[0] if single else tuple(wired)


class once_differentiable:
    """Decorator for a backward that is not itself differentiable: runs it under no_grad."""

    def __new__(cls, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(ctx, *grads):
            with grad_mode.no_grad():
                return fn(ctx, *grads)
        return wrapper
