"""genesis.autograd.functional against torch.autograd.functional: jacobian, hessian, vjp, jvp,
vhp and hvp on the same fresh inputs, the structure of their results, create_graph results
differentiated again, strict mode and the errors."""

import numpy as np
import pytest
import torch
import torch.autograd.functional as TF

import genesis
import genesis.autograd.functional as GF

# name: (function of tensors written with methods both libraries share, input shapes)
FUNCTIONS = {
    "elementwise": (lambda x: x.sin() * x.exp() + x * x, [(3, 4)]),
    "matmul": (lambda x, w: (x @ w).tanh(), [(2, 3), (3, 4)]),
    "reduction": (lambda x: (x * x).sum(dim=1) + x.mean(), [(3, 5)]),
    "several": (lambda x, y: ((x * y).sigmoid(), (x.exp() @ y.t()).sum(0), (y ** 3).mean()),
                [(2, 3), (2, 3)]),
    "zero_dim": (lambda x, y: x * y.sum() + (x ** 2), [(), (3,)]),
}

# name: (scalar function, input shapes)
SCALAR_FUNCTIONS = {
    "cubic": (lambda x: (x ** 3).sum() + (x.sin() * x).mean(), [(4,)]),
    "matmul": (lambda x, w: ((x @ w).tanh() ** 2).sum(), [(2, 3), (3, 2)]),
    "logsumexp": (lambda x, y: (x.exp().sum(dim=1).log() * y).sum() + (x * x).sum(),
                  [(3, 4), (3,)]),
    "zero_dim": (lambda x: x.exp() * x, [()]),
}


def _inputs(rng, shapes, single, dtype=np.float64, requires_grad=False, device="cpu"):
    """The same random inputs for genesis (on `device`) and torch: single tensors or tuples."""
    arrays = [rng.standard_normal(s).astype(dtype) for s in shapes]
    g = tuple(genesis.tensor(a, device=device).requires_grad_(requires_grad) for a in arrays)
    t = tuple(torch.tensor(a).requires_grad_(requires_grad) for a in arrays)
    return (g[0], t[0]) if single and len(shapes) == 1 else (g, t)


def _assert_same(actual, expected, rtol=1e-10, atol=1e-12):
    """The same nesting of tuples, and leaf by leaf the same shape, dtype, values and
    requires_grad."""
    if isinstance(expected, (tuple, list)):
        assert type(actual) is type(expected) and len(actual) == len(expected)
        for a, e in zip(actual, expected):
            _assert_same(a, e, rtol, atol)
        return
    assert isinstance(actual, genesis.Tensor)
    assert tuple(actual.shape) == tuple(expected.shape)
    assert str(actual.dtype).split(".")[1] == str(expected.dtype).split(".")[1]
    assert actual.requires_grad == expected.requires_grad
    np.testing.assert_allclose(actual.detach().cpu().numpy(), expected.detach().numpy(),
                               rtol=rtol, atol=atol)


def _outcome(fn):
    try:
        return "ok", fn()
    except Exception as error:  # compared with PyTorch's
        return type(error), str(error).replace("torch.", "genesis.")


def _assert_same_error(g_fn, t_fn):
    g, t = _outcome(g_fn), _outcome(t_fn)
    assert t[0] != "ok", "the case should fail in PyTorch"
    assert g == t


def _flat(res):
    return [x for r in res for x in _flat(r)] if isinstance(res, (tuple, list)) else [res]


MATRIX_CASES = ([("jacobian", n) for n in sorted(FUNCTIONS)]
                + [("hessian", n) for n in sorted(SCALAR_FUNCTIONS)])
STRATEGY_ARG = {"jacobian": "strategy", "hessian": "outer_jacobian_strategy"}


def _matrix_case(fn_name, name):
    """(genesis function, torch function, the function and its input shapes)."""
    fn, shapes = (FUNCTIONS if fn_name == "jacobian" else SCALAR_FUNCTIONS)[name]
    return getattr(GF, fn_name), getattr(TF, fn_name), fn, shapes


