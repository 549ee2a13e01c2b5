"""torch.func's linearize, functionalize, debug_unwrap, replace_all_batch_norm_modules_ and
rearrange against PyTorch's, on fresh random inputs."""

import pytest
import torch
import torch.func as TF

import genesis
import genesis.func as GF
import genesis.nn as gnn
from genesis.func._pytree import tree_flatten
from helpers import assert_close, make_pair
from nn_compare import copy_module


def error_of(fn):
    with pytest.raises(Exception) as info:
        fn()
    return info.value


# linearize


def _pytree_fn(lib):
    def f(x, pair):
        y, z = pair
        return {"sum": (x.sin() * y).sum(), "outer": x.exp() @ z}, y.tanh()
    return f


def test_linearize_matches_torch_and_jvp(rng):
    (x, tx), (y, ty), (z, tz) = (make_pair(s, rng=rng) for s in ((3, 4), (3, 4), (4, 2)))
    tangents = [make_pair(s, rng=rng) for s in ((3, 4), (3, 4), (4, 2))]
    out, jvp_fn = GF.linearize(_pytree_fn(genesis), x, (y, z))
    t_out, t_jvp_fn = TF.linearize(_pytree_fn(torch), tx, (ty, tz))
    for _ in range(2):  # jvp_fn serves any number of calls
        (dx, tdx), (dy, tdy), (dz, tdz) = tangents
        got, expected = jvp_fn(dx, (dy, dz)), t_jvp_fn(tdx, (tdy, tdz))
        by_jvp = GF.jvp(_pytree_fn(genesis), (x, (y, z)), (dx, (dy, dz)))[1]
        for g, j, t in zip(tree_flatten(got)[0], tree_flatten(by_jvp)[0],
                           torch.utils._pytree.tree_leaves(expected)):
            assert_close(g, t, atol=1e-5)
            assert_close(j, t, atol=1e-5)
        tangents = [make_pair(s, rng=rng) for s in ((3, 4), (3, 4), (4, 2))]
    assert_close(out[0]["outer"], t_out[0]["outer"])


def test_linearize_runs_func_once(rng):
    x, _ = make_pair((5,), rng=rng)
    calls = []

    def f(x):
        calls.append(1)
        return x ** 3
    _, jvp_fn = GF.linearize(f, x)
    jvp_fn(genesis.ones(5))
    jvp_fn(genesis.ones(5))
    assert len(calls) == 1
    assert_close(jvp_fn(genesis.ones(5)), torch.tensor((3 * x ** 2).tolist()))


def test_linearize_of_an_output_independent_of_the_input(rng):
    x, tx = make_pair((3,), rng=rng)
    dx, tdx = make_pair((3,), rng=rng)
    got = GF.linearize(lambda x: (x * 2, genesis.ones(2)), x)[1](dx)
    expected = TF.linearize(lambda x: (x * 2, torch.ones(2)), tx)[1](tdx)
    for g, t in zip(got, expected):
        assert_close(g, t)


@pytest.mark.parametrize("bad", ["structure", "shape", "dtype"])
def test_linearize_tangent_errors_as_torch(bad):
    def run(lib):
        _, jvp_fn = (GF if lib is genesis else TF).linearize(lambda x, y: x * y, lib.ones(3),
                                                              lib.ones(3))
        tangent = {"structure": (lib.ones(3),), "shape": (lib.ones(3), lib.ones(4)),
                   "dtype": (lib.ones(3), lib.ones(3, dtype=lib.float64))}[bad]
        return lambda: jvp_fn(*tangent)
    g_err, t_err = error_of(run(genesis)), error_of(run(torch))
    assert type(g_err) is type(t_err)
    prefix = {"structure": "Expected the tangents", "shape": "tangent:1 with shape",
              "dtype": "tangent:1 with dtype"}[bad]
    assert str(g_err).startswith(prefix) and str(t_err).startswith(prefix)
    assert str(g_err).endswith("of the corresponding primal.") == (bad != "structure")


