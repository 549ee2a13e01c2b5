"""Max and average pooling over 1 to 3 spatial dims on the GPU, forward and backward.

Forward ("max_pool_fwd"): a lane per output element walks its window (kernel, stride,
padding, dilation; ceil_mode is in the output size the caller gives) and keeps the maximum and
its flat position in the input's spatial dims, PyTorch's indices. As PyTorch, a NaN wins (each
later NaN takes over) and a window of -inf points at its first element inside the input;
padding is never read. A max needs no rounding: half types are compared in float32 and stored
back exactly.

Backward ("max_pool_bwd"): a gather, deterministic with no atomics. A lane per input element
visits the outputs whose windows can contain it and adds the output gradient of those whose
index is this element, in the outputs' order, in float32 for half types, rounded once. Along a
dim, output o's window spans o*stride - pad .. o*stride - pad + (kernel-1)*dil, so the outputs
holding input i are the at most (kernel-1)*dil // stride + 1 ending at (i + pad) // stride (2
per dim for 3x3 stride 2: 4 candidates, not the window's 9 taps). An output gradient that the
lanes would read strided (a contiguous one for a channels-last pool) is first copied into the
indices' layout, as PyTorch does.

Average pooling ("avg_pool", the backward with `adjoint`): the forward sums a window (in
float32 for half types) and divides by PyTorch's divisor: divisor_override, or the window's
size counting padding up to size + pad (count_include_pad), or its elements inside the input;
the backward gathers as max pooling's does, adding each output gradient over its divisor.

Both compile the geometry in: divisions by the stride become multiplications, the loops over
taps and candidates have constant bounds and unroll where neither number more than
MAX_UNROLLED (more would make long programs for little gain), and sizes and strides of 0 and
1 (a 2-D pool's depth, a unit stride) are constants too, so their arithmetic folds away and
channels-last reads along the channels become vector loads. The divisions that turn an
element's index into its position, by sizes known at launch, are a multiplication and a shift
by numbers the host computes (`_spatial.magic`: 3 instructions, not 16), unless the innermost
size is a multiple of 16, where Triton sees that a thread's consecutive elements share their
quotients and divides once for them.

1-D and 2-D pools run as 3-D ones with size-1 leading dims. Inputs are read where they lie
(through strides); results are dense, channels-last when the input's channels are its
unit-stride dim (PyTorch's channels_last and channels_last_3d), else contiguous: consecutive
lanes then write consecutive elements, and in channels-last read along the channels.

Tiles: 4 warps a program; a thread takes 4 consecutive elements, but 2 in the NCHW forwards.
Consecutive elements share index arithmetic (Triton divides once for them when the innermost
size is a multiple of 16, and shares address arithmetic), and in channels-last their loads
along the channels are 16-byte vectors. In NCHW the loads gather along W instead, and a
thread's elements set its lanes apart: at 4, a forward's tap load (lanes 8 inputs apart at
stride 2) touches 4 times the cache lines of a lane-per-output load, which costs the float32
forward more than the sharing saves; at 2, twice, in 32 registers. The backwards keep 4: their
candidates lie half as far apart (two inputs share an output at stride 2) and sharing saves
more there (about 100 instructions an element at 4, 190 at 1). The windows are short and each
lane's loads independent, so many elements in flight per SM hide the latency of the strided
reads.
"""

import numpy as np
import triton
import triton.language as tl

from ....dispatch import register
from ..array_ops import copy_
from ..launch import Const, Launch, LaunchCache
from . import _spatial
from ._math import div_rn
from ._spatial import position
from ._strided_indexing import cdiv, program_range

_WARPS = 4
THREADS = 32 * _WARPS
MAX_UNROLLED = 32