@pytest.mark.parametrize("fn_name, name", MATRIX_CASES)
@pytest.mark.parametrize("vectorize", [False, True])
def test_jacobian_hessian(rng, fn_name, name, vectorize):
    """Single inputs and tuples of them; vectorize=True gives the same result."""
    g_fn, t_fn, fn, shapes = _matrix_case(fn_name, name)
    for single in (True, False):
        g, t = _inputs(rng, shapes, single)
        _assert_same(g_fn(fn, g, vectorize=vectorize), t_fn(fn, t, vectorize=vectorize))


@pytest.mark.parametrize("fn_name, name", MATRIX_CASES)
def test_forward_mode(rng, fn_name, name):
    """The forward-mode outer Jacobian with vectorize=True: PyTorch's values and containers, in
    the outputs' dtype, computed by reverse mode. Genesis returns them detached (PyTorch's
    forward-over-reverse Hessian carries a graph)."""
    g_fn, t_fn, fn, shapes = _matrix_case(fn_name, name)
    g, t = _inputs(rng, shapes, single=True)
    kwargs = {"vectorize": True, STRATEGY_ARG[fn_name]: "forward-mode"}
    _assert_same(g_fn(fn, g, **kwargs), _detached(t_fn(fn, t, **kwargs)))


def _detached(res):
    return type(res)(map(_detached, res)) if isinstance(res, (tuple, list)) else res.detach()


def test_jacobian_forward_mode_output_dtype(rng):
    fn = lambda x: (x * 2).double()  # noqa: E731
    g, t = _inputs(rng, [(3,)], single=True, dtype=np.float32)
    _assert_same(GF.jacobian(fn, g, vectorize=True, strategy="forward-mode"),
                 TF.jacobian(fn, t, vectorize=True, strategy="forward-mode"))
    _assert_same(GF.jacobian(fn, g), TF.jacobian(fn, t))


def _assert_float32_close(result, expected, device):
    """On `device`, and within float32's default tolerances, the absolute one taken relative to
    the results' scale (second derivatives sum terms of that size, with cancellation)."""
    assert all(r.device.type == device for r in _flat(result))
    scale = max([1.0] + [float(e.detach().abs().max()) for e in _flat(expected) if e.numel()])
    _assert_same(result, expected, rtol=1.3e-6, atol=1e-5 * scale)


@pytest.mark.parametrize("fn_name", ["jacobian", "hessian"])
def test_float32_on_each_device(rng, device, fn_name):
    """float32 inputs on every device, against PyTorch's CPU results at float32's tolerance."""
    g_fn, t_fn, fn, shapes = _matrix_case(fn_name, "matmul")
    g, t = _inputs(rng, shapes, single=False, dtype=np.float32, device=device)
    result = g_fn(fn, g)
    _assert_float32_close(result, t_fn(fn, t), device)


def test_jacobian_of_empty_output(rng):
    """An output with no elements: an empty Jacobian of shape output.shape + input.shape (where
    PyTorch's stack of no rows raises)."""
    g, t = _inputs(rng, [(3,)], single=True)
    with pytest.raises(RuntimeError, match="stack expects a non-empty TensorList"):
        TF.jacobian(lambda x: x[:0] * 2, t)
    jac = GF.jacobian(lambda x: x[:0] * 2, g)
    assert tuple(jac.shape) == (0, 3) and jac.dtype is genesis.float64


def _assert_differentiable_again(rng, rg, rt, g, t):
    """A random weighted sum of the results, differentiated with respect to the inputs, gives
    PyTorch's gradients."""
    weights = [rng.standard_normal(tuple(r.shape)) for r in _flat(rt)]
    lg = sum((r * genesis.tensor(w)).sum() for r, w in zip(_flat(rg), weights))
    lt = sum((r * torch.tensor(w)).sum() for r, w in zip(_flat(rt), weights))
    _assert_same(genesis.autograd.grad(lg, g, allow_unused=True, materialize_grads=True),
                 torch.autograd.grad(lt, t, allow_unused=True, materialize_grads=True))


