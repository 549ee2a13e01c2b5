"""Indexing on "cuda" against PyTorch on the CPU: advanced getitem and __setitem__ (tensors,
lists, masks, slices, broadcasting, negative and empty indices), index_put with accumulate,
gather/scatter and their reduce modes, index_select/index_add/index_copy/index_fill, masked ops,
take, nonzero, repeat_interleave, embedding forward and backward, and gradients through them.
Accumulating writes are checked to give the same bits on every run.

Skipped without a GPU. GENESIS_INDEX_TEST_DEVICE=cpu runs the same cases on the CPU backend
(to check the tests themselves without a GPU).
"""

import os

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from helpers import (
    ALL_DTYPES,
    FLOAT_DTYPES,
    INT_DTYPES,
    assert_close,
    lay_out,
    skip_no_cuda,
    to_torch,
)

import genesis
import genesis.nn.functional as F

DEVICE = os.environ.get("GENESIS_INDEX_TEST_DEVICE", "cuda")
pytestmark = [skip_no_cuda] if DEVICE == "cuda" else []

LAYOUTS = ["contiguous", "transposed", "stepped"]


def values(shape, dtype, rng):
    if dtype is genesis.bool:
        return rng.random(shape) < 0.5
    if dtype.is_floating_point:
        return rng.uniform(-3.0, 3.0, shape)
    return rng.integers(0 if dtype is genesis.uint8 else -6, 7, shape)


def pair(arr, dtype, layout="contiguous", requires_grad=False):
    """(genesis tensor on DEVICE laid out as `layout`, torch CPU tensor) with `arr`'s values."""
    host = genesis.tensor(arr, dtype=dtype)
    expected = to_torch(host)
    g = lay_out(host.to(DEVICE), layout)
    if requires_grad:
        g = g.detach().requires_grad_(True)
        expected = expected.detach().requires_grad_(True)
    return g, expected


def long_pair(arr):
    arr = np.asarray(arr, dtype=np.int64)
    return genesis.tensor(arr, device=DEVICE), torch.from_numpy(arr.copy())


HALF = (torch.float16, torch.bfloat16)


def _upcast(t):
    return t.float() if isinstance(t, torch.Tensor) and t.dtype in HALF else t


def check(fn_g, fn_t, *args, accumulates=False):
    """Run both on (genesis, torch) pairs (other args as they are); torch's rejection must be
    mirrored by the same exception type. With `accumulates`, torch runs half types in float32
    and rounds once (genesis accumulates half types in float32; torch's CPU kernels round at
    every step)."""
    def pick(i):
        return [a[i] if isinstance(a, tuple) and len(a) == 2 and _is_pair(a) else a for a in args]
    torch_args = pick(1)
    half = next((a.dtype for a in torch_args if isinstance(a, torch.Tensor) and a.dtype in HALF),
                None)
    if accumulates and half is not None:
        inner = fn_t
        fn_t = lambda *a: inner(*map(_upcast, a)).to(half)
    try:
        want = fn_t(*torch_args)
    except Exception as exc:  # noqa: BLE001  (any torch rejection must be mirrored)
        with pytest.raises(type(exc)):
            fn_g(*pick(0))
        return None
    got = fn_g(*pick(0))
    _compare(got, want)
    return got


def _is_pair(a):
    return isinstance(a[0], genesis.Tensor) and isinstance(a[1], torch.Tensor)


