"""Reductions, scans and softmax against PyTorch: values, dtypes, keepdim, gradients, empty and
0-d inputs, non-contiguous inputs and errors."""

import math

import numpy as np
import pytest
import torch

import genesis
from genesis.autograd import gradcheck, gradgradcheck
from helpers import (ALL_DTYPES, FLOAT_DTYPES, INT_DTYPES, TORCH_DTYPES, assert_close,
                     assert_refuses_as_torch, make_pair, to_torch)

NUMERIC = FLOAT_DTYPES + INT_DTYPES
SHAPE = (3, 5, 4)
DIMS = [None, 0, -1, (0, 2), [1, -1]]
ONE_DIM = [0, 1, -1]


def call(x, name, *args, **kwargs):
    """`name` as a function of the library of `x` (genesis or torch)."""
    lib = genesis if isinstance(x, genesis.Tensor) else torch
    return getattr(lib, name)(x, *args, **kwargs)


def dim_kwargs(op, dim, keepdim):
    """Keyword arguments for `op`; torch's prod takes no dim=None (nor keepdim without a dim)."""
    return {} if op == "prod" and dim is None else {"dim": dim, "keepdim": keepdim}


# op name -> (dtypes whose forward is compared, dim values, differentiable)
MULTI_DIM_OPS = {
    "sum": (ALL_DTYPES, DIMS, True),
    "nansum": (NUMERIC, DIMS, True),
    "mean": (FLOAT_DTYPES, DIMS, True),
    "amax": (ALL_DTYPES, [(), 0, -1, (0, 2)], True),
    "amin": (ALL_DTYPES, [(), 0, -1, (0, 2)], True),
    "var": (FLOAT_DTYPES, DIMS, True),
    "std": (FLOAT_DTYPES, DIMS, True),
    "logsumexp": (FLOAT_DTYPES, [0, -1, (0, 2)], True),
    "norm": (FLOAT_DTYPES, DIMS, True),
    "prod": (ALL_DTYPES, [None, 0, -1], True),
    "any": (ALL_DTYPES, [None, 0, -1, (0, 2)], False),
    "all": (ALL_DTYPES, [None, 0, -1, (0, 2)], False),
}

FORWARD_CASES = [(op, d, dim, keepdim) for op, (dts, dims, _) in MULTI_DIM_OPS.items()
                 for d in dts for dim in dims for keepdim in (False, True)
                 if dim_kwargs(op, dim, keepdim) or not keepdim]
GRAD_CASES = [(op, dim, keepdim) for op, (_, dims, diff) in MULTI_DIM_OPS.items() if diff
              for dim in dims for keepdim in (False, True)
              if dim_kwargs(op, dim, keepdim) or not keepdim]


def _inputs(op, dtype, shape, rng, device="cpu"):
    """Random inputs; products use values near 1 so float16 does not under- or overflow."""
    if op == "prod" and dtype.is_floating_point:
        return make_pair(shape, dtype, low=0.5, high=1.5, device=device, rng=rng)
    return make_pair(shape, dtype, device=device, rng=rng)


@pytest.mark.parametrize("op,dtype,dim,keepdim", FORWARD_CASES)
def test_forward(op, dtype, dim, keepdim, rng, device):
    g, t = _inputs(op, dtype, SHAPE, rng, device=device)
    kwargs = dim_kwargs(op, dim, keepdim)
    assert_close(call(g, op, **kwargs), half_reference(t, op, **kwargs))


@pytest.mark.parametrize("op", ["sum", "mean", "amax", "std", "logsumexp", "prod", "all"])
def test_numpy_integer_dims(op, rng, device):
    """Dims given as numpy integers (alone or in a tuple) count as ints, as in torch."""
    g, t = _inputs(op, genesis.float64, (2, 3, 4), rng, device)
    dims = [np.int64(1), np.int32(-1)] + ([] if op in ("prod", "all") else [(np.int64(0), 2)])
    for dim in dims:
        assert_close(getattr(g, op)(dim), getattr(t, op)(dim))


