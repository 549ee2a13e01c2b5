"""The rest of torch.distributions against torch: count distributions (Poisson, Binomial,
Multinomial, NegativeBinomial), transformed families (Weibull, Pareto, HalfCauchy, InverseGamma,
Kumaraswamy, LogisticNormal), FisherSnedecor, ContinuousBernoulli, GeneralizedPareto, VonMises,
LowRankMultivariateNormal, MixtureSameFamily, Wishart, LKJCholesky; the structured transforms,
biject_to/transform_to, the KL pairs among them, and torch's submodule import paths. Values in
float64 on both sides; sample moments within 5 standard errors at fixed seeds."""

import importlib
import math

import numpy as np
import pytest
import torch
import torch.distributions as TD

import genesis
import genesis.distributions as D
from test_distributions import build, close

pytestmark = pytest.mark.usefixtures("torch_validates_distributions")

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


def transform_pairs(rng):
    """(genesis transform, torch transform, unconstrained input) triples."""
    base = TD.Normal(torch.zeros(()), torch.ones(()))
    pos = rng.uniform(0.5, 2, (3, 4))
    return [
        (D.AbsTransform(), TD.AbsTransform(), rng.uniform(0.1, 2, (3, 4))),
        (D.SoftplusTransform(), TD.SoftplusTransform(), rng.standard_normal((3, 4)) * 3),
        (D.StickBreakingTransform(), TD.StickBreakingTransform(), rng.standard_normal((3, 4))),
        (D.CorrCholeskyTransform(), TD.CorrCholeskyTransform(), rng.standard_normal((2, 6))),
        (D.LowerCholeskyTransform(), TD.LowerCholeskyTransform(), rng.standard_normal((2, 3, 3))),
        (D.PositiveDefiniteTransform(), TD.PositiveDefiniteTransform(),
         rng.standard_normal((2, 3, 3))),
        (D.ReshapeTransform((4,), (2, 2)), TD.ReshapeTransform((4,), (2, 2)),
         rng.standard_normal((3, 4))),
        (D.IndependentTransform(D.ExpTransform(), 1),
         TD.IndependentTransform(TD.ExpTransform(), 1), rng.standard_normal((3, 4))),
        (D.CatTransform([D.ExpTransform(), D.AffineTransform(1.0, 2.0)], dim=-1, lengths=[1, 3]),
         TD.CatTransform([TD.ExpTransform(), TD.AffineTransform(1.0, 2.0)], dim=-1,
                         lengths=[1, 3]), rng.standard_normal((3, 4))),
        (D.CatTransform([D.IndependentTransform(D.ExpTransform(), 1),
                         D.IndependentTransform(D.SoftplusTransform(), 1)], dim=0,
                        lengths=[1, 2]),
         TD.CatTransform([TD.IndependentTransform(TD.ExpTransform(), 1),
                          TD.IndependentTransform(TD.SoftplusTransform(), 1)], dim=0,
                         lengths=[1, 2]), rng.standard_normal((3, 4))),
        (D.CatTransform([D.IndependentTransform(D.ExpTransform(), 1), D.SigmoidTransform()],
                        dim=-1, lengths=[2, 2]),
         TD.CatTransform([TD.IndependentTransform(TD.ExpTransform(), 1),
                          TD.SigmoidTransform()], dim=-1, lengths=[2, 2]),
         rng.standard_normal((3, 4))),
        (D.StackTransform([D.ExpTransform(), D.SigmoidTransform(), D.TanhTransform()], dim=0),
         TD.StackTransform([TD.ExpTransform(), TD.SigmoidTransform(), TD.TanhTransform()],
                           dim=0), rng.standard_normal((3, 4))),
        (D.CumulativeDistributionTransform(D.Normal(0.0, 1.0)),
         TD.CumulativeDistributionTransform(base), rng.standard_normal((3, 4))),
        (D.PowerTransform(genesis.tensor(pos)), TD.PowerTransform(torch.tensor(pos)),
         rng.uniform(0.5, 2, (3, 4))),
    ]