def _compare(got, want):
    if isinstance(want, (tuple, list)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _compare(g, w)
        return
    assert got.device.type == DEVICE
    assert_close(got, want)


class I:
    """An index tensor in a spec (built on DEVICE for genesis, on the CPU for torch)."""

    def __init__(self, arr, dtype=np.int64):
        self.arr = np.asarray(arr, dtype=dtype)

    def __repr__(self):  # stable test ids (pytest-xdist workers must collect the same names)
        return f"I({self.arr.tolist()})"


def build(spec, lib):
    def one(e):
        if isinstance(e, I):
            if lib is torch:
                return torch.from_numpy(e.arr.copy())
            return genesis.tensor(e.arr, device=DEVICE)
        return e
    return tuple(one(e) for e in spec) if isinstance(spec, tuple) else one(spec)


SHAPE = (3, 4, 5, 6)
SPECS = {
    "one": (I([[2, 0, -1], [1, 1, 0]]),),
    "second": (slice(None), I([0, -1, 3, 3])),
    "apart": (I([0, 2]), slice(1, 3), I([1, -2])),
    "ellipsis": (Ellipsis, I([5, 0, -6])),
    "broadcast": (I([[0], [2]]), I([[1, 3, 0]])),
    "four": (I([0, 1, 2]), I([1, 2, 3]), I([0, 1, 4]), I([5, 4, 3])),
    "mask": (I(np.arange(12).reshape(3, 4) % 3 == 1, np.bool_),),
    "mask_dim1": (slice(None), I([True, False, True, True], np.bool_)),
    "empty": (I([]),),
    "mixed": (1, I([0, 3]), None, slice(None, None, 2)),
    "int32": (slice(1, None), I([3, 0, -4], np.int32)),
    "list": [2, 0, 2],
    "zero_d": (I(1), I([3, 0])),
    "bool_scalar": (True, I([1, 2])),
}


@pytest.mark.parametrize("name", list(SPECS))
@pytest.mark.parametrize("layout", LAYOUTS)
def test_getitem_specs(name, layout, rng):
    x = pair(values(SHAPE, genesis.float32, rng), genesis.float32, layout)
    got = x[0][build(SPECS[name], genesis)]
    assert_close(got, x[1][build(SPECS[name], torch)])


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_getitem_every_dtype(dtype, rng):
    x = pair(values((7, 9, 2), dtype, rng), dtype, "transposed")
    for spec in (SPECS["broadcast"], (I([6, -7, 3]),), (I([[True] * 9] * 7, np.bool_),)):
        assert_close(x[0][build(spec, genesis)], x[1][build(spec, torch)])


@pytest.mark.parametrize("spec", [(I([3]),), (slice(None), I([-5])), (I([0]), I([4])),
                                  (I([[True, False]], np.bool_),)],
                         ids=["row", "negative_column", "pair", "mask_shape"])
def test_getitem_errors(spec):
    """Out-of-range indices and mismatched masks raise what torch raises."""
    g, t = pair(np.zeros((3, 4)), genesis.float32)
    with pytest.raises(IndexError):
        t[build(spec, torch)]
    with pytest.raises(IndexError):
        g[build(spec, genesis)]


def test_index_sizes_around_blocks(rng):
    """Gathers of rows and of single elements past block boundaries (odd sizes)."""
    for rows, cols in ((1, 1), (1025, 3), (7, 1023), (4099, 1)):
        x = pair(values((rows + 5, cols), genesis.float32, rng), genesis.float32)
        i = long_pair(rng.integers(-rows - 5, rows + 5, rows))
        assert_close(x[0][i[0]], x[1][i[1]])


SET_SPECS = ["one", "second", "apart", "broadcast", "four", "mask", "mask_dim1", "empty", "mixed",
             "zero_d"]


@pytest.mark.parametrize("name", SET_SPECS)
@pytest.mark.parametrize("value_kind", ["scalar", "tensor", "broadcast"])
def test_setitem_specs(name, value_kind, rng):
    g, t = pair(values(SHAPE, genesis.float32, rng), genesis.float32, "transposed")
    t = t.clone()
    spec_t = build(SPECS[name], torch)
    target = t[spec_t].shape
    if value_kind == "scalar":
        vg = vt = 2.5
    else:
        shape = target if value_kind == "tensor" else target[-1:]
        vg, vt = pair(values(shape, genesis.float32, rng), genesis.float32)
    g[build(SPECS[name], genesis)] = vg
    t[spec_t] = vt
    assert_close(g, t)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_setitem_every_dtype(dtype, rng):
    g, t = pair(values((6, 5), dtype, rng), dtype, "stepped")
    t = t.clone()
    rows = I(rng.permutation(6)[:4])
    vg, vt = pair(values((4, 5), dtype, rng), dtype)
    g[build(rows, genesis)] = vg
    t[build(rows, torch)] = vt
    mask = I(values((6, 5), genesis.bool, rng), np.bool_)
    g[build(mask, genesis)] = True if dtype is genesis.bool else 3
    t[build(mask, torch)] = True if dtype is genesis.bool else 3
    assert_close(g, t)


@pytest.mark.parametrize("dtype", [genesis.float32, genesis.bfloat16, genesis.int64], ids=str)
def test_setitem_duplicate_indices_keep_the_last_value(dtype, rng):
    """As torch on the CPU does (and every run alike): the last duplicate's row wins."""
    g, t = pair(values((5, 4), dtype, rng), dtype)
    t = t.clone()
    rows = I([[0, 1], [4, -5], [1, 1]])
    vg, vt = pair(values((3, 2, 4), dtype, rng), dtype, "transposed")
    g[build(rows, genesis)] = vg
    t[build(rows, torch)] = vt
    assert_close(g, t)


def test_setitem_slices_and_errors(rng):
    g, t = pair(values((5, 6), genesis.float32, rng), genesis.float32)
    t = t.clone()
    g[1:4, ::2] = 7.0
    t[1:4, ::2] = 7.0
    assert_close(g, t)
    with pytest.raises(IndexError):
        g[genesis.tensor([5], device=DEVICE)] = 1.0
    assert_close(g, t)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_index_put_accumulate(dtype, rng):
    g, t = pair(values((9, 4), dtype, rng), dtype)
    idx = long_pair(rng.integers(-9, 9, 40))
    vg, vt = pair(values((40, 4), dtype, rng), dtype, "transposed")
    check(lambda x, i, v: x.index_put((i,), v, accumulate=True),
          lambda x, i, v: x.index_put((i,), v, accumulate=True), (g, t), idx, (vg, vt),
          accumulates=True)


def test_index_put_accumulate_two_indices_and_scalar(rng):
    g, t = pair(values((5, 6, 3), genesis.float32, rng), genesis.float32)
    i0, i1 = long_pair(rng.integers(0, 5, (30, 1))), long_pair(rng.integers(0, 6, (1, 4)))
    got = g.index_put((i0[0], i1[0]), genesis.tensor(1.5, device=DEVICE), accumulate=True)
    want = t.index_put((i0[1], i1[1]), torch.tensor(1.5), accumulate=True)
    assert_close(got, want)
    g.index_put_((i0[0], i1[0]), genesis.tensor(1.5, device=DEVICE), accumulate=True)
    assert_close(g, want)


def _bits(t):
    return np.array(t.detach().cpu().numpy()).view(np.uint8)


def test_accumulation_is_deterministic(rng):
    """Many float32 contributions to few targets: the same bits on every run."""
    n = 200_000
    idx = genesis.tensor(rng.integers(0, 7, n), device=DEVICE)
    src = genesis.tensor(rng.standard_normal((n, 3)).astype(np.float32), device=DEVICE)
    base = genesis.zeros(7, 3, device=DEVICE)
    first = _bits(base.index_add(0, idx, src))
    for _ in range(3):
        assert np.array_equal(_bits(base.index_add(0, idx, src)), first)
    flat = genesis.zeros(7, device=DEVICE)
    once = _bits(flat.scatter_add(0, idx, src[:, 0]))
    assert np.array_equal(_bits(flat.scatter_add(0, idx, src[:, 0])), once)
    want = torch.zeros(7, 3, dtype=torch.float64).index_add(
        0, torch.from_numpy(idx.cpu().numpy()), torch.from_numpy(src.cpu().numpy()).double())
    np.testing.assert_allclose(base.index_add(0, idx, src).cpu().numpy(), want.numpy(),
                               rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_gather(dtype, dim, rng):
    x = pair(values((6, 7, 5), dtype, rng), dtype, "transposed")
    shape = [4, 5, 3]
    shape[dim] = 9
    idx = long_pair(rng.integers(0, x[1].shape[dim], shape))
    check(genesis.gather, torch.gather, x, dim, idx)


def test_gather_edge_cases(rng):
    x = pair(values((5,), genesis.float32, rng), genesis.float32)
    check(genesis.gather, torch.gather, x, 0, long_pair(rng.integers(0, 5, 0)))
    check(genesis.gather, torch.gather, x, 0, long_pair([7]))
    zero = pair(np.array(2.5), genesis.float32)
    check(genesis.gather, torch.gather, zero, 0, long_pair(np.array(0)))


def test_operands_on_two_devices_are_refused():
    x = genesis.zeros(3, 4, device="cuda")
    index = genesis.zeros(3, 4, dtype=genesis.int64)
    two = "Expected all tensors to be on the same device, but found at least two devices"
    with pytest.raises(RuntimeError, match=f"gather\\(\\): {two}, cpu and cuda:0!"):
        genesis.gather(x, 1, index)
    with pytest.raises(RuntimeError, match=f"scatter\\(\\): {two}"):
        x.scatter(1, index.cuda(), genesis.ones(3, 4))
    with pytest.raises(RuntimeError, match=f"nll_loss: {two}"):
        genesis.nn.functional.cross_entropy(x, index[:, 0])


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("reduce", [None, "add", "multiply"])
def test_scatter(dtype, reduce, rng):
    x = pair(values((7, 5), dtype, rng), dtype, "stepped")
    if reduce is None:
        idx = long_pair(np.stack([rng.permutation(7)[:4] for _ in range(3)], 1))
    else:
        idx = long_pair(rng.integers(0, 7, (30, 3)))
    src = pair(values((idx[1].shape[0] + 1, 4), dtype, rng), dtype, "transposed")
    kw = {} if reduce is None else {"reduce": reduce}
    check(lambda a, i, s: a.scatter(0, i, s, **kw), lambda a, i, s: a.scatter(0, i, s, **kw),
          x, idx, src, accumulates=True)
    check(lambda a, i: a.scatter(0, i, 2, **kw), lambda a, i: a.scatter(0, i, 2, **kw), x, idx,
          accumulates=True)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + INT_DTYPES, ids=str)
def test_scatter_add(dtype, rng):
    x = pair(values((5, 8), dtype, rng), dtype)
    idx = long_pair(rng.integers(0, 8, (4, 20)))
    src = pair(values((4, 20), dtype, rng), dtype, "transposed")
    check(genesis.scatter_add, torch.scatter_add, x, 1, idx, src, accumulates=True)
    check(lambda a, i, s: a.clone().scatter_add_(1, i, s),
          lambda a, i, s: a.clone().scatter_add_(1, i, s), x, idx, src, accumulates=True)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_index_select(dtype, rng):
    x = pair(values((6, 9, 4), dtype, rng), dtype, "transposed")
    for dim in (0, 1, 2):
        check(genesis.index_select, torch.index_select, x, dim,
              long_pair(rng.integers(0, x[1].shape[dim], 11)))
    check(genesis.index_select, torch.index_select, x, 1, long_pair([]))
    for bad in ([6], [-1]):
        check(genesis.index_select, torch.index_select, x, 0, long_pair(bad))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + INT_DTYPES, ids=str)
