"""Activation functionals and modules against torch: forward, gradient, in-place forms, errors."""

import numpy as np
import pytest
import torch
import torch.nn as tnn
import torch.nn.functional as TF
from helpers import (TORCH_DTYPES, assert_close, assert_refuses_as_torch, from_torch, raised,
                     to_torch)

import genesis
import genesis.nn as nn
import genesis.nn.functional as F
from genesis.autograd import gradcheck

# (name, args): F.name(x, *args) against torch's; every one is elementwise or dim-wise.
FUNCTIONALS = [
    ("relu6", ()), ("hardtanh", (-0.5, 1.2)), ("hardswish", ()), ("hardsigmoid", ()),
    ("mish", ()), ("selu", ()), ("celu", (0.7,)), ("elu", (1.3,)), ("leaky_relu", (0.2,)),
    ("threshold", (0.1, -2.0)), ("hardshrink", (0.4,)), ("softshrink", (0.3,)),
    ("tanhshrink", ()), ("softsign", ()), ("logsigmoid", ()), ("silu", ()),
    ("glu", (1,)), ("softmin", (1,)), ("softmax", (-1,)), ("log_softmax", (0,)),
]
# The same functions as modules: (genesis/torch class name, constructor args).
MODULES = [
    ("ReLU6", ()), ("Hardtanh", (-2.0, 0.5)), ("Hardswish", ()), ("Hardsigmoid", ()),
    ("Mish", ()), ("SELU", ()), ("CELU", (1.5,)), ("GLU", (-1,)), ("Threshold", (0.3, 0.5)),
    ("Hardshrink", (0.6,)), ("Softshrink", ()), ("Tanhshrink", ()), ("Softsign", ()),
    ("Softmin", (1,)), ("Softmax2d", ()), ("LogSigmoid", ()),
]
DTYPES = [genesis.float32, genesis.float64, genesis.bfloat16]
# Sampled layouts: (shape, make it a transposed view).
LAYOUTS = [((3, 4, 6), False), ((4, 6, 2), True), ((0, 4, 2), False), ((5, 2, 1), False)]


def _pair(rng, shape, dtype, transposed, scale=3.0, device="cpu"):
    base = rng.uniform(-scale, scale, shape[::-1] if transposed else shape)
    t = torch.tensor(base, dtype=TORCH_DTYPES[dtype])
    g = genesis.tensor(base, dtype=dtype, device=device)
    if transposed:
        t, g = t.permute(*reversed(range(len(shape)))), g.permute(*reversed(range(len(shape))))
    return g, t


def _check_forward_backward(g_fn, t_fn, g, t, dtype, reduces=False):
    """Forward and gradient against torch. `reduces`: the gradient is y * (g - sum(g * y))
    from the rounded half output y; both libraries' rounding of y moves it by up to about
    2 ulps of its largest element, the tolerance used for such gradients in half types."""
    g_leaf = g.detach().requires_grad_(True)
    t_leaf = t.detach().requires_grad_(True)
    out_t = t_fn(t_leaf)
    out_g = g_fn(g_leaf)
    assert_close(out_g, out_t)
    grad = torch.randn(out_t.shape, dtype=torch.float64).to(out_t.dtype)
    if out_t.numel():
        out_t.backward(grad)
        out_g.backward(from_torch(grad, device=out_g.device))
        scale = float(t_leaf.grad.abs().max()) if reduces and dtype is genesis.bfloat16 else 0
        assert_close(g_leaf.grad, t_leaf.grad, atol=scale * 2.0 ** -7 or None)


@pytest.mark.parametrize("name, args", FUNCTIONALS, ids=[f[0] for f in FUNCTIONALS])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_functional_matches_torch(name, args, dtype, rng, device):
    for shape, transposed in LAYOUTS:
        if name == "glu" and shape[1] % 2:
            continue
        g, t = _pair(rng, shape, dtype, transposed, device=device)
        _check_forward_backward(lambda x: getattr(F, name)(x, *args),
                                lambda x: getattr(TF, name)(x, *args), g, t, dtype,
                                name in ("softmin", "softmax", "log_softmax"))


