"""Higher-order autograd helpers, as torch.autograd.functional: vjp, jvp, jacobian, hessian, vhp
and hvp, built on `autograd.grad` (create_graph for second derivatives).

Genesis has neither vmap nor forward-mode AD. `vectorize=True` gives the same result as
PyTorch's batched gradient by taking one backward pass per Jacobian row. `strategy="forward-mode"`
keeps PyTorch's rules (it needs `vectorize=True` and refuses `strict` and `create_graph`) and
computes the same Jacobian by reverse mode, in the output's dtype as PyTorch's forward mode gives;
it is returned detached. `jvp` and `hvp` use the double-backward trick, as PyTorch does. An
output with no elements has an empty Jacobian (PyTorch's stack of no rows raises instead).
New tensors come from Tensor methods (`new_zeros`), which the op layer defines: this module sits
below it.
"""

from ..tensor import Tensor
from .engine import grad as autograd_grad
from .grad_mode import enable_grad, is_grad_enabled, set_grad_enabled

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]

_STRATEGIES = ("forward-mode", "reverse-mode")


def _as_tuple(inp, arg_name, fn_name):
    """(whether `inp` was a tuple, `inp` as a tuple of Tensors); TypeError for anything else."""
    is_tuple = isinstance(inp, tuple)
    inp = inp if is_tuple else (inp,)
    for i, el in enumerate(inp):
        if not isinstance(el, Tensor):
            where = f"the value at index {i}" if is_tuple else f"the given {arg_name}"
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple "
                            f"of Tensors but {where} has type {type(el)}.")
    return is_tuple, inp


def _tuple_postprocess(res, to_unpack):
    """Undo `_as_tuple`: unwrap the outer (and, for a pair of flags, the inner) tuple level."""
    if isinstance(to_unpack, tuple):
        if not to_unpack[1]:
            res = tuple(el[0] for el in res)
        to_unpack = to_unpack[0]
    return res if to_unpack else res[0]


def _grad_preprocess(inputs, create_graph, need_graph):
    """Fresh tensor objects for the inputs, so the function's own captures of them are told
    apart: a differentiable view where gradients must reach the caller's graph, else a detached
    copy that requires grad when we need it to."""
    return tuple(inp.view_as(inp) if create_graph and inp.requires_grad
                 else inp.detach().requires_grad_(need_graph) for inp in inputs)


def _grad_postprocess(inputs, create_graph):
    """Detach results (tuples nested to any depth) unless the caller asked for a graph."""
    if isinstance(inputs[0], Tensor):
        return inputs if create_graph else tuple(inp.detach() for inp in inputs)
    return tuple(_grad_postprocess(inp, create_graph) for inp in inputs)


def _validate_v(v, other, is_other_tuple):
    if len(other) != len(v):
        if is_other_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(other)} but got "
                               f"{len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for idx, (el_v, el_other) in enumerate(zip(v, other)):
        if el_v.size() != el_other.size():
            prepend = f"Entry {idx} in " if is_other_tuple else ""
            raise RuntimeError(f"{prepend}v has invalid size: should be {el_other.size()} but got "
                               f"{el_v.size()}.")


def _requires_grad_message(input_type, i):
    """The strict-mode error for entry `i` of `input_type` that does not require grad."""
    if input_type == "hessian":
        return (f"The hessian of the user-provided function with respect to input {i} is "
                "independent of the input. This is not allowed in strict mode. You should ensure "
                "that your function is thrice differentiable and that the hessian depends on the "
                "inputs.")
    if input_type == "jacobian":
        return ("While computing the hessian, found that the jacobian of the user-provided "
                f"function with respect to input {i} is independent of the input. This is not "
                "allowed in strict mode. You should ensure that your function is twice "
                "differentiable and that the jacobian depends on the inputs (this would be "
                "violated by a linear function for example).")
    if input_type == "grad_inputs":
        return (f"The gradient with respect to input {i} is independent of the inputs of the "
                "user-provided function. This is not allowed in strict mode.")
    return (f"Output {i} of the user-provided function does not require gradients. The outputs "
            "must be computed in a differentiable manner from the input when running in strict "
            "mode.")


