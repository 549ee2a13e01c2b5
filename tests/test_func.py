"""genesis.func against torch.func: every transform on fresh random inputs, nested, over pytrees,
with argnums tuples, has_aux and in_dims/out_dims variants; functional_call and
stack_module_state on small modules whose weights come from torch's. The torch reference runs in
float64 (float32 inputs are compared with it at float32 tolerances)."""

import functools

import numpy as np
import pytest
import torch
import torch.func as TF
import torch.nn.functional as TNF
from helpers import TORCH_DTYPES, assert_close, make_pair
from nn_compare import copy_module

import genesis
import genesis.func as GF
import genesis.nn.functional as GNF

DTYPES = [genesis.float32, genesis.float64]


def pairs(rng, dtype, *shapes):
    """(genesis tensors, float64 torch tensors) holding the same values, one per shape."""
    made = [make_pair(shape, dtype, rng=rng) for shape in shapes]
    return [g for g, _ in made], [t.double() for _, t in made]


def assert_tree_close(actual, expected):
    """Same pytree structure (types, dict keys) and close leaves."""
    if isinstance(expected, torch.Tensor):
        assert isinstance(actual, genesis.Tensor), type(actual)
        assert_close(actual, expected, check_dtype=False)
        return
    assert type(actual) is type(expected), (type(actual), type(expected))
    if isinstance(expected, dict):
        assert list(actual) == list(expected)
        for key in expected:
            assert_tree_close(actual[key], expected[key])
        return
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        assert_tree_close(a, e)


def error_of(fn, *args, **kwargs):
    """The exception `fn(*args, **kwargs)` raises."""
    with pytest.raises(Exception) as info:
        fn(*args, **kwargs)
    return info.value


def assert_same_error(g_call, t_call):
    """Both calls raise the same exception type with the same message."""
    g_err, t_err = error_of(g_call), error_of(t_call)
    assert type(g_err) is type(t_err), (g_err, t_err)
    assert str(g_err) == str(t_err).replace("torch.Tensor", "genesis.Tensor")


def scalar_fn(x, y):
    return (x.sin() * y).sum() + (x * x).mean()


def vector_fn(x, y):
    return x.tanh() * y.exp()


# grad, grad_and_value


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("argnums", [0, 1, -1, (0, 1), (1, 0)])
def test_grad_argnums(rng, dtype, argnums):
    g, t = pairs(rng, dtype, (3, 4), (3, 4))
    assert_tree_close(GF.grad(scalar_fn, argnums)(*g), TF.grad(scalar_fn, argnums)(*t))


@pytest.mark.parametrize("dtype", DTYPES)
def test_grad_and_value_with_aux_over_a_dict(rng, dtype):
    def f(params, x):
        out = (params["w"] * x).sum() + params["b"].pow(2).sum()
        return out, {"scaled": x * 2, "sum": [x.sum()]}

    (gw, gb, gx), (tw, tb, tx) = pairs(rng, dtype, (5,), (2,), (5,))
    g_grads, (g_value, g_aux) = GF.grad_and_value(f, has_aux=True)({"w": gw, "b": gb}, gx)
    t_grads, (t_value, t_aux) = TF.grad_and_value(f, has_aux=True)({"w": tw, "b": tb}, tx)
    assert_tree_close(g_grads, t_grads)
    assert_tree_close(g_value, t_value)
    assert_tree_close(g_aux, t_aux)
    assert not g_aux["scaled"].requires_grad
    grads, aux = GF.grad(f, has_aux=True)({"w": gw, "b": gb}, gx)
    assert_tree_close(grads, t_grads)


def test_grad_results_are_detached_at_the_top_level(rng):
    (x,), _ = pairs(rng, genesis.float64, (4,))
    assert not GF.grad(lambda x: x.sin().sum())(x).requires_grad
    kept = GF.grad(lambda x: GF.grad(lambda y: (y ** 3).sum())(x).sum())(x)
    assert not kept.requires_grad
    leaf = x.detach().requires_grad_()
    assert GF.grad(lambda x: x.sin().sum())(leaf).requires_grad  # composes with autograd


def test_grad_of_unused_input_is_zero(rng):
    (x, y), _ = pairs(rng, genesis.float64, (3,), (2,))
    gx, gy = GF.grad(lambda x, y: x.sum(), argnums=(0, 1))(x, y)
    assert not np.any(gy.numpy()) and tuple(gy.shape) == (2,)
    assert not np.any(GF.grad(lambda x: x.new_ones(()))(x).numpy())


@pytest.mark.parametrize("dtype", DTYPES)
def test_grad_of_grad(rng, dtype):
    (x,), (tx,) = pairs(rng, dtype, ())

    def f(x):
        return x.sin() * x * x

    assert_tree_close(GF.grad(GF.grad(f))(x), TF.grad(TF.grad(f))(tx))
    assert_tree_close(GF.grad(GF.grad(GF.grad(f)))(x), TF.grad(TF.grad(TF.grad(f)))(tx))