@pytest.mark.parametrize("name, args", MODULES, ids=[m[0] for m in MODULES])
def test_module_matches_torch(name, args, rng, device):
    g, t = _pair(rng, (2, 4, 3, 2), genesis.float32, True, device=device)
    _check_forward_backward(getattr(nn, name)(*args), getattr(tnn, name)(*args), g, t,
                            genesis.float32)
    assert repr(getattr(nn, name)(*args)) == repr(getattr(tnn, name)(*args))


@pytest.mark.parametrize("name, args", [("Hardtanh", (-1.0, 1.0, True)), ("CELU", (0.5, True)),
                                        ("RReLU", (0.1, 0.2, True)), ("ReLU6", (True,)),
                                        ("Threshold", (0.1, 2.0, True)), ("SELU", (True,)),
                                        ("Mish", (True,)), ("Hardswish", (True,)),
                                        ("Hardsigmoid", (True,))])
def test_inplace_module_reprs(name, args):
    assert repr(getattr(nn, name)(*args)) == repr(getattr(tnn, name)(*args))


@pytest.mark.parametrize("name, args", FUNCTIONALS, ids=[f[0] for f in FUNCTIONALS])
def test_gradcheck(name, args, rng, device):
    x = genesis.tensor(rng.uniform(-2, 2, (3, 4)), dtype=genesis.float64, requires_grad=True,
                       device=device)
    assert gradcheck(lambda v: getattr(F, name)(v, *args), (x,))


INPLACE = [("relu6", ()), ("hardtanh", (-0.3, 0.2)), ("hardswish", ()), ("hardsigmoid", ()),
           ("mish", ()), ("selu", ()), ("celu", (2.0,)), ("threshold", (0.0, 7.0)),
           ("elu", ()), ("leaky_relu", (0.3,)), ("silu", ())]


@pytest.mark.parametrize("name, args", INPLACE, ids=[i[0] for i in INPLACE])
def test_inplace_flag_writes_input_and_differentiates(name, args, rng, device):
    g, t = _pair(rng, (3, 5), genesis.float64, True, device=device)
    leaf_g, leaf_t = (g.detach().clone().requires_grad_(True),
                      t.detach().clone().requires_grad_(True))
    out = getattr(F, name)(g, *args, inplace=True)
    assert out is g
    assert_close(g, getattr(TF, name)(t, *args))
    # Through a graph: in-place on a non-leaf gives the out-of-place gradient.
    y_g = getattr(F, name)(leaf_g * 1, *args, inplace=True)
    y_t = getattr(TF, name)(leaf_t * 1, *args, inplace=True)
    y_g.sum().backward()
    y_t.sum().backward()
    assert_close(leaf_g.grad, leaf_t.grad)


@pytest.mark.parametrize("name", ["relu_", "elu_", "selu_", "celu_", "leaky_relu_",
                                  "hardtanh_", "threshold_"])
def test_underscore_forms(name, rng):
    g, t = _pair(rng, (4, 3), genesis.float32, False)
    args = (0.5, -1.0) if name == "threshold_" else ()
    assert getattr(F, name)(g, *args) is g
    getattr(TF, name)(t, *args)
    assert_close(g, t)


def test_prelu_module_and_functional(rng, device):
    for shape, params in [((3, 4, 5), 4), ((2, 3), 1), ((4,), 1), ((2, 3, 2, 2), 3)]:
        g_m, t_m = nn.PReLU(params, init=0.1, device=device), tnn.PReLU(params, init=0.1)
        with torch.no_grad():
            t_m.weight.copy_(torch.tensor(rng.uniform(-1, 1, params)))
        g_m.weight.data = from_torch(t_m.weight.detach(), device=device)
        g, t = _pair(rng, shape, genesis.float32, False, device=device)
        g.requires_grad_(True)
        t.requires_grad_(True)
        out_g, out_t = g_m(g), t_m(t)
        assert_close(out_g, out_t)
        out_g.sum().backward()
        out_t.sum().backward()
        assert_close(g.grad, t.grad)
        assert_close(g_m.weight.grad, t_m.weight.grad, rtol=1e-5)
    assert repr(nn.PReLU(3)) == repr(tnn.PReLU(3))
    w = genesis.tensor(rng.uniform(-1, 1, 3), requires_grad=True)
    x = genesis.tensor(rng.uniform(-1, 1, (2, 3, 2)), requires_grad=True)
    assert gradcheck(lambda a, b: F.prelu(a, b), (x.double().detach().requires_grad_(),
                                                  w.double().detach().requires_grad_()))
    with pytest.raises(RuntimeError, match="Mismatch of parameter numbers"):
        F.prelu(genesis.ones(2, 4), genesis.ones(3))
    with pytest.raises(RuntimeError, match="channel size = 1"):
        F.prelu(genesis.ones(4), genesis.ones(4))