def half_reference(t, op, *args, **kwargs):
    """torch's `op`; for half inputs computed in float32 and rounded once, as Genesis does
    (torch's own half kernels for softmax and logsumexp round intermediates)."""
    if t.dtype not in (torch.float16, torch.bfloat16) or op not in ROUNDED_ONCE:
        return call(t, op, *args, **kwargs)
    return call(t.float(), op, *args, **kwargs).to(t.dtype)


ROUNDED_ONCE = ("logsumexp", "softmax", "log_softmax", "nansum", "prod")


def _grad_pair(g_out, t_out, g_in, t_in, rng):
    """Backward of a random weighting of the outputs; returns both input gradients."""
    w = rng.standard_normal(tuple(t_out.shape))
    (g_out * genesis.tensor(w, dtype=g_out.dtype, device=g_out.device)).sum().backward()
    (t_out * torch.tensor(w, dtype=t_out.dtype)).sum().backward()
    return g_in.grad, t_in.grad


@pytest.mark.parametrize("op,dim,keepdim", GRAD_CASES)
@pytest.mark.parametrize("dtype", [genesis.float32, genesis.float64])
def test_backward(op, dim, keepdim, dtype, rng, device):
    g, t = _inputs(op, dtype, SHAPE, rng, device=device)
    g.requires_grad_(True)
    t.requires_grad_(True)
    kwargs = dim_kwargs(op, dim, keepdim)
    gg, tg = _grad_pair(call(g, op, **kwargs), call(t, op, **kwargs), g, t, rng)
    assert_close(gg, tg)


GRADCHECK_FNS = {
    "sum": lambda x: x.sum((0, 2), keepdim=True),
    "nansum": lambda x: genesis.nansum(x, 1),
    "mean": lambda x: x.mean(-1),
    "prod": lambda x: x.prod(1),
    "prod_all": lambda x: x.prod(),
    "amax": lambda x: x.amax((0, 1)),
    "amin": lambda x: x.amin(1, keepdim=True),
    "max_dim": lambda x: x.max(1).values,
    "min_dim": lambda x: x.min(0, keepdim=True)[0],
    "median_dim": lambda x: x.median(-1).values,
    "median": lambda x: x.median(),
    "var": lambda x: x.var(1),
    "std": lambda x: x.std(0, correction=0),
    "logsumexp": lambda x: x.logsumexp((0, 2)),
    "norm2": lambda x: x.norm(dim=1),
    "norm1": lambda x: x.norm(p=1),
    "norm3": lambda x: genesis.norm(x, 3, dim=(0, 2)),
    "norm_half": lambda x: genesis.norm(x, 0.5),
    "norm_inf": lambda x: genesis.norm(x, math.inf, dim=1),
    "cumsum": lambda x: x.cumsum(1),
    "cumprod": lambda x: x.cumprod(-1),
    "softmax": lambda x: x.softmax(1),
    "log_softmax": lambda x: genesis.log_softmax(x, 0),
}


@pytest.mark.parametrize("name", list(GRADCHECK_FNS))
def test_gradcheck(name, rng, device):
    x = genesis.tensor(rng.uniform(0.5, 1.5, (2, 3, 2)) * rng.choice([-1, 1], (2, 3, 2)),
                       requires_grad=True, device=device)
    assert gradcheck(GRADCHECK_FNS[name], (x,))
    assert gradgradcheck(GRADCHECK_FNS[name], (x,))


def noncontiguous_pair(kind, rng, shape=SHAPE, device="cpu"):
    """A float32 genesis view on `device` laid out transposed, with stepped slices, or expanded
    (stride 0), and a torch tensor with the same values."""
    if kind == "transposed":
        base = genesis.tensor(rng.standard_normal(shape[::-1]), dtype=genesis.float32,
                              device=device)
        g = base.permute(*reversed(range(len(shape))))
    elif kind == "stepped":
        base = genesis.tensor(rng.standard_normal([2 * s for s in shape]), dtype=genesis.float32,
                              device=device)
        g = base[::2, ..., 1::2]
    else:
        base = genesis.tensor(rng.standard_normal(shape[:-1] + (1,)), dtype=genesis.float32,
                              device=device)
        g = base.expand(*shape)
    return g, torch.from_numpy(np.ascontiguousarray(g.cpu().numpy()))


