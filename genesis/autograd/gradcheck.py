"""Finite-difference gradient checks (`gradcheck`, `gradgradcheck`), as in torch.autograd.

Inputs are perturbed in place through their host memory (written back to the device for device
tensors), so the checks run on every device. New tensors come from Tensor methods (`new_tensor`,
`new_empty`), which the op layer defines: this module sits below it.
The analytical Jacobian comes from backward passes with one-hot output gradients (and, with
check_forward_ad, from dual tensors with one-hot tangents); the numerical one from central
differences of the forward. Use float64 inputs: float32 differences are too coarse.
"""

import numpy as np

from . import forward_ad
from .engine import grad as autograd_grad
from .grad_mode import enable_grad, no_grad


def _as_tuple(x):
    """Inputs as a tuple: a tuple or list of inputs, or one input (as torch.autograd.gradcheck)."""
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _differentiable_inputs(inputs):
    return [i for i, t in enumerate(inputs) if hasattr(t, "requires_grad") and t.requires_grad]


def _flat_outputs(fn, inputs):
    return [o for o in _as_tuple(fn(*inputs)) if hasattr(o, "requires_grad")]


def _numerical_jacobian(fn, inputs, index, eps):
    """d(outputs)/d(inputs[index]) by central differences, one input element at a time."""
    x = inputs[index]
    host = x.detach()._host()
    columns = []
    with no_grad():
        for flat_i in range(x.numel()):
            pos = np.unravel_index(flat_i, x.shape) if x.ndim else ()
            orig = host[pos].item()
            host[pos] = orig + eps
            _store(x, host)
            plus = [o._host().astype(np.float64).ravel().copy() for o in _flat_outputs(fn, inputs)]
            host[pos] = orig - eps
            _store(x, host)
            minus = [o._host().astype(np.float64).ravel().copy() for o in _flat_outputs(fn, inputs)]
            host[pos] = orig
            _store(x, host)
            columns.append(np.concatenate([(p - m) / (2 * eps) for p, m in zip(plus, minus)]))
    return np.stack(columns, axis=1) if columns else np.zeros((0, 0))


def _store(x, host):
    """Make `x` hold `host`'s values: a CPU tensor's host array is its own memory, a device
    tensor's is a copy that has to be written back."""
    if x.device.type != "cpu":
        x.detach().copy_(x.new_tensor(host))


def _analytical_jacobians(fn, inputs, diff_idx):
    """One Jacobian per differentiable input, rows indexed by flattened outputs."""
    outputs = [o for o in _flat_outputs(fn, inputs)]
    n_out = sum(o.numel() for o in outputs)
    jacs = [np.zeros((n_out, inputs[i].numel())) for i in diff_idx]
    row = 0
    for k, out in enumerate(outputs):
        if not out.requires_grad:
            row += out.numel()
            continue
        for j in range(out.numel()):
            onehot = np.zeros(out.numel(), dtype=out.dtype.numpy_dtype)
            onehot[j] = 1
            seed = out.new_tensor(onehot.reshape(out.shape))
            grads = autograd_grad([out], [inputs[i] for i in diff_idx], [seed],
                                  retain_graph=True, allow_unused=True)
            for col, g in enumerate(grads):
                if g is not None:
                    jacs[col][row, :] = g._host().astype(np.float64).ravel()
            row += 1
    return jacs


def _forward_jacobians(fn, inputs, diff_idx):
    """One Jacobian per differentiable input from forward-mode AD: column j holds the outputs'
    tangents when the input's element j alone has tangent 1."""
    jacs = []
    for i in diff_idx:
        x = inputs[i]
        columns = []
        for j in range(x.numel()):
            onehot = np.zeros(x.numel(), dtype=x.dtype.numpy_dtype)
            onehot[j] = 1
            with forward_ad.dual_level():
                duals = list(inputs)
                duals[i] = forward_ad.make_dual(x, x.new_tensor(onehot.reshape(x.shape)))
                columns.append(np.concatenate([_tangent_values(o)
                                               for o in _flat_outputs(fn, duals)]))
        jacs.append(np.stack(columns, axis=1) if columns else np.zeros((0, 0)))
    return jacs


def _tangent_values(out):
    """An output's tangent, flattened (zeros where it has none)."""
    tangent = forward_ad.unpack_dual(out).tangent
    if tangent is None:
        return np.zeros(out.numel())
    return tangent._host().astype(np.float64).ravel()


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              check_backward_ad=True, check_forward_ad=False, **_):
    """True if the Jacobians of backward (`check_backward_ad`) and of forward-mode AD
    (`check_forward_ad`) match central differences for every differentiable input."""
    inputs = _as_tuple(inputs)
    diff_idx = _differentiable_inputs(inputs)
    if not diff_idx:
        raise ValueError("gradcheck expects at least one input tensor to require gradient")
    checked = []
    if check_backward_ad:
        checked.append(("Jacobian", _analytical_jacobians(func, inputs, diff_idx)))
    if check_forward_ad:
        checked.append(("Jacobian computed with forward mode",
                        _forward_jacobians(func, inputs, diff_idx)))
    for col, i in enumerate(diff_idx):
        numerical = _numerical_jacobian(func, inputs, i, eps)
        for what, analytical in checked:
            if numerical.size == 0 and analytical[col].size == 0:
                continue
            if not np.allclose(analytical[col], numerical, rtol=rtol, atol=atol):
                if not raise_exception:
                    return False
                raise GradcheckError(f"{what} mismatch for output 0 with respect to input {i},"
                                     f"\nnumerical:{numerical}\nanalytical:{analytical[col]}")
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  raise_exception=True, **_):
    """gradcheck of the function (inputs, grad_outputs) -> first-order gradients (second derivatives)."""
    inputs = _as_tuple(inputs)
    diff_idx = _differentiable_inputs(inputs)
    outputs = _flat_outputs(func, inputs)
    if grad_outputs is None:
        grad_outputs = tuple(o.new_empty(o.shape).normal_().requires_grad_()
                             for o in outputs if o.requires_grad)
    grad_outputs = _as_tuple(grad_outputs)
    n = len(inputs)

    def first_order(*args):
        ins, gos = args[:n], args[n:]
        with enable_grad():
            outs = [o for o in _flat_outputs(func, ins) if o.requires_grad]
            grads = autograd_grad(outs, [ins[i] for i in diff_idx], list(gos), create_graph=True,
                                  allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(first_order, inputs + tuple(grad_outputs), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)


class GradcheckError(RuntimeError):
    """Raised by gradcheck when the analytical and numerical Jacobians differ."""
