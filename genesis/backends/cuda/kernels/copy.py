"""Copy, cast and fill kernels: what moving data between layouts and dtypes requires.

`strided_copy` writes any strided view into any other of the same shape, converting the dtype on
the way (a cast is a copy into another dtype). Dimensions that are contiguous in both views are
merged first, so most copies become 1-D and run with 16-byte vector accesses; at most MAX_DIMS
dimensions remain, each output element's source and destination offsets computed from its
linear index.

Block sizes: 1-D copies use BLOCK=1024 elements with 4 warps (8 elements a thread: two 16-byte
vectors of float32), enough bytes in flight per SM to approach copy bandwidth; strided copies use
the same block, their cost is the index arithmetic and the scattered accesses.
"""

import triton
import triton.language as tl

from ..launch import get_kernel, is_aligned, pointer_type
from ..runtime import driver

MAX_DIMS = 6
_FLOAT_NAMES = ("float16", "bfloat16", "float32", "float64")
BLOCK = 1024
NUM_WARPS = 4


@triton.jit
def _copy_contiguous_kernel(src, dst, n, BLOCK: tl.constexpr, TO_BOOL: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(src + offs, mask=mask)
    if TO_BOOL:
        x = x != 0
    tl.store(dst + offs, x.to(dst.dtype.element_ty), mask=mask)


@triton.jit
def _copy_strided_kernel(src, dst, n,
                         size1, size2, size3, size4, size5,
                         src_s0, src_s1, src_s2, src_s3, src_s4, src_s5,
                         dst_s0, dst_s1, dst_s2, dst_s3, dst_s4, dst_s5,
                         NDIM: tl.constexpr, BLOCK: tl.constexpr, TO_BOOL: tl.constexpr):
    # Peel the linear index into coordinates from the innermost dimension outwards.
    linear = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = linear < n
    rest = linear
    src_off = tl.zeros([BLOCK], dtype=tl.int64)
    dst_off = tl.zeros([BLOCK], dtype=tl.int64)
    if NDIM >= 6:
        i = rest % size5
        rest = rest // size5
        src_off += i * src_s5
        dst_off += i * dst_s5
    if NDIM >= 5:
        i = rest % size4
        rest = rest // size4
        src_off += i * src_s4
        dst_off += i * dst_s4
    if NDIM >= 4:
        i = rest % size3
        rest = rest // size3
        src_off += i * src_s3
        dst_off += i * dst_s3
    if NDIM >= 3:
        i = rest % size2
        rest = rest // size2
        src_off += i * src_s2
        dst_off += i * dst_s2
    if NDIM >= 2:
        i = rest % size1
        rest = rest // size1
        src_off += i * src_s1
        dst_off += i * dst_s1
    src_off += rest * src_s0
    dst_off += rest * dst_s0
    x = tl.load(src + src_off, mask=mask)
    if TO_BOOL:
        x = x != 0
    tl.store(dst + dst_off, x.to(dst.dtype.element_ty), mask=mask)


@triton.jit
def _fill_kernel(dst, n, value, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    x = tl.zeros([BLOCK], dtype=value.dtype) + value
    tl.store(dst + offs, x.to(dst.dtype.element_ty), mask=offs < n)


def coalesce(shape, src_strides, dst_strides):
    """Drop size-1 dims and merge neighbours contiguous in both views; element strides in and out."""
    dims = [(s, a, b) for s, a, b in zip(shape, src_strides, dst_strides) if s != 1]
    merged = []
    for size, a, b in dims:
        if merged:
            psize, pa, pb = merged[-1]
            if pa == a * size and pb == b * size:
                merged[-1] = (psize * size, a, b)
                continue
        merged.append((size, a, b))
    return merged or [(1, 1, 1)]


def _grid(n):
    return (triton.cdiv(n, BLOCK),)


def strided_copy(dst, src, stream):
    """dst[...] = src[...] cast to dst's dtype; both are CUDAArrays of one shape on one device."""
    n = dst.size
    if n == 0:
        return
    to_bool = dst.dtype.kind == "b" and src.dtype.kind != "b"
    if dst.dtype == src.dtype and dst.is_contiguous() and src.is_contiguous():
        driver.memcpy_dtod(dst.ptr, src.ptr, dst.nbytes, stream)
        return
    dims = coalesce(dst.shape, src.element_strides(), dst.element_strides())
    if len(dims) == 1 and dims[0][1] == 1 and dims[0][2] == 1:
        signature = {"src": pointer_type(src.dtype), "dst": pointer_type(dst.dtype), "n": "i64",
                     "BLOCK": "constexpr", "TO_BOOL": "constexpr"}
        aligned = [name for name, v in (("src", src.ptr), ("dst", dst.ptr), ("n", n))
                   if is_aligned(v)]
        kernel = get_kernel(_copy_contiguous_kernel, signature, {"BLOCK": BLOCK, "TO_BOOL": to_bool},
                            aligned, NUM_WARPS, device=dst.device)
        kernel(_grid(n), stream, src.ptr, dst.ptr, n)
        return
    if len(dims) > MAX_DIMS:
        _copy_by_leading_dim(dst, src, stream)
        return
    _launch_strided(dst, src, dims, n, to_bool, stream)


_STRIDED_SIGNATURE_TAIL = {**{f"size{i}": "i64" for i in range(1, MAX_DIMS)},
                           **{f"src_s{i}": "i64" for i in range(MAX_DIMS)},
                           **{f"dst_s{i}": "i64" for i in range(MAX_DIMS)},
                           "NDIM": "constexpr", "BLOCK": "constexpr", "TO_BOOL": "constexpr"}


def _launch_strided(dst, src, dims, n, to_bool, stream):
    pad = [(1, 0, 0)] * (MAX_DIMS - len(dims))
    sizes, src_s, dst_s = zip(*(dims + pad))
    signature = {"src": pointer_type(src.dtype), "dst": pointer_type(dst.dtype), "n": "i64",
                 **_STRIDED_SIGNATURE_TAIL}
    kernel = get_kernel(_copy_strided_kernel, signature,
                        {"NDIM": len(dims), "BLOCK": BLOCK, "TO_BOOL": to_bool}, (), NUM_WARPS,
                        device=dst.device)
    kernel(_grid(n), stream, src.ptr, dst.ptr, n, *sizes[1:], *src_s, *dst_s)


def _copy_by_leading_dim(dst, src, stream):
    """More than MAX_DIMS non-mergeable dims (rare): one launch per index of the first dim."""
    from ..runtime.array import CUDAArray
    for i in range(dst.shape[0]):
        sub = lambda a: CUDAArray(a.storage, a.shape[1:], a.strides[1:],  # noqa: E731
                                  a.offset + i * a.strides[0], a.dtype)
        strided_copy(sub(dst), sub(src), stream)


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
    kernel(_grid(n), stream, dst.ptr, n, scalar)


def compile_all(target):
    """Compile every kernel of this module for `target` (CI does this without a GPU)."""
    from ..launch import compile_kernel
    for src, dst in (("*fp32", "*bf16"), ("*fp16", "*fp32"), ("*i64", "*fp32"), ("*fp32", "*i1")):
        base = {"src": src, "dst": dst, "n": "i64"}
        compile_kernel(_copy_contiguous_kernel, {**base, "BLOCK": "constexpr", "TO_BOOL": "constexpr"},
                       {"BLOCK": BLOCK, "TO_BOOL": dst == "*i1"}, ("src", "dst", "n"),
                       NUM_WARPS, target_=target)
        for ndim in (2, MAX_DIMS):
            compile_kernel(_copy_strided_kernel, {**base, **_STRIDED_SIGNATURE_TAIL},
                           {"NDIM": ndim, "BLOCK": BLOCK, "TO_BOOL": dst == "*i1"}, (), NUM_WARPS,
                           target_=target)
    for dst, value in (("*fp32", "fp64"), ("*bf16", "fp64"), ("*i64", "i64"), ("*i1", "i64")):
        compile_kernel(_fill_kernel, {"dst": dst, "n": "i64", "value": value, "BLOCK": "constexpr"},
                       {"BLOCK": BLOCK}, ("dst", "n"), NUM_WARPS, target_=target)
