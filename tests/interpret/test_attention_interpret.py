"""The fused attention kernels against torch's scaled_dot_product_attention, on the CPU,
through Triton's interpreter: the forward, and both backwards (the one-pass one, whose dQ sums
with float atomics, and the deterministic two-pass one), and SDPA's choice between them under
genesis.use_deterministic_algorithms.

Run explicitly: `TRITON_INTERPRET=1 python -m pytest tests/interpret/test_attention_interpret.py`.
Small tiles (forward 32 queries x 16 keys, backward blocks of 32 walked 16 at a time) make short
sequences walk several blocks, the causal diagonal and the tails. The reference is torch in
float32 (for half types: on the same half values, rounded once at the end, as the kernels
accumulate in float32, within the rounding of P and dS to the half type and float32's where dQ
and dK cancel: tests/attention_bounds.py).
"""

import math

import fake_cuda
import ml_dtypes
import numpy as np
import pytest
import torch
import triton_interpret as ti
from attention_bounds import cancellation_bounds, half_rounding_bounds
from helpers import TOLERANCES
from triton.runtime import interpreter

import genesis
from genesis import dispatch
from genesis.backends.cuda.kernels import attention, attention_dropout, attention_launch
from genesis.backends.cuda.launch import LaunchCache

BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = [np.dtype(np.float32), np.dtype(np.float16), BF16]
BACKWARDS = pytest.mark.parametrize("deterministic", [False, True],
                                    ids=["one_pass", "deterministic"])


def _small_tiles(dtype, head_dim, tf32):
    bd, _, _, _, precision = _tiles(dtype, head_dim, tf32)
    return bd, (32, 16, 4, 1), (32, 16, 4, 1), (32, 16, 4, 1), precision


_tiles = attention_launch.tiles


@pytest.fixture
def gpu(monkeypatch):
    if not ti.ENABLED:
        pytest.skip("set TRITON_INTERPRET=1 to run")
    monkeypatch.setattr(attention_launch, "tiles", _small_tiles)
    monkeypatch.setattr(attention_launch, "_plans", LaunchCache())
    monkeypatch.setattr(interpreter.InterpreterBuilder, "create_dot", ti.bf16_dot)
    with ti.device(attention_launch, attention_dropout):
        yield


def _operand(arr, layout):
    """A device array with `arr`'s (B, H, T, D) values: contiguous, or a (B, T, H, D) buffer
    seen through transposed strides."""
    if layout == "contiguous":
        return ti.to_device(arr)
    _, h, t, d = arr.shape
    dev = ti.to_device(np.ascontiguousarray(arr.transpose(0, 2, 1, 3)))
    return ti.view(dev, arr.shape, (t * h * d, d, h * d, 1))


def _reference(q, k, v, g, causal, scale, mask=None):
    """torch's output and input gradients in float32 (its math backend), rounded to the
    inputs' dtype; key and value may have fewer heads (enable_gqa)."""
    tq, tk, tv = (torch.from_numpy(a.astype(np.float32)).requires_grad_() for a in (q, k, v))
    t_mask = None if mask is None else torch.from_numpy(
        mask if mask.dtype == np.bool_ else mask.astype(np.float32))
    if causal and t_mask is not None:  # the math backend takes one of the two: merge them
        keep = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril()
        t_mask = t_mask & keep if t_mask.dtype == torch.bool else t_mask.masked_fill(
            ~keep, -math.inf)
    with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.MATH):
        out = torch.nn.functional.scaled_dot_product_attention(
            tq, tk, tv, attn_mask=t_mask, is_causal=causal and t_mask is None, scale=scale,
            enable_gqa=True)
    out.backward(torch.from_numpy(g.astype(np.float32)))
    return [t.detach().numpy().astype(q.dtype) for t in (out, tq.grad, tk.grad, tv.grad)]


