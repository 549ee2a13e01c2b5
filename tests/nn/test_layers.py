"""Layers against torch with the same weights: outputs, input and parameter gradients, buffers."""

import math

import numpy as np
import pytest
import torch
from helpers import TORCH_DTYPES, assert_close, assert_refuses_as_torch, from_torch, raised

import genesis
from genesis import nn

pytestmark = pytest.mark.usefixtures("cudnn_ieee")

FLOATS = [genesis.float32, genesis.float64]

# (layer name, constructor args, constructor kwargs, input shapes)
CASES = [
    ("Linear", (4, 3), {}, [(2, 5, 4)]),
    ("Linear", (4, 3), {"bias": False}, [(4,)]),
    ("Bilinear", (3, 4, 5), {}, [(6, 3), (6, 4)]),
    ("LayerNorm", (6,), {}, [(2, 3, 6)]),
    ("LayerNorm", ((3, 6),), {"elementwise_affine": False}, [(2, 3, 6)]),
    ("LayerNorm", (6,), {"bias": False, "eps": 1e-3}, [(5, 6)]),
    ("RMSNorm", (6,), {}, [(2, 3, 6)]),
    ("RMSNorm", ([3, 6],), {"eps": 1e-3}, [(2, 3, 6)]),
    ("GroupNorm", (2, 6), {}, [(2, 6, 5)]),
    ("GroupNorm", (3, 6), {"affine": False}, [(2, 6, 2, 3)]),
    ("BatchNorm1d", (4,), {}, [(5, 4)]),
    ("BatchNorm1d", (4,), {"momentum": None}, [(5, 4, 3)]),
    ("BatchNorm1d", (4,), {"affine": False, "track_running_stats": False}, [(5, 4)]),
    ("BatchNorm2d", (3,), {"momentum": 0.3, "eps": 1e-3}, [(2, 3, 4, 5)]),
    ("Conv1d", (4, 6, 3), {}, [(2, 4, 9)]),
    ("Conv1d", (4, 6, 3), {"stride": 2, "padding": 1, "dilation": 2, "groups": 2}, [(2, 4, 11)]),
    ("Conv1d", (4, 4, 4), {"padding": "same", "bias": False}, [(4, 7)]),
    ("Conv2d", (3, 4, 3), {}, [(2, 3, 7, 6)]),
    ("Conv2d", (4, 6, (3, 2)), {"stride": (2, 1), "padding": (1, 2), "dilation": (1, 2),
                                "groups": 2}, [(2, 4, 7, 6)]),
    ("Conv2d", (3, 2, (2, 3)), {"padding": "same", "dilation": 2}, [(1, 3, 6, 7)]),
    ("Conv2d", (3, 2, 2), {"padding": "valid", "stride": 3}, [(3, 5, 5)]),
    ("MaxPool2d", (2,), {}, [(2, 3, 6, 7)]),
    ("MaxPool2d", (3,), {"stride": 2, "padding": 1, "ceil_mode": True}, [(1, 2, 8, 7)]),
    ("MaxPool2d", ((2, 3),), {"stride": (1, 2), "dilation": 2}, [(2, 7, 8)]),
    ("AvgPool2d", (2,), {}, [(2, 3, 6, 7)]),
    ("AvgPool2d", (3,), {"stride": 2, "padding": 1, "ceil_mode": True,
                         "count_include_pad": False}, [(1, 2, 8, 7)]),
    ("AvgPool2d", (3, 2, 1), {"ceil_mode": True}, [(1, 2, 6, 8)]),
    ("AvgPool2d", ((2, 3),), {"divisor_override": 4}, [(2, 6, 6)]),
    ("AdaptiveAvgPool2d", ((3, 4),), {}, [(2, 3, 7, 9)]),
    ("AdaptiveAvgPool2d", (2,), {}, [(3, 5, 5)]),
    ("AdaptiveAvgPool2d", ((None, 2),), {}, [(1, 2, 3, 7)]),
    ("Flatten", (), {}, [(2, 3, 4)]),
    ("Flatten", (0, 1), {}, [(2, 3, 4)]),
    ("Unflatten", (1, (2, 3)), {}, [(4, 6, 2)]),
    ("Identity", (), {}, [(3, 2)]),
    ("ReLU", (), {}, [(3, 4)]),
    ("GELU", (), {}, [(3, 4)]),
    ("GELU", ("tanh",), {}, [(3, 4)]),
    ("SiLU", (), {}, [(3, 4)]),
    ("Tanh", (), {}, [(3, 4)]),
    ("Sigmoid", (), {}, [(3, 4)]),
    ("Softmax", (1,), {}, [(3, 4, 2)]),
    ("LogSoftmax", (-1,), {}, [(3, 4)]),
    ("LeakyReLU", (0.2,), {}, [(3, 4)]),
    ("ELU", (0.5,), {}, [(3, 4)]),
    ("Softplus", (2.0, 3.0), {}, [(3, 4)]),
    ("LogSigmoid", (), {}, [(3, 4)]),
]


