"""grad_fn names as PyTorch prints them (`tensor(2.30, grad_fn=<NllLossBackward0>)`) for the
ops a training script prints the results of: losses, linear and convolution layers, norms,
pooling, padding, resampling, attention, recurrent layers, products, softmax, transposes,
squeezes, reductions, std and var, masked fills, repeats, reflected subtraction, max/min and
clamps, with PyTorch's rank-, mode-, reduction- and
overload-dependent names (the CPU build's, where its kernel choice shows in the name)."""

import numpy as np
import pytest
import torch

import genesis

SHAPES = {"2d": (4, 6), "3d": (2, 5, 6), "4d": (2, 3, 8, 8), "1d": (6,), "5d": (2, 3, 4, 4, 4),
          "heads": (2, 4, 5, 8), "seq": (5, 2, 4)}


def _cases(lib, rng):
    F, nn = lib.nn.functional, lib.nn
    lib.manual_seed(0)
    x = {k: rng.standard_normal(s).astype(np.float32) for k, s in SHAPES.items()}

    def t(name, scale=1.0):
        return lib.tensor(x[name] * scale, requires_grad=True)

    labels = lib.tensor(np.array([1, 2, 3, 0]))
    labels4 = lib.tensor(np.arange(128).reshape(2, 8, 8) % 3)
    labels3 = lib.tensor(np.arange(12).reshape(2, 6) % 5)
    bits = lib.tensor((x["2d"] > 0).astype(np.float32))
    lin, lin_nb = nn.Linear(6, 3), nn.Linear(6, 3, bias=False)
    return {
        "linear 1d": lambda: lin(t("1d")), "linear 2d": lambda: lin(t("2d")),
        "linear 3d": lambda: lin(t("3d")), "linear no bias 1d": lambda: lin_nb(t("1d")),
        "linear no bias 2d": lambda: lin_nb(t("2d")),
        "linear no bias 3d": lambda: lin_nb(t("3d")),
        "conv2d": lambda: nn.Conv2d(3, 4, 3)(t("4d")),
        "conv2d unbatched": lambda: nn.Conv2d(3, 4, 3)(t("4d")[0]),
        "conv1d": lambda: nn.Conv1d(5, 2, 3)(t("3d")),
        "conv_transpose2d": lambda: nn.ConvTranspose2d(3, 2, 3)(t("4d")),
        "batch_norm train": lambda: nn.BatchNorm2d(3)(t("4d")),
        "batch_norm eval": lambda: nn.BatchNorm2d(3).eval()(t("4d")),
        "layer_norm": lambda: nn.LayerNorm(6)(t("2d")),
        "group_norm": lambda: F.group_norm(t("4d"), 3),
        "max_pool1d": lambda: F.max_pool1d(t("3d"), 2),
        "max_pool2d": lambda: F.max_pool2d(t("4d"), 2),
        "max_pool2d indices": lambda: F.max_pool2d(t("4d"), 2, return_indices=True)[0],
        "avg_pool2d": lambda: F.avg_pool2d(t("4d"), 2),
        "dot": lambda: t("1d") @ t("1d"), "mv": lambda: t("2d") @ t("1d"),
        "mm": lambda: t("2d") @ t("2d").t(), "bmm": lambda: lib.bmm(t("3d"), t("3d").mT),
        "batched matmul": lambda: t("3d") @ t("3d").mT,
        "softmax": lambda: F.softmax(t("2d"), -1),
        "log_softmax": lambda: F.log_softmax(t("2d"), -1),
        "mse_loss": lambda: F.mse_loss(t("2d"), t("2d", 2)),
        "mse_loss none": lambda: F.mse_loss(t("2d"), t("2d", 2), reduction="none"),
        "smooth_l1_loss": lambda: F.smooth_l1_loss(t("2d"), t("2d", 2)),
        "huber_loss": lambda: F.huber_loss(t("2d"), t("2d", 2)),
        "l1_loss": lambda: F.l1_loss(t("2d"), t("2d", 2)),
        "cross_entropy": lambda: F.cross_entropy(t("2d"), labels),
        "cross_entropy sum": lambda: F.cross_entropy(t("2d"), labels, reduction="sum"),
        "cross_entropy 3d": lambda: F.cross_entropy(t("3d"), labels3),
        "cross_entropy 3d none": lambda: F.cross_entropy(t("3d"), labels3, reduction="none"),
        "cross_entropy 4d": lambda: F.cross_entropy(t("4d"), labels4),
        "cross_entropy smoothed": lambda: F.cross_entropy(t("2d"), labels, label_smoothing=0.1),
        "nll_loss": lambda: F.nll_loss(t("2d"), labels),
        "nll_loss 4d none": lambda: F.nll_loss(t("4d"), labels4, reduction="none"),
        "binary_cross_entropy": lambda: F.binary_cross_entropy(t("2d").sigmoid(), bits),
        "bce with logits": lambda: F.binary_cross_entropy_with_logits(t("2d"), bits),
        "relu": lambda: F.relu(t("2d")), "gelu": lambda: F.gelu(t("2d")),
        "dropout": lambda: F.dropout(t("2d"), 0.5), "sum": lambda: t("2d").sum(),
        "mean": lambda: t("2d").mean(), "embedding": lambda: nn.Embedding(10, 6)(labels),
        "t": lambda: t("2d").t(), "t 1d": lambda: t("1d").t(),
        "squeeze": lambda: t("2d")[None].squeeze(), "squeeze dim": lambda: t("2d")[None].squeeze(0),
        "squeeze dims": lambda: t("2d")[None].squeeze((0,)), "max": lambda: t("2d").max(),
        "max dim": lambda: t("2d").max(1).values, "min": lambda: lib.min(t("2d")),
        "min dim": lambda: t("2d").min(0)[0], "clamp": lambda: t("2d").clamp(-0.5, 0.5),
        "clamp tensor": lambda: t("2d").clamp(lib.zeros(6)),
        "clamp_min": lambda: t("2d").clamp_min(0), "clamp_max": lambda: lib.clamp_max(t("2d"), 0),
        "clamp_min tensor": lambda: t("2d").clamp_min(lib.zeros(6)),
        **_layer_cases(lib, t),
    }


