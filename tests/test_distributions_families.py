"""The rest of torch.distributions against torch: count distributions (Poisson, Binomial,
Multinomial, NegativeBinomial), transformed families (Weibull, Pareto, HalfCauchy, InverseGamma,
Kumaraswamy, LogisticNormal), FisherSnedecor, ContinuousBernoulli, GeneralizedPareto, VonMises,
LowRankMultivariateNormal, MixtureSameFamily, Wishart, LKJCholesky; the structured transforms,
biject_to/transform_to, the KL pairs among them, and torch's submodule import paths. Values in
float64 on both sides; sample moments within 5 standard errors at fixed seeds."""

import math

import numpy as np
import pytest
import torch
import torch.distributions as TD

import genesis
import genesis.distributions as D
from test_distributions import build, close

F64 = genesis.float64


def corr_cholesky(rng, shape, dim):
    """Random Cholesky factors of dim x dim correlation matrices."""
    x = torch.tensor(rng.standard_normal(shape + (dim * (dim - 1) // 2,)))
    return TD.transforms.CorrCholeskyTransform()(x).numpy()


def spd(rng, shape, n=3):
    a = rng.standard_normal(shape + (n, n))
    return a @ np.swapaxes(a, -1, -2) + np.eye(n)


def counts(rng, shape, total, k=4):
    return rng.multinomial(total, np.ones(k) / k, shape).astype(np.float64)


# name -> (class name, parameters (rng, batch shape) -> dict, values (rng, shape, params))
CASES = {
    "Poisson": ("Poisson", lambda r, s: {"rate": r.uniform(0.3, 5, s)},
                lambda r, s, p: r.integers(0, 8, s) * 1.0),
    "Binomial": ("Binomial", lambda r, s: {"total_count": np.full(s, 8.0),
                                           "probs": r.uniform(0.05, 0.95, s)},
                 lambda r, s, p: r.integers(0, 9, s) * 1.0),
    "Binomial_logits": ("Binomial", lambda r, s: {"total_count": np.full(s, 5.0),
                                                  "logits": r.standard_normal(s)},
                        lambda r, s, p: r.integers(0, 6, s) * 1.0),
    "Multinomial": ("Multinomial", lambda r, s: {"total_count": 6,
                                                 "probs": r.dirichlet(np.ones(4), s)},
                    lambda r, s, p: counts(r, s, 6)),
    "NegativeBinomial": ("NegativeBinomial",
                         lambda r, s: {"total_count": r.uniform(0.5, 6, s),
                                       "probs": r.uniform(0.05, 0.9, s)},
                         lambda r, s, p: r.integers(0, 10, s) * 1.0),
    "NegativeBinomial_logits": ("NegativeBinomial",
                                lambda r, s: {"total_count": r.uniform(0.5, 6, s),
                                              "logits": r.standard_normal(s)},
                                lambda r, s, p: r.integers(0, 10, s) * 1.0),
    "Weibull": ("Weibull", lambda r, s: {"scale": r.uniform(0.5, 3, s),
                                         "concentration": r.uniform(0.5, 3, s)},
                lambda r, s, p: r.uniform(0.05, 4, s)),
    "Pareto": ("Pareto", lambda r, s: {"scale": r.uniform(0.5, 3, s),
                                       "alpha": r.uniform(0.5, 4, s)},
               lambda r, s, p: p["scale"] + r.uniform(0, 3, s)),
    "HalfCauchy": ("HalfCauchy", lambda r, s: {"scale": r.uniform(0.5, 3, s)},
                   lambda r, s, p: r.uniform(0, 5, s)),
    "InverseGamma": ("InverseGamma", lambda r, s: {"concentration": r.uniform(0.5, 4, s),
                                                   "rate": r.uniform(0.5, 3, s)},
                     lambda r, s, p: r.uniform(0.05, 4, s)),
    "Kumaraswamy": ("Kumaraswamy", lambda r, s: {"concentration1": r.uniform(0.5, 3, s),
                                                 "concentration0": r.uniform(0.5, 3, s)},
                    lambda r, s, p: r.uniform(0.02, 0.98, s)),
    "FisherSnedecor": ("FisherSnedecor", lambda r, s: {"df1": r.uniform(1, 8, s),
                                                       "df2": r.uniform(1, 8, s)},
                       lambda r, s, p: r.uniform(0.05, 4, s)),
    "ContinuousBernoulli": ("ContinuousBernoulli",
                            lambda r, s: {"probs": np.where(r.random(s) < 0.3, 0.4995,
                                                            r.uniform(0.05, 0.95, s))},
                            lambda r, s, p: r.uniform(0.01, 0.99, s)),
    "ContinuousBernoulli_logits": ("ContinuousBernoulli",
                                   lambda r, s: {"logits": r.standard_normal(s) * 2},
                                   lambda r, s, p: r.uniform(0.01, 0.99, s)),
    "GeneralizedPareto": ("GeneralizedPareto",
                          lambda r, s: {"loc": r.standard_normal(s),
                                        "scale": r.uniform(0.5, 2, s),
                                        "concentration": r.uniform(-0.3, 0.4, s)},
                          lambda r, s, p: p["loc"] + r.uniform(0, 1, s)),
    "VonMises": ("VonMises", lambda r, s: {"loc": r.uniform(-3, 3, s),
                                           "concentration": r.uniform(0.2, 8, s)},
                 lambda r, s, p: r.uniform(-math.pi, math.pi, s)),
    "LowRankMultivariateNormal": ("LowRankMultivariateNormal",
                                  lambda r, s: {"loc": r.standard_normal(s + (3,)),
                                                "cov_factor": r.standard_normal(s + (3, 2)),
                                                "cov_diag": r.uniform(0.5, 2, s + (3,))},
                                  lambda r, s, p: r.standard_normal(s + (3,))),
    "LogisticNormal": ("LogisticNormal", lambda r, s: {"loc": r.standard_normal(s + (3,)),
                                                       "scale": r.uniform(0.5, 2, s + (3,))},
                       lambda r, s, p: r.dirichlet(np.ones(4), s)),
    "Wishart": ("Wishart", lambda r, s: {"df": r.uniform(3.5, 8, s), "covariance_matrix":
                                         spd(r, s)},
                lambda r, s, p: spd(r, s)),
    "Wishart_tril": ("Wishart", lambda r, s: {"df": r.uniform(3.5, 8, s), "scale_tril":
                                              np.linalg.cholesky(spd(r, s))},
                     lambda r, s, p: spd(r, s)),
    "LKJCholesky": ("LKJCholesky", lambda r, s: {"dim": 3,
                                                 "concentration": r.uniform(0.5, 3, s)},
                    lambda r, s, p: corr_cholesky(r, s, 3)),
}


def pair(name, rng, shape=(2, 3), requires_grad=False):
    """(genesis distribution, torch distribution, value generator, [(genesis leaf, torch
    leaf)], numpy parameters) with the same float64 parameters."""
    cls_name, make, values = CASES[name]
    p = make(rng, shape)
    gk, tk, leaves = {}, {}, []
    for key, v in p.items():
        if isinstance(v, int):
            gk[key] = tk[key] = v
            continue
        g = genesis.tensor(v, dtype=F64, requires_grad=requires_grad)
        t = torch.tensor(v, dtype=torch.float64, requires_grad=requires_grad)
        gk[key], tk[key] = g, t
        leaves.append((g, t))
    return getattr(D, cls_name)(**gk), getattr(TD, cls_name)(**tk), values, leaves, p


def values_for(name, rng, dist_t, values, p):
    v = values(rng, tuple(dist_t.batch_shape), p)
    return genesis.tensor(v, dtype=F64), torch.tensor(v, dtype=torch.float64)


def same_or_both_missing(g_fn, t_fn, scale=10):
    """g_fn() matches t_fn(), or both raise NotImplementedError; the torch value, if any."""
    try:
        want = t_fn()
    except NotImplementedError:
        with pytest.raises(NotImplementedError):
            g_fn()
        return None
    close(g_fn(), want, F64, scale=scale)
    return want


@pytest.fixture
def torch_float64():
    """torch's default dtype float64 for the test (its GeneralizedPareto compares float64
    parameters with a default-dtype zero)."""
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(old)


@pytest.mark.parametrize("name", list(CASES))
def test_against_torch(rng, torch_float64, name):
    """Shapes, support, log_prob, cdf/icdf, entropy and moments as torch's, and the gradients
    of log_prob + entropy in the parameters."""
    dg, dt, values, leaves, p = pair(name, rng, requires_grad=True)
    assert tuple(dg.batch_shape) == tuple(dt.batch_shape)
    assert tuple(dg.event_shape) == tuple(dt.event_shape)
    assert dg.has_rsample == dt.has_rsample
    assert dg.has_enumerate_support == dt.has_enumerate_support
    assert set(dg.arg_constraints) == set(dt.arg_constraints)
    vg, vt = values_for(name, rng, dt, values, p)
    lg, lt = dg.log_prob(vg), dt.log_prob(vt)
    close(lg, lt, F64, scale=10)
    for moment in ("mean", "variance", "stddev", "mode"):
        same_or_both_missing(lambda: getattr(dg, moment), lambda: getattr(dt, moment))
    same_or_both_missing(lambda: dg.cdf(vg), lambda: dt.cdf(vt))
    q = rng.uniform(0.02, 0.98, tuple(dt.batch_shape))
    same_or_both_missing(lambda: dg.icdf(genesis.tensor(q, dtype=F64)),
                         lambda: dt.icdf(torch.tensor(q, dtype=torch.float64)))
    et = same_or_both_missing(dg.entropy, dt.entropy)
    total_g = lg.sum() + (dg.entropy().sum() if et is not None else 0)
    total_t = lt.sum() + (et.sum() if et is not None else 0)
    total_g.backward()
    total_t.backward()
    for g, t in leaves:
        if name == "Wishart_tril":  # torch's gradient has entries above the diagonal too
            g, t = g.grad.tril(), t.grad.tril()
        else:
            g, t = g.grad, t.grad
        close(g, t, F64, scale=100)


# name -> sample count; the discrete and heavy-tailed ones are checked by their mean only
SAMPLED = {"Poisson": 20000, "Binomial": 20000, "Binomial_logits": 20000, "Multinomial": 20000,
           "NegativeBinomial": 20000, "Weibull": 20000, "Kumaraswamy": 20000,
           "InverseGamma": 0, "Pareto": 0, "HalfCauchy": 0, "FisherSnedecor": 0,
           "ContinuousBernoulli": 20000, "GeneralizedPareto": 20000, "VonMises": 20000,
           "LowRankMultivariateNormal": 20000, "LogisticNormal": 20000, "Wishart": 4000,
           "LKJCholesky": 4000}


def sample_statistic(name, x, dt):
    """(samples or a function of them, its mean, its variance or None) where torch gives the
    moments in closed form."""
    xs = x.numpy()
    if name == "VonMises":  # circular: E[cos(x - loc)] = 1 - variance
        return np.cos(xs - dt.loc.numpy()), 1 - dt.variance.numpy(), None
    if name == "LKJCholesky":  # E[L] has no closed form; E[L L^T] = I
        return xs @ np.swapaxes(xs, -1, -2), np.eye(3), None
    if name == "LogisticNormal":  # the Normal underneath
        base = D.StickBreakingTransform().inv(x).numpy()
        return base, dt.loc.numpy(), dt.scale.numpy() ** 2
    return xs, dt.mean.detach().numpy(), dt.variance.detach().numpy()


@pytest.mark.parametrize("name", list(SAMPLED))
def test_sample_moments(name):
    """Samples have torch's shapes, lie in the support, and (where the variance is finite)
    have mean and variance within 5 standard errors of the distribution's."""
    genesis.manual_seed(1234)
    rng = np.random.default_rng(1234)
    dg, dt, _, _, _ = pair(name, rng, shape=(3,))
    n = SAMPLED[name] or 200
    x = dg.sample((n,))
    assert tuple(x.shape) == (n,) + tuple(dt.batch_shape) + tuple(dt.event_shape)
    assert bool(dg.support.check(x).all())
    assert tuple(dg.sample().shape) == tuple(dt.sample().shape)
    if not SAMPLED[name]:
        return
    xs, mean, var = sample_statistic(name, x, dt)
    se = np.sqrt(xs.var(0) / n)
    assert np.all(np.abs(xs.mean(0) - mean) <= 5 * se + 1e-9)
    if var is not None:
        fourth = ((xs - xs.mean(0)) ** 4).mean(0)
        se_var = np.sqrt(np.maximum(fourth - xs.var(0) ** 2, 0) / n)
        assert np.all(np.abs(xs.var(0) - var) <= 5 * se_var + 1e-9)


def make(name, rng, requires_grad=False):
    """(genesis, torch, [(genesis leaf, torch leaf)]) for a case of either test module, float64."""
    if name in CASES:
        dg, dt, _, leaves, _ = pair(name, rng, requires_grad=requires_grad)
        return dg, dt, leaves
    dg, dt, _, leaves = build(name, rng, F64, requires_grad=requires_grad)
    return dg, dt, leaves


KL_PAIRS = [("Binomial", "Binomial"), ("ContinuousBernoulli", "ContinuousBernoulli_logits"),
            ("Poisson", "Poisson"), ("Pareto", "Pareto"), ("Bernoulli", "Poisson"),
            ("Beta", "ContinuousBernoulli"), ("Uniform", "ContinuousBernoulli"),
            ("ContinuousBernoulli", "Exponential"), ("ContinuousBernoulli", "Normal"),
            ("ContinuousBernoulli", "Uniform"), ("Exponential", "Gumbel"), ("Gamma", "Gumbel"),
            ("Pareto", "Exponential"), ("Pareto", "Gamma"), ("Pareto", "Normal"),
            ("Uniform", "Pareto"), ("Normal", "Pareto"), ("Gamma", "Pareto"),
            ("Poisson", "Binomial"), ("Poisson", "Bernoulli"), ("Pareto", "Beta"),
            ("Exponential", "ContinuousBernoulli"), ("Gumbel", "Pareto"),
            ("LowRankMultivariateNormal", "LowRankMultivariateNormal"),
            ("MultivariateNormal", "LowRankMultivariateNormal"),
            ("LowRankMultivariateNormal", "MultivariateNormal"), ("Wishart", "Wishart_tril"),
            ("Weibull", "Weibull"), ("Kumaraswamy", "Kumaraswamy"),
            ("InverseGamma", "InverseGamma"), ("HalfCauchy", "HalfCauchy")]


@pytest.mark.parametrize("p_name,q_name", KL_PAIRS)
def test_kl_divergence(rng, p_name, q_name):
    """torch's value (or its NotImplementedError), and its gradient in p's parameters."""
    pg, pt, p_leaves = make(p_name, rng, requires_grad=True)
    qg, qt, _ = make(q_name, rng)
    kt = same_or_both_missing(lambda: D.kl_divergence(pg, qg), lambda: TD.kl_divergence(pt, qt))
    if kt is None or not bool(torch.isfinite(kt).all()):
        return
    D.kl_divergence(pg, qg).sum().backward()
    kt.sum().backward()
    for g, t in p_leaves:  # the Bregman form (Wishart) detaches p: no gradient on either side
        assert (g.grad is None) == (t.grad is None)
        if t.grad is not None:
            close(g.grad, t.grad, F64, scale=100)


def test_kl_exponential_family_bregman(rng):
    """Same-type exponential families without a closed form use the Bregman divergence; a
    closed form and the Bregman one agree; different families have none."""
    pg, pt, _ = make("Gamma", rng)
    qg, qt, _ = make("Gamma", rng)
    bregman = D.kl._KL_REGISTRY[D.ExponentialFamily, D.ExponentialFamily]
    close(bregman(pg, qg), TD.kl_divergence(pt, qt), F64, scale=10)
    for p_name in ("Normal", "Beta", "Dirichlet", "Bernoulli", "Exponential"):
        pg, pt, _ = make(p_name, rng)
        qg, qt, _ = make(p_name, rng)
        close(bregman(pg, qg), TD.kl_divergence(pt, qt), F64, scale=100)
    with pytest.raises(NotImplementedError):
        D.kl_divergence(D.Poisson(genesis.ones(2)), D.Wishart(4.0, genesis.eye(2)))
