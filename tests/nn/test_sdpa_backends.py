"""scaled_dot_product_attention's backend choice (genesis.nn.attention.sdpa_kernel and the
genesis.backends.cuda SDP flags) and the causal biases, against torch on the CPU: which
implementation runs (its backward node), the warnings and errors when none may, the math
backend's float32 computation of half types, and the values and gradients."""

import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from helpers import assert_close, make_pair
from torch.nn.attention import SDPBackend as TBackend
from torch.nn.attention import bias as tbias
from torch.nn.attention import sdpa_kernel as t_sdpa_kernel

import genesis
import genesis.nn.functional as F
from genesis.nn.attention import SDPBackend, bias, sdpa_kernel

BACKENDS = ["MATH", "FLASH_ATTENTION", "EFFICIENT_ATTENTION", "CUDNN_ATTENTION", "OVERRIDEABLE"]


def _qkv(rng, q_shape, k_shape, v_shape=None, dtype=genesis.float32):
    return [make_pair(s, dtype, requires_grad=True, rng=rng)
            for s in (q_shape, k_shape, v_shape or k_shape)]


def _run(lib, kernel, backends, args, kwargs):
    """(outcome, warning texts): the output, or the exception's type and text."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with kernel(backends):
                outcome = lib.nn.functional.scaled_dot_product_attention(*args, **kwargs)
        except Exception as error:  # noqa: BLE001  (compared with torch's)
            outcome = (type(error), str(error))
    texts = [str(w.message).split(" (Triggered internally")[0] for w in caught]
    return outcome, texts


# (id, q shape, k shape, v shape, kwargs): calls the CPU flash kernel takes or refuses.
CASES = [
    ("plain", (2, 3, 5, 8), (2, 3, 7, 8), None, {}),
    ("causal", (2, 3, 5, 8), (2, 3, 5, 8), None, {"is_causal": True}),
    ("scale", (2, 3, 5, 8), (2, 3, 7, 8), None, {"scale": 0.3}),
    ("gqa", (2, 6, 5, 8), (2, 3, 7, 8), None, {"enable_gqa": True}),
    ("heads differ", (2, 6, 5, 8), (2, 3, 7, 8), None, {}),
    ("gqa indivisible", (2, 5, 5, 8), (2, 3, 7, 8), None, {"enable_gqa": True}),
    ("gqa kv heads differ", (2, 6, 5, 8), (2, 3, 7, 8), (2, 2, 7, 8), {"enable_gqa": True}),
    ("batch differs", (2, 3, 5, 8), (1, 3, 7, 8), None, {}),
    ("3d", (3, 5, 8), (3, 7, 8), None, {}),
    ("5d", (2, 2, 3, 5, 8), (2, 2, 3, 7, 8), None, {}),
    ("value dim", (2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 4), {}),
    ("dropout", (2, 3, 5, 8), (2, 3, 7, 8), None, {"dropout_p": 0.5}),
    ("float mask", (2, 3, 5, 8), (2, 3, 7, 8), None, {"attn_mask": "float 5 7"}),
    ("4d bool mask", (2, 3, 5, 8), (2, 3, 7, 8), None, {"attn_mask": "bool 2 1 1 7"}),
    ("3d mask", (2, 3, 5, 8), (2, 3, 7, 8), None, {"attn_mask": "float 3 5 7"}),
    ("causal and mask", (2, 3, 5, 8), (2, 3, 5, 8), None,
     {"attn_mask": "float 5 5", "is_causal": True}),
]


def _mask_pair(rng, spec):
    kind, *shape = spec.split()
    shape = tuple(int(s) for s in shape)
    if kind == "bool":
        m = rng.random(shape) < 0.6
        m[..., 0] = True
        return genesis.tensor(m), torch.from_numpy(m)
    return make_pair(shape, rng=rng)


@pytest.mark.parametrize("backends", BACKENDS + [["MATH", "FLASH_ATTENTION"], []], ids=str)
@pytest.mark.parametrize("name, q_shape, k_shape, v_shape, kwargs", CASES,
                         ids=[c[0] for c in CASES])
def test_backend_choice_matches_torch(name, q_shape, k_shape, v_shape, kwargs, backends, rng):
    pairs = _qkv(rng, q_shape, k_shape, v_shape)
    g_kw, t_kw = dict(kwargs), dict(kwargs)
    if "attn_mask" in kwargs:
        g_kw["attn_mask"], t_kw["attn_mask"] = _mask_pair(rng, kwargs["attn_mask"])
    names = backends if isinstance(backends, list) else [backends]
    g_out, g_warn = _run(genesis, sdpa_kernel, [getattr(SDPBackend, n) for n in names],
                         [g for g, _ in pairs], g_kw)
    t_out, t_warn = _run(torch, t_sdpa_kernel, [getattr(TBackend, n) for n in names],
                         [t for _, t in pairs], t_kw)
    assert g_warn == t_warn
    if isinstance(t_out, tuple):
        assert isinstance(g_out, tuple) and g_out[0] is t_out[0]
        assert g_out[1].split(": ", 1)[-1] == t_out[1].split(": ", 1)[-1]
        return
    assert not isinstance(g_out, tuple), g_out
    assert _fused(g_out) == _fused(t_out)
    if kwargs.get("dropout_p"):
        return
    assert_close(g_out, t_out)
    grad = rng.standard_normal(tuple(t_out.shape))
    g_out.backward(genesis.tensor(grad, dtype=genesis.float32))
    t_out.backward(torch.from_numpy(grad).float())
    for g, t in pairs:
        assert_close(g.grad, t.grad)


def _fused(out):
    return out.grad_fn.name().startswith("ScaledDotProductFlashAttention")


@pytest.mark.parametrize("dtype", [genesis.bfloat16, genesis.float16], ids=str)
@pytest.mark.parametrize("reduction", [False, True])
def test_math_backend_computes_half_types_as_torch(dtype, reduction, rng):
    """Half types in float32 rounded once: within one rounding of torch's math backend; with
    the reduction allowed, computed in their own precision, within two. A rounding is counted
    at max(|value|, 1), the scale of the values' terms, since outputs that nearly cancel to
    zero carry the error of those terms, not of their own size."""
    pairs = _qkv(rng, (2, 3, 33, 16), (2, 3, 20, 16), dtype=dtype)
    outs = []
    for lib, kernel, backend, index in ((genesis, sdpa_kernel, SDPBackend.MATH, 0),
                                        (torch, t_sdpa_kernel, TBackend.MATH, 1)):
        lib.backends.cuda.allow_fp16_bf16_reduction_math_sdp(reduction)
        try:
            with kernel(backend):
                outs.append(lib.nn.functional.scaled_dot_product_attention(
                    *(p[index] for p in pairs), scale=0.3))
        finally:
            lib.backends.cuda.allow_fp16_bf16_reduction_math_sdp(False)
    g_out, t_out = outs
    assert g_out.dtype is dtype
    _assert_within_roundings(g_out, t_out, 2 if reduction else 1)


def _assert_within_roundings(out, expected, roundings):
    """`out` within `roundings` roundings of its half type of torch's `expected`, each counted
    at max(|value|, 1)."""
    actual = out.detach().float().numpy().astype(np.float64)
    wanted = expected.detach().float().numpy().astype(np.float64)
    rounding = float(genesis.finfo(out.dtype).eps) * np.maximum(np.abs(wanted), 1.0)
    assert (np.abs(actual - wanted) <= roundings * rounding).all()


def test_flags_and_priority():
    cuda = genesis.backends.cuda
    assert (cuda.flash_sdp_enabled(), cuda.mem_efficient_sdp_enabled(), cuda.math_sdp_enabled(),
            cuda.cudnn_sdp_enabled()) == (True, True, True, True)
    with sdpa_kernel([SDPBackend.MATH, SDPBackend.FLASH_ATTENTION]):
        assert (cuda.flash_sdp_enabled(), cuda.math_sdp_enabled(),
                cuda.mem_efficient_sdp_enabled()) == (True, True, False)
    assert cuda.mem_efficient_sdp_enabled()
    cuda.enable_flash_sdp(False)
    try:
        assert not cuda.flash_sdp_enabled()
        q = genesis.randn(1, 2, 4, 8, requires_grad=True)
        assert not _fused(F.scaled_dot_product_attention(q, q, q))
        with sdpa_kernel([SDPBackend.MATH, SDPBackend.FLASH_ATTENTION], set_priority=True):
            assert not _fused(F.scaled_dot_product_attention(q, q, q))
        with sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.MATH], set_priority=True):
            assert _fused(F.scaled_dot_product_attention(q, q, q))
        assert not cuda.flash_sdp_enabled()
    finally:
        cuda.enable_flash_sdp(True)
    assert str(SDPBackend.MATH) == str(TBackend.MATH)
    assert repr(SDPBackend.FLASH_ATTENTION) == repr(TBackend.FLASH_ATTENTION)
    assert int(SDPBackend.CUDNN_ATTENTION) == int(TBackend.CUDNN_ATTENTION)
    with pytest.raises(AssertionError, match="Backend must be an instance of SDPBackend"):
        with sdpa_kernel("math"):
            pass


def test_deprecated_sdp_kernel():
    with pytest.warns(FutureWarning, match="sdp_kernel\\(\\)` is deprecated"):
        with genesis.backends.cuda.sdp_kernel(enable_flash=False, enable_mem_efficient=False):
            assert genesis.backends.cuda.math_sdp_enabled()
            assert not genesis.backends.cuda.flash_sdp_enabled()
    assert genesis.backends.cuda.flash_sdp_enabled()


def test_can_use_fused_kernels_on_cpu(rng):
    """can_use_flash_attention answers as the choice does: the CPU flash kernel's rules."""
    cuda = genesis.backends.cuda
    q = genesis.randn(2, 3, 5, 8)
    assert cuda.can_use_flash_attention(cuda.SDPAParams(q, q, q, None, 0.0, False, False))
    assert not cuda.can_use_efficient_attention(cuda.SDPAParams(q, q, q, None, 0.0, False))
    params = cuda.SDPAParams(q, q, q, None, 0.5, False, False)
    with pytest.warns(UserWarning, match="do not support non-zero dropout"):
        assert not cuda.can_use_flash_attention(params, debug=True)


