"""`torch.distributions.relaxed_bernoulli`'s import path for
LogitRelaxedBernoulli, RelaxedBernoulli."""

from .relaxed import LogitRelaxedBernoulli, RelaxedBernoulli

__all__ = ["LogitRelaxedBernoulli", "RelaxedBernoulli"]