def _case_id(case):
    name, args, kwargs, _ = case
    return name + "-" + "-".join(str(v) for v in list(args) + list(kwargs.values()))


def make_pair_of_layers(name, args, kwargs, dtype, device="cpu"):
    """The torch layer (default init) and the genesis layer on `device` with its weights copied
    across."""
    tl = getattr(torch.nn, name)(*args, **kwargs).to(TORCH_DTYPES[dtype])
    gl = getattr(nn, name)(*args, **kwargs).to(device, dtype)
    gl.load_state_dict({k: from_torch(v, device) for k, v in tl.state_dict().items()})
    return gl, tl


def run_both(gl, tl, g_inputs, t_inputs, rng):
    """Forward both layers, backward the same random gradient; returns the outputs."""
    g_out, t_out = gl(*g_inputs), tl(*t_inputs)
    if isinstance(t_out, tuple):
        g_out, t_out = g_out[0], t_out[0]
    if t_out.requires_grad:
        grad = rng.standard_normal(tuple(t_out.shape))
        t_out.backward(torch.from_numpy(grad).to(t_out.dtype))
        g_out.backward(genesis.tensor(grad, dtype=g_out.dtype, device=g_out.device))
    return g_out, t_out


def compare_grads(gl, tl, g_inputs, t_inputs, dtype):
    for g, t in zip(g_inputs, t_inputs):
        if t.requires_grad:
            assert_close(g.grad, t.grad, dtype)
    g_params = dict(gl.named_parameters())
    for name, tp in tl.named_parameters():
        if tp.grad is None:
            assert g_params[name].grad is None, name
        else:
            assert_close(g_params[name].grad, tp.grad, dtype)
    g_buffers = dict(gl.named_buffers())
    for name, tb in tl.named_buffers():
        assert_close(g_buffers[name], tb, dtype)


def float_inputs(shapes, dtype, rng, device="cpu"):
    g_inputs = [genesis.tensor(rng.uniform(-2, 2, s), dtype=dtype, device=device).requires_grad_()
                for s in shapes]
    t_inputs = [torch.from_numpy(x.detach().cpu().numpy().copy()).requires_grad_()
                for x in g_inputs]
    return g_inputs, t_inputs


@pytest.mark.parametrize("train", [True, False], ids=["train", "eval"])
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.name)
@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_layer_matches_torch(case, dtype, train, rng, device):
    name, args, kwargs, shapes = case
    gl, tl = make_pair_of_layers(name, args, kwargs, dtype, device=device)
    gl.train(train)
    tl.train(train)
    g_inputs, t_inputs = float_inputs(shapes, dtype, rng, device=device)
    g_out, t_out = run_both(gl, tl, g_inputs, t_inputs, rng)
    assert_close(g_out, t_out, dtype)
    compare_grads(gl, tl, g_inputs, t_inputs, dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.name)
