"""Import every kernel family of the CUDA backend, registering them with the dispatcher."""

from . import array_ops, dlpack  # noqa: F401
from .kernels import elementwise, index, index_compact, norm, reduce, scan, softmax  # noqa: F401
from .kernels import random  # noqa: F401
from .kernels import matmul  # noqa: F401
from .kernels import median, shape, sort  # noqa: F401
from .kernels import loss, optim  # noqa: F401
from .kernels import amp, attention_dropout, attention_launch, decode_attention  # noqa: F401
from .kernels import residual_norm, rotary, swiglu  # noqa: F401
from .kernels import recurrent  # noqa: F401
from .kernels import batch_norm, conv  # noqa: F401
from . import linalg_host, linalg_cusolver  # noqa: F401
from .kernels import optim_extra  # noqa: F401
from .kernels import arange  # noqa: F401
from .kernels import pool, upsample  # noqa: F401
from .kernels import special  # noqa: F401
