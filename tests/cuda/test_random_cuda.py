"""Random numbers on "cuda" (the Philox kernels): distributions, reproducibility, layouts, dropout.

The numbers are not torch's (another generator), so the checks are statistical, with fixed
sample sizes and thresholds that a correct generator exceeds with probability below ~1e-7 each:
mean and variance z-tests at 6 standard errors, Kolmogorov-Smirnov distances against the DKW
bound sqrt(ln(2 / 1e-7) / 2n), per-bin frequency z-tests at 6.5 standard errors, lag
correlations at 6 / sqrt(n). Half types are generated in float32 and rounded once: their checks
add the rounding's deterministic effect (at most the dtype's eps) to the bounds.

Skipped without a GPU. GENESIS_RANDOM_TEST_DEVICE=cpu runs the device-agnostic cases on the CPU
(host draws), to check the tests themselves.
"""

import math
import os

import ml_dtypes
import numpy as np
import pytest
from helpers import skip_no_cuda

import genesis
import genesis.nn.functional as F

DEVICE = os.environ.get("GENESIS_RANDOM_TEST_DEVICE", "cuda")
pytestmark = [skip_no_cuda] if DEVICE == "cuda" else []
on_cuda_only = pytest.mark.skipif(DEVICE != "cuda", reason="Philox-specific")

FLOATS = [genesis.float32, genesis.float64, genesis.float16, genesis.bfloat16]
N = 1 << 20
KS_BOUND = math.sqrt(math.log(2 / 1e-7) / (2 * N))
_erf = np.vectorize(math.erf, otypes=[np.float64])


def host(t):
    return np.asarray(t.detach().to("cpu").float().numpy() if t.dtype is genesis.bfloat16
                      else t.detach().to("cpu").numpy()).astype(np.float64)


def slack(dtype):
    """What rounding to `dtype` can move a mean, a variance or a CDF (0 beyond float32)."""
    return float(ml_dtypes.finfo(dtype.numpy_dtype).eps) if dtype.itemsize == 2 else 1e-6


def check_moments(x, mean, var, kurtosis_var, dtype):
    """z-tests of the sample mean and variance; kurtosis_var = mu4 - var**2."""
    n = x.size
    assert abs(x.mean() - mean) <= 6 * math.sqrt(var / n) + slack(dtype) * max(1, abs(mean)), \
        (x.mean(), mean)
    assert abs(x.var() - var) <= 6 * math.sqrt(kurtosis_var / n) + 2 * slack(dtype) * max(1, var), \
        (x.var(), var)


def ks_distance(x, cdf):
    x = np.sort(x)
    f = cdf(x)
    i = np.arange(1, x.size + 1) / x.size
    return max(np.max(i - f), np.max(f - (i - 1.0 / x.size)))


def normal_cdf(x):
    return 0.5 * (1 + _erf(x / math.sqrt(2)))


def check_ks(x, cdf, dtype):
    assert ks_distance(x, cdf) <= KS_BOUND + slack(dtype)


def check_uncorrelated(x, lags=(1, 255, 256, 512, 768, 1024)):
    """Lag correlations of a sample: within a counter's four words (lags of 256 and 512 in a
    1024-element block) and between neighbours."""
    x = (x - x.mean()) / x.std()
    for lag in lags:
        r = np.mean(x[:-lag] * x[lag:])
        assert abs(r) < 6 / math.sqrt(x.size - lag), (lag, r)


@pytest.mark.parametrize("dtype", FLOATS)
def test_rand(dtype):
    x = host(genesis.rand(N, dtype=dtype, device=DEVICE))
    assert x.min() >= 0 and x.max() < 1
    check_moments(x, 0.5, 1 / 12, 1 / 80 - 1 / 144, dtype)
    check_ks(x, lambda v: v, dtype)
    if dtype is genesis.float32:
        check_uncorrelated(x)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("low,high", [(-3.0, 5.0), (100.0, 100.5)])
def test_uniform_(dtype, low, high):
    t = genesis.empty(N, dtype=dtype, device=DEVICE).uniform_(low, high)
    x = host(t)
    assert x.min() >= low and x.max() < high
    if high < 100 or dtype.itemsize > 2:
        check_ks((x - low) / (high - low), lambda v: v, dtype)


@pytest.mark.parametrize("dtype", FLOATS)
def test_randn(dtype):
    x = host(genesis.randn(N, dtype=dtype, device=DEVICE))
    check_moments(x, 0.0, 1.0, 2.0, dtype)
    check_ks(x, normal_cdf, dtype)
    p3 = 0.0026997960632601866
    tail = np.mean(np.abs(x) > 3)
    assert abs(tail - p3) < 6 * math.sqrt(p3 * (1 - p3) / N) + slack(dtype)
    if dtype is genesis.float32:
        check_uncorrelated(x)
        check_uncorrelated(x ** 2)


