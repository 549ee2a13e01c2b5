"""Copy, cast and fill kernels: what moving data between layouts and dtypes requires.

`strided_copy` writes any strided view into any other of the same shape, converting the dtype on
the way (a cast is a copy into another dtype). Dimensions contiguous in both views are merged
first (kernels/_strided.py), so most copies become 1-D and run with 16-byte vector accesses.
Other layouts take the tile kernel: a [BJ, BI] tile over two dims, I (the destination's
contiguous dim) and J (the source's contiguous dim when it has another one: a transpose; else
the next dim in), the remaining dims (at most MAX_DIMS - 2) indexed once per program. A
transposing tile is read along J and written along I, both coalesced (Triton exchanges the tile
through shared memory in between); a row tile (I contiguous in both) is read and written along
I. Launches are kept per geometry as recipes (_strided.Recipe).

Block sizes: the 1-D kernel moves BLOCK=1024 elements per program with 4 warps (8 a thread: two
16-byte float32 vectors). Row tiles hold 4096 elements (up to 1024 along I) and transposing
tiles 64 x 64 (128 x 128 for 1- and 2-byte types, so each row of the tile is at least 128
bytes; as many elements, longer along one dim, when the other is short), 8 warps: enough bytes
in flight per SM to approach copy bandwidth.
"""

import math

import triton
import triton.language as tl

from ..launch import get_kernel, is_aligned, pointer_type
from ..runtime import driver
from ._recipe import (MAX_DIMS, Recipe, RecipeCache, cdiv, coalesce, const, index_type,
                       next_pow2, offsets, placeholder, pointer, program_range, select,
                       size_entries, stride_entries)

_FLOAT_NAMES = ("float16", "bfloat16", "float32", "float64")
BLOCK = 1024
NUM_WARPS = 4
_TILE_WARPS = 8
_ROW_TILE = 4096
_ROW_BLOCK_MAX = 1024
_OUTER_DIMS = MAX_DIMS - 2


@triton.jit
def _converted(x, dst, TO_BOOL: tl.constexpr):
    """`x` in the destination's element type (any nonzero value is True for bool)."""
    if TO_BOOL:
        x = x != 0
    return x.to(dst.dtype.element_ty)


@triton.jit
def _copy_contiguous_kernel(src, dst, n, BLOCK: tl.constexpr, TO_BOOL: tl.constexpr):
    offs = program_range(BLOCK, True)
    mask = offs < n
    tl.store(dst + offs, _converted(tl.load(src + offs, mask=mask), dst, TO_BOOL), mask=mask)


@triton.jit
def _copy_tile_kernel(src, dst, n_i, n_j, osize1, osize2, osize3,
                      src_s0, src_s1, src_s2, src_s3, dst_s0, dst_s1, dst_s2, dst_s3,
                      src_si, src_sj, dst_si, dst_sj,
                      ODIM: tl.constexpr, TO_BOOL: tl.constexpr, INDEX64: tl.constexpr,
                      BI: tl.constexpr, BJ: tl.constexpr):
    """One [BJ, BI] tile of dims J x I at one index of the outer dims; the grid is 1-D with
    I blocks fastest, then J blocks, then the outer index."""
    pid = tl.program_id(0)
    if INDEX64:
        pid = pid.to(tl.int64)
    blocks_i = tl.cdiv(n_i, BI)
    blocks_j = tl.cdiv(n_j, BJ)
    i = (pid % blocks_i) * BI + tl.arange(0, BI)
    rest = pid // blocks_i
    j = (rest % blocks_j) * BJ + tl.arange(0, BJ)
    outer = rest // blocks_j
    sizes = (1, osize1, osize2, osize3)
    src_base = offsets(outer, sizes, (src_s0, src_s1, src_s2, src_s3), ODIM)
    dst_base = offsets(outer, sizes, (dst_s0, dst_s1, dst_s2, dst_s3), ODIM)
    mask = (j < n_j)[:, None] & (i < n_i)[None, :]
    x = tl.load(src + src_base + j[:, None] * src_sj + i[None, :] * src_si, mask=mask)
    tl.store(dst + dst_base + j[:, None] * dst_sj + i[None, :] * dst_si,
             _converted(x, dst, TO_BOOL), mask=mask)


