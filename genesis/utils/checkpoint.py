"""Activation checkpointing (`torch.utils.checkpoint`): run a piece of the model without keeping
its activations, and recompute them when backward needs them, trading compute for memory.

Two forms, as in PyTorch:
- `use_reentrant=False` (recommended): the forward runs as usual, but every tensor its ops save
  for backward is replaced by a handle (autograd/graph.py's saved_tensors_hooks). The first
  handle backward reads reruns the function, with the random state and autocast settings of the
  forward, and hands out the tensors that run saved, in order. Gradients reach everything the
  function used, inputs and parameters, through the normal graph, and autograd.grad works.
- `use_reentrant=True` (PyTorch's default when unspecified, with its warning): one autograd
  Function runs the function without a graph, and its backward reruns it with one and calls
  backward inside backward. Parameters get their gradients through that inner backward, so
  only `.backward()` reaches them, and some input must require grad.
"""

import contextlib
import warnings
import weakref

from .. import amp, random
from ..autograd import Function
from ..autograd.engine import backward, current_graph_task
from ..autograd.grad_mode import enable_grad, is_grad_enabled, no_grad
from ..autograd.graph import saved_tensors_hooks
from ..tensor import Tensor

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "noop_context_fn"]


class CheckpointError(RuntimeError):
    """The recomputation saved other tensors than the forward did (non-determinism)."""


def noop_context_fn():
    """Two contexts, for the forward and the recomputation, that do nothing."""
    return contextlib.nullcontext(), contextlib.nullcontext()


def checkpoint(function, *args, use_reentrant=None, context_fn=noop_context_fn,
               determinism_check="default", debug=False, early_stop=True,
               preserve_rng_state=True, **kwargs):
    """function(*args, **kwargs), its activations recomputed in backward instead of kept."""
    if use_reentrant is None:
        warnings.warn("torch.utils.checkpoint: the use_reentrant parameter should be passed "
                      "explicitly. Starting in PyTorch 2.9, calling checkpoint without "
                      "use_reentrant will raise an exception. use_reentrant=False is "
                      "recommended, but if you need to preserve the current default behavior, "
                      "you can pass use_reentrant=True. Refer to docs for more details on the "
                      "differences between the two variants.", stacklevel=2)
        use_reentrant = True
    if determinism_check not in ("default", "none"):
        raise ValueError(f"determinism_check should be one of ['default', 'none'], but got "
                         f"{determinism_check}")
    if use_reentrant:
        if context_fn is not noop_context_fn or debug:
            raise ValueError("Passing `context_fn` or `debug` is only supported when "
                             "use_reentrant=False.")
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
        if is_grad_enabled() and not any(isinstance(a, Tensor) and a.requires_grad
                                         for a in args):
            warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                          stacklevel=2)
        return _ReentrantCheckpoint.apply(function, preserve_rng_state, *args)
    recompute = _Recomputation(function, args, kwargs, preserve_rng_state,
                               determinism_check == "default")
    forward_context, recompute.context = context_fn()
    with saved_tensors_hooks(recompute.pack, recompute.unpack), forward_context:
        return function(*args, **kwargs)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """A sequence of modules (or an nn.Sequential) run in `segments` pieces, each checkpointed
    but the last."""
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if hasattr(functions, "children") and not isinstance(functions, (list, tuple)):
        functions = list(functions.children())
    size = len(functions) // segments
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(_run_range(functions, start, end), input, use_reentrant=use_reentrant,
                           preserve_rng_state=preserve)
    return _run_range(functions, end + 1, len(functions) - 1)(input)


def _run_range(functions, start, end):
    def forward(x):
        for fn in functions[start:end + 1]:
            x = fn(x)
        return x
    return forward


