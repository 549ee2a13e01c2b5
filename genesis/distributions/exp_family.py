"""ExponentialFamily: distributions p(x; t) = h(x) exp(<t, T(x)> - F(t)), whose entropy (and
KL between two of one type) follow from the log normalizer F by autograd (Bregman
divergences)."""

import genesis
from .distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """Subclasses give `_natural_params`, `_log_normalizer(*params)` and
    `_mean_carrier_measure` (E[log h(x)])."""

    @property
    def _natural_params(self):
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        raise NotImplementedError

    def entropy(self):
        """F(t) - <t, grad F(t)> - E[log h(x)]."""
        params = [p.detach().requires_grad_() for p in self._natural_params]
        with genesis.enable_grad():
            log_norm = self._log_normalizer(*params)
            grads = genesis.autograd.grad(log_norm.sum(), params, create_graph=True)
        result = log_norm - self._mean_carrier_measure
        for p, g in zip(params, grads):
            result = result - (p * g).reshape(*self._batch_shape, -1).sum(-1)
        return result
