"""genesis.nn.functional: float64 gradchecks, and the forms without a layer against torch."""

import math
import os

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from helpers import assert_close, assert_refuses_as_torch

import genesis
import genesis.nn.functional as F
from genesis.autograd import gradcheck, gradgradcheck


def _leaf(rng, *shape, low=-1.0, high=1.0, device="cpu"):
    return genesis.tensor(rng.uniform(low, high, shape), dtype=genesis.float64,
                          requires_grad=True, device=device)


def _pair(rng, *shape, low=-1.0, high=1.0, grad=True, device="cpu"):
    g = genesis.tensor(rng.uniform(low, high, shape), dtype=genesis.float64, device=device)
    t = torch.from_numpy(g.cpu().numpy().copy())
    return (g.requires_grad_(), t.requires_grad_()) if grad else (g, t)


# (name, function of genesis tensors, input shapes); gradcheck runs in float64.
GRADCHECKS = [
    ("linear", lambda x, w, b: F.linear(x, w, b), [(2, 3), (4, 3), (4,)]),
    ("bilinear", lambda a, b, w: F.bilinear(a, b, w), [(2, 2), (2, 3), (2, 2, 3)]),
    ("conv1d", lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1, dilation=2, groups=2),
     [(1, 2, 7), (4, 1, 2), (4,)]),
    ("conv2d", lambda x, w: F.conv2d(x, w, padding="same"), [(1, 2, 4, 3), (2, 2, 2, 3)]),
    ("conv2d_groups", lambda x, w: F.conv2d(x, w, stride=(2, 1), groups=2),
     [(1, 4, 5, 3), (2, 2, 2, 2)]),
    ("unfold", lambda x: F.unfold(x, (2, 3), dilation=(2, 1), padding=1, stride=2),
     [(1, 2, 4, 5)]),
    ("fold", lambda x: F.fold(x, (4, 5), 2, padding=1, stride=2), [(1, 8, 9)]),
    ("max_pool2d", lambda x: F.max_pool2d(x, 3, 2, 1, ceil_mode=True), [(1, 2, 5, 4)]),
    ("avg_pool2d", lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
     [(1, 2, 5, 4)]),
    ("adaptive_avg_pool2d", lambda x: F.adaptive_avg_pool2d(x, (2, 3)), [(1, 2, 5, 4)]),
    ("layer_norm", lambda x, w, b: F.layer_norm(x, (4,), w, b), [(3, 4), (4,), (4,)]),
    ("rms_norm", lambda x, w: F.rms_norm(x, (2, 3), w, 1e-5), [(2, 2, 3), (2, 3)]),
    ("group_norm", lambda x, w, b: F.group_norm(x, 2, w, b), [(2, 4, 3), (4,), (4,)]),
    ("batch_norm", lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
     [(4, 3, 2), (3,), (3,)]),
    ("normalize", lambda x: F.normalize(x, dim=-1), [(3, 4)]),
    ("pad_constant", lambda x: F.pad(x, (1, -1, 2, 0), value=0.5), [(2, 3, 4)]),
    ("pad_reflect", lambda x: F.pad(x, (2, 1, 1, 2), mode="reflect"), [(1, 3, 4)]),
    ("pad_replicate", lambda x: F.pad(x, (2, 1), mode="replicate"), [(2, 3)]),
    ("pad_circular", lambda x: F.pad(x, (2, 3), mode="circular"), [(2, 3)]),
    ("embedding", lambda w: F.embedding(genesis.tensor([[0, 2], [2, 1]], device=w.device), w),
     [(3, 2)]),
    ("softmax", lambda x: F.softmax(x, -1), [(2, 3)]),
    ("log_softmax", lambda x: F.log_softmax(x, 0), [(2, 3)]),
    ("gelu", lambda x: F.gelu(x), [(5,)]),
    ("leaky_relu_elu", lambda x: F.leaky_relu(x, 0.1) + F.elu(x, 0.7), [(5,)]),
    ("sdpa_causal", lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
     [(2, 3, 2), (2, 3, 2), (2, 3, 2)]),
    ("sdpa_mask", lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m,
                                                                    scale=0.3),
     [(1, 2, 2), (1, 3, 2), (1, 3, 2), (2, 3)]),
    ("cross_entropy", lambda x: F.cross_entropy(x, genesis.tensor([0, 2, 1], device=x.device),
                                                label_smoothing=0.1, ignore_index=1), [(3, 3)]),
    ("cross_entropy_probs", lambda x, p: F.cross_entropy(x, p), [(2, 3), (2, 3)]),
    ("nll_loss", lambda x, w: F.nll_loss(x, genesis.tensor([[0, 2], [1, 1]], device=x.device), w),
     [(2, 3, 2), (3,)]),
    ("kl_div", lambda x, y: F.kl_div(x, y, reduction="batchmean", log_target=True),
     [(2, 3), (2, 3)]),
    ("bce_with_logits", lambda x, y: F.binary_cross_entropy_with_logits(
        x, y, pos_weight=genesis.tensor([0.5, 1.5, 2.0], dtype=x.dtype, device=x.device)),
     [(2, 3), (2, 3)]),
    ("bce", lambda x, y: F.binary_cross_entropy(x.sigmoid(), y), [(2, 3), (2, 3)]),
    ("smooth_l1", lambda x, y: F.smooth_l1_loss(x, y, beta=0.4), [(6,), (6,)]),
]


