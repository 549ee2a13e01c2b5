"""Counter-based random numbers on the GPU: Philox4x32-10, one kernel for every distribution.

The bits come from Triton's `tl.randint4x(seed, counter)`: the Philox4x32-10 rounds with key =
the generator's 64-bit seed and counter = (low, high) words of a 64-bit counter, four 32-bit
words per counter. Triton's `tl.rand`/`tl.randn` are not used: `tl.rand` keeps 31 bits and its
float32 results are not exact in half types (rounding can reach 1.0), and `tl.randn` clamps its
first uniform at 1e-7, cutting the normal's tails at 5.7 sigma.

Layout: program `pid` fills logical elements pid*BLOCK .. pid*BLOCK + BLOCK - 1 (row-major over
the output's shape, whatever its strides) from counters offset + pid*Q + j, Q = BLOCK / V, where
a counter's four words make V values (V = 4 with one word per value; V = 2 when a value takes two
words: float64 variates and 64-bit integers). Value k of counter j lands on element
pid*BLOCK + k*Q + j, so each of the V stores is contiguous. Element e never uses a counter beyond
offset + e, so a draw of n values consumes at most n counters: callers advance the generator's
offset by n (the element count), and a strided view gets the values a contiguous tensor of its
shape would get.

Variates (computed in float32, float64 for float64 outputs, and rounded once):
- uniform [0, 1): k * 2**-d for k the top d bits of a word, d the output dtype's mantissa digits
  (24 for float32, 11 for float16, 8 for bfloat16; 53 bits from two words for float64), as
  PyTorch's CPU generator and genesis's CPU `rand` do: every value is exact in the dtype, so
  `rand` never reaches 1; uniform_(a, b) is a + (b - a) * u, and a result that rounds to b
  becomes a (PyTorch's rule).
- normal: Box-Muller on (u1, u2) with u1 in (0, 1] from all 32 bits (w * 2**-32 + 2**-33, so the
  tails reach 6.8 sigma; 2**-54 resolution for float64) and theta = 2 pi u2; one pair of words
  gives two normals.
- exponential: -log(u1) / lambd with u1 in (0, 1] as above.
- integers in [low, high): low + floor(x * range / 2**64) for x uniform on 64 bits (a
  multiply-shift, Lemire's method without the rejection step): each value is hit by
  floor or ceil of 2**64 / range inputs, a relative bias below range / 2**64, which is below
  2**-32 for any range that fits in 32 bits (PyTorch's modulo of 32 bits has up to range / 2**32).
- bernoulli: u < p (u with 24 bits, or 53 when p is float64).
- dropout: x * scale where u >= p, else 0 (u with 24 bits whatever the dtype, so the backward,
  which runs the same kernel on the gradient with the same seed and offset, drops the same
  elements).
"""

import ml_dtypes
import numpy as np
import triton
import triton.language as tl
from triton.language.extra import libdevice

from ....dispatch import register
from ..runtime.array import CUDAArray
from ..runtime.device import activate
from ..runtime.stream import current_stream_handle
from ..launch import Const, Launch, LaunchCache
from ._strided_indexing import (MAX_DIMS, cdiv, coalesce, dim_sizes, dim_strides, index_type,
                                offsets)
from .copy import strided_copy
from ._math import sqrt_rn

BLOCK = 1024
NUM_WARPS = 4

UNIFORM, NORMAL, EXPONENTIAL, INTEGER, BERNOULLI, DROPOUT = map(tl.constexpr, range(6))


@triton.jit
def _unit(w, DIGITS: tl.constexpr = 24):
    """[0, 1) from the top DIGITS (<= 24) bits of a word: k * 2**-DIGITS, exact in float32."""
    return (w >> (32 - DIGITS)).to(tl.float32) * (1.0 / (1 << DIGITS))


@triton.jit
def _unit_wide(hi, lo):
    """[0, 1) from 53 bits of two words (exact in float64)."""
    bits = (hi.to(tl.uint64) << 21) | (lo >> 11).to(tl.uint64)
    return bits.to(tl.float64) * 1.1102230246251565e-16


@triton.jit
def _open(w):
    """(0, 1] from all 32 bits of a word: never 0, so its log is finite."""
    return w.to(tl.float32) * 2.3283064365386963e-10 + 1.1641532182693481e-10


@triton.jit
def _open_wide(hi, lo):
    return _unit_wide(hi, lo) + 5.551115123125783e-17


@triton.jit
def _box_muller(u1, u2):
    """Two independent standard normals from u1 in (0, 1] and u2 in [0, 1)."""
    r = sqrt_rn(-2.0 * libdevice.log(u1))
    theta = 6.283185307179586 * u2
    return r * libdevice.cos(theta), r * libdevice.sin(theta)