def _warned(make):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        made = make()
    return made, [str(w.message) for w in caught]


@pytest.mark.parametrize("variant", ["upper_left", "lower_right"])
@pytest.mark.parametrize("sizes", [(5, 5), (3, 7), (7, 4)], ids=str)
def test_causal_bias_matches_torch(variant, sizes, rng):
    (lq, lk) = sizes
    pairs = _qkv(rng, (2, 3, lq, 8), (2, 3, lk, 8))
    g_bias, g_warn = _warned(lambda: getattr(bias, f"causal_{variant}")(lq, lk))
    t_bias, t_warn = _warned(lambda: getattr(tbias, f"causal_{variant}")(lq, lk))
    assert g_warn == t_warn
    assert repr(g_bias) == repr(t_bias)
    g_out = F.scaled_dot_product_attention(*(g for g, _ in pairs), attn_mask=g_bias)
    t_out = TF.scaled_dot_product_attention(*(t for _, t in pairs), attn_mask=t_bias)
    assert_close(g_out, t_out)
    finite = np.isfinite(t_out.detach().numpy()).all()
    if finite:
        g_out.sum().backward()
        t_out.sum().backward()
        for g, t in pairs:
            assert_close(g.grad, t.grad)
    with pytest.raises(ValueError, match="CausalBias should not be used with causal=True"):
        F.scaled_dot_product_attention(*(g for g, _ in pairs), attn_mask=g_bias, is_causal=True)