def test_transforms(rng):
    """Forward, inverse, log |det J| and their gradients, shapes and event dims as torch's."""
    for g, t, x in transform_pairs(rng):
        gx = genesis.tensor(x, dtype=F64, requires_grad=True)
        tx = torch.tensor(x, dtype=torch.float64, requires_grad=True)
        gy, ty = g(gx), t(tx)
        close(gy, ty, F64, scale=10)
        close(g.inv(gy.detach()), t.inv(ty.detach()), F64, scale=100)
        assert tuple(g.forward_shape(tuple(x.shape))) == tuple(t.forward_shape(x.shape))
        assert tuple(g.inverse_shape(tuple(gy.shape))) == tuple(t.inverse_shape(ty.shape))
        assert g.domain.event_dim == t.domain.event_dim
        assert g.codomain.event_dim == t.codomain.event_dim
        assert g.bijective == t.bijective
        try:
            inside = bool(t.codomain.check(ty).all())
        except RuntimeError:  # torch's cat constraint cannot join checks of unlike event dims
            with pytest.raises(RuntimeError):
                g.codomain.check(gy)
        else:
            assert bool(g.codomain.check(gy).all()) == inside
        if isinstance(g, (D.PositiveDefiniteTransform, D.LowerCholeskyTransform)):
            continue  # neither library gives their Jacobian
        tl = same_or_both_missing(lambda: g.log_abs_det_jacobian(gx, gy),
                                  lambda: t.log_abs_det_jacobian(tx, ty))
        gl = g.log_abs_det_jacobian(gx, gy) if tl is not None else 0
        (gy.sum() + (gl.sum() if tl is not None else 0)).backward()
        (ty.sum() + (tl.sum() if tl is not None else 0)).backward()
        close(gx.grad, tx.grad, F64, scale=100)


def test_transform_equality_and_cache():
    assert D.ExpTransform() == D.ExpTransform() and D.ExpTransform() != D.SigmoidTransform()
    assert D.AffineTransform(1.0, 2.0) == D.AffineTransform(1.0, 2.0)
    assert D.AffineTransform(1.0, 2.0) != D.AffineTransform(1.0, 3.0)
    assert D.PowerTransform(genesis.tensor(2.0)) == D.PowerTransform(genesis.tensor(2.0))
    assert D.ExpTransform().inv == D.ExpTransform().inv != D.ExpTransform()
    assert D.ComposeTransform([D.ExpTransform(), D.AffineTransform(0.0, 2.0)]) == \
        D.ComposeTransform([D.ExpTransform(), D.AffineTransform(0.0, 2.0)])
    t = D.StickBreakingTransform(cache_size=1)
    x = genesis.randn(3, dtype=F64)
    y = t(x)
    assert t.inv(y) is x and t.with_cache(1) is t
    with pytest.raises(ValueError, match="different numbers of elements"):
        D.ReshapeTransform((3,), (2, 2))
    with pytest.raises(ValueError, match="Too few dimensions"):
        D.IndependentTransform(D.ExpTransform(), 2)(genesis.ones(3))


CONSTRAINTS = ["real", "positive", "nonnegative", "unit_interval", "simplex", "real_vector",
               "lower_cholesky", "positive_definite", "corr_cholesky"]


@pytest.mark.parametrize("registry", ["biject_to", "transform_to"])
def test_constraint_registry(rng, registry):
    """biject_to/transform_to give torch's transform for each constraint, mapping reals into
    the constraint's set."""
    g_reg, t_reg = getattr(D, registry), getattr(TD, registry)
    extra = [(D.constraints.greater_than(1.5), TD.constraints.greater_than(1.5)),
             (D.constraints.less_than(-1.0), TD.constraints.less_than(-1.0)),
             (D.constraints.interval(-2.0, 3.0), TD.constraints.interval(-2.0, 3.0)),
             (D.constraints.independent(D.constraints.positive, 1),
              TD.constraints.independent(TD.constraints.positive, 1)),
             (D.constraints.cat([D.constraints.positive, D.constraints.real], -1, [2, 4]),
              TD.constraints.cat([TD.constraints.positive, TD.constraints.real], -1, [2, 4])),
             (D.constraints.stack([D.constraints.positive, D.constraints.unit_interval], 0),
              TD.constraints.stack([TD.constraints.positive, TD.constraints.unit_interval], 0))]
    pairs = [(getattr(D.constraints, n), getattr(TD.constraints, n)) for n in CONSTRAINTS]
    for gc, tc in pairs + extra:
        try:
            tt = t_reg(tc)
        except NotImplementedError:
            with pytest.raises(NotImplementedError, match="Cannot transform"):
                g_reg(gc)
            continue
        gt = g_reg(gc)
        assert type(gt).__name__ == type(tt).__name__
        shape = {2: (2, 3, 3), 1: (2, 6)}.get(gt.domain.event_dim, (2, 6))
        x = rng.standard_normal(shape)
        gy, ty = gt(genesis.tensor(x, dtype=F64)), tt(torch.tensor(x, dtype=torch.float64))
        close(gy, ty, F64, scale=10)
        assert bool(gc.check(gy).all())
    with pytest.raises(TypeError):
        g_reg.register(3, lambda c: None)