@triton.jit
def _max_pool_kernel(
        # pointers: input (N, C, D, H, W); the result and its int64 indices, dense alike
        x_ptr, out_ptr, index_ptr,
        # sizes: output elements, channels, the input's and the output's spatial sizes
        n_out, channels, in_d, in_h, in_w, out_d, out_h, out_w,
        # magic numbers of the divisions by channels, out_d, out_h, out_w (see `_magics`)
        c_m, c_s, d_m, d_s, h_m, h_s, w_m, w_s,
        # strides of the input, in elements
        x_sn, x_sc, x_sd, x_sh, x_sw,
        # meta-parameters: the window's size, stride, padding and dilation, whether its loops
        # unroll, the result's layout, compute type
        KD: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr, SD: tl.constexpr,
        SH: tl.constexpr, SW: tl.constexpr, PD: tl.constexpr, PH: tl.constexpr,
        PW: tl.constexpr, DD: tl.constexpr, DH: tl.constexpr, DW: tl.constexpr,
        UNROLL: tl.constexpr, CHANNELS_LAST: tl.constexpr, CT: tl.constexpr,
        INDEX64: tl.constexpr, BLOCK: tl.constexpr):
    """Maximum and flat position of the windows of output elements pid*BLOCK.."""
    o = program_range(BLOCK, INDEX64)
    mask = o < n_out
    n, c, od, oh, ow = position(o, channels, out_d, out_h, out_w, CHANNELS_LAST, c_m, c_s, d_m,
                                d_s, h_m, h_s, w_m, w_s)
    base = x_ptr + n * x_sn + c * x_sc
    best = tl.full((BLOCK,), float("-inf"), CT)
    where = tl.full((BLOCK,), -1, o.dtype)
    for kd in tl.range(KD, loop_unroll_factor=KD if UNROLL else 1):
        i_d = od * SD - PD + kd * DD
        ok_d = mask & (i_d >= 0) & (i_d < in_d)
        for kh in tl.range(KH, loop_unroll_factor=KH if UNROLL else 1):
            i_h = oh * SH - PH + kh * DH
            ok_h = ok_d & (i_h >= 0) & (i_h < in_h)
            for kw in tl.range(KW, loop_unroll_factor=KW if UNROLL else 1):
                i_w = ow * SW - PW + kw * DW
                ok = ok_h & (i_w >= 0) & (i_w < in_w)
                v = tl.load(base + i_d * x_sd + i_h * x_sh + i_w * x_sw, mask=ok,
                            other=float("-inf")).to(CT)
                take = ok & ((v > best) | (v != v) | (where < 0))
                best = tl.where(take, v, best)
                where = tl.where(take, (i_d * in_h + i_h) * in_w + i_w, where)
    tl.store(out_ptr + o, best.to(out_ptr.dtype.element_ty), mask=mask)
    tl.store(index_ptr + o, where.to(tl.int64), mask=mask)


@triton.jit
def _candidate(i, j, size, K: tl.constexpr, S: tl.constexpr, P: tl.constexpr,
               DIL: tl.constexpr):
    """Along one dim, the j-th of the outputs whose windows can hold input position `i`
    (output o's spans o*S - P .. o*S - P + (K-1)*DIL, so at most (K-1)*DIL // S + 1 of them,
    the last at (i + P) // S), and whether one of its taps lands on i."""
    o = (i + P) // S - (K - 1) * DIL // S + j
    gap = i + P - o * S
    return o, (o >= 0) & (o < size) & (gap <= (K - 1) * DIL) & (gap % DIL == 0)