def _check_requires_grad(inputs, input_type, strict):
    """In strict mode, every entry must exist and require grad."""
    if not strict:
        return
    for i, inp in enumerate(inputs):
        if inp is None:
            raise RuntimeError(f"The output of the user-provided function is independent of input "
                               f"{i}. This is not allowed in strict mode.")
        if not inp.requires_grad:
            raise RuntimeError(_requires_grad_message(input_type, i))


def _autograd_grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None):
    """`autograd.grad` that skips outputs which are None or need no grad (None for every input
    when none is left) and allows unused inputs."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    kept = [(out, g) for out, g in zip(outputs, grad_outputs)
            if out is not None and out.requires_grad]
    if not kept:
        return (None,) * len(inputs)
    return autograd_grad(tuple(o for o, _ in kept), inputs, tuple(g for _, g in kept),
                         allow_unused=True, create_graph=create_graph, retain_graph=retain_graph)


_NONE_MESSAGES = {
    "back": "The output of the user-provided function is independent of input {i}. This is not "
            "allowed in strict mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the "
                  "grad_outputs when using the double backward trick to compute forward mode "
                  "gradients. This is not allowed in strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. This "
                   "is not allowed in strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry {i} "
                         "in the grad_jacobian. This is not allowed in strict mode as it prevents "
                         "from using the double backward trick to replace forward mode AD.",
}


def _fill_in_zeros(grads, refs, strict, create_graph, stage):
    """Zeros shaped as `refs[i]` where grads[i] is None, or the strict-mode error of `stage`."""
    res = []
    for i, grads_i in enumerate(grads):
        if grads_i is None:
            if strict:
                raise RuntimeError(_NONE_MESSAGES[stage].format(i=i))
            grads_i = refs[i].new_zeros(refs[i].shape)
        elif strict and create_graph and not grads_i.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(f"The {what} of the user-provided function is independent of input "
                               f"{i}. This is not allowed in strict mode when create_graph=True.")
        res.append(grads_i)
    return tuple(res)


def _prepare_v(v, inputs_like, is_tuple, create_graph, fn_name, none_message):
    """`v` as a checked tuple matching `inputs_like`; None only where those are one element."""
    if v is not None:
        _, v = _as_tuple(v, "v", fn_name)
        v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
        _validate_v(v, inputs_like, is_tuple)
        return v
    if len(inputs_like) != 1 or inputs_like[0].nelement() != 1:
        raise RuntimeError(none_message)
    return None


_INPUT_V_MESSAGE = ("The vector v can only be None if the input to the user-provided function is "
                    "a single Tensor with a single element.")


def _prepare_inputs(inputs, create_graph, fn_name):
    """(whether `inputs` was a tuple, fresh tensors for them that require grad)."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", fn_name)
    return is_inputs_tuple, _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)


def _call(func, inputs, strict, fn_name):
    """(whether func returned a tuple, its outputs as a tuple), checked for strict mode."""
    is_outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function",
                                          fn_name)
    _check_requires_grad(outputs, "outputs", strict=strict)
    return is_outputs_tuple, outputs


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T J): the vector-Jacobian product at `inputs`."""
    with enable_grad():
        is_inputs_tuple, inputs = _prepare_inputs(inputs, create_graph, "vjp")
        is_outputs_tuple, outputs = _call(func, inputs, strict, "vjp")
        v = _prepare_v(v, outputs, is_outputs_tuple, create_graph, "vjp",
                       "The vector v can only be None if the user-provided function returns a "
                       "single Tensor with a single element.")
    with set_grad_enabled(create_graph or is_grad_enabled()):
        grad_res = _autograd_grad(outputs, inputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "back")
    return _finish(outputs, is_outputs_tuple, result, is_inputs_tuple, create_graph)


def _finish(outputs, is_outputs_tuple, result, is_result_tuple, create_graph):
    """(outputs, result), detached unless create_graph, each unwrapped as the caller gave it."""
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return (_tuple_postprocess(outputs, is_outputs_tuple),
            _tuple_postprocess(result, is_result_tuple))


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), J v): the Jacobian-vector product, by the double-backward trick (the
    backward of a vjp taken with respect to its vector)."""
    with enable_grad():
        is_inputs_tuple, inputs = _prepare_inputs(inputs, create_graph, "jvp")
        v = _prepare_v(v, inputs, is_inputs_tuple, create_graph, "jvp", _INPUT_V_MESSAGE)
        is_outputs_tuple, outputs = _call(func, inputs, strict, "jvp")
        # The vjp is linear in grad_outputs, so their value (zeros) never shows in the result.
        grad_outputs = tuple(out.new_zeros(out.shape).requires_grad_() for out in outputs)
        grad_inputs = _autograd_grad(outputs, inputs, grad_outputs, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict=strict)
    with set_grad_enabled(create_graph or is_grad_enabled()):
        grad_res = _autograd_grad(grad_inputs, grad_outputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, outputs, strict, create_graph, "back_trick")
    return _finish(outputs, is_outputs_tuple, result, is_outputs_tuple, create_graph)