@triton.jit
def _fill_kernel(dst, n, value, BLOCK: tl.constexpr):
    offs = program_range(BLOCK, True)
    x = tl.zeros([BLOCK], dtype=value.dtype) + value
    tl.store(dst + offs, x.to(dst.dtype.element_ty), mask=offs < n)


_recipes = RecipeCache()


def strided_copy(dst, src, stream):
    """dst[...] = src[...] cast to dst's dtype; both are CUDAArrays of one shape on one device."""
    if dst.size == 0:
        return
    if dst.dtype == src.dtype and dst.is_contiguous() and src.is_contiguous():
        driver.memcpy_dtod(dst.ptr, src.ptr, dst.nbytes, stream)
        return
    key = (dst.shape, dst.strides, src.strides, dst.dtype, src.dtype, dst.ptr % 16 == 0,
           src.ptr % 16 == 0, dst.device)
    recipe = _recipes.get_or_build(key, lambda: _recipe(dst, src))
    if recipe is None:
        for i in range(dst.shape[0]):
            strided_copy(select(dst, 0, i), select(src, 0, i), stream)
        return
    recipe.run(stream, {"src": src, "dst": dst})


def _recipe(dst, src, target=None):
    """The launch copying `src` into `dst` laid out like these (None: more than MAX_DIMS dims
    remain after merging; the caller loops over the leading one)."""
    sizes, (src_st, dst_st) = coalesce(dst.shape, src.element_strides(), dst.element_strides())
    recipe = Recipe(dst.device, target)
    entries = [pointer("src", "src", src), pointer("dst", "dst", dst)]
    to_bool = dst.dtype.kind == "b" and src.dtype.kind != "b"
    if len(sizes) == 1 and src_st == dst_st == (1,):
        recipe.add(_copy_contiguous_kernel, (cdiv(dst.size, BLOCK),),
                   entries + [("n", dst.size, "i64")] + const(BLOCK=BLOCK, TO_BOOL=to_bool),
                   NUM_WARPS)
        return recipe
    if len(sizes) > MAX_DIMS:
        return None
    i, j = _tile_dims(sizes, src_st, dst_st)
    outer = [d for d in range(len(sizes)) if d not in (i, j)]
    bi, bj = _tile(sizes, i, j, src_st, max(src.itemsize, dst.itemsize))
    ity = index_type(sizes, src_st, dst_st)
    n_j = sizes[j] if j is not None else 1
    outer_sizes = [sizes[d] for d in outer] or [1]
    entries += [("n_i", sizes[i], ity), ("n_j", n_j, ity)]
    entries += size_entries("o", outer_sizes, _OUTER_DIMS, ity)
    for name, st in (("src_", src_st), ("dst_", dst_st)):
        entries += stride_entries(name, [st[d] for d in outer] or [0], _OUTER_DIMS, ity)
        entries += [(name + "si", st[i], "constexpr" if st[i] in (0, 1) else ity),
                    (name + "sj", st[j] if j is not None else 0,
                     "constexpr" if j is None or st[j] in (0, 1) else ity)]
    entries += const(ODIM=len(outer_sizes), TO_BOOL=to_bool, INDEX64=ity == "i64", BI=bi, BJ=bj)
    programs = cdiv(sizes[i], bi) * cdiv(n_j, bj) * math.prod(outer_sizes)
    recipe.add(_copy_tile_kernel, (programs,), entries, _TILE_WARPS)
    return recipe


