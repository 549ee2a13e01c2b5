"""genesis.nn.attention.flex_attention against torch's on the CPU: outputs and log-sum-exp of
score_mods and mask_mods (one definition serving both libraries), GQA, batch broadcast, fully
masked rows, dtypes, the checks and their errors, and BlockMask's construction, slicing and
printing. torch refuses backward and max scores on the CPU, so gradients and max scores are
checked against torch's eager math itself (torch._higher_order_ops.flex_attention.
math_attention, which its flex_attention runs) with autograd in float64."""

import math
import re
import warnings

import ml_dtypes
import numpy as np
import pytest
import torch
from helpers import assert_close, from_torch, make_pair, to_torch, ulp_distance
from torch._higher_order_ops.flex_attention import math_attention
from torch.nn.attention import flex_attention as T

import genesis
from genesis.nn.attention import _block_mask
from genesis.nn.attention import flex_attention as G

B, HQ, HKV, L, S, E = 2, 4, 2, 13, 19, 8
LIBS = {"genesis": (genesis, G), "torch": (torch, T)}


@pytest.fixture(autouse=True)
def _quiet_torch():
    """torch's eager flex_attention warns once that it is not compiled."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="flex_attention called without torch.compile")
        yield


def _captured(rng, dtype=genesis.float32, grad=False):
    """Tensors mods capture, as (genesis, torch) pairs: a relative-position table per head, a
    per-position bias per head, ALiBi slopes and document ids of the queries and keys."""
    return {
        "table": make_pair((HQ, L + S), dtype, requires_grad=grad, rng=rng),
        "bias": make_pair((B, HQ, L, S), dtype, requires_grad=grad, rng=rng),
        "slopes": make_pair((HQ,), dtype, low=0.1, high=1.0, requires_grad=grad, rng=rng),
        "q_doc": _pair(np.sort(rng.integers(0, 3, L))),
        "kv_doc": _pair(np.sort(rng.integers(0, 3, S))),
    }


def _pair(array):
    g = genesis.tensor(array)
    return g, to_torch(g)


def _score_mod(name, lib, cap):
    """Score mod `name` written once with `lib`'s ops over its captured tensors `cap`."""
    if name == "identity":
        return None
    mods = {
        "relative": lambda s, b, h, q, k: s + (q - k) * 0.25,
        "alibi": lambda s, b, h, q, k: s - cap["slopes"][h] * (q - k).abs(),
        "softcap": lambda s, b, h, q, k: 2.0 * (s / 2.0).tanh(),
        "table": lambda s, b, h, q, k: s + cap["table"][h, q - k + S],
        "bias": lambda s, b, h, q, k: s * 0.5 + cap["bias"][b, h, q, k],
        "where": lambda s, b, h, q, k: lib.where(q >= 2, s, -math.inf),
    }
    return mods[name]


def _mask_mod(name, lib_mods, cap):
    """Mask mod `name`, combined with `lib_mods`' and_masks/or_masks."""
    def causal(b, h, q, k):
        return q >= k

    masks = {
        "noop": lib_mods.noop_mask,
        "causal": causal,
        "sliding": lib_mods.and_masks(causal, lambda b, h, q, k: q - k <= 3),
        "prefix_lm": lib_mods.or_masks(lambda b, h, q, k: k < 5, causal),
        "document": lambda b, h, q, k: cap["q_doc"][q] == cap["kv_doc"][k],
        "late_rows": lambda b, h, q, k: k <= q - 3,
        "per_batch": lambda b, h, q, k: (k <= q + b * 4) & (h != 1),
    }
    return masks[name]


def _side(cap, index):
    return {name: pair[index] for name, pair in cap.items()}