def test_rrelu_eval_training_and_bounds(rng, device):
    g, t = _pair(rng, (50, 40), genesis.float64, False, device=device)
    assert_close(F.rrelu(g, 0.1, 0.3), TF.rrelu(t, 0.1, 0.3))
    module = nn.RReLU(0.1, 0.3)
    assert repr(module) == repr(tnn.RReLU(0.1, 0.3))
    module.eval()
    assert_close(module(g), TF.rrelu(t, 0.1, 0.3, training=False))
    module.train()
    leaf = g.detach().requires_grad_(True)
    out = module(leaf)
    out.sum().backward()
    x, y = g.cpu().numpy(), out.detach().cpu().numpy()
    slope = y[x < 0] / x[x < 0]
    assert slope.min() >= 0.1 and slope.max() <= 0.3 and slope.std() > 0.03
    np.testing.assert_allclose(leaf.grad.cpu().numpy()[x < 0], slope)
    np.testing.assert_array_equal(y[x >= 0], x[x >= 0])
    with pytest.raises(RuntimeError, match="Lower bound"):
        F.rrelu(g, 0.5, 0.1)


def test_gumbel_softmax():
    genesis.manual_seed(0)
    logits = genesis.tensor(np.log([[0.7, 0.2, 0.1]] * 4000), requires_grad=True)
    soft = F.gumbel_softmax(logits, tau=0.5)
    np.testing.assert_allclose(soft.sum(-1).detach().numpy(), 1, rtol=1e-6)
    hard = F.gumbel_softmax(logits, hard=True)
    counts = hard.detach().numpy().sum(0) / 4000
    np.testing.assert_allclose(counts, [0.7, 0.2, 0.1], atol=0.03)
    assert set(np.unique(hard.detach().numpy())) == {0.0, 1.0}
    hard.sum().backward()
    assert logits.grad is not None


def test_errors():
    with pytest.raises(RuntimeError, match="Halving dimension must be even"):
        F.glu(genesis.ones(2, 3), 1)
    with pytest.raises(RuntimeError, match="Halving dimension must be even"):
        TF.glu(torch.ones(2, 3), 1)
    with pytest.raises(RuntimeError, match="lambda must be greater or equal to 0"):
        F.softshrink(genesis.ones(2), -1.0)
    with pytest.raises(ValueError, match="3D or 4D"):
        nn.Softmax2d()(genesis.ones(2, 3))
    with pytest.raises(ValueError, match="min_val cannot be greater than max_val"):
        nn.Hardtanh(1.0, -1.0)
    with pytest.raises(NotImplementedError):
        F.selu(genesis.ones(2, dtype=genesis.int64))
    with pytest.raises(RuntimeError, match="leaf Variable"):
        F.elu(genesis.ones(2, requires_grad=True), inplace=True)


def test_integer_inputs_follow_torch():
    x = genesis.tensor([-3, 0, 2, 9])
    t = to_torch(x)
    assert_close(F.relu6(x), TF.relu6(t))
    assert_close(F.hardtanh(x, -2, 5), TF.hardtanh(t, -2, 5))
    assert_close(F.threshold(x, 1, 7), TF.threshold(t, 1, 7))


def _node_name(node):
    """A node's name without torch's namespace ("torch::autograd::NotImplemented")."""
    return node.name().replace("torch::autograd::", "")


def _edge_names(node):
    """The names of a node's next functions, None for an edge that needs no gradient."""
    return [None if n is None else _node_name(n) for n, _ in node.next_functions]


