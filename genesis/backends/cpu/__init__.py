"""The CPU backend: numpy kernels, registered with the dispatcher on import."""

# importing registers the kernels
from . import array, dlpack, elementwise, index, linalg, reduce, shape  # noqa: F401
from . import loss, optim  # noqa: F401
from . import amp, attention  # noqa: F401
from . import conv, recurrent  # noqa: F401
from . import decompositions  # noqa: F401
from . import optim_extra  # noqa: F401
from . import shared  # noqa: F401
from . import special  # noqa: F401
from . import polynomials  # noqa: F401
from . import ldl  # noqa: F401