def test_submodule_imports():
    """Every submodule torch.distributions has is importable from genesis.distributions, with
    the same public names where genesis has them."""
    for name in [n for n in dir(TD) if not n.startswith("_")
                 and type(getattr(TD, n)).__name__ == "module" and n != "kl" or n == "kl"]:
        module = importlib.import_module(f"genesis.distributions.{name}")
        torch_module = importlib.import_module(f"torch.distributions.{name}")
        for public in getattr(torch_module, "__all__", []):
            assert hasattr(module, public), f"{name}.{public}"
    from genesis.distributions.normal import Normal
    assert Normal is D.Normal
    assert not [n for n in dir(TD) if not n.startswith("_") and not hasattr(D, n)]


def test_mixture_same_family(rng):
    """A Normal mixture and a mixture of MultivariateNormals: log_prob, cdf, mean, variance
    as torch's; samples of the right shape and moments."""
    probs = rng.dirichlet(np.ones(4), 2)
    loc, scale = rng.standard_normal((2, 4)), rng.uniform(0.5, 2, (2, 4))
    mg = D.MixtureSameFamily(D.Categorical(probs=genesis.tensor(probs, dtype=F64)),
                             D.Normal(genesis.tensor(loc, dtype=F64),
                                      genesis.tensor(scale, dtype=F64)))
    mt = TD.MixtureSameFamily(TD.Categorical(probs=torch.tensor(probs)),
                              TD.Normal(torch.tensor(loc), torch.tensor(scale)))
    v = rng.standard_normal((5, 2)) * 2
    close(mg.log_prob(genesis.tensor(v, dtype=F64)), mt.log_prob(torch.tensor(v)), F64, 10)
    close(mg.cdf(genesis.tensor(v, dtype=F64)), mt.cdf(torch.tensor(v)), F64, 10)
    close(mg.mean, mt.mean, F64, 10)
    close(mg.variance, mt.variance, F64, 10)
    assert tuple(mg.batch_shape) == (2,) and tuple(mg.expand((3, 2)).sample((4,)).shape) == \
        (4, 3, 2)
    genesis.manual_seed(3)
    n = 20000
    x = mg.sample((n,)).numpy()
    assert np.all(np.abs(x.mean(0) - mt.mean.numpy()) < 5 * np.sqrt(x.var(0) / n))
    vec_loc = rng.standard_normal((4, 3))
    mvg = D.MixtureSameFamily(D.Categorical(probs=genesis.tensor(probs[0], dtype=F64)),
                              D.Independent(D.Normal(genesis.tensor(vec_loc, dtype=F64), 1.0),
                                            1))
    mvt = TD.MixtureSameFamily(TD.Categorical(probs=torch.tensor(probs[0])),
                               TD.Independent(TD.Normal(torch.tensor(vec_loc), 1.0), 1))
    w = rng.standard_normal((5, 3))
    close(mvg.log_prob(genesis.tensor(w, dtype=F64)), mvt.log_prob(torch.tensor(w)), F64, 10)
    close(mvg.variance, mvt.variance, F64, 10)
    assert tuple(mvg.sample((6,)).shape) == (6, 3)
    assert bool(mvg.support.check(genesis.tensor(w, dtype=F64)).all())