@pytest.mark.parametrize("name, fn, shapes", GRADCHECKS, ids=[c[0] for c in GRADCHECKS])
def test_gradcheck(name, fn, shapes, rng, device):
    inputs = tuple(_leaf(rng, *s, device=device) for s in shapes)
    assert gradcheck(fn, inputs)


GRADGRADCHECKS = ["linear", "conv2d", "unfold", "fold", "layer_norm", "sdpa_causal",
                  "cross_entropy", "max_pool2d", "embedding", "pad_reflect"]


@pytest.mark.parametrize("name, fn, shapes", [c for c in GRADCHECKS if c[0] in GRADGRADCHECKS],
                         ids=GRADGRADCHECKS)
def test_gradgradcheck(name, fn, shapes, rng, device):
    inputs = tuple(_leaf(rng, *s, device=device) for s in shapes)
    assert gradgradcheck(fn, inputs)


@pytest.mark.parametrize("kwargs", [{}, {"padding": 1, "stride": 2}, {"dilation": 2},
                                    {"kernel_size": (2, 3), "padding": (1, 0), "stride": (1, 2)}],
                         ids=str)
def test_unfold_fold_match_torch(kwargs, rng, device):
    kwargs = dict({"kernel_size": 2}, **kwargs)
    g, t = _pair(rng, 2, 3, 6, 5, device=device)
    g_cols, t_cols = F.unfold(g, **kwargs), TF.unfold(t, **kwargs)
    assert_close(g_cols, t_cols)
    assert_close(F.fold(g_cols, (6, 5), **kwargs), TF.fold(t_cols, (6, 5), **kwargs))
    assert_close(F.unfold(g[0], **kwargs), TF.unfold(t[0], **kwargs))


def test_max_pool2d_indices_match_torch(rng, device):
    g, t = _pair(rng, 2, 3, 7, 6, grad=False, device=device)
    g_out, g_idx = F.max_pool2d(g, 3, 2, 1, dilation=1, ceil_mode=True, return_indices=True)
    t_out, t_idx = TF.max_pool2d(t, 3, 2, 1, dilation=1, ceil_mode=True, return_indices=True)
    assert_close(g_out, t_out)
    assert_close(g_idx, t_idx)


@pytest.mark.parametrize("pad, mode, value", [((1, 2), "constant", 3.0),
                                              ((1, 1, 2, 0), "constant", None),
                                              ((-1, 2, 0, -2), "constant", None),
                                              ((2, 1, 1, 2), "reflect", None),
                                              ((3, 1, 0, 2), "replicate", None),
                                              ((2, 2, 1, 3), "circular", None)], ids=str)
def test_pad_matches_torch(pad, mode, value, rng, device):
    g, t = _pair(rng, 1, 2, 3, 4, device=device)
    kwargs = {} if value is None else {"value": value}
    g_out, t_out = F.pad(g, pad, mode, **kwargs), TF.pad(t, pad, mode, **kwargs)
    assert_close(g_out, t_out)
    grad = rng.standard_normal(tuple(t_out.shape))
    g_out.backward(genesis.tensor(grad, device=device))
    t_out.backward(torch.from_numpy(grad))
    assert_close(g.grad, t.grad)


SDPA_CASES = [
    ({}, None),
    ({"is_causal": True}, None),
    ({"scale": 0.7}, "bool"),
    ({}, "float"),
    ({}, "blocked_row"),
    ({}, "float_blocked_row"),
    ({"enable_gqa": True}, "gqa"),
]


