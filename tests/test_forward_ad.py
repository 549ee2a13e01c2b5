"""genesis.autograd.forward_ad against torch.autograd.forward_ad: tangents of dual tensors through
ops, views, in-place writes, modules and custom Functions, the level rules and the errors."""

import functools

import numpy as np
import pytest
import torch
import torch.autograd.forward_ad as tfw

import genesis
import genesis.autograd.forward_ad as gfw
from helpers import assert_close, make_pair, raised

FLOATS = [genesis.float32, genesis.float64]


def _duals(lib, fw, primals, tangents):
    return [fw.make_dual(p, t) for p, t in zip(primals, tangents)]


def _run(lib, fw, fn, primals, tangents):
    """fn(lib, *duals) inside a level: (primal, tangent) of each tensor it returns."""
    with fw.dual_level():
        out = fn(lib, *_duals(lib, fw, primals, tangents))
        outs = out if isinstance(out, tuple) else (out,)
        return [tuple(fw.unpack_dual(o)) for o in outs]


def check_jvp(fn, shapes, dtype=genesis.float32, low=-2.0, high=2.0, rtol=None, atol=None):
    """fn(lib, *duals) gives the same primals and tangents in genesis as in torch, for fresh
    random primals in [low, high] and tangents."""
    primals = [make_pair(s, dtype, low, high) for s in shapes]
    tangents = [make_pair(s, dtype) for s in shapes]
    mine = _run(genesis, gfw, fn, [g for g, _ in primals], [g for g, _ in tangents])
    theirs = _run(torch, tfw, fn, [t for _, t in primals], [t for _, t in tangents])
    assert len(mine) == len(theirs)
    for (p, tan), (tp, ttan) in zip(mine, theirs):
        assert_close(p, tp, rtol=rtol, atol=atol)
        assert (tan is None) == (ttan is None)
        if ttan is not None:
            assert_close(tan, ttan, rtol=rtol, atol=atol)


ELEMENTWISE = {
    "add": (lambda lib, x, y: x + y, [(3, 4), (3, 4)]),
    "add_alpha_broadcast": (lambda lib, x, y: lib.add(x, y, alpha=2.5), [(3, 4), (4,)]),
    "sub_scalar": (lambda lib, x: 3.0 - x, [(5,)]),
    "mul_broadcast": (lambda lib, x, y: x * y, [(2, 1, 3), (4, 1)]),
    "div": (lambda lib, x, y: x / (y * y + 1), [(3, 4), (3, 4)]),
    "pow": (lambda lib, x: (x * x + 1) ** 1.5, [(6,)]),
    "exp_log": (lambda lib, x: lib.log(lib.exp(x) + 1), [(4, 3)]),
    "trig": (lambda lib, x: lib.sin(x) * lib.cos(x) + lib.tanh(x), [(7,)]),
    "sqrt_rsqrt": (lambda lib, x: lib.sqrt(x * x + 1) + lib.rsqrt(x * x + 2), [(5,)]),
    "sigmoid_relu": (lambda lib, x: lib.sigmoid(x) + lib.relu(x), [(3, 3)]),
    "abs_clamp": (lambda lib, x: lib.abs(x) + x.clamp(-0.5, 0.5), [(8,)]),
    "where_max": (lambda lib, x, y: lib.where(x > y, x, y) + lib.maximum(x, y), [(4,), (4,)]),
    "neg_square": (lambda lib, x: -x.square(), [(2, 3)]),
    "scalar_0d": (lambda lib, x, y: x * y + x.exp(), [(), ()]),
    "empty": (lambda lib, x: x.sin() * 2, [(0, 3)]),
}

REDUCTIONS = {
    "sum": (lambda lib, x: x.sum(), [(3, 4)]),
    "sum_dim": (lambda lib, x: x.sum(1, keepdim=True), [(3, 4)]),
    "mean_dims": (lambda lib, x: x.mean((0, 2)), [(2, 3, 4)]),
    "prod": (lambda lib, x: x.prod(0), [(3, 4)]),
    "amax": (lambda lib, x: x.amax(1), [(3, 5)]),
    "max_dim": (lambda lib, x: x.max(1), [(3, 5)]),
    "var_std": (lambda lib, x: (x.var(0), x.std(1)), [(4, 5)]),
    "norm": (lambda lib, x: lib.linalg.vector_norm(x, dim=1), [(3, 4)]),
    "logsumexp": (lambda lib, x: lib.logsumexp(x, 1), [(3, 4)]),
    "cumsum": (lambda lib, x: lib.cumsum(x, 0), [(5, 2)]),
    "sum_empty": (lambda lib, x: x.sum(0), [(0, 3)]),
}