def _run(lib_name, qkv, cap, score, mask, block=4, public=True, **kwargs):
    """flex_attention of one library with the named mods: (output, AuxOutput with lse). For
    torch, unless `public`, the eager math its flex_attention runs, called directly (the same
    values without a dynamo trace per mod)."""
    lib, mods = LIBS[lib_name]
    side = _side(cap, 0 if lib_name == "genesis" else 1)
    block_mask = None if mask is None else mods.create_block_mask(
        _mask_mod(mask, mods, side), B, HQ, L, S, device="cpu", BLOCK_SIZE=block)
    score_mod = _score_mod(score, lib, side)
    if public:
        return mods.flex_attention(*qkv, score_mod=score_mod, block_mask=block_mask,
                                   return_aux=mods.AuxRequest(lse=True), **kwargs)
    out, lse, _ = _math_reference(qkv, score_mod, T.noop_mask if mask is None else
                                  block_mask.mask_mod, kwargs.get("scale") or 1 / math.sqrt(E))
    return out, T.AuxOutput(lse=lse)


def _qkv(rng, dtype=genesis.float32, kv_batch=B, heads=(HQ, HKV), lengths=(L, S), grad=False):
    shapes = [(B, heads[0], lengths[0], E), (kv_batch, heads[1], lengths[1], E),
              (kv_batch, heads[1], lengths[1], E + 2)]
    pairs = [make_pair(s, dtype, requires_grad=grad, rng=rng) for s in shapes]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def _compare(rng, score, mask, dtype=genesis.float32, kv_batch=B, public=False, **kwargs):
    """Genesis's output and lse against torch's for the named mods."""
    cap = _captured(rng)
    g_qkv, t_qkv = _qkv(rng, dtype, kv_batch=kv_batch)
    g_out, g_aux = _run("genesis", g_qkv, cap, score, mask, **kwargs)
    t_out, t_aux = _run("torch", t_qkv, cap, score, mask, public=public, **kwargs)
    if dtype in (genesis.float16, genesis.bfloat16):
        _assert_half_close(g_out, t_out)
    else:
        assert_close(g_out, t_out)
    assert_close(g_aux.lse, t_aux.lse)
    return g_out, g_aux


def _assert_half_close(actual, expected, ulps=1):
    """Half-type outputs within `ulps` units in the last place of max(|expected|, 1). The
    weights are rounded to the half type before the product with the values, so a weight a
    float32 rounding apart in torch moves an output by one ulp of that weight, which is many of
    the output's own ulps where the row's terms cancel near zero."""
    half = ml_dtypes.bfloat16 if actual.dtype is genesis.bfloat16 else np.float16
    assert actual.dtype is from_torch(expected).dtype
    got = actual.float().numpy().astype(half)
    want = expected.float().numpy().astype(half)
    scale = np.maximum(np.abs(want.astype(np.float32)), 1).astype(half)
    within = ulp_distance(got, want) <= ulps
    close = np.abs(got.astype(np.float64) - want) <= ulps * np.spacing(scale).astype(np.float64)
    assert (within | close).all(), np.abs(got.astype(np.float64) - want).max()


@pytest.mark.parametrize("score, mask, dtype, kv_batch", [
    ("table", "causal", genesis.float32, B), ("softcap", "document", genesis.bfloat16, B),
    ("alibi", "per_batch", genesis.float64, 1)])
def test_torchs_flex_attention_itself_agrees(rng, score, mask, dtype, kv_batch):
    _compare(rng, score, mask, dtype, kv_batch, public=True, enable_gqa=True)


@pytest.mark.parametrize("score", ["identity", "relative", "alibi", "softcap", "table", "bias"])
@pytest.mark.parametrize("mask", [None, "causal"])
def test_score_mods_match_torch(rng, score, mask):
    _compare(rng, score, mask, enable_gqa=True)


@pytest.mark.parametrize("mask", ["noop", "causal", "sliding", "prefix_lm", "document",
                                  "per_batch"])
def test_mask_mods_match_torch(rng, mask):
    _compare(rng, "relative", mask, enable_gqa=True)


