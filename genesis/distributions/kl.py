"""kl_divergence(p, q) with a registry of closed forms (`register_kl`), dispatched on the most
specific registered pair of types."""

import math

import genesis
import genesis.linalg as LA
from .bernoulli import Bernoulli, Geometric
from .binomial import Binomial
from .categorical import Categorical, OneHotCategorical
from .continuous_bernoulli import ContinuousBernoulli
from .dirichlet import Beta, Dirichlet
from .exp_family import ExponentialFamily
from .gamma import Gamma
from .independent import Independent, sum_rightmost
from .location_scale import Cauchy, Gumbel, HalfNormal, Laplace, Normal
from .log_normal import LogNormal
from .lowrank_multivariate_normal import (LowRankMultivariateNormal, _batch_lowrank_logdet,
                                          _batch_lowrank_mahalanobis)
from .multivariate_normal import MultivariateNormal, batch_mahalanobis
from .pareto import Pareto
from .poisson import Poisson
from .transformed_distribution import TransformedDistribution
from .uniform import Exponential, Uniform
from .utils import broadcast_shapes, digamma, lgamma

_KL_REGISTRY = {}
_EULER_GAMMA = 0.57721566490153286060


def register_kl(type_p, type_q):
    """Decorator: `fn(p, q)` computes KL(p || q) for p of `type_p` and q of `type_q`."""
    def decorate(fn):
        _KL_REGISTRY[type_p, type_q] = fn
        return fn
    return decorate


def _lookup(type_p, type_q):
    """The registered function of the closest (by MRO) pair of base classes."""
    for i, p in enumerate(type_p.__mro__):
        for q in type_q.__mro__:
            if (p, q) in _KL_REGISTRY:
                return _KL_REGISTRY[p, q]
    return None


def kl_divergence(p, q):
    """KL(p || q) = E_p[log p - log q], in closed form, batched."""
    fn = _lookup(type(p), type(q))
    if fn is None:
        raise NotImplementedError(f"No KL(p || q) is implemented for p type "
                                  f"{p.__class__.__name__} and q type {q.__class__.__name__}")
    return fn(p, q)


def _infinite_where(condition, value):
    return genesis.where(condition, float("inf"), value)


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(LogNormal, LogNormal)
def _kl_lognormal_lognormal(p, q):
    return _kl_normal_normal(p.base_dist, q.base_dist)


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p, q):
    scale_ratio = p.scale / q.scale
    loc_abs_diff = (p.loc - q.loc).abs()
    return (-scale_ratio.log() + loc_abs_diff / q.scale
            + scale_ratio * (-loc_abs_diff / p.scale).exp() - 1)


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    softplus = genesis.nn.functional.softplus
    t1 = p.probs * (softplus(-q.logits) - softplus(-p.logits))
    t1 = genesis.where(q.probs == 0, float("inf"), t1)
    t1 = genesis.where(p.probs == 0, 0.0, t1)
    t2 = (1 - p.probs) * (softplus(q.logits) - softplus(p.logits))
    t2 = genesis.where(q.probs == 1, float("inf"), t2)
    t2 = genesis.where(p.probs == 1, 0.0, t2)
    return t1 + t2


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    t = p.probs * (p.logits - q.logits)
    t = genesis.where((q.probs == 0).expand_as(t), float("inf"), t)
    t = genesis.where((p.probs == 0).expand_as(t), 0.0, t)
    return t.sum(-1)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehot_onehot(p, q):
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Beta, Beta)
def _kl_beta_beta(p, q):
    sum_p = p.concentration1 + p.concentration0
    sum_q = q.concentration1 + q.concentration0
    t1 = lgamma(q.concentration1) + lgamma(q.concentration0) + lgamma(sum_p)
    t2 = lgamma(p.concentration1) + lgamma(p.concentration0) + lgamma(sum_q)
    t3 = (p.concentration1 - q.concentration1) * digamma(p.concentration1)
    t4 = (p.concentration0 - q.concentration0) * digamma(p.concentration0)
    t5 = (sum_q - sum_p) * digamma(sum_p)
    return t1 - t2 + t3 + t4 + t5


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p, q):
    sum_p = p.concentration.sum(-1)
    sum_q = q.concentration.sum(-1)
    t1 = lgamma(sum_p) - lgamma(sum_q)
    t2 = (lgamma(p.concentration) - lgamma(q.concentration)).sum(-1)
    t3 = p.concentration - q.concentration
    t4 = digamma(p.concentration) - digamma(sum_p).unsqueeze(-1)
    return t1 - t2 + (t3 * t4).sum(-1)


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p, q):
    rate_ratio = q.rate / p.rate
    return -rate_ratio.log() + rate_ratio - 1


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p, q):
    t1 = q.concentration * (p.rate / q.rate).log()
    t2 = lgamma(q.concentration) - lgamma(p.concentration)
    t3 = (p.concentration - q.concentration) * digamma(p.concentration)
    t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4