PRODUCTS = {
    "matmul": (lambda lib, a, b: a @ b, [(3, 4), (4, 5)]),
    "matmul_batched": (lambda lib, a, b: lib.matmul(a, b), [(2, 3, 4), (4, 2)]),
    "mv": (lambda lib, a, v: lib.mv(a, v), [(3, 4), (4,)]),
    "dot": (lambda lib, a, b: lib.dot(a, b), [(5,), (5,)]),
    "bmm": (lambda lib, a, b: lib.bmm(a, b), [(2, 3, 4), (2, 4, 3)]),
    "einsum": (lambda lib, a, b: lib.einsum("ij,jk->ik", a, b), [(2, 3), (3, 2)]),
    "linear": (lambda lib, x, w, b: lib.nn.functional.linear(x, w, b), [(4, 3), (2, 3), (2,)]),
}

VIEWS = {
    "transpose": (lambda lib, x: x.t() * 2, [(3, 4)]),
    "noncontiguous_in": (lambda lib, x: x.t().exp(), [(3, 4)]),
    "view_reshape": (lambda lib, x: x.view(4, 3).reshape(2, 6), [(3, 4)]),
    "reshape_copy": (lambda lib, x: x.t().reshape(-1), [(3, 4)]),
    "permute_expand": (lambda lib, x: x.permute(1, 0).unsqueeze(0).expand(2, 4, 3), [(3, 4)]),
    "slice_select": (lambda lib, x: (x[1:, ::2], x[0], x[:, -1]), [(3, 4)]),
    "narrow_chunk": (lambda lib, x: (x.narrow(1, 1, 2),) + tuple(x.chunk(2, 0)), [(4, 3)]),
    "squeeze_flatten": (lambda lib, x: x.unsqueeze(1).squeeze(1).flatten(), [(3, 4)]),
    "index_tensor": (lambda lib, x: x[lib.tensor([2, 0, 2])], [(3, 4)]),
    "index_mask": (lambda lib, x: x[x > 0], [(3, 4)]),
    "gather": (lambda lib, x: x.gather(1, lib.tensor([[0, 2], [1, 1], [3, 0]])), [(3, 4)]),
    "cat_stack": (lambda lib, x, y: (lib.cat([x, y]), lib.stack([x, y], 1)), [(2, 3), (2, 3)]),
    "flip_roll": (lambda lib, x: x.flip(0).roll(1, 1), [(3, 4)]),
    "to_float64": (lambda lib, x: x.to(lib.float64) * 2, [(3,)]),
}

LAYERS = {
    "softmax": (lambda lib, x: lib.softmax(x, 1), [(3, 5)]),
    "log_softmax": (lambda lib, x: lib.nn.functional.log_softmax(x, dim=0), [(4, 3)]),
    "gelu_silu": (lambda lib, x: lib.nn.functional.gelu(x) + lib.nn.functional.silu(x), [(6,)]),
    "layer_norm": (lambda lib, x, w: lib.nn.functional.layer_norm(x, (4,), w), [(3, 4), (4,)]),
    "mse": (lambda lib, x, y: lib.nn.functional.mse_loss(x, y), [(3, 4), (3, 4)]),
    "cross_entropy": (lambda lib, x: lib.nn.functional.cross_entropy(x, lib.tensor([1, 0, 3])),
                      [(3, 4)]),
    "conv2d": (lambda lib, x, w: lib.nn.functional.conv2d(x, w, padding=1),
               [(1, 2, 5, 5), (3, 2, 3, 3)]),
}


def _cases(*tables):
    return [pytest.param(*tables[i][name], id=name) for i in range(len(tables))
            for name in tables[i]]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("fn,shapes", _cases(ELEMENTWISE, REDUCTIONS, PRODUCTS, VIEWS, LAYERS))
def test_op_tangents(fn, shapes, dtype):
    check_jvp(fn, shapes, dtype)


def test_tangent_is_only_where_a_dual_input_is():
    """A non-dual operand counts as a zero tangent; an op on plain tensors gives none."""
    check_jvp(lambda lib, x: (x * lib.ones(3), lib.ones(3) * 2), [(3,)])