@pytest.mark.parametrize("fn_name, name", MATRIX_CASES)
def test_create_graph(rng, fn_name, name):
    """With create_graph the Jacobian (the Hessian) is differentiable again, back to the
    caller's inputs (second, and third, derivatives)."""
    g_fn, t_fn, fn, shapes = _matrix_case(fn_name, name)
    g, t = _inputs(rng, shapes, single=False, requires_grad=True)
    rg, rt = g_fn(fn, g, create_graph=True), t_fn(fn, t, create_graph=True)
    _assert_same(rg, rt)
    _assert_differentiable_again(rng, rg, rt, g, t)


def _products_case(rng, name, fn_name, create_graph, dtype=np.float64, device="cpu"):
    """(genesis result, torch result, genesis inputs, torch inputs) of one product function."""
    table = SCALAR_FUNCTIONS if fn_name in ("vhp", "hvp") else FUNCTIONS
    fn, shapes = table[name]
    g, t = _inputs(rng, shapes, True, dtype, create_graph, device)
    like = fn(*(t if isinstance(t, tuple) else (t,))) if fn_name == "vjp" else t
    v_shapes = [tuple(x.shape) for x in (like if isinstance(like, tuple) else (like,))]
    vg, vt = _inputs(rng, v_shapes, not isinstance(like, tuple), dtype, device=device)
    rg = getattr(GF, fn_name)(fn, g, vg, create_graph=create_graph)
    rt = getattr(TF, fn_name)(fn, t, vt, create_graph=create_graph)
    return rg, rt, g, t


@pytest.mark.parametrize("fn_name, name", [(f, n) for f in ("vjp", "jvp") for n in FUNCTIONS]
                         + [(f, n) for f in ("vhp", "hvp") for n in SCALAR_FUNCTIONS])
@pytest.mark.parametrize("create_graph", [False, True])
def test_products(rng, fn_name, name, create_graph):
    """vjp, jvp, vhp and hvp: (outputs, product) as PyTorch's; with create_graph both are
    differentiable again and give PyTorch's gradients."""
    rg, rt, g, t = _products_case(rng, name, fn_name, create_graph)
    _assert_same(rg, rt)
    if create_graph:
        _assert_differentiable_again(rng, rg, rt, g, t)


@pytest.mark.parametrize("fn_name", ["vjp", "jvp", "vhp", "hvp"])
def test_products_float32_on_each_device(rng, device, fn_name):
    rg, rt, _, _ = _products_case(rng, "matmul", fn_name, False, np.float32, device)
    _assert_float32_close(rg, rt, device)


def test_v_none_for_one_element(rng):
    x = rng.standard_normal(())
    fn = lambda x: x.exp() * x  # noqa: E731
    for name in ("vjp", "jvp", "vhp", "hvp"):
        _assert_same(getattr(GF, name)(fn, genesis.tensor(x)), getattr(TF, name)(fn, torch.tensor(x)))


def test_independent_inputs_give_zeros(rng):
    """strict=False: an input the outputs do not depend on gets zeros."""
    fn = lambda x, y: x * 2  # noqa: E731
    sfn = lambda x, y: (x ** 2).sum()  # noqa: E731
    g, t = _inputs(rng, [(3,), (2,)], single=False)
    vg, vt = _inputs(rng, [(3,)], single=True)
    _assert_same(GF.jacobian(fn, g), TF.jacobian(fn, t))
    _assert_same(GF.vjp(fn, g, vg), TF.vjp(fn, t, vt))
    _assert_same(GF.hessian(sfn, g), TF.hessian(sfn, t))
    wg, wt = _inputs(rng, [(3,), (2,)], single=False)
    for name in ("jvp", "vhp", "hvp"):
        f = fn if name == "jvp" else sfn
        _assert_same(getattr(GF, name)(f, g, wg), getattr(TF, name)(f, t, wt))


