"""genesis.distributions against torch.distributions: log_prob, cdf/icdf, entropy, moments and
KL for the same parameters; rsample gradients (exact reparameterizations, the implicit Gamma
gradient against mpmath, Beta/Dirichlet by Monte Carlo); sample moments within statistical
bounds (fixed seeds, bounds of 5 standard errors); argument validation errors."""

import math

import mpmath
import numpy as np
import pytest
import torch
import torch.distributions as TD

import genesis
import genesis.distributions as D
from genesis.distributions.utils import digamma, lgamma
from helpers import TOLERANCES, to_torch

pytestmark = pytest.mark.usefixtures("torch_validates_distributions")

DTYPES = [genesis.float32, genesis.float64]
TORCH = {genesis.float32: torch.float32, genesis.float64: torch.float64}


def close(g, t, dtype=None, scale=1):
    """Within the dtype's tolerance (times `scale` for values built from several
    transcendental functions)."""
    rtol, atol = TOLERANCES[dtype or g.dtype]
    np.testing.assert_allclose(g.detach().cpu().numpy().astype(np.float64),
                               t.detach().numpy().astype(np.float64), rtol=rtol * scale,
                               atol=atol * scale, equal_nan=True)


def params(rng, shape):
    """Named positive / real / probability parameter arrays of `shape`."""
    probs = rng.uniform(0.05, 1, shape + (4,))
    cov_factor = rng.standard_normal(shape + (3, 3))
    return {
        "real": rng.standard_normal(shape), "pos": rng.uniform(0.5, 3, shape),
        "pos2": rng.uniform(0.5, 3, shape), "small": rng.uniform(0.2, 0.9, shape),
        "unit": rng.uniform(0.05, 0.95, shape), "probs": probs / probs.sum(-1, keepdims=True),
        "logits": rng.standard_normal(shape + (4,)), "vec": rng.standard_normal(shape + (3,)),
        "conc": rng.uniform(0.5, 3, shape + (4,)),
        "cov": cov_factor @ np.swapaxes(cov_factor, -1, -2) + np.eye(3),
        "temp": np.array(rng.uniform(0.3, 2.0)),
    }


# name -> (genesis/torch class name, parameter keys or (keyword, key) pairs, value generator)
CASES = {
    "Normal": ("Normal", ["real", "pos"], lambda r, s: r.standard_normal(s) * 2),
    "Laplace": ("Laplace", ["real", "pos"], lambda r, s: r.standard_normal(s) * 2),
    "LogNormal": ("LogNormal", ["real", "small"], lambda r, s: r.uniform(0.05, 5, s)),
    "HalfNormal": ("HalfNormal", ["pos"], lambda r, s: r.uniform(0, 4, s)),
    "Cauchy": ("Cauchy", ["real", "pos"], lambda r, s: r.standard_normal(s) * 3),
    "Gumbel": ("Gumbel", ["real", "pos"], lambda r, s: r.standard_normal(s) * 3),
    "StudentT": ("StudentT", ["pos", "real", "pos2"], lambda r, s: r.standard_normal(s) * 3),
    "RelaxedBernoulli": ("RelaxedBernoulli", ["temp", ("probs", "unit")],
                         lambda r, s: r.uniform(0.05, 0.95, s)),
    "RelaxedOneHotCategorical": ("RelaxedOneHotCategorical", ["temp", ("logits", "logits")],
                                 lambda r, s: r.dirichlet(np.ones(4), s)),
    "Chi2": ("Chi2", ["pos"], lambda r, s: r.uniform(0.05, 4, s)),
    "Geometric": ("Geometric", [("probs", "unit")], lambda r, s: r.integers(0, 6, s) * 1.0),
    "Geometric_logits": ("Geometric", [("logits", "real")],
                         lambda r, s: r.integers(0, 6, s) * 1.0),
    "Uniform": ("Uniform", ["real", "pos_above"], lambda r, s: None),
    "Exponential": ("Exponential", ["pos"], lambda r, s: r.uniform(0, 3, s)),
    "Gamma": ("Gamma", ["pos", "pos2"], lambda r, s: r.uniform(0.05, 4, s)),
    "Gamma_small": ("Gamma", ["small", "pos2"], lambda r, s: r.uniform(0.05, 4, s)),
    "Beta": ("Beta", ["pos", "pos2"], lambda r, s: r.uniform(0.02, 0.98, s)),
    "Bernoulli": ("Bernoulli", [("probs", "unit")], lambda r, s: (r.random(s) < 0.5) * 1.0),
    "Bernoulli_logits": ("Bernoulli", [("logits", "real")],
                         lambda r, s: (r.random(s) < 0.5) * 1.0),
    "Categorical": ("Categorical", [("probs", "probs")], lambda r, s: r.integers(0, 4, s)),
    "Categorical_logits": ("Categorical", [("logits", "logits")],
                           lambda r, s: r.integers(0, 4, s)),
    "OneHotCategorical": ("OneHotCategorical", [("probs", "probs")],
                          lambda r, s: np.eye(4)[r.integers(0, 4, s)]),
    "Dirichlet": ("Dirichlet", ["conc"], lambda r, s: r.dirichlet(np.ones(4), s)),
    "MultivariateNormal": ("MultivariateNormal", ["vec", ("covariance_matrix", "cov")],
                           lambda r, s: r.standard_normal(s + (3,))),
    "MultivariateNormal_tril": ("MultivariateNormal", ["vec", ("scale_tril", "tril")],
                                lambda r, s: r.standard_normal(s + (3,))),
    "MultivariateNormal_precision": ("MultivariateNormal", ["vec", ("precision_matrix", "cov")],
                                     lambda r, s: r.standard_normal(s + (3,))),
}


