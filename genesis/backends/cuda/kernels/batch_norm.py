"""Training-mode batch norm, fused: per-channel statistics in one pass over the input, the
normalization in a second, and the same two passes for the backward.

Registered as "batch_norm_train_fwd" and "batch_norm_train_bwd" (nn/functional/batch_stats.py
takes them where the backend has them). The input (N, C, *spatial) is seen as (N, C, S), S the
spatial dims merged: channels-last (channel stride 1, S of stride C: a tile's channels are one
contiguous run) or NCHW (S of stride 1); other views are copied first. Each channel has
M = N * S values.

Forward:
- `_stats_kernel`, over (channel blocks, splits of the M positions): each program walks its
  range in (BM, BC) tiles; a tile's mean and squared deviations are computed two-pass in
  registers and merged into the running (mean, M2) by Chan's formula, so no E[x^2] - E[x]^2
  cancellation. Its (count, mean, M2) go to its row of a partial buffer.
- `_finish_stats_kernel`: merges each channel's partials, 32 splits at a time (their weighted
  mean, then their deviations from it; the groups by Chan's formula, in order), into the mean,
  the biased variance and rstd = 1 / sqrt(var + eps), and moves the running estimates (when
  given) towards the mean and the unbiased variance, in place: no launches of their own.
- `_normalize_kernel`: y = (x - mean) * rstd * w + b, rounded once to x's dtype.

Backward (dx = (rstd w / M) * (M dy - sum(dy) - xhat * sum(dy * xhat)), batch_stats' stable
form): `_grad_sums_kernel` accumulates both sums per split, `_finish_sums_kernel` adds the
splits in order and writes dw = sum(dy * xhat) and db = sum(dy) in the parameters' dtypes,
`_grad_input_kernel` writes dx.

Accumulation: float64 for float32 and float64 inputs, float32 for half types (batch_stats'
rule: float32 gradients within about 1e-7 of PyTorch's). The splits are fixed by the shape and
summed in order: the same bits on every run. Splits: enough to give about two programs per SM
(SPLIT_PROGRAMS), each range a whole number of BM-row tiles.
"""

import numpy as np
import triton
import triton.language as tl

from ....dispatch import register
from ..array_ops import as_strided, contiguous
from ..launch import Launch, LaunchCache
from ..runtime.array import CUDAArray, contiguous_byte_strides
from ..runtime.device import activate
from ..runtime.stream import current_stream_handle
from ._strided_indexing import cdiv, coalesce, placeholder, stride_arg
from .norm import _load_vector

# Programs of a statistics pass: about two per SM of an H100/H200, whatever the channel count.
SPLIT_PROGRAMS = 264
# Tiles: BM positions x BC channels (4096 elements; 32 registers a thread at 4 warps).
BM, BC = 64, 64
# The finishing kernels: 32 splits x 64 channels a step (a split's states merged as a group).
_FINISH_SPLITS, _FINISH_BLOCK = 32, 64
# The finishing kernel's float arguments, passed in float64 and set per call.
_SCALARS = ("eps", "momentum", "unbiased")