@pytest.mark.parametrize("block", [2, 8, (4, 8), 128])
def test_block_sizes_and_odd_lengths(rng, block):
    _compare(rng, "table", "document", enable_gqa=True, block=block)


def test_batch_broadcast_of_keys_with_a_block_mask(rng):
    _compare(rng, "alibi", "per_batch", enable_gqa=True, kv_batch=1)


def test_grouped_query_heads_and_scale(rng):
    _compare(rng, "bias", "sliding", enable_gqa=True, scale=0.7)


@pytest.mark.parametrize("dtype", [genesis.float64, genesis.bfloat16, genesis.float16])
def test_dtypes(rng, dtype):
    out, aux = _compare(rng, "softcap", "prefix_lm", dtype, enable_gqa=True)
    assert out.dtype is dtype
    assert aux.lse.dtype is (genesis.float64 if dtype is genesis.float64 else genesis.float32)


@pytest.mark.parametrize("score, mask", [("identity", "late_rows"), ("where", None)])
def test_fully_masked_rows_give_zeros_and_minus_inf(rng, score, mask):
    out, aux = _compare(rng, score, mask, enable_gqa=True)
    assert (out[:, :, :2] == 0).all() and (aux.lse[:, :, :2] == -math.inf).all()


def _math_reference(t_qkv, score_mod, mask_mod, scale):
    """torch's eager math (out, lse, max scores) in natural log, differentiable."""
    out, lse, max_scores = math_attention(*t_qkv, score_mod or (lambda s, b, h, q, k: s),
                                          (mask_mod,), scale, {})
    return out, lse * math.log(2), max_scores * math.log(2)


@pytest.mark.parametrize("score, mask, kv_batch", [
    ("table", "causal", B), ("bias", "document", B), ("alibi", "per_batch", 1),
    ("softcap", "late_rows", B), ("where", "noop", B)])
def test_gradients_match_torch_math_in_float64(rng, score, mask, kv_batch):
    cap = _captured(rng, genesis.float64, grad=True)
    g_qkv, t_qkv = _qkv(rng, genesis.float64, kv_batch=kv_batch, grad=True)
    g_side, t_side = _side(cap, 0), _side(cap, 1)
    g_mask = G.create_block_mask(_mask_mod(mask, G, g_side), B, HQ, L, S, device="cpu",
                                 BLOCK_SIZE=4)
    g_out, g_aux = G.flex_attention(*g_qkv, score_mod=_score_mod(score, genesis, g_side),
                                    block_mask=g_mask, enable_gqa=True,
                                    return_aux=G.AuxRequest(lse=True, max_scores=True))
    t_out, t_lse, t_max = _math_reference(t_qkv, _score_mod(score, torch, t_side),
                                          _mask_mod(mask, T, t_side), 1 / math.sqrt(E))
    assert_close(g_out, t_out)
    assert_close(g_aux.lse, t_lse)
    assert_close(g_aux.max_scores, t_max)
    g_w, t_w = make_pair(tuple(g_out.shape), genesis.float64, rng=rng)
    g_lw, t_lw = make_pair(tuple(g_aux.lse.shape), genesis.float64, rng=rng)
    finite = genesis.isfinite(g_aux.lse)
    ((g_out * g_w).sum() + genesis.where(finite, g_aux.lse * g_lw, 0.0).sum()).backward()
    t_loss = (t_out * t_w).sum() + torch.where(t_lse.isfinite(), t_lse * t_lw, 0.0).sum()
    t_loss.backward()
    for g, t in [*zip(g_qkv, t_qkv), cap["table"], cap["bias"], cap["slopes"]]:
        expected = t.grad if t.grad is not None else torch.zeros_like(t)
        actual = g.grad if g.grad is not None else genesis.zeros_like(g)
        assert_close(actual, expected, rtol=1e-9, atol=1e-9)