STRICT_CASES = {
    "jacobian_unused": ("jacobian", lambda x, y: x * 2, [(3,), (2,)], {}),
    "jacobian_constant": ("jacobian", lambda x: x.detach() * 2, [(3,)], {}),
    "jacobian_linear_create_graph": ("jacobian", lambda x: x * 2, [(3,)], {"create_graph": True}),
    "jacobian_vectorize": ("jacobian", lambda x: x * x, [(3,)], {"vectorize": True}),
    "jacobian_forward_mode": ("jacobian", lambda x: x * x, [(3,)],
                              {"vectorize": True, "strategy": "forward-mode"}),
    "hessian_linear": ("hessian", lambda x: (x * 2).sum(), [(3,)], {}),
    "hessian_quadratic_create_graph": ("hessian", lambda x: (x * x).sum(), [(3,)],
                                       {"create_graph": True}),
    "hessian_unused": ("hessian", lambda x, y: (x ** 3).sum(), [(3,), (2,)], {}),
    "vjp_unused": ("vjp", lambda x, y: (x * 2).sum(), [(3,), (2,)], {}),
    "vjp_constant": ("vjp", lambda x: x.detach().sum(), [(3,)], {}),
    "vjp_linear_create_graph": ("vjp", lambda x: (x * 2).sum(), [(3,)], {"create_graph": True}),
    "jvp_unused": ("jvp", lambda x, y: (x * 2).sum(), [(3,), (2,)], {}),
    "jvp_linear_create_graph": ("jvp", lambda x: (x * 2).sum(), [(3,)], {"create_graph": True}),
    "vhp_linear": ("vhp", lambda x: (x * 2).sum(), [(3,)], {}),
    "vhp_unused": ("vhp", lambda x, y: (x ** 3).sum(), [(3,), (2,)], {}),
    "vhp_quadratic_create_graph": ("vhp", lambda x: (x * x).sum(), [(3,)],
                                   {"create_graph": True}),
    "hvp_linear": ("hvp", lambda x: (x * 2).sum(), [(3,)], {}),
    "hvp_unused": ("hvp", lambda x, y: (x ** 3).sum(), [(3,), (2,)], {}),
    "hvp_quadratic_create_graph": ("hvp", lambda x: (x * x).sum(), [(3,)],
                                   {"create_graph": True}),
}


@pytest.mark.parametrize("case", sorted(STRICT_CASES))
def test_strict_errors(rng, case):
    fn_name, fn, shapes, kwargs = STRICT_CASES[case]
    g, t = _inputs(rng, shapes, single=True)
    args = ()
    if fn_name in ("vjp", "jvp", "vhp", "hvp"):
        v_shapes = [()] if fn_name == "vjp" else shapes
        args = _inputs(rng, v_shapes, single=True)
    gargs, targs = (args[0],) if args else (), (args[1],) if args else ()
    _assert_same_error(lambda: getattr(GF, fn_name)(fn, g, *gargs, strict=True, **kwargs),
                       lambda: getattr(TF, fn_name)(fn, t, *targs, strict=True, **kwargs))


def test_strict_passes_when_dependent(rng):
    fn, shapes = SCALAR_FUNCTIONS["matmul"]
    g, t = _inputs(rng, shapes, single=False)
    _assert_same(GF.hessian(fn, g, strict=True), TF.hessian(fn, t, strict=True))
    fn, shapes = FUNCTIONS["matmul"]
    g, t = _inputs(rng, shapes, single=False)
    _assert_same(GF.jacobian(fn, g, strict=True, create_graph=True),
                 TF.jacobian(fn, t, strict=True, create_graph=True))