def _layer_cases(lib, t):
    """Padding, resampling, adaptive pools, attention, recurrent layers and a few reshaping and
    reducing ops, each in the forms whose names differ in PyTorch."""
    F, nn = lib.nn.functional, lib.nn
    pads = {1: ("3d", (1, 2)), 2: ("4d", (1, 2, 2, 1)), 3: ("5d", (1, 1, 1, 1, 1, 1))}
    cases = {f"pad {mode} {n}d": (lambda mode, x, amounts: lambda: F.pad(t(x), amounts, mode))(
        mode, *pads[n]) for mode in ("reflect", "replicate", "circular") for n in pads}
    spatial = {1: "3d", 2: "4d", 3: "5d"}
    for mode, dims in [("nearest", 1), ("nearest", 2), ("nearest", 3), ("nearest-exact", 2),
                       ("linear", 1), ("bilinear", 2), ("bicubic", 2), ("trilinear", 3),
                       ("area", 1), ("area", 2)]:
        cases[f"interpolate {mode} {dims}d"] = (lambda mode, x: lambda: F.interpolate(
            t(x), scale_factor=0.5 if mode == "area" else 2, mode=mode))(mode, spatial[dims])
    for pool in ("avg", "max"):
        for dims, x in spatial.items():
            fn = getattr(F, f"adaptive_{pool}_pool{dims}d")
            cases[f"adaptive_{pool}_pool{dims}d"] = (lambda fn, x: lambda: fn(t(x), 3))(fn, x)
            cases[f"adaptive_{pool}_pool{dims}d to 1"] = (lambda fn, x: lambda: fn(t(x), 1))(fn, x)
    heads = (lambda: t("heads"), lambda: t("heads"), lambda: t("heads"))
    sdpa = F.scaled_dot_product_attention
    return {
        **cases,
        "pad constant": lambda: F.pad(t("4d"), (1, 2)),
        "ZeroPad2d": lambda: nn.ZeroPad2d(1)(t("4d")),
        "pad reflect unbatched": lambda: F.pad(t("3d"), (1, 1, 2, 2), mode="reflect"),
        "interpolate bilinear aligned": lambda: F.interpolate(t("4d"), size=(5, 7),
                                                              mode="bilinear", align_corners=True),
        "interpolate bilinear antialias": lambda: F.interpolate(t("4d"), size=(3, 3),
                                                                mode="bilinear", antialias=True),
        "interpolate bicubic antialias": lambda: F.interpolate(t("4d"), size=(3, 3),
                                                               mode="bicubic", antialias=True),
        "Upsample": lambda: nn.Upsample(scale_factor=2)(t("4d")),
        "adaptive_avg_pool2d unbatched": lambda: F.adaptive_avg_pool2d(t("3d"), 2),
        "adaptive_max_pool2d indices": lambda: F.adaptive_max_pool2d(t("4d"), 3, True)[0],
        "fractional_max_pool2d": lambda: F.fractional_max_pool2d(t("4d"), 2, output_size=3),
        "sdpa": lambda: sdpa(*(x() for x in heads)),
        "sdpa causal": lambda: sdpa(*(x() for x in heads), is_causal=True),
        "sdpa bool mask": lambda: sdpa(*(x() for x in heads),
                                       attn_mask=lib.ones(5, 5, dtype=lib.bool).tril()),
        "sdpa grouped": lambda: sdpa(t("heads"), t("heads")[:, :2], t("heads")[:, :2],
                                     enable_gqa=True),
        "sdpa 3d": lambda: sdpa(t("3d"), t("3d"), t("3d")),
        "sdpa dropout": lambda: sdpa(*(x() for x in heads), dropout_p=0.5),
        "rnn": lambda: nn.RNN(4, 3)(t("seq"))[0], "rnn h": lambda: nn.RNN(4, 3, 2)(t("seq"))[1],
        "gru": lambda: nn.GRU(4, 3)(t("seq"))[0], "gru h": lambda: nn.GRU(4, 3)(t("seq"))[1],
        "gru bidirectional": lambda: nn.GRU(4, 3, bidirectional=True)(t("seq"))[0],
        "lstm float64": lambda: nn.LSTM(4, 3).double()(t("seq").double())[0],
        "lstm h": lambda: nn.LSTM(4, 3)(t("seq"))[1][0],
        "lstm c": lambda: nn.LSTM(4, 3)(t("seq"))[1][1],
        "lstm batch_first": lambda: nn.LSTM(4, 3, batch_first=True)(t("seq"))[0],
        "gru batch_first": lambda: nn.GRU(4, 3, batch_first=True)(t("seq"))[0],
        "rnn batch_first unbatched": lambda: nn.RNN(4, 3, batch_first=True)(t("seq")[0])[0],
        "gru cell": lambda: nn.GRUCell(4, 3)(t("seq")[0]),
        "stack": lambda: lib.stack([t("2d"), t("2d")], 1), "sum dim": lambda: t("2d").sum(1),
        "mean dims": lambda: t("2d").mean((0, 1)), "transpose": lambda: t("3d").transpose(0, 2),
        "std": lambda: t("2d").std(-1, keepdim=True), "var": lambda: t("2d").var(1),
        "std_mean mean": lambda: lib.std_mean(t("2d"), 1)[1],
        "var_mean var": lambda: lib.var_mean(t("2d"))[0],
        "masked_fill": lambda: t("2d").masked_fill(t("2d", 2) > 0, -1e9),
        "masked_fill tensor": lambda: t("2d").masked_fill(t("2d", 2) > 0, lib.tensor(1.0)),
        "masked_fill_": lambda: (t("2d") * 1).masked_fill_(t("2d", 2) > 0, 0.0),
        "repeat": lambda: t("2d").repeat(2, 1), "tile": lambda: t("2d").tile(2),
        "rsub": lambda: 1 - t("2d"), "rsub tensors": lambda: lib.rsub(t("2d"), t("2d", 2)),
        **_indexing_and_elementwise_cases(lib, t),
        "norm": lambda: t("2d").norm(dim=1), "unfold": lambda: F.unfold(t("4d"), 3),
        "fold": lambda: F.fold(t("2d")[None], (3, 4), 2),
        "pixel_shuffle": lambda: F.pixel_shuffle(t("4d")[:, :2].reshape(2, 4, 4, 8), 2),
        "pixel_unshuffle": lambda: F.pixel_unshuffle(t("4d"), 2),
        "channel_shuffle": lambda: F.channel_shuffle(t("4d")[:, :2], 2),
        "threshold": lambda: F.threshold(t("2d"), 0.1, 2.0), "celu": lambda: F.celu(t("2d")),
        **_activation_and_loss_cases(lib, t),
    }