def test_noncontiguous_primal_and_tangent():
    """A transposed primal: the tangent is copied into its layout when laid out otherwise,
    kept as is when laid out alike."""
    with gfw.dual_level():
        x = genesis.randn(4, 3).t()
        tangent = genesis.randn(3, 4)
        dual = gfw.make_dual(x, tangent)
        copied = gfw.unpack_dual(dual).tangent
        assert copied is not tangent and copied.stride() == x.stride()
        assert_close(copied, torch.from_numpy(tangent.numpy()))
        alike = genesis.randn(4, 3).t()
        assert gfw.unpack_dual(gfw.make_dual(genesis.randn(4, 3).t(), alike)).tangent is alike
    check_jvp(lambda lib, x: x.t()[1:].exp().sum(0), [(3, 4)])


# in place


def _inplace_flow(lib, x, y):
    buf = lib.zeros(4, 3)
    buf[1:].copy_(x)
    z = x.clone()
    z.mul_(y)
    z[0].add_(1.0)
    w = x.clone()
    w.t().exp_()
    v = x.clone()
    v.relu_()
    return buf, z, w, v


def test_inplace_propagates_tangents():
    check_jvp(_inplace_flow, [(3, 3), (3, 3)])


def test_inplace_on_view_updates_base_tangent():
    """Writing a view of a dual tensor writes the base's tangent, which the view shares."""
    def fn(lib, x):
        base = x.clone()
        view = base[1:]
        view.mul_(3.0)
        base[0].zero_()
        return base, view
    check_jvp(fn, [(3, 2)])


def test_inplace_under_no_grad_and_with_requires_grad():
    def fn(lib, x, y):
        leaf = y.detach().requires_grad_()
        out = x * leaf
        out.add_(x)
        with lib.no_grad():
            plain = x.clone()
            plain.sub_(1.0)
        return out, plain
    check_jvp(fn, [(2, 3), (2, 3)])


# modules and functional_call


def _model(lib):
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Linear(4, 5), lib.nn.Tanh(), lib.nn.Linear(5, 2))


def _weights(model, lib):
    return {n: lib.tensor(np.asarray(p.detach().numpy())) for n, p in model.named_parameters()}


@pytest.mark.parametrize("dtype", FLOATS)
def test_functional_call_with_dual_parameters(dtype):
    """Parameters swapped for duals through functional_call give the jvp along the
    parameters' tangents, as in torch."""
    rng = np.random.default_rng()
    torch_model, model = _model(torch).to(TORCH_DT[dtype]), _model(genesis).to(dtype)
    weights = {n: p.detach().numpy() for n, p in torch_model.named_parameters()}
    tangents = {n: rng.standard_normal(w.shape).astype(w.dtype) for n, w in weights.items()}
    data = rng.standard_normal((6, 4)).astype(weights["0.weight"].dtype)
    outs = []
    for lib, fw, net in ((genesis, gfw, model), (torch, tfw, torch_model)):
        with fw.dual_level():
            params = {n: fw.make_dual(lib.tensor(w), lib.tensor(tangents[n]))
                      for n, w in weights.items()}
            out = lib.func.functional_call(net, params, (lib.tensor(data),))
            outs.append(fw.unpack_dual(out))
    assert_close(outs[0].primal, outs[1].primal)
    assert_close(outs[0].tangent, outs[1].tangent)


TORCH_DT = {genesis.float32: torch.float32, genesis.float64: torch.float64}


def test_module_attributes_replaced_by_duals():
    """The other module route: parameters deleted and set back as dual attributes."""
    def run(lib, fw, weights, tangents, data):
        lib.manual_seed(0)
        model = lib.nn.Linear(3, 2)
        with fw.dual_level():
            for name in ("weight", "bias"):
                delattr(model, name)
                setattr(model, name, fw.make_dual(lib.tensor(weights[name]),
                                                  lib.tensor(tangents[name])))
            return fw.unpack_dual(model(lib.tensor(data))).tangent
    rng = np.random.default_rng()
    weights = {"weight": rng.standard_normal((2, 3)), "bias": rng.standard_normal(2)}
    tangents = {k: rng.standard_normal(v.shape) for k, v in weights.items()}
    data = rng.standard_normal((5, 3))
    assert_close(run(genesis, gfw, weights, tangents, data),
                 run(torch, tfw, weights, tangents, data))