@pytest.mark.parametrize("dtype", [genesis.float32, genesis.float64])
def test_normal_with_mean_and_std(dtype):
    x = host(genesis.normal(3.0, 0.5, (N,), dtype=dtype, device=DEVICE))
    check_moments(x, 3.0, 0.25, 2 * 0.25 ** 2, dtype)
    y = host(genesis.empty(N, dtype=dtype, device=DEVICE).normal_(-2.0, 4.0))
    check_ks((y + 2.0) / 4.0, normal_cdf, dtype)


def test_normal_with_tensor_mean_and_std():
    mean = genesis.tensor([[-5.0], [0.0], [5.0]], device=DEVICE)
    std = genesis.tensor([0.5, 1.0, 2.0, 0.0], device=DEVICE)
    x = host(genesis.normal(mean.expand(3, 4).contiguous().unsqueeze(0).expand(20000, 3, 4),
                            std))
    assert x.shape == (20000, 3, 4)
    m, s = host(mean).reshape(1, 3, 1), host(std).reshape(1, 1, 4)
    z = np.where(s > 0, (x - m) / np.where(s > 0, s, 1), 0)
    assert np.all(x[:, :, 3] == m[0, :, 0])
    for col in range(3):
        sample = z[:, :, col].reshape(-1)
        assert abs(sample.mean()) < 6 / math.sqrt(sample.size)
        assert abs(sample.var() - 1) < 6 * math.sqrt(2 / sample.size)


@pytest.mark.parametrize("dtype", FLOATS)
def test_exponential_(dtype):
    lambd = 2.5
    x = host(genesis.empty(N, dtype=dtype, device=DEVICE).exponential_(lambd))
    assert x.min() >= 0
    check_moments(x * lambd, 1.0, 1.0, 23.0, dtype)
    check_ks(x * lambd, lambda v: 1 - np.exp(-v), dtype)


def check_bins(values, low, high):
    """Each of the high - low values appears with frequency 1 / (high - low)."""
    k = high - low
    assert values.min() >= low and values.max() < high
    counts = np.bincount((values - low).astype(np.int64), minlength=k)
    p = 1.0 / k
    z = np.abs(counts - values.size * p) / math.sqrt(values.size * p * (1 - p))
    assert z.max() < 6.5, (z.max(), counts)


@pytest.mark.parametrize("dtype", [genesis.int64, genesis.int32, genesis.int16, genesis.int8,
                                   genesis.uint8, genesis.float32, genesis.float16])
def test_randint_small_ranges(dtype):
    low, high = (0, 7) if dtype is genesis.uint8 else (-3, 10)
    x = host(genesis.randint(low, high, (N,), dtype=dtype, device=DEVICE))
    check_bins(x, low, high)


@pytest.mark.parametrize("low,high", [(0, 2 ** 40), (-2 ** 62, 2 ** 62), (-2 ** 63, 2 ** 63 - 1),
                                      (10 ** 9, 10 ** 9 + 3 * 2 ** 31)])
def test_randint_wide_ranges(low, high):
    t = genesis.randint(low, high, (N,), device=DEVICE)
    raw = t.to("cpu").numpy()
    assert raw.dtype == np.int64
    assert int(raw.min()) >= low and int(raw.max()) < high
    unit = (raw.astype(np.float64) - float(low)) / float(high - low)
    check_moments(unit, 0.5, 1 / 12, 1 / 80 - 1 / 144, genesis.float64)
    check_ks(unit, lambda v: v, genesis.float64)
    bits = (raw.view(np.uint64) >> np.uint64(0)) & np.uint64(1)
    assert abs(bits.mean() - 0.5) < 6 * math.sqrt(0.25 / N)


@pytest.mark.parametrize("dtype,top", [(genesis.uint8, 256), (genesis.bool, 2),
                                       (genesis.int8, 128), (genesis.float16, 2 ** 11 + 1),
                                       (genesis.bfloat16, 2 ** 8 + 1)])
def test_random_without_bounds_covers_the_dtype(dtype, top):
    x = host(genesis.empty(N, dtype=dtype, device=DEVICE).random_())
    check_bins(x, 0, top)


