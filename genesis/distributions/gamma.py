"""Gamma(concentration, rate), its sampler, and the reparameterized gradient of a sample.

Samples come from Marsaglia and Tsang's rejection method, drawn with genesis.randn/rand: for
a >= 1, x = d v with d = a - 1/3, v = (1 + z / sqrt(9 d))^3, accepted when
log u < z^2 / 2 + d - d v + d log v; for a < 1, a sample for a + 1 times u^(1/a).

Gradients use implicit reparameterization: a sample x with CDF value P(a, x) = u held fixed
moves with a as dx/da = -(dP/da) / p(x; a). dP/da comes from the series
P(a, x) = x^a e^-x / Gamma(a + 1) * S,  S = sum_n x^n / ((a+1)...(a+n)), differentiated term by
term, computed in float64 with as many terms as the farthest sample needs (about 12 sqrt(x) + 40
for samples, whose x - a is of order sqrt(a)); the same series gives cdf.
"""


import genesis
from . import constraints
from .exp_family import ExponentialFamily
from .utils import broadcast_all, broadcast_tensors, digamma, lgamma, tiny


def _marsaglia_tsang(alpha):
    """Standard Gamma(alpha) samples (no gradient), one per element of alpha."""
    with genesis.no_grad():
        boost = alpha < 1
        a = genesis.where(boost, alpha + 1, alpha)
        d = a - 1 / 3
        c = (9 * d).rsqrt()
        out = genesis.zeros_like(alpha)
        done = genesis.zeros_like(alpha).bool()
        while not bool(done.all()):
            z = genesis.randn(*alpha.shape, dtype=alpha.dtype, device=alpha.device)
            u = genesis.rand(*alpha.shape, dtype=alpha.dtype, device=alpha.device)
            v = (1 + c * z) ** 3
            log_v = v.clamp(min=tiny(alpha.dtype)).log()
            accept = (v > 0) & (u.log() < 0.5 * z * z + d - d * v + d * log_v) & ~done
            out = genesis.where(accept, d * v, out)
            done = done | accept
        u = genesis.rand(*alpha.shape, dtype=alpha.dtype, device=alpha.device)
        scale = genesis.where(boost, u.pow(1 / alpha), genesis.ones_like(alpha))
        return (out * scale).clamp(min=tiny(alpha.dtype))


def _series(a, x):
    """(log S, mean of h_n under weights t_n / S) of the CDF series, for float64 a, x > 0, where
    t_n = x^n / ((a+1)...(a+n)) and h_n = sum over k <= n of 1 / (a + k)."""
    # t_n grows while n < x - a, then falls like exp(-(n - (x - a))^2 / 2x): beyond
    # max(x - a, 0) + 12 sqrt(x) + 40 terms the rest is below e^-70 of the sum
    reach = (x - a).clamp(min=0) + 12 * x.sqrt()
    terms = int(float(reach.detach().max()) + 40) if x.numel() else 1
    k = genesis.arange(1, terms + 1, dtype=a.dtype, device=a.device)
    a_k = a.unsqueeze(-1) + k
    zero = genesis.zeros(*a.shape, 1, dtype=a.dtype, device=a.device)
    log_t = genesis.cat([zero, (x.log().unsqueeze(-1) - a_k.log()).cumsum(-1)], -1)
    h = genesis.cat([zero, a_k.reciprocal().cumsum(-1)], -1)
    log_s = log_t.logsumexp(-1)
    return log_s, (log_t.softmax(-1) * h).sum(-1)


def gamma_cdf(a, x):
    """Regularized lower incomplete gamma P(a, x) for a > 0, x >= 0 (float64 inside)."""
    a64, x64 = a.double(), x.double().clamp(min=tiny(genesis.float64))
    log_s, _ = _series(a64, x64)
    log_p = a64 * x64.log() - x64 - lgamma(a64 + 1) + log_s
    return log_p.exp().clamp(max=1).to(a.dtype)


def _sample_grad(a, x):
    """dx/da of standard Gamma(a) samples x by the implicit formula (float64 inside)."""
    a64, x64 = a.double(), x.double()
    log_s, mean_h = _series(a64, x64)
    dlogp_da = x64.log() - digamma(a64 + 1) - mean_h
    return (-(x64 / a64) * log_s.exp() * dlogp_da).to(a.dtype)


class _StandardGamma(genesis.autograd.Function):
    """Samples of Gamma(alpha, 1) whose gradient is the implicit reparameterization one."""

    @staticmethod
    def forward(ctx, alpha):
        x = _marsaglia_tsang(alpha)
        ctx.save_for_backward(alpha, x)
        return x

    @staticmethod
    def backward(ctx, g):
        alpha, x = ctx.saved_tensors
        with genesis.no_grad():
            return g * _sample_grad(alpha.detach(), x.detach())


def standard_gamma(alpha):
    """Gamma(alpha, 1) samples, differentiable in alpha."""
    return _StandardGamma.apply(alpha)


class Gamma(ExponentialFamily):
    """Gamma(concentration, rate): density rate^a x^(a-1) e^(-rate x) / Gamma(a)."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    _mean_carrier_measure = 0

    @property
    def _natural_params(self):
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, x, y):
        return lgamma(x + 1) + (x + 1) * (-y.reciprocal()).log()

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        super().__init__(self.concentration.shape, validate_args=validate_args)

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        x = standard_gamma(self.concentration.expand(*shape)) / self.rate.expand(*shape)
        return x.clamp(min=tiny(x.dtype))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        a, rate = self.concentration, self.rate
        return (genesis.xlogy(a, rate) + genesis.xlogy(a - 1, value) - rate * value - lgamma(a))

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        a, x = broadcast_tensors(self.concentration, self.rate * value)
        return gamma_cdf(a, x)

    def entropy(self):
        a = self.concentration
        return a - self.rate.log() + lgamma(a) + (1.0 - a) * digamma(a)


class Chi2(Gamma):
    """Chi-squared with `df` degrees of freedom."""

    arg_constraints = {"df": constraints.positive}

    def __init__(self, df, validate_args=None):
        (df,) = broadcast_all(df)
        super().__init__(0.5 * df, genesis.full(tuple(df.shape), 0.5, dtype=df.dtype,
                                                device=df.device), validate_args=validate_args)

    @property
    def df(self):
        return self.concentration * 2