@register_kl(Exponential, Gamma)
def _kl_exponential_gamma(p, q):
    ratio = q.rate / p.rate
    t1 = -q.concentration * ratio.log()
    return t1 + ratio + lgamma(q.concentration) + q.concentration * _EULER_GAMMA \
        - (1 + _EULER_GAMMA)


@register_kl(Gamma, Exponential)
def _kl_gamma_exponential(p, q):
    return -p.entropy() - q.rate.log() + q.rate * (p.concentration / p.rate)


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    result = ((q.high - q.low) / (p.high - p.low)).log()
    return _infinite_where((q.low > p.low) | (q.high < p.high), result)


@register_kl(Uniform, Normal)
def _kl_uniform_normal(p, q):
    width = p.high - p.low
    t1 = (math.sqrt(math.pi * 2) * q.scale / width).log()
    t2 = width.pow(2) / 12
    t3 = ((p.high + p.low - 2 * q.loc) / 2).pow(2)
    return t1 + 0.5 * (t2 + t3) / q.scale.pow(2)


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_mvn_mvn(p, q):
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two Multivariate Normals with different event "
                         "shapes cannot be computed")
    Lp, Lq = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
    half_term1 = Lq.diagonal(0, -2, -1).log().sum(-1) - Lp.diagonal(0, -2, -1).log().sum(-1)
    n = p.event_shape[0]
    batch = broadcast_shapes(tuple(Lq.shape[:-2]), tuple(Lp.shape[:-2]))
    ratio = LA.solve_triangular(Lq.expand(*batch, n, n), Lp.expand(*batch, n, n), upper=False)
    term2 = ratio.pow(2).sum((-2, -1))
    term3 = batch_mahalanobis(Lq, q.loc - p.loc)
    return half_term1 + 0.5 * (term2 + term3 - n)


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError
    return sum_rightmost(kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p, q):
    var_ratio = (p.scale / q.scale).pow(2)
    return 0.5 * (var_ratio - 1 - var_ratio.log())


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p, q):
    ratio = p.scale / q.scale
    q_loc, p_loc = q.loc / q.scale, p.loc / q.scale
    t3 = (q_loc + lgamma(1 + ratio) - p_loc).exp()
    return -ratio.log() - q_loc + p_loc + ratio * _EULER_GAMMA + t3 - (1 + _EULER_GAMMA)


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p, q):
    return -p.entropy() - (-q.probs).log1p() / p.probs - q.logits


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p, q):
    t1 = ((p.scale + q.scale).pow(2) + (p.loc - q.loc).pow(2)).log()
    return t1 - (4 * p.scale * q.scale).log()


@register_kl(Normal, Laplace)
def _kl_normal_laplace(p, q):
    loc_diff = p.loc - q.loc
    standardized = loc_diff / p.scale
    t2 = math.sqrt(2 / math.pi) * p.scale * (-0.5 * standardized.pow(2)).exp()
    t3 = loc_diff * genesis.erf(math.sqrt(0.5) * standardized)
    return -(p.scale / q.scale).log() + (t2 + t3) / q.scale - 0.5 * (1 + math.log(0.5 * math.pi))