def test_causal_bias_errors():
    with pytest.raises(AssertionError, match="causal_lower_right only supports 2D tensors"):
        bias.causal_lower_right(2, 3, 4)
    with pytest.raises(AssertionError, match="variant must be a CausalVariant"):
        bias.CausalBias(1, 2, 3)
    with pytest.warns(UserWarning, match="will produce NaNs"):
        bias.causal_lower_right(4, 2)


@pytest.mark.parametrize("backend", ["MATH", "FLASH_ATTENTION"])
def test_autocast_runs_attention_as_one_op(backend, rng):
    """Under autocast the inputs are cast to bfloat16 once and the attention inside follows no
    policy: the same result as on bfloat16 inputs, and within one bfloat16 rounding of torch's
    (whose CPU flash kernel sums in another order)."""
    (q, tq), (k, tk), (v, tv) = _qkv(rng, (2, 3, 17, 16), (2, 3, 9, 16))
    mask, t_mask = make_pair((17, 9), rng=rng)
    with sdpa_kernel(getattr(SDPBackend, backend)), genesis.autocast("cpu", dtype=genesis.bfloat16):
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    with sdpa_kernel(getattr(SDPBackend, backend)):
        plain = F.scaled_dot_product_attention(
            *(t.to(genesis.bfloat16) for t in (q, k, v, mask)))
    with t_sdpa_kernel(getattr(TBackend, backend)), torch.autocast("cpu", dtype=torch.bfloat16):
        expected = TF.scaled_dot_product_attention(tq, tk, tv, attn_mask=t_mask)
    assert out.dtype is genesis.bfloat16
    assert np.array_equal(out.detach().float().numpy(), plain.detach().float().numpy())
    _assert_within_roundings(out, expected, 1)