def _check(actual, expected, bound=0.0):
    """Within the dtype's tolerance plus `bound`, the rounding of P and dS to a half type."""
    host = ti.to_host(actual).astype(np.float64)
    assert host.shape == expected.shape and ti.to_host(actual).dtype == expected.dtype
    rtol, atol = TOLERANCES[getattr(genesis, expected.dtype.name)]
    wanted = expected.astype(np.float64)
    excess = np.abs(host - wanted) - (atol + rtol * np.abs(wanted) + np.asarray(bound))
    assert excess.max(initial=0.0) <= 0, f"off by up to {excess.max():.3g} beyond the tolerance"


def _bounds(q, k, v, g, causal, scale, mask=None):
    """Rounding bounds of (out, dq, dk, dv): a half type's P and dS, float32's cancellation.
    Keys and values with fewer heads are repeated, their gradients' bounds summed back."""
    group = q.shape[-3] // k.shape[-3] if q.ndim >= 3 else 1
    wide = [a.astype(np.float32) for a in (q, np.repeat(k, group, -3), np.repeat(v, group, -3),
                                           g)]
    out, dq, dk, dv = half_rounding_bounds(*wide, causal, scale, q.dtype.name, mask)
    cancel_q, cancel_k = cancellation_bounds(*wide, causal, scale, mask)
    return [out.numpy(), (dq + cancel_q).numpy(), _group_sum((dk + cancel_k).numpy(), group),
            _group_sum(dv.numpy(), group)]