def _normal_cross_entropy_terms(q, first, second):
    """E_p[-log q] for a Normal q from p's first and second moments."""
    var = q.scale.pow(2)
    return 0.5 * (2 * math.pi * var).log() + (0.5 * second - q.loc * first
                                              + 0.5 * q.loc.pow(2)) / var


@register_kl(Laplace, Normal)
def _kl_laplace_normal(p, q):
    second = p.loc.pow(2) + 2 * p.scale.pow(2)
    return -p.entropy() + _normal_cross_entropy_terms(q, p.loc, second)


@register_kl(Exponential, Normal)
def _kl_exponential_normal(p, q):
    return -p.entropy() + _normal_cross_entropy_terms(q, p.mean, 2 * p.rate.pow(-2))


@register_kl(Gamma, Normal)
def _kl_gamma_normal(p, q):
    second = p.concentration * (p.concentration + 1) / p.rate.pow(2)
    return -p.entropy() + _normal_cross_entropy_terms(q, p.mean, second)


@register_kl(Beta, Normal)
def _kl_beta_normal(p, q):
    return -p.entropy() + _normal_cross_entropy_terms(q, p.mean, p.variance + p.mean.pow(2))


@register_kl(Gumbel, Normal)
def _kl_gumbel_normal(p, q):
    return -p.entropy() + _normal_cross_entropy_terms(q, p.mean, p.variance + p.mean.pow(2))


@register_kl(Normal, Gumbel)
def _kl_normal_gumbel(p, q):
    mean_ratio, var_ratio = p.loc / q.scale, (p.scale / q.scale).pow(2)
    loc_ratio = q.loc / q.scale
    t3 = (-mean_ratio + 0.5 * var_ratio + loc_ratio).exp()
    return (-0.5 * var_ratio.log() + mean_ratio - loc_ratio + t3
            - 0.5 * (1 + math.log(2 * math.pi)))


@register_kl(Beta, Exponential)
def _kl_beta_exponential(p, q):
    return -p.entropy() - q.rate.log() + q.rate * p.mean


@register_kl(Beta, Gamma)
def _kl_beta_gamma(p, q):
    mean_log = digamma(p.concentration1) - digamma(p.concentration1 + p.concentration0)
    return (-p.entropy() + lgamma(q.concentration) - q.concentration * q.rate.log()
            - (q.concentration - 1) * mean_log + q.rate * p.mean)


@register_kl(Beta, Uniform)
def _kl_beta_uniform(p, q):
    result = -p.entropy() + (q.high - q.low).log()
    return _infinite_where((q.low > 0) | (q.high < 1), result)


@register_kl(Uniform, Exponential)
def _kl_uniform_exponential(p, q):
    result = q.rate * (p.high + p.low) / 2 - ((p.high - p.low) * q.rate).log()
    return _infinite_where(p.low < 0, result)


@register_kl(Uniform, Gamma)
def _kl_uniform_gamma(p, q):
    width = p.high - p.low
    x_log_x = genesis.xlogy(p.high, p.high) - genesis.xlogy(p.low, p.low)
    t2 = lgamma(q.concentration) - q.concentration * q.rate.log()
    t3 = (1 - q.concentration) * (x_log_x - width) / width
    result = -width.log() + t2 + t3 + q.rate * (p.high + p.low) / 2
    return _infinite_where(p.low < 0, result)


@register_kl(Uniform, Gumbel)
def _kl_uniform_gumbel(p, q):
    ratio = q.scale / (p.high - p.low)
    high, low = (p.high - q.loc) / q.scale, (p.low - q.loc) / q.scale
    return ratio.log() + 0.5 * (high + low) - ratio * ((-high).exp() - (-low).exp())


def _infinite(p, q):
    """KL(p || q) where p puts mass outside q's support."""
    param = next(v for v in p.__dict__.values() if isinstance(v, genesis.Tensor))
    return genesis.full(tuple(p.batch_shape), float("inf"), dtype=param.dtype,
                        device=param.device)