# functionalize


def _mutating(x, y, z):
    b = x.clone()
    b.view(-1).add_(1)
    x.mul_(2)
    return b.view(-1), x[0], x, y, y[1:], z, 3


def _shares_memory(out, inputs, lib):
    """Which of `inputs` each tensor output shares memory with."""
    if lib is torch:
        ranges = [(t.untyped_storage().data_ptr(), t) for t in inputs]
        return [[out.untyped_storage().data_ptr() == p for p, _ in ranges]]
    return [[out._version_counter is t._version_counter for t in inputs]]


@pytest.mark.parametrize("remove", ["mutations", "mutations_and_views"])
def test_functionalize_gives_torch_eager_results(remove, rng):
    """Values and input mutations as func's; outputs over a written input are copies, views of
    the others stay views unless views are removed too, an input returned is itself. (A view of
    a written input comes back from PyTorch as a view of a copy, from genesis as a copy.)"""
    (x, tx), (y, ty), (z, tz) = (make_pair(s, rng=rng) for s in ((2, 3), (3,), (2,)))
    got = GF.functionalize(_mutating, remove=remove)(x, y, z=z)
    expected = TF.functionalize(_mutating, remove=remove)(tx, ty, z=tz)
    assert_close(x, tx)
    assert got[-1] == expected[-1]
    for i, (g, t) in enumerate(zip(got[:-1], expected[:-1])):
        assert_close(g, t)
        assert _shares_memory(g, [x, y, z], genesis) == _shares_memory(t, [tx, ty, tz], torch)
        if i not in (1, 2):  # x[0] and x
            assert (g._base is None) == (t._base is None)
    assert (got[5] is z) == (expected[5] is tz)


def test_functionalize_keeps_gradients_and_the_name(rng):
    x, tx = make_pair((4,), requires_grad=True, rng=rng)

    def f(x):
        return (x * x).sin()
    g_out = GF.grad(lambda x: GF.functionalize(f)(x).sum())(x)
    t_out = TF.grad(lambda x: TF.functionalize(f)(x).sum())(tx)
    assert_close(g_out, t_out)
    assert GF.functionalize(f).__name__ == "f" and GF.functionalize(f).__wrapped__ is f


def test_functionalize_remove_error_as_torch():
    g_err = error_of(lambda: GF.functionalize(print, remove="views"))
    t_err = error_of(lambda: TF.functionalize(print, remove="views"))
    assert type(g_err) is type(t_err) and str(g_err) == str(t_err)


def test_debug_unwrap_gives_the_tensor_itself(rng):
    x, _ = make_pair((3,), rng=rng)
    seen = []
    GF.vmap(lambda row: seen.append(GF.debug_unwrap(row)) or row)(x.reshape(3, 1))
    assert all(isinstance(t, genesis.Tensor) for t in seen)
    assert GF.debug_unwrap(x) is x and GF.debug_unwrap(x, recurse=False) is x


# replace_all_batch_norm_modules_


def _batch_normed(lib):
    return lib.nn.Sequential(lib.nn.Conv2d(2, 3, 3), lib.nn.BatchNorm2d(3),
                             lib.nn.Sequential(lib.nn.BatchNorm2d(3, track_running_stats=False),
                                               lib.nn.BatchNorm1d(5)))


def test_replace_all_batch_norm_modules_as_torch(rng):
    model, t_model = _batch_normed(genesis), _batch_normed(torch)
    copy_module(model, t_model)
    assert GF.replace_all_batch_norm_modules_(model) is model
    TF.replace_all_batch_norm_modules_(t_model)
    for m, t in zip(model.modules(), t_model.modules()):
        if isinstance(t, torch.nn.modules.batchnorm._BatchNorm):
            assert m.track_running_stats is t.track_running_stats is False
            assert m.running_mean is m.running_var is m.num_batches_tracked is None
    assert list(dict(model.named_buffers())) == list(dict(t_model.named_buffers())) == []
    x, tx = make_pair((4, 2, 5, 5), rng=rng)
    model.eval(), t_model.eval()  # no running statistics: batch statistics in eval too
    assert_close(model[1](model[0](x)), t_model[1](t_model[0](tx)), atol=1e-5)
    assert gnn.BatchNorm1d(2).track_running_stats  # untouched modules keep theirs