@triton.jit
def _integer(hi, lo, span):
    """floor(x * span / 2**64) for the 64-bit x = (hi, lo): uniform on [0, span)."""
    x = (hi.to(tl.uint64) << 32) | lo.to(tl.uint64)
    return tl.umulhi(x, span.to(tl.uint64, bitcast=True))


@triton.jit
def _variates(w0, w1, w2, w3, span, DIST: tl.constexpr, WIDE: tl.constexpr,
              DIGITS: tl.constexpr):
    """Four (WIDE: two, the last two repeated) variates of DIST from one counter's words."""
    if DIST == INTEGER:
        v0 = _integer(w0, w1, span)
        v1 = _integer(w2, w3, span)
        v2, v3 = v0, v1
    elif WIDE:
        if DIST == NORMAL:
            v0, v1 = _box_muller(_open_wide(w0, w1), _unit_wide(w2, w3))
        elif DIST == EXPONENTIAL:
            v0 = -libdevice.log(_open_wide(w0, w1))
            v1 = -libdevice.log(_open_wide(w2, w3))
        else:
            v0 = _unit_wide(w0, w1)
            v1 = _unit_wide(w2, w3)
        v2, v3 = v0, v1
    elif DIST == NORMAL:
        v0, v1 = _box_muller(_open(w0), _unit(w1))
        v2, v3 = _box_muller(_open(w2), _unit(w3))
    elif DIST == EXPONENTIAL:
        v0 = -libdevice.log(_open(w0))
        v1 = -libdevice.log(_open(w1))
        v2 = -libdevice.log(_open(w2))
        v3 = -libdevice.log(_open(w3))
    else:
        v0, v1 = _unit(w0, DIGITS), _unit(w1, DIGITS)
        v2, v3 = _unit(w2, DIGITS), _unit(w3, DIGITS)
    return v0, v1, v2, v3


@triton.jit
def _emit(v, e, out, src, N, a, b, sizes, o_strides, x_strides,
          DIST: tl.constexpr, CT: tl.constexpr, NDIM: tl.constexpr):
    """Turn variates `v` of elements `e` into DIST's values and store them."""
    mask = e < N
    out_ty = out.dtype.element_ty
    if DIST == UNIFORM:
        r = (a.to(CT) + (b.to(CT) - a.to(CT)) * v).to(out_ty)
        r = tl.where(r == b.to(CT).to(out_ty), a.to(CT).to(out_ty), r)
    elif DIST == NORMAL:
        r = (v * b.to(CT) + a.to(CT)).to(out_ty)
    elif DIST == EXPONENTIAL:
        r = (v / a.to(CT)).to(out_ty)
    elif DIST == INTEGER:
        r = (a.to(tl.uint64, bitcast=True) + v).to(tl.int64, bitcast=True)
        if out_ty.is_fp16() or out_ty.is_bf16():
            r = r.to(tl.float32)
        r = r.to(out_ty)
    elif DIST == BERNOULLI:
        if src is None:
            p = a.to(CT)
        else:
            p = tl.load(src + offsets(e, sizes, x_strides, NDIM), mask=mask, other=0).to(CT)
        r = (v < p).to(out_ty)
    else:
        x = tl.load(src + offsets(e, sizes, x_strides, NDIM), mask=mask, other=0).to(CT)
        r = tl.where(v < a.to(tl.float32), 0.0, x * b.to(CT)).to(out_ty)
    tl.store(out + offsets(e, sizes, o_strides, NDIM), r, mask=mask)


@triton.jit
def philox_start(seed, offset, state_ptr, seed_in_memory):
    """(Philox key, first counter): the generator's seed and offset, or in a CUDA graph
    (seed_in_memory 1) the seed and base offset read from state_ptr, the offset counting from
    that base. One specialization serves both, so a capture compiles nothing new; a kernel
    that draws nothing passes state_ptr None."""
    key = seed
    start = offset
    if state_ptr is not None:
        if seed_in_memory != 0:
            key = tl.load(state_ptr)
            start += tl.load(state_ptr + 1)
    return key, start


