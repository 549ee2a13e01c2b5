"""genesis.jit: torch.jit's API as PyTorch runs it with the JIT disabled (PYTORCH_JIT=0).

Genesis has no TorchScript compiler: `script` and `trace` return what they are given, which then
runs eagerly with the same results, and the decorators (`ignore`, `unused`, `export`,
`interface`) leave functions as they are. `is_scripting()` and `is_tracing()` are False, so code
that branches on them takes its eager path. Serialised TorchScript (`save`, `load`) has no
equivalent: those raise and point at genesis.save/genesis.load of a state dict.
"""

import builtins


def script(obj, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    """`obj` itself (a function or module), to run eagerly."""
    return obj


def trace(func, example_inputs=None, *args, **kwargs):
    """`func` itself (a function or module), to run eagerly."""
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
    return Future(func(*args, **kwargs))


def wait(future):
    return future.wait()


def freeze(mod, preserved_attrs=None, optimize_numerics=True):
    return mod


def optimize_for_inference(mod, other_methods=None):
    return mod


_onednn_fusion = [False]


def enable_onednn_fusion(enabled):
    """Record whether traced graphs would use oneDNN Graph fusion; with no JIT, nothing fuses."""
    _onednn_fusion[0] = bool(enabled)


def onednn_fusion_enabled():
    return _onednn_fusion[0]


def save(m, f, _extra_files=None):
    raise RuntimeError("genesis.jit.save: Genesis has no TorchScript; save the module's "
                       "state_dict with genesis.save and rebuild the module to load it")


def load(f, map_location=None, _extra_files=None):
    raise RuntimeError("genesis.jit.load: Genesis has no TorchScript; load a state_dict saved "
                       "with genesis.save into the module with load_state_dict")


__all__ = ["Attribute", "Future", "annotate", "enable_onednn_fusion", "export", "fork", "freeze",
           "ignore", "interface", "is_scripting", "is_tracing", "isinstance", "load",
           "onednn_fusion_enabled", "optimize_for_inference", "save", "script", "script_if_tracing",
           "trace", "trace_module", "unused", "wait"]