@pytest.mark.parametrize("kwargs", [{}, {"padding_idx": 2}, {"padding_idx": -1, "max_norm": 1.0},
                                    {"scale_grad_by_freq": True}])
def test_embedding_matches_torch(kwargs, dtype, rng, device):
    gl, tl = make_pair_of_layers("Embedding", (7, 4), kwargs, dtype, device=device)
    idx = rng.integers(0, 7, (3, 5))
    idx[0, :2] = [2, 6]
    g_out, t_out = run_both(gl, tl, [genesis.tensor(idx, device=device)], [torch.from_numpy(idx)],
                            rng)
    assert_close(g_out, t_out, dtype)
    compare_grads(gl, tl, [], [], dtype)
    assert_close(gl.weight, tl.weight, dtype)


def test_embedding_init_and_padding_row():
    layer = nn.Embedding(5, 3, padding_idx=1)
    np.testing.assert_array_equal(layer.weight.detach().numpy()[1], 0)
    pre = nn.Embedding.from_pretrained(genesis.ones(4, 2))
    assert not pre.weight.requires_grad and pre.num_embeddings == 4
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        nn.Embedding(5, 3, padding_idx=5)


@pytest.mark.parametrize("call", [
    lambda m: m.nn.functional.embedding(m.tensor([1.0, 2.0]), m.randn(3, 2)),
    lambda m: m.nn.functional.embedding(m.tensor([1, 2], dtype=m.int16), m.randn(3, 2)),
    lambda m: m.nn.functional.embedding(m.tensor([True]), m.randn(3, 2)),
    lambda m: m.nn.functional.embedding(m.tensor([1, 2]), m.randn(3, 2), padding_idx=-4),
    lambda m: m.nn.Embedding(3, 2)(m.tensor([1.0, 2.0])),
    lambda m: m.nn.Embedding(3, 2, padding_idx=3),
    lambda m: m.nn.functional.embedding_bag(m.tensor([[1.0, 2.0]]), m.randn(3, 2))])
def test_embedding_refusals_as_torch(call):
    """Indices of a dtype other than int64/int32 ('... but got torch.FloatTensor instead (while
    checking arguments for embedding)') and a padding_idx outside the table, in torch's words."""
    assert_refuses_as_torch(call)


@pytest.mark.parametrize("call", [
    lambda m: m.nn.functional.embedding(m.tensor([1.0]), m.ones(5, 3), max_norm=1.0),
    lambda m: m.nn.functional.embedding(m.tensor([1]), m.ones(5, 3, dtype=m.int64), max_norm=1.0),
    lambda m: m.nn.functional.embedding(m.tensor([1]), m.ones(5, 3, dtype=m.bool), max_norm=1.0),
    lambda m: m.nn.functional.embedding(m.tensor([1]), m.ones(5), max_norm=1.0),
    lambda m: m.nn.functional.embedding(m.tensor([1.0]), m.ones(5), padding_idx=9, max_norm=1.0),
    lambda m: m.nn.functional.embedding(m.tensor([1.0]), m.ones(5)),
    lambda m: m.nn.functional.embedding(m.tensor([1.0]), m.ones(5, 2, 2)),
    lambda m: m.embedding_renorm_(m.ones(5, 2, dtype=m.int64), m.tensor([1]), 1.0, 2.0),
    lambda m: m.embedding_renorm_(m.ones(5, 2), m.tensor([1.0]), 1.0, 2.0),
    lambda m: m.embedding_renorm_(m.ones(5), m.tensor([1.0]), 1.0, 2.0)])
def test_embedding_checks_in_torch_order(call):
    """F.embedding checks padding_idx, then max_norm's renorm (embedding_renorm_'s checks: the
    weight's rank, the indices' type as its argument #2, then norm()'s refusal of a weight of no
    floating type), then the weight's rank ("'weight' must be 2-D"), then the indices' type."""
    assert_refuses_as_torch(call)