def test_random_with_one_bound():
    check_bins(host(genesis.zeros(N, dtype=genesis.int64, device=DEVICE).random_(5)), 0, 5)
    check_bins(host(genesis.zeros(N, dtype=genesis.int64, device=DEVICE).random_(-4, 2)), -4, 2)


@pytest.mark.parametrize("dtype", [genesis.float32, genesis.float64, genesis.float16,
                                   genesis.bfloat16])
@pytest.mark.parametrize("p", [0.0, 0.03, 0.5, 0.9, 1.0])
def test_bernoulli_scalar(dtype, p):
    x = genesis.empty(N, dtype=dtype, device=DEVICE).bernoulli_(p)
    assert x.dtype is dtype
    v = host(x)
    assert set(np.unique(v)) <= {0.0, 1.0}
    assert abs(v.mean() - p) <= 6 * math.sqrt(p * (1 - p) / N) + 1e-6


@pytest.mark.parametrize("dtype", [genesis.float32, genesis.float64, genesis.bfloat16])
def test_bernoulli_tensor_probabilities(dtype):
    probs = genesis.tensor([0.0, 0.1, 0.25, 0.5, 0.75, 0.99, 1.0], dtype=dtype, device=DEVICE)
    rows = 1 << 17
    out = genesis.bernoulli(probs.expand(rows, 7))
    assert out.dtype is dtype and tuple(out.shape) == (rows, 7)
    freq = host(out).mean(axis=0)
    p = host(probs)
    assert np.all(np.abs(freq - p) <= 6 * np.sqrt(p * (1 - p) / rows) + 1e-6), freq
    transposed = genesis.bernoulli(probs.expand(rows, 7).t())
    assert np.all(np.abs(host(transposed).mean(axis=1) - p) <= 6 * np.sqrt(p * (1 - p) / rows)
                  + 1e-6)


def test_bernoulli_errors():
    with pytest.raises(RuntimeError):
        genesis.bernoulli(genesis.tensor([0.5, 1.5], device=DEVICE))
    with pytest.raises(RuntimeError):
        genesis.empty(3, device=DEVICE).bernoulli_(-0.1)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_dropout_forward(dtype, p):
    x = genesis.rand(N, dtype=dtype, device=DEVICE) + 1.0
    y = F.dropout(x, p)
    assert y.dtype is dtype and y.device == x.device
    xv, yv = host(x), host(y)
    kept = yv != 0
    assert abs(kept.mean() - (1 - p)) < 6 * math.sqrt(p * (1 - p) / N)
    scale = 1.0 / (1.0 - p)
    expected = (xv[kept].astype(np.float64) * scale)
    tol = slack(dtype) if dtype.itemsize == 2 else 1e-6
    np.testing.assert_allclose(yv[kept], expected, rtol=tol)
    assert np.all(host(F.dropout(x, p, training=False)) == xv)


@pytest.mark.parametrize("dtype", [genesis.float32, genesis.float16, genesis.float64])
def test_dropout_gradient_is_mask_times_scale(dtype):
    p = 0.4
    x = (genesis.rand(37, 53, dtype=dtype, device=DEVICE) + 1.0).requires_grad_(True)
    y = F.dropout(x.t(), p)
    g = genesis.randn(53, 37, dtype=dtype, device=DEVICE)
    y.backward(g)
    mask = (host(y) != 0).T
    expected = np.where(mask, host(g).T * (1.0 / (1.0 - p)), 0.0)
    tol = slack(dtype) if dtype.itemsize == 2 else 1e-6
    np.testing.assert_allclose(host(x.grad), expected, rtol=tol, atol=tol)


def test_dropout_gradient_through_a_broadcast_gradient():
    x = genesis.ones(300, 7, device=DEVICE, requires_grad=True)
    y = F.dropout(x, 0.5)
    y.sum().backward()
    np.testing.assert_array_equal(host(x.grad), host(y))


@on_cuda_only
def test_fused_dropout_gradcheck_and_gradgradcheck():
    from genesis.nn.functional.dropout import _FusedDropout
    x = genesis.randn(6, 5, dtype=genesis.float64, device=DEVICE, requires_grad=True)
    fn = lambda t: _FusedDropout.apply(t, 0.3, 1234, 56)
    assert genesis.autograd.gradcheck(fn, (x,))
    assert genesis.autograd.gradgradcheck(fn, (x,))


def test_dropout_edge_cases():
    x = genesis.randn(50, device=DEVICE)
    assert np.all(host(F.dropout(x, 1.0)) == 0)
    assert F.dropout(x, 0.0) is x
    assert tuple(F.dropout(genesis.empty(0, 3, device=DEVICE), 0.5).shape) == (0, 3)
    z = genesis.randn((), device=DEVICE)
    assert host(F.dropout(z, 0.5)).shape == ()
    y = x.clone()
    F.dropout(y, 0.5, inplace=True)
    assert set(np.unique(host(y) / host(x)).round(5)) <= {0.0, 2.0}