def test_index_add_copy_fill(dtype, rng):
    x = pair(values((7, 5), dtype, rng), dtype)
    dup = long_pair(rng.integers(0, 5, 12))
    src = pair(values((7, 12), dtype, rng), dtype, "transposed")
    check(genesis.index_add, torch.index_add, x, 1, dup, src, accumulates=True)
    alpha = 2 if not dtype.is_floating_point else 0.5
    check(lambda a, i, s: a.index_add(1, i, s, alpha=alpha),
          lambda a, i, s: a.index_add(1, i, s, alpha=alpha), x, dup, src, accumulates=True)
    perm = long_pair(rng.permutation(7)[:3])
    rows = pair(values((3, 5), dtype, rng), dtype)
    check(genesis.index_copy, torch.index_copy, x, 0, perm, rows)
    check(lambda a, i: a.index_fill(0, i, 3), lambda a, i: a.index_fill(0, i, 3), x, perm)
    check(genesis.index_add, torch.index_add, x, 0, long_pair([7]), pair(
        values((1, 5), dtype, rng), dtype))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_masked_ops(dtype, rng):
    x = pair(values((6, 7), dtype, rng), dtype, "transposed")
    mask = pair(values((7,), genesis.bool, rng), genesis.bool)
    fill = True if dtype is genesis.bool else 4
    check(lambda a, m: a.masked_fill(m, fill), lambda a, m: a.masked_fill(m, fill), x, mask)
    check(genesis.masked_select, torch.masked_select, x, mask)
    src = pair(values((50,), dtype, rng), dtype)
    check(lambda a, m, s: a.masked_scatter(m, s), lambda a, m, s: a.masked_scatter(m, s),
          x, mask, src)