@pytest.mark.parametrize("kwargs, mask", SDPA_CASES, ids=str)
def test_sdpa_matches_torch(kwargs, mask, rng, device):
    q, k, v = (_pair(rng, 2, 4, 3, 5, device=device), _pair(rng, 2, 4, 6, 5, device=device),
               _pair(rng, 2, 4, 6, 2, device=device))
    if mask == "gqa":
        k, v = _pair(rng, 2, 2, 6, 5, device=device), _pair(rng, 2, 2, 6, 2, device=device)
    g_kw, t_kw = dict(kwargs), dict(kwargs)
    if mask in ("bool", "blocked_row"):
        m = rng.random((3, 6)) < 0.5
        m[:, 0] = True
        if mask == "blocked_row":
            m[1] = False
        g_kw["attn_mask"], t_kw["attn_mask"] = genesis.tensor(m, device=device), torch.from_numpy(m)
    elif mask in ("float", "float_blocked_row"):
        m = rng.standard_normal((4, 3, 6))
        if mask == "float_blocked_row":
            m[1, 2] = -math.inf
        g_kw["attn_mask"], t_kw["attn_mask"] = genesis.tensor(m, device=device), torch.from_numpy(m)
    g_out = F.scaled_dot_product_attention(q[0], k[0], v[0], **g_kw)
    t_out = TF.scaled_dot_product_attention(q[1], k[1], v[1], **t_kw)
    assert_close(g_out, t_out)
    grad = rng.standard_normal(tuple(t_out.shape))
    g_out.backward(genesis.tensor(grad, device=device))
    t_out.backward(torch.from_numpy(grad))
    for g, t in (q, k, v):
        assert_close(g.grad, t.grad)


def test_sdpa_dropout_and_errors(device):
    q = genesis.ones(1, 4, 8, device=device)
    v = genesis.randn(1, 8, 3, device=device)
    genesis.manual_seed(0)
    out = F.scaled_dot_product_attention(q, q.new_ones(1, 8, 8), v, dropout_p=0.5)
    assert out.shape == (1, 4, 3)
    with pytest.raises(RuntimeError, match="attn_mask should not be set"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=genesis.ones(4, 4, dtype=genesis.bool,
                                                                       device=device),
                                       is_causal=True)


def test_one_hot_and_normalize_match_torch(rng, device):
    idx = rng.integers(0, 5, (3, 4))
    assert_close(F.one_hot(genesis.tensor(idx, device=device)), TF.one_hot(torch.from_numpy(idx)))
    assert_close(F.one_hot(genesis.tensor(idx, device=device), 7),
                 TF.one_hot(torch.from_numpy(idx), 7))
    for bad in ([3], [-1, 3]):
        messages = []
        for lib, device_of in ((genesis, device), (torch, "cpu")):
            with pytest.raises(RuntimeError) as caught:
                lib.nn.functional.one_hot(lib.tensor(bad, device=device_of), 2)
            messages.append(str(caught.value))
        assert messages[0] == messages[1]  # negative first, then too large, as torch's
    g, t = _pair(rng, 3, 4, grad=False, device=device)
    assert_close(F.normalize(g, p=1.0, dim=0), TF.normalize(t, p=1.0, dim=0))
    assert_close(F.normalize(genesis.zeros(2, 3, device=device)), TF.normalize(torch.zeros(2, 3)))


def test_softmax_implicit_dim_warns(rng, device):
    g, t = _pair(rng, 2, 3, grad=False, device=device)
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        out = F.softmax(g)
    assert_close(out, TF.softmax(t, 1))
    assert_close(F.softmax(g, 1, dtype=genesis.float32), TF.softmax(t, 1, dtype=torch.float32))


def _warnings_of(call):
    """(message, file name, line) of each warning `call` raises, every one recorded."""
    import warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return [(str(w.message), os.path.basename(w.filename), w.lineno) for w in caught]


def test_deprecation_warnings_point_at_the_callers_line_as_torch(device):
    """Functional warnings name the caller's file and line, whatever wrappers sit between
    (affine_grid and grid_sample each warn, as PyTorch's do); the legacy size_average warning
    names the reduction to use instead."""
    theta = genesis.eye(2, 3, device=device)[None]
    x = genesis.ones(1, 1, 4, 4, device=device)
    logits, labels = genesis.zeros(2, 3, device=device), genesis.tensor([0, 2], device=device)
    for call, message in [
            (lambda: F.grid_sample(x, F.affine_grid(theta, (1, 1, 4, 4))), "Default grid_sample"),
            (lambda: F.log_softmax(logits), "Implicit dimension choice for log_softmax"),
            (lambda: F.nll_loss(logits, labels, size_average=False),
             "please use reduction='sum' instead"),
            (lambda: F.nll_loss(logits, labels, reduce=False),
             "please use reduction='none' instead")]:
        line = call.__code__.co_firstlineno
        caught = _warnings_of(call)
        assert caught and message in caught[0][0]
        assert {(name, at) for _, name, at in caught} <= {("test_functional.py", line),
                                                          ("test_functional.py", line + 1)}
    assert len(_warnings_of(lambda: F.grid_sample(x, F.affine_grid(theta, (1, 1, 4, 4))))) == 2


@pytest.mark.parametrize("fn, args", [("relu", ()), ("leaky_relu", (0.3,)), ("elu", (1.5,)),
                                      ("silu", ())])