def _tile_dims(sizes, src_st, dst_st):
    """(I, J): I the destination's contiguous dim (else the source's, else the last), J the
    source's contiguous dim when that is another one, else the innermost remaining dim by the
    source's strides (None for a 1-D copy)."""
    i = _unit_dim(dst_st)
    if i is None:
        i = _unit_dim(src_st)
    if i is None:
        i = len(sizes) - 1
    others = [d for d in range(len(sizes)) if d != i]
    if not others:
        return i, None
    j = _unit_dim(src_st)
    if j is None or j == i:
        j = min(others, key=lambda d: (abs(src_st[d]), -d))
    return i, j


def _unit_dim(strides):
    """The innermost dim of stride 1 (None when there is none)."""
    return next((d for d in reversed(range(len(strides))) if strides[d] == 1), None)


def _tile(sizes, i, j, src_st, itemsize):
    """(BI, BJ): side x side tiles when the copy transposes (read along J, written along I),
    stretched along the longer dim when the other is short; else rows of up to _ROW_BLOCK_MAX
    along I."""
    n_i, n_j = next_pow2(sizes[i]), next_pow2(sizes[j]) if j is not None else 1
    if j is not None and src_st[j] == 1 and src_st[i] != 1 and n_i > 1:
        side = 128 if itemsize <= 2 else 64
        bj = min(n_j, side * side // min(n_i, side))
        return min(n_i, side * side // bj), bj
    bi = min(n_i, _ROW_BLOCK_MAX)
    return bi, max(1, min(n_j, _ROW_TILE // bi))


def fill(dst, value, stream):
    """Set every element of the contiguous CUDAArray `dst` to `value` (zeros use memset)."""
    n = dst.size
    if n == 0:
        return
    if value == 0 or (dst.dtype.kind == "b" and not value):
        driver.memset_d8(dst.ptr, 0, dst.nbytes, stream)
        return
    is_float = isinstance(value, float) or dst.dtype.name in _FLOAT_NAMES
    scalar = float(value) if is_float else int(value)
    if dst.dtype.kind == "b":
        scalar = int(bool(value))
    signature = {"dst": pointer_type(dst.dtype), "n": "i64", "value": "fp64" if is_float else "i64",
                 "BLOCK": "constexpr"}
    aligned = [name for name, v in (("dst", dst.ptr), ("n", n)) if is_aligned(v)]
    kernel = get_kernel(_fill_kernel, signature, {"BLOCK": BLOCK}, aligned, NUM_WARPS,
                        device=dst.device)
    kernel((cdiv(n, BLOCK),), stream, dst.ptr, n, scalar)


def compile_all(target):
    """The 1-D, row and transposing copies (with casts) and fills, compiled for `target` (CI
    does this without a GPU)."""
    import ml_dtypes
    import numpy as np
    from ..launch import compile_kernel
    f32, bf16 = np.dtype(np.float32), np.dtype(ml_dtypes.bfloat16)
    layouts = [((4096,), None, None), ((64, 1000), (1, 64), None), ((64, 1000), (2000, 2), None),
               ((8, 64, 1000), (64000, 1, 64), None), ((3, 5, 7, 9, 11, 13), None,
                                                        (1, 3, 15, 105, 945, 10395))]
    for src_dtype, dst_dtype in ((f32, bf16), (np.dtype(np.float16), f32), (f32, f32),
                                 (np.dtype(np.int64), np.dtype(np.bool_))):
        for shape, src_strides, dst_strides in layouts:
            _recipe(placeholder(shape, dst_dtype, dst_strides),
                    placeholder(shape, src_dtype, src_strides), target)
    for dst, value in (("*fp32", "fp64"), ("*bf16", "fp64"), ("*i64", "i64"), ("*i1", "i64")):
        compile_kernel(_fill_kernel, {"dst": dst, "n": "i64", "value": value, "BLOCK": "constexpr"},
                       {"BLOCK": BLOCK}, ("dst", "n"), NUM_WARPS, target_=target)