def test_take_and_take_along_dim(rng):
    x = pair(values((5, 6), genesis.float32, rng), genesis.float32, "transposed")
    check(genesis.take, torch.take, x, long_pair(rng.integers(-30, 30, (4, 3))))
    check(genesis.take, torch.take, x, long_pair([30]))
    idx = long_pair(rng.integers(0, 6, (5, 2)))
    check(genesis.take_along_dim, torch.take_along_dim, x, idx, 1)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_nonzero_every_dtype(dtype, rng):
    arr = values((9, 13), dtype, rng)
    if dtype.is_floating_point:
        arr[0, 0] = np.nan
    x = pair(arr, dtype, "transposed")
    check(genesis.nonzero, torch.nonzero, x)
    check(lambda a: genesis.nonzero(a, as_tuple=True), lambda a: torch.nonzero(a, as_tuple=True),
          x)


@pytest.mark.parametrize("shape", [(), (0,), (4, 0, 3), (1,), (3000,), (2,) * 9, (3, 1, 4, 1)],
                         ids=str)
def test_nonzero_shapes(shape, rng):
    x = pair(rng.random(shape) < 0.4, genesis.bool)
    check(genesis.nonzero, torch.nonzero, x)
    check(genesis.argwhere, torch.argwhere, x)
    check(lambda a: genesis.nonzero(a, as_tuple=True), lambda a: torch.nonzero(a, as_tuple=True),
          x)