@pytest.mark.parametrize("ids", [[1, 3], [[0, -4]]])
def test_embedding_out_of_range_starts_as_torch(ids):
    """An id outside the table: torch's IndexError, its words first, then the id."""
    kind, words = raised(lambda: torch.nn.functional.embedding(torch.tensor(ids), torch.ones(3, 2)))
    got_kind, text = raised(lambda: nn.Embedding(3, 2)(genesis.tensor(ids)))
    assert (got_kind, text[:len(words)]) == (kind, words), text


@pytest.mark.parametrize("kwargs, call", [
    ({}, {}),
    ({"batch_first": True}, {"need_weights": False}),
    ({"bias": False}, {"average_attn_weights": False}),
    ({"kdim": 5, "vdim": 3}, {}),
    ({"add_bias_kv": True, "add_zero_attn": True}, {"mask": "bool2d", "padding": True}),
    ({}, {"mask": "float3d", "padding": True, "need_weights": False}),
    ({"batch_first": True}, {"mask": "causal", "is_causal": True, "need_weights": False}),
    ({}, {"mask": "bool2d", "unbatched": True}),
], ids=str)
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.name)
def test_multihead_attention_matches_torch(kwargs, call, dtype, rng, device):
    embed, heads, L, S, N = 8, 2, 4, 5, 3
    gl, tl = make_pair_of_layers("MultiheadAttention", (embed, heads), kwargs, dtype, device)
    kdim, vdim = kwargs.get("kdim", embed), kwargs.get("vdim", embed)
    unbatched = call.get("unbatched", False)
    self_attention = kdim == embed and vdim == embed and call.get("mask") != "float3d"
    if self_attention:
        S = L
    lead = (lambda n: (n,)) if unbatched else \
        (lambda n: (N, n) if kwargs.get("batch_first") else (n, N))
    shapes = [lead(L) + (embed,)] + ([] if self_attention else [lead(S) + (kdim,),
                                                                 lead(S) + (vdim,)])
    g_inputs, t_inputs = float_inputs(shapes, dtype, rng, device=device)
    g_qkv = g_inputs * 3 if self_attention else g_inputs
    t_qkv = t_inputs * 3 if self_attention else t_inputs
    g_kw, t_kw = _attention_masks(call, L, S, N, heads, dtype, rng, device=device)
    for key in ("need_weights", "average_attn_weights", "is_causal"):
        if key in call:
            g_kw[key] = t_kw[key] = call[key]
    g_out, g_w = gl(*g_qkv, **g_kw)
    t_out, t_w = tl(*t_qkv, **t_kw)
    assert_close(g_out, t_out, dtype)
    if t_w is None:
        assert g_w is None
    else:
        assert_close(g_w, t_w, dtype)
    grad = rng.standard_normal(tuple(t_out.shape))
    t_out.backward(torch.from_numpy(grad).to(t_out.dtype))
    g_out.backward(genesis.tensor(grad, dtype=dtype, device=device))
    compare_grads(gl, tl, g_inputs, t_inputs, dtype)


def _attention_masks(call, L, S, N, heads, dtype, rng, device):
    """The mask keyword arguments for genesis (on `device`) and torch from a test case's
    description."""
    g_kw, t_kw = {}, {}
    mask = call.get("mask")
    if mask == "bool2d":
        m = rng.random((L, S)) < 0.3
        m[:, 0] = False
        g_kw["attn_mask"] = genesis.tensor(m, device=device)
        t_kw["attn_mask"] = torch.from_numpy(m)
    elif mask == "float3d":
        m = rng.standard_normal((N * heads, L, S))
        g_kw["attn_mask"] = genesis.tensor(m, dtype=dtype, device=device)
        t_kw["attn_mask"] = torch.from_numpy(m).to(TORCH_DTYPES[dtype])
    elif mask == "causal":
        m = np.triu(np.ones((L, S), dtype=bool), 1)
        g_kw["attn_mask"] = genesis.tensor(m, device=device)
        t_kw["attn_mask"] = torch.from_numpy(m)
    if call.get("padding"):
        m = rng.random((N, S)) < 0.3
        m[:, 1] = False
        g_kw["key_padding_mask"], t_kw["key_padding_mask"] = genesis.tensor(m, device=device), \
            torch.from_numpy(m)
    return g_kw, t_kw