ERROR_CASES = {
    "inputs_not_tensor": ("jacobian", lambda x: x, lambda lib, x: 3, None),
    "inputs_tuple_entry": ("vjp", lambda x, y: x, lambda lib, x: (x, 3), None),
    "inputs_list": ("jvp", lambda x: x, lambda lib, x: [x], None),
    "outputs_not_tensor": ("jacobian", lambda x: 3.0, None, None),
    "outputs_tuple_entry": ("vjp", lambda x: (x, 1), None, None),
    "v_none_vjp": ("vjp", lambda x: x * 2, None, None),
    "v_none_jvp": ("jvp", lambda x: x * 2, None, None),
    "v_none_vhp": ("vhp", lambda x: (x * x).sum(), None, None),
    "v_none_hvp": ("hvp", lambda x: (x * x).sum(), None, None),
    "v_size": ("vjp", lambda x: x * 2, None, lambda lib: lib.ones(4, dtype=lib.float64)),
    "v_size_jvp": ("jvp", lambda x: x * 2, None, lambda lib: lib.ones(2, dtype=lib.float64)),
    "v_tuple_length": ("vjp", lambda x: (x, x * 2), None,
                       lambda lib: (lib.ones(3, dtype=lib.float64),)),
    "v_tuple_entry_size": ("vjp", lambda x: (x, x * 2), None,
                           lambda lib: (lib.ones(3, dtype=lib.float64),
                                        lib.ones(2, dtype=lib.float64))),
    "v_single_for_tuple": ("jvp", lambda x: x, lambda lib, x: x, lambda lib: (
        lib.ones(3, dtype=lib.float64), lib.ones(3, dtype=lib.float64))),
    "v_not_tensor": ("vjp", lambda x: x.sum(), None, lambda lib: 1.0),
    "hessian_tuple_output": ("hessian", lambda x: (x.sum(),), None, None),
    "hessian_vector_output": ("hessian", lambda x: x * x, None, None),
    "vhp_tuple_output": ("vhp", lambda x: (x.sum(),), None, lambda lib: lib.ones(
        3, dtype=lib.float64)),
    "hvp_vector_output": ("hvp", lambda x: x * x, None, lambda lib: lib.ones(
        3, dtype=lib.float64)),
}


@pytest.mark.parametrize("case", sorted(ERROR_CASES))
def test_errors(rng, case):
    """Bad inputs, outputs and v: PyTorch's exception type and message."""
    fn_name, fn, make_inputs, make_v = ERROR_CASES[case]
    x = rng.standard_normal(3)
    results = []
    for lib, mod in ((genesis, GF), (torch, TF)):
        inputs = lib.tensor(x)
        inputs = make_inputs(lib, inputs) if make_inputs else inputs
        args = (make_v(lib),) if make_v else ()
        results.append(lambda mod=mod, inputs=inputs, args=args: getattr(mod, fn_name)(
            fn, inputs, *args))
    _assert_same_error(*results)


@pytest.mark.parametrize("kwargs", [
    {"strategy": "forward-mode"},
    {"strategy": "forward-mode", "create_graph": True},
    {"strategy": "forward-mode", "strict": True, "vectorize": True},
    {"strategy": "forwards"},
    {"strict": True, "vectorize": True},
])
def test_jacobian_option_errors(rng, kwargs):
    x = rng.standard_normal(3)
    fn = lambda x: x * x  # noqa: E731
    _assert_same_error(lambda: GF.jacobian(fn, genesis.tensor(x), **kwargs),
                       lambda: TF.jacobian(fn, torch.tensor(x), **kwargs))


@pytest.mark.parametrize("kwargs", [
    {"outer_jacobian_strategy": "forward-mode"},
    {"outer_jacobian_strategy": "forward-mode", "create_graph": True, "vectorize": True},
    {"outer_jacobian_strategy": "forwards"},
    {"strict": True, "vectorize": True},
])
def test_hessian_option_errors(rng, kwargs):
    x = rng.standard_normal(3)
    fn = lambda x: (x ** 3).sum()  # noqa: E731
    _assert_same_error(lambda: GF.hessian(fn, genesis.tensor(x), **kwargs),
                       lambda: TF.hessian(fn, torch.tensor(x), **kwargs))


def test_captured_input_is_a_constant(rng):
    """The function sees fresh tensors: the caller's own input captured by the function is a
    constant, as in PyTorch."""
    g, t = _inputs(rng, [(3,)], single=True)
    _assert_same(GF.jacobian(lambda x: x * g, g), TF.jacobian(lambda x: x * t, t))


def test_grad_mode_and_inputs_untouched(rng):
    """Under no_grad the results are computed all the same; the caller's inputs keep their
    requires_grad and get no .grad."""
    fn, shapes = SCALAR_FUNCTIONS["matmul"]
    g, t = _inputs(rng, shapes, single=False)
    with genesis.no_grad():
        hg = GF.hessian(fn, g)
        vg = GF.vhp(fn, g, g)
    with torch.no_grad():
        ht = TF.hessian(fn, t)
        vt = TF.vhp(fn, t, t)
    _assert_same((hg, vg), (ht, vt))
    assert not any(x.requires_grad for x in g) and all(x.grad is None for x in g)