@pytest.mark.parametrize("kind", ["transposed", "stepped", "expanded"])
@pytest.mark.parametrize("op,kwargs", [
    ("sum", {"dim": (0, 2)}), ("mean", {"dim": 1}), ("amax", {"dim": 1}), ("var", {"dim": 0}),
    ("logsumexp", {"dim": -1}), ("norm", {"dim": 1}), ("prod", {"dim": 2}),
    ("cumsum", {"dim": 1}), ("cumprod", {"dim": 0}), ("softmax", {"dim": 1}),
    ("log_softmax", {"dim": 2}), ("argmax", {"dim": 1}), ("count_nonzero", {"dim": 0})])
def test_noncontiguous(kind, op, kwargs, rng, device):
    g, t = noncontiguous_pair(kind, rng, device=device)
    assert not g.is_contiguous()
    assert_close(call(g, op, **kwargs), call(t, op, **kwargs))


@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("dim", ONE_DIM)
@pytest.mark.parametrize("keepdim", [False, True])
def test_max_min_dim(op, dtype, dim, keepdim, rng, device):
    g, t = make_pair(SHAPE, dtype, rng=rng, device=device)
    got, want = call(g, op, dim, keepdim), call(t, op, dim, keepdim)
    assert_close(got.values, want.values)
    assert_close(got.indices, want.indices)
    values, indices = got
    assert values is got.values and indices is got.indices


@pytest.mark.parametrize("op", ["max", "min", "median"])
def test_select_dim_gradient_goes_to_index(op, rng, device):
    g, t = make_pair((4, 6), genesis.float64, requires_grad=True, rng=rng, device=device)
    gg, tg = _grad_pair(call(g, op, 1).values, call(t, op, 1).values, g, t, rng)
    assert_close(gg, tg)


@pytest.mark.parametrize("op", ["max", "min", "amax", "amin", "median"])
def test_ties_share_the_gradient(op, device):
    values = [[1.0, 3.0, 3.0], [-2.0, -2.0, 0.5]]
    g = genesis.tensor(values, requires_grad=True, device=device)
    t = torch.tensor(values, requires_grad=True)
    call(g, op).backward()
    call(t, op).backward()
    assert_close(g.grad, t.grad)


@pytest.mark.parametrize("op", ["argmax", "argmin"])
@pytest.mark.parametrize("dtype", NUMERIC)
@pytest.mark.parametrize("dim", [None, 0, -1])
@pytest.mark.parametrize("keepdim", [False, True])
def test_argmax_argmin(op, dtype, dim, keepdim, rng, device):
    g, t = make_pair(SHAPE, dtype, rng=rng, device=device)
    assert_close(call(g, op, dim=dim, keepdim=keepdim), call(t, op, dim=dim, keepdim=keepdim))


@pytest.mark.parametrize("dtype", NUMERIC)
@pytest.mark.parametrize("dim", [None, 0, -1])
def test_median(dtype, dim, rng, device):
    g, t = make_pair((5, 7), dtype, rng=rng, device=device)
    if dim is None:
        assert_close(g.median(), t.median())
        return
    got, want = g.median(dim), t.median(dim)
    assert_close(got.values, want.values)
    picked = np.take_along_axis(g.cpu().numpy(), np.expand_dims(got.indices.cpu().numpy(), dim),
                                dim)
    np.testing.assert_array_equal(picked.squeeze(dim), got.values.cpu().numpy())


def test_median_propagates_nan(device):
    x = [[1.0, float("nan"), 0.0], [3.0, 2.0, 1.0]]
    g, t = genesis.tensor(x, device=device), torch.tensor(x)
    assert_close(g.median(1).values, t.median(1).values)
    assert_close(g.median(), t.median())


@pytest.mark.parametrize("dim", [None, 1, -1])
def test_aminmax(dim, rng, device):
    g, t = make_pair(SHAPE, rng=rng, device=device)
    got, want = genesis.aminmax(g, dim=dim), torch.aminmax(t, dim=dim)
    assert_close(got.min, want.min)
    assert_close(got.max, want.max)


