"""log_normal_, cauchy_ and geometric_: support, moments within statistical bounds, generator
reproducibility and PyTorch's argument errors."""

import math

import pytest
import torch

import genesis

N = 100_000


def test_log_normal_moments(device):
    x = genesis.empty(N, dtype=genesis.float64, device=device).log_normal_(0.5, 0.25)
    logs = x.log()
    assert bool((x > 0).all())
    assert abs(logs.mean().item() - 0.5) < 5 * 0.25 / math.sqrt(N)
    assert abs(logs.std().item() - 0.25) < 5 * 0.25 / math.sqrt(2 * N)


def test_cauchy_quartiles(device):
    """Median 1 and quartiles 1 -+ 2 of Cauchy(1, 2), each within 5 standard deviations of a
    sample quantile: sqrt(q (1 - q)) / (density at the quantile * sqrt(N))."""
    median, sigma = 1.0, 2.0
    x = genesis.empty(N, device=device).cauchy_(median, sigma)
    levels = genesis.tensor([0.25, 0.5, 0.75], dtype=genesis.float64, device=device)
    got = genesis.quantile(x.double(), levels).tolist()
    for level, value, expected in zip((0.25, 0.5, 0.75), got,
                                      (median - sigma, median, median + sigma)):
        density = 1 / (math.pi * sigma * (1 + ((expected - median) / sigma) ** 2))
        sd = math.sqrt(level * (1 - level)) / (density * math.sqrt(N))
        assert abs(value - expected) < 5 * sd


@pytest.mark.parametrize("dtype", [genesis.int64, genesis.float32, genesis.float64])
def test_geometric_support_and_mean(dtype, device):
    p = 0.25
    k = genesis.empty(N, dtype=dtype, device=device).geometric_(p)
    assert k.dtype is dtype and k.min().item() >= 1
    if dtype.is_floating_point:
        assert bool((k == k.floor()).all())
    sd = math.sqrt(1 - p) / p / math.sqrt(N)
    assert abs(k.double().mean().item() - 1 / p) < 5 * sd


def test_generator_reproducible():
    draws = []
    for _ in range(2):
        gen = genesis.Generator().manual_seed(3)
        draws.append(genesis.empty(5).cauchy_(generator=gen).tolist())
    assert draws[0] == draws[1]


@pytest.mark.parametrize("call,error,message", [
    (lambda lib: lib.empty(2).log_normal_(0.0, 0.0), RuntimeError, "expects std > 0.0"),
    (lambda lib: lib.empty(2).cauchy_(0.0, -1.0), RuntimeError, "expects sigma > 0.0"),
    (lambda lib: lib.empty(2).geometric_(1.5), RuntimeError, r"expects p to be in \(0, 1\)"),
    (lambda lib: lib.empty(2, dtype=lib.int64).log_normal_(), NotImplementedError,
     "not implemented for"),
    (lambda lib: lib.empty(2, dtype=lib.int64).cauchy_(), RuntimeError,
     "Cauchy distribution is a continuous probability distribution. dtype must be a floating "
     "point"),
])
def test_errors_as_torch(call, error, message):
    with pytest.raises(error, match=message):
        call(torch)
    with pytest.raises(error, match=message):
        call(genesis)


def test_torch_namespace_nn_functions_are_functional_ones():
    import genesis.nn.functional as F
    for name in ("conv1d", "conv2d", "layer_norm", "group_norm", "rms_norm"):
        assert getattr(genesis, name) is getattr(F, name)
    x, w = torch.randn(1, 2, 5, 5), torch.randn(3, 2, 3, 3)
    got = genesis.conv2d(genesis.tensor(x.numpy()), genesis.tensor(w.numpy()), padding=1)
    torch.testing.assert_close(torch.from_numpy(got.numpy()), torch.conv2d(x, w, padding=1),
                               rtol=1.3e-6, atol=1e-5)