def cuda_state():
    return genesis.cuda.get_rng_state() if DEVICE == "cuda" else genesis.get_rng_state()


def set_cuda_state(state):
    if DEVICE == "cuda":
        genesis.cuda.set_rng_state(state)
    else:
        genesis.set_rng_state(state)


DRAWS = {
    "rand": lambda **kw: genesis.rand(1000, 3, device=DEVICE, **kw),
    "rand_half": lambda **kw: genesis.rand(777, dtype=genesis.float16, device=DEVICE, **kw),
    "randn": lambda **kw: genesis.randn(2049, device=DEVICE, **kw),
    "randn_f64": lambda **kw: genesis.randn(1025, dtype=genesis.float64, device=DEVICE, **kw),
    "randint": lambda **kw: genesis.randint(0, 2 ** 40, (999,), device=DEVICE, **kw),
    "normal": lambda **kw: genesis.normal(1.0, 2.0, (513,), device=DEVICE, **kw),
    "bernoulli": lambda **kw: genesis.bernoulli(genesis.full((4097,), 0.5, device=DEVICE), **kw),
    "randperm": lambda **kw: genesis.randperm(1000, device=DEVICE, **kw),
    "exponential_": lambda **kw: genesis.empty(300, device=DEVICE).exponential_(**kw),
}


@pytest.mark.parametrize("name", list(DRAWS))
def test_manual_seed_reproduces(name):
    draw = DRAWS[name]
    genesis.manual_seed(2024)
    first, second = host(draw()), host(draw())
    genesis.manual_seed(2024)
    np.testing.assert_array_equal(host(draw()), first)
    np.testing.assert_array_equal(host(draw()), second)
    assert not np.array_equal(first, second)
    genesis.manual_seed(2025)
    assert not np.array_equal(host(draw()), first)


@pytest.mark.parametrize("name", list(DRAWS))
def test_rng_state_round_trip(name):
    draw = DRAWS[name]
    state = cuda_state()
    a = host(draw())
    set_cuda_state(state)
    np.testing.assert_array_equal(host(draw()), a)


@pytest.mark.parametrize("name", ["rand", "randn", "randint", "randperm", "exponential_"])
def test_generator_argument(name):
    draw = DRAWS[name]
    gen = genesis.Generator(device=DEVICE).manual_seed(7)
    a = host(draw(generator=gen))
    genesis.manual_seed(7)
    np.testing.assert_array_equal(host(draw()), a)
    np.testing.assert_array_equal(host(draw(generator=genesis.Generator(DEVICE).manual_seed(7))),
                                  a)
    assert not np.array_equal(host(draw(generator=gen)), a)


@on_cuda_only
def test_cuda_draws_reject_a_cpu_generator():
    with pytest.raises(RuntimeError, match="Expected a 'cuda' device type"):
        genesis.rand(3, device="cuda", generator=genesis.Generator())


@on_cuda_only
def test_cuda_manual_seed_seeds_the_device_not_the_cpu():
    genesis.manual_seed(1)
    cpu_first = genesis.rand(5).tolist()
    genesis.manual_seed(1)
    genesis.cuda.manual_seed(99)
    assert genesis.rand(5).tolist() == cpu_first
    a = host(genesis.rand(100, device="cuda"))
    genesis.cuda.manual_seed_all(99)
    np.testing.assert_array_equal(host(genesis.rand(100, device="cuda")), a)
    assert genesis.cuda.initial_seed() == 99


@on_cuda_only
def test_consecutive_draws_use_fresh_counters():
    a = host(genesis.rand(5000, dtype=genesis.float64, device="cuda"))
    b = host(genesis.rand(5000, dtype=genesis.float64, device="cuda"))
    assert not set(a.tolist()) & set(b.tolist())
    assert len(set(a.tolist())) == a.size


@on_cuda_only
@pytest.mark.parametrize("dtype", [genesis.float32, genesis.float64, genesis.int64])
def test_a_draw_is_the_prefix_of_a_longer_one(dtype):
    """Values depend on the element index only (not on the size): odd sizes and block tails."""
    state = genesis.cuda.get_rng_state()
    long = host(genesis.randint(0, 2 ** 50, (8192,), dtype=dtype, device="cuda")
                if dtype is genesis.int64 else genesis.rand(8192, dtype=dtype, device="cuda"))
    for n in (1, 3, 255, 1023, 1025, 4097):
        genesis.cuda.set_rng_state(state)
        short = host(genesis.randint(0, 2 ** 50, (n,), dtype=dtype, device="cuda")
                     if dtype is genesis.int64 else genesis.rand(n, dtype=dtype, device="cuda"))
        np.testing.assert_array_equal(short, long[:n])


