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


def _warnings(fn, x):
    """The messages of the warnings `fn(x, 0.5, training=True)` raises."""
    import warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn(x, 0.5, training=True)
    return [str(w.message) for w in caught]


@pytest.mark.parametrize("name, shape, leading", [
    ("dropout1d", (4, 6, 5), 2), ("dropout1d", (6, 5), 1),
    ("dropout2d", (4, 6, 3, 2), 2), ("dropout2d", (6, 3, 2), 2), ("dropout2d", (40, 30), 2),
    ("dropout2d", (4, 6, 3, 2, 2), 2),
    ("dropout3d", (4, 6, 3, 2, 2), 2), ("dropout3d", (6, 3, 2, 2), 1), ("dropout3d", (30, 5), 1)])
def test_feature_dropout_draws_per_channel_as_torch(name, shape, leading):
    """One draw per (N, C), or per C where PyTorch takes the input as unbatched (dropout2d's 3-D
    input is (N, C, L)); the warnings PyTorch gives for other ranks, word for word."""
    import torch
    x = genesis.rand(*shape, dtype=genesis.float64) + 1
    y = getattr(F, name)(x, 0.5, training=True).numpy()
    channels = (y / (2 * x.numpy())).reshape(int(np.prod(shape[:leading])), -1)
    assert np.all((channels == 0) | (channels == 1))
    assert np.all(channels == channels[:, :1])
    assert 0 < channels[:, 0].mean() < 1
    expected = _warnings(getattr(torch.nn.functional, name), torch.rand(*shape))
    assert _warnings(getattr(F, name), x) == expected


@pytest.mark.filterwarnings("ignore:dropout2d")
def test_feature_dropout_errors_as_torch():
    with pytest.raises(RuntimeError, match=r"dropout1d: Expected 2D or 3D input, but received "
                                           r"a 4D input"):
        F.dropout1d(genesis.ones(2, 3, 4, 5), 0.5)
    with pytest.raises(RuntimeError, match="Feature dropout requires at least 2 dimensions"):
        F.dropout2d(genesis.ones(5), 0.5)
    with pytest.raises(RuntimeError, match="Feature dropout requires at least 2 dimensions"):
        F.dropout3d(genesis.ones(()), 0.5)
    x = genesis.ones(5)
    assert F.dropout2d(x, 0.5, training=False) is x
    assert F.dropout2d(genesis.ones(0, 3), 0.5).shape == (0, 3)
    assert float(F.dropout2d(genesis.ones(2, 3), 1.0).abs().sum()) == 0