@pytest.mark.parametrize("name, args", [("relu", ()), ("relu6", ()), ("hardtanh", (-0.5, 1.2)),
                                        ("leaky_relu", (0.2,)), ("hardshrink", (0.4,)),
                                        ("softshrink", (0.3,)), ("elu", (1.3,)), ("selu", ()),
                                        ("celu", (0.7,)), ("threshold", (0.5, 7.0)),
                                        ("gelu", ()), ("softplus", ()), ("logsigmoid", ()),
                                        ("hardswish", ()), ("tanh", ()), ("sigmoid", ())])
@pytest.mark.parametrize("squared", [False, True])
def test_first_derivative_is_differentiable_as_torch(name, args, squared, rng, device):
    """The gradient taken with create_graph is one node of torch's backward op (relu's
    ThresholdBackwardBackward0, elu's, selu's and celu's EluBackwardBackward0...) with edges to
    the incoming gradient (none for y.sum(), y * y's) and the saved tensor, even where only
    masks read it; its own gradient fills the input's grad as torch's (zeros for the
    piecewise-linear ones)."""
    base = rng.uniform(-3.0, 3.0, (4, 5))
    results = []
    for lib in (torch, genesis):
        x = lib.tensor(base, dtype=lib.float64, device="cpu" if lib is torch else device,
                       requires_grad=True)
        y = getattr(lib.nn.functional, name)(x, *args)
        g, = lib.autograd.grad((y * y if squared else y).sum(), x, create_graph=True)
        (g * g).sum().backward()
        results.append((g.requires_grad, g.grad_fn.name(), _edge_names(g.grad_fn), x.grad))
    assert results[1][:3] == results[0][:3]
    assert_close(results[1][3], results[0][3])


def test_threshold_module_double_backward_as_torch(rng, device):
    """nn.Threshold's gradient of y * y, taken with create_graph, is one ThresholdBackwardBackward0
    node over the incoming gradient and the input, as torch's; its own gradient matches."""
    base = rng.uniform(-3.0, 3.0, (3, 4))
    results = []
    for lib in (torch, genesis):
        x = lib.tensor(base, dtype=lib.float64, device="cpu" if lib is torch else device,
                       requires_grad=True)
        y = lib.nn.Threshold(0.5, 7.0)(x)
        g, = lib.autograd.grad((y * y).sum(), x, create_graph=True)
        g.sum().backward()
        results.append((g, g.grad_fn.name(), x.grad))
    assert results[1][1] == results[0][1]
    assert_close(results[1][0], results[0][0])
    assert_close(results[1][2], results[0][2])


def _dtype_in(lib, dtype):
    """The genesis dtype `dtype` as library `lib` names it."""
    return TORCH_DTYPES[dtype] if lib is torch else dtype


def _hardsigmoid_gradient(lib, base, dtype, device, inplace):
    """(y, its gradient taken with create_graph against an incoming gradient that requires
    grad, and the second backward with respect to the input and to that incoming gradient)."""
    x = lib.tensor(base, dtype=_dtype_in(lib, dtype), device="cpu" if lib is torch else device,
                   requires_grad=True)
    weight = lib.ones_like(x).requires_grad_(True)
    y = lib.nn.functional.hardsigmoid(x.clone(), inplace=inplace)
    g, = lib.autograd.grad(y, x, weight, create_graph=True)
    return y, g, [lambda: lib.autograd.grad(g.sum(), x, retain_graph=True),
                  lambda: lib.autograd.grad(g.sum(), weight)]


@pytest.mark.parametrize("inplace", [False, True])
@pytest.mark.parametrize("dtype", [genesis.float32, genesis.float64], ids=str)
def test_hardsigmoid_double_backward_is_refused_as_torch(inplace, dtype, rng, device):
    """torch's hardsigmoid_backward has no derivative: the gradient taken with create_graph has
    its values and is one NotImplemented node over the incoming gradient and the input, whose
    backward raises torch's error, with respect to either."""
    base = np.concatenate([rng.uniform(-4.0, 4.0, 9), [-3.0, 0.0, 3.0]])
    t_y, t_g, t_calls = _hardsigmoid_gradient(torch, base, dtype, device, inplace)
    g_y, g_g, g_calls = _hardsigmoid_gradient(genesis, base, dtype, device, inplace)
    for y, g in ((t_y, t_g), (g_y, g_g)):
        assert (y.grad_fn.name(), _node_name(g.grad_fn), _edge_names(g.grad_fn)) == (
            "HardsigmoidBackward0", "NotImplemented", ["AccumulateGrad", "CloneBackward0"])
    assert_close(g_y, t_y)
    assert_close(g_g, t_g)
    for g_call, t_call in zip(g_calls, t_calls):
        assert raised(g_call) == raised(t_call)


