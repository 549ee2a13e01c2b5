"""grad_fn names as PyTorch prints them (`tensor(2.30, grad_fn=<NllLossBackward0>)`) for the
ops a training script prints the results of: losses, linear and convolution layers, norms,
pooling, products, softmax, transposes, squeezes, max/min and clamps, with PyTorch's rank-,
reduction- and overload-dependent names."""

import numpy as np
import pytest
import torch

import genesis

SHAPES = {"2d": (4, 6), "3d": (2, 5, 6), "4d": (2, 3, 8, 8), "1d": (6,)}


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
    }


@pytest.mark.parametrize("case", list(_cases(genesis, np.random.default_rng(0))))
def test_node_name_matches_torch(case, rng):
    seed = int(rng.integers(1 << 31))
    want = _cases(torch, np.random.default_rng(seed))[case]().grad_fn
    got = _cases(genesis, np.random.default_rng(seed))[case]().grad_fn
    assert got.name() == type(want).__name__
    assert repr(got).startswith(f"<{type(want).__name__} object at 0x")