@triton.jit
def _philox_kernel(
        # pointers: the output, the input of bernoulli (p) and dropout (x), else None
        out_ptr, src_ptr,
        # elements, the generator's seed and the first counter; in a CUDA graph (seed_in_memory
        # 1) the seed and a base offset for the counters are read from state_ptr instead
        n_elements, seed, offset, state_ptr, seed_in_memory,
        # the distribution's two parameters (see _emit)
        a, b,
        # sizes of dims 1.. (size 0 is never read), strides of out and src, in elements
        size1, size2, size3, size4, size5,
        out_stride0, out_stride1, out_stride2, out_stride3, out_stride4, out_stride5,
        src_stride0, src_stride1, src_stride2, src_stride3, src_stride4, src_stride5,
        # meta-parameters
        DIST: tl.constexpr, WIDE: tl.constexpr, DIGITS: tl.constexpr, CT: tl.constexpr,
        NDIM: tl.constexpr, INDEX64: tl.constexpr, BLOCK: tl.constexpr):
    """Elements pid*BLOCK.. of `out` (see the module docstring for the counter layout). A CUDA
    graph reads the seed and base offset from memory, so that each replay draws new numbers."""
    V: tl.constexpr = 2 if WIDE else 4
    Q: tl.constexpr = BLOCK // V
    key, start = philox_start(seed, offset, state_ptr, seed_in_memory)
    pid = tl.program_id(0)
    lane = tl.arange(0, Q)
    counter = start + pid.to(tl.int64) * Q + lane
    w0, w1, w2, w3 = tl.randint4x(key, counter)
    v0, v1, v2, v3 = _variates(w0, w1, w2, w3, b, DIST, WIDE, DIGITS)
    if INDEX64:
        first = pid.to(tl.int64) * BLOCK + lane
    else:
        first = pid * BLOCK + lane
    sizes = (1, size1, size2, size3, size4, size5)
    o_strides = (out_stride0, out_stride1, out_stride2, out_stride3, out_stride4, out_stride5)
    x_strides = (src_stride0, src_stride1, src_stride2, src_stride3, src_stride4, src_stride5)
    _emit(v0, first, out_ptr, src_ptr, n_elements, a, b, sizes, o_strides, x_strides, DIST, CT,
          NDIM)
    _emit(v1, first + Q, out_ptr, src_ptr, n_elements, a, b, sizes, o_strides, x_strides, DIST,
          CT, NDIM)
    if not WIDE:
        _emit(v2, first + 2 * Q, out_ptr, src_ptr, n_elements, a, b, sizes, o_strides, x_strides,
              DIST, CT, NDIM)
        _emit(v3, first + 3 * Q, out_ptr, src_ptr, n_elements, a, b, sizes, o_strides, x_strides,
              DIST, CT, NDIM)


def _wide(dist, dtype):
    """Whether a value takes two words: 64-bit integers, float64 variates."""
    return dist == INTEGER or (dist != DROPOUT and dtype == np.float64)


def _digits(dist, dtype):
    """Bits of a narrow uniform: the output's mantissa digits for uniform_, else 24."""
    if dist == UNIFORM and dtype.itemsize == 2:
        return ml_dtypes.finfo(dtype).nmant + 1
    return 24


def _param_types(dist):
    return ("i64", "i64") if dist == INTEGER else ("fp64", "fp64")


def _fill_plan(dist, out, src, target=None):
    """(launch, sizes and strides the call passes) filling `out` (read from `src` for
    bernoulli/dropout), both of one shape."""
    arrays = [out] if src is None else [out, src]
    sizes, strides = coalesce(out.shape, *(arr.element_strides() for arr in arrays))
    index64 = out.size + BLOCK > 2 ** 31 - 1 or index_type(sizes, *strides) == "i64"
    precision = out.dtype if src is None or dist == DROPOUT else src.dtype
    param_type = "i64" if dist == INTEGER else "fp64"
    meta = dict(DIST=dist, WIDE=_wide(dist, precision), DIGITS=_digits(dist, out.dtype),
                CT=tl.float64 if precision == np.float64 else tl.float32, NDIM=len(sizes),
                INDEX64=index64, BLOCK=BLOCK)
    launch = Launch(_philox_kernel, (cdiv(out.size, BLOCK),), meta, NUM_WARPS,
                    int_type="i64" if index64 else "i32",
                    types={"seed": "i64", "offset": "i64", "a": param_type, "b": param_type},
                    per_call=("seed", "offset", "state_ptr", "a", "b"), device=out.device,
                    target=target)
    src_strides = dim_strides(strides[1], MAX_DIMS) if src is not None else (Const(0),) * MAX_DIMS
    return launch, (dim_sizes(sizes, MAX_DIMS), dim_strides(strides[0], MAX_DIMS), src_strides)