@pytest.mark.parametrize("op", ["var", "std"])
@pytest.mark.parametrize("args,kwargs", [
    ((), {}), ((1,), {"unbiased": False}), ((False,), {}), (((0, 2),), {"correction": 2}),
    ((1,), {"correction": 0, "keepdim": True}), ((1, True, True), {})])
def test_var_std_signatures(op, args, kwargs, rng, device):
    g, t = make_pair(SHAPE, genesis.float64, rng=rng, device=device)
    assert_close(call(g, op, *args, **kwargs), call(t, op, *args, **kwargs))
    got, want = call(g, op + "_mean", *args, **kwargs), call(t, op + "_mean", *args, **kwargs)
    assert_close(got[0], want[0])
    assert_close(got[1], want[1])


@pytest.mark.parametrize("op", ["var", "std"])
@pytest.mark.parametrize("dtype", [genesis.float16, genesis.float32, genesis.float64])
def test_var_std_of_everything_take_python_scalars(op, dtype, rng, device):
    """A vector's std() is a 0-d tensor that Python scalars combine with (`x.std() + eps`)."""
    g, t = make_pair((7,), dtype, rng=rng, device=device)
    assert_close(call(g, op) + 1e-3, call(t, op) + 1e-3)
    assert_close(2.0 / call(g, op), 2.0 / call(t, op))


@pytest.mark.parametrize("p", [2, 1, 3, 0.5, 0, math.inf, -math.inf, "fro"])
@pytest.mark.parametrize("dim", [None, 1, (0, 2)])
def test_norm_orders(p, dim, rng, device):
    g, t = make_pair(SHAPE, genesis.float64, requires_grad=True, rng=rng, device=device)
    assert_close(g.norm(p, dim), t.norm(p, dim))
    if p != 0:
        gg, tg = _grad_pair(g.norm(p, dim), t.norm(p, dim), g, t, rng)
        assert_close(gg, tg)


def test_norm_of_zeros_has_zero_gradient(device):
    g = genesis.zeros(3, requires_grad=True, device=device)
    t = torch.zeros(3, requires_grad=True)
    g.norm().backward()
    t.norm().backward()
    assert_close(g.grad, t.grad)


def test_vector_norm_and_dtype(rng, device):
    g, t = make_pair(SHAPE, genesis.float16, rng=rng, device=device)
    assert_close(genesis.linalg.vector_norm(g, 3, dim=1), torch.linalg.vector_norm(t, 3, dim=1))
    assert_close(g.norm(dtype=genesis.float32), t.norm(dtype=torch.float32))


@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("dim", ONE_DIM)
def test_scans(op, dtype, dim, rng, device):
    g, t = _inputs("prod", dtype, SHAPE, rng, device=device)
    assert_close(call(g, op, dim), call(t, op, dim))


@pytest.mark.parametrize("op", ["cumsum", "cumprod", "sum", "prod"])
def test_dtype_argument(op, rng, device):
    g, t = make_pair((4, 3), genesis.int16, rng=rng, device=device)
    for dtype in (genesis.float64, genesis.int32):
        assert_close(call(g, op, 1, dtype=dtype), call(t, op, 1, dtype=TORCH_DTYPES[dtype]))


@pytest.mark.parametrize("op", ["cumprod", "prod"])
@pytest.mark.parametrize("zeros", [[2], [1, 3], [0, 4]])
def test_gradient_with_zeros(op, zeros, rng, device):
    arr = rng.uniform(0.5, 1.5, (3, 5))
    arr[:, zeros] = 0.0
    g = genesis.tensor(arr, requires_grad=True, device=device)
    t = torch.tensor(arr, requires_grad=True)
    gg, tg = _grad_pair(call(g, op, 1), call(t, op, 1), g, t, rng)
    assert_close(gg, tg)
    assert gradcheck(lambda x: call(x, op, 1), (g,))
    if len(zeros) == 1:
        assert gradgradcheck(lambda x: call(x, op, 1), (g,))


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("dim", ONE_DIM)
def test_softmax(op, dtype, dim, rng, device):
    g, t = make_pair(SHAPE, dtype, low=-30, high=30, rng=rng, device=device)
    assert_close(call(g, op, dim), half_reference(t, op, dim))
    assert_close(getattr(g, op)(dim, dtype=genesis.float64),
                 getattr(t, op)(dim, dtype=torch.float64))


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax_backward(op, rng, device):
    g, t = make_pair(SHAPE, requires_grad=True, rng=rng, device=device)
    gg, tg = _grad_pair(call(g, op, 1), call(t, op, 1), g, t, rng)
    assert_close(gg, tg)