def _stack_rows(rows, out, inp):
    """The rows d(out.flat[j])/d(inp), stacked into a tensor of shape out.shape + inp.shape
    (a differentiable copy into zeros where the rows carry a graph)."""
    jac = inp.new_zeros((out.nelement(),) + tuple(inp.shape))
    for j, row in enumerate(rows):
        jac[j] = row
    return jac.view(tuple(out.shape) + tuple(inp.shape))


def _jacobian_rows(out, i, inputs, create_graph, strict):
    """For each input, the list of gradients of each element of output `i` (zeros where the
    output does not depend on that input, an error in strict mode)."""
    rows = tuple([] for _ in inputs)
    flat = out.reshape(-1)
    for j in range(out.nelement()):
        vj = _autograd_grad((flat[j],), inputs, retain_graph=True, create_graph=create_graph)
        for el_idx, (vj_el, inp_el) in enumerate(zip(vj, inputs)):
            if vj_el is None:
                if strict:
                    raise RuntimeError(f"Output {i} of the user-provided function is independent "
                                       f"of input {el_idx}. This is not allowed in strict mode.")
                vj_el = inp_el.new_zeros(inp_el.shape)
            elif strict and create_graph and not vj_el.requires_grad:
                raise RuntimeError("The jacobian of the user-provided function is independent of "
                                   f"input {i}. This is not allowed in strict mode when "
                                   "create_graph=True.")
            rows[el_idx].append(vj_el)
    return rows


def _reverse_jacobian(outputs, inputs, create_graph, strict):
    """The Jacobian blocks d(outputs[i])/d(inputs[j]), one backward pass per output element."""
    return tuple(
        tuple(_stack_rows(rows, out, inp)
              for rows, inp in zip(_jacobian_rows(out, i, inputs, create_graph, strict), inputs))
        for i, out in enumerate(outputs))


def _jacfwd(func, inputs, strict, vectorize):
    """PyTorch's forward-mode Jacobian: same checks, same values, dtypes (the outputs') and
    containers, computed by reverse mode."""
    if strict:
        raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and "
                           '`strategy="forward-mode"` are not supported together (yet). Please '
                           'either set `strict=False` or `strategy="reverse-mode"`.')
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
    if not vectorize:
        raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-reverse "
                                  "Hessian isonly implemented for `vectorize=True`.")
    with enable_grad():
        inputs = _grad_preprocess(inputs, create_graph=False, need_graph=True)
        is_outputs_tuple, outputs = _call(func, inputs, False, "jacobian")
        jac = _reverse_jacobian(outputs, inputs, create_graph=False, strict=False)
    # Lists, not tuples, where both sides are tuples: PyTorch's forward mode builds lists.
    jac = [[block.detach().to(out.dtype) for block in row] for row, out in zip(jac, outputs)]
    return _tuple_postprocess(jac, (is_outputs_tuple, is_inputs_tuple))


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False,
             strategy="reverse-mode"):
    """The Jacobian of `func` at `inputs`: a Tensor of shape output.shape + input.shape, or
    (nested) tuples of them as `func`'s outputs and `inputs` are tuples. `vectorize=True` gives
    the same values, computed one row at a time."""
    if strategy not in _STRATEGIES:
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode". '
                             'Hint: If your function has more outputs than inputs, "forward-mode" '
                             'tends to be more performant. Otherwise, prefer to use '
                             '"reverse-mode".')
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError("torch.autograd.functional.jacobian: `create_graph=True` "
                                      'and `strategy="forward-mode"` are not supported together '
                                      "(yet). Please either set `create_graph=False` or "
                                      '`strategy="reverse-mode"`.')
        return _jacfwd(func, inputs, strict, vectorize)
    with enable_grad():
        is_inputs_tuple, inputs = _prepare_inputs(inputs, create_graph, "jacobian")
        is_outputs_tuple, outputs = _call(func, inputs, strict, "jacobian")
        if vectorize and strict:
            raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and "
                               "`vectorized=True` are not supported together. Please either set "
                               "`strict=False` or `vectorize=False`.")
        jac = _reverse_jacobian(outputs, inputs, create_graph, strict)
        jac = _grad_postprocess(jac, create_graph)
        return _tuple_postprocess(jac, (is_outputs_tuple, is_inputs_tuple))


