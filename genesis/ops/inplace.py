"""In-place writes: validate first, write once, then rebase the autograd history.

An in-place op computes its result out of place (in the graph), checks that it fits the
destination (shape, dtype cast, no self-overlap) and only then copies it in, so a failed in-place
op leaves its tensor as it was. An elementwise op that records no graph and needs no cast or
broadcast of the destination skips the copy: its kernel writes the destination directly
(`write_elementwise`, and `write_fill` for fill_), once every check has passed. The
destination's version counter is bumped so that backward can detect tensors modified after
being saved.

When the destination is a view of a base that takes part in autograd, the base's history is
rebased (`genesis.autograd.views.rebase_history`).
"""

from .. import dtypes
from ..autograd import graph
from ..autograd.grad_mode import is_grad_enabled
from ..autograd.forward_ad import set_tangent, tangent_of
from ..autograd.function import edge_of, has_dual
from ..autograd.tangents import assign_tangent
from ..autograd.views import rebase_history
from ..dispatch import kernel
from ..tensor import Tensor
from .common import broadcast_data, operand_scalar


def _has_internal_overlap(t):
    """True when two elements of `t` share memory (a stride-0 dimension of size > 1)."""
    if 0 not in t._data.strides:  # the common case, read from the array's own strides
        return False
    return any(stride == 0 and size > 1 for size, stride in zip(t.shape, t.stride()))


def check_inplace_target(self, op):
    """Errors PyTorch raises before any in-place write to `self`; inside
    allow_mutation_on_saved_tensors, then, a copy of what the graph saved from its memory."""
    if is_grad_enabled():
        if self._requires_grad and self.is_leaf:
            raise RuntimeError(f"{op}: a leaf Variable that requires grad is being used in an "
                               "in-place operation.")
        base = self._base
        if base is not None and base.is_leaf and base._requires_grad:
            raise RuntimeError(f"{op}: a view of a leaf Variable that requires grad is being used in "
                               "an in-place operation.")
    if _has_internal_overlap(self):
        raise RuntimeError(f"{op}: unsupported operation: more than one element of the written-to "
                           "tensor refers to a single memory location. Please clone() the tensor "
                           "before performing the operation.")
    if graph._mutation_context is not None:
        graph._mutation_context.before_write(self)


def snapshot_for_graph(self, *args):
    """The operand an in-place op computes from: a copy when the op will be recorded.

    The out-of-place op may save its input for backward; saving `self`, which is about to be
    overwritten, would fail the version check, so a recorded op reads from a copy instead. The
    copy stands in `self`'s place in the graph (same grad_fn and output index), so the op's node
    leads straight to `self`'s history, as PyTorch's in-place node does, with no clone between.
    """
    recorded = is_grad_enabled() and any(isinstance(a, Tensor) and a._requires_grad
                                         for a in (self,) + args)
    if not recorded:
        return self
    snapshot = self.detach().clone()
    edge = edge_of(self)  # a leaf's edge is its AccumulateGrad: the in-place check rejects it
    if edge is not None and self.grad_fn is not None:
        snapshot.grad_fn, snapshot._output_nr, snapshot._requires_grad = edge[0], edge[1], True
    if self._fw_grad is not None:
        set_tangent(snapshot, tangent_of(self))
    return snapshot


def write_result(self, result, op):
    """Copy `result` into `self` as an in-place op would, and rebase `self`'s graph."""
    check_inplace_target(self, op)
    if tuple(result.shape) != tuple(self.shape):
        raise RuntimeError(f"{op}: output with shape {list(self.shape)} doesn't match the broadcast "
                           f"shape {list(result.shape)}")
    if result.device != self.device:
        raise RuntimeError(f"{op}: expected result on {self.device}, got {result.device}")
    dtypes.check_result_cast(result.dtype, self.dtype)
    if result.dtype is not self.dtype:
        result = result.to(self.dtype)
    kernel("copy_", self.device.type)(self._data, result._data)
    self._bump_version()
    if is_grad_enabled() and (result._requires_grad or self._requires_grad
                              or (self._base is not None and self._base._requires_grad)):
        rebase_history(self, result)
    if has_dual((self, result)):
        assign_tangent(self, tangent_of(result))
    return self


# Kernels whose result has an integer tensor's dtype when every operand is an integer of it.
_INTEGER_OPS = frozenset(("add", "sub", "mul"))


def write_elementwise(self, op, operands, params, name):
    """In-place `name` as the elementwise kernel `op` over `operands` (among them `self`)
    writing `self` directly; False, having written nothing, unless that is the whole op.

    It is when no graph is recorded and every other operand is a Python number or a tensor of
    self's dtype (a `where` condition: bool) and device that broadcasts to self's shape, with
    `self` floating, or integral (not bool) under an op in _INTEGER_OPS with Python int
    scalars (a step counter's `add_(1)`). Otherwise the caller computes out of place and
    copies (`write_result`), which also raises the errors."""
    dtype, device, shape = self.dtype, self.device, self._data.shape
    grad = is_grad_enabled()
    floating = dtype.is_floating_point
    if grad and _in_graph(self) or has_dual(operands) or not floating and (
            op not in _INTEGER_OPS or dtype is dtypes.bool_ or dtype.is_complex):
        return False
    args = []
    for i, x in enumerate(operands):
        if x is self:
            args.append(self._data)
        elif isinstance(x, Tensor):
            wanted = dtypes.bool_ if op == "where" and i == 0 else dtype
            if (x.dtype is not wanted or x.device is not device and x.device != device
                    or grad and x._requires_grad):
                return False
            if x._data.shape != shape and not _broadcasts_to(x._data.shape, shape):
                return False
            args.append(broadcast_data(x, shape))
        elif type(x) is int or floating and type(x) is float:  # not bool: sub rejects it
            args.append(operand_scalar(op, i, dtype, x))
        else:
            return False
    check_inplace_target(self, name)
    kernel("elementwise_into", device.type)(op, self._data, tuple(args), params)
    self._bump_version()
    return True


def write_fill(self, value, name):
    """In-place `name` setting every element of `self` to the Python number `value`, written
    directly (no temporary, no copy) when no graph is recorded; False otherwise, having written
    nothing."""
    if (type(value) not in (int, float, bool) or is_grad_enabled() and _in_graph(self)
            or self._fw_grad is not None):
        return False
    check_inplace_target(self, name)
    kernel("fill_", self.device.type)(self._data, value)
    self._bump_version()
    return True


def _in_graph(self):
    """Whether `self` (or the base it views) requires grad: writing it must be recorded."""
    base = self._base
    return self._requires_grad or (base is not None and base._requires_grad)


def _broadcasts_to(shape, target):
    """True when `shape` broadcasts to `target` exactly (no new dims beyond target's)."""
    return len(shape) <= len(target) and all(
        s == t or s == 1 for s, t in zip(reversed(shape), reversed(target)))