@triton.jit
def _tile_offsets(m, c, S, sn, sc, ss):
    """Offsets of positions m (over N * S) and channels c in an (N, C, S) view."""
    return ((m // S) * sn + (m % S) * ss)[:, None] + (c * sc)[None, :]


@triton.jit
def _load_tile(ptr, m, c, S, sn, sc, ss, mask, ACC: tl.constexpr):
    """The (len(m), len(c)) tile of an (N, C, S) view at positions m and channels c, in ACC,
    zero where masked."""
    return tl.load(ptr + _tile_offsets(m, c, S, sn, sc, ss), mask=mask, other=0.0).to(ACC)


@triton.jit
def _tile_indices(M, C, BM: tl.constexpr, BC: tl.constexpr):
    """(positions, channels, the channels' mask, the tile's mask) of the elementwise kernels'
    (BM, BC) tile."""
    m = tl.program_id(0) * BM + tl.arange(0, BM)
    c = tl.program_id(1) * BC + tl.arange(0, BC)
    c_mask = c < C
    return m, c, c_mask, (m < M)[:, None] & c_mask[None, :]


@triton.jit
def _merge(mean_a, m2_a, n_a, mean_b, m2_b, n_b):
    """Chan's merge of two (mean, sum of squared deviations, count) states."""
    n = n_a + n_b
    w_b = n_b / tl.where(n == 0, 1.0, n)
    delta = mean_b - mean_a
    return mean_a + delta * w_b, m2_a + m2_b + delta * delta * n_a * w_b, n


@triton.jit
def _stats_kernel(
        # pointers: input (N, C, S), float partials (splits, 3, C): count, mean, M2
        x_ptr, part_ptr,
        # sizes: positions per channel, channels, positions per image, a split's positions
        M, C, S, split_len,
        # strides, in elements
        x_sn, x_sc, x_ss,
        # meta-parameters
        ACC: tl.constexpr, BM: tl.constexpr, BC: tl.constexpr):
    """(count, mean, M2) of each of BC channels over one split of the positions."""
    c = tl.program_id(0) * BC + tl.arange(0, BC)
    c_mask = c < C
    start = tl.program_id(1) * split_len
    end = tl.minimum(start + split_len, M)
    mean = tl.zeros((BC,), ACC)
    m2 = tl.zeros((BC,), ACC)
    count = tl.zeros((BC,), ACC)
    for m0 in range(start, end, BM):
        m = m0 + tl.arange(0, BM)
        mask = (m < end)[:, None] & c_mask[None, :]
        x = _load_tile(x_ptr, m, c, S, x_sn, x_sc, x_ss, mask, ACC)
        n_tile = tl.minimum(end - m0, BM).to(ACC)
        tile_mean = tl.sum(x, 0) / n_tile
        deviation = tl.where(mask, x - tile_mean[None, :], 0.0)
        mean, m2, count = _merge(mean, m2, count, tile_mean, tl.sum(deviation * deviation, 0),
                                 n_tile)
    part = part_ptr + tl.program_id(1) * 3 * C + c
    tl.store(part, count, mask=c_mask)
    tl.store(part + C, mean, mask=c_mask)
    tl.store(part + 2 * C, m2, mask=c_mask)


@triton.jit
def _finish_stats_kernel(
        # pointers: partials (splits, 3, C); per-channel mean, biased variance, rstd; the
        # running mean and variance to update, or None
        part_ptr, mean_ptr, var_ptr, rstd_ptr, running_mean_ptr, running_var_ptr,
        # sizes; the variance's epsilon, the running estimates' momentum, M / (M - 1)
        C, splits, eps, momentum, unbiased,
        # meta-parameters
        ACC: tl.constexpr, BS: tl.constexpr, BLOCK: tl.constexpr):
    """Each channel's statistics: its splits' states merged BS at a time (their weighted mean,
    then their deviations from it), the groups by Chan's formula in order; the running
    estimates move towards the mean and the unbiased variance by `momentum`."""
    c = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = c < C
    mean = tl.zeros((BLOCK,), ACC)
    m2 = tl.zeros((BLOCK,), ACC)
    count = tl.zeros((BLOCK,), ACC)
    for s0 in range(0, splits, BS):
        split = s0 + tl.arange(0, BS)
        tile_mask = (split < splits)[:, None] & mask[None, :]
        part = part_ptr + split[:, None] * 3 * C + c[None, :]
        n = tl.load(part, mask=tile_mask, other=0.0)
        means = tl.load(part + C, mask=tile_mask, other=0.0)
        n_group = tl.sum(n, 0)
        mean_group = tl.sum(n * means, 0) / tl.where(n_group == 0, 1.0, n_group)
        deviation = means - mean_group[None, :]
        m2_group = tl.sum(tl.load(part + 2 * C, mask=tile_mask, other=0.0)
                          + n * deviation * deviation, 0)
        mean, m2, count = _merge(mean, m2, count, mean_group, m2_group, n_group)
    var = m2 / count
    tl.store(mean_ptr + c, mean, mask=mask)
    tl.store(var_ptr + c, var, mask=mask)
    tl.store(rstd_ptr + c, 1.0 / tl.sqrt(var + eps), mask=mask)
    if running_mean_ptr is not None:
        _move_towards(running_mean_ptr, c, mask, mean, momentum, ACC)
    if running_var_ptr is not None:
        _move_towards(running_var_ptr, c, mask, var * unbiased, momentum, ACC)


@triton.jit
def _move_towards(running_ptr, c, mask, value, momentum, ACC: tl.constexpr):
    """running <- (1 - momentum) * running + momentum * value, rounded once."""
    running = tl.load(running_ptr + c, mask=mask, other=0.0).to(ACC)
    tl.store(running_ptr + c, (running * (1.0 - momentum) + value * momentum).to(
        running_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _normalize_kernel(
        # pointers: input, output, statistics, weight and bias or None
        x_ptr, y_ptr, mean_ptr, rstd_ptr, w_ptr, b_ptr,
        # sizes
        M, C, S,
        # strides, in elements
        x_sn, x_sc, x_ss, y_sn, y_sc, y_ss,
        # meta-parameters
        ACC: tl.constexpr, BM: tl.constexpr, BC: tl.constexpr):
    """y = (x - mean) * rstd * w + b over one (BM, BC) tile."""
    m, c, c_mask, mask = _tile_indices(M, C, BM, BC)
    x = _load_tile(x_ptr, m, c, S, x_sn, x_sc, x_ss, mask, ACC)
    scale = _load_vector(rstd_ptr, c, c_mask, ACC) * _load_vector(w_ptr, c, c_mask, ACC)
    y = (x - _load_vector(mean_ptr, c, c_mask, ACC)) * scale
    if b_ptr is not None:
        y += _load_vector(b_ptr, c, c_mask, ACC)
    tl.store(y_ptr + _tile_offsets(m, c, S, y_sn, y_sc, y_ss), y.to(y_ptr.dtype.element_ty),
             mask=mask)


@triton.jit
def _grad_sums_kernel(
        # pointers: output gradient and input (N, C, S), statistics, float partials
        # (splits, 2, C): sum(dy), sum(dy * xhat)
        dy_ptr, x_ptr, mean_ptr, rstd_ptr, part_ptr,
        # sizes
        M, C, S, split_len,
        # strides, in elements
        dy_sn, dy_sc, dy_ss, x_sn, x_sc, x_ss,
        # meta-parameters
        ACC: tl.constexpr, BM: tl.constexpr, BC: tl.constexpr):
    """sum(dy) and sum(dy * xhat) of each of BC channels over one split of the positions."""
    c = tl.program_id(0) * BC + tl.arange(0, BC)
    c_mask = c < C
    mean = _load_vector(mean_ptr, c, c_mask, ACC)
    rstd = _load_vector(rstd_ptr, c, c_mask, ACC)
    start = tl.program_id(1) * split_len
    end = tl.minimum(start + split_len, M)
    sum_dy = tl.zeros((BC,), ACC)
    sum_dy_xhat = tl.zeros((BC,), ACC)
    for m0 in range(start, end, BM):
        m = m0 + tl.arange(0, BM)
        mask = (m < end)[:, None] & c_mask[None, :]
        dy = _load_tile(dy_ptr, m, c, S, dy_sn, dy_sc, dy_ss, mask, ACC)
        x = _load_tile(x_ptr, m, c, S, x_sn, x_sc, x_ss, mask, ACC)
        sum_dy += tl.sum(dy, 0)
        sum_dy_xhat += tl.sum(dy * ((x - mean) * rstd), 0)
    part = part_ptr + tl.program_id(1) * 2 * C + c
    tl.store(part, sum_dy, mask=c_mask)
    tl.store(part + C, sum_dy_xhat, mask=c_mask)


@triton.jit
def _finish_sums_kernel(
        # pointers: partials (splits, 2, C); per-channel sum(dy), sum(dy * xhat); the weight and
        # bias gradients in their dtypes, or None
        part_ptr, sum_dy_ptr, sum_dy_xhat_ptr, dw_ptr, db_ptr,
        # sizes
        C, splits,
        # meta-parameters
        ACC: tl.constexpr, BS: tl.constexpr, BLOCK: tl.constexpr):
    """Each channel's two sums: its splits' partials added BS at a time, the groups in order;
    dw = sum(dy * xhat) and db = sum(dy) rounded once to the parameters' dtypes."""
    c = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = c < C
    sum_dy = tl.zeros((BLOCK,), ACC)
    sum_dy_xhat = tl.zeros((BLOCK,), ACC)
    for s0 in range(0, splits, BS):
        split = s0 + tl.arange(0, BS)
        tile_mask = (split < splits)[:, None] & mask[None, :]
        part = part_ptr + split[:, None] * 2 * C + c[None, :]
        sum_dy += tl.sum(tl.load(part, mask=tile_mask, other=0.0), 0)
        sum_dy_xhat += tl.sum(tl.load(part + C, mask=tile_mask, other=0.0), 0)
    tl.store(sum_dy_ptr + c, sum_dy, mask=mask)
    tl.store(sum_dy_xhat_ptr + c, sum_dy_xhat, mask=mask)
    if dw_ptr is not None:
        tl.store(dw_ptr + c, sum_dy_xhat.to(dw_ptr.dtype.element_ty), mask=mask)
    if db_ptr is not None:
        tl.store(db_ptr + c, sum_dy.to(db_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _grad_input_kernel(
        # pointers: output gradient, input, input gradient, statistics, weight or None, the
        # two per-channel sums
        dy_ptr, x_ptr, dx_ptr, mean_ptr, rstd_ptr, w_ptr, sum_dy_ptr, sum_dy_xhat_ptr,
        # sizes
        M, C, S,
        # strides, in elements
        dy_sn, dy_sc, dy_ss, x_sn, x_sc, x_ss, dx_sn, dx_sc, dx_ss,
        # meta-parameters
        ACC: tl.constexpr, BM: tl.constexpr, BC: tl.constexpr):
    """dx = (rstd w / M) * (M dy - sum(dy) - xhat * sum(dy * xhat)) over one (BM, BC) tile."""
    m, c, c_mask, mask = _tile_indices(M, C, BM, BC)
    dy = _load_tile(dy_ptr, m, c, S, dy_sn, dy_sc, dy_ss, mask, ACC)
    x = _load_tile(x_ptr, m, c, S, x_sn, x_sc, x_ss, mask, ACC)
    rstd = _load_vector(rstd_ptr, c, c_mask, ACC)
    xhat = (x - _load_vector(mean_ptr, c, c_mask, ACC)) * rstd
    count = M.to(ACC)
    scale = rstd * _load_vector(w_ptr, c, c_mask, ACC) / count
    dx = scale * (count * dy - _load_vector(sum_dy_ptr, c, c_mask, ACC)
                  - xhat * _load_vector(sum_dy_xhat_ptr, c, c_mask, ACC))
    tl.store(dx_ptr + _tile_offsets(m, c, S, dx_sn, dx_sc, dx_ss),
             dx.to(dx_ptr.dtype.element_ty), mask=mask)


def _acc_dtype(dtype):
    """(Triton type, numpy dtype) of the accumulation: float64 for float32 and float64."""
    if dtype in (np.float32, np.float64):
        return tl.float64, np.dtype(np.float64)
    return tl.float32, np.dtype(np.float32)


def _ncs(arr):
    """(arr, its (N, C, S) strides): `arr` itself when its spatial dims merge into one strided
    dim S, else a contiguous copy."""
    if len(arr.shape) == 2:
        return arr, arr.element_strides() + (1,)
    sizes, (strides,) = coalesce(arr.shape[2:], arr.element_strides()[2:])
    if len(sizes) > 1:
        arr = contiguous(arr)
        sizes, (strides,) = coalesce(arr.shape[2:], arr.element_strides()[2:])
    return arr, arr.element_strides()[:2] + (strides[0],)


def _empty(shape, dtype, device, stream, target):
    """An empty device array, or with a compile `target` a placeholder of it."""
    if target is not None:
        return placeholder(shape, dtype)
    return CUDAArray.empty(shape, dtype, device, stream)


def _empty_like(x, n, c, s, stream, target):
    """(an empty array shaped as x, its (N, C, S) strides): channels-last when x's channels
    are its unit-stride dim, else contiguous."""
    if c > 1 and x.element_strides()[1] == 1 and len(x.shape) > 2:
        flat = _empty((n, s, c), x.dtype, x.device, stream, target)
        full = (s * c, 1) + tuple(c * st for st in contiguous_byte_strides(x.shape[2:], 1))
        return as_strided(flat, x.shape, full, 0), (s * c, 1, c)
    return _empty(x.shape, x.dtype, x.device, stream, target), (c * s, s, 1)


def _strides(ncs_strides):
    return tuple(stride_arg(st, (1,)) for st in ncs_strides)


def _splits(c, m):
    """(splits, positions per split) of the M positions of each of C channels."""
    splits = max(1, min(cdiv(SPLIT_PROGRAMS, cdiv(c, BC)), cdiv(m, BM)))
    split_len = cdiv(cdiv(m, splits), BM) * BM
    return cdiv(m, split_len), split_len


def _geometry(x):
    """(N, C, M positions per channel, S per image, the accumulation's Triton type and numpy
    dtype, splits, positions per split) of x's (N, C, S) view."""
    n, c = x.shape[:2]
    m = x.size // max(c, 1)
    return (n, c, m, m // max(n, 1), *_acc_dtype(x.dtype), *_splits(c, m))


_plans = LaunchCache()


def _build(backward, m, c, acc, device, target=None):
    """The three launches of the forward (or backward) for M positions of C channels."""
    splits, _ = _splits(c, m)
    meta = dict(ACC=acc, BM=BM, BC=BC)
    finish_meta = dict(ACC=acc, BS=_FINISH_SPLITS, BLOCK=_FINISH_BLOCK)
    reduce_grid, finish_grid = (cdiv(c, BC), splits), (cdiv(c, _FINISH_BLOCK),)
    tile_grid = (cdiv(m, BM), cdiv(c, BC))
    common = dict(device=device, target=target)
    if backward:
        return (Launch(_grad_sums_kernel, reduce_grid, meta, 4, int_type="i64", **common),
                Launch(_finish_sums_kernel, finish_grid, finish_meta, 4, **common),
                Launch(_grad_input_kernel, tile_grid, meta, 4, int_type="i64", **common))
    return (Launch(_stats_kernel, reduce_grid, meta, 4, int_type="i64", **common),
            Launch(_finish_stats_kernel, finish_grid, finish_meta, 4,
                   types=dict.fromkeys(_SCALARS, "fp64"), per_call=_SCALARS, **common),
            Launch(_normalize_kernel, tile_grid, meta, 4, int_type="i64", **common))


def _launches(backward, arrays, m, c, acc, device, target):
    if target is not None:
        return _build(backward, m, c, acc, device, target)
    key = (backward, m, c, acc, device) + tuple(
        None if a is None else (a.dtype, a.ptr % 16 == 0, a.element_strides()) for a in arrays)
    return _plans.get_or_build(key, lambda: _build(backward, m, c, acc, device))


def _vector(arr):
    """A weight or bias as the kernels index it: dense."""
    return arr if arr is None or arr.is_contiguous() else contiguous(arr)


def forward(x, weight, bias, eps, running_mean=None, running_var=None, momentum=0.0,
            target=None):
    """(y, mean, biased variance, rstd): y channels-last when x is, the statistics per channel
    in float64 for float32 and float64 input, float32 for half types; `running_mean` and
    `running_var` (contiguous, or None) move towards the mean and the unbiased variance by
    `momentum`. With a `target`, only compiles (x a placeholder)."""
    device = x.device
    stream = 0 if target is not None else _stream(device)
    x, x_strides = _ncs(x)
    weight, bias = _vector(weight), _vector(bias)
    n, c, m, s, acc, acc_np, splits, split_len = _geometry(x)
    part = _empty((splits, 3, c), acc_np, device, stream, target)
    mean, var, rstd = (_empty((c,), acc_np, device, stream, target) for _ in range(3))
    y, y_strides = _empty_like(x, n, c, s, stream, target)
    stats, finish, normalize = _launches(False, (x, weight, bias, running_mean, running_var),
                                         m, c, acc, device, target)
    stats(stream, x, part, m, c, s, split_len, *_strides(x_strides))
    finish(stream, part, mean, var, rstd, running_mean, running_var, c, splits, float(eps),
           float(momentum), m / max(m - 1, 1))
    normalize(stream, x, y, mean, rstd, weight, bias, m, c, s, *_strides(x_strides),
              *_strides(y_strides))
    return y, mean, var, rstd


def backward(dy, x, weight, mean, rstd, dw_dtype=None, db_dtype=None, target=None):
    """(dx, dw, db) from the forward's statistics: dx channels-last when x is, dw = sum(dy *
    xhat) and db = sum(dy) per channel in `dw_dtype` and `db_dtype` (None: not computed). With
    a `target`, only compiles."""
    device = x.device
    stream = 0 if target is not None else _stream(device)
    x, x_strides = _ncs(x)
    dy, dy_strides = _ncs(dy)
    weight = _vector(weight)
    n, c, m, s, acc, acc_np, splits, split_len = _geometry(x)
    part = _empty((splits, 2, c), acc_np, device, stream, target)
    sum_dy, sum_dy_xhat = (_empty((c,), acc_np, device, stream, target) for _ in range(2))
    dw, db = (None if dtype is None else _empty((c,), dtype, device, stream, target)
              for dtype in (dw_dtype, db_dtype))
    dx, dx_strides = _empty_like(x, n, c, s, stream, target)
    sums, finish, grad_input = _launches(True, (dy, x, weight, dw, db), m, c, acc, device,
                                         target)
    sums(stream, dy, x, mean, rstd, part, m, c, s, split_len, *_strides(dy_strides),
         *_strides(x_strides))
    finish(stream, part, sum_dy, sum_dy_xhat, dw, db, c, splits)
    grad_input(stream, dy, x, dx, mean, rstd, weight, sum_dy, sum_dy_xhat, m, c, s,
               *_strides(dy_strides), *_strides(x_strides), *_strides(dx_strides))
    return dx, dw, db


def _stream(device):
    activate(device)
    return current_stream_handle(device)


@register("batch_norm_train_fwd", "cuda")
def batch_norm_train_fwd(x, weight, bias, eps, running_mean, running_var, momentum):
    """The training-mode forward: (y, mean, biased variance, rstd), the running estimates
    updated in place; see `forward`."""
    return forward(x, weight, bias, eps, running_mean, running_var, momentum)


@register("batch_norm_train_bwd", "cuda")
def batch_norm_train_bwd(dy, x, weight, mean, rstd, dw_dtype, db_dtype):
    """The training-mode backward: (dx, dw or None, db or None); see `backward`."""
    return backward(dy, x, weight, mean, rstd, dw_dtype, db_dtype)