# Inputs with 2048 independent keep/drop draws: single elements, (N, C) channels of (N, C, L),
# (N, C) planes of (N, C, H, W).
_DROPOUT_RATE_SHAPES = {"Dropout": (2048,), "Dropout1d": (32, 64, 3), "Dropout2d": (32, 64, 2, 3)}


@pytest.mark.filterwarnings("ignore:dropout2d. Received a 3D input")
@pytest.mark.parametrize("name", ["Dropout", "Dropout1d", "Dropout2d"])
def test_dropout_train(name, rng, device):
    p = 0.4
    layer = getattr(nn, name)(p)
    x = genesis.tensor(rng.uniform(1, 2, (50, 8, 30)), requires_grad=True, device=device)
    out = layer(x)
    out.sum().backward()
    kept = out.detach().cpu().numpy() != 0
    np.testing.assert_allclose(out.detach().cpu().numpy()[kept],
                               x.detach().cpu().numpy()[kept] / (1 - p), rtol=1e-6)
    np.testing.assert_allclose(x.grad.cpu().numpy(), kept / (1 - p), rtol=1e-6)
    if name != "Dropout":  # a 3-D input is (N, C, L) for both, as PyTorch takes it
        per_channel = kept.reshape(50, 8, -1)
        assert np.all(per_channel.all(-1) | ~per_channel.any(-1))
    assert layer.eval()(x) is x
    assert repr(layer) == f"{name}(p=0.4, inplace=False)"


@pytest.mark.parametrize("name", ["Dropout", "Dropout1d", "Dropout2d"])
def test_dropout_keeps_one_minus_p(name, device):
    """The kept fraction of 2048 independent draws is within 5 standard deviations of 1 - p."""
    p = 0.4
    shape = _DROPOUT_RATE_SHAPES[name]
    kept = getattr(nn, name)(p)(genesis.ones(*shape, device=device)).cpu().numpy() != 0
    masks = kept.reshape(2048, -1)
    assert np.all(masks.all(-1) | ~masks.any(-1))
    assert abs(masks[:, 0].mean() - (1 - p)) < 5 * math.sqrt(p * (1 - p) / 2048)


def test_dropout_reproducible_with_seed(device):
    x = genesis.ones(100, device=device)
    genesis.manual_seed(3)
    a = nn.functional.dropout(x, 0.5).cpu().numpy()
    genesis.manual_seed(3)
    b = nn.functional.dropout(x, 0.5).cpu().numpy()
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(nn.functional.dropout(x, 1.0).cpu().numpy(), 0)


def test_other_layer_errors():
    with pytest.raises(RuntimeError, match="Kernel size can't be greater than actual input"):
        nn.Conv2d(1, 1, 5)(genesis.randn(1, 1, 3, 3))
    with pytest.raises(ValueError, match="Expected more than 1 value per channel"):
        nn.BatchNorm1d(3)(genesis.randn(1, 3))
    with pytest.raises(ValueError, match="divisible by groups"):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="strided convolutions"):
        nn.Conv2d(3, 3, 3, stride=2, padding="same")
    for dtype in (genesis.float32, genesis.uint8, genesis.int16):
        with pytest.raises(RuntimeError, match="Expected tensor for argument #1 'indices' to "
                                               "have one of the following scalar types: Long, "
                                               r"Int; .* \(while checking arguments for "
                                               r"embedding\)"):
            nn.Embedding(3, 2)(genesis.zeros(2, dtype=dtype))
    with pytest.raises(RuntimeError, match="Output size is too small"):
        nn.MaxPool2d(4)(genesis.randn(1, 2, 3, 3))
    with pytest.raises(RuntimeError, match="pad should be at most half"):
        nn.MaxPool2d(2, padding=2)(genesis.randn(1, 2, 6, 6))
    with pytest.raises(ValueError, match="must be divisible by num_groups"):
        nn.GroupNorm(4, 6)