class _ForwardState:
    """The random and autocast state a forward ran under, to rerun it under the same."""

    def __init__(self, args, preserve_rng_state):
        self.devices = sorted({t.device for t in args
                               if isinstance(t, Tensor) and t.device.type == "cuda"},
                              key=str) if preserve_rng_state else []
        self.cpu_rng = random.get_rng_state() if preserve_rng_state else None
        self.cuda_rng = [_cuda().get_rng_state(d) for d in self.devices]
        self.autocast = [(d, amp.is_autocast_enabled(d), amp.get_autocast_dtype(d))
                         for d in ("cpu", "cuda")]

    @contextlib.contextmanager
    def restored(self):
        """Run a block under the forward's state, then put back the present random state."""
        if self.cpu_rng is None:
            now_cpu, now_cuda = None, []
        else:
            now_cpu = random.get_rng_state()
            now_cuda = [_cuda().get_rng_state(d) for d in self.devices]
            random.set_rng_state(self.cpu_rng)
            for device, state in zip(self.devices, self.cuda_rng):
                _cuda().set_rng_state(state, device)
        try:
            with contextlib.ExitStack() as stack:
                for device, enabled, dtype in self.autocast:
                    stack.enter_context(amp.autocast(device, dtype=dtype, enabled=enabled))
                yield
        finally:
            if now_cpu is not None:
                random.set_rng_state(now_cpu)
                for device, state in zip(self.devices, now_cuda):
                    _cuda().set_rng_state(state, device)


def _cuda():
    from .. import cuda
    return cuda


class _Handle:
    """What a checkpointed forward keeps of a saved tensor: its place in the saving order."""

    __slots__ = ("index",)

    def __init__(self, index):
        self.index = index


class _Recomputation:
    """The non-reentrant checkpoint of one call: pack and unpack hooks, and the rerun."""

    def __init__(self, function, args, kwargs, preserve_rng_state, check):
        self.function, self.args, self.kwargs, self.check = function, args, kwargs, check
        self.state = _ForwardState(args, preserve_rng_state)
        self.metadata, self.tensors = [], weakref.WeakKeyDictionary()  # graph task -> rerun
        self.context = contextlib.nullcontext()

    def pack(self, tensor):
        self.metadata.append((tuple(tensor.shape), tensor.dtype, tensor.device))
        return _Handle(len(self.metadata) - 1)

    def unpack(self, handle):
        """The tensor of `handle` from this backward pass's rerun (made at its first read; a
        read outside backward reruns on its own)."""
        task = current_graph_task()
        tensors = None if task is None else self.tensors.get(task)
        if tensors is None:
            tensors = self._rerun()
            if task is not None:
                self.tensors[task] = tensors
        return tensors[handle.index]

    def _rerun(self):
        saved = []

        def keep(tensor):
            saved.append(tensor.detach())
            return tensor

        with self.state.restored(), enable_grad(), self.context, \
                saved_tensors_hooks(keep, lambda t: t):
            self.function(*self.args, **self.kwargs)
        if self.check:
            self._check(saved)
        return saved

    def _check(self, saved):
        redone = [(tuple(t.shape), t.dtype, t.device) for t in saved]
        if redone[:len(self.metadata)] != self.metadata:
            raise CheckpointError(
                "torch.utils.checkpoint: Recomputed values for the following tensors have "
                "different metadata than during the forward pass: the recomputation saved "
                f"{len(redone)} tensors where the forward saved {len(self.metadata)}, or with "
                "other shapes, dtypes or devices. Pass determinism_check='none' to skip this "
                "check.")


class _ReentrantCheckpoint(Function):
    """use_reentrant=True: forward without a graph, backward reruns with one and backpropagates
    inside (see the module docstring)."""

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        ctx.run_function = run_function
        ctx.state = _ForwardState(args, preserve_rng_state)
        ctx.tensor_places = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        ctx.inputs = list(args)
        ctx.save_for_backward(*[args[i] for i in ctx.tensor_places])
        with no_grad():
            return run_function(*args)

    @staticmethod
    def backward(ctx, *grads):
        inputs = list(ctx.inputs)
        for place, saved in zip(ctx.tensor_places, ctx.saved_tensors):
            inputs[place] = saved.detach().requires_grad_(saved.requires_grad)
        with ctx.state.restored(), enable_grad():
            outputs = ctx.run_function(*inputs)
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        pairs = [(o, g) for o, g in zip(outputs, grads)
                 if isinstance(o, Tensor) and o.requires_grad]
        if not pairs:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not "
                               "necessary")
        backward([o for o, _ in pairs], [g for _, g in pairs])
        return (None, None) + tuple(inp.grad if isinstance(inp, Tensor) else None
                                    for inp in inputs)
