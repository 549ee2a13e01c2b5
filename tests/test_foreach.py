"""The torch._foreach_* list ops against PyTorch: values of the out-of-place forms (a tuple), the
in-place forms (the same list, updated), every form of the second operand (scalar, scalar list,
0-dim tensor, tensor list with alpha), gradients, and the errors on malformed lists."""

import numpy as np
import pytest
import torch

import genesis
from helpers import assert_close, from_torch, raised

UNARY = ("abs", "acos", "asin", "atan", "ceil", "cos", "cosh", "erf", "erfc", "exp", "expm1",
         "floor", "frac", "lgamma", "log", "log10", "log1p", "log2", "neg", "reciprocal",
         "round", "rsqrt", "sigmoid", "sign", "sin", "sinh", "sqrt", "tan", "tanh", "trunc")
BINARY = ("add", "sub", "mul", "div", "pow", "clamp_min", "clamp_max", "maximum", "minimum")
SHAPES = [(3,), (2, 4), ()]
POSITIVE = {"acos", "asin", "log", "log10", "log1p", "log2", "rsqrt", "sqrt", "lgamma", "pow"}


def _lists(rng, low=-0.9, high=0.9):
    """The same list of tensors of SHAPES in torch and genesis."""
    ts = [torch.tensor(rng.uniform(low, high, s), dtype=torch.float32) for s in SHAPES]
    return ts, [from_torch(t) for t in ts]


def _assert_lists(got, expected):
    assert len(got) == len(expected)
    for g, t in zip(got, expected):
        assert_close(g, t)


def _call(name, lib, *args, **kwargs):
    return getattr(lib, f"_foreach_{name}")(*args, **kwargs)


@pytest.mark.parametrize("name", UNARY)
def test_unary(name):
    low = 0.1 if name in POSITIVE else -0.9
    ts, gs = _lists(np.random.default_rng(0), low)
    out = _call(name, genesis, gs)
    assert isinstance(out, tuple)
    _assert_lists(out, _call(name, torch, ts))
    assert _call(name + "_", genesis, gs) is gs
    _call(name + "_", torch, ts)
    _assert_lists(gs, ts)


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("form", ["scalar", "scalars", "tensors"])
def test_binary(name, form):
    rng = np.random.default_rng(1)
    ts, gs = _lists(rng, 0.1)
    t_others, g_others = _lists(rng, 0.5, 1.5)
    others = {"scalar": (0.75, 0.75), "scalars": ([0.5, 2.0, 1.5],) * 2,
              "tensors": (t_others, g_others)}[form]
    _assert_lists(_call(name, genesis, gs, others[1]), _call(name, torch, ts, others[0]))
    _call(name + "_", genesis, gs, others[1])
    _call(name + "_", torch, ts, others[0])
    _assert_lists(gs, ts)


@pytest.mark.parametrize("name", ["add", "sub"])
def test_alpha_with_tensors(name):
    rng = np.random.default_rng(2)
    ts, gs = _lists(rng)
    t_others, g_others = _lists(rng)
    _assert_lists(_call(name, genesis, gs, g_others, alpha=-1.5),
                  _call(name, torch, ts, t_others, alpha=-1.5))



@pytest.mark.parametrize("name", BINARY)
def test_zero_dim_tensor_operand(name):
    ts, gs = _lists(np.random.default_rng(3), 0.1)
    _assert_lists(_call(name, genesis, gs, genesis.tensor(0.5)),
                  _call(name, torch, ts, torch.tensor(0.5)))
    _assert_lists(_call("add", genesis, gs, genesis.tensor(2.0), alpha=3),
                  _call("add", torch, ts, torch.tensor(2.0), alpha=3))


def test_scalar_base_pow():
    ts, gs = _lists(np.random.default_rng(3))
    _assert_lists(_call("pow", genesis, 2.5, gs), _call("pow", torch, 2.5, ts))
    ints = [torch.arange(4)]
    _assert_lists(_call("pow", genesis, 2, [from_torch(ints[0])]), _call("pow", torch, 2, ints))


@pytest.mark.parametrize("name", ["addcmul", "addcdiv"])
@pytest.mark.parametrize("scalars", [1, 0.5, [0.5, -2.0, 3.0], "tensor"])
def test_pointwise(name, scalars):
    rng = np.random.default_rng(4)
    (ts, gs), (t1, g1), (t2, g2) = _lists(rng), _lists(rng), _lists(rng, 0.5, 1.5)
    t_s, g_s = scalars, scalars
    if scalars == "tensor":
        t_s, g_s = torch.tensor([0.5, -2.0, 3.0]), genesis.tensor([0.5, -2.0, 3.0])
    _assert_lists(_call(name, genesis, gs, g1, g2, g_s), _call(name, torch, ts, t1, t2, t_s))
    _call(name + "_", genesis, gs, g1, g2, g_s)
    _call(name + "_", torch, ts, t1, t2, t_s)
    _assert_lists(gs, ts)