@pytest.mark.filterwarnings("ignore:Singular sample detected")  # torch's Wishart always warns
def test_enumerate_support_and_expand(rng):
    dg, dt, _, _, _ = pair("Binomial", rng)
    close(dg.enumerate_support(), dt.enumerate_support(), F64)
    close(dg.enumerate_support(False), dt.enumerate_support(False), F64)
    with pytest.raises(NotImplementedError, match="Inhomogeneous"):
        D.Binomial(genesis.tensor([2.0, 3.0]), probs=genesis.tensor([0.5, 0.5])).entropy()
    for name in CASES:
        dg, dt, _, _, _ = pair(name, rng, shape=(3,))
        eg, et = dg.expand((2, 3)), dt.expand((2, 3))
        assert tuple(eg.batch_shape) == tuple(et.batch_shape)
        assert tuple(eg.sample((4,)).shape) == tuple(et.sample((4,)).shape)


@pytest.mark.parametrize("name", ["Weibull", "Pareto", "HalfCauchy", "InverseGamma",
                                  "Kumaraswamy", "FisherSnedecor", "ContinuousBernoulli_logits",
                                  "GeneralizedPareto", "LowRankMultivariateNormal",
                                  "LogisticNormal", "Wishart"])
def test_rsample_gradient(name):
    """The rsample gradient of E[f(x)] matches the derivative of torch's closed-form mean: n
    copies of the parameters, one sample each, whose per-copy gradients average within 5
    standard errors of it; f the first coordinate (for LogisticNormal, of the normal under the
    stick breaking)."""
    genesis.manual_seed(11)
    rng = np.random.default_rng(11)
    n = 4000
    cls_name, make_params, _ = CASES[name]
    p = make_params(rng, (1,))
    torch_leaves = {k: torch.tensor(v, requires_grad=True) for k, v in p.items()}
    dt = getattr(TD, cls_name)(**torch_leaves)
    leaves = {k: genesis.tensor(np.repeat(v, n, 0), dtype=F64, requires_grad=True)
              for k, v in p.items()}
    x = getattr(D, cls_name)(**leaves).rsample()
    if name == "LogisticNormal":
        x = D.StickBreakingTransform().inv(x)
        mean = dt.loc
    else:
        mean = dt.mean
    if not bool(torch.isfinite(mean).all()):
        return
    x.reshape(n, -1)[:, 0].sum().backward()
    mean.reshape(-1)[0].backward()
    for k, v in leaves.items():
        want = torch_leaves[k].grad
        want = np.zeros(p[k].shape) if want is None else want.numpy()
        est = v.grad.numpy().reshape(n, -1)
        se = est.std(0) / np.sqrt(n)
        assert np.all(np.abs(est.mean(0) - want.reshape(-1)) <= 5 * se + 1e-9), (name, k)


def g_t(fn):
    """fn(module, tensor) for genesis and for torch: the same construction on both sides."""
    return (lambda: fn(D, lambda v: genesis.tensor(v, dtype=F64)),
            lambda: fn(TD, lambda v: torch.tensor(v, dtype=torch.float64)))