def test_grad_of_grad_keeps_the_inner_variable_apart(rng):
    """The inner grad differentiates only its own argument, not the outer one it closes over."""
    (x,), (tx,) = pairs(rng, genesis.float64, ())

    def outer(x):
        return GF.grad(lambda y: x * y * y)(x)

    def t_outer(x):
        return TF.grad(lambda y: x * y * y)(x)

    assert_tree_close(GF.grad(outer)(x), TF.grad(t_outer)(tx))


# vjp and jvp


@pytest.mark.parametrize("dtype", DTYPES)
def test_vjp_over_a_tuple_output(rng, dtype):
    def f(x, y):
        return x.sin() * y, (x * y).sum()

    (x, y, ca, cb), (tx, ty, tca, tcb) = pairs(rng, dtype, (3,), (3,), (3,), ())
    g_out, g_fn = GF.vjp(f, x, y)
    t_out, t_fn = TF.vjp(f, tx, ty)
    assert_tree_close(g_out, t_out)
    assert_tree_close(g_fn((ca, cb)), t_fn((tca, tcb)))
    assert_tree_close(g_fn((ca, cb)), t_fn((tca, tcb)))  # vjp_fn can be called again
    assert g_fn((ca, cb), create_graph=True)[0].requires_grad


@pytest.mark.parametrize("dtype", DTYPES)
def test_vjp_with_aux_and_vmapped_vjp_fn(rng, dtype):
    def f(x):
        return x.tanh(), x.cos()

    (x,), (tx,) = pairs(rng, dtype, (4,))
    g_out, g_fn, g_aux = GF.vjp(f, x, has_aux=True)
    t_out, t_fn, t_aux = TF.vjp(f, tx, has_aux=True)
    assert_tree_close((g_out, g_aux), (t_out, t_aux))
    eye_g, eye_t = genesis.eye(4, dtype=dtype), torch.eye(4, dtype=torch.float64)
    assert_tree_close(GF.vmap(g_fn)(eye_g), TF.vmap(t_fn)(eye_t))


@pytest.mark.parametrize("dtype", DTYPES)
def test_jvp(rng, dtype):
    (x, y, vx, vy), (tx, ty, tvx, tvy) = pairs(rng, dtype, (2, 3), (3,), (2, 3), (3,))
    g = GF.jvp(vector_fn, (x, y), (vx, vy))
    t = TF.jvp(vector_fn, (tx, ty), (tvx, tvy))
    assert_tree_close(g, t)


@pytest.mark.parametrize("dtype", DTYPES)
def test_jvp_over_pytrees_with_aux(rng, dtype):
    def f(p):
        return {"out": p["a"] * p["b"].sum(), "sq": [p["a"] ** 2]}, p["a"].sum()

    (a, b, va, vb), (ta, tb, tva, tvb) = pairs(rng, dtype, (3,), (2,), (3,), (2,))
    g = GF.jvp(f, ({"a": a, "b": b},), ({"a": va, "b": vb},), has_aux=True)
    t = TF.jvp(f, ({"a": ta, "b": tb},), ({"a": tva, "b": tvb},), has_aux=True)
    assert_tree_close(g, t)


@pytest.mark.parametrize("dtype", DTYPES)
def test_hessian_vector_products(rng, dtype):
    def f(x):
        return x.sin().sum() * x.pow(2).sum()

    (x, v), (tx, tv) = pairs(rng, dtype, (5,), (5,))
    fwd_rev = GF.jvp(GF.grad(f), (x,), (v,))[1]
    rev_rev = GF.vjp(GF.grad(f), x)[1](v)
    expected = TF.jvp(TF.grad(f), (tx,), (tv,))[1]
    assert_tree_close(fwd_rev, expected)
    assert_tree_close(rev_rev, (expected,))


# jacrev, jacfwd, hessian


def f(w, b, x):
    return GNF.linear(x, w, b).tanh()


def tf(w, b, x):
    return TNF.linear(x, w, b).tanh()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("argnums", [0, 1, (0, 1)])
@pytest.mark.parametrize("jac", ["jacrev", "jacfwd"])
def test_jacobians(rng, dtype, argnums, jac):
    (x, y), (tx, ty) = pairs(rng, dtype, (2, 3), (3,))
    g = getattr(GF, jac)(vector_fn, argnums=argnums)(x, y)
    t = getattr(TF, jac)(vector_fn, argnums=argnums)(tx, ty)
    assert_tree_close(g, t)


