"""Values to numpy arrays, as torch.utils.tensorboard's make_np: what every summary builder reads
its tensors, arrays and Python numbers through."""

import numpy as np

from ... import dtypes
from ...tensor import Tensor


def make_np(x):
    """An ndarray as it is, a Python or numpy scalar as a one-element array, a genesis tensor
    detached and copied to the host (bfloat16 through float16, as torch's)."""
    if isinstance(x, np.ndarray):
        return x
    if np.isscalar(x):
        return np.array([x])
    if isinstance(x, Tensor):
        if x.dtype is dtypes.bfloat16:
            x = x.to(dtypes.float16)
        return x.detach().cpu().numpy()
    raise NotImplementedError(f"Got {type(x)}, but numpy array or torch tensor are expected.")