def test_float32_gradients_near_float64_math(rng):
    cap = _captured(rng)
    g_qkv, t_qkv = _qkv(rng, grad=True)
    t64 = [t.detach().double().requires_grad_(True) for t in t_qkv]
    g_side, t_side = _side(cap, 0), _side(cap, 1)
    t_side = {k: v.double() if v.is_floating_point() else v for k, v in t_side.items()}
    mask = G.create_block_mask(_mask_mod("sliding", G, g_side), None, None, L, S, device="cpu")
    out = G.flex_attention(*g_qkv, score_mod=_score_mod("table", genesis, g_side),
                           block_mask=mask, enable_gqa=True)
    t_out, _, _ = _math_reference(t64, _score_mod("table", torch, t_side),
                                  _mask_mod("sliding", T, t_side), 1 / math.sqrt(E))
    out.sum().backward()
    t_out.sum().backward()
    for g, t in zip(g_qkv, t64):
        assert_close(g.grad, t.grad.float(), atol=1e-5, rtol=1e-5)


def test_return_lse_is_deprecated_and_max_scores_follow_the_request(rng):
    (q, k, v), _ = _qkv(rng, heads=(HKV, HKV))
    with pytest.warns(FutureWarning, match="return_lse is deprecated"):
        out, lse = G.flex_attention(q, k, v, return_lse=True)
    assert tuple(lse.shape) == (B, HKV, L)
    only, aux = G.flex_attention(q, k, v, return_aux=G.AuxRequest(max_scores=True))
    assert aux.lse is None and tuple(aux.max_scores.shape) == (B, HKV, L)
    assert_close(only, to_torch(out))
    assert isinstance(G.flex_attention(q, k, v), genesis.Tensor)


def test_output_is_laid_out_as_the_query(rng):
    (q, k, v), (tq, tk, tv) = _qkv(rng, heads=(HKV, HKV))
    q, tq = q.transpose(1, 2).contiguous().transpose(1, 2), tq.transpose(1, 2).contiguous()
    out = G.flex_attention(q, k, v)
    expected = T.flex_attention(tq.transpose(1, 2), tk, tv)
    assert out.stride() == expected.stride()
    assert_close(out, expected)


def test_kernel_options_are_accepted_and_ignored(rng):
    (q, k, v), _ = _qkv(rng, heads=(HKV, HKV))
    options = {"BLOCK_M": 64, "fwd_BLOCK_N": 32, "PRESCALE_QK": True, "BACKEND": "TRITON"}
    assert_close(G.flex_attention(q, k, v, kernel_options=options),
                 to_torch(G.flex_attention(q, k, v)), rtol=0, atol=0)


def test_autocast_runs_in_the_low_precision_type(rng):
    (q, k, v), (tq, tk, tv) = _qkv(rng, heads=(HKV, HKV))
    with genesis.autocast("cpu", dtype=genesis.bfloat16):
        out, aux = G.flex_attention(q, k, v, return_aux=G.AuxRequest(lse=True))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        t_out, t_aux = T.flex_attention(tq, tk, tv, return_aux=T.AuxRequest(lse=True))
    _assert_half_close(out, t_out)
    assert_close(aux.lse, t_aux.lse)


def test_data_dependent_control_flow_in_a_mod_raises(rng):
    (q, k, v), _ = _qkv(rng, heads=(HKV, HKV))

    def branchy(score, b, h, q_idx, kv_idx):
        return score if q_idx > kv_idx else score * 2

    with pytest.raises(RuntimeError, match="ambiguous"):
        G.flex_attention(q, k, v, score_mod=branchy)


def _outcome(fn):
    """The exception's type and text, torch's names and objects' addresses left out."""
    try:
        fn()
    except Exception as error:  # noqa: BLE001  (compared with torch's)
        return type(error), re.sub(r" at 0x[0-9a-f]+", "", str(error).replace("torch", "genesis"))
    return None


def _causal(b, h, q, k):
    return q >= k


