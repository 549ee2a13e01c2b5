"""Genesis: a deep learning framework written from scratch, with PyTorch's API.

Public names only; see the subpackages for the layers (tensor, autograd, ops, dispatch, backends).
"""

from . import autograd, cuda, dtypes
from .autograd import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from .autograd.grad_mode import is_inference_mode_enabled
from .autograd.anomaly_mode import (is_anomaly_check_nan_enabled, is_anomaly_enabled,
                                    set_anomaly_enabled)
from .device import device, get_default_device, set_default_device
from .memory_formats import (channels_last, channels_last_3d, contiguous_format,
                             legacy_contiguous_format, memory_format, preserve_format)
from .dtypes import (bfloat16, can_cast, float16, float32, float64, get_default_dtype, int8,
                     int16, int32, int64, promote_types, result_type as _result_type,
                     set_default_dtype, uint8)
from .dtypes import bool_ as bool  # noqa: A001  (genesis.bool, as torch.bool)
from .random import (Generator, default_generator, get_rng_state, initial_seed, manual_seed,
                     seed, set_rng_state)
from .layouts import layout, strided
from .tensor import Size, Tensor
from .dlpack import from_dlpack, to_dlpack
from ._tensor_str import get_printoptions, printoptions, set_printoptions
from . import ops
from .ops.creation import *  # noqa: F401,F403
from .ops.ranges import *  # noqa: F401,F403
from .ops.copies import *  # noqa: F401,F403
from .ops.resizing import *  # noqa: F401,F403
from .ops.elementwise import *  # noqa: F401,F403
from .ops.activation import *  # noqa: F401,F403
from .ops.index import *  # noqa: F401,F403
from .ops.gather_scatter import *  # noqa: F401,F403
from .ops.sorting import *  # noqa: F401,F403
from .ops.linalg import *  # noqa: F401,F403
from .ops.reduce import *  # noqa: F401,F403
from .ops.shape import *  # noqa: F401,F403
from .ops.shape_copies import *  # noqa: F401,F403
from .ops.random import *  # noqa: F401,F403
from .ops.random_counts import *  # noqa: F401,F403
from .ops.compare import *  # noqa: F401,F403
from .ops.counting import *  # noqa: F401,F403
from .ops.products import *  # noqa: F401,F403
from .ops.rearrange import *  # noqa: F401,F403
from .ops.statistics import *  # noqa: F401,F403
from .ops.special import *  # noqa: F401,F403
from .ops.windows import *  # noqa: F401,F403
from .ops.legacy import *  # noqa: F401,F403
from .ops.numeric import *  # noqa: F401,F403
from .ops.matrix_functions import *  # noqa: F401,F403
from .ops.foreach import *  # noqa: F401,F403
from .backends import cpu as _cpu_backend  # noqa: F401  (registers the CPU kernels)
from .serialization import load, save
from .settings import *  # noqa: F401,F403
from . import __future__, nn, optim, utils
from .nn.functional import conv1d, conv2d, group_norm, layer_norm, rms_norm  # noqa: F401
from .nn.namespace_forms import *  # noqa: F401,F403
from . import special
from . import linalg
from . import testing
from . import (accelerator, amp, cpu, distributed, func, functional, futures, fx, hub, jit,
               models, multiprocessing, onnx, profiler, return_types, signal, xpu)
from .func import vmap
from .cuda import OutOfMemoryError
from .cuda import amp as _cuda_amp  # noqa: F401  (genesis.cuda.amp)
from .autograd import profiler as _autograd_profiler  # noqa: F401  (genesis.autograd.profiler)
from .compiler import compile  # noqa: A001
from .amp import (GradScaler, autocast, clear_autocast_cache, get_autocast_dtype,
                  is_autocast_enabled, set_autocast_dtype, set_autocast_enabled)
from . import out_variants as _out_variants
from . import numpy_names as _numpy_names
from .type_info import finfo, iinfo
from . import version
from .version import __version__
from math import e, inf, nan, pi  # noqa: F401  (genesis.pi and the others, as torch.pi)

half, float, double = float16, float32, float64  # noqa: A001
short, int, long = int16, int32, int64  # noqa: A001
dtype = dtypes.dtype
newaxis = None


def result_type(tensor1, tensor2):
    """PyTorch's `torch.result_type` over tensors and Python scalars."""
    return _result_type(tensor1, tensor2)


def _assert(condition, message):
    """Python's assert as a call, so model code can check shapes where tracers look for it."""
    assert condition, message


def is_tensor(obj):
    return isinstance(obj, Tensor)


def is_floating_point(t):
    return t.dtype.is_floating_point


def numel(t):
    return t.numel()


_out_variants.install(globals(), _out_variants.FUNCTIONS)
_numpy_names.install(globals(), "genesis")
_numpy_names.install(Tensor, "Tensor")


def __getattr__(name):
    """`genesis.distributions`, imported on first use (it is written against `genesis.*`)."""
    if name == "distributions":
        import importlib
        return importlib.import_module("genesis.distributions")
    raise AttributeError(f"module 'genesis' has no attribute {name!r}")
