"""Launch recipes: the launches of one op on one geometry, assembled from (name, value, type)
entries and kept per geometry. Used by the kernel modules not yet written with one positional
launcher per kernel (launch.Launch); it goes once they all are."""

import numpy as np

from ..launch import (LaunchCache, compile_kernel, constant_suffix, get_kernel,  # noqa: F401
                      pointer_of, stream_workspace)
from ..runtime.array import CUDAArray
from ._strided_indexing import (MAX_DIMS, MAX_ROW_DIMS, RowLayout, cdiv, coalesce,  # noqa: F401
                                index_type, next_pow2, offsets, placeholder, program_range,
                                select)


def size_entries(prefix, sizes, max_dims, ty):
    """Kernel entries {prefix}size1.. (unused ones become constexpr 1)."""
    n = len(sizes)
    return [(f"{prefix}size{d}", sizes[d] if d < n else 1, ty if d < n else "constexpr")
            for d in range(1, max_dims)]


def stride_entries(prefix, strides, max_dims, ty):
    """Kernel entries {prefix}s0.. (unused ones become constexpr 0; an innermost stride of 1
    becomes constexpr 1, so Triton knows the accesses are contiguous and can vectorize)."""
    n = len(strides)
    entries = []
    for d in range(max_dims):
        value = strides[d] if d < n else 0
        const = d >= n or (d == n - 1 and value == 1)
        entries.append((f"{prefix}s{d}", value, "constexpr" if const else ty))
    return entries


class Slot:
    """A runtime argument filled in at every launch: the value playing `role` (an array's
    address, or a scalar). `aligned`: the array's address is a multiple of 16 (a key of the
    specialization, see aligned_names)."""

    __slots__ = ("role", "aligned")

    def __init__(self, role, aligned=False):
        self.role, self.aligned = role, aligned


def pointer(name, role, arr):
    """The entry of pointer parameter `name`: `arr`, playing `role` (or constexpr None)."""
    if arr is None:
        return (name, None, "constexpr")
    return (name, Slot(role, arr.ptr % 16 == 0), pointer_of(arr.dtype))


def scalar(name, role, value, ty):
    """The entry of scalar parameter `name`: `value` of Triton type `ty`, given per launch as
    `role` (or constexpr None)."""
    if value is None:
        return (name, None, "constexpr")
    return (name, Slot(role), ty)


def specialization(fn, entries):
    """(signature, constexprs, launch args) of `fn` from (name, value, type) entries covering
    every parameter; a type of "constexpr" makes the value a compile-time constant. The launch
    args are the values of the parameters before the trailing constants (see BoundKernel)."""
    order = {name: i for i, name in enumerate(fn.arg_names)}
    entries = sorted(entries, key=lambda e: order[e[0]])
    signature = {name: ty for name, _, ty in entries}
    consts = {name: value for name, value, ty in entries if ty == "constexpr"}
    return signature, consts, [value for _, value, _ in entries[:constant_suffix(signature)]]


def aligned_names(entries):
    """Arguments Triton may assume are multiples of 16 (pointers in bytes, integers in value):
    what lets it emit 16-byte vector accesses."""
    names = []
    for name, value, ty in entries:
        if isinstance(value, Slot):
            if value.aligned:
                names.append(name)
        elif ty != "constexpr" and ty[0] == "i" and value % 16 == 0:
            names.append(name)
    return names


class Recipe:
    """The launches of one op on one geometry: every argument fixed except the Slots, which
    are filled from the arrays and scalars given to `run` (plus the scratch buffers `run`
    provides). Built once per geometry and kept (see RecipeCache): a later call with the same
    geometry costs a dict lookup and the launches. With a `target` (compile_all), `add` only
    compiles."""

    __slots__ = ("steps", "scratch", "scratch_bytes", "device", "target")

    def __init__(self, device=0, target=None):
        self.steps, self.scratch, self.device, self.target = [], [], device, target
        self.scratch_bytes = 0

    def scratch_array(self, shape, dtype):
        """(role, stand-in array) of a scratch buffer that `run` provides."""
        role = f"scratch{len(self.scratch)}"
        dtype = np.dtype(dtype)
        self.scratch.append((role, tuple(shape), dtype, self.scratch_bytes))
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        self.scratch_bytes += -(-nbytes // _SCRATCH_ALIGN) * _SCRATCH_ALIGN
        return role, placeholder(shape, dtype)

    def add(self, fn, grid, entries, num_warps, num_stages=1):
        signature, consts, args = specialization(fn, entries)
        aligned = aligned_names(entries)
        if self.target is not None:
            compile_kernel(fn, signature, consts, aligned, num_warps, num_stages, self.target)
            return
        kernel = get_kernel(fn, signature, consts, aligned, num_warps, num_stages, self.device)
        slots = [(i, a.role) for i, a in enumerate(args) if isinstance(a, Slot)]
        self.steps.append((kernel, tuple(grid), args, slots))

    def run(self, stream, values):
        """Launch every step; `values` maps roles to arrays, addresses and scalars."""
        if self.scratch:
            self._place_scratch(stream, values)
        for kernel, grid, args, slots in self.steps:
            args = list(args)
            for i, role in slots:
                value = values[role]
                args[i] = value.ptr if value.__class__ is CUDAArray else value
            kernel(grid, stream, *args)

    def _place_scratch(self, stream, values):
        """Scratch for this run: in the stream's workspace for a recipe of one launch (which
        writes and reads it itself), else fresh arrays (a later launch of the recipe reads what
        an earlier one wrote, and another thread's launches on the stream may come between)."""
        if len(self.steps) == 1:
            base = stream_workspace(self.device, stream, self.scratch_bytes).ptr
            for role, _, _, offset in self.scratch:
                values[role] = base + offset
        else:
            for role, shape, dtype, _ in self.scratch:
                values[role] = CUDAArray.empty(shape, dtype, self.device, stream)


_SCRATCH_ALIGN = 256


RecipeCache = LaunchCache


def const(**values):
    """Constexpr entries."""
    return [(name, value, "constexpr") for name, value in values.items()]
