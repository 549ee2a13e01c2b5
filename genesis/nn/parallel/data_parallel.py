"""DataParallel: one process, the batch split over the GPUs (PyTorch's nn.DataParallel).

Each forward:
1. scatter: tensors in the inputs are cut into chunks along `dim`, one per device, and moved
   there (a differentiable copy; other values go to every replica as they are);
2. replicate: the module is copied per device, its parameters as differentiable copies of the
   originals (on the first device, the originals themselves), buffers detached;
3. the replicas run, one after another from this thread: their kernels are launched
   asynchronously, so the devices still work at the same time;
4. gather: the outputs are moved to `output_device` and concatenated along `dim`.

Backward flows through the copies, so each original parameter's gradient is the sum of its
replicas'. As in PyTorch, buffer updates made by replicas (BatchNorm's running statistics) are
kept only from the first device's replica, which shares the originals. Without CUDA, DataParallel
runs the module as it is. DistributedDataParallel is the faster way to use several GPUs.
"""

import itertools
import warnings

from ...device import device as Device
from ...ops.shape_copies import cat
from ...tensor import Tensor
from ..modules.module import Module


class DataParallel(Module):
    """`module` run over `device_ids` (all visible GPUs by default), the batch split along
    `dim`, the outputs gathered on `output_device` (device_ids[0] by default)."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        from ... import cuda  # (genesis.cuda imports nn, for make_graphed_callables)
        super().__init__()
        self.module, self.dim = module, dim
        if not cuda.is_available():
            self.device_ids, self.output_device, self.src_device_obj = [], None, None
            return
        if device_ids is None:
            device_ids = list(range(cuda.device_count()))
        if output_device is None:
            output_device = device_ids[0]
        self.device_ids = [cuda._index(d) for d in device_ids]
        self.output_device = cuda._index(output_device)
        self.src_device_obj = Device("cuda", self.device_ids[0])
        if len(self.device_ids) == 1:
            self.module.to(self.src_device_obj)

    def forward(self, *inputs, **kwargs):
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        for t in itertools.chain(self.module.parameters(), self.module.buffers()):
            if t.device != self.src_device_obj:
                raise RuntimeError(f"module must have its parameters and buffers on device "
                                   f"{self.src_device_obj} (device_ids[0]) but found one of "
                                   f"them on device: {t.device}")
        devices = [Device("cuda", i) for i in self.device_ids]
        output = Device("cpu") if self.output_device == -1 else Device("cuda", self.output_device)
        return run_parallel(self.module, inputs, kwargs, devices, output, self.dim)


def data_parallel(module, inputs, device_ids=None, output_device=None, dim=0,
                  module_kwargs=None):
    """The functional form of DataParallel: module(*inputs, **module_kwargs) over the devices."""
    inputs = inputs if isinstance(inputs, tuple) else (inputs,)
    wrapper = DataParallel(module, device_ids, output_device, dim)
    return wrapper(*inputs, **(module_kwargs or {}))


def run_parallel(module, inputs, kwargs, devices, output_device, dim=0):
    """Scatter, replicate, apply and gather (the module docstring's four steps) over `devices`
    (device objects), the result on `output_device`."""
    inputs, kwargs = scatter_kwargs(inputs, kwargs, devices, dim)
    if not inputs and not kwargs:
        inputs, kwargs = ((),), ({},)
    if len(devices) == 1:
        return module(*inputs[0], **kwargs[0])
    replicas = replicate(module, devices[:len(inputs)])
    outputs = [replica(*args, **kw) for replica, args, kw in zip(replicas, inputs, kwargs)]
    return gather(outputs, output_device, dim)


def scatter(inputs, devices, dim=0):
    """Per device, the inputs with each tensor's chunk along `dim` moved there."""
    def split(obj):
        if isinstance(obj, Tensor):
            return [chunk.to(d) for chunk, d in zip(obj.chunk(len(devices), dim), devices)]
        if isinstance(obj, tuple) and obj and hasattr(obj, "_fields"):
            return [type(obj)(*parts) for parts in zip(*map(split, obj))]
        if isinstance(obj, (tuple, list)) and obj:
            return [type(obj)(parts) for parts in zip(*map(split, obj))]
        if isinstance(obj, dict) and obj:
            return [type(obj)(parts) for parts in zip(*map(split, obj.items()))]
        return [obj] * len(devices)
    return split(inputs)


def scatter_kwargs(inputs, kwargs, devices, dim=0):
    """scatter of positional and keyword inputs, padded to the same number of devices."""
    inputs = scatter(inputs, devices, dim) if inputs else []
    kwargs = scatter(kwargs, devices, dim) if kwargs else []
    inputs = list(inputs) + [()] * (len(kwargs) - len(inputs))
    kwargs = list(kwargs) + [{}] * (len(inputs) - len(kwargs))
    return tuple(inputs), tuple(kwargs)


def replicate(module, devices):
    """Copies of `module` per device whose parameters are differentiable copies of the
    originals (the originals themselves on their own device) and buffers detached copies."""
    originals = list(module.modules())
    replicas = [[_shallow_copy(m) for m in originals] for _ in devices]
    place = {id(m): i for i, m in enumerate(originals)}
    for copies, device in zip(replicas, devices):
        for original, replica in zip(originals, copies):
            for name, p in original._parameters.items():
                replica._parameters[name] = None if p is None else p.to(device)
            for name, b in original._buffers.items():
                replica._buffers[name] = None if b is None else _buffer_on(b, device)
            for name, child in original._modules.items():
                replica._modules[name] = None if child is None else copies[place[id(child)]]
    return [copies[0] for copies in replicas]


def _shallow_copy(module):
    replica = module.__class__.__new__(module.__class__)
    replica.__dict__ = module.__dict__.copy()
    replica._parameters = dict(module._parameters)
    replica._buffers = dict(module._buffers)
    replica._modules = dict(module._modules)
    replica._is_replica = True
    return replica


def _buffer_on(buffer, device):
    return buffer if buffer.device == device else buffer.detach().to(device)


def gather(outputs, target_device, dim=0):
    """The replicas' outputs, moved to `target_device` and concatenated along `dim`."""
    first = outputs[0]
    if isinstance(first, Tensor):
        if all(o.ndim == 0 for o in outputs):
            warnings.warn("Was asked to gather along dimension 0, but all input tensors were "
                          "scalars; will instead unsqueeze and return a vector.")
            outputs = [o.unsqueeze(0) for o in outputs]
        return cat([o.to(target_device) for o in outputs], dim)
    if first is None:
        return None
    if isinstance(first, dict):
        if not all(len(first) == len(o) for o in outputs):
            raise ValueError("All dicts must have the same number of keys")
        return type(first)((k, gather([o[k] for o in outputs], target_device, dim))
                           for k in first)
    if isinstance(first, tuple) and hasattr(first, "_fields"):
        return type(first)(*(gather(list(parts), target_device, dim)
                             for parts in zip(*outputs)))
    return type(first)(gather(list(parts), target_device, dim) for parts in zip(*outputs))