INVALID = [
    lambda M, T: M.Poisson(T([-1.0, 2.0])),
    lambda M, T: M.Binomial(T([3.0]), probs=T([1.5])),
    lambda M, T: M.Binomial(T([2.5]), probs=T([0.5])),
    lambda M, T: M.Binomial(T([3.0])),
    lambda M, T: M.NegativeBinomial(T([3.0]), probs=T([1.0])),
    lambda M, T: M.Multinomial(3, probs=T([-0.5, 1.5])),
    lambda M, T: M.Weibull(T([1.0]), T([-1.0])),
    lambda M, T: M.Pareto(T([0.0]), T([1.0])),
    lambda M, T: M.HalfCauchy(T([-1.0])),
    lambda M, T: M.InverseGamma(T([1.0]), T([0.0])),
    lambda M, T: M.Kumaraswamy(T([1.0]), T([-2.0])),
    lambda M, T: M.FisherSnedecor(T([1.0]), T([-2.0])),
    lambda M, T: M.GeneralizedPareto(T([0.0]), T([-1.0]), T([0.1])),
    lambda M, T: M.VonMises(T([0.0]), T([-1.0])),
    lambda M, T: M.ContinuousBernoulli(T([1.5]), validate_args=True),
    lambda M, T: M.LowRankMultivariateNormal(T([0.0, 0.0]), T([[1.0], [1.0]]), T([1.0, -1.0])),
    lambda M, T: M.LowRankMultivariateNormal(T(0.0), T([[1.0]]), T([1.0])),
    lambda M, T: M.LowRankMultivariateNormal(T([0.0, 0.0]), T([[1.0]]), T([1.0, 1.0])),
    lambda M, T: M.LowRankMultivariateNormal(T([0.0, 0.0]), T([[1.0], [1.0]]), T([1.0])),
    lambda M, T: M.LogisticNormal(T([0.0]), T([-1.0])),
    lambda M, T: M.Wishart(T(1.0), T([[1.0, 0.0], [0.0, 1.0]])),
    lambda M, T: M.Wishart(T(3.0), scale_tril=T([[1.0, 1.0], [0.0, 1.0]])),
    lambda M, T: M.LKJCholesky(1),
    lambda M, T: M.LKJCholesky(3, T([-1.0])),
    lambda M, T: M.Beta(T([1.0]), T([-1.0])),
    lambda M, T: M.MixtureSameFamily(M.Normal(T([0.0]), T([1.0])), M.Normal(T([0.0]), T([1.0]))),
    lambda M, T: M.MixtureSameFamily(M.Categorical(probs=T([0.5, 0.5])),
                                     M.Normal(T([0.0, 1.0, 2.0]), T([1.0, 1.0, 1.0]))),
    lambda M, T: M.Poisson(T([1.0])).log_prob(T([-1.0])),
    lambda M, T: M.Poisson(T([1.0])).log_prob(T([0.5])),
    lambda M, T: M.Binomial(T([3.0]), probs=T([0.5])).log_prob(T([4.0])),
    lambda M, T: M.Multinomial(3, probs=T([0.5, 0.5])).log_prob(T([3.0, 1.0])),
    lambda M, T: M.Pareto(T([2.0]), T([1.0])).log_prob(T([1.0])),
    lambda M, T: M.Kumaraswamy(T([2.0]), T([1.0])).log_prob(T([1.5])),
    lambda M, T: M.LKJCholesky(2, T([1.0])).log_prob(T([[1.0, 0.0], [1.0, 1.0]])),
]


@pytest.mark.parametrize("index", range(len(INVALID)))
def test_argument_validation(index):
    """torch's error type and first message line for invalid parameters and values."""
    g_fn, t_fn = g_t(INVALID[index])
    with pytest.raises(Exception) as want:
        t_fn()
    with pytest.raises(type(want.value)) as got:
        g_fn()
    message = str(want.value).replace("torch.", "genesis.").split("\n")[0]
    assert str(got.value).split("\n")[0] == message


def on(device, name, rng, shape=(2, 3)):
    """(distribution with float64 leaf parameters on `device`, the same on the CPU, its
    leaves, values on the CPU)."""
    cls_name, make_params, values = CASES[name]
    p = make_params(rng, shape)
    leaves = {k: v if isinstance(v, int) else
              genesis.tensor(v, dtype=F64, device=device, requires_grad=True)
              for k, v in p.items()}
    cpu = {k: v if isinstance(v, int) else genesis.tensor(v, dtype=F64) for k, v in p.items()}
    cls = getattr(D, cls_name)
    return cls(**leaves), cls(**cpu), leaves, genesis.tensor(values(rng, shape, p), dtype=F64)


@pytest.mark.parametrize("name", list(CASES))
def test_on_device(device, rng, name):
    """log_prob, entropy and moments on `device` as on the CPU; samples made on the device;
    gradients reaching the device parameters through rsample (or log_prob)."""
    dist, cpu, leaves, v = on(device, name, rng)
    lp = dist.log_prob(v.to(device))
    assert lp.device.type == device
    close(lp.cpu(), torch.tensor(cpu.log_prob(v).detach().numpy()), F64)
    for moment in ("mean", "variance"):
        try:
            want = getattr(cpu, moment)
        except NotImplementedError:
            continue
        close(getattr(dist, moment).cpu(), torch.tensor(want.detach().numpy()), F64)
    try:
        want = cpu.entropy()
    except NotImplementedError:
        want = None
    if want is not None:
        close(dist.entropy().cpu(), torch.tensor(want.detach().numpy()), F64)
    x = dist.sample((3,))
    assert x.device.type == device and bool(dist.support.check(x).all())
    total = dist.rsample((3,)).sum() if dist.has_rsample else lp.sum()
    total.backward()
    grads = [t.grad for t in leaves.values() if not isinstance(t, int)]
    assert any(g is not None for g in grads)
    assert all(g.device.type == device for g in grads if g is not None)