# rearrange

PATTERNS = [
    ("b h w c -> b h w c", {}), ("b h w c -> (b h) w c", {}), ("b h w c -> h (b w) c", {}),
    ("b h w c -> b c h w", {}), ("b h w c -> b (c h w)", {}),
    ("b (h1 h) (w1 w) c -> (b h1 w1) h w c", {"h1": 2, "w1": 2}),
    ("b (h h1) (w w1) c -> b h w (c h1 w1)", {"h1": 2, "w1": 2}),
    ("b ... c -> c b ...", {}), ("... w c -> (...) c w", {}), ("b h w c -> b 1 h w 1 c", {}),
    ("b h w c -> (b 1 h) w c", {}), ("... -> ...", {}), ("b h ... -> (h ...) b", {}),
]


@pytest.mark.parametrize("pattern, lengths", PATTERNS)
def test_rearrange_as_torch(pattern, lengths, rng):
    x, tx = make_pair((3, 4, 6, 2), requires_grad=True, rng=rng)
    out, t_out = GF.rearrange(x, pattern, **lengths), TF.rearrange(tx, pattern, **lengths)
    assert_close(out, t_out)
    weights, t_weights = make_pair(tuple(t_out.shape), rng=rng)
    (out * weights).sum().backward()
    (t_out * t_weights).sum().backward()
    assert_close(x.grad, tx.grad)


def test_rearrange_of_a_list_and_of_a_scalar(rng):
    pairs = [make_pair((2, 3), rng=rng) for _ in range(4)]
    assert_close(GF.rearrange([g for g, _ in pairs], "n a b -> a (n b)"),
                 TF.rearrange([t for _, t in pairs], "n a b -> a (n b)"))
    assert_close(GF.rearrange(genesis.tensor(2.5), "->"), TF.rearrange(torch.tensor(2.5), "->"))


@pytest.mark.parametrize("pattern, lengths", [
    ("a b", {}), ("a b -> b", {}), ("a b c -> a b c", {}), ("a b c ... -> a", {}),
    ("a b -> a b", {"c": 2}), ("a b -> a b", {"a": 2.0}), ("a 2 -> a", {}),
    ("a b -> a b)", {}), ("a (b (c)) -> a", {}), ("a. b -> a b", {}), ("a b -> a b a", {}),
    ("_a b -> _a b", {}), ("a $ -> a", {}), ("a b -> ... a b", {}), ("(a ...) -> a ...", {}),
    ("a b -> a b", {"\u2026": 1}), ("a (b -> a b", {}), ("a b -> a .. b", {})])
def test_rearrange_pattern_errors_as_torch(pattern, lengths):
    g_err = error_of(lambda: GF.rearrange(genesis.ones(2, 3), pattern, **lengths))
    t_err = error_of(lambda: TF.rearrange(torch.ones(2, 3), pattern, **lengths))
    assert type(g_err) is type(t_err)
    if "{" not in str(t_err):  # a set of names prints in no fixed order
        assert str(g_err) == str(t_err)


@pytest.mark.parametrize("pattern, lengths", [
    ("a (b c) -> a b c", {"b": 4}), ("a (b c) -> a b c", {}), ("a b -> a b", {"a": 3}),
    ("a 1 -> a", {})])
def test_rearrange_size_errors(pattern, lengths):
    """Sizes that do not fit the tensor. (PyTorch raises functorch.dim's DimensionBindError
    for the first three, and sums away the dimension a left-side "1" stands for.)"""
    with pytest.raises(ValueError, match="rearrange: "):
        GF.rearrange(genesis.ones(2, 3), pattern, **lengths)
