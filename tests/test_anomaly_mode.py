"""Anomaly detection against PyTorch's: the NaN check names the node and output, the warning
names the node and shows the caller's forward line, set_detect_anomaly restores the setting."""

import warnings

import pytest
import torch

import genesis


def _nan_backward(lib, check_nan=True):
    """A backward whose SqrtBackward0 returns NaN (0 * inf), under detect_anomaly."""
    x = lib.tensor([0.0, 1.0], requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with lib.autograd.detect_anomaly(check_nan=check_nan):
            z = (x.sqrt() * 0).sum()  # the forward line the warning points at
            try:
                z.backward()
                error = None
            except RuntimeError as e:
                error = str(e)
    return error, [str(w.message).split(" (Triggered internally")[0] for w in caught], x


def test_nan_gradient_is_reported_as_torch_reports_it():
    got, got_warnings, _ = _nan_backward(genesis)
    want, want_warnings, _ = _nan_backward(torch)
    assert got == want == "Function 'SqrtBackward0' returned nan values in its 0th output."
    assert got_warnings[0] == want_warnings[0]
    assert got_warnings[1].startswith("Error detected in SqrtBackward0. Traceback of forward "
                                      "call that caused the error:")
    assert "the forward line the warning points at" in got_warnings[1]
    assert "genesis/ops" not in got_warnings[1]


def test_without_nan_check_the_nan_passes():
    error, _, x = _nan_backward(genesis, check_nan=False)
    assert error is None and x.grad.isnan().tolist() == [True, False]
    assert not genesis.is_anomaly_enabled()


def test_error_in_a_backward_names_its_forward():
    class Broken(genesis.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            raise ValueError("broken backward")

    x = genesis.ones(2, requires_grad=True)
    with genesis.autograd.set_detect_anomaly(True):
        y = Broken.apply(x).sum()
        with pytest.warns(UserWarning, match=r"Error detected in BrokenBackward\."):
            with pytest.raises(ValueError, match="broken backward"):
                y.backward()
    assert not genesis.is_anomaly_enabled()


def test_settings_as_torch():
    for lib in (genesis, torch):
        assert not lib.is_anomaly_enabled() and lib.is_anomaly_check_nan_enabled()
        lib.set_anomaly_enabled(True, check_nan=False)
        assert lib.is_anomaly_enabled() and not lib.is_anomaly_check_nan_enabled()
        lib.set_anomaly_enabled(False)
        with lib.autograd.set_detect_anomaly(True):
            assert lib.is_anomaly_enabled()
        assert not lib.is_anomaly_enabled()