def _group_sum(a, group):
    """(..., H, T, D) -> (..., H / group, T, D): the sum over each run of `group` heads."""
    *lead, h, t, d = a.shape
    return a.reshape(*lead, h // group, group, t, d).sum(-3)


def _run(rng, shape_q, shape_k, dtype, causal, scale=None, layout="contiguous",
         deterministic=False, mask=None):
    """The forward and backward kernels against torch; `mask` (or None) a numpy attn_mask
    that broadcasts to the scores' shape, read in place through zero strides."""
    q, k, v = (rng.standard_normal(s).astype(dtype) for s in (shape_q, shape_k, shape_k))
    g = rng.standard_normal(shape_q).astype(dtype)
    scale = 1.0 / math.sqrt(shape_q[-1]) if scale is None else scale
    expected = _reference(q, k, v, g, causal, scale, mask)
    dq, dk, dv = (_operand(a, layout) for a in (q, k, v))
    d_mask = None if mask is None else _broadcast(mask, shape_q[:-1] + shape_k[-2:-1])
    o_bound, *bounds = _bounds(q, k, v, g, causal, scale, mask)
    out, lse, out_f = dispatch.kernel("flash_attention", "cuda")(dq, dk, dv, d_mask, None,
                                                                 causal, scale, True)
    _check(out, expected[0], o_bound)
    grads = dispatch.kernel("flash_attention_backward", "cuda")(
        ti.to_device(g), dq, dk, dv, out if out_f is None else out_f, d_mask, None, lse, causal,
        scale, deterministic)
    for actual, exp, bound in zip(grads, expected[1:], bounds):
        _check(actual, exp, bound)


def _broadcast(mask, shape):
    """A device view of `mask` at `shape`, its broadcast dims at stride 0."""
    full = np.broadcast_to(mask, shape)
    strides = tuple(st // mask.itemsize for st in full.strides)
    return ti.view(ti.to_device(np.ascontiguousarray(mask)), shape, strides)


@BACKWARDS
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("head", [16, 64])
@pytest.mark.parametrize("length", [1, 17, 64, 130])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_forward_and_gradients(gpu, rng, dtype, length, head, causal, deterministic):
    _run(rng, (1, 2, length, head), (1, 2, length, head), dtype, causal,
         deterministic=deterministic)


@BACKWARDS
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("lengths", [(17, 40), (40, 17)])
def test_queries_and_keys_of_different_lengths(gpu, rng, lengths, causal, deterministic):
    (lq, lk), dtype = lengths, np.dtype(np.float32)
    _run(rng, (2, 1, lq, 32), (2, 1, lk, 32), dtype, causal, deterministic=deterministic)


@BACKWARDS
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_strided_operands_and_scale(gpu, rng, dtype, deterministic):
    _run(rng, (2, 3, 33, 16), (2, 3, 33, 16), dtype, True, scale=0.3, layout="transposed",
         deterministic=deterministic)


@BACKWARDS
def test_three_dim_operands(gpu, rng, deterministic):
    """(planes, T, D) operands: one leading dim."""
    _run(rng, (3, 45, 32), (3, 45, 32), np.dtype(np.float32), True,
         deterministic=deterministic)


@BACKWARDS
def test_padded_head_dim(gpu, rng, deterministic):
    _run(rng, (1, 2, 20, 24), (1, 2, 20, 24), np.dtype(np.float16), True,
         deterministic=deterministic)


@pytest.mark.parametrize("deterministic", [False, True])
def test_each_backward_form_launches_its_kernels(gpu, rng, deterministic):
    """The one-pass backward (float32 at head dims up to 64) adds dQ up in a float32
    accumulator and scales it into dQ in a last launch; the deterministic one computes dQ in
    a kernel of its own."""
    x = ti.to_device(rng.standard_normal((1, 2, 40, 16)).astype(np.float32))
    out, lse, out_f = dispatch.kernel("flash_attention", "cuda")(x, x, x, None, None, True, 0.25,
                                                                 True)
    dispatch.kernel("flash_attention_backward", "cuda")(x, x, x, x, out, None, None, lse, True,
                                                        0.25, deterministic)
    (plan,) = [p for key, p in attention_launch._plans.items() if key[0] == "bwd"]
    assert plan.dq.fn is (attention._attn_dq_kernel if deterministic
                          else attention._attn_dq_cast_kernel)


@pytest.fixture
def fake_gpu(gpu, monkeypatch):
    """A stand-in "cuda" device (tests/fake_cuda.py, dispatch's tables copied first) whose
    flash attention kernels are the CUDA ones, interpreted; the backward records the
    `deterministic` it was given and its keys' heads."""
    fake_cuda.install_for_test(monkeypatch)
    flags, backward = [], ti.host_kernel(attention_launch.flash_attention_backward)

    def recorded(*args):
        flags.append((args[-1], args[2].shape[-3]))
        return backward(*args)
    dispatch._KERNELS[("flash_attention", "cuda")] = ti.host_kernel(
        attention_launch.flash_attention)
    dispatch._KERNELS[("flash_attention_backward", "cuda")] = recorded
    yield flags
    genesis.use_deterministic_algorithms(False)


@pytest.mark.parametrize("deterministic", [False, True])
@pytest.mark.parametrize("heads", [(4, 4), (4, 2)], ids=["mha", "gqa"])
def test_sdpa_backward_follows_use_deterministic_algorithms(fake_gpu, rng, heads,
                                                              deterministic):
    """SDPA's fused backward is the deterministic one exactly under
    use_deterministic_algorithms(True); either matches torch, grouped heads read in place."""
    genesis.use_deterministic_algorithms(deterministic)
    shapes = [(2, heads[0], 37, 32), (2, heads[1], 37, 32), (2, heads[1], 37, 32)]
    arrays = [rng.standard_normal(s).astype(np.float16) for s in shapes]
    g = rng.standard_normal(shapes[0]).astype(np.float16)
    mine = [genesis.tensor(a, device="cuda", requires_grad=True) for a in arrays]
    genesis.nn.functional.scaled_dot_product_attention(*mine, is_causal=True, enable_gqa=True) \
        .backward(genesis.tensor(g, device="cuda"))
    assert fake_gpu == [(deterministic, heads[1])]
    expected = _reference(*arrays, g, True, None)[1:]
    bounds = _bounds(*arrays, g, True, 1 / math.sqrt(32))[1:]
    for t, exp, bound in zip(mine, expected, bounds):
        _check(ti.to_device(t.grad.cpu().numpy()), exp, bound)


def test_grouped_double_backward(fake_gpu, rng):
    """create_graph through grouped heads: the first-order gradients come from genesis ops
    (keys and values repeated, their gradients summed back), differentiable again."""
    shapes = [(1, 4, 20, 16), (1, 2, 20, 16), (1, 2, 20, 16)]
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    mine = [genesis.tensor(a, device="cuda", requires_grad=True) for a in arrays]
    theirs = [torch.from_numpy(a).double().requires_grad_() for a in arrays]
    out = genesis.nn.functional.scaled_dot_product_attention(*mine, is_causal=True,
                                                             enable_gqa=True)
    tq, tk, tv = theirs[0], *(t.repeat_interleave(2, 1) for t in theirs[1:])
    mask = torch.ones(20, 20, dtype=torch.bool).tril()
    t_out = torch.softmax((tq @ tk.mT / 4.0).masked_fill(~mask, -math.inf), -1) @ tv
    for lib, o, leaves in ((genesis, out, mine), (torch, t_out, theirs)):
        grads = lib.autograd.grad(o.sum(), leaves, create_graph=True)
        sum((g * g).sum() for g in grads).backward()
    assert fake_gpu == []
    for a, b in zip(mine, theirs):
        np.testing.assert_allclose(a.grad.cpu().numpy(), b.grad.numpy(), rtol=1e-4, atol=1e-5)


@BACKWARDS
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_grouped_query_heads(gpu, rng, dtype, causal, deterministic):
    """Six query heads over two key/value heads (query head h reads key/value head h // 3),
    without repeating the keys and values: dK and dV summed over each key/value head's three
    query heads."""
    _run(rng, (2, 6, 37, 32), (2, 2, 37, 32), dtype, causal, deterministic=deterministic)


def _mask(rng, kind, shape, dtype):
    """A bool (True: may attend) or additive attn_mask of `shape` in which about a quarter of
    the positions are masked and the first row is masked everywhere: by False or -inf, so
    that row's output and gradients are zeros."""
    hidden = rng.random(shape) < 0.25
    hidden[..., 0, :] = True
    if kind == "bool":
        return ~hidden
    values = (rng.standard_normal(shape) * 2).astype(dtype)
    return np.where(hidden, np.array(-np.inf, dtype), values)


MASK_SHAPES = {"key_padding": (2, 1, 1, 45), "scores": (37, 45), "per_head": (2, 3, 37, 45)}


@BACKWARDS
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("broadcast", list(MASK_SHAPES))
@pytest.mark.parametrize("kind", ["bool", "additive"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_attn_masks(gpu, rng, dtype, kind, broadcast, causal, deterministic):
    """Bool and additive masks of the shapes scripts pass (a key-padding mask, one (L, S)
    mask for every head, one per head), read through zero strides where they broadcast,
    beside is_causal or alone; rows masked everywhere give zeros, as torch's math backend."""
    mask = _mask(rng, kind, MASK_SHAPES[broadcast], dtype)
    _run(rng, (2, 3, 37, 32), (2, 3, 45, 32), dtype, causal, deterministic=deterministic,
         mask=mask)


@BACKWARDS
def test_mask_read_across_with_grouped_heads(gpu, rng, deterministic):
    """A transposed (keys stride L) additive mask under grouped-query heads."""
    mask = np.ascontiguousarray(_mask(rng, "additive", (45, 37), np.float32).T)
    q, k, v, g = (rng.standard_normal(s).astype(np.float32)
                  for s in ((1, 4, 37, 16), (1, 2, 45, 16), (1, 2, 45, 16), (1, 4, 37, 16)))
    expected = _reference(q, k, v, g, False, 0.25, mask)
    d_mask = ti.view(ti.to_device(mask.T.copy()), (1, 4, 37, 45), (0, 0, 1, 37))
    out, lse, out_f = dispatch.kernel("flash_attention", "cuda")(
        *map(ti.to_device, (q, k, v)), d_mask, None, False, 0.25, True)
    _check(out, expected[0])
    grads = dispatch.kernel("flash_attention_backward", "cuda")(
        ti.to_device(g), *map(ti.to_device, (q, k, v)), out, d_mask, None, lse, False, 0.25,
        deterministic)
    for actual, exp in zip(grads, expected[1:]):
        _check(actual, exp)


@pytest.mark.parametrize("dtype", [np.dtype(np.float32), BF16], ids=str)
def test_rows_masked_by_the_dtypes_min(gpu, rng, dtype):
    """Hugging Face masks with the dtype's most negative finite value: a row masked so
    everywhere gets uniform weights (the mean of the values), as in torch's float32 math,
    not zeros; where its output gradient is zero, as a padding row's is in training, its
    gradients are exact. (float16's min, -65504, leaves the scores' differences in float32:
    such a row is the softmax of its scores, within float32's rounding at 65504 log2(e).)"""
    lowest = ml_dtypes.finfo(dtype).min
    mask = np.where(rng.random((20, 24)) < 0.3, lowest, 0.0).astype(dtype)
    mask[:5] = lowest
    q, k, v = (rng.standard_normal(s).astype(dtype) for s in ((1, 2, 20, 16), (1, 2, 24, 16),
                                                              (1, 2, 24, 16)))
    g = rng.standard_normal(q.shape).astype(dtype)
    g[..., :5, :] = 0
    expected = _reference(q, k, v, g, False, 0.25, mask)
    uniform = np.broadcast_to(v.astype(np.float32).mean(-2, keepdims=True), (1, 2, 5, 16))
    np.testing.assert_allclose(expected[0][..., :5, :].astype(np.float32), uniform,
                               rtol=1e-2, atol=1e-2)
    dq, dk, dv = map(ti.to_device, (q, k, v))
    o_bound, *bounds = _bounds(q, k, v, g, False, 0.25, mask)
    d_mask = _broadcast(mask, (1, 2, 20, 24))
    out, lse, out_f = dispatch.kernel("flash_attention", "cuda")(dq, dk, dv, d_mask, None,
                                                                 False, 0.25, True)
    _check(out, expected[0], o_bound)
    grads = dispatch.kernel("flash_attention_backward", "cuda")(
        ti.to_device(g), dq, dk, dv, out if out_f is None else out_f, d_mask, None, lse, False,
        0.25, False)
    for actual, exp, bound in zip(grads, expected[1:], bounds):
        _check(actual, exp, bound)


def _dropout_reference(q, k, v, g, causal, scale, dropout):
    """torch's output and gradients in float32 with the probabilities dropped by the flags
    the host's Philox draws for `dropout` (the CPU kernel of attention_dropout_mask)."""
    p = dropout[0]
    keep = torch.from_numpy(dispatch.kernel("attention_dropout_mask", "cpu")(
        q.shape[:-1] + k.shape[-2:-1], *dropout, None))
    tq, tk, tv = (torch.from_numpy(a.astype(np.float32)).requires_grad_() for a in (q, k, v))
    scores = tq @ tk.mT * scale
    if causal:
        scores = scores.masked_fill(~torch.ones(scores.shape[-2:], dtype=torch.bool).tril(),
                                    -math.inf)
    out = (scores.softmax(-1) * keep / (1 - p)) @ tv
    out.backward(torch.from_numpy(g.astype(np.float32)))
    return [t.detach().numpy().astype(q.dtype) for t in (out, tq.grad, tk.grad, tv.grad)]


@BACKWARDS
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_dropout(gpu, rng, dtype, causal, deterministic):
    """The kernels drop the probabilities the host's Philox flags name, the same ones in the
    forward and in either backward; the half types within their rounding bounds scaled by
    1 / (1 - p), the largest factor a kept probability takes."""
    shape_q, shape_k = (2, 3, 37, 32), (2, 3, 45, 32)
    q, k, v = (rng.standard_normal(s).astype(dtype) for s in (shape_q, shape_k, shape_k))
    g = rng.standard_normal(shape_q).astype(dtype)
    dropout = (0.25, int(rng.integers(1 << 62)), 4 * int(rng.integers(1000)))
    expected = _dropout_reference(q, k, v, g, causal, 0.2, dropout)
    bounds = [b / 0.75 for b in _bounds(q, k, v, g, causal, 0.2)]
    dq, dk, dv = map(ti.to_device, (q, k, v))
    out, lse, out_f = dispatch.kernel("flash_attention", "cuda")(dq, dk, dv, None, dropout,
                                                                 causal, 0.2, True)
    _check(out, expected[0], bounds[0])
    grads = dispatch.kernel("flash_attention_backward", "cuda")(
        ti.to_device(g), dq, dk, dv, out if out_f is None else out_f, None, dropout, lse, causal,
        0.2, deterministic)
    for actual, exp, bound in zip(grads, expected[1:], bounds[1:]):
        _check(actual, exp, bound)


def test_dropout_mask_kernel_draws_the_hosts_flags(gpu, rng):
    """attention_dropout_mask on the device and on the host, bit for bit: with the
    generator's seed, and in a CUDA graph with the seed and base offset read from memory."""
    shape, seed = (2, 3, 37, 45), int(rng.integers(1 << 63))
    expected = dispatch.kernel("attention_dropout_mask", "cpu")(shape, 0.3, seed, 100, None)
    got = dispatch.kernel("attention_dropout_mask", "cuda")(shape, 0.3, seed, 100, 0)
    np.testing.assert_array_equal(ti.to_host(got), expected)
    state = ti.to_device(np.array([seed - (1 << 64) if seed >= 1 << 63 else seed, 60],
                                  dtype=np.int64))
    in_graph = dispatch.kernel("attention_dropout_mask", "cuda")(shape, 0.3, state, 40, 0)
    np.testing.assert_array_equal(ti.to_host(in_graph), expected)


@BACKWARDS
def test_rows_of_very_negative_scores(gpu, rng, deterministic):
    """A query row whose every score is far below zero (its logsumexp under -88): the keys
    past the last block's end must add nothing to dQ, not exp(0 - lse) = inf times zero.
    Against torch in float64, within float32's rounding at the scores' magnitude (about 120
    here: a few roundings of 2^-24 of it in each probability, which the dtype's tolerance
    does not cover)."""
    q = rng.standard_normal((1, 2, 37, 16)).astype(np.float32)
    k = (rng.standard_normal((1, 2, 45, 16)) + 3.0).astype(np.float32)
    v = rng.standard_normal((1, 2, 45, 16)).astype(np.float32)
    q[:, :, 0] = -10.0
    g = rng.standard_normal(q.shape).astype(np.float32)
    tq, tk, tv = (torch.from_numpy(a).double().requires_grad_() for a in (q, k, v))
    expected = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, scale=0.25)
    expected.backward(torch.from_numpy(g).double())
    dq, dk, dv = map(ti.to_device, (q, k, v))
    out, lse, _ = dispatch.kernel("flash_attention", "cuda")(dq, dk, dv, None, None, False, 0.25,
                                                             True)
    assert ti.to_host(lse)[0, 0, 0] < -88
    grads = dispatch.kernel("flash_attention_backward", "cuda")(
        ti.to_device(g), dq, dk, dv, out, None, None, lse, False, 0.25, deterministic)
    largest = float((tq.detach() @ tk.detach().mT * 0.25).abs().max())
    rounding = 8 * 2.0 ** -24 * largest
    for actual, exp in zip((out,) + tuple(grads), (expected, tq.grad, tk.grad, tv.grad)):
        got = ti.to_host(actual)
        assert np.isfinite(got).all()
        np.testing.assert_allclose(got, exp.detach().numpy(), rtol=rounding, atol=rounding)