@pytest.mark.parametrize("op", ["softmax", "log_softmax", "sum", "mean"])
def test_untracked_calls_record_a_graph_exactly_when_pytorch_does(op, rng, device):
    """Untracked calls skip the autograd Function: grad mode off, an input needing no gradient,
    and a view whose base gained a history by an in-place write after it was made (which must
    be recorded) each agree with PyTorch."""
    g, t = make_pair(SHAPE, rng=rng, device=device)
    gw, tw = make_pair(SHAPE, requires_grad=True, rng=rng, device=device)
    for x, w, lib in ((g, gw, genesis), (t, tw, torch)):
        with lib.no_grad():
            assert call(w, op, 1).grad_fn is None
        assert not call(x, op, -1).requires_grad
        base = x.clone()
        view = base[1:]
        base.mul_(w)
        out = call(view, op, 1)
        assert out.requires_grad and out.grad_fn is not None
        out.sum().backward()
    assert_close(gw.grad, tw.grad)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("dim", [None, 1, (0, 2)])
def test_count_nonzero(dtype, dim, rng, device):
    g, t = make_pair(SHAPE, dtype, rng=rng, device=device)
    assert_close(genesis.count_nonzero(g, dim), torch.count_nonzero(t, dim))


def test_integer_sums_give_int64_and_halves_accumulate_in_float32(device):
    for dtype in INT_DTYPES + [genesis.bool]:
        assert genesis.ones(3, dtype=dtype, device=device).sum().dtype is genesis.int64
    g = genesis.full((20000,), 0.1, dtype=genesis.float16, device=device)
    t = torch.full((20000,), 0.1, dtype=torch.float16)
    assert_close(g.sum(), t.sum())
    assert_close(g.mean(), t.mean())


def test_sum_is_deterministic(rng, device):
    x = genesis.tensor(rng.standard_normal(100003).astype(np.float32), device=device)
    assert x.sum().item() == x.sum().item()


ZERO_D_OPS = ["sum", "mean", "amax", "amin", "prod", "logsumexp", "norm", "cumsum", "cumprod",
              "softmax", "log_softmax", "argmax", "any", "all", "count_nonzero", "nansum"]


@pytest.mark.parametrize("op", ZERO_D_OPS)
@pytest.mark.parametrize("dim", [None, 0, -1])
def test_zero_dim(op, dim, rng, device):
    g, t = make_pair((), rng=rng, device=device)
    if dim is None:
        if op in ("logsumexp", "cumsum", "cumprod", "softmax", "log_softmax"):
            return
        assert_close(call(g, op), call(t, op))
    else:
        assert_close(call(g, op, dim), call(t, op, dim))


def test_zero_dim_max_and_gradients(rng, device):
    g, t = make_pair((), genesis.float64, requires_grad=True, rng=rng, device=device)
    got, want = g.max(0), t.max(0)
    assert_close(got.values, want.values)
    assert_close(got.indices, want.indices)
    (got.values * 3 + g.sum(0) + g.cumprod(0)).backward()
    (want.values * 3 + t.sum(0) + t.cumprod(0)).backward()
    assert_close(g.grad, t.grad)


@pytest.mark.parametrize("op,args", [
    ("sum", ()), ("sum", (1,)), ("mean", ()), ("mean", (0,)), ("prod", ()), ("prod", (1,)),
    ("nansum", ()), ("logsumexp", (1,)), ("norm", ()), ("var", (1,)), ("cumsum", (1,)),
    ("cumprod", (0,)), ("softmax", (1,)), ("any", ()), ("all", (1,)), ("count_nonzero", ()),
    ("amax", (0,)), ("max", (0,)), ("argmax", (0,)), ("median", ())])
