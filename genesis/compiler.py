"""`genesis.compile`, so that scripts written for `torch.compile` run.

Genesis compiles no host code: its launch overhead is removed with CUDA graphs. Under
`mode="reduce-overhead"` a CUDA module or function is captured, forward and backward, into CUDA
graphs (cuda/graphed_callables.py, the machinery of make_graphed_callables) the first time it
sees each input signature (shapes, dtypes, devices, which inputs need grad, grad mode and
training flag), and replayed after that. Calls that graphs cannot serve run eagerly: the other
modes, the CPU, keyword or non-tensor arguments, modules with hooks.
"""

import functools

from .autograd.grad_mode import is_grad_enabled
from .nn import Module
from .tensor import Tensor

_MODES = (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None,
            options=None, disable=False):
    """Optimize `model` (a Module or a function) as `torch.compile` does, with PyTorch's
    signature; usable as a decorator, with or without arguments.

    Under `mode="reduce-overhead"` (and "max-autotune", which implies CUDA graphs in PyTorch)
    CUDA calls are replayed as CUDA graphs, captured once per input signature; every other mode
    runs the model eagerly for now. `fullgraph`, `dynamic`, `backend` and `options` are
    accepted and ignored. With `disable=True` the model is returned unchanged.

    Graphed calls follow make_graphed_callables's rules: their outputs are overwritten by the
    next call with the same signature, so keep a `.clone()` of any output you need later.
    """
    if mode not in _MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: "
                           f"{', '.join(m for m in _MODES if m)}")
    if model is None:
        return functools.partial(compile, fullgraph=fullgraph, dynamic=dynamic, backend=backend,
                                 mode=mode, options=options, disable=disable)
    if not callable(model):
        raise RuntimeError("compile: the model must be a Module or a callable")
    if disable:
        return model
    graphs = mode in ("reduce-overhead", "max-autotune")
    if isinstance(model, Module):
        return OptimizedModule(model, graphs)
    return functools.wraps(model)(_GraphedCalls(model, graphs))


class _GraphedCalls:
    """Calls of `fn` (`module`'s forward, when given) replayed from CUDA graphs, one set per
    input signature."""

    def __init__(self, fn, graphs, module=None):
        self.fn, self.graphs, self.module = fn, graphs, module
        self._graphed = {}

    def __call__(self, *args, **kwargs):
        key = self._signature(args, kwargs) if self.graphs else None
        if key is None:
            return self.fn(*args, **kwargs)
        graphed = self._graphed.get(key)
        if graphed is None:
            from .cuda.graphed_callables import graph_functions, trainable_parameters
            graphed = self._graphed[key] = graph_functions(
                [self.fn], [args], [trainable_parameters(self.module)])[0]
        return graphed(*args)

    def _signature(self, args, kwargs):
        """The key of the graphs that serve this call, or None when it must run eagerly."""
        if kwargs or not args or not all(isinstance(a, Tensor) and a.device.type == "cuda"
                                         for a in args):
            return None
        module = self.module
        if module is not None and any(m._forward_hooks or m._forward_pre_hooks
                                      for m in module.modules()):
            return None
        training = module.training if module is not None else None
        return (tuple((a.shape, a.dtype, a.device, a.requires_grad) for a in args),
                is_grad_enabled(), training)


class OptimizedModule(Module):
    """What `genesis.compile(module)` returns: calls go through the compiled forward; the
    original module is `_orig_mod` (so state dict keys carry its prefix, as in PyTorch).
    Attributes read, set or deleted on it are the original module's, except its own."""

    _own_attributes = frozenset({"_orig_mod", "_calls", "forward", "training"})

    def __init__(self, mod, graphs):
        super().__init__()
        self._orig_mod = mod
        self._calls = _GraphedCalls(mod.forward, graphs, mod)

    def forward(self, *args, **kwargs):
        return self._calls(*args, **kwargs)

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self._modules["_orig_mod"], name)

    def __setattr__(self, name, value):
        if name in self._own_attributes or hasattr(type(self), name):
            super().__setattr__(name, value)
        else:
            setattr(self._orig_mod, name, value)

    def __delattr__(self, name):
        if name in self._own_attributes or hasattr(type(self), name):
            super().__delattr__(name)
        else:
            delattr(self._orig_mod, name)