# custom Functions


def _exp_function(lib):
    class Exp(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            result = x.exp()
            ctx.result = result
            return result

        @staticmethod
        def jvp(ctx, x_t):
            return x_t * ctx.result

    return Exp


def _scaled_product_function(lib):
    class ScaledProduct(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, y, scale):
            ctx.save_for_forward(x, y)
            ctx.scale = scale
            return x * y * scale, x + y

        @staticmethod
        def jvp(ctx, x_t, y_t, scale_t):
            assert scale_t is None
            x, y = ctx.saved_tensors
            return (x_t * y + x * y_t) * ctx.scale, x_t + y_t

        @staticmethod
        def backward(ctx, g, h):
            raise AssertionError("forward mode runs no backward")

    return ScaledProduct


def test_custom_function_jvp():
    check_jvp(lambda lib, x: _exp_function(lib).apply(x), [(3, 4)])
    check_jvp(lambda lib, x, y: _scaled_product_function(lib).apply(x, y, 1.5),
              [(2, 3), (2, 3)])


def test_custom_function_jvp_gets_zeros_for_a_plain_input():
    check_jvp(lambda lib, x: _scaled_product_function(lib).apply(x, lib.ones(3), 2.0), [(3,)])


def test_custom_function_without_jvp():
    def run(lib, fw):
        class Square(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * x

        with fw.dual_level():
            return raised(Square.apply, fw.make_dual(lib.ones(2), lib.ones(2)))
    assert run(genesis, gfw) == run(torch, tfw)


# levels and errors


def test_tangents_do_not_outlive_their_level():
    x, tangent = genesis.randn(3), genesis.randn(3)
    with gfw.dual_level():
        dual = gfw.make_dual(x, tangent)
        out = dual * 2
        assert gfw.unpack_dual(out).tangent is not None
    assert gfw.unpack_dual(out).tangent is None
    assert gfw.unpack_dual(dual).tangent is None
    with gfw.dual_level():
        assert gfw.unpack_dual(out).tangent is None
        assert gfw.unpack_dual(out * 3).tangent is None


def test_levels_enter_exit_and_decorate():
    assert gfw.enter_dual_level() == 0
    gfw.exit_dual_level(level=0)

    @gfw.dual_level()
    def inside():
        return gfw.unpack_dual(gfw.make_dual(genesis.ones(1), genesis.ones(1))).tangent
    assert inside() is not None
    assert gfw.unpack_dual(genesis.ones(1)).tangent is None


def test_primal_and_dual_are_views():
    with gfw.dual_level():
        x, tangent = genesis.randn(3), genesis.randn(3)
        dual = gfw.make_dual(x, tangent)
        primal, got = gfw.unpack_dual(dual)
        assert dual._base is x and primal._base is x and got is tangent
        assert gfw.unpack_dual(primal).tangent is None
        assert gfw.unpack_dual(dual.detach()).tangent is None
        assert gfw.unpack_dual(dual[1:]).tangent._base is tangent
        assert gfw.unpack_dual(dual, level=3).tangent is None
        assert isinstance(gfw.unpack_dual(dual), gfw.UnpackedDualTensor)


def _errors(lib, fw):
    x = lib.ones(3)
    found = [raised(fw.make_dual, x, lib.ones(3)), raised(fw.exit_dual_level)]
    with fw.dual_level():
        dual = fw.make_dual(x, lib.ones(3))
        found += [raised(fw.enter_dual_level), raised(fw.make_dual, x, lib.ones(4)),
                  raised(fw.make_dual, x, lib.ones(3, dtype=lib.int32)),
                  raised(fw.make_dual, x.int(), lib.ones(3)),
                  raised(fw.make_dual, x, lib.ones(3), level=1),
                  raised(fw.make_dual, dual, lib.ones(3)),
                  raised(fw.exit_dual_level, level=1)]
    return found


def test_errors_match_torch():
    """Torch's errors, with "genesis." where torch names its dtypes "torch."."""
    theirs = [(kind, text.replace("torch.", "genesis.")) for kind, text in _errors(torch, tfw)]
    assert _errors(genesis, gfw) == theirs


def test_repr_shows_the_tangent():
    with gfw.dual_level(), tfw.dual_level():
        mine = gfw.make_dual(genesis.tensor([1.0, 2.0]), genesis.tensor([0.5, -1.0]))
        theirs = tfw.make_dual(torch.tensor([1.0, 2.0]), torch.tensor([0.5, -1.0]))
        assert repr(mine) == repr(theirs)


def test_reverse_mode_through_tangents():
    """A tangent is differentiable in reverse mode, as torch's: d/dx of sum(J(x) t)."""
    grads = []
    for lib, fw in ((genesis, gfw), (torch, tfw)):
        x = lib.tensor([0.3, -1.2, 2.0], dtype=lib.float64, requires_grad=True)
        with fw.dual_level():
            out = fw.make_dual(x, lib.tensor([1.0, 2.0, -1.0], dtype=lib.float64)).sin() * x
            tangent = fw.unpack_dual(out).tangent
        grads.append(lib.autograd.grad(tangent.sum(), x)[0])
    assert_close(*grads)


# the tutorial's flow


def test_tutorial_flow():
    """Dual inputs to a function of two tensors, then a model's parameters made dual (as
    attributes and through functional_call, which agree), then a custom Function with a jvp,
    and genesis.func.jvp for the same function."""
    def fn(x, y):
        return x ** 2 + y ** 2

    primal, tangent, plain = genesis.randn(10, 10), genesis.randn(10, 10), genesis.randn(10, 10)
    with gfw.dual_level():
        dual = gfw.make_dual(primal, tangent)
        assert gfw.unpack_dual(dual).tangent is tangent
        assert gfw.unpack_dual(gfw.make_dual(primal, tangent.T)).tangent is not tangent
        out = fn(dual, plain)
        jvp = gfw.unpack_dual(out).tangent
    assert gfw.unpack_dual(out).tangent is None
    assert_close(jvp, torch.from_numpy((2 * primal * tangent).numpy()))
    _, func_jvp = genesis.func.jvp(functools.partial(fn, y=plain), (primal,), (tangent,))
    assert_close(func_jvp, torch.from_numpy(jvp.numpy()))

    model, data = genesis.nn.Linear(5, 5), genesis.randn(16, 5)
    params = dict(model.named_parameters())
    tangents = {name: genesis.rand_like(p) for name, p in params.items()}
    with gfw.dual_level():
        duals = {name: gfw.make_dual(p, tangents[name]) for name, p in params.items()}
        through_call = gfw.unpack_dual(genesis.func.functional_call(model, duals, data)).tangent
        for name, p in params.items():
            delattr(model, name)
            setattr(model, name, gfw.make_dual(p, tangents[name]))
        through_attrs = gfw.unpack_dual(model(data)).tangent
    assert genesis.allclose(through_call, through_attrs)

    x = genesis.randn(10, 10, dtype=genesis.float64, requires_grad=True)
    t = genesis.randn(10, 10, dtype=genesis.float64)
    with gfw.dual_level():
        got = gfw.unpack_dual(_exp_function(genesis).apply(gfw.make_dual(x, t))).tangent
    assert_close(got, torch.from_numpy((t * x.exp()).detach().numpy()))


def test_gradcheck_checks_forward_ad():
    """gradcheck(check_forward_ad=True) compares the jvp's Jacobian with central differences,
    with no backward needed when check_backward_ad=False."""
    class Wrong(_exp_function(genesis)):
        @staticmethod
        def jvp(ctx, x_t):
            return x_t * 2

    x = genesis.randn(3, 2, dtype=genesis.float64, requires_grad=True)
    options = {"check_forward_ad": True, "check_backward_ad": False}
    assert genesis.autograd.gradcheck(_exp_function(genesis).apply, (x,), **options)
    assert not genesis.autograd.gradcheck(Wrong.apply, (x,), raise_exception=False, **options)
    assert genesis.autograd.gradcheck(lambda v: (v.sin() * v).cumsum(0), (x,),
                                      check_forward_ad=True)


def test_dropout_tangent_follows_its_own_mask():
    """The tangent of a random op uses the draw its primal used."""
    x, tangent = genesis.rand(50) + 1.0, genesis.randn(50)
    with gfw.dual_level():
        out, out_tangent = gfw.unpack_dual(genesis.nn.functional.dropout(
            gfw.make_dual(x, tangent), 0.5, training=True))
    assert_close(out_tangent, torch.from_numpy((out / x * tangent).numpy()))