@pytest.mark.parametrize("jac", ["jacrev", "jacfwd"])
def test_jacobian_of_pytrees_with_aux(rng, jac):
    def f(p, x):
        out = {"lin": p["w"] @ x + p["b"], "pair": (x.sum() * p["b"], x.exp())}
        return out, x.mean()

    (w, b, x), (tw, tb, tx) = pairs(rng, genesis.float64, (2, 3), (2,), (3,))
    g = getattr(GF, jac)(f, argnums=(0, 1), has_aux=True)({"w": w, "b": b}, x)
    t = getattr(TF, jac)(f, argnums=(0, 1), has_aux=True)({"w": tw, "b": tb}, tx)
    assert_tree_close(g, t)


def test_jacrev_of_a_scalar_and_an_empty_output(rng):
    (x,), (tx,) = pairs(rng, genesis.float64, (3,))
    assert_tree_close(GF.jacrev(lambda x: x.sum())(x), TF.jacrev(lambda x: x.sum())(tx))
    empty = GF.jacrev(lambda x: x[:0] * 2)(x)
    assert tuple(empty.shape) == (0, 3)


@pytest.mark.parametrize("dtype", DTYPES)
def test_hessian_and_jacrev_of_jacrev(rng, dtype):
    (w, b, x), (tw, tb, tx) = pairs(rng, dtype, (3, 4), (3,), (4,))
    expected = TF.hessian(tf, argnums=2)(tw, tb, tx)
    assert_tree_close(GF.hessian(f, argnums=2)(w, b, x), expected)
    assert_tree_close(GF.jacrev(GF.jacrev(f, argnums=2), argnums=2)(w, b, x), expected)
    assert_tree_close(GF.jacfwd(GF.jacfwd(f, argnums=2), argnums=2)(w, b, x), expected)
    assert_tree_close(GF.hessian(f, argnums=(0, 2))(w, b, x),
                      TF.hessian(tf, argnums=(0, 2))(tw, tb, tx))


@pytest.mark.parametrize("dtype", DTYPES)
def test_batched_jacobian_and_hessian(rng, dtype):
    (w, b, x), (tw, tb, tx) = pairs(rng, dtype, (3, 4), (3,), (5, 4))
    for g_t, t_t in ((GF.jacrev, TF.jacrev), (GF.hessian, TF.hessian)):
        g = GF.vmap(g_t(f, argnums=2), in_dims=(None, None, 0))(w, b, x)
        t = TF.vmap(t_t(tf, argnums=2), in_dims=(None, None, 0))(tw, tb, tx)
        assert_tree_close(g, t)


# vmap


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("in_dims", [0, (1, 0), (-1, None), (None, 0)])
def test_vmap_in_dims(rng, dtype, in_dims):
    shapes = {0: ((4, 3), (4, 3)), (1, 0): ((3, 4), (4, 3)), (-1, None): ((3, 4), (3,)),
              (None, 0): ((3,), (4, 3))}[in_dims]
    g, t = pairs(rng, dtype, *shapes)
    assert_tree_close(GF.vmap(vector_fn, in_dims)(*g), TF.vmap(vector_fn, in_dims)(*t))


@pytest.mark.parametrize("out_dims", [0, 1, -1, (1, None), (0, -2)])
def test_vmap_out_dims_per_output(rng, out_dims):
    def f(x, y):
        return x * y, y.sum(0) * x.sum()

    def f_none(x, y):
        return x * y, y

    fn = f_none if out_dims == (1, None) else f
    g, t = pairs(rng, genesis.float64, (4, 2, 3), (2, 3))
    in_dims = (0, None)
    assert_tree_close(GF.vmap(fn, in_dims, out_dims)(*g), TF.vmap(fn, in_dims, out_dims)(*t))


def test_vmap_in_dims_and_out_dims_as_pytrees(rng):
    def f(p, xs):
        return {"a": p["w"] * xs[0], "b": [p["v"] + xs[1].sum()]}

    (w, v, x0, x1), (tw, tv, tx0, tx1) = pairs(rng, genesis.float64, (3,), (5, 2), (5, 3),
                                               (4, 5))
    in_dims = ({"w": None, "v": 0}, (0, 1))
    out_dims = {"a": 1, "b": [0]}
    g = GF.vmap(f, in_dims, out_dims)({"w": w, "v": v}, (x0, x1))
    t = TF.vmap(f, in_dims, out_dims)({"w": tw, "v": tv}, (tx0, tx1))
    assert_tree_close(g, t)


def test_vmap_passes_kwargs_and_nests(rng):
    def f(x, y, *, scale):
        return (x * y).sum() * scale

    (x, y), (tx, ty) = pairs(rng, genesis.float64, (3, 4, 5), (5,))
    g = GF.vmap(GF.vmap(f, (0, None)), (0, None))(x, y, scale=2.0)
    t = TF.vmap(TF.vmap(f, (0, None)), (0, None))(tx, ty, scale=2.0)
    assert_tree_close(g, t)
    assert genesis.vmap is GF.vmap


