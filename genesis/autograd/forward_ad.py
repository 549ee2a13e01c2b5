"""Forward-mode automatic differentiation through dual tensors, as torch.autograd.forward_ad.

Inside a `dual_level`, `make_dual(primal, tangent)` gives a tensor that carries a tangent
(`Tensor._fw_grad`, the pair (level, tangent)). Every differentiable op is a `Function`, so
`Function.apply` is where tangents flow: a call with a dual input also computes its outputs'
tangents J t (genesis.autograd.tangents says how). A tangent is laid out as its primal (same
strides and storage offset), so a view op applied to the tangent gives the tangent of the view,
and an in-place op on a view updates its base's tangent too. One level exists at a time, as in
PyTorch; leaving it drops every tangent made in it.
"""

import contextlib
import weakref
from typing import NamedTuple, Optional

from ..tensor import Tensor
from .grad_mode import _GradModeContext

__all__ = ["UnpackedDualTensor", "enter_dual_level", "exit_dual_level", "make_dual",
           "unpack_dual", "dual_level"]


class _Level:
    """An entered dual level: its index and the tensors given tangents in it (dropped on exit)."""

    def __init__(self, index):
        self.index = index
        self.duals = weakref.WeakValueDictionary()


class _State:
    """The entered level (None outside any), whether ops propagate tangents now (not while a
    tangent itself is being computed) and whether backward passes are computing tangents."""

    level = None
    active = False
    pushing = 0  # how many `pushing_tangents` blocks are running


_state = _State()


def enter_dual_level():
    """Enter a new forward grad level and return its index; PyTorch supports one at a time."""
    if _state.level is not None:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    _state.level = _Level(0)
    _state.active = True
    return 0


def exit_dual_level(*, level=None):
    """Exit the current level, deleting every tangent made in it."""
    current = -1 if _state.level is None else _state.level.index
    if level is None:
        level = current
    if level != current:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that was "
                           "created. This is not supported.")
    if level < 0:
        raise RuntimeError("Dual level must be a positive number.")
    for t in list(_state.level.duals.values()):
        t._fw_grad = None
    _state.level, _state.active = None, False


class dual_level(_GradModeContext):
    """Context manager (or decorator) in which dual tensors live: enters a level, exits it."""

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, *exc):
        exit_dual_level()
        return False


class UnpackedDualTensor(NamedTuple):
    """What unpack_dual returns: the primal (a view) and the tangent (None where there is none)."""

    primal: Tensor
    tangent: Optional[Tensor]


def _level_index(level):
    return (-1 if _state.level is None else _state.level.index) if level is None else level


def make_dual(tensor, tangent, *, level=None):
    """A view of `tensor` carrying `tangent` at the level; the tangent is kept as is when laid
    out as `tensor`, else copied into that layout. Differentiable in reverse mode too."""
    level = _level_index(level)
    if level < 0:
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, "
                           "make sure to enter_dual_level() first.")
    for name, t in (("primal", tensor), ("tangent", tangent)):
        if not (t.dtype.is_floating_point or t.dtype.is_complex):
            raise ValueError(f"Expected {name} to be floating point or complex, but got: "
                             f"{t.dtype}")
    if level != _state.level.index:
        raise RuntimeError("Invalid level given to _make_dual")
    if tangent_of(tensor) is not None:
        raise RuntimeError("Making a dual Tensor based on a Tensor that already has a forward "
                           f"gradient at the same level {level} is not supported.")
    if tuple(tangent.shape) != tuple(tensor.shape):
        raise RuntimeError("Trying to set a forward gradient that has a different size than that "
                           "of the original Tensor, this is not supported. Tensor is of size "
                           f"{list(tensor.shape)} while the given forward gradient is of size "
                           f"{list(tangent.shape)}.")
    dual = tensor.view_as(tensor)
    set_tangent(dual, tangent)
    return dual


def unpack_dual(tensor, *, level=None):
    """(primal, tangent) of `tensor` at the level: the primal a view without the tangent."""
    level = _level_index(level)
    if level < 0:
        return UnpackedDualTensor(tensor, None)
    tangent = tangent_of(tensor) if level == _state.level.index else None
    with suspended():
        return UnpackedDualTensor(tensor.view_as(tensor), tangent)


def tangent_of(t):
    """The tangent of tensor `t` at the current level, or None."""
    pair = t._fw_grad
    if pair is None or pair[0] is not _state.level:
        return None
    return pair[1]


def set_tangent(t, tangent):
    """Give `t` `tangent` at the current level, copied into t's layout unless laid out as t."""
    from .views import _geometry, _zeros_with_geometry
    if not _laid_out_alike(tangent, t):
        tangent = _zeros_with_geometry(tangent, _geometry(t)).copy_(tangent)
    _state.level.duals[id(t)] = t
    t._fw_grad = (_state.level, tangent)


def _laid_out_alike(tangent, t):
    return (tangent.shape == t.shape and tangent.stride() == t.stride()
            and tangent.storage_offset() == t.storage_offset())


@contextlib.contextmanager
def pushing_tangents():
    """Inside, backward passes compute forward-mode derivatives by the double-backward trick
    (a Function's tangents, genesis.func.jvp's): J t as the gradient of the vjp J^T u . t."""
    _state.pushing += 1
    try:
        yield
    finally:
        _state.pushing -= 1


def is_pushing_tangents():
    """Whether a `pushing_tangents` block is running."""
    return _state.pushing > 0


class suspended:
    """Ops propagate no tangents inside: while a tangent is computed, or a primal unpacked."""

    def __enter__(self):
        self.active, _state.active = _state.active, False

    def __exit__(self, *exc):
        _state.active = self.active
