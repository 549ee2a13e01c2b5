"""Gradient clipping: rescale gradients to a maximum total norm, or clamp their values.

`foreach` follows PyTorch: unless it is False, the norm and the scaling run as multi-tensor
kernels ("total_norm", "clip_by_total_norm_"), a few launches for all the gradients of a device
(on CUDA: one partial-norm launch per dtype, one combining launch, one scaling launch per dtype,
with no host synchronization); `foreach=False` takes one op per tensor, and so does the 0 "norm"
(PyTorch's counts the tensors with a nonzero element).
"""

from functools import reduce as fold

from ... import dtypes
from ..._warnings import deprecated_alias
from ...autograd.grad_mode import no_grad
from ...dispatch import kernel
from ...ops import creation, reduce, shape_copies
from ...ops.common import wrap
from ...optim._multi_tensor import Updated, by_device, linear
from ...tensor import Tensor


def _grads(parameters):
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def _group_norm(tensors, norm_type):
    """The norm of the tensors of one device together, by the multi-tensor kernel."""
    dtype = fold(dtypes.promote_types, {t.dtype: None for t in tensors})
    device = tensors[0].device
    out = kernel("total_norm", device.type)([linear(t)._data for t in tensors], norm_type,
                                            dtype.numpy_dtype)
    return wrap(out, device, dtype)


@no_grad()
def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The `norm_type` norm of all `tensors` together, as if concatenated into one vector."""
    tensors = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    if not tensors:
        return creation.tensor(0.0)
    norm_type = float(norm_type)
    first = tensors[0].device
    per_tensor = foreach is False or norm_type == 0
    if per_tensor:
        norms = [reduce.vector_norm(t, norm_type) for t in tensors]
    else:
        norms = [_group_norm(group, norm_type) for group in by_device(tensors).values()]
    if len(norms) == 1 and not per_tensor:
        total = norms[0]
    else:
        total = reduce.vector_norm(shape_copies.stack([n.to(first) for n in norms]), norm_type)
    if error_if_nonfinite and not bool(total.isfinite()):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` "
                           "is non-finite, so it cannot be clipped. To disable this error and "
                           "scale the gradients by the non-finite norm anyway, set "
                           "`error_if_nonfinite=False`")
    return total


@no_grad()
def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scale the gradients by max_norm / (total_norm + 1e-6) when that is below 1."""
    grads = _grads(parameters)
    max_norm = float(max_norm)
    if not grads:
        return
    if foreach is False:
        coef = (max_norm / (total_norm + 1e-6)).clamp_max(1.0)
        for g in grads:
            g.mul_(coef.to(g.device))
        return
    for device, group in by_device(grads).items():
        updated = Updated(group)
        kernel("clip_by_total_norm_", device.type)(updated.arrays, max_norm,
                                                   total_norm.to(device)._data)
        updated.write_back()


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Scale all gradients together so their combined norm is at most `max_norm`.

    Returns the total norm before clipping, a 0-d tensor.
    """
    parameters = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    total = get_total_norm(_grads(parameters), norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total, foreach)
    return total


clip_grad_norm = deprecated_alias(clip_grad_norm_, "clip_grad_norm",
                                  "`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                                  "`torch.nn.utils.clip_grad_norm_`.")


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient element into [-clip_value, clip_value], in place."""
    clip_value = float(clip_value)
    for g in _grads(parameters):
        g.clamp_(-clip_value, clip_value)