@pytest.mark.parametrize("dtype", DTYPES)
def test_vmap_of_grad_and_grad_of_vmap(rng, dtype):
    (x, y), (tx, ty) = pairs(rng, dtype, (4, 3), (3,))
    assert_tree_close(GF.vmap(GF.grad(scalar_fn), (0, None))(x, y),
                      TF.vmap(TF.grad(scalar_fn), (0, None))(tx, ty))

    def summed(x):
        return GF.vmap(GF.grad(scalar_fn), (0, None))(x, y).pow(2).sum()

    def t_summed(x):
        return TF.vmap(TF.grad(scalar_fn), (0, None))(x, ty).pow(2).sum()

    assert_tree_close(GF.grad(summed)(x), TF.grad(t_summed)(tx))


def test_vmap_chunk_size_gives_the_same_values(rng):
    (x,), (tx,) = pairs(rng, genesis.float64, (5, 3))
    for chunk in (1, 2, 5, 9):
        assert_tree_close(GF.vmap(lambda x: x.exp(), chunk_size=chunk)(x),
                          TF.vmap(lambda x: x.exp(), chunk_size=chunk)(tx))


def test_vmap_randomness(rng):
    x = genesis.zeros(4, 3)
    assert_same_error(lambda: GF.vmap(lambda x: x + genesis.rand(3))(x),
                      lambda: TF.vmap(lambda x: x + torch.rand(3))(torch.zeros(4, 3)))
    same = GF.vmap(lambda x: x + genesis.rand(3), randomness="same")(x).numpy()
    assert np.all(same == same[0])
    genesis.manual_seed(3)
    expected = genesis.rand(3).numpy()
    genesis.manual_seed(3)
    assert np.array_equal(GF.vmap(lambda x: x + genesis.rand(3), randomness="same")(x)[2].numpy(),
                          expected)
    different = GF.vmap(lambda x: x + genesis.rand(3), randomness="different")(x).numpy()
    assert len({row.tobytes() for row in different}) == 4
    assert_same_error(lambda: GF.vmap(lambda x: x, randomness="wrong"),
                      lambda: TF.vmap(lambda x: x, randomness="wrong"))
    assert_same_error(lambda: GF.jacfwd(lambda x: x * genesis.rand(3))(genesis.ones(3)),
                      lambda: TF.jacfwd(lambda x: x * torch.rand(3))(torch.ones(3)))


# errors, as PyTorch's


def named_fn(x, y):
    return x * y


@pytest.mark.parametrize("in_dims, shapes", [
    ((0,), ((2,), (2,))),           # in_dims of the wrong structure
    ((0, (0, 0)), ((2,), (2,))),
    ([0, 0], ((2,), (2,))),         # a list where a tuple is needed
    ((2, 0), ((2,), (2,))),         # dim out of range
    ((-2, 0), ((2,), (2,))),
    ((0, 0), ((2,), (3,))),         # inconsistent batch sizes
    ((None, None), ((2,), (2,))),   # nothing to map over
    ((0.5, 0), ((2,), (2,))),
])
def test_vmap_input_errors(in_dims, shapes):
    g = [genesis.ones(*s) for s in shapes]
    t = [torch.ones(*s) for s in shapes]
    assert_same_error(lambda: GF.vmap(named_fn, in_dims)(*g),
                      lambda: TF.vmap(named_fn, in_dims)(*t))


def test_vmap_other_errors():
    g, t = genesis.ones(2), torch.ones(2)
    assert_same_error(lambda: GF.vmap(named_fn, (0, 0))(g, 1.0),
                      lambda: TF.vmap(named_fn, (0, 0))(t, 1.0))
    assert_same_error(lambda: GF.vmap(named_fn)(), lambda: TF.vmap(named_fn)())
    assert_same_error(lambda: GF.vmap(named_fn, out_dims=(0, 0))(g, g),
                      lambda: TF.vmap(named_fn, out_dims=(0, 0))(t, t))
    assert_same_error(lambda: GF.vmap(named_fn, out_dims="x")(g, g),
                      lambda: TF.vmap(named_fn, out_dims="x")(t, t))
    assert_same_error(lambda: GF.vmap(lambda x: 1.0)(g), lambda: TF.vmap(lambda x: 1.0)(t))
    assert_same_error(lambda: GF.vmap(named_fn, chunk_size=0),
                      lambda: TF.vmap(named_fn, chunk_size=0))


