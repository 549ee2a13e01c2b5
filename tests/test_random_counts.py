"""poisson and binomial: each sampler's counts against the distribution's probabilities (a
chi-square test on a fixed generator seed), and PyTorch's dtypes, edge values, broadcasting,
errors and autograd behaviour."""

import math

import numpy as np
import pytest
import torch

import genesis
from helpers import assert_close

N = 40_000


def _chi_square_fits(counts, pmf):
    """Whether the sample `counts` (integers) fit the probabilities `pmf(k)`: Pearson's
    statistic over the values expected at least 20 times (the tails lumped together) below
    df + 6 sqrt(2 df), about 4 standard deviations of its distribution."""
    values, seen = np.unique(counts.astype(np.int64), return_counts=True)
    observed = dict(zip(values.tolist(), seen.tolist()))
    k_max = int(values.max()) + 1
    expected = np.array([pmf(k) for k in range(k_max + 1)]) * len(counts)
    keep = expected >= 20
    cells_e = list(expected[keep]) + [len(counts) - expected[keep].sum()]
    cells_o = [observed.get(k, 0) for k in np.nonzero(keep)[0]]
    cells_o.append(len(counts) - sum(cells_o))
    stat = sum((o - e) ** 2 / e for o, e in zip(cells_o, cells_e) if e > 0)
    df = len(cells_e) - 1
    return stat < df + 6 * math.sqrt(2 * df), (stat, df)


def _poisson_pmf(rate):
    return lambda k: math.exp(k * math.log(rate) - rate - math.lgamma(k + 1))


def _binomial_pmf(n, p):
    def pmf(k):
        if k > n:
            return 0.0
        log_choose = math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
        return math.exp(log_choose + k * math.log(p) + (n - k) * math.log1p(-p))
    return pmf


@pytest.mark.parametrize("rate", [0.3, 4.0, 9.5, 10.0, 37.5, 600.0])
@pytest.mark.parametrize("dtype", [genesis.float32, genesis.float64])
def test_poisson_matches_the_distribution(rate, dtype, device):
    genesis.manual_seed(20261127)
    counts = genesis.poisson(genesis.full((N,), rate, dtype=dtype, device=device))
    assert counts.dtype is dtype
    host = counts.cpu().numpy()
    assert np.all(host == np.floor(host)) and host.min() >= 0
    fits, detail = _chi_square_fits(host, _poisson_pmf(rate))
    assert fits, detail


@pytest.mark.parametrize("n,p", [(5, 0.5), (8, 0.3), (20, 0.45), (40, 0.7), (1000, 0.02),
                                 (300, 0.97), (2000, 0.6)])
@pytest.mark.parametrize("dtype", [genesis.float32, genesis.float64])
def test_binomial_matches_the_distribution(n, p, dtype, device):
    """Both samplers (inversion below n p = 10, BTRS above) and p above 1/2 (folded)."""
    genesis.manual_seed(20261127)
    count = genesis.full((N,), float(n), dtype=dtype, device=device)
    draws = genesis.binomial(count, genesis.full((N,), p, dtype=dtype, device=device))
    assert draws.dtype is dtype
    host = draws.cpu().numpy()
    assert np.all(host == np.floor(host)) and 0 <= host.min() and host.max() <= n
    fits, detail = _chi_square_fits(host, _binomial_pmf(n, p))
    assert fits, detail


def test_poisson_dtypes_edges_and_gradient(device):
    for dtype in (genesis.float16, genesis.bfloat16):
        rates = genesis.tensor([0.0, 2.0, 50.0], device=device).to(dtype)
        out = genesis.poisson(rates)
        assert out.dtype is dtype and out[0].item() == 0
    rates = genesis.tensor([[0.5, 20.0], [3.0, 0.0]], dtype=genesis.float64, device=device,
                           requires_grad=True)
    out = genesis.poisson(rates)
    assert out.shape == rates.shape and out.requires_grad and out[1, 1].item() == 0
    out.sum().backward()
    expected = torch.poisson(torch.ones(2, 2, dtype=torch.float64, requires_grad=True))
    assert_close(rates.grad.cpu(), torch.zeros(2, 2, dtype=torch.float64))
    assert expected.requires_grad
    assert genesis.poisson(genesis.zeros(0, 3, device=device)).shape == (0, 3)


@pytest.mark.parametrize("call,error,message", [
    (lambda lib: lib.poisson(lib.tensor([1, 2])), NotImplementedError, "not implemented for"),
    (lambda lib: lib.poisson(lib.tensor([-1.0, 2.0])), RuntimeError,
     "invalid Poisson rate, expected rate to be non-negative"),
    (lambda lib: lib.poisson(lib.tensor([math.nan])), RuntimeError,
     "invalid Poisson rate, expected rate to be non-negative"),
    (lambda lib: lib.binomial(lib.tensor([3, 4]), lib.tensor([0.5, 0.5])), ValueError,
     "binomial only supports floating-point dtypes for count"),
    (lambda lib: lib.binomial(lib.ones(2), lib.ones(2, dtype=lib.float64)), RuntimeError,
     "Found dtype .* but expected"),
    (lambda lib: lib.binomial(lib.ones(2, dtype=lib.float16), lib.ones(2, dtype=lib.float16)),
     NotImplementedError, "\"binomial_cpu\" not implemented for"),
    (lambda lib: lib.binomial(lib.ones(2), 0.5), TypeError,
     r"binomial\(\): argument 'prob' .*must be Tensor, not float"),
])
def test_errors_as_torch(call, error, message):
    with pytest.raises(error, match=message):
        call(torch)
    with pytest.raises(error, match=message):
        call(genesis)


def test_binomial_edges_broadcasting_and_gradient(device):
    count = genesis.tensor([10.0, 5.0, -3.0, 7.0, 6.0, 4.0], device=device)
    prob = genesis.tensor([1.0, 1.5, 0.5, 0.0, -0.2, math.nan], device=device)
    got = genesis.binomial(count, prob).cpu()
    expected = torch.binomial(torch.tensor([10.0, 5.0, -3.0, 7.0, 6.0, 4.0]),
                              torch.tensor([1.0, 1.5, 0.5, 0.0, -0.2, math.nan]))
    assert_close(got, expected)
    grid = genesis.binomial(genesis.tensor([[10.0, 5.0]], device=device),
                            genesis.tensor([[0.5], [0.2]], device=device))
    assert grid.shape == (2, 2)
    count = genesis.tensor([10.0, 5.0], device=device, requires_grad=True)
    out = genesis.binomial(count, genesis.tensor([0.5, 0.2], device=device))
    assert out.requires_grad
    with pytest.raises(RuntimeError, match="derivative for aten::binomial is not implemented"):
        out.sum().backward()


def test_generator_reproducible():
    draws = []
    for _ in range(2):
        gen = genesis.Generator().manual_seed(3)
        rates = genesis.tensor([0.5, 4.0, 30.0, 500.0])
        draws.append((genesis.poisson(rates, generator=gen).tolist(),
                      genesis.binomial(rates.round(), genesis.full((4,), 0.4),
                                       generator=gen).tolist()))
    assert draws[0] == draws[1]