@on_cuda_only
@pytest.mark.parametrize("layout", ["transposed", "stepped", "expanded_base", "many_dims"])
@pytest.mark.parametrize("fill", ["uniform_", "normal_", "random_", "bernoulli_"])
def test_fill_of_a_view_writes_only_the_view(layout, fill):
    args = {"uniform_": (-1.0, 1.0), "normal_": (0.0, 1.0), "random_": (0, 100),
            "bernoulli_": (0.5,)}[fill]
    if layout == "transposed":
        base = genesis.full((40, 30), -7.0, device="cuda")
        view = base.t()
    elif layout == "stepped":
        base = genesis.full((41, 91), -7.0, device="cuda")
        view = base[1::2, ::3]
    elif layout == "expanded_base":
        base = genesis.full((5, 2, 70), -7.0, device="cuda")
        view = base[:, 1, 3:]
    else:
        shape = (2, 3, 2, 3, 2, 3, 5)
        base = genesis.full(tuple(2 * s for s in shape), -7.0, device="cuda")
        view = base[tuple(slice(None, None, 2) for _ in shape)]
    state = genesis.cuda.get_rng_state()
    getattr(view, fill)(*args)
    genesis.cuda.set_rng_state(state)
    dense = getattr(genesis.empty(tuple(view.shape), device="cuda"), fill)(*args)
    np.testing.assert_array_equal(host(view), host(dense))
    assert np.count_nonzero(host(base) == -7.0) == base.numel() - view.numel() + \
        np.count_nonzero(host(dense) == -7.0)


@pytest.mark.parametrize("dtype", FLOATS)
def test_empty_and_scalar_draws(dtype):
    assert tuple(genesis.rand(0, dtype=dtype, device=DEVICE).shape) == (0,)
    assert tuple(genesis.randn(3, 0, dtype=dtype, device=DEVICE).shape) == (3, 0)
    assert tuple(genesis.empty(0, 4, dtype=dtype, device=DEVICE).uniform_().shape) == (0, 4)
    scalar = genesis.rand((), dtype=dtype, device=DEVICE)
    assert scalar.shape == () and 0 <= float(host(scalar)) < 1
    assert tuple(genesis.bernoulli(genesis.empty(0, dtype=dtype, device=DEVICE)).shape) == (0,)
    assert tuple(genesis.randint(5, (0, 2), device=DEVICE).shape) == (0, 2)


@pytest.mark.parametrize("n", [0, 1, 2, 5, 1000, 100003])
def test_randperm_is_a_permutation(n):
    perm = genesis.randperm(n, device=DEVICE)
    assert perm.dtype is genesis.int64 and perm.device.type == DEVICE
    values = perm.to("cpu").numpy()
    np.testing.assert_array_equal(np.sort(values), np.arange(n))
    if n == 100003:
        r = np.corrcoef(values, np.arange(n))[0, 1]
        assert abs(r) < 6 / math.sqrt(n)
        assert np.mean(values == np.arange(n)) < 12 / n


def test_randperm_frequencies_and_dtype():
    counts = {}
    draws = 2400
    for _ in range(draws):
        key = tuple(genesis.randperm(4, device=DEVICE).tolist())
        counts[key] = counts.get(key, 0) + 1
    assert len(counts) == 24
    p = 1 / 24
    sd = math.sqrt(draws * p * (1 - p))
    assert all(abs(c - draws * p) < 6.5 * sd for c in counts.values()), counts
    as_float = genesis.randperm(10, dtype=genesis.float32, device=DEVICE)
    assert as_float.dtype is genesis.float32
    assert sorted(as_float.tolist()) == list(map(float, range(10)))


def test_like_functions_and_requires_grad():
    t = genesis.empty(4, 5, dtype=genesis.float16, device=DEVICE)
    r = genesis.rand_like(t)
    assert r.dtype is genesis.float16 and r.device == t.device
    assert genesis.randn_like(t).shape == t.shape
    assert genesis.randint_like(t, 3, 9).dtype is genesis.float16
    g = genesis.rand(3, device=DEVICE, requires_grad=True)
    assert g.requires_grad and g.is_leaf