def test_batchnorm_running_stats_over_steps(rng, device):
    gl, tl = make_pair_of_layers("BatchNorm2d", (3,), {"momentum": None}, genesis.float64,
                                 device=device)
    for _ in range(3):
        g_in, t_in = float_inputs([(4, 3, 2, 2)], genesis.float64, rng, device=device)
        gl(*g_in)
        tl(*t_in)
    compare_grads(gl, tl, [], [], genesis.float64)
    assert int(gl.num_batches_tracked) == 3
    gl.reset_running_stats()
    np.testing.assert_array_equal(gl.running_var.cpu().numpy(), 1)


@pytest.mark.parametrize("name, args, fan_in", [("Linear", (30, 20), 30),
                                                ("Conv2d", (6, 8, 3), 54),
                                                ("Conv1d", (4, 5, 2), 8),
                                                ("Bilinear", (20, 10, 7), 20)])
def test_default_init_matches_torch_distribution(name, args, fan_in):
    """Weights and biases are U(-1/sqrt(fan_in), 1/sqrt(fan_in)), as torch's defaults."""
    g, t = getattr(nn, name)(*args), getattr(torch.nn, name)(*args)
    bound = 1 / np.sqrt(fan_in)
    for (gname, gp), (tname, tp) in zip(g.named_parameters(), t.named_parameters()):
        assert gname == tname and tuple(gp.shape) == tuple(tp.shape)
        for values in (gp.detach().numpy(), tp.detach().numpy()):
            assert np.abs(values).max() <= bound
            if values.size >= 100:
                assert np.abs(values).max() >= 0.9 * bound


def test_half_precision_layers_run(device):
    for dtype in (genesis.float16, genesis.bfloat16):
        model = nn.Sequential(nn.Linear(4, 8), nn.LayerNorm(8), nn.GELU(), nn.Linear(8, 2))
        model.to(device, dtype)
        out = model(genesis.randn(3, 4, dtype=dtype, device=device))
        assert out.dtype is dtype and out.shape == (3, 2)
        out.float().sum().backward()
        assert model[0].weight.grad.dtype is dtype


@pytest.mark.parametrize("name, args, shape, dims", [
    ("Linear", (4, 3), (4, 2, 5), (2, 1, 0)),
    ("Conv2d", (3, 2, 3), (2, 7, 6, 3), (0, 3, 1, 2)),
    ("LayerNorm", (5,), (5, 3, 2), (1, 2, 0)),
    ("MaxPool2d", (2,), (6, 2, 4, 3), (1, 3, 0, 2)),
    ("BatchNorm1d", (3,), (3, 8), (1, 0)),
], ids=lambda v: v if isinstance(v, str) else None)
def test_non_contiguous_and_empty_inputs(name, args, shape, dims, rng, device):
    dtype = genesis.float64
    gl, tl = make_pair_of_layers(name, args, {}, dtype, device=device)
    g_base, t_base = float_inputs([shape], dtype, rng, device=device)
    g_out, t_out = run_both(gl, tl, [g_base[0].permute(*dims)], [t_base[0].permute(*dims)], rng)
    assert_close(g_out, t_out, dtype)
    compare_grads(gl, tl, g_base, t_base, dtype)
    if name != "BatchNorm1d":
        empty = [0] + list(t_base[0].permute(*dims).shape[1:])
        assert tuple(gl(genesis.zeros(*empty, dtype=dtype, device=device)).shape) == \
            tuple(tl(torch.zeros(*empty, dtype=torch.float64)).shape)