# Host reads inside vmap: (name, fn(lib, x, c)) of a batched slice x and a captured 0-d c.
BATCHED_READS = [
    ("item", lambda lib, x, c: x.sum().item()),
    ("item of several values", lambda lib, x, c: x.item()),
    ("float", lambda lib, x, c: float(x.sum())),
    ("float of several values", lambda lib, x, c: float(x)),
    ("int", lambda lib, x, c: int(x.sum())),
    ("complex", lambda lib, x, c: complex(x.sum())),
    ("index", lambda lib, x, c: [1, 2, 3][x.sum().long()]),
    ("index of a float", lambda lib, x, c: [1, 2, 3][x.sum()]),
    ("format", lambda lib, x, c: f"{x.sum():.2f}"),
    ("bool", lambda lib, x, c: bool(x.sum() > 0)),
    ("bool of several values", lambda lib, x, c: bool(x)),
    ("if", lambda lib, x, c: x if (x == x).all() else -x),
    ("is_nonzero", lambda lib, x, c: x * lib.is_nonzero(x.sum())),
    ("tolist", lambda lib, x, c: x.tolist()),
    ("numpy", lambda lib, x, c: x.numpy()),
    ("np.asarray", lambda lib, x, c: np.asarray(x)),
    ("data_ptr", lambda lib, x, c: x * x.data_ptr()),
    ("a view's item", lambda lib, x, c: x.view(2, 2)[0, 1].item()),
    ("a copy's item", lambda lib, x, c: x.reshape(2, 2).t().contiguous()[1, 0].item()),
    ("a detached item", lambda lib, x, c: x.detach()[1].item()),
    ("captured and batched", lambda lib, x, c: (x.sum() + c).item()),
    ("an in-place result", lambda lib, x, c: x.clone().add_(c).max().item()),
    ("a gradient", lambda lib, x, c: lib.func.grad(lambda y: (y * y).sum())(x).sum().item()),
    ("an inner vmap over the outer slice",
     lambda lib, x, c: lib.func.vmap(lambda y: y * x.sum())(lib.ones(2, dtype=x.dtype)).sum()
     .item()),
    ("an inner vmap's slice", lambda lib, x, c: lib.func.vmap(lambda y: y * y.item())(x)),
]
CAPTURED_READS = [
    ("item", lambda lib, x, c: x * c.item()),
    ("bool", lambda lib, x, c: x * bool(c)),
    ("float", lambda lib, x, c: x * float(c)),
    ("tolist", lambda lib, x, c: x * c.tolist()),
    ("numpy", lambda lib, x, c: x * float(c.numpy())),
    ("a result of captured values", lambda lib, x, c: x * (c * 2).exp().item()),
    ("len and shape", lambda lib, x, c: x * len(x) * x.shape[0]),
    ("repr", lambda lib, x, c: (repr(x.sum()), x)[1]),
    ("an inner vmap over captured values",
     lambda lib, x, c: x * lib.func.vmap(lambda y: y * 2)(c.expand(2)).sum().item()),
]


def _host_read_calls(fn, rng):
    """fn mapped over a (3, 4) float64 batch by genesis and by torch, a 0-d c captured."""
    (g, gc), (t, tc) = pairs(rng, genesis.float64, (3, 4), ())
    return (lambda: GF.vmap(lambda x: fn(genesis, x, gc))(g),
            lambda: TF.vmap(lambda x: fn(torch, x, tc))(t))


@pytest.mark.parametrize("name, fn", BATCHED_READS, ids=[r[0] for r in BATCHED_READS])
def test_vmap_refuses_host_reads_of_batched_values(name, fn, rng):
    """Reading on the host a value computed from vmap's batched inputs raises torch's error:
    .item() and the conversions through it, data-dependent control flow, the data itself."""
    assert_same_error(*_host_read_calls(fn, rng))


@pytest.mark.parametrize("name, fn", CAPTURED_READS, ids=[r[0] for r in CAPTURED_READS])
def test_vmap_reads_captured_values(name, fn, rng):
    """Values captured from outside vmap, and values computed from them alone, are read on the
    host as in torch."""
    g_call, t_call = _host_read_calls(fn, rng)
    assert_tree_close(g_call(), t_call())


# Ops genesis computes by reading operand values on the host (a tensor index, index bounds,
# gcd's loop, matrix_exp's scaling), where torch's kernels read them on the device:
# (name, fn(lib, w, *batched), the batched arguments from rng), w a captured (5, 3) tensor.
OWN_READS = [
    ("tensor index", lambda lib, w, i: w[i], lambda rng: [rng.integers(0, 5, 3)]),
    ("index_select", lambda lib, w, i: w.index_select(0, i),
     lambda rng: [rng.integers(0, 5, (3, 2))]),
    ("take", lambda lib, w, i: lib.take(w, i), lambda rng: [rng.integers(0, 15, (3, 2))]),
    ("gcd", lambda lib, w, a, b: lib.gcd(a, b),
     lambda rng: [rng.integers(1, 50, (3, 2)), rng.integers(1, 50, (3, 2))]),
    ("matrix_exp", lambda lib, w, a: lib.linalg.matrix_exp(a),
     lambda rng: [rng.standard_normal((3, 2, 2))]),
]