for _p, _q in [(Normal, Uniform), (Normal, Gamma), (Normal, Exponential), (Normal, Beta),
               (Gumbel, Uniform), (Gumbel, Gamma), (Gumbel, Exponential), (Gumbel, Beta),
               (Laplace, Uniform), (Laplace, Gamma), (Laplace, Exponential), (Laplace, Beta),
               (Exponential, Uniform), (Exponential, Beta), (Gamma, Uniform), (Gamma, Beta),
               (Uniform, Beta), (Beta, Pareto), (ContinuousBernoulli, Pareto),
               (Exponential, ContinuousBernoulli), (Exponential, Pareto),
               (Gamma, ContinuousBernoulli), (Gamma, Pareto), (Gumbel, ContinuousBernoulli),
               (Gumbel, Pareto), (Laplace, ContinuousBernoulli), (Laplace, Pareto),
               (Normal, ContinuousBernoulli), (Normal, Pareto), (Pareto, Beta),
               (Pareto, ContinuousBernoulli), (Pareto, Uniform), (Poisson, Bernoulli),
               (Poisson, Binomial)]:
    register_kl(_p, _q)(_infinite)


@register_kl(ExponentialFamily, ExponentialFamily)
def _kl_expfamily_expfamily(p, q):
    """The Bregman divergence of the log normalizer between the natural parameters."""
    if type(p) is not type(q):
        raise NotImplementedError("The cross KL-divergence between different exponential "
                                  "families cannot be computed using Bregman divergences")
    p_params = [t.detach().requires_grad_() for t in p._natural_params]
    q_params = q._natural_params
    with genesis.enable_grad():
        log_norm = p._log_normalizer(*p_params)
        grads = genesis.autograd.grad(log_norm.sum(), p_params, create_graph=True)
    result = q._log_normalizer(*q_params) - log_norm
    for pp, qp, g in zip(p_params, q_params, grads):
        result = result - sum_rightmost((qp - pp) * g, len(q.event_shape))
    return result


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p, q):
    if p.transforms != q.transforms or p.event_shape != q.event_shape:
        raise NotImplementedError
    return kl_divergence(p.base_dist, q.base_dist)


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p, q):
    if bool((p.total_count < q.total_count).any()):
        raise NotImplementedError("KL between Binomials where q.total_count > p.total_count is "
                                  "not implemented")
    kl = p.total_count * (p.probs * (p.logits - q.logits) + (-p.probs).log1p()
                          - (-q.probs).log1p())
    return _infinite_where(p.total_count > q.total_count, kl)


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p, q):
    return p.rate * (p.rate.log() - q.rate.log()) - (p.rate - q.rate)


@register_kl(Bernoulli, Poisson)
def _kl_bernoulli_poisson(p, q):
    return -p.entropy() - (p.probs * q.rate.log() - q.rate)


def _continuous_bernoulli_cross_entropy(q, mean):
    """E_p[-log q] for a ContinuousBernoulli q, from p's mean."""
    return -mean * q.logits - (-q.probs).log1p() - q._cont_bern_log_norm()


@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_continuous_bernoulli_continuous_bernoulli(p, q):
    t1 = p.mean * (p.logits - q.logits)
    t2 = p._cont_bern_log_norm() + (-p.probs).log1p()
    t3 = -q._cont_bern_log_norm() - (-q.probs).log1p()
    return t1 + t2 + t3


@register_kl(Beta, ContinuousBernoulli)
def _kl_beta_continuous_bernoulli(p, q):
    return -p.entropy() + _continuous_bernoulli_cross_entropy(q, p.mean)


@register_kl(Uniform, ContinuousBernoulli)
def _kl_uniform_continuous_bernoulli(p, q):
    result = -p.entropy() + _continuous_bernoulli_cross_entropy(q, p.mean)
    return _infinite_where((p.high >= 1.0) | (p.low <= 0.0), result)