def _indexing_and_elementwise_cases(lib, t):
    """Selections, scans, writes through views and the binary ops with overload-dependent
    names (rounded division, pow of a tensor or a number, floor division's NotImplemented)."""
    index = lib.tensor(np.array([0, 2]))

    def written(view_of):
        out = t("2d") * 1
        view_of(out).mul_(2)
        return out

    def assigned():
        out = lib.zeros(4, 6)
        out[1] = t("1d")
        return out

    return {
        "tril": lambda: t("2d").tril(), "triu": lambda: lib.triu(t("2d"), 1),
        "cumsum": lambda: t("2d").cumsum(1), "cumprod": lambda: t("2d").cumprod(0),
        "logsumexp": lambda: t("2d").logsumexp(1), "amax": lambda: t("2d").amax(1),
        "median": lambda: t("2d").median(), "median dim": lambda: t("2d").median(1)[0],
        "kthvalue": lambda: t("2d").kthvalue(2, 1)[0], "trace": lambda: t("2d").trace(),
        "index_select": lambda: t("2d").index_select(1, index),
        "index_add": lambda: lib.zeros(4, 6).index_add(1, index, t("2d")[:, :2]),
        "masked_scatter": lambda: lib.zeros(4, 6).masked_scatter(t("2d", 2) > 0, t("2d")),
        "narrow": lambda: t("2d").narrow(1, 1, 2), "unbind": lambda: t("2d").unbind(1)[2],
        "reshape copy": lambda: t("2d").t().reshape(-1), "setitem": assigned,
        "write through view": lambda: written(lambda x: x[:, 0]),
        "addmm": lambda: lib.addmm(t("1d"), t("2d").t(), t("2d")),
        "maximum": lambda: lib.maximum(t("2d"), t("2d", 2)),
        "minimum": lambda: t("2d").minimum(t("2d", 2)),
        "atan2": lambda: lib.atan2(t("2d"), t("2d", 2)),
        "hypot": lambda: lib.hypot(t("2d"), t("2d", 2)),
        "addcmul": lambda: lib.addcmul(t("2d"), t("2d"), t("2d", 2)),
        "addcdiv": lambda: lib.addcdiv(t("2d"), t("2d"), t("2d", 2)),
        "square": lambda: t("2d").square(),
        "div floor": lambda: lib.div(t("2d"), 2, rounding_mode="floor"),
        "pow tensors": lambda: t("2d").abs().pow(t("2d", 2)),
        "pow of a number": lambda: 2 ** t("2d"), "floor_divide": lambda: t("2d") // 2,
        "cdist": lambda: lib.cdist(t("2d"), t("2d", 2)),
    }