@pytest.mark.parametrize("name, fn, make", OWN_READS, ids=[r[0] for r in OWN_READS])
def test_vmap_runs_ops_that_read_batched_values_themselves(name, fn, make, rng):
    """Reads of batched values inside genesis's own ops are not the user's: they pass."""
    w = rng.standard_normal((5, 3))
    args = make(rng)
    g_w, t_w = genesis.tensor(w), torch.tensor(w)
    assert_tree_close(GF.vmap(lambda *a: fn(genesis, g_w, *a))(*map(genesis.tensor, args)),
                      TF.vmap(lambda *a: fn(torch, t_w, *a))(*map(torch.tensor, args)))


def test_vmap_host_reads_after_a_refused_one(rng):
    """Once vmap returns (here by raising), its inputs and outputs are read as usual."""
    x = genesis.tensor(rng.standard_normal((3, 4)))
    with pytest.raises(RuntimeError):
        GF.vmap(lambda v: v.sum().item())(x)
    out = GF.vmap(lambda v: v * 2)(x)
    assert out.tolist() == (x * 2).tolist() and bool(x[0, 0] == x[0, 0])
    assert float(out.sum()) == pytest.approx(2 * x.sum().item())


def test_vmap_inside_a_profile_passes_its_ops_on(rng):
    """vmap's kernel observer hands the profiler's on: ops inside vmap are timed too."""
    x = genesis.tensor(rng.standard_normal((3, 4)))
    with genesis.profiler.profile() as prof:
        GF.vmap(lambda v: v.exp())(x)
        x.exp()
    assert [e.name for e in prof.events()].count("aten::exp") == 4


def test_transform_errors():
    g, t = genesis.ones(2), torch.ones(2)
    assert_same_error(lambda: GF.grad(lambda x: x * 2)(g), lambda: TF.grad(lambda x: x * 2)(t))
    assert_same_error(lambda: GF.grad(lambda x: 1.0)(g), lambda: TF.grad(lambda x: 1.0)(t))
    assert_same_error(lambda: GF.grad(lambda x: x.sum(), has_aux=True)(g),
                      lambda: TF.grad(lambda x: x.sum(), has_aux=True)(t))
    assert_same_error(lambda: GF.grad(lambda x: (x.sum(), 3), has_aux=True)(g),
                      lambda: TF.grad(lambda x: (x.sum(), 3), has_aux=True)(t))
    assert_same_error(lambda: GF.vjp(lambda x: (x, 3), g, has_aux=True),
                      lambda: TF.vjp(lambda x: (x, 3), t, has_aux=True))
    assert_same_error(lambda: GF.vjp(lambda x: x, g, has_aux=True),
                      lambda: TF.vjp(lambda x: x, t, has_aux=True))
    assert_same_error(lambda: GF.jvp(lambda x: x, (g,), (g,), has_aux=True),
                      lambda: TF.jvp(lambda x: x, (t,), (t,), has_aux=True))
    assert_same_error(lambda: GF.jvp(lambda x: x, g, g), lambda: TF.jvp(lambda x: x, t, t))
    assert_same_error(lambda: GF.jvp(lambda x: g * 2, (g,), (g,), strict=True),
                      lambda: TF.jvp(lambda x: t * 2, (t,), (t,), strict=True))
    assert_same_error(lambda: GF.grad(named_fn, argnums=2)(g, g),
                      lambda: TF.grad(named_fn, argnums=2)(t, t))
    assert_same_error(lambda: GF.grad(named_fn, argnums=(0, 0))(g, g),
                      lambda: TF.grad(named_fn, argnums=(0, 0))(t, t))
    assert_same_error(lambda: GF.grad(named_fn, argnums=[0])(g, g),
                      lambda: TF.grad(named_fn, argnums=[0])(t, t))
    assert_same_error(lambda: GF.jacrev(named_fn, chunk_size=0),
                      lambda: TF.jacrev(named_fn, chunk_size=0))


# functional_call and stack_module_state