# (id, call(lib, mods, q, k, v)): calls both libraries refuse with the same error.
BAD_CALLS = [
    ("heads differ", lambda lib, m, q, k, v: m.flex_attention(q, k, v)),
    ("gqa indivisible", lambda lib, m, q, k, v: m.flex_attention(q[:, :3], k, v,
                                                               enable_gqa=True)),
    ("batch differs", lambda lib, m, q, k, v: m.flex_attention(q, k[:1], v[:1],
                                                             enable_gqa=True)),
    ("block mask batch", lambda lib, m, q, k, v: m.flex_attention(
        q, k[:1], v[:1], enable_gqa=True,
        block_mask=m.create_block_mask(_causal, 1, 1, L, S, device="cpu"))),
    ("kv batch of 3", lambda lib, m, q, k, v: m.flex_attention(
        q, lib.cat([k, k[:1]]), lib.cat([v, v[:1]]), enable_gqa=True,
        block_mask=m.create_block_mask(_causal, 2, 1, L, S, device="cpu"))),
    ("embedding", lambda lib, m, q, k, v: m.flex_attention(q[..., :4], k, v, enable_gqa=True)),
    ("3d", lambda lib, m, q, k, v: m.flex_attention(q[0], k[0], v[0], enable_gqa=True)),
    ("1d", lambda lib, m, q, k, v: m.flex_attention(q[0, 0, 0], k, v)),
    ("mask too short", lambda lib, m, q, k, v: m.flex_attention(
        q, k, v, enable_gqa=True, block_mask=m.create_block_mask(_causal, 1, 1, L - 1, S,
                                                                 device="cpu"))),
    ("mask too long", lambda lib, m, q, k, v: m.flex_attention(
        q, k, v, enable_gqa=True, block_mask=m.create_block_mask(_causal, 1, 1, L, S + 1,
                                                                 device="cpu"))),
    ("sliced mask", lambda lib, m, q, k, v: m.flex_attention(
        q, k, v, enable_gqa=True,
        block_mask=m.create_block_mask(_causal, 2, 1, L, S, device="cpu")[:1])),
    ("lse and aux", lambda lib, m, q, k, v: m.flex_attention(
        q, k, v, enable_gqa=True, return_lse=True, return_aux=m.AuxRequest(lse=True))),
    ("backend", lambda lib, m, q, k, v: m.flex_attention(
        q, k, v, enable_gqa=True, kernel_options={"BACKEND": "CUTLASS"})),
    ("backend and force", lambda lib, m, q, k, v: m.flex_attention(
        q, k, v, enable_gqa=True,
        kernel_options={"BACKEND": "AUTO", "FORCE_USE_FLEX_ATTENTION": True})),
    ("internal option", lambda lib, m, q, k, v: m.flex_attention(
        q, k, v, enable_gqa=True, kernel_options={"OUTPUT_LOGSUMEXP": True})),
    ("flash max", lambda lib, m, q, k, v: m.flex_attention(
        q, k, v, enable_gqa=True, kernel_options={"BACKEND": "FLASH"},
        return_aux=m.AuxRequest(max_scores=True))),
    ("score_mod as mask", lambda lib, m, q, k, v: m.create_block_mask(
        lambda s, b, h, q_idx, kv_idx: s, 1, 1, L, S, device="cpu")),
    ("three args", lambda lib, m, q, k, v: m.create_mask(lambda b, h, q_idx: b, 1, 1, L, S,
                                                        device="cpu")),
    ("float mask", lambda lib, m, q, k, v: m.create_block_mask(
        lambda b, h, q_idx, kv_idx: (q_idx - kv_idx) * 0.5, 1, 1, L, S, device="cpu")),
    ("not callable", lambda lib, m, q, k, v: m.and_masks(_causal, 3)),
    ("not callable or", lambda lib, m, q, k, v: m.or_masks(None)),
    ("dq order", lambda lib, m, q, k, v: m.create_block_mask(_causal, 1, 1, L, S, device="cpu",
                                                            dq_kv_order=1)),
    ("2d indices", lambda lib, m, q, k, v: m.BlockMask.from_kv_blocks(
        lib.ones(2, dtype=lib.int32), lib.zeros(2, dtype=lib.int32))),
    ("half full lists", lambda lib, m, q, k, v: m.BlockMask.from_kv_blocks(
        lib.ones(1, 1, 2, dtype=lib.int32), lib.zeros(1, 1, 2, 2, dtype=lib.int32),
        lib.ones(1, 1, 2, dtype=lib.int32))),
]


