"""DLPack kernels on numpy: export and import capsules over host memory without copying.

numpy speaks DLPack for every genesis type but bfloat16; bfloat16 crosses as uint16 bits whose
capsule is retagged (kDLBfloat on the way out, kDLUInt on the way in).
"""

import ml_dtypes
import numpy as np

from ...dispatch import register
from ..dlpack import DL_BFLOAT, DL_UINT, CapsuleHolder, capsule_tensor, retag_capsule

_BFLOAT16 = np.dtype(ml_dtypes.bfloat16)


@register("to_dlpack", "cpu")
def to_dlpack(arr, dtype, stream=None, max_version=None, dl_device=None, copy=None):
    """A capsule over `arr` (a copy only if `copy=True`); bfloat16 travels tagged as kDLBfloat."""
    bfloat = arr.dtype == _BFLOAT16
    source = arr.view(np.uint16) if bfloat else arr
    capsule = source.__dlpack__(stream=stream, max_version=max_version, dl_device=dl_device,
                                copy=copy)
    return retag_capsule(capsule, DL_BFLOAT) if bfloat else capsule


def _request_capsule(producer, copy):
    """Ask the producer for a capsule, dropping keywords it does not know (as torch does).

    Returns (capsule, whether the producer already honoured `copy`).
    """
    attempts = [{"max_version": (1, 0)}, {}]
    if copy is not None:
        attempts = [dict(kwargs, copy=copy) for kwargs in attempts] + [{}]
    for kwargs in attempts[:-1]:
        try:
            return producer.__dlpack__(**kwargs), "copy" in kwargs
        except TypeError:
            continue
    return producer.__dlpack__(**attempts[-1]), copy is None


@register("from_dlpack", "cpu")
def from_dlpack(producer, copy=None):
    """A numpy array over the producer's host memory (bfloat16 arrives through uint16 bits)."""
    capsule, copied = _request_capsule(producer, copy)
    dtype = capsule_tensor(capsule).dtype
    bfloat = dtype.code == DL_BFLOAT and dtype.bits == 16 and dtype.lanes == 1
    if bfloat:
        retag_capsule(capsule, DL_UINT)
    arr = np.from_dlpack(CapsuleHolder(capsule))
    if bfloat:
        arr = arr.view(_BFLOAT16)
    return arr.copy() if copy and not copied else arr