@pytest.mark.filterwarnings("ignore:var.*degrees of freedom")
def test_empty(op, args, device):
    g, t = make_pair((2, 0), device=device)
    got, want = call(g, op, *args), call(t, op, *args)
    if isinstance(want, tuple):
        got, want = got.values, want.values
    with np.errstate(all="ignore"):
        assert_close(got, want)


@pytest.mark.parametrize("op,args,exc,message", [
    ("max", (), RuntimeError, "max\\(\\): Expected reduction dim to be specified"),
    ("min", (), RuntimeError, "min\\(\\): Expected reduction dim to be specified"),
    ("amax", (), RuntimeError, "amax\\(\\): Expected reduction dim"),
    ("amin", (1,), IndexError, "amin\\(\\): Expected reduction dim 1 to have non-zero size"),
    ("max", (1,), IndexError, "max\\(\\): Expected reduction dim 1"),
    ("argmax", (), IndexError, "argmax\\(\\): Expected reduction dim to be specified"),
    ("aminmax", (), RuntimeError, "aminmax"),
])
def test_empty_without_identity_raises(op, args, exc, message, device):
    for lib_x in (genesis.zeros(2, 0, device=device), torch.zeros(2, 0)):
        with pytest.raises(exc, match=message):
            call(lib_x, op, *args)


@pytest.mark.parametrize("fn,exc,message", [
    (lambda x: x.sum(3), IndexError, "sum"),
    (lambda x: x.sum((1, -1)), RuntimeError, "multiple times"),
    (lambda x: x.long().mean(), RuntimeError, "mean\\(\\): could not infer output dtype"),
    (lambda x: x.long().var(), RuntimeError, "std and var only support floating point"),
    (lambda x: x.long().norm(), RuntimeError, "vector_norm"),
    (lambda x: x.long().softmax(0), NotImplementedError, "softmax"),
    (lambda x: x[0, 0].softmax(1), IndexError, "softmax: Dimension out of range"),
    (lambda x: x[0, 0].log_softmax(-2), IndexError, "log_softmax: Dimension out of range"),
    (lambda x: x.bool().argmax(), RuntimeError, "argmax\\(\\): does not support bool"),
    (lambda x: x.max(2), IndexError, "max"),
    (lambda x: x.cumsum(-3), IndexError, "cumsum"),
    (lambda x: x.prod((0, 1)), TypeError, "prod"),
])
def test_errors(fn, exc, message, device):
    with pytest.raises(exc, match=message):
        fn(genesis.ones(2, 3, device=device))


@pytest.mark.parametrize("dtype", ["int64", "int32", "bool", "uint8"])
@pytest.mark.parametrize("call", [lambda m, x: x.norm(),
                                  lambda m, x: x.norm(1, dim=0, keepdim=True),
                                  lambda m, x: m.linalg.vector_norm(x)])
def test_norm_of_no_floating_type_refused_as_torch(call, dtype):
    """norm and linalg.vector_norm of an integer or bool tensor: torch's words, the type named
    as its C++ type ('Got Long')."""
    assert_refuses_as_torch(lambda m: call(m, m.ones(3, dtype=getattr(m, dtype))))


def test_logsumexp_is_stable_and_handles_infinities(device):
    x = [[1000.0, 1000.0], [-math.inf, -math.inf], [math.inf, 0.0]]
    for values, dim in ((x, 1), ([2, 3], 0)):
        assert_close(genesis.tensor(values, device=device).logsumexp(dim),
                     torch.tensor(values).logsumexp(dim))


def test_uint8_any_all_keep_uint8(device):
    g = genesis.tensor([0, 3], dtype=genesis.uint8, device=device)
    assert g.any().dtype is genesis.uint8 and g.all().dtype is genesis.uint8
    assert to_torch(g.all()).item() == 0


def test_max_of_two_tensors_is_maximum(rng, device):
    a, ta = make_pair((3, 4), rng=rng, device=device)
    b, tb = make_pair((4,), rng=rng, device=device)
    assert_close(genesis.max(a, b), torch.max(ta, tb))
    assert_close(a.min(b), ta.min(tb))