@pytest.mark.parametrize("call", [c for _, c in BAD_CALLS], ids=[i for i, _ in BAD_CALLS])
def test_errors_match_torch(rng, call):
    (q, k, v), (tq, tk, tv) = _qkv(rng)
    expected = _outcome(lambda: call(torch, T, tq, tk, tv))
    assert expected is not None
    assert _outcome(lambda: call(genesis, G, q, k, v)) == expected


def test_a_sliced_masks_mask_mod_raises_torchs_advice():
    sliced = G.create_block_mask(_causal, 2, 1, L, S, device="cpu")[1]
    t_sliced = T.create_block_mask(_causal, 2, 1, L, S, device="cpu")[1]
    index = genesis.zeros((), dtype=genesis.int32)
    with pytest.raises(RuntimeError) as caught:
        sliced.mask_mod(index, index, index, index)
    with pytest.raises(RuntimeError) as t_caught:
        t_sliced.mask_mod(*(torch.zeros((), dtype=torch.int32),) * 4)
    assert str(caught.value) == str(t_caught.value)


def _same_block_mask(actual, expected):
    """Every field of as_tuple, repr and str (torch's names swapped), sparsity and to_dense."""
    for a, e in zip(actual.as_tuple(), expected.as_tuple(), strict=True):
        if isinstance(e, torch.Tensor):
            assert_close(a, e)
        elif not callable(e):
            assert a == e
    assert repr(actual) == repr(expected).replace("torch.", "genesis.")
    assert str(actual) == str(expected)
    assert actual.sparsity() == pytest.approx(expected.sparsity(), abs=1e-12)
    assert actual.shape == expected.shape and actual.numel() == expected.numel()
    assert_close(actual.to_dense(), expected.to_dense())


def _both_block_masks(mask, b, h, q_len, kv_len, rng, **kwargs):
    cap = _captured(rng)
    return [mods.create_block_mask(_mask_mod(mask, mods, _side(cap, i)), b, h, q_len, kv_len,
                                   device="cpu", **kwargs)
            for i, mods in enumerate((G, T))]


@pytest.mark.parametrize("mask, b, h, q_len, kv_len, kwargs", [
    ("causal", 2, 1, 17, 19, {"BLOCK_SIZE": 4}),
    ("sliding", 1, 2, 33, 20, {"BLOCK_SIZE": (8, 4)}),
    ("document", None, None, L, S, {"BLOCK_SIZE": 2}),
    ("per_batch", 2, 3, 40, 40, {"BLOCK_SIZE": 8, "separate_full_blocks": False}),
    ("noop", 1, 1, 300, 260, {}),
    ("prefix_lm", 1, 1, 130, 200, {"compute_dq_write_order": True}),
    ("causal", 2, 2, 24, 24, {"BLOCK_SIZE": 4, "compute_dq_write_order": True,
                              "dq_kv_order": False}),
])
def test_create_block_mask_matches_torch(rng, mask, b, h, q_len, kv_len, kwargs):
    _same_block_mask(*_both_block_masks(mask, b, h, q_len, kv_len, rng, **kwargs))


def test_create_block_mask_in_bands_matches_one_pass(rng, monkeypatch):
    monkeypatch.setattr(_block_mask, "_CHUNK_ELEMENTS", 64)
    _same_block_mask(*_both_block_masks("per_batch", 2, 3, 37, 21, rng, BLOCK_SIZE=4))


