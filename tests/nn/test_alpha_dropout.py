"""AlphaDropout, FeatureAlphaDropout and Dropout3d: statistics, masks, gradients and errors."""

import numpy as np
import pytest
import torch
import torch.nn as tnn

import genesis
import genesis.nn as nn
import genesis.nn.functional as F

ALPHA = 1.7580993408473766


def _affine(p):
    """(a, value of a dropped element) of alpha dropout with probability p."""
    a = 1 / np.sqrt((ALPHA ** 2 * p + 1) * (1 - p))
    return a, -ALPHA * a + ALPHA * a * p


def test_alpha_dropout_keeps_mean_and_variance():
    x = genesis.randn(400, 500, dtype=genesis.float64, requires_grad=True)
    y = F.alpha_dropout(x, 0.2, training=True)
    assert abs(float(y.mean())) < 0.01 and abs(float(y.std()) - 1) < 0.01
    a, dropped_value = _affine(0.2)
    is_dropped = np.isclose(y.detach().numpy(), dropped_value, rtol=0, atol=1e-12)
    assert 0.18 < is_dropped.mean() < 0.22
    kept = ~is_dropped
    np.testing.assert_allclose(y.detach().numpy()[kept],
                               a * x.detach().numpy()[kept] + ALPHA * a * 0.2, rtol=1e-12)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.where(is_dropped, 0.0, a))


def test_feature_alpha_dropout_and_dropout3d_drop_whole_channels():
    x = genesis.randn(8, 6, 3, 4, 2, dtype=genesis.float64)
    a, dropped_value = _affine(0.5)
    channels = F.feature_alpha_dropout(x, 0.5, training=True).numpy().reshape(48, -1)
    dropped = np.all(np.isclose(channels, dropped_value), axis=1)
    kept = np.all(np.isclose(channels, a * x.numpy().reshape(48, -1) + ALPHA * a * 0.5), axis=1)
    assert np.all(dropped ^ kept) and dropped.any() and kept.any()
    channels = F.dropout3d(x, 0.5, training=True).numpy().reshape(48, -1)
    dropped = np.all(channels == 0, axis=1)
    kept = np.all(np.isclose(channels, 2 * x.numpy().reshape(48, -1)), axis=1)
    assert np.all(dropped ^ kept) and dropped.any() and kept.any()


def test_eval_modules_and_errors():
    x = genesis.randn(2, 3, 4)
    assert F.alpha_dropout(x, 0.5, training=False) is x
    assert nn.AlphaDropout(0.5).eval()(x) is x
    assert repr(nn.AlphaDropout(0.3)) == repr(tnn.AlphaDropout(0.3))
    assert repr(nn.FeatureAlphaDropout()) == repr(tnn.FeatureAlphaDropout())
    assert repr(nn.Dropout3d(0.1, True)) == repr(tnn.Dropout3d(0.1, True))
    with pytest.raises(ValueError, match="between 0 and 1"):
        F.alpha_dropout(x, 1.5, training=True)
    assert float(F.alpha_dropout(x, 1.0, training=True).abs().sum()) == 0


@pytest.mark.parametrize("op, shape, groups", [
    ("dropout2d", (6, 40), 6), ("dropout2d", (5, 4, 3, 2, 2), 5), ("dropout3d", (7, 30), 7),
    ("dropout2d", (3, 4, 5), 3), ("dropout1d", (4, 6), 4), ("dropout2d", (2, 3, 4, 4), 6)],
    ids=["2d_of_2d", "2d_of_5d", "3d_of_2d", "2d_unbatched", "1d_unbatched", "2d_batched"])
def test_feature_dropout_of_any_rank_as_torch(op, shape, groups):
    """Feature dropout of an unbatched input, or (dropout2d/3d, deprecated, with PyTorch's
    warning) of another rank, draws once per index of the leading dim (of the two leading
    dims when batched), as PyTorch's unsqueeze-then-feature-dropout does."""
    x = genesis.randn(*shape, dtype=genesis.float64) + 5
    expected_rank = {"dropout1d": (2, 3), "dropout2d": (3, 4), "dropout3d": (4, 5)}[op]
    if len(shape) in expected_rank:
        y = getattr(F, op)(x, 0.5, training=True)
    else:
        with pytest.warns(UserWarning, match=f"{op}: Received a {len(shape)}-D input to {op}, "
                          "which is deprecated"):
            y = getattr(F, op)(x, 0.5, training=True)
    rows = y.numpy().reshape(groups, -1)
    dropped = np.all(rows == 0, axis=1)
    kept = np.all(np.isclose(rows, 2 * x.numpy().reshape(groups, -1)), axis=1)
    assert np.all(dropped ^ kept)


def test_feature_dropout_rank_errors_as_torch():
    with pytest.raises(RuntimeError, match="dropout1d: Expected 2D or 3D input, but received a "
                       "4D input"):
        F.dropout1d(genesis.ones(1, 2, 3, 4))
    for lib in (genesis, torch):
        with pytest.warns(UserWarning), pytest.raises(RuntimeError, match="Feature dropout "
                                                      "requires at least 2 dimensions"):
            lib.nn.functional.dropout2d(lib.ones(()))