def test_inplace_activations(fn, args, rng, device):
    g, t = _pair(rng, 3, 4, grad=False, device=device)
    out = getattr(F, fn)(g, *args, inplace=True)
    assert out is g
    assert_close(g, getattr(TF, fn)(t, *args))


def test_batch_norm_functional_running_stats(rng, device):
    g, t = _pair(rng, 6, 3, 2, grad=False, device=device)
    g_mean = genesis.zeros(3, dtype=genesis.float64, device=device)
    g_var = genesis.ones(3, dtype=genesis.float64, device=device)
    t_mean, t_var = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    assert_close(F.batch_norm(g, g_mean, g_var, training=True, momentum=0.2),
                 TF.batch_norm(t, t_mean, t_var, training=True, momentum=0.2))
    assert_close(g_mean, t_mean)
    assert_close(g_var, t_var)
    assert_close(F.batch_norm(g, g_mean, g_var), TF.batch_norm(t, t_mean, t_var))



@pytest.mark.parametrize("low", ["bfloat16", "float16"])
def test_batch_norm_eval_keeps_a_half_input_dtype(rng, low):
    """A half input normalized by float32 running statistics and affine parameters comes back
    in the input's dtype, as torch's mixed-type batch norm."""
    x = rng.standard_normal((4, 3, 2)).astype(np.float32)
    stats = [rng.standard_normal(3).astype(np.float32) for _ in range(2)]
    stats[1] = np.abs(stats[1]) + 0.5
    affine = [rng.standard_normal(3).astype(np.float32) for _ in range(2)]
    results = []
    for lib, fn in ((genesis, F.batch_norm), (torch, TF.batch_norm)):
        results.append(fn(lib.tensor(x).to(getattr(lib, low)),
                          *(lib.tensor(a) for a in stats + affine), training=False))
    assert_close(results[0], results[1], dtype=getattr(genesis, low))

def test_conv_errors(device):
    with pytest.raises(RuntimeError, match=r"expected input\[1, 4, 5, 5\] to have 3 channels"):
        F.conv2d(genesis.randn(1, 4, 5, 5, device=device), genesis.randn(2, 3, 3, 3, device=device))
    with pytest.raises(RuntimeError, match="Expected 3D \\(unbatched\\) or 4D"):
        F.conv2d(genesis.randn(5, 5, device=device), genesis.randn(2, 3, 3, 3, device=device))
    with pytest.raises(ValueError, match="strided convolutions"):
        F.conv1d(genesis.randn(1, 3, 5, device=device), genesis.randn(2, 3, 3, device=device),
                 stride=2, padding="same")
    ones = genesis.ones(1, 1, 3, device=device)
    assert math.isclose(float(F.conv1d(ones, ones).sum()), 3.0)


@pytest.mark.parametrize("x_shape", [(5,), (2, 5), (2, 7, 5), (0, 5), ()], ids=str)
def test_linear_refusals_as_torch(x_shape, device):
    """F.linear and nn.Linear (which leaves the check to it, as torch's) refuse an input the
    weight cannot take in torch's words (rows of the flattened input by columns of weight^T),
    after the op's name."""
    for call in (lambda m, x, w: m.nn.functional.linear(x, w),
                 lambda m, x, w: _linear_layer(m, w)(x)):
        with pytest.raises(RuntimeError) as expected:
            call(torch, torch.zeros(x_shape), torch.zeros(4, 3))
        with pytest.raises(RuntimeError) as got:
            call(genesis, genesis.zeros(x_shape, device=device), genesis.zeros(4, 3, device=device))
        assert str(got.value).endswith(f": {expected.value}")


@pytest.mark.parametrize("shapes", [
    [(2, 2), (2, 4), (5, 3, 4)], [(2, 3), (2, 5), (5, 3, 4)], [(2, 3), (3, 4), (5, 3, 4)],
    [(2, 2, 3), (2, 4), (5, 3, 4)], [(2, 3), (2, 4), (5, 3, 4), (4,)]], ids=str)
def test_bilinear_refusals_as_torch(shapes):
    """F.bilinear and nn.Bilinear (which leaves the check to it) refuse inputs the weight or each
    other cannot take, and a bias of another size, in torch's words and order."""
    assert_refuses_as_torch(lambda m: m.nn.functional.bilinear(*map(m.zeros, shapes)))
    if len(shapes) == 3:
        assert_refuses_as_torch(lambda m: m.nn.Bilinear(3, 4, 5)(*map(m.zeros, shapes[:2])))


def _linear_layer(lib, weight):
    """nn.Linear holding `weight` (out_features, in_features)."""
    layer = lib.nn.Linear(weight.shape[1], weight.shape[0], bias=False)
    layer.weight.data = weight
    return layer