@pytest.mark.parametrize("index", [0, -1, (1, 2), (slice(0, 2), slice(1, 3)), (0, -2, 1),
                                   (slice(None), slice(None), "tensor")])
@pytest.mark.parametrize("write_order", [False, True])
def test_block_mask_slicing_matches_torch(rng, index, write_order):
    masks = _both_block_masks("per_batch", 2, 3, 24, 20, rng, BLOCK_SIZE=4,
                              compute_dq_write_order=write_order)
    picks = [index] * 2
    if isinstance(index, tuple) and index[-1] == "tensor":
        picks = [(*index[:-1], lib.tensor([3, 1], dtype=lib.int32)) for lib in (genesis, torch)]
    _same_block_mask(*(m[p] for m, p in zip(masks, picks)))


@pytest.mark.parametrize("new_lengths", [(9, 9), (12, 20), (1, 5)])
def test_adjust_matches_torch(rng, new_lengths):
    masks = _both_block_masks("causal", 2, 1, 24, 20, rng, BLOCK_SIZE=4)
    _same_block_mask(*(m._adjust(*new_lengths) for m in masks))


@pytest.mark.parametrize("kwargs", [
    {}, {"BLOCK_SIZE": 4, "seq_lengths": (10, 7)}, {"compute_q_blocks": False},
    {"BLOCK_SIZE": (2, 4), "full": True}])
def test_from_kv_blocks_matches_torch(rng, kwargs):
    counts = rng.integers(0, 3, (2, 1, 4))
    indices = np.stack([rng.permutation(3) for _ in range(8)]).reshape(2, 1, 4, 3)
    lists = [_pair(counts.astype(np.int32)), _pair(indices.astype(np.int32))]
    if kwargs.pop("full", False):
        lists += [_pair((2 - counts).clip(0).astype(np.int32)),
                  _pair(indices[..., ::-1].copy().astype(np.int32))]
    masks = [mods.BlockMask.from_kv_blocks(*(p[i] for p in lists), **kwargs)
             for i, mods in enumerate((G, T))]
    _same_block_mask(*masks)
    assert masks[0].mask_mod is G.noop_mask


@pytest.mark.parametrize("grid_size, limit", [(3, 4), ((2, 5), 1), (-1, 2), (20, 0)])
def test_to_string_matches_torch(rng, grid_size, limit):
    masks = _both_block_masks("sliding", 2, 3, 40, 44, rng, BLOCK_SIZE=4)
    got, want = (m.to_string(grid_size=grid_size, limit=limit) for m in masks)
    assert got == want


def test_block_mask_to_a_device_keeps_its_fields(rng):
    mask, expected = _both_block_masks("document", 1, 1, L, S, rng, BLOCK_SIZE=4)
    _same_block_mask(mask.to("cpu"), expected)
    assert mask.to("cpu").mask_mod is mask.mask_mod


def test_create_block_mask_defaults_to_the_cpu_without_an_accelerator():
    mask = G.create_block_mask(_causal, 1, 1, 8, 8)
    assert mask.kv_num_blocks.device.type == (
        "cuda" if genesis.accelerator.is_available() else "cpu")
    assert mask.BLOCK_SIZE == (128, 128)


@pytest.mark.parametrize("mod", ["causal", "document", "per_batch", "noop", "alibi_score",
                                 "where_score"])
def test_create_mask_matches_torch(rng, mod):
    cap = _captured(rng)
    masks = []
    for i, (lib, mods) in enumerate((LIBS["genesis"], LIBS["torch"])):
        side = _side(cap, i)
        fn = _score_mod(mod[:-6], lib, side) if mod.endswith("_score") else \
            _mask_mod(mod, mods, side)
        masks.append(mods.create_mask(fn, B, HQ, L, S, device="cpu"))
    assert_close(*masks)