def test_hardsigmoid_forward_mode_is_defined_but_not_over_its_backward(rng, device):
    """torch's forward-mode derivative of hardsigmoid exists (jvp, linearize, dual tensors;
    genesis pushes them through its backward), but not that of hardsigmoid_backward: jvp of
    a gradient, or a dual tensor's gradient taken with create_graph, raises torch's error."""
    base = np.concatenate([rng.uniform(-4.0, 4.0, 7), [-3.0, 0.0, 3.0]])
    x_t, x_g = torch.tensor(base), genesis.tensor(base, device=device)
    tangent_t = torch.tensor(rng.normal(size=10))
    tangent_g = from_torch(tangent_t, device=device)
    assert_close(genesis.func.jvp(F.hardsigmoid, (x_g,), (tangent_g,))[1],
                 torch.func.jvp(TF.hardsigmoid, (x_t,), (tangent_t,))[1])
    assert_close(genesis.func.linearize(F.hardsigmoid, x_g)[1](tangent_g),
                 torch.func.linearize(TF.hardsigmoid, x_t)[1](tangent_t))

    def jvp_of_grad(lib, x, tangent):
        def summed(v):
            return lib.nn.functional.hardsigmoid(v).sum()
        return lambda: lib.func.jvp(lib.func.grad(summed), (x,), (tangent,))

    def dual_gradient(lib, x, tangent):
        def run():
            leaf = x.clone().requires_grad_(True)
            with lib.autograd.forward_ad.dual_level():
                dual = lib.autograd.forward_ad.make_dual(leaf, tangent)
                y = lib.nn.functional.hardsigmoid(dual)
                return lib.autograd.grad(y.sum(), dual, create_graph=True)
        return run

    for make in (jvp_of_grad, dual_gradient):
        assert raised(make(genesis, x_g, tangent_g)) == raised(make(torch, x_t, tangent_t))


# In-place activations whose node saves the result (torch's *Backward1), and out-of-place
# elu and leaky_relu: (name, call on either library's non-leaf x).
RESULT_SAVING = [
    ("F.elu", lambda lib, x: lib.nn.functional.elu(x, 1.4)),
    ("F.elu(inplace)", lambda lib, x: lib.nn.functional.elu(x, 1.4, inplace=True)),
    ("F.elu_", lambda lib, x: lib.nn.functional.elu_(x, 0.6)),
    ("F.elu_(alpha=0)", lambda lib, x: lib.nn.functional.elu_(x, 0.0)),
    ("nn.ELU(inplace)", lambda lib, x: lib.nn.ELU(inplace=True)(x)),
    ("F.celu(inplace)", lambda lib, x: lib.nn.functional.celu(x, 1.5, inplace=True)),
    ("F.selu(inplace)", lambda lib, x: lib.nn.functional.selu(x, inplace=True)),
    ("F.leaky_relu", lambda lib, x: lib.nn.functional.leaky_relu(x, 0.2)),
    ("F.leaky_relu(inplace)",
     lambda lib, x: lib.nn.functional.leaky_relu(x, 0.2, inplace=True)),
    ("F.leaky_relu_", lambda lib, x: lib.nn.functional.leaky_relu_(x, 0.05)),
    ("nn.LeakyReLU(inplace)", lambda lib, x: lib.nn.LeakyReLU(0.3, inplace=True)(x)),
    ("F.rrelu(inplace)", lambda lib, x: lib.nn.functional.rrelu(x, 0.1, 0.3, False, True)),
]


def _with_zeros(rng, shape):
    """Uniform values on [-3, 3] with a few exact zeros, where the derivatives' masks meet."""
    base = rng.uniform(-3.0, 3.0, shape)
    base.flat[::4] = 0.0
    return base


