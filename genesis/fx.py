"""genesis.fx: torch.fx's module-level registrations, for model files that make them.

Genesis has no symbolic tracer; `wrap` checks its argument and its call site as torch.fx does
and hands the function or name back, so `torch.fx.wrap("helper")` at a module's top level (as
vision model files write) runs unchanged.
"""

import inspect


def wrap(fn_or_name):
    """Register a global function (or its name) as a leaf of symbolic tracing; returns it."""
    if not callable(fn_or_name) and not isinstance(fn_or_name, str):
        raise RuntimeError("Unsupported type for global function! Must be either a callable or "
                           "string name")
    caller = inspect.currentframe().f_back
    if caller.f_code.co_name != "<module>":
        raise NotImplementedError("wrap must be called at the top level of a module")
    return fn_or_name