def test_public_names():
    assert set(G.__all__) == set(T.__all__)
    assert G.FlexKernelOptions.__annotations__.keys() == T.FlexKernelOptions.__annotations__.keys()
    assert G.AuxRequest._fields == T.AuxRequest._fields
    assert G.AuxOutput._fields == T.AuxOutput._fields


@pytest.fixture
def fake_gpu(monkeypatch):
    """A stand-in "cuda" device (tests/fake_cuda.py) whose fused attention kernels are the
    CPU's numpy kernels of the same contract."""
    import fake_cuda
    fake_cuda.install_for_test(monkeypatch)


def _window_or_documents(name, lib, q_doc, kv_doc):
    """A mask_mod written with `lib`'s ops (None: no block mask)."""
    if name == "sliding":
        return lambda b, h, q, k: (k <= q + 2) & (k >= q - 4)
    if name == "documents":
        q_doc, kv_doc = lib.tensor(q_doc), lib.tensor(kv_doc)
        return lambda b, h, q, k: q_doc.to(q.device)[q] == kv_doc.to(k.device)[k]
    return None


@pytest.mark.parametrize("mask", ["sliding", "documents", "none"])
def test_a_mask_mod_alone_runs_the_fused_kernels_on_cuda(fake_gpu, rng, mask):
    """No score_mod and no statistics asked for: attention under mask_mod's bool mask (as
    broadcast as the mod leaves it) through scaled_dot_product_attention's fused kernels,
    grouped heads read in place; values and gradients as torch's eager math in float64."""
    q_doc, kv_doc = (np.sort(rng.integers(0, 3, n)) for n in (L, S))
    head = 16  # the fused kernels' smallest head dim
    arrays = [rng.standard_normal(shape).astype(np.float32)
              for shape in ((B, HQ, L, head), (B, HKV, S, head), (B, HKV, S, head))]
    leaves = [genesis.tensor(a, device="cuda", requires_grad=True) for a in arrays]
    mask_mod = _window_or_documents(mask, genesis, q_doc, kv_doc)
    block_mask = None if mask_mod is None else G.create_block_mask(
        mask_mod, B, HQ, L, S, device="cuda", BLOCK_SIZE=8)
    out = G.flex_attention(*leaves, block_mask=block_mask, enable_gqa=True)
    assert out.device.type == "cuda" and out.grad_fn.name() == "_FlashAttentionBackward0"
    t_leaves = [torch.from_numpy(a).double().requires_grad_() for a in arrays]
    t_mask_mod = _window_or_documents(mask, torch, q_doc, kv_doc) or T.noop_mask
    expected = math_attention(*t_leaves, lambda s, b, h, q, k: s, (t_mask_mod,),
                              1 / math.sqrt(head), {"enable_gqa": True})[0]
    grad = rng.standard_normal(tuple(expected.shape))
    expected.backward(torch.from_numpy(grad))
    out.backward(genesis.tensor(grad.astype(np.float32), device="cuda"))
    assert_close(out, expected.detach().float(), rtol=1e-5, atol=1e-5)
    for g, t in zip(leaves, t_leaves):
        assert_close(g.grad, t.grad.float(), rtol=1e-5, atol=1e-5)


def test_score_mods_and_statistics_keep_the_math_on_cuda(fake_gpu, rng):
    """A score_mod, or a log-sum-exp asked for, keeps torch's eager math (the fused kernels
    compute neither)."""
    q = genesis.tensor(rng.standard_normal((1, 2, 9, 16)).astype(np.float32), device="cuda",
                       requires_grad=True)
    for kwargs in ({"score_mod": lambda s, b, h, qi, ki: s * 0.5},
                   {"return_aux": G.AuxRequest(lse=True)}):
        out = G.flex_attention(q, q, q, **kwargs)
        out = out[0] if isinstance(out, tuple) else out
        assert out.grad_fn.name() != "_FlashAttentionBackward0"