def test_repeat_interleave(rng):
    for n in (0, 1, 7, 3000):
        reps = long_pair(rng.integers(0, 4, n))
        check(genesis.repeat_interleave, torch.repeat_interleave, reps)
    x = pair(values((4, 3), genesis.float32, rng), genesis.float32, "transposed")
    reps = long_pair(rng.integers(0, 4, 3))
    check(lambda a, r: a.repeat_interleave(r, dim=1), lambda a, r: a.repeat_interleave(r, dim=1),
          x, reps)
    reps32 = (reps[0].to(genesis.int32), reps[1].int())
    check(lambda a, r: a.repeat_interleave(r, dim=1), lambda a, r: a.repeat_interleave(r, dim=1),
          x, reps32)
    check(lambda a: a.repeat_interleave(2), lambda a: a.repeat_interleave(2), x)


EMBEDDING_CASES = [(dtype, kw) for dtype in FLOAT_DTYPES for kw in ({}, {"padding_idx": 3})] + [
    (dtype, {"scale_grad_by_freq": True}) for dtype in (genesis.float32, genesis.float64)]


@pytest.mark.parametrize("dtype,kw", EMBEDDING_CASES, ids=str)
def test_embedding_forward_backward(dtype, kw, rng):
    """The lookup is exact; the gradient (index_add of rows, half types summed in float32 and
    rounded once) against torch's in float32, rounded."""
    weight = pair(values((50, 8), dtype, rng), dtype, requires_grad=True)
    idx = long_pair(rng.integers(0, 50, (6, 33)))
    out_g = F.embedding(idx[0], weight[0], **kw)
    assert_close(out_g, TF.embedding(idx[1], weight[1], **kw))
    grad = pair(values(tuple(out_g.shape), dtype, rng), dtype)
    out_g.backward(grad[0])
    w32 = _upcast(weight[1]).detach().requires_grad_(True)
    TF.embedding(idx[1], w32, **kw).backward(_upcast(grad[1]))
    assert weight[0].grad.device.type == DEVICE
    assert_close(weight[0].grad, w32.grad.to(weight[1].dtype))


