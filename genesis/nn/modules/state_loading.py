"""Writing a checked state dict into modules: `load_state_dict` checks every module's entries
first, collecting the writes in a plan (`collecting`), then writes them all (`write_plan`):
copied into the targets, put in their place (`assign`), or swapped in through
Tensor.module_load where genesis.__future__ says to swap. A module's `_load_from_state_dict`
called on its own writes its plan when it returns (`load_plan`)."""

import contextlib
import contextvars

from ... import __future__
from ...autograd.grad_mode import no_grad
from ...utils._swap import swap_tensors
from ..parameter import Parameter

LOAD_PLAN = contextvars.ContextVar("genesis_load_plan", default=None)


@contextlib.contextmanager
def collecting(plan):
    """Within the block, `load_plan` gives `plan`: the writes of every module checked."""
    token = LOAD_PLAN.set(plan)
    try:
        yield plan
    finally:
        LOAD_PLAN.reset(token)


@contextlib.contextmanager
def load_plan(assign):
    """The list of checked entries to write: load_state_dict's while it checks every module,
    else a fresh one written when the block ends."""
    plan = LOAD_PLAN.get()
    if plan is not None:
        yield plan
        return
    plan = []
    yield plan
    write_plan(plan, assign)


def write_plan(plan, assign):
    """Write the checked entries: cast to their targets' device and dtype unless `assign`, or
    swapped in through Tensor.module_load where genesis.__future__ says to swap."""
    with no_grad():
        if __future__.get_swap_module_params_on_conversion():
            for module, name, target, value in plan:
                _swap_entry(module, target, value, assign)
            return
        if not assign:
            plan = [(m, n, t, v if t is None else v.to(device=t.device, dtype=t.dtype))
                    for m, n, t, v in plan]
        for module, name, target, value in plan:
            _load_entry(module, name, target, value, assign)


def _swap_entry(module, target, value, assign):
    """Swap `target` with `target.module_load(value)`, a Parameter where `target` is one."""
    if target is None:
        module.set_extra_state(value)
        return
    loaded = target.module_load(value, assign=assign)
    if loaded is value or loaded is target:
        raise RuntimeError("module_load returned one of self or other, please .detach() the "
                           "result if returning one of the inputs in module_load")
    if isinstance(target, Parameter):
        if isinstance(loaded, Parameter):
            loaded.requires_grad_(target.requires_grad)
        else:
            loaded = Parameter(loaded, target.requires_grad)
    swap_tensors(target, loaded)


def _load_entry(module, name, target, value, assign):
    """Write one checked state-dict entry: copied into `target`, or put in its place (`assign`);
    extra state (no target) goes to set_extra_state."""
    if target is None:
        module.set_extra_state(value)
    elif not assign:
        target.copy_(value)
    elif isinstance(target, Parameter):
        setattr(module, name, Parameter(value.detach(), target.requires_grad))
    else:
        setattr(module, name, value)