@pytest.mark.parametrize("op", ["max", "min", "median"])
def test_reducing_a_vector_along_its_dim_gives_0d(op, device):
    values, indices = getattr(genesis.tensor([1.0, 3.0, 2.0], device=device), op)(0)
    expected = getattr(torch.tensor([1.0, 3.0, 2.0]), op)(0)
    assert values.shape == expected.values.shape == ()
    assert indices.shape == () and indices.item() == expected.indices.item()


@pytest.mark.parametrize("op, kwargs", [
    ("sum", {"axis": 1, "keepdims": True}), ("mean", {"axis": (0, 2)}),
    ("amax", {"axis": -1, "keepdims": True}), ("var", {"axis": 1, "keepdims": True}),
    ("std", {"axis": 0, "correction": 0}), ("logsumexp", {"axis": 2, "keepdims": True}),
    ("max", {"axis": 1, "keepdims": True}), ("argmin", {"axis": 0}),
    ("median", {"axis": -1}), ("aminmax", {"axis": 1, "keepdims": True}),
    ("var_mean", {"axis": 2}), ("cumsum", {"axis": 1}), ("softmax", {"axis": 0}),
    ("count_nonzero", {"axis": (0, 1)}), ("all", {"axis": 1, "keepdims": True}),
    ("prod", {"axis": 2, "keepdims": True})])
def test_numpy_keyword_names(op, kwargs, rng, device):
    """axis and keepdims name dim and keepdim, as PyTorch's argument parser takes them
    (StyleGAN2's minibatch stddev calls mean(..., keepdims=True)); on non-contiguous inputs,
    as functions and as methods, with gradients."""
    g, t = make_pair((4, 3, 5), rng=rng, device=device)
    g, t = g.transpose(0, 2).requires_grad_(), t.transpose(0, 2).requires_grad_()
    results = [(call(g, op, **kwargs), call(t, op, **kwargs))]
    if hasattr(torch.Tensor, op):
        results.append((getattr(g, op)(**kwargs), getattr(t, op)(**kwargs)))
    for got, expected in results:
        if not isinstance(got, genesis.Tensor):
            got, expected = got[0], expected[0]
        assert_close(got, expected)
    oracle_differentiates = op != "aminmax" or torch.__version__ >= (2, 13)
    if got.dtype.is_floating_point and op not in ("max", "median") and oracle_differentiates:
        got.sum().backward()
        expected.sum().backward()
        assert_close(g.grad, t.grad)
    assert_close(genesis.sum(a=g.detach()), torch.sum(a=t.detach()))
    assert_close(genesis.mean(x=g.detach()), torch.mean(x=t.detach()))


def test_numpy_keyword_name_beside_its_own_name_is_refused(device):
    """With torch's text; Genesis words it as torch 2.13 does."""
    if torch.__version__ < (2, 13):
        pytest.skip(f"torch {torch.__version__} words these errors otherwise")
    x = genesis.ones(2, 3, device=device)
    for fn in (lambda lib, x: lib.sum(x, dim=1, axis=1),
               lambda lib, x: x.mean(1, keepdim=True, keepdims=True)):
        with pytest.raises(TypeError) as expected:
            fn(torch, torch.ones(2, 3))
        with pytest.raises(TypeError, match=str(expected.value).replace("(", r"\(")
                           .replace(")", r"\)")):
            fn(genesis, x)
    with pytest.raises(TypeError, match=r"^softmax\(\) got an unexpected keyword argument 'axis'"):
        genesis.nn.functional.softmax(x, axis=1)


def test_variance_of_nearly_equal_values_as_torch(rng):
    """float32 var and std of values a few ulps apart are torch's (accumulated in double, as
    torch's CPU kernel): with a rounded float32 mean they came out up to 100% off."""
    pairs = rng.standard_normal((2, 500)).astype(np.float32)
    pairs[1] = pairs[0] + (rng.standard_normal(500) * 1e-6).astype(np.float32)
    t = torch.tensor(pairs)
    g = genesis.tensor(pairs)
    assert_close(g.var(0, unbiased=False), t.var(0, unbiased=False), rtol=1e-6, atol=0)
    assert_close(g.std(0), t.std(0), rtol=1e-6, atol=0)
    assert_close(genesis.var_mean(g, 0)[0], torch.var_mean(t, 0)[0], rtol=1e-6, atol=0)
