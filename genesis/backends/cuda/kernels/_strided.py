"""Shared pieces of the strided kernels: dimension coalescing, row layouts, specializations.

Kernels read views where they lie: an N-d view is described by up to MAX_DIMS (size, stride)
pairs after coalescing, and each element's offset is recomputed from its linear index by
`offsets` below. Reductions and row-wise kernels (softmax, scans) see their input as
rows x reduced elements, each side with its own coalesced dims (`row_layout`).
"""

import functools

import numpy as np
import triton
import triton.language as tl

from ..launch import compile_kernel, get_kernel, pointer_type
from ..runtime.array import CUDAArray, contiguous_byte_strides

MAX_DIMS = 6
MAX_ROW_DIMS = 4


@triton.jit
def program_range(BLOCK: tl.constexpr, INDEX64: tl.constexpr):
    """This program's BLOCK indices along grid axis 0 (int64 when the view needs it)."""
    if INDEX64:
        start = tl.program_id(0).to(tl.int64) * BLOCK
    else:
        start = tl.program_id(0) * BLOCK
    return start + tl.arange(0, BLOCK)


@triton.jit
def offsets(linear, sizes, strides, NDIM: tl.constexpr):
    """Element offsets of row-major `linear` indices over `sizes` (sizes[0] is never read)."""
    rest = linear
    off = tl.zeros_like(linear)
    for d in tl.static_range(NDIM - 1, 0, -1):
        off += (rest % sizes[d]) * strides[d]
        rest = rest // sizes[d]
    return off + rest * strides[0]


def coalesce(shape, *strides):
    """(sizes, per-array strides) with size-1 dims dropped and neighbours merged when every array
    is contiguous across them; strides are in elements. Never empty (a 0-d view is [1]).

    Cached by geometry (a model asks for the same few on every step, and the merge costs
    several microseconds); each call gets lists of its own."""
    sizes, merged = _coalesce(tuple(shape), *[tuple(s) for s in strides])
    return list(sizes), list(merged)


@functools.lru_cache(maxsize=4096)
def _coalesce(shape, *strides):
    dims = [(size, tuple(s[i] for s in strides)) for i, size in enumerate(shape) if size != 1]
    merged = []
    for size, st in dims:
        if merged:
            psize, pst = merged[-1]
            if all(p == s * size for p, s in zip(pst, st)):
                merged[-1] = (psize * size, st)
                continue
        merged.append((size, st))
    if not merged:
        merged = [(1, (0,) * len(strides))]
    sizes = tuple([size for size, _ in merged])
    return sizes, tuple([tuple(st[k] for _, st in merged) for k in range(len(strides))])


class RowLayout:
    """Arrays of one shape seen as `rows` x `length`: the kept dims (in order) and the reduced
    dims (by decreasing stride of the first array when `reorder`), each side coalesced across
    all the arrays. `strides` holds each array's element strides over the full shape;
    kept_strides[k] and red_strides[k] are array k's after coalescing."""

    __slots__ = ("kept_sizes", "kept_strides", "length", "red_sizes", "red_strides", "rows")

    def __init__(self, shape, dims, strides, reorder=True):
        kept = [i for i in range(len(shape)) if i not in dims]
        red = list(dims)
        if reorder:
            red.sort(key=lambda i: -abs(strides[0][i]))
        self.kept_sizes, self.kept_strides = coalesce(
            [shape[i] for i in kept], *([st[i] for i in kept] for st in strides))
        self.red_sizes, self.red_strides = coalesce(
            [shape[i] for i in red], *([st[i] for i in red] for st in strides))
        self.rows = _prod(shape[i] for i in kept)
        self.length = _prod(shape[i] for i in red)

    def fits(self):
        return len(self.kept_sizes) <= MAX_ROW_DIMS and len(self.red_sizes) <= MAX_ROW_DIMS

    def index_type(self):
        """The kernel index type for the first array (see index_type)."""
        return index_type(self.kept_sizes + self.red_sizes,
                          *(k + r for k, r in zip(self.kept_strides, self.red_strides)))


def _prod(values):
    out = 1
    for v in values:
        out *= v
    return out


