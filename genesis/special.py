"""`genesis.special`: torch.special's names for the special functions in genesis.ops."""

from . import numpy_names, out_variants
from .ops.elementwise import erf, erfc, exp2, expm1, log1p, round, sigmoid as expit, xlogy
from .ops.reduce import log_softmax, logsumexp, softmax
from .ops.special import (digamma, entr, erfinv, i0, i0e, i1, i1e, igamma as gammainc,
                          igammac as gammaincc, lgamma as gammaln, log_ndtr, logit,
                          mvlgamma as multigammaln, ndtr, ndtri, polygamma, sinc, xlog1py)
from .ops.special_functions import *  # noqa: F401,F403
from .ops.special_functions import __all__ as _KERNEL_FUNCTIONS

psi = digamma

__all__ = ["expit", "logit", "erf", "erfc", "erfinv", "gammaln", "digamma", "psi", "polygamma",
           "multigammaln", "gammainc", "gammaincc", "i0", "i0e", "i1", "i1e", "ndtr", "ndtri",
           "log_ndtr", "xlogy", "xlog1py", "sinc", "entr", "log_softmax", "softmax", "logsumexp",
           "round", "exp2", "expm1", "log1p", *_KERNEL_FUNCTIONS]

out_variants.install(globals(), out_variants.SPECIAL_FUNCTIONS)
numpy_names.install(globals(), "genesis.special")
