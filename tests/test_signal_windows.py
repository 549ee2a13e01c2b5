"""genesis.signal.windows against torch.signal.windows: every window at lengths 0, 1, 2, odd and
even, symmetric and periodic, float32 and float64, with its parameters, the autograd flag and
the errors."""

import pytest
import torch
import torch.signal.windows as TW
from helpers import assert_close

import genesis
import genesis.signal.windows as W

DTYPES = [(genesis.float32, torch.float32), (genesis.float64, torch.float64)]
PARAMS = {"exponential": [{}, {"tau": 2.5}], "gaussian": [{}, {"std": 0.7}],
          "kaiser": [{}, {"beta": 3.5}, {"beta": 0.0}], "general_hamming": [{"alpha": 0.6}],
          "general_cosine": [{"a": [0.5, 0.3, 0.2]}, {"a": (1.0,)}]}
CASES = [(name, kw) for name in W.__all__ for kw in PARAMS.get(name, [{}])]


@pytest.mark.parametrize("dtypes", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("sym", [True, False])
@pytest.mark.parametrize("name, kwargs", CASES, ids=[f"{n}-{k}" for n, k in CASES])
def test_window_matches_torch(name, kwargs, sym, dtypes, device):
    g_dtype, t_dtype = dtypes
    for M in (0, 1, 2, 7, 16):
        got = getattr(W, name)(M, sym=sym, dtype=g_dtype, device=device, **kwargs)
        expected = getattr(TW, name)(M, sym=sym, dtype=t_dtype, **kwargs)
        assert got.device.type == device
        assert_close(got, expected)


def test_exponential_center_and_default_dtype():
    assert_close(W.exponential(9, center=2.0, sym=False), TW.exponential(9, center=2.0, sym=False))
    assert W.hann(4).dtype is genesis.get_default_dtype()


def test_requires_grad_gives_a_differentiable_window():
    window = W.gaussian(5, std=2.0, requires_grad=True)
    expected = TW.gaussian(5, std=2.0, requires_grad=True)
    assert window.requires_grad and window.grad_fn is not None
    assert expected.requires_grad and expected.grad_fn is not None
    window.sum().backward()


@pytest.mark.parametrize("call, error, text", [
    (lambda m: m.blackman(-1), ValueError, "^blackman requires non-negative window length, "
     "got M=-1"),
    (lambda m: m.hann(-1), ValueError, "^general_cosine requires non-negative window length"),
    (lambda m: m.gaussian(4, dtype=m_dtype("int64", m)), ValueError,
     "gaussian expects float32 or float64 dtypes"),
    (lambda m: m.gaussian(4, std=0.0), ValueError, "Standard deviation must be positive"),
    (lambda m: m.exponential(4, tau=-1.0), ValueError, "Tau must be positive"),
    (lambda m: m.exponential(4, center=1.0), ValueError, "Center must be None for symmetric"),
    (lambda m: m.kaiser(4, beta=-1.0), ValueError, "beta must be non-negative"),
    (lambda m: m.general_cosine(4, a=3), TypeError, "Coefficients must be a list/tuple"),
    (lambda m: m.general_cosine(4, a=[]), ValueError, "Coefficients cannot be empty"),
], ids=["negative M", "negative M of hann", "dtype", "std", "tau", "center", "beta", "a type",
        "a empty"])
def test_errors_as_torch(call, error, text):
    for module in (W, TW):
        with pytest.raises(error, match=text):
            call(module)


def m_dtype(name, module):
    return getattr(genesis if module is W else torch, name)
