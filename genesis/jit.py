"""genesis.jit: torch.jit's API as PyTorch runs it with the JIT disabled (PYTORCH_JIT=0).

Genesis has no TorchScript compiler: `script` and `trace` return what they are given, which then
runs eagerly with the same results, and the decorators (`ignore`, `unused`, `export`,
`interface`) leave functions as they are. `is_scripting()` and `is_tracing()` are False, so code
that branches on them takes its eager path. Serialised TorchScript (`save`, `load`) has no
equivalent: those raise and point at genesis.save/genesis.load of a state dict. Each entry
point PyTorch 2.13 deprecates warns as PyTorch's does (DeprecationWarning, its text).
"""

import builtins
import sys
import warnings

from .nn.modules.module import Module


def _deprecated(name, instead="`torch.compile` instead"):
    """PyTorch's DeprecationWarning for torch.jit.`name`, in its words."""
    warnings.warn(f"`torch.jit.{name}` is deprecated. Please use {instead}.", DeprecationWarning,
                  stacklevel=3)


def _superseded(name, by):
    """PyTorch's DeprecationWarning for script, trace, save and load (which name what replaces
    them, and say "not supported" from Python 3.14 on)."""
    if sys.version_info >= (3, 14):
        text = f"`torch.jit.{name}` is not supported in Python 3.14+ and may break. "
    else:
        text = f"`torch.jit.{name}` is deprecated. "
    warnings.warn(text + f"Please switch to {by}.", DeprecationWarning, stacklevel=3)


def script(obj, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    """`obj` itself (a function or module), to run eagerly."""
    _superseded("script", "`torch.compile` or `torch.export`")
    return obj


def trace(func, example_inputs=None, *args, **kwargs):
    """`func` itself (a function or module), to run eagerly."""
    _superseded("trace", "`torch.compile` or `torch.export`")
    return func


def trace_module(mod, inputs, *args, **kwargs):
    return mod


def script_if_tracing(fn):
    return fn


def ignore(drop=False, **kwargs):
    """Leave a function as it is; usable bare (`@ignore`) or called (`@ignore(drop=True)`)."""
    if callable(drop):
        return drop
    return lambda fn: fn


def unused(fn):
    return fn


def export(fn):
    return fn


def interface(obj):
    _deprecated("interface")
    return obj


def is_scripting():
    """False: Genesis never compiles TorchScript."""
    return False


def is_tracing():
    """False: Genesis never traces."""
    return False


def annotate(the_type, the_value):
    """`the_value`: a type annotation for the TorchScript compiler."""
    return the_value


def isinstance(obj, target_type):  # noqa: A001  (torch.jit.isinstance)
    return builtins.isinstance(obj, target_type)


class Attribute:
    """`Attribute(value, type)` is `value`, as under the disabled JIT."""

    def __new__(cls, value, type=None):  # noqa: A002
        return value


class Future:
    """The result of `fork`: the value computed at fork time, returned by `wait()`."""

    def __init__(self, value):
        self._value = value

    def wait(self):
        return self._value

    def value(self):
        return self._value

    def done(self):
        return True


def fork(func, *args, **kwargs):
    """Run func(*args, **kwargs) now and wrap its result in a Future."""
    _deprecated("fork")
    return Future(func(*args, **kwargs))


def wait(future):
    _deprecated("wait")
    return future.wait()


def freeze(mod, preserved_attrs=None, optimize_numerics=True):
    _deprecated("freeze")
    return mod


def optimize_for_inference(mod, other_methods=None):
    _deprecated("optimize_for_inference")
    return mod


_onednn_fusion = [False]


def enable_onednn_fusion(enabled):
    """Record whether traced graphs would use oneDNN Graph fusion; with no JIT, nothing fuses."""
    _onednn_fusion[0] = bool(enabled)


def onednn_fusion_enabled():
    return _onednn_fusion[0]


class ScriptModule(Module):
    """A Module whose `script_method`s run eagerly (RWKV's `MyModule = torch.jit.ScriptModule`),
    as torch.jit.ScriptModule with the JIT disabled."""

    def __init__(self, arg=None):
        super().__init__()


def script_method(fn):
    """`fn` itself, with PyTorch's deprecation warning."""
    _superseded("script_method", "`torch.compile` or `torch.export`")
    return fn


class Error(Exception):
    """torch.jit.Error: TorchScript's runtime error, never raised by eager code."""


class strict_fusion:  # noqa: N801  (torch.jit.strict_fusion)
    """A context that checks fusion in scripted code; outside it (always, here) it warns."""

    def __init__(self):
        warnings.warn("Only works in script mode", stacklevel=2)

    def __enter__(self):
        pass

    def __exit__(self, type, value, tb):  # noqa: A002
        pass


_FUSION_STRATEGY = [[("STATIC", 2), ("DYNAMIC", 10)]]


def set_fusion_strategy(strategy):
    """Record the fuser's specialization strategy and return the previous one, as PyTorch does;
    with no JIT, nothing fuses."""
    _deprecated("set_fusion_strategy")
    strategy = [tuple(item) for item in strategy]
    for kind, _ in strategy:
        if kind not in ("STATIC", "DYNAMIC"):
            raise ValueError(f"FusionBehavior only supported 'STATIC' or 'DYNAMIC', got: {kind}")
    previous, _FUSION_STRATEGY[0] = _FUSION_STRATEGY[0], strategy
    return previous


def save(m, f, _extra_files=None):
    _superseded("save", "`torch.export`")
    raise RuntimeError("genesis.jit.save: Genesis has no TorchScript; save the module's "
                       "state_dict with genesis.save and rebuild the module to load it")


def load(f, map_location=None, _extra_files=None):
    _superseded("load", "`torch.export`")
    raise RuntimeError("genesis.jit.load: Genesis has no TorchScript; load a state_dict saved "
                       "with genesis.save into the module with load_state_dict")


__all__ = ["Attribute", "Error", "Future", "ScriptModule", "annotate", "enable_onednn_fusion",
           "export", "fork", "freeze", "ignore", "interface", "is_scripting", "is_tracing",
           "isinstance", "load", "onednn_fusion_enabled", "optimize_for_inference", "save",
           "script", "script_if_tracing", "script_method", "set_fusion_strategy",
           "strict_fusion", "trace", "trace_module", "unused", "wait"]