def _activation_and_loss_cases(lib, t):
    """In-place activations (their own overloads), activations and losses PyTorch runs as one
    op, and the vision and distance functions."""
    F, nn = lib.nn.functional, lib.nn
    inplace = {name: (lambda fn: lambda: fn(t("2d") * 1))(getattr(F, name))
               for name in ("elu_", "selu_", "celu_", "leaky_relu_", "rrelu_")}
    signs = lib.tensor(np.sign(np.arange(24).reshape(4, 6) % 3 - 1.0).astype(np.float32))
    bags = lib.tensor(np.arange(8).reshape(2, 4) % 5)
    return {
        **inplace,
        "threshold_": lambda: F.threshold_(t("2d") * 1, 0.1, 2.0),
        "elu_ on a view": lambda: F.elu_((t("2d") * 1)[1:]),
        "rrelu": lambda: F.rrelu(t("2d")), "rrelu train": lambda: F.rrelu(t("2d"), training=True),
        "glu": lambda: F.glu(t("2d")), "gelu tanh": lambda: F.gelu(t("2d"), approximate="tanh"),
        "prelu": lambda: nn.PReLU()(t("2d")),
        "dropout3d unbatched": lambda: F.dropout3d(t("4d"), 0.5),
        "soft_margin_loss": lambda: F.soft_margin_loss(t("2d"), signs),
        "multi_margin_loss none": lambda: F.multi_margin_loss(t("2d"), lib.tensor([1, 2, 3, 0]),
                                                              reduction="none"),
        "multilabel_margin_loss": lambda: F.multilabel_margin_loss(
            t("2d"), lib.tensor(np.array([[1, 2, -1, 0, 0, 0]] * 4))),
        "ctc_loss none": lambda: F.ctc_loss(
            F.log_softmax(t("3d").reshape(5, 2, 6), 2), lib.tensor(np.array([[1, 2], [3, 1]])),
            lib.tensor(np.array([5, 5])), lib.tensor(np.array([2, 2])), reduction="none"),
        "smooth_l1_loss beta 0": lambda: F.smooth_l1_loss(t("2d"), t("2d", 2), beta=0.0),
        "cross_entropy probabilities": lambda: F.cross_entropy(t("2d"), F.softmax(t("2d"), 1)),
        "embedding_bag": lambda: F.embedding_bag(bags, t("2d")[:, :5].t().contiguous()),
        "embedding_bag max": lambda: F.embedding_bag(bags, t("2d")[:, :5].t().contiguous(),
                                                     mode="max"),
        "affine_grid": lambda: F.affine_grid(t("1d").reshape(1, 2, 3), (1, 3, 4, 4),
                                             align_corners=False),
        "grid_sample": lambda: F.grid_sample(t("4d")[:1], t("1d")[:4].reshape(1, 1, 2, 2).tanh(),
                                             align_corners=False),
        "pdist": lambda: F.pdist(t("2d")),
        "pairwise_distance": lambda: F.pairwise_distance(t("2d"), t("2d", 2)),
        "cosine_similarity": lambda: F.cosine_similarity(t("2d"), t("2d", 2)),
        "conv_tbc": lambda: F.conv_tbc(t("3d"), t("2d").t().reshape(1, 6, 4), t("1d")[:4]),
        "max_unpool2d": lambda: F.max_unpool2d(*F.max_pool2d(t("4d"), 2, return_indices=True), 2),
        "max_unpool1d": lambda: F.max_unpool1d(*F.max_pool1d(t("3d"), 2, return_indices=True), 2),
        "attention weights": lambda: nn.MultiheadAttention(6, 2)(t("3d"), t("3d"), t("3d"))[1],
    }


@pytest.mark.parametrize("case", list(_cases(genesis, np.random.default_rng(0))))
def test_node_name_matches_torch(case, rng):
    seed = int(rng.integers(1 << 31))
    want = _cases(torch, np.random.default_rng(seed))[case]().grad_fn
    got = _cases(genesis, np.random.default_rng(seed))[case]().grad_fn
    assert got.name() == type(want).__name__
    assert repr(got).startswith(f"<{type(want).__name__} object at 0x")