class MLP:
    """A two-layer MLP in either library, with a buffer that scales its input."""

    @staticmethod
    @functools.cache
    def net_class(lib):
        class Net(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc1 = lib.nn.Linear(3, 5)
                self.fc2 = lib.nn.Linear(5, 2)
                self.register_buffer("scale", lib.ones(3) * 0.5)

            def forward(self, x):
                return self.fc2(self.fc1(x * self.scale).tanh())

        return Net

    @classmethod
    def build(cls, lib):
        return cls.net_class(lib)()

    @classmethod
    def pair(cls, dtype):
        t_net = cls.build(torch).to(TORCH_DTYPES[dtype])
        g_net = copy_module(cls.build(genesis).to(dtype), t_net)
        return g_net, t_net.double()


def detached(module):
    return ({k: v.detach() for k, v in module.named_parameters()},
            {k: v.detach() for k, v in module.named_buffers()})


@pytest.mark.parametrize("dtype", DTYPES)
def test_functional_call_swaps_and_restores(rng, dtype):
    g_net, t_net = MLP.pair(dtype)
    (w, x), (tw, tx) = pairs(rng, dtype, (5, 3), (4, 3))
    g = GF.functional_call(g_net, {"fc1.weight": w}, (x,))
    t = TF.functional_call(t_net, {"fc1.weight": tw}, (tx,))
    assert_tree_close(g, t)
    assert g_net.fc1.weight is not w and isinstance(g_net.fc1.weight, genesis.nn.Parameter)
    assert_tree_close(g_net(x), t_net(tx))
    both = GF.functional_call(g_net, detached(g_net), x)  # a single argument, a tuple of dicts
    assert_tree_close(both, t_net(tx))


def test_functional_call_restores_after_an_error():
    g_net, _ = MLP.pair(genesis.float64)
    before = dict(g_net.named_parameters())
    with pytest.raises(Exception):
        GF.functional_call(g_net, {"fc1.weight": genesis.ones(5, 4, dtype=genesis.float64)},
                           (genesis.ones(2, 3, dtype=genesis.float64),))
    assert all(p is before[k] for k, p in g_net.named_parameters())
    extra = GF.functional_call(g_net, {"extra": genesis.ones(1)}, genesis.ones(1, 3,
                                                                              dtype=genesis.float64))
    assert tuple(extra.shape) == (1, 2) and not hasattr(g_net, "extra")


def test_functional_call_kwargs_and_strict():
    g_net, t_net = MLP.pair(genesis.float64)
    g_params, _ = detached(g_net)
    t_params = {k: v.detach() for k, v in t_net.named_parameters()}
    bad_g = dict(g_params, foo=genesis.ones(1))
    bad_t = dict(t_params, foo=torch.ones(1))
    del bad_g["fc2.bias"], bad_t["fc2.bias"]
    x, tx = genesis.ones(1, 3, dtype=genesis.float64), torch.ones(1, 3, dtype=torch.float64)
    assert_same_error(lambda: GF.functional_call(g_net, bad_g, (x,), strict=True),
                      lambda: TF.functional_call(t_net, bad_t, (tx,), strict=True))
    assert_tree_close(GF.functional_call(g_net, g_params, (), {"x": x}),
                      TF.functional_call(t_net, t_params, (), {"x": tx}))
    assert_same_error(lambda: GF.functional_call(g_net, (g_params, g_params), (x,)),
                      lambda: TF.functional_call(t_net, (t_params, t_params), (tx,)))
    assert_same_error(lambda: GF.functional_call(g_net, 3, (x,)),
                      lambda: TF.functional_call(t_net, 3, (tx,)))


def test_functional_call_tie_weights():
    def build(lib):
        class Tied(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.a = lib.nn.Linear(2, 2, bias=False)
                self.b = lib.nn.Linear(2, 2, bias=False)
                self.b.weight = self.a.weight

            def forward(self, x):
                return self.b(self.a(x))

        return Tied()

    t_mod = build(torch).double()
    g_mod = build(genesis).double()
    g_mod.a.weight = genesis.nn.Parameter(genesis.tensor(t_mod.a.weight.detach().numpy()))
    g_mod.b.weight = g_mod.a.weight
    x, tx = genesis.ones(1, 2, dtype=genesis.float64), torch.ones(1, 2, dtype=torch.float64)
    w = genesis.full((2, 2), 2.0, dtype=genesis.float64)
    tw = torch.full((2, 2), 2.0, dtype=torch.float64)
    for tie in (True, False):
        assert_tree_close(GF.functional_call(g_mod, {"a.weight": w}, (x,), tie_weights=tie),
                          TF.functional_call(t_mod, {"a.weight": tw}, (tx,), tie_weights=tie))
    assert_same_error(
        lambda: GF.functional_call(g_mod, {"a.weight": w, "b.weight": w * 1}, (x,)),
        lambda: TF.functional_call(t_mod, {"a.weight": tw, "b.weight": tw * 1}, (tx,)))


def test_stateless_functional_call_is_deprecated():
    g_net, _ = MLP.pair(genesis.float64)
    x = genesis.ones(1, 3, dtype=genesis.float64)
    with pytest.warns(FutureWarning, match="stateless.functional_call` is deprecated"):
        out = genesis.nn.utils.stateless.functional_call(g_net, detached(g_net)[0], (x,))
    assert_close(out, g_net(x).detach().numpy())


@pytest.mark.parametrize("dtype", DTYPES)
def test_per_sample_gradients(rng, dtype):
    """vmap(grad(loss)) over a batch, loss through functional_call, as the tutorial does."""
    g_net, t_net = MLP.pair(dtype)
    (x, y), (tx, ty) = pairs(rng, dtype, (6, 3), (6, 2))

    def loss(lib, net):
        def compute(params, buffers, sample, target):
            out = lib.func.functional_call(net, (params, buffers), (sample.unsqueeze(0),))
            return ((out - target.unsqueeze(0)) ** 2).mean()
        return compute

    in_dims = (None, None, 0, 0)
    g = GF.vmap(GF.grad(loss(genesis, g_net)), in_dims)(*detached(g_net), x, y)
    t = TF.vmap(TF.grad(loss(torch, t_net)), in_dims)(*detached(t_net), tx, ty)
    assert_tree_close(g, t)


@pytest.mark.parametrize("dtype", DTYPES)
def test_model_ensemble(rng, dtype):
    pairs_ = [MLP.pair(dtype) for _ in range(3)]
    g_params, g_buffers = GF.stack_module_state([g for g, _ in pairs_])
    t_params, t_buffers = TF.stack_module_state([t for _, t in pairs_])
    assert_tree_close(g_params, t_params)
    assert all(p.requires_grad and p.grad_fn is None for p in g_params.values())
    (x, xs), (tx, txs) = pairs(rng, dtype, (4, 3), (3, 4, 3))

    def run(lib, base):
        return lambda p, b, x: lib.func.functional_call(base, (p, b), (x,))

    g_run, t_run = run(genesis, pairs_[0][0]), run(torch, pairs_[0][1])
    assert_tree_close(GF.vmap(g_run)(g_params, g_buffers, xs),
                      TF.vmap(t_run)(t_params, t_buffers, txs))
    assert_tree_close(GF.vmap(g_run, (0, 0, None))(g_params, g_buffers, x),
                      TF.vmap(t_run, (0, 0, None))(t_params, t_buffers, tx))


def test_stack_module_state_errors():
    g_nets = [MLP.build(genesis), MLP.build(genesis)]
    t_nets = [MLP.build(torch), MLP.build(torch)]
    assert_same_error(lambda: GF.stack_module_state([]), lambda: TF.stack_module_state([]))
    g_nets[1].eval()
    t_nets[1].eval()
    assert_same_error(lambda: GF.stack_module_state(g_nets),
                      lambda: TF.stack_module_state(t_nets))


@pytest.mark.parametrize("dtype", DTYPES)
def test_neural_tangent_kernel_by_jacobians_and_by_products(rng, dtype):
    """The NTK tutorial's two methods agree with each other and with torch."""
    g_net, t_net = MLP.pair(dtype)
    (x1, x2), (tx1, tx2) = pairs(rng, dtype, (3, 3), (2, 3))

    def ntk(lib, net, x1, x2):
        F = lib.func

        def single(params, x):
            return F.functional_call(net, params, (x.unsqueeze(0),)).squeeze(0)

        params = {k: v.detach() for k, v in net.named_parameters()}
        jac1 = F.vmap(F.jacrev(single), (None, 0))(params, x1)
        jac2 = F.vmap(F.jacrev(single), (None, 0))(params, x2)
        by_jac = sum(lib.einsum("Naf,Mbf->NMab", a.flatten(2), b.flatten(2))
                     for a, b in zip(jac1.values(), jac2.values()))

        def get_ntk(a, b):
            out, vjp_fn = F.vjp(lambda p: single(p, a), params)

            def column(vec):
                return F.jvp(lambda p: single(p, b), (params,), vjp_fn(vec))[1]

            return F.vmap(column)(lib.eye(out.numel(), dtype=out.dtype))

        by_products = F.vmap(F.vmap(get_ntk, (None, 0)), (0, None))(x1, x2)
        return by_jac, by_products

    g_jac, g_prod = ntk(genesis, g_net, x1, x2)
    t_jac, t_prod = ntk(torch, t_net, tx1, tx2)
    assert_tree_close(g_jac, t_jac)
    assert_tree_close(g_prod, t_prod)


def test_functional_call_inside_grad_inside_vmap_on_a_transform_of_params(rng):
    """Gradients through a functional_call whose parameters are computed from the input."""
    g_net, t_net = MLP.pair(genesis.float64)
    (s, xs), (ts, txs) = pairs(rng, genesis.float64, (), (4, 3))

    def make(lib, net):
        params, buffers = detached(net)

        def loss(scale, x):
            scaled = {k: v * scale for k, v in params.items()}
            return lib.func.functional_call(net, (scaled, buffers), (x,)).sum()
        return loss

    g = GF.vmap(GF.grad(make(genesis, g_net)), (None, 0))(s, xs)
    t = TF.vmap(TF.grad(make(torch, t_net)), (None, 0))(ts, txs)
    assert_tree_close(g, t)
    assert_tree_close(GF.jacrev(GF.grad(make(genesis, g_net)))(s, xs[0]),
                      TF.jacrev(TF.grad(make(torch, t_net)))(ts, txs[0]))


def test_wrappers_keep_the_function_name():
    for transform in (GF.grad, GF.grad_and_value, GF.jacrev, GF.jacfwd, GF.vmap):
        assert transform(named_fn).__name__ == "named_fn"
    assert "functools.partial(named_fn" in str(error_of(
        lambda: GF.vmap(functools.partial(named_fn), (0,))(genesis.ones(2), genesis.ones(2))))
