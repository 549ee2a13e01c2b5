"""genesis.distributions: probability distributions as `torch.distributions`, for
reinforcement-learning and VAE scripts: sampling with genesis's RNG, reparameterized rsample,
log_prob, entropy, moments, argument validation, transforms and closed-form KL divergences."""

from . import constraints, transforms
from .bernoulli import Bernoulli, Geometric
from .categorical import Categorical, OneHotCategorical, OneHotCategoricalStraightThrough
from .dirichlet import Beta, Dirichlet
from .distribution import Distribution
from .gamma import Chi2, Gamma
from .independent import Independent
from .kl import kl_divergence, register_kl
from .location_scale import Cauchy, Gumbel, HalfNormal, Laplace, Normal
from .log_normal import LogNormal
from .multivariate_normal import MultivariateNormal
from .relaxed import (ExpRelaxedCategorical, LogitRelaxedBernoulli, RelaxedBernoulli,
                      RelaxedOneHotCategorical)
from .student_t import StudentT
from .transformed_distribution import TransformedDistribution
from .transforms import (AffineTransform, ComposeTransform, ExpTransform, PowerTransform,
                         SigmoidTransform, SoftmaxTransform, TanhTransform, Transform,
                         identity_transform)
from .uniform import Exponential, Uniform

__all__ = ["AffineTransform", "Bernoulli", "Beta", "Categorical", "Cauchy", "Chi2",
           "ComposeTransform", "Dirichlet", "Distribution", "ExpRelaxedCategorical",
           "ExpTransform", "Exponential", "Gamma", "Geometric", "Gumbel", "HalfNormal",
           "Independent", "Laplace", "LogNormal", "LogitRelaxedBernoulli", "MultivariateNormal",
           "Normal", "OneHotCategorical", "OneHotCategoricalStraightThrough", "PowerTransform",
           "RelaxedBernoulli", "RelaxedOneHotCategorical", "SigmoidTransform",
           "SoftmaxTransform", "StudentT", "TanhTransform", "Transform",
           "TransformedDistribution", "Uniform", "constraints", "identity_transform",
           "kl_divergence", "register_kl", "transforms"]