@triton.jit
def _max_pool_backward_kernel(
        # pointers: the output gradient and the forward's indices (N, C, OD, OH, OW); the
        # input gradient, dense
        grad_ptr, index_ptr, out_ptr,
        # sizes: input elements, channels, the input's and the output's spatial sizes
        n_in, channels, in_d, in_h, in_w, out_d, out_h, out_w,
        # magic numbers of the divisions by channels, in_d, in_h, in_w (see `_magics`)
        c_m, c_s, d_m, d_s, h_m, h_s, w_m, w_s,
        # strides of the output gradient and of the indices, in elements
        g_sn, g_sc, g_sd, g_sh, g_sw, i_sn, i_sc, i_sd, i_sh, i_sw,
        # meta-parameters: the window's size, stride, padding and dilation, whether its loops
        # unroll, the result's layout, compute type
        KD: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr, SD: tl.constexpr,
        SH: tl.constexpr, SW: tl.constexpr, PD: tl.constexpr, PH: tl.constexpr,
        PW: tl.constexpr, DD: tl.constexpr, DH: tl.constexpr, DW: tl.constexpr,
        UNROLL: tl.constexpr, CHANNELS_LAST: tl.constexpr, CT: tl.constexpr,
        INDEX64: tl.constexpr, BLOCK: tl.constexpr):
    """Input gradient of elements pid*BLOCK..: the sum of the output gradients that chose it,
    in the order of the outputs."""
    i = program_range(BLOCK, INDEX64)
    mask = i < n_in
    n, c, i_d, i_h, i_w = position(i, channels, in_d, in_h, in_w, CHANNELS_LAST, c_m, c_s, d_m,
                                   d_s, h_m, h_s, w_m, w_s)
    target = (i_d * in_h + i_h) * in_w + i_w
    g_base = grad_ptr + n * g_sn + c * g_sc
    i_base = index_ptr + n * i_sn + c * i_sc
    acc = tl.zeros((BLOCK,), CT)
    CD: tl.constexpr = (KD - 1) * DD // SD + 1
    CH: tl.constexpr = (KH - 1) * DH // SH + 1
    CW: tl.constexpr = (KW - 1) * DW // SW + 1
    for jd in tl.range(CD, loop_unroll_factor=CD if UNROLL else 1):
        od, ok_d = _candidate(i_d, jd, out_d, KD, SD, PD, DD)
        ok_d = ok_d & mask
        for jh in tl.range(CH, loop_unroll_factor=CH if UNROLL else 1):
            oh, ok_h = _candidate(i_h, jh, out_h, KH, SH, PH, DH)
            ok_h = ok_h & ok_d
            for jw in tl.range(CW, loop_unroll_factor=CW if UNROLL else 1):
                ow, ok = _candidate(i_w, jw, out_w, KW, SW, PW, DW)
                ok = ok & ok_h
                chosen = tl.load(i_base + od * i_sd + oh * i_sh + ow * i_sw, mask=ok, other=-1)
                hit = ok & (chosen == target)
                acc += tl.load(g_base + od * g_sd + oh * g_sh + ow * g_sw, mask=hit,
                               other=0.0).to(CT)
    tl.store(out_ptr + i, acc.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _window(o, stride, pad, k, size):
    """(start, end, span) of output `o`'s window along one dim: clipped to the input, and its
    length with the padding (PyTorch's avg_pool rule: never past size + pad)."""
    start = o * stride - pad
    end = tl.minimum(start + k, size + pad)
    return tl.maximum(start, 0), tl.minimum(end, size), end - start


@triton.jit
def _divisor(od, oh, ow, in_d, in_h, in_w, stride_d, stride_h, stride_w, pad_d, pad_h, pad_w,
             divisor, KD: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr,
             COUNT_PAD: tl.constexpr, OVERRIDE: tl.constexpr, CT: tl.constexpr):
    """What the sum over output (od, oh, ow)'s window is divided by: `divisor` (OVERRIDE), the
    window's size with its padding (COUNT_PAD), or its elements inside the input."""
    start_d, end_d, span_d = _window(od, stride_d, pad_d, KD, in_d)
    start_h, end_h, span_h = _window(oh, stride_h, pad_h, KH, in_h)
    start_w, end_w, span_w = _window(ow, stride_w, pad_w, KW, in_w)
    if OVERRIDE:
        count = (od * 0 + divisor).to(CT)
    elif COUNT_PAD:
        count = (span_d * span_h * span_w).to(CT)
    else:
        count = ((end_d - start_d) * (end_h - start_h) * (end_w - start_w)).to(CT)
    return count


@triton.jit
def _tap(p, k, size, out_size, K: tl.constexpr, S: tl.constexpr, P: tl.constexpr,
         ADJOINT: tl.constexpr):
    """Along one dim, for output position `p`: its window's tap k and whether it lies in the
    input; with ADJOINT, for input position `p`: the k-th output whose window may hold it (see
    `_candidate`), and whether it does."""
    if ADJOINT:
        q, ok = _candidate(p, k, out_size, K, S, P, 1)
    else:
        q = p * S - P + k
        ok = (q >= 0) & (q < size)
    return q, ok


@triton.jit
def _avg_pool_kernel(
        # pointers: input (N, C, D, H, W) and the dense result; with ADJOINT the output
        # gradient (N, C, OD, OH, OW) and the dense input gradient
        x_ptr, out_ptr,
        # sizes: result elements, channels, the input's and the output's spatial sizes
        n_out, channels, in_d, in_h, in_w, out_d, out_h, out_w,
        # magic numbers of the divisions by channels and the result's spatial sizes (see
        # `_magics`)
        c_m, c_s, d_m, d_s, h_m, h_s, w_m, w_s,
        # divisor_override (read with OVERRIDE)
        divisor,
        # strides of x, in elements
        x_sn, x_sc, x_sd, x_sh, x_sw,
        # meta-parameters: the window's size, stride and padding, count_include_pad,
        # divisor_override given, backward, whether the loops unroll, the result's layout,
        # compute type
        KD: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr, SD: tl.constexpr,
        SH: tl.constexpr, SW: tl.constexpr, PD: tl.constexpr, PH: tl.constexpr,
        PW: tl.constexpr, COUNT_PAD: tl.constexpr, OVERRIDE: tl.constexpr,
        ADJOINT: tl.constexpr, UNROLL: tl.constexpr, CHANNELS_LAST: tl.constexpr,
        CT: tl.constexpr, INDEX64: tl.constexpr, BLOCK: tl.constexpr):
    """Result elements pid*BLOCK..: each output's window sum over its divisor, or (ADJOINT)
    each input's sum of the output gradients of the windows holding it over their divisors.
    p_* is the result element's position, q_* that of an element of x it reads."""
    e = program_range(BLOCK, INDEX64)
    mask = e < n_out
    if ADJOINT:
        n, c, p_d, p_h, p_w = position(e, channels, in_d, in_h, in_w, CHANNELS_LAST, c_m, c_s,
                                       d_m, d_s, h_m, h_s, w_m, w_s)
    else:
        n, c, p_d, p_h, p_w = position(e, channels, out_d, out_h, out_w, CHANNELS_LAST, c_m,
                                       c_s, d_m, d_s, h_m, h_s, w_m, w_s)
    base = x_ptr + n * x_sn + c * x_sc
    acc = tl.zeros((BLOCK,), CT)
    TD: tl.constexpr = (KD - 1) // SD + 1 if ADJOINT else KD
    TH: tl.constexpr = (KH - 1) // SH + 1 if ADJOINT else KH
    TW: tl.constexpr = (KW - 1) // SW + 1 if ADJOINT else KW
    for kd in tl.range(TD, loop_unroll_factor=TD if UNROLL else 1):
        q_d, ok_d = _tap(p_d, kd, in_d, out_d, KD, SD, PD, ADJOINT)
        ok_d = ok_d & mask
        for kh in tl.range(TH, loop_unroll_factor=TH if UNROLL else 1):
            q_h, ok_h = _tap(p_h, kh, in_h, out_h, KH, SH, PH, ADJOINT)
            ok_h = ok_h & ok_d
            for kw in tl.range(TW, loop_unroll_factor=TW if UNROLL else 1):
                q_w, ok = _tap(p_w, kw, in_w, out_w, KW, SW, PW, ADJOINT)
                ok = ok & ok_h
                v = tl.load(base + q_d * x_sd + q_h * x_sh + q_w * x_sw, mask=ok,
                            other=0.0).to(CT)
                if ADJOINT:
                    count = _divisor(q_d, q_h, q_w, in_d, in_h, in_w, SD, SH, SW, PD, PH, PW,
                                     divisor, KD, KH, KW, COUNT_PAD, OVERRIDE, CT)
                    acc += tl.where(ok, div_rn(v, count), 0.0)
                else:
                    acc += v
    if not ADJOINT:
        acc = div_rn(acc, _divisor(p_d, p_h, p_w, in_d, in_h, in_w, SD, SH, SW, PD, PH, PW,
                                   divisor, KD, KH, KW, COUNT_PAD, OVERRIDE, CT))
    tl.store(out_ptr + e, acc.to(out_ptr.dtype.element_ty), mask=mask)


def _compute_type(dtype):
    return tl.float64 if dtype == np.float64 else tl.float32


def _pool_plan(fn, n, arrays, out, window, geometry, last, target=None, **flags):
    """The launch of `fn` over `n` elements of the dense `out`; `arrays` are the operands whose
    offsets it computes; `flags` its other meta-parameters. The geometry (stride, padding and,
    for max pooling, dilation) is compiled in: divisions by the stride become multiplications,
    the loops' bounds constants, unrolled when neither the window's taps nor the backward's
    candidate outputs number more than MAX_UNROLLED."""
    ity = _spatial.index_width(out, *arrays)
    kd, kh, kw = window
    names = ("SD", "SH", "SW", "PD", "PH", "PW", "DD", "DH", "DW")
    strides, dilations = geometry[:3], geometry[6:] or (1, 1, 1)
    candidates = np.prod([(k - 1) * d // s + 1 for k, s, d in zip(window, strides, dilations)])
    block = THREADS * _per_thread(fn, last, flags)
    meta = dict(KD=kd, KH=kh, KW=kw, **dict(zip(names, geometry)), **flags,
                UNROLL=bool(max(kd * kh * kw, candidates) <= MAX_UNROLLED), CHANNELS_LAST=last,
                CT=_compute_type(out.dtype), INDEX64=ity == "i64", BLOCK=block)
    return Launch(fn, (cdiv(n, block),), meta, _WARPS, int_type=ity, per_call=("divisor",),
                  device=out.device, target=target)


def _per_thread(fn, last, flags):
    """Elements a thread of `fn` takes (see the module docstring): 2 in the NCHW forwards,
    whose window taps are gathers along W, else 4."""
    forward = fn is _max_pool_kernel or fn is _avg_pool_kernel and not flags["ADJOINT"]
    return 2 if forward and not last else 4


def _geometry(stride, padding, dilation):
    return (*_spatial.padded(stride, 1), *_spatial.padded(padding, 0),
            *_spatial.padded(dilation, 1))


def _fixed(values):
    """Sizes and strides with those of 0 and 1 compiled in (a 2-D pool's depth, a unit
    stride): their products and divisions fold away."""
    return [Const(v) if v in (0, 1) else v for v in values]


def _magics(out, last):
    """(m, s) of `_spatial.magic` for the channels and spatial sizes of the dense result `out`,
    by which its elements' indices are divided into positions (int32 ones: an int64 index
    divides as it is), or None (divide by the size): for sizes of 0 and 1 (constants), and
    for all when the innermost (the channels in channels-last, else W) is a multiple of 16,
    where Triton sees that a thread's consecutive elements share their quotients and divides
    once a thread (a multiplication would hide that: once an element)."""
    sizes = out.shape[1:]
    if (sizes[0] if last else sizes[-1]) % 16 == 0:
        return [None] * 8
    pairs = [_spatial.magic(v) if v > 1 else (None, None) for v in sizes]
    return [value for pair in pairs for value in pair]


def _forward_launch(launch, stream, x, out, index):
    """The call of _max_pool_kernel on 3-D views `x`, `out`, `index`."""
    launch(stream,
           # pointers
           x, out, index,
           # sizes
           out.size, *_fixed((x.shape[1], *x.shape[2:], *out.shape[2:])),
           # magic numbers
           *_magics(out, launch.meta["CHANNELS_LAST"]),
           # strides
           *_fixed(x.element_strides()))


def _backward_launch(launch, stream, grad, index, out):
    """The call of _max_pool_backward_kernel on 3-D views `grad`, `index`, `out`."""
    launch(stream,
           # pointers
           grad, index, out,
           # sizes
           out.size, *_fixed((out.shape[1], *out.shape[2:], *grad.shape[2:])),
           # magic numbers
           *_magics(out, launch.meta["CHANNELS_LAST"]),
           # strides
           *_fixed((*grad.element_strides(), *index.element_strides())))


_plans = LaunchCache()


def _key(*arrays):
    return tuple((a.shape, a.strides, a.dtype, a.ptr % 16 == 0) for a in arrays)


@register("max_pool_fwd", "cuda")
def max_pool_fwd(x, kernel_size, stride, padding, dilation, out_size):
    """(values, int64 indices) of max pooling (N, C, *S) `x` (1 to 3 spatial dims) into
    (N, C, *out_size); the window's geometry as tuples over the spatial dims."""
    device = x.device
    shape = (*x.shape[:2], *out_size)
    out, stream, last = _spatial.result(shape, x.dtype, x)
    index = _spatial.empty(shape, np.int64, last, device, stream)
    if out.size:
        geometry = _geometry(stride, padding, dilation)
        window = _spatial.padded(kernel_size, 1)
        x3, out3, index3 = (_spatial.as_3d(a) for a in (x, out, index))
        launch = _plans.get_or_build(
            ("fwd", _key(x3, out3), window, geometry, device),
            lambda: _pool_plan(_max_pool_kernel, out3.size, (x3,), out3, window, geometry,
                               last))
        _forward_launch(launch, stream, x3, out3, index3)
    return out, index


def _along_lanes(grad, last, stream):
    """`grad`, or a copy laid out as the indices when the backward's lanes (along the channels
    in channels-last, else along W) would read it strided, each lane a cache line of its own
    (a contiguous gradient of a channels-last pool): the copy, a transposing tile, reads and
    writes it once, coalesced."""
    dim = 1 if last else grad.ndim - 1
    if grad.shape[dim] == 1 or grad.element_strides()[dim] in (0, 1):
        return grad
    dense = _spatial.empty(grad.shape, grad.dtype, last, grad.device, stream)
    return copy_(dense, grad)


@register("max_pool_bwd", "cuda")
def max_pool_bwd(grad, index, in_size, kernel_size, stride, padding, dilation):
    """The input gradient (N, C, *in_size) of max pooling, from the output gradient and the
    forward's indices, laid out as the indices are (as the forward's input was)."""
    device = grad.device
    out, stream, last = _spatial.result((*grad.shape[:2], *in_size), grad.dtype, index)
    if out.size:
        grad = _along_lanes(grad, last, stream)
        geometry = _geometry(stride, padding, dilation)
        window = _spatial.padded(kernel_size, 1)
        grad3, index3, out3 = (_spatial.as_3d(a) for a in (grad, index, out))
        launch = _plans.get_or_build(
            ("bwd", _key(grad3, index3, out3), window, geometry, device),
            lambda: _pool_plan(_max_pool_backward_kernel, out3.size, (grad3, index3), out3,
                               window, geometry, last))
        _backward_launch(launch, stream, grad3, index3, out3)
    return out


def _avg_launch(launch, stream, x, out, divisor, adjoint):
    """The call of _avg_pool_kernel on 3-D views `x` and `out` (the output gradient and the
    input gradient with `adjoint`)."""
    pooled, pools = (out, x) if adjoint else (x, out)
    launch(stream,
           # pointers
           x, out,
           # sizes
           out.size, *_fixed((x.shape[1], *pooled.shape[2:], *pools.shape[2:])),
           # magic numbers
           *_magics(out, launch.meta["CHANNELS_LAST"]),
           # divisor_override
           divisor,
           # strides
           *_fixed(x.element_strides()))


@register("avg_pool", "cuda")
def avg_pool(x, kernel_size, stride, padding, count_include_pad, divisor, size, adjoint):
    """Average pooling of (N, C, *S) `x` (1 to 3 spatial dims) into (N, C, *size), dividing by
    `divisor` when it is not 0; with `adjoint`, its input gradient (of spatial size `size`)
    from the output gradient `x`. The result is laid out as `x`."""
    device = x.device
    out, stream, last = _spatial.result((*x.shape[:2], *size), x.dtype, x)
    if out.size:
        geometry = (*_spatial.padded(stride, 1), *_spatial.padded(padding, 0))
        window = _spatial.padded(kernel_size, 1)
        x3, out3 = _spatial.as_3d(x), _spatial.as_3d(out)
        flags = dict(COUNT_PAD=bool(count_include_pad), OVERRIDE=bool(divisor),
                     ADJOINT=bool(adjoint))
        launch = _plans.get_or_build(
            ("avg", _key(x3, out3), window, geometry, tuple(flags.values()), device),
            lambda: _pool_plan(_avg_pool_kernel, out3.size, (x3,), out3, window, geometry,
                               last, **flags))
        _avg_launch(launch, stream, x3, out3, int(divisor), adjoint)
    return out