def test_embedding_module_and_deterministic_backward(rng):
    emb = genesis.nn.Embedding(100, 64).to(DEVICE)
    idx = genesis.tensor(rng.integers(0, 10, (16, 50)), device=DEVICE)
    grads = []
    for _ in range(2):
        emb.weight.grad = None
        emb(idx).square().sum().backward()
        grads.append(_bits(emb.weight.grad))
    assert np.array_equal(grads[0], grads[1])
    weight = to_torch(emb.weight.detach()).double().requires_grad_(True)
    TF.embedding(torch.from_numpy(idx.cpu().numpy()), weight).square().sum().backward()
    assert_close(emb.weight.grad, weight.grad.float(), rtol=1e-5)


GRAD_CASES = {
    "getitem": (lambda x, i: x[i], lambda x, i: x[i]),
    "getitem_pair": (lambda x, i: x[i, i % 3], lambda x, i: x[i, i % 3]),
    "index_select": (lambda x, i: x.index_select(1, i % 5), lambda x, i: x.index_select(1, i % 5)),
    "take": (lambda x, i: x.take(i), lambda x, i: x.take(i)),
    "gather": (lambda x, i: x.gather(0, i[None, :5].expand(2, -1)),
               lambda x, i: x.gather(0, i[None, :5].expand(2, -1))),
    "masked_select": (lambda x, i: x.masked_select(x > 0), lambda x, i: x.masked_select(x > 0)),
}


@pytest.mark.parametrize("name", list(GRAD_CASES))
@pytest.mark.parametrize("dtype", [genesis.float32, genesis.float64, genesis.bfloat16], ids=str)
def test_gradients(name, dtype, rng):
    """Gradients against torch's (in float32 for half types, rounded once: repeated indices
    accumulate)."""
    fg, ft = GRAD_CASES[name]
    x = pair(values((4, 5), dtype, rng), dtype, "transposed", requires_grad=True)
    xt = _upcast(x[1]).detach().requires_grad_(True)
    i = long_pair(rng.integers(0, 4, 9))
    out_g, out_t = fg(x[0], i[0]), ft(xt, i[1])
    assert_close(out_g, out_t.to(x[1].dtype))
    g = pair(values(tuple(out_t.shape), dtype, rng), dtype)
    out_g.backward(g[0])
    out_t.backward(_upcast(g[1]))
    assert_close(x[0].grad, xt.grad.to(x[1].dtype))


def test_scatter_and_index_put_gradients(rng):
    x = pair(values((6, 4), genesis.float32, rng), genesis.float32, requires_grad=True)
    src = pair(values((5, 4), genesis.float32, rng), genesis.float32, requires_grad=True)
    idx = long_pair(rng.integers(0, 6, (5, 4)))
    for reduce in (None, "add"):
        if reduce is None:
            idx = long_pair(np.stack([rng.permutation(6)[:5] for _ in range(4)], 1))
            out_g = x[0].scatter(0, idx[0], src[0])
            out_t = x[1].scatter(0, idx[1], src[1])
        else:
            out_g = x[0].scatter(0, idx[0], src[0], reduce=reduce)
            out_t = x[1].scatter_add(0, idx[1], src[1])
        out_g.sum().backward()
        out_t.sum().backward()
    assert_close(x[0].grad, x[1].grad)
    assert_close(src[0].grad, src[1].grad)
    rows = long_pair(rng.integers(0, 6, 7))
    v = pair(values((7, 4), genesis.float32, rng), genesis.float32, requires_grad=True)
    (x[0].index_put((rows[0],), v[0], accumulate=True) * 3).sum().backward()
    (x[1].index_put((rows[1],), v[1], accumulate=True) * 3).sum().backward()
    assert_close(v[0].grad, v[1].grad)
    assert_close(x[0].grad, x[1].grad)


def test_gradcheck_float64(rng):
    x = genesis.tensor(rng.standard_normal((4, 3)), device=DEVICE, requires_grad=True)
    i = genesis.tensor(rng.integers(0, 4, 6), device=DEVICE)
    assert genesis.autograd.gradcheck(lambda t: t[i] * t[i], (x,))
    assert genesis.autograd.gradcheck(lambda t: t.gather(0, i.reshape(2, 3) % 4).sin(), (x,))
    assert genesis.autograd.gradgradcheck(lambda t: t.index_select(0, i).square(), (x,))