def _fill_launch(launch, dims, stream, out, src, seed, offset, a, b):
    """The call of _philox_kernel; `dims` as _fill_plan makes them; `seed` and `offset` as
    philox_args takes them."""
    sizes, out_strides, src_strides = dims
    launch(stream,
           # pointers
           out, src,
           # elements, seed, first counter, graph state, whether to read it
           out.size, *philox_args(seed, offset, out.device),
           # the distribution's parameters
           a, b,
           # sizes and strides
           *sizes, *out_strides, *src_strides)


_launches = LaunchCache()


def _geometry(arr):
    return None if arr is None else (arr.strides, arr.dtype, arr.ptr % 16 == 0)


def _dims(*arrays):
    """How many dims the kernel sees for these arrays of one shape (after coalescing)."""
    return len(coalesce(arrays[0].shape, *(arr.element_strides() for arr in arrays))[0])


def signed64(value):
    """The int64 with `value`'s low 64 bits (Triton takes seeds and spans as i64)."""
    value &= (1 << 64) - 1
    return value - (1 << 64) if value >= 1 << 63 else value


def _fill(dist, out, src, a, b, seed, offset):
    """Fill `out` in place with DIST's values from counters offset..; returns `out`. `seed` is
    the generator's seed, or, in a CUDA graph, an int64 array [seed, base offset] on the device
    that the counters' `offset` is relative to."""
    if out.size == 0:
        return out
    activate(out.device)
    stream = current_stream_handle(out.device)
    if src is not None and _dims(out, src) > MAX_DIMS:
        dense = CUDAArray.empty(src.shape, src.dtype, src.device, stream)
        strided_copy(dense, src, stream)
        src = dense
    if _dims(out) > MAX_DIMS:
        dense = CUDAArray.empty(out.shape, out.dtype, out.device, stream)
        _fill(dist, dense, src, a, b, seed, offset)
        strided_copy(out, dense, stream)
        return out
    key = (dist, out.shape, _geometry(out), _geometry(src), out.device)
    launch, dims = _launches.get_or_build(key, lambda: _fill_plan(dist, out, src))
    _fill_launch(launch, dims, stream, out, src, seed, offset, a, b)
    return out


def philox_args(seed, offset, device):
    """(seed, first counter, graph state, seed_in_memory): philox_start's arguments for a
    draw of the generator, whose `seed` is its seed, or in a CUDA graph its device array
    [seed, base offset] that `offset` counts from."""
    if seed.__class__ is CUDAArray:
        return 0, offset, seed, 1
    return signed64(seed), offset, _placeholder_rng_state(device), 0


_placeholder_states = {}


def _placeholder_rng_state(device):
    """A device's placeholder for the graph-state argument, which eager launches never read."""
    state = _placeholder_states.get(device)
    if state is None:
        state = _placeholder_states[device] = CUDAArray.empty((2,), np.int64, device)
    return state


@register("uniform_", "cuda")
def uniform_(out, low, high, seed, offset):
    """Uniform on [low, high) in place (any strides)."""
    return _fill(UNIFORM, out, None, float(low), float(high), seed, offset)


@register("normal_", "cuda")
def normal_(out, mean, std, seed, offset):
    """Normal(mean, std**2) in place."""
    return _fill(NORMAL, out, None, float(mean), float(std), seed, offset)


@register("exponential_", "cuda")
def exponential_(out, lambd, seed, offset):
    """Exponential with rate `lambd` in place."""
    return _fill(EXPONENTIAL, out, None, float(lambd), 0.0, seed, offset)


@register("random_", "cuda")
def random_(out, low, high, seed, offset):
    """Integers uniform on [low, high) in place, cast to out's dtype (high - low <= 2**64 - 1)."""
    return _fill(INTEGER, out, None, signed64(low), signed64(high - low), seed, offset)


@register("bernoulli_", "cuda")
def bernoulli_(out, p, seed, offset):
    """0/1 in place with probability `p` of a 1: a float, or an array of out's shape (views and
    expanded arrays are read where they lie)."""
    if isinstance(p, CUDAArray):
        return _fill(BERNOULLI, out, p, 0.0, 0.0, seed, offset)
    return _fill(BERNOULLI, out, None, float(p), 0.0, seed, offset)


@register("dropout", "cuda")
def dropout(x, p, seed, offset):
    """x / (1 - p) where the element is kept, 0 where dropped (probability p), as a new array.
    The same (seed, offset) drop the same elements of any array of x's shape: the backward runs
    this kernel on the gradient."""
    activate(x.device)
    out = CUDAArray.empty(x.shape, x.dtype, x.device, current_stream_handle(x.device))
    return _fill(DROPOUT, out, x, float(p), 1.0 / (1.0 - p), seed, offset)