def build(name, rng, dtype, shape=(2, 3), requires_grad=False):
    """(genesis distribution, torch distribution, value generator) with the same parameters."""
    cls_name, keys, values = CASES[name]
    p = params(rng, shape)
    p["pos_above"] = p["real"] + p["pos"]
    p["tril"] = np.linalg.cholesky(p["cov"])
    args, kwargs, targs, tkwargs, leaves = [], {}, [], {}, []
    for key in keys:
        keyword, key = key if isinstance(key, tuple) else (None, key)
        g = genesis.tensor(p[key], dtype=dtype, requires_grad=requires_grad)
        t = torch.tensor(p[key], dtype=TORCH[dtype], requires_grad=requires_grad)
        leaves.append((g, t))
        if keyword:
            kwargs[keyword], tkwargs[keyword] = g, t
        else:
            args.append(g)
            targs.append(t)
    return (getattr(D, cls_name)(*args, **kwargs), getattr(TD, cls_name)(*targs, **tkwargs),
            values, leaves)


def value_pair(dist_t, values, rng, dtype):
    v = values(rng, (5,) + tuple(dist_t.batch_shape))
    if v is None:  # uniform: inside [low, high)
        u = rng.uniform(0, 1, (5,) + tuple(dist_t.batch_shape))
        v = dist_t.low.detach().numpy() + u * (dist_t.high - dist_t.low).detach().numpy()
    return genesis.tensor(v, dtype=dtype), torch.tensor(v, dtype=TORCH[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(CASES))
def test_log_prob_entropy_moments(rng, dtype, name):
    dg, dt, values, leaves = build(name, rng, dtype, requires_grad=True)
    assert tuple(dg.batch_shape) == tuple(dt.batch_shape)
    assert tuple(dg.event_shape) == tuple(dt.event_shape)
    vg, vt = value_pair(dt, values, rng, dtype)
    if name.startswith("Categorical"):
        vg, vt = vg.long(), vt.long()
    lg, lt = dg.log_prob(vg), dt.log_prob(vt)
    close(lg, lt, dtype, scale=10)
    if name.startswith("Relaxed"):  # torch has no entropy or moments for these
        lg.sum().backward()
        lt.sum().backward()
        for g, t in leaves:
            close(g.grad, t.grad, dtype, scale=100)
        return
    eg, et = dg.entropy(), dt.entropy()
    close(eg, et, dtype, scale=10)
    for moment in ("mean", "variance", "stddev", "mode"):
        close(getattr(dg, moment), getattr(dt, moment), dtype, scale=10)
    (lg.sum() + eg.sum()).backward()
    (lt.sum() + et.sum()).backward()
    for g, t in leaves:
        close(g.grad, t.grad, dtype, scale=100)


GRADCHECKS = {
    "Normal": lambda loc, scale, v: D.Normal(loc, scale).log_prob(v),
    "Gamma": lambda a, rate, v: D.Gamma(a, rate).log_prob(v) + D.Gamma(a, rate).entropy(),
    "Beta": lambda a, b, v: D.Beta(a, b).log_prob(v.sigmoid()) + D.Beta(a, b).entropy(),
    "Dirichlet": lambda a, b, v: D.Dirichlet(genesis.stack([a, b], -1)).entropy(),
    "Gamma_cdf": lambda a, rate, v: D.Gamma(a, rate).cdf(v),
    "KL_gamma": lambda a, b, v: D.kl_divergence(D.Gamma(a, b), D.Gamma(b, a + 1)),
    "KL_beta": lambda a, b, v: D.kl_divergence(D.Beta(a, b), D.Beta(b, a + 1)),
    "MVN": lambda a, b, v: D.MultivariateNormal(
        v, scale_tril=genesis.diag_embed(a) + genesis.tril(v.unsqueeze(-1) * b, -1)).log_prob(
            v.flip(-1)),
}


@pytest.mark.parametrize("name", list(GRADCHECKS))
def test_gradcheck(rng, name):
    args = [genesis.tensor(rng.uniform(0.5, 3, 3), dtype=genesis.float64, requires_grad=True)
            for _ in range(3)]
    assert genesis.autograd.gradcheck(GRADCHECKS[name], tuple(args))


CDF_CASES = ["Cauchy", "HalfNormal", "Chi2", "LogNormal", "Normal", "Laplace", "Uniform",
             "Exponential", "Gamma", "Gamma_small"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", CDF_CASES)
def test_cdf_icdf(rng, dtype, name):
    dg, dt, values, _ = build(name, rng, dtype)
    vg, vt = value_pair(dt, values, rng, dtype)
    close(dg.cdf(vg), dt.cdf(vt), dtype, scale=10)
    if name.startswith("Gamma") or name == "Chi2":
        return  # torch has no Gamma.icdf
    q = rng.uniform(0.01, 0.99, (5,) + tuple(dt.batch_shape))
    close(dg.icdf(genesis.tensor(q, dtype=dtype)), dt.icdf(torch.tensor(q, dtype=TORCH[dtype])),
          dtype, scale=10)


def test_gumbel_cdf_icdf():
    """Away from the tails, where torch's transformed Uniform accepts the values."""
    v = np.linspace(-1, 4, 7)
    g, t = D.Gumbel(0.3, 1.2), TD.Gumbel(torch.tensor(0.3), torch.tensor(1.2))
    close(g.cdf(genesis.tensor(v, dtype=genesis.float32)),
          t.cdf(torch.tensor(v, dtype=torch.float32)), scale=10)
    q = np.linspace(0.05, 0.95, 7)
    close(g.icdf(genesis.tensor(q, dtype=genesis.float32)),
          t.icdf(torch.tensor(q, dtype=torch.float32)), scale=10)


def test_relaxed_rsample():
    """Relaxed samples lie in the support, are differentiable in the logits, and approach
    one-hot / {0, 1} values at a low temperature."""
    genesis.manual_seed(5)
    logits = genesis.randn(3, 4, dtype=genesis.float64, requires_grad=True)
    temperature = genesis.tensor(0.05, dtype=genesis.float64)
    x = D.RelaxedOneHotCategorical(temperature, logits=logits).rsample((200,))
    assert bool(D.constraints.simplex.check(x).all())
    assert float(x.amax(-1).mean()) > 0.9
    (x[..., 0]).sum().backward()
    assert logits.grad is not None and bool(genesis.isfinite(logits.grad).all())
    b = D.RelaxedBernoulli(genesis.tensor(0.05), logits=genesis.zeros(1000)).rsample()
    assert float(((b < 0.1) | (b > 0.9)).to(genesis.float32).mean()) > 0.9


def test_gamma_cdf_tails():
    a = genesis.tensor([0.3, 2.0, 2.0, 50.0, 3000.0], dtype=genesis.float64)
    x = genesis.tensor([1e-4, 0.01, 60.0, 120.0, 3100.0], dtype=genesis.float64)
    want = TD.Gamma(to_torch(a), 1.0).cdf(to_torch(x))
    close(D.Gamma(a, 1.0).cdf(x), want, scale=10)


def test_normal_icdf_gradient():
    q = genesis.tensor([0.001, 0.2, 0.5, 0.97], dtype=genesis.float64, requires_grad=True)
    tq = to_torch(q)
    D.Normal(0.0, 1.0).icdf(q).sum().backward()
    TD.Normal(0.0, 1.0).icdf(tq).sum().backward()
    close(q.grad, tq.grad)


KL_PAIRS = [("Normal", "Normal"), ("LogNormal", "LogNormal"), ("Laplace", "Laplace"),
            ("Bernoulli", "Bernoulli"),
            ("Bernoulli_logits", "Bernoulli"), ("Categorical", "Categorical_logits"),
            ("OneHotCategorical", "OneHotCategorical"), ("Beta", "Beta"),
            ("Dirichlet", "Dirichlet"), ("Exponential", "Exponential"), ("Gamma", "Gamma"),
            ("Exponential", "Gamma"), ("Gamma", "Exponential"), ("Uniform", "Uniform"),
            ("Uniform", "Normal"), ("MultivariateNormal", "MultivariateNormal_tril"),
            ("HalfNormal", "HalfNormal"), ("Gumbel", "Gumbel"), ("Geometric", "Geometric"),
            ("Cauchy", "Cauchy"), ("Normal", "Laplace"), ("Laplace", "Normal"),
            ("Exponential", "Normal"), ("Gamma", "Normal"), ("Beta", "Normal"),
            ("Gumbel", "Normal"), ("Normal", "Gumbel"), ("Beta", "Exponential"),
            ("Beta", "Gamma"), ("Beta", "Uniform"), ("Uniform", "Exponential"),
            ("Uniform", "Gamma"), ("Uniform", "Gumbel"), ("Normal", "Uniform"),
            ("Gamma", "Beta"), ("Laplace", "Exponential")]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("p_name,q_name", KL_PAIRS)
def test_kl_divergence(rng, dtype, p_name, q_name):
    pg, pt, _, p_leaves = build(p_name, rng, dtype, requires_grad=True)
    qg, qt, _, _ = build(q_name, rng, dtype)
    kg, kt = D.kl_divergence(pg, qg), TD.kl_divergence(pt, qt)
    close(kg, kt, dtype, scale=10)
    if torch.isfinite(kt).all():
        kg.sum().backward()
        kt.sum().backward()
        for g, t in p_leaves:
            close(g.grad, t.grad, dtype, scale=100)


def test_kl_independent_and_missing(rng):
    pg, pt, _, _ = build("Normal", rng, genesis.float64)
    qg, qt, _, _ = build("Normal", rng, genesis.float64)
    close(D.kl_divergence(D.Independent(pg, 1), D.Independent(qg, 1)),
          TD.kl_divergence(TD.Independent(pt, 1), TD.Independent(qt, 1)))
    with pytest.raises(NotImplementedError, match="Normal.*Cauchy"):
        D.kl_divergence(pg, D.Cauchy(0.0, 1.0))

    @D.register_kl(D.Normal, D.Cauchy)
    def _custom(p, q):
        return p.loc * 0

    assert D.kl_divergence(pg, D.Cauchy(0.0, 1.0)).shape == pg.batch_shape
    del D.kl._KL_REGISTRY[D.Normal, D.Cauchy]


@pytest.mark.parametrize("dtype", DTYPES)
def test_special_functions(rng, dtype):
    x = rng.uniform(0.01, 60, 200)
    g, t = genesis.tensor(x, dtype=dtype), torch.tensor(x, dtype=TORCH[dtype])
    close(lgamma(g), torch.lgamma(t), dtype, scale=10)
    close(digamma(g), torch.digamma(t), dtype, scale=10)


SAMPLED = ["Gumbel", "HalfNormal", "Chi2", "Geometric", "LogNormal", "Normal", "Laplace", "Uniform",
           "Exponential", "Gamma", "Gamma_small", "Beta",
           "Bernoulli", "Categorical", "OneHotCategorical", "Dirichlet", "MultivariateNormal"]


@pytest.mark.parametrize("name", SAMPLED)
def test_sample_moments(name):
    """Sample mean and variance within 5 standard errors of the distribution's (seeded)."""
    genesis.manual_seed(1234)
    rng = np.random.default_rng(1234)
    dg, dt, _, _ = build(name, rng, genesis.float64, shape=(3,))
    n = 20000
    x = dg.sample((n,))
    assert tuple(x.shape) == (n,) + tuple(dt.batch_shape) + tuple(dt.event_shape)
    xs = x.double().numpy()
    mean = dt.mean.detach().numpy() if name != "Categorical" else \
        (dt.probs * torch.arange(4.0, dtype=torch.float64)).sum(-1).numpy()
    var = xs.var(0)
    se_mean = np.sqrt(var / n)
    assert np.all(np.abs(xs.mean(0) - mean) < 5 * se_mean + 1e-12)
    if name == "Categorical":
        return
    fourth = ((xs - xs.mean(0)) ** 4).mean(0)
    se_var = np.sqrt(np.maximum(fourth - var ** 2, 0) / n)
    assert np.all(np.abs(var - dt.variance.detach().numpy()) < 5 * se_var + 1e-12)
    assert bool(dg.support.check(x).all())


def test_sample_shapes_and_no_grad(rng):
    dg, _, _, _ = build("Normal", rng, genesis.float32, requires_grad=True)
    assert not dg.sample((4,)).requires_grad
    assert dg.rsample((4,)).requires_grad
    assert tuple(dg.sample().shape) == (2, 3)
    assert tuple(dg.sample(genesis.Size([2, 1])).shape) == (2, 1, 2, 3)
    e = dg.expand((5, 2, 3))
    assert tuple(e.batch_shape) == (5, 2, 3) and tuple(e.sample((2,)).shape) == (2, 5, 2, 3)
    c = D.Categorical(logits=genesis.randn(2, 4)).expand((3, 2))
    assert tuple(c.sample((6,)).shape) == (6, 3, 2)
    ind = D.Independent(dg, 1)
    assert tuple(ind.batch_shape) == (2,) and tuple(ind.event_shape) == (3,)
    assert tuple(ind.expand((4, 2)).sample().shape) == (4, 2, 3)
    support = D.Categorical(probs=genesis.ones(3) / 3).enumerate_support()
    assert support.tolist() == [0, 1, 2]


def test_location_scale_rsample_gradients():
    """x = loc + scale * noise: d sum(x) / d scale = sum(noise); Exponential: dx/drate = -x/rate."""
    genesis.manual_seed(0)
    for cls in (D.Normal, D.Laplace):
        loc = genesis.tensor([0.5, -1.0], dtype=genesis.float64, requires_grad=True)
        scale = genesis.tensor([1.5, 0.3], dtype=genesis.float64, requires_grad=True)
        x = cls(loc, scale).rsample((100,))
        x.sum().backward()
        assert loc.grad.tolist() == [100.0, 100.0]
        noise = (x.detach() - loc.detach()) / scale.detach()
        close(scale.grad, torch.tensor(noise.sum(0).numpy()))
    rate = genesis.tensor([0.5, 2.0], dtype=genesis.float64, requires_grad=True)
    x = D.Exponential(rate).rsample((100,))
    x.sum().backward()
    close(rate.grad, torch.tensor((-x.detach() / rate.detach()).sum(0).numpy()))


def mp_gamma_sample_grad(a, x):
    """dx/da holding the CDF fixed, in 30-digit arithmetic."""
    mpmath.mp.dps = 30
    cdf = lambda aa: mpmath.gammainc(aa, 0, x, regularized=True)  # noqa: E731
    density = x ** (a - 1) * mpmath.exp(-x) / mpmath.gamma(a)
    return float(-mpmath.diff(cdf, a) / density)


def test_gamma_implicit_gradient():
    genesis.manual_seed(3)
    alpha = genesis.tensor([0.1, 0.5, 1.0, 2.5, 10.0, 80.0, 2000.0] * 3, dtype=genesis.float64,
                           requires_grad=True)
    x = D.Gamma(alpha, 1.0).rsample()
    x.sum().backward()
    want = [mp_gamma_sample_grad(mpmath.mpf(a), mpmath.mpf(v))
            for a, v in zip(alpha.tolist(), x.tolist())]
    np.testing.assert_allclose(alpha.grad.numpy(), want, rtol=1e-8, atol=1e-12)
    torch_grad = torch._standard_gamma_grad(to_torch(alpha.detach()), to_torch(x.detach()))
    np.testing.assert_allclose(alpha.grad.numpy(), torch_grad.numpy(), rtol=1e-3)
    rate = genesis.tensor(2.0, dtype=genesis.float64, requires_grad=True)
    y = D.Gamma(genesis.tensor(3.0, dtype=genesis.float64), rate).rsample((50,))
    y.sum().backward()
    close(rate.grad, torch.tensor(float((-y.detach() / 2.0).sum())))


@pytest.mark.parametrize("name", ["Beta", "Dirichlet"])
def test_beta_dirichlet_rsample_gradient(name):
    """The Monte Carlo gradient of E[x_0] matches the derivative of the exact mean
    (a / sum of concentrations) within 5 standard errors."""
    genesis.manual_seed(7)
    n = 4000
    if name == "Beta":
        a = genesis.tensor([2.0] * n, dtype=genesis.float64, requires_grad=True)
        b = genesis.tensor(3.0, dtype=genesis.float64)
        x = D.Beta(a, b).rsample()
        want, first = 3.0 / 25.0, x
    else:
        a = genesis.tensor([[2.0, 3.0, 1.5]] * n, dtype=genesis.float64, requires_grad=True)
        x = D.Dirichlet(a).rsample()
        want, first = 4.5 / 6.5 ** 2, x[:, 0]
    first.sum().backward()
    per_sample = a.grad.numpy().reshape(n, -1)[:, 0]
    assert abs(per_sample.mean() - want) < 5 * per_sample.std() / math.sqrt(n)


def test_straight_through_rsample():
    logits = genesis.randn(3, 4, dtype=genesis.float64, requires_grad=True)
    d = D.OneHotCategoricalStraightThrough(logits=logits)
    x = d.rsample((5,))
    assert tuple(x.shape) == (5, 3, 4) and x.sum(-1).tolist() == [[1.0] * 3] * 5
    w = genesis.randn(4, dtype=genesis.float64)
    (x * w).sum().backward()
    tl = to_torch(logits.detach(), requires_grad=True)
    probs = tl.softmax(-1)
    (5 * (probs * torch.tensor(w.numpy())).sum()).backward()
    close(logits.grad, tl.grad)


def test_transformed_distributions(rng):
    loc, scale = rng.standard_normal(3), rng.uniform(0.5, 2, 3)
    gb, tb = D.Normal(genesis.tensor(loc), genesis.tensor(scale)), \
        TD.Normal(torch.tensor(loc), torch.tensor(scale))
    chains = [
        ([D.ExpTransform()], [TD.ExpTransform()]),
        ([D.TanhTransform()], [TD.TanhTransform()]),
        ([D.SigmoidTransform()], [TD.SigmoidTransform()]),
        ([D.AffineTransform(1.0, -2.0), D.ExpTransform()],
         [TD.AffineTransform(1.0, -2.0), TD.ExpTransform()]),
        ([D.ExpTransform(), D.PowerTransform(genesis.tensor(0.5))],
         [TD.ExpTransform(), TD.PowerTransform(torch.tensor(0.5))]),
    ]
    for g_ts, t_ts in chains:
        dg, dt = D.TransformedDistribution(gb, g_ts), TD.TransformedDistribution(tb, t_ts)
        y = dt.sample((4,))
        close(dg.log_prob(genesis.tensor(y.numpy())), dt.log_prob(y), scale=10)
        if all(isinstance(t, (TD.ExpTransform, TD.AffineTransform)) for t in t_ts):
            close(dg.cdf(genesis.tensor(y.numpy())), dt.cdf(y), scale=10)
        assert tuple(dg.rsample((2,)).shape) == (2, 3)
    comp = D.ComposeTransform([D.AffineTransform(0.5, 3.0), D.TanhTransform()])
    tcomp = TD.ComposeTransform([TD.AffineTransform(0.5, 3.0), TD.TanhTransform()])
    x = rng.standard_normal(5) * 0.3
    gx, tx = genesis.tensor(x), torch.tensor(x)
    close(comp(gx), tcomp(tx))
    close(comp.inv(comp(gx)), tx, scale=10)
    close(comp.log_abs_det_jacobian(gx, comp(gx)), tcomp.log_abs_det_jacobian(tx, tcomp(tx)),
          scale=10)
    soft = rng.standard_normal((2, 4))
    close(D.SoftmaxTransform()(genesis.tensor(soft)),
          TD.SoftmaxTransform()(torch.tensor(soft)))
    vec = D.TransformedDistribution(D.Independent(gb, 1), [D.AffineTransform(
        genesis.zeros(3), genesis.tensor(scale), event_dim=1)])
    tvec = TD.TransformedDistribution(TD.Independent(tb, 1), [TD.AffineTransform(
        torch.zeros(3), torch.tensor(scale), event_dim=1)])
    assert tuple(vec.event_shape) == (3,) and tuple(vec.batch_shape) == ()
    y = tvec.sample((2,))
    close(vec.log_prob(genesis.tensor(y.numpy())), tvec.log_prob(y), scale=10)


def torch_message(fn):
    with pytest.raises(ValueError) as info:
        fn()
    return str(info.value).replace("torch.Size", "genesis.Size").split("\n")[0]


def check_same_value_error(genesis_fn, torch_fn):
    want = torch_message(torch_fn)
    with pytest.raises(ValueError) as got:
        genesis_fn()
    assert str(got.value).split("\n")[0] == want


def test_argument_validation():
    for make_g, make_t in [
        (lambda: D.Normal(genesis.zeros(2), -genesis.ones(2)),
         lambda: TD.Normal(torch.zeros(2), -torch.ones(2))),
        (lambda: D.Gamma(genesis.tensor(-1.0), genesis.tensor(1.0)),
         lambda: TD.Gamma(torch.tensor(-1.0), torch.tensor(1.0))),
        (lambda: D.Bernoulli(probs=genesis.tensor([1.5])),
         lambda: TD.Bernoulli(probs=torch.tensor([1.5]))),
        (lambda: D.Categorical(probs=genesis.tensor([-0.5, 1.5])),
         lambda: TD.Categorical(probs=torch.tensor([-0.5, 1.5]))),
        (lambda: D.Categorical(genesis.ones(2), genesis.ones(2)),
         lambda: TD.Categorical(torch.ones(2), torch.ones(2))),
        (lambda: D.Categorical(probs=genesis.tensor(1.0)),
         lambda: TD.Categorical(probs=torch.tensor(1.0))),
        (lambda: D.Uniform(genesis.tensor(1.0), genesis.tensor(0.0)),
         lambda: TD.Uniform(torch.tensor(1.0), torch.tensor(0.0))),
        (lambda: D.MultivariateNormal(genesis.zeros(2)),
         lambda: TD.MultivariateNormal(torch.zeros(2))),
        (lambda: D.MultivariateNormal(genesis.zeros(2), scale_tril=genesis.ones(2, 2)),
         lambda: TD.MultivariateNormal(torch.zeros(2), scale_tril=torch.ones(2, 2))),
        (lambda: D.Independent(D.Normal(genesis.zeros(2), 1.0), 2),
         lambda: TD.Independent(TD.Normal(torch.zeros(2), 1.0), 2)),
    ]:
        check_same_value_error(make_g, make_t)
    n, tn = D.Normal(genesis.zeros(2), genesis.ones(2)), TD.Normal(torch.zeros(2), torch.ones(2))
    check_same_value_error(lambda: n.log_prob(genesis.zeros(3)),
                           lambda: tn.log_prob(torch.zeros(3)))
    check_same_value_error(lambda: n.log_prob(0.5), lambda: tn.log_prob(0.5))
    g = D.Gamma(genesis.ones(2), genesis.ones(2))
    tg = TD.Gamma(torch.ones(2), torch.ones(2))
    check_same_value_error(lambda: g.log_prob(-genesis.ones(2)),
                           lambda: tg.log_prob(-torch.ones(2)))
    assert D.Normal(genesis.zeros(2), -genesis.ones(2), validate_args=False).scale.tolist() == \
        [-1.0, -1.0]


def test_set_default_validate_args():
    try:
        D.Distribution.set_default_validate_args(False)
        assert D.Normal(0.0, -1.0).scale.item() == -1.0
    finally:
        D.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        D.Normal(0.0, -1.0)
    with pytest.raises(ValueError):
        D.Distribution.set_default_validate_args(3)


def test_constraints_reprs():
    for name in ("real", "positive", "simplex", "unit_interval", "real_vector", "boolean",
                 "nonnegative", "lower_cholesky", "positive_definite"):
        assert repr(getattr(D.constraints, name)) == repr(getattr(TD.constraints, name))
    assert repr(D.constraints.interval(0, 1)) == repr(TD.constraints.interval(0, 1))
    pd = genesis.tensor([[[2.0, 0.5], [0.5, 1.0]], [[1.0, 2.0], [2.0, 1.0]]])
    assert D.constraints.positive_definite.check(pd).tolist() == [True, False]


@pytest.mark.parametrize("name", ["Normal", "Gamma_small", "Beta", "Dirichlet", "Categorical",
                                  "Bernoulli_logits", "MultivariateNormal", "Uniform"])
def test_on_device(device, rng, name):
    """The same distribution on `device`: log_prob and entropy as on the CPU, samples on the
    device, and gradients flowing back to device parameters through rsample or log_prob."""
    dg, dt, values, _ = build(name, rng, genesis.float64)
    moved = {k: v.to(device) for k, v in dg.__dict__.items()
             if isinstance(v, genesis.Tensor) and k in dg.arg_constraints}
    if "_categorical" in dg.__dict__ or not moved:
        pytest.skip("parameters are held by an inner distribution")
    moved = {k: v.detach().requires_grad_(True) for k, v in moved.items()}
    on_device = type(dg)(**moved)
    vg, vt = value_pair(dt, values, rng, genesis.float64)
    if name.startswith("Categorical"):
        vg = vg.long()
    lp = on_device.log_prob(vg.to(device))
    assert lp.device.type == device
    close(lp.cpu(), torch.tensor(dg.log_prob(vg).detach().numpy()))
    close(on_device.entropy().cpu(), torch.tensor(dg.entropy().detach().numpy()))
    x = on_device.sample((3,))
    assert x.device.type == device
    total = on_device.rsample((3,)).sum() if on_device.has_rsample else lp.sum()
    total.backward()
    assert all(v.grad is not None and v.grad.device.type == device
               for v in moved.values())