@register_kl(ContinuousBernoulli, Exponential)
def _kl_continuous_bernoulli_exponential(p, q):
    return -p.entropy() - q.rate.log() + q.rate * p.mean


@register_kl(ContinuousBernoulli, Normal)
def _kl_continuous_bernoulli_normal(p, q):
    return -p.entropy() + _normal_cross_entropy_terms(q, p.mean, p.variance + p.mean.pow(2))


@register_kl(ContinuousBernoulli, Uniform)
def _kl_continuous_bernoulli_uniform(p, q):
    result = -p.entropy() + (q.high - q.low).log()
    return _infinite_where((q.low >= 0.0) | (q.high <= 1.0), result)


@register_kl(Exponential, Gumbel)
def _kl_exponential_gumbel(p, q):
    scale_rate_prod = p.rate * q.scale
    loc_scale_ratio = q.loc / q.scale
    t1 = scale_rate_prod.log() - 1
    t2 = loc_scale_ratio.exp() * scale_rate_prod / (scale_rate_prod + 1)
    return t1 - loc_scale_ratio + t2 + scale_rate_prod.reciprocal()


@register_kl(Gamma, Gumbel)
def _kl_gamma_gumbel(p, q):
    a = p.concentration
    beta_scale_prod = p.rate * q.scale
    loc_scale_ratio = q.loc / q.scale
    t1 = (a - 1) * digamma(a) - lgamma(a) - a
    t2 = beta_scale_prod.log() + a / beta_scale_prod
    t3 = loc_scale_ratio.exp() * (1 + beta_scale_prod.reciprocal()).pow(-a) - loc_scale_ratio
    return t1 + t2 + t3


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p, q):
    alpha_ratio = q.alpha / p.alpha
    result = q.alpha * (p.scale / q.scale).log() - alpha_ratio.log() + alpha_ratio - 1
    return _infinite_where(p.support.lower_bound < q.support.lower_bound, result)


@register_kl(Pareto, Exponential)
def _kl_pareto_exponential(p, q):
    scale_rate_prod = p.scale * q.rate
    t1 = (p.alpha / scale_rate_prod).log()
    t3 = p.alpha * scale_rate_prod / (p.alpha - 1)
    return _infinite_where(p.alpha <= 1, t1 - p.alpha.reciprocal() + t3 - 1)


@register_kl(Pareto, Gamma)
def _kl_pareto_gamma(p, q):
    common_term = p.scale.log() + p.alpha.reciprocal()
    t1 = p.alpha.log() - common_term
    t2 = lgamma(q.concentration) - q.concentration * q.rate.log()
    t3 = (1 - q.concentration) * common_term
    t4 = q.rate * p.alpha * p.scale / (p.alpha - 1)
    return _infinite_where(p.alpha <= 1, t1 + t2 + t3 + t4 - 1)


@register_kl(Pareto, Normal)
def _kl_pareto_normal(p, q):
    var_normal = 2 * q.scale.pow(2)
    common_term = p.scale / (p.alpha - 1)
    t1 = (math.sqrt(2 * math.pi) * q.scale * p.alpha / p.scale).log()
    t3 = p.alpha * common_term.pow(2) / (p.alpha - 2)
    t4 = (p.alpha * common_term - q.loc).pow(2)
    result = t1 - p.alpha.reciprocal() + (t3 + t4) / var_normal - 1
    return _infinite_where(p.alpha <= 2, result)


@register_kl(Uniform, Pareto)
def _kl_uniform_pareto(p, q):
    width = p.high - p.low
    t1 = (q.alpha * q.scale.pow(q.alpha) * width).log()
    x_log_x = genesis.xlogy(p.high, p.high) - genesis.xlogy(p.low, p.low)
    result = (x_log_x - width) / width * (q.alpha + 1) - t1
    return _infinite_where(p.low < q.support.lower_bound, result)


def _batch_trace_XXT(bmat):
    """trace(X X^T) of each matrix X in the batch."""
    return bmat.pow(2).sum((-2, -1))