def _single_output(out, strict, fn_name):
    """`out` as a one-tuple after hessian/vhp/hvp's checks that it is one one-element Tensor."""
    is_out_tuple, t_out = _as_tuple(out, "outputs of the user-provided function", fn_name)
    _check_requires_grad(t_out, "outputs", strict=strict)
    if is_out_tuple or not isinstance(out, Tensor):
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
    if out.nelement() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {fn_name} should "
                           "contain a single element")
    return t_out


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    """The Hessian of the scalar function `func` at `inputs`, as the Jacobian of its Jacobian:
    a Tensor of shape input.shape * 2, or a tuple of tuples of blocks for a tuple of inputs."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in _STRATEGIES:
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def ensure_single_output_function(*inp):
        return _single_output(func(*inp), strict, "hessian")[0].squeeze()

    def jac_func(*inp):
        jac = jacobian(ensure_single_output_function, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
        return jac

    res = jacobian(jac_func, inputs, create_graph=create_graph, strict=strict,
                   vectorize=vectorize, strategy=outer_jacobian_strategy)
    return _tuple_postprocess(res, (is_inputs_tuple, is_inputs_tuple))


def _scalar_and_gradient(func, inputs, v, create_graph, strict, fn_name):
    """The shared start of vhp and hvp: prepared inputs and v, func's output and its gradient
    (with a graph, to be differentiated again)."""
    is_inputs_tuple, inputs = _prepare_inputs(inputs, create_graph, fn_name)
    v = _prepare_v(v, inputs, is_inputs_tuple, create_graph, fn_name, _INPUT_V_MESSAGE)
    outputs = _single_output(func(*inputs), strict, fn_name)
    jac = _autograd_grad(outputs, inputs, create_graph=True)
    _check_requires_grad(jac, "jacobian", strict=strict)
    return is_inputs_tuple, inputs, v, outputs, jac


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T H): the vector-Hessian product of a scalar function."""
    with enable_grad():
        is_inputs_tuple, inputs, v, outputs, jac = _scalar_and_gradient(
            func, inputs, v, create_graph, strict, "vhp")
    with set_grad_enabled(create_graph or is_grad_enabled()):
        grad_res = _autograd_grad(jac, inputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back")
    return _finish(outputs, False, result, is_inputs_tuple, create_graph)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), H v): the Hessian-vector product of a scalar function, by the
    double-backward trick (vhp is cheaper and equal for twice continuously differentiable
    functions)."""
    with enable_grad():
        is_inputs_tuple, inputs, v, outputs, jac = _scalar_and_gradient(
            func, inputs, v, create_graph, strict, "hvp")
        grad_jac = tuple(inp.new_zeros(inp.shape).requires_grad_() for inp in inputs)
        double_back = _autograd_grad(jac, inputs, grad_jac, create_graph=True)
        _check_requires_grad(jac, "hessian", strict=strict)
    with set_grad_enabled(create_graph or is_grad_enabled()):
        grad_res = _autograd_grad(double_back, grad_jac, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back_trick")
    return _finish(outputs, False, result, is_inputs_tuple, create_graph)
