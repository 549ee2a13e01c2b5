"""DLPack: zero-copy exchange of tensors with numpy, PyTorch and any other DLPack library.

`Tensor.__dlpack__` and `genesis.from_dlpack` are device-agnostic: they ask the tensor's backend
for the kernels "to_dlpack" (backend array -> capsule) and "from_dlpack" (producer -> backend
array), chosen by the DLPack device type. The capsule helpers they share live in
`genesis.backends.dlpack`.
"""

from .backends.dlpack import DEVICE_CODES, DEVICE_TYPES, CapsuleHolder, is_capsule
from .device import device as Device
from .dispatch import kernel
from .tensor import Tensor


def to_dlpack(tensor, stream=None, max_version=None, dl_device=None, copy=None):
    """`Tensor.__dlpack__`: a capsule over the tensor's memory (a copy only if `copy=True`)."""
    if tensor.requires_grad:
        raise RuntimeError("Can't export tensors that require gradient, use tensor.detach()")
    return kernel("to_dlpack", tensor.device.type)(tensor._data, tensor.dtype, stream=stream,
                                                   max_version=max_version, dl_device=dl_device,
                                                   copy=copy)


def dlpack_device(tensor):
    """`Tensor.__dlpack_device__`: (DLPack device type code, device index)."""
    return (DEVICE_CODES[tensor.device.type], tensor.device.index or 0)


def from_dlpack(ext_tensor, *, copy=None):
    """A genesis tensor over the memory of any DLPack producer (or an unconsumed capsule)."""
    if isinstance(ext_tensor, Tensor):
        return ext_tensor.clone() if copy else ext_tensor
    if is_capsule(ext_tensor):
        ext_tensor = CapsuleHolder(ext_tensor)
    if not hasattr(ext_tensor, "__dlpack__"):
        raise TypeError(f"from_dlpack: expected an object with __dlpack__ or a DLPack capsule, "
                        f"got {type(ext_tensor).__name__}")
    code, index = ext_tensor.__dlpack_device__()
    device_type = DEVICE_TYPES.get(int(code))
    if device_type is None:
        raise BufferError(f"from_dlpack: unsupported DLPack device type {int(code)}")
    data = kernel("from_dlpack", device_type)(ext_tensor, copy=copy)
    device = Device(device_type, None if device_type == "cpu" else int(index))
    return Tensor._make(data, device)