def _check_event_shapes(p, q):
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two (Low Rank) Multivariate Normals with "
                         "different event shapes cannot be computed")


def _lowrank_logdet(d):
    return _batch_lowrank_logdet(d._unbroadcasted_cov_factor, d._unbroadcasted_cov_diag,
                                 d._capacitance_tril)


def _lowrank_q_terms(p, q):
    """log det(q cov), the Mahalanobis term of the means under q, and A with
    q cov^-1 = D^-1 - A^T A, for a low-rank q."""
    mahalanobis = _batch_lowrank_mahalanobis(q._unbroadcasted_cov_factor,
                                             q._unbroadcasted_cov_diag, q.loc - p.loc,
                                             q._capacitance_tril)
    Wt_Dinv = q._unbroadcasted_cov_factor.mT / q._unbroadcasted_cov_diag.unsqueeze(-2)
    L = q._capacitance_tril
    batch = broadcast_shapes(tuple(L.shape[:-2]), tuple(Wt_Dinv.shape[:-2]))
    A = LA.solve_triangular(L.expand(*batch, *L.shape[-2:]),
                            Wt_Dinv.expand(*batch, *Wt_Dinv.shape[-2:]), upper=False)
    return _lowrank_logdet(q), mahalanobis, A


@register_kl(LowRankMultivariateNormal, LowRankMultivariateNormal)
def _kl_lowrank_lowrank(p, q):
    _check_event_shapes(p, q)
    q_logdet, term3, A = _lowrank_q_terms(p, q)
    q_diag, p_diag = q._unbroadcasted_cov_diag, p._unbroadcasted_cov_diag
    term21 = (p_diag / q_diag).sum(-1)
    term22 = _batch_trace_XXT(p._unbroadcasted_cov_factor * q_diag.rsqrt().unsqueeze(-1))
    term23 = _batch_trace_XXT(A * p_diag.sqrt().unsqueeze(-2))
    term24 = _batch_trace_XXT(A @ p._unbroadcasted_cov_factor)
    term2 = term21 + term22 - term23 - term24
    return 0.5 * (q_logdet - _lowrank_logdet(p) + term2 + term3 - p.event_shape[0])


@register_kl(MultivariateNormal, LowRankMultivariateNormal)
def _kl_mvn_lowrank(p, q):
    _check_event_shapes(p, q)
    q_logdet, term3, A = _lowrank_q_terms(p, q)
    Lp = p._unbroadcasted_scale_tril
    term1 = q_logdet - 2 * Lp.diagonal(0, -2, -1).log().sum(-1)
    term21 = _batch_trace_XXT(Lp * q._unbroadcasted_cov_diag.rsqrt().unsqueeze(-1))
    term22 = _batch_trace_XXT(A @ Lp)
    return 0.5 * (term1 + term21 - term22 + term3 - p.event_shape[0])


@register_kl(LowRankMultivariateNormal, MultivariateNormal)
def _kl_lowrank_mvn(p, q):
    _check_event_shapes(p, q)
    Lq = q._unbroadcasted_scale_tril
    term1 = 2 * Lq.diagonal(0, -2, -1).log().sum(-1) - _lowrank_logdet(p)
    term3 = batch_mahalanobis(Lq, q.loc - p.loc)
    n, m = p.event_shape[0], p.cov_factor.shape[-1]
    batch = broadcast_shapes(tuple(Lq.shape[:-2]), tuple(p._unbroadcasted_cov_factor.shape[:-2]))
    Lq = Lq.expand(*batch, n, n)
    factor = p._unbroadcasted_cov_factor.expand(*batch, n, m)
    diag = genesis.diag_embed(p._unbroadcasted_cov_diag.sqrt()).expand(*batch, n, n)
    term2 = _batch_trace_XXT(LA.solve_triangular(Lq, factor, upper=False)) \
        + _batch_trace_XXT(LA.solve_triangular(Lq, diag, upper=False))
    return 0.5 * (term1 + term2 + term3 - n)