def test_transforms_and_kl_on_device(device, rng):
    for g, t, x in transform_pairs(rng):
        if isinstance(g, (D.CumulativeDistributionTransform, D.PowerTransform)):
            continue  # parameters on the CPU
        gx = genesis.tensor(x, dtype=F64, device=device)
        y = g(gx)
        assert y.device.type == device
        close(y.cpu(), t(torch.tensor(x)), F64, scale=10)
        close(g.inv(y).cpu(), t.inv(t(torch.tensor(x))), F64, scale=100)
    for p_name, q_name in [("Poisson", "Poisson"), ("Binomial", "Binomial"),
                           ("LowRankMultivariateNormal", "LowRankMultivariateNormal"),
                           ("ContinuousBernoulli", "ContinuousBernoulli"), ("Pareto", "Pareto"),
                           ("Wishart", "Wishart")]:
        pd, pc, _, _ = on(device, p_name, rng)
        qd, qc, _, _ = on(device, q_name, rng)
        kl = D.kl_divergence(pd, qd)
        assert kl.device.type == device
        close(kl.cpu(), torch.tensor(D.kl_divergence(pc, qc).detach().numpy()), F64, scale=10)


def test_custom_subclass_expand():
    """A subclass with its own __init__ gets torch's error from the inherited checked-instance
    helper, and a bare instance without one."""
    class Shifted(D.Normal):
        def __init__(self, loc):
            super().__init__(loc, 1.0)

    with pytest.raises(NotImplementedError, match="Subclass Shifted of Normal"):
        Shifted(genesis.zeros(2))._get_checked_instance(D.Normal)
    normal = D.Normal(genesis.zeros(2), 1.0)
    assert type(normal._get_checked_instance(D.Normal)) is D.Normal


def test_matrix_parameterizations(rng):
    """LowRankMultivariateNormal's and Wishart's derived matrices as torch's; a Wishart given
    by its precision matrix; a Multinomial given by logits."""
    dg, dt, _, _, _ = pair("LowRankMultivariateNormal", rng)
    for name in ("covariance_matrix", "precision_matrix", "scale_tril"):
        close(getattr(dg, name), getattr(dt, name), F64, scale=10)
    dg, dt, _, _, p = pair("Wishart", rng)
    for name in ("covariance_matrix", "precision_matrix", "scale_tril"):
        close(getattr(dg, name), getattr(dt, name), F64, scale=10)
    precision = np.linalg.inv(p["covariance_matrix"])
    wg = D.Wishart(genesis.tensor(p["df"], dtype=F64),
                   precision_matrix=genesis.tensor(precision, dtype=F64))
    wt = TD.Wishart(torch.tensor(p["df"]), precision_matrix=torch.tensor(precision))
    v = spd(rng, (2, 3))
    close(wg.log_prob(genesis.tensor(v, dtype=F64)), wt.log_prob(torch.tensor(v)), F64, 100)
    logits = rng.standard_normal((2, 4))
    c = counts(rng, (2,), 5)
    close(D.Multinomial(5, logits=genesis.tensor(logits, dtype=F64)).log_prob(
        genesis.tensor(c, dtype=F64)),
        TD.Multinomial(5, logits=torch.tensor(logits)).log_prob(torch.tensor(c)), F64, 10)
    with pytest.raises(NotImplementedError, match="inhomogeneous"):
        D.Multinomial(genesis.tensor(5.0), probs=genesis.ones(3))


@pytest.mark.parametrize("name", list(CASES))
def test_float32(rng, torch_float64, name):
    """float32 parameters give float32 log_prob and samples, within float32's tolerance of
    torch's float64 values."""
    cls_name, make_params, values = CASES[name]
    p = make_params(rng, (2, 3))
    dg = getattr(D, cls_name)(**{k: v if isinstance(v, int) else
                                 genesis.tensor(v, dtype=genesis.float32) for k, v in p.items()})
    dt = getattr(TD, cls_name)(**{k: v if isinstance(v, int) else torch.tensor(v)
                                  for k, v in p.items()})
    v = values(rng, (2, 3), p)
    lg = dg.log_prob(genesis.tensor(v, dtype=genesis.float32))
    assert lg.dtype is genesis.float32 and dg.sample((2,)).dtype is genesis.float32
    close(lg, dt.log_prob(torch.tensor(v)), genesis.float32, scale=10)