def index_type(sizes, *strides):
    """"i32" when every linear index and element offset fits in int32 (cheaper div/mod), else
    "i64"; `sizes` may be several lists (e.g. rows and reduced) with matching strides."""
    limit = 2 ** 31 - 1
    if _prod(sizes) > limit:
        return "i64"
    for st in strides:
        if sum(abs(s) * (n - 1) for n, s in zip(sizes, st)) > limit:
            return "i64"
    return "i32"


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


_POINTERS = {}


def pointer_of(dtype):
    """Triton's pointer type for a numpy dtype (cached: dtype.name is slow)."""
    ty = _POINTERS.get(dtype)
    if ty is None:
        ty = _POINTERS[dtype] = pointer_type(dtype)
    return ty


def specialization(fn, entries):
    """(signature, constexprs, runtime args) of `fn` from (name, value, type) entries covering
    every parameter; a type of "constexpr" makes the value a compile-time constant."""
    order = {name: i for i, name in enumerate(fn.arg_names)}
    entries = sorted(entries, key=lambda e: order[e[0]])
    signature = {name: ty for name, _, ty in entries}
    consts = {name: value for name, value, ty in entries if ty == "constexpr"}
    return signature, consts, [value for _, value, ty in entries if ty != "constexpr"]


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
            base = stream_workspace(self.device, stream, self.scratch_bytes)
            for role, _, _, offset in self.scratch:
                values[role] = base + offset
        else:
            for role, shape, dtype, _ in self.scratch:
                values[role] = CUDAArray.empty(shape, dtype, self.device, stream)


_SCRATCH_ALIGN = 256
_workspaces = {}


def stream_workspace(device, stream, nbytes):
    """The address of at least `nbytes` bytes of scratch for one-launch recipes on (device,
    stream), kept for the process and grown when a launch needs more.

    Launches on one stream run one after another, so they can all use it, as they would the one
    block the allocator's cache hands each of them in turn, minus an allocation per launch. The
    buffer it replaces goes back to the allocator on the same stream, so a launch still reading
    it finishes before anything else gets that memory."""
    workspace = _workspaces.get((device, stream))
    if workspace is None or workspace.storage.nbytes < nbytes:
        workspace = _workspaces[(device, stream)] = CUDAArray.empty(
            (max(nbytes, 1 << 16),), np.uint8, device, stream)
    return workspace.ptr


class RecipeCache(dict):
    """Recipes by geometry key; emptied when it grows past `limit` (many distinct shapes)."""

    def __init__(self, limit=4096):
        super().__init__()
        self.limit = limit

    def get_or_build(self, key, build):
        recipe = self.get(key)
        if recipe is None:
            if len(self) >= self.limit:
                self.clear()
            recipe = self[key] = build()
        return recipe


def cdiv(a, b):
    return -(-a // b)


def next_pow2(n):
    """The smallest power of two >= n (1 for n <= 1)."""
    return 1 << max(n - 1, 0).bit_length()


def const(**values):
    """Constexpr entries."""
    return [(name, value, "constexpr") for name, value in values.items()]


def select(arr, dim, index):
    """`arr[..., index, ...]` along `dim` (a view with that dim removed); scalars pass through."""
    if not isinstance(arr, CUDAArray):
        return arr
    return CUDAArray(arr.storage, arr.shape[:dim] + arr.shape[dim + 1:],
                     arr.strides[:dim] + arr.strides[dim + 1:],
                     arr.offset + index * arr.strides[dim], arr.dtype)


class _NoStorage:
    ptr = 0
    device = 0


def placeholder(shape, dtype, strides=None):
    """A CUDAArray that owns no memory (address 0): compile_all specializes on its layout."""
    dtype = np.dtype(dtype)
    shape = tuple(shape)
    byte_strides = (contiguous_byte_strides(shape, dtype.itemsize) if strides is None
                    else tuple(s * dtype.itemsize for s in strides))
    return CUDAArray(_NoStorage(), shape, byte_strides, 0, dtype)


def compile_all(target):
    """Nothing to compile here: these helpers are compiled inside the kernels that call them."""