@pytest.mark.parametrize("weight", ["scalar", "scalars", "tensor", "tensors"])
def test_lerp(weight):
    rng = np.random.default_rng(5)
    (ts, gs), (te, ge), (tw, gw) = _lists(rng), _lists(rng), _lists(rng, 0, 1)
    weights = {"scalar": (0.3, 0.3), "scalars": ([0.1, 0.5, 0.9],) * 2,
               "tensor": (torch.tensor(0.25), genesis.tensor(0.25)), "tensors": (tw, gw)}
    t_w, g_w = weights[weight]
    _assert_lists(_call("lerp", genesis, gs, ge, g_w), _call("lerp", torch, ts, te, t_w))
    _call("lerp_", genesis, gs, ge, g_w)
    _call("lerp_", torch, ts, te, t_w)
    _assert_lists(gs, ts)


@pytest.mark.parametrize("ord", [2, 1, float("inf")])
def test_norm_and_max(ord):
    ts, gs = _lists(np.random.default_rng(6))
    _assert_lists(_call("norm", genesis, gs, ord), _call("norm", torch, ts, ord))
    _assert_lists(_call("norm", genesis, gs, ord, dtype=genesis.float64),
                  _call("norm", torch, ts, ord, dtype=torch.float64))
    _assert_lists(_call("max", genesis, gs), _call("max", torch, ts))


def test_copy_zero_clone():
    rng = np.random.default_rng(7)
    (ts, gs), (tsrc, gsrc) = _lists(rng), _lists(rng)
    clones = _call("clone", genesis, gs)
    assert _call("copy_", genesis, gs, gsrc) is gs
    _assert_lists(gs, tsrc)
    _assert_lists(clones, ts)
    assert _call("zero_", genesis, gs) is gs
    _assert_lists(gs, [torch.zeros_like(t) for t in ts])


def test_gradients_flow_through_out_of_place_forms():
    rng = np.random.default_rng(8)
    (ts, gs), (te, ge) = _lists(rng), _lists(rng)
    for t, g in zip(ts + te, gs + ge):
        t.requires_grad_(), g.requires_grad_()
    t_out = _call("lerp", torch, _call("mul", torch, ts, 3.0), te, 0.25)
    g_out = _call("lerp", genesis, _call("mul", genesis, gs, 3.0), ge, 0.25)
    sum(o.square().sum() for o in t_out).backward()
    sum(o.square().sum() for o in g_out).backward()
    for t, g in zip(ts + te, gs + ge):
        assert_close(g.grad, t.grad)


def test_ema_update_matches_torch():
    """An EMA shadow updated by lerp_ after optimizer steps, as diffusion trainers keep one."""
    rng = np.random.default_rng(9)
    t_model, g_model = _lists(rng)
    t_ema, g_ema = _call("clone", torch, t_model), _call("clone", genesis, g_model)
    for step in range(3):
        _call("add_", torch, t_model, 0.1 * step)
        _call("add_", genesis, g_model, 0.1 * step)
        _call("lerp_", torch, list(t_ema), t_model, 1 - 0.9)
        _call("lerp_", genesis, list(g_ema), g_model, 1 - 0.9)
    _assert_lists(g_ema, t_ema)


def _malformed(lib):
    a, b = lib.ones(2), lib.ones(3)
    return [
        lambda: lib._foreach_add([], 1),
        lambda: lib._foreach_add([a, b], [a]),
        lambda: lib._foreach_add([a, b], [1.0]),
        lambda: lib._foreach_add([a, b], [1.0, 2.0], alpha=2),
        lambda: lib._foreach_sub([a, b], 1, alpha=2),
        lambda: lib._foreach_sub([a, b], lib.tensor(1.0), alpha=2),
        lambda: lib._foreach_mul([a, b], lib.ones(2)),
        lambda: lib._foreach_exp([a, 3]),
        lambda: lib._foreach_exp(a),
        lambda: lib._foreach_lerp([a, b], [a], 0.5),
        lambda: lib._foreach_addcmul([a, b], [a, b], [a, b], lib.ones(3)),
        lambda: lib._foreach_copy_([a, b], [a]),
        lambda: lib._foreach_add_([lib.ones(2, dtype=lib.long)], 1.5),
    ]


@pytest.mark.parametrize("case", range(len(_malformed(torch))))
def test_errors_match_torch(case):
    assert raised(_malformed(genesis)[case]) == raised(_malformed(torch)[case])