@pytest.mark.parametrize("name, call", RESULT_SAVING, ids=[r[0] for r in RESULT_SAVING])
@pytest.mark.parametrize("dtype", [genesis.float32, genesis.float64], ids=str)
def test_activation_double_backward_as_torch(name, call, dtype, rng, device):
    """Values, grad_fn names and first and second derivatives of the in-place forms (and the
    out-of-place elu and leaky_relu) as torch's: the gradient taken with create_graph is one
    node of torch's backward op, whose own derivative vanishes at x = 0 (torch's
    elu_double_backward masks it with x < 0)."""
    base, weight = _with_zeros(rng, (4, 6)), rng.uniform(-2.0, 2.0, (4, 6))
    results = []
    for lib in (torch, genesis):
        kind = _dtype_in(lib, dtype)
        on = "cpu" if lib is torch else device
        x = lib.tensor(base, dtype=kind, device=on, requires_grad=True)
        y = call(lib, x.clone())
        g, = lib.autograd.grad((y * lib.tensor(weight, dtype=kind, device=on)).sum(), x,
                               create_graph=True)
        h, = lib.autograd.grad((g * g).sum(), x)
        results.append(((y.grad_fn.name(), _node_name(g.grad_fn)), y, g, h))
    (t_names, *t_values), (g_names, *g_values) = results
    assert g_names == t_names
    for actual, expected in zip(g_values, t_values):
        assert_close(actual, expected)


# In-place forms with a negative slope, whose backward torch refuses: (name, call, whether
# torch has a forward-mode derivative of the op at all).
NEGATIVE_SLOPES = [
    ("F.elu(inplace)", lambda lib, x: lib.nn.functional.elu(x, -0.5, inplace=True), True),
    ("F.elu_", lambda lib, x: lib.nn.functional.elu_(x, -1.0), True),
    ("nn.ELU(inplace)", lambda lib, x: lib.nn.ELU(-2.0, inplace=True)(x), True),
    ("F.celu(inplace)", lambda lib, x: lib.nn.functional.celu(x, -1.5, inplace=True), True),
    ("F.leaky_relu(inplace)",
     lambda lib, x: lib.nn.functional.leaky_relu(x, -0.2, inplace=True), True),
    ("F.leaky_relu_", lambda lib, x: lib.nn.functional.leaky_relu_(x, -0.1), True),
    ("nn.LeakyReLU(inplace)", lambda lib, x: lib.nn.LeakyReLU(-0.3, inplace=True)(x), True),
    ("F.rrelu(inplace)",
     lambda lib, x: lib.nn.functional.rrelu(x, -0.5, -0.1, False, True), False),
]


def _negative_slope_runs(lib, call, base, device):
    """(y, y without a graph, y's grad_fn name, and calls raising the refusals: the backward
    and the tangent of a dual input)."""
    on = "cpu" if lib is torch else device
    x = lib.tensor(base, device=on, requires_grad=True)
    y = call(lib, x * 1)
    with lib.no_grad():
        plain = call(lib, x * 1)
    fw = lib.autograd.forward_ad

    def dual():
        with fw.dual_level():
            call(lib, fw.make_dual(lib.tensor(base, device=on), lib.ones(base.shape, device=on)))
    return y, plain, y.grad_fn.name(), [lambda: y.sum().backward(), dual]


@pytest.mark.parametrize("name, call, dual", NEGATIVE_SLOPES, ids=[n[0] for n in NEGATIVE_SLOPES])
def test_inplace_negative_slope_backward_is_refused_as_torch(name, call, dual, rng, device):
    """A negative slope runs in place as torch's (values, grad_fn name) but its gradient, and
    its tangent under forward-mode AD, raise torch's error; without a graph nothing is refused,
    and a leaf that requires grad is refused in torch's words."""
    base = _with_zeros(rng, (3, 4))
    t_y, t_plain, t_name, t_calls = _negative_slope_runs(torch, call, base, device)
    g_y, g_plain, g_name, g_calls = _negative_slope_runs(genesis, call, base, device)
    assert g_name == t_name
    assert_close(g_y, t_y)
    assert_close(g_plain, t_plain)
    assert raised(g_calls[0]) == raised(t_calls[0])
    if dual:
        assert raised(g_calls[1]) == raised(t_calls[1])
    assert_refuses_as_torch(lambda lib: call(lib, lib.tensor(base, requires_grad=True)))
