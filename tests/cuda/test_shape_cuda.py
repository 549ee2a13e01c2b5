"""cat/stack, flip, roll, tril and triu on "cuda" against PyTorch on the CPU.

Every dtype, transposed/stepped/expanded views, each dim, negative and oversized shifts,
diagonals on both sides, cat of few and of many inputs with mixed layouts and empty inputs,
and gradients through each op. Skipped without a GPU.
"""

import pytest
import torch
from helpers import ALL_DTYPES, assert_close, lay_out, skip_no_cuda, to_torch

import genesis

pytestmark = skip_no_cuda

LAYOUTS = ["contiguous", "transposed", "stepped", "expanded"]


def sample(shape, dtype, rng, layout="contiguous"):
    """(genesis tensor on cuda laid out as `layout`, torch CPU tensor with its values)."""
    if dtype is genesis.bool:
        arr = rng.random(shape) < 0.5
    elif dtype.is_floating_point:
        arr = rng.normal(size=shape) * 10
    else:
        arr = rng.integers(0 if dtype is genesis.uint8 else -50, 50, size=shape)
    g = lay_out(genesis.tensor(arr, dtype=dtype, device="cuda"), layout)
    return g, to_torch(g)


def assert_exact(actual, expected):
    assert_close(actual, expected, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_flip_roll_triangles_dtypes(dtype, layout, rng):
    g, t = sample((5, 6, 1031), dtype, rng, layout)
    assert_exact(genesis.flip(g, (0, 2)), torch.flip(t, (0, 2)))
    assert_exact(genesis.roll(g, (3, -2), (2, 0)), torch.roll(t, (3, -2), (2, 0)))
    assert_exact(genesis.tril(g, 1), torch.tril(t, 1))
    assert_exact(genesis.triu(g, -3), torch.triu(t, -3))


@pytest.mark.parametrize("dims", [(0,), (1,), (2,), (-1, 0), (0, 1, 2), ()])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_flip(dims, layout, rng):
    g, t = sample((4, 7, 9), genesis.float32, rng, layout)
    assert_exact(genesis.flip(g, dims), torch.flip(t, dims))


def test_flip_helpers_and_scalar(rng):
    g, t = sample((6, 8), genesis.int64, rng)
    assert_exact(genesis.fliplr(g), torch.fliplr(t))
    assert_exact(genesis.flipud(g), torch.flipud(t))
    g, t = sample((), genesis.float32, rng)
    assert_exact(genesis.flip(g, ()), torch.flip(t, ()))
    g, t = sample((0, 3), genesis.float32, rng)
    assert_exact(genesis.flip(g, (0, 1)), torch.flip(t, (0, 1)))


@pytest.mark.parametrize("shifts,dims", [(1, 0), (-4, 1), (1000003, 2), ((2, 3), (0, 2)),
                                         ((1, 1), (1, 1)), (5, None), ((1, -1, 2), (0, 1, 2))])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_roll(shifts, dims, layout, rng):
    g, t = sample((4, 7, 9), genesis.float32, rng, layout)
    assert_exact(genesis.roll(g, shifts, dims), torch.roll(t, shifts, dims))


def test_roll_large_and_empty(rng):
    g, t = sample((3, 100003), genesis.bfloat16, rng)
    assert_exact(genesis.roll(g, 77777, 1), torch.roll(t, 77777, 1))
    g, t = sample((0, 4), genesis.float32, rng)
    assert_exact(genesis.roll(g, 1, 1), torch.roll(t, 1, 1))


@pytest.mark.parametrize("op", ["tril", "triu"])
@pytest.mark.parametrize("k", [-5, -1, 0, 2, 10])
@pytest.mark.parametrize("shape", [(1, 1), (5, 9), (9, 5), (2, 3, 33, 17), (0, 4)])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "stepped"])
def test_triangles(op, k, shape, layout, rng):
    g, t = sample(shape, genesis.float16, rng, layout)
    assert_exact(getattr(genesis, op)(g, k), getattr(torch, op)(t, k))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("dim", [0, 1, 2, -1])
@pytest.mark.parametrize("count", [1, 2, 3, 40])
def test_cat(dtype, dim, count, rng):
    gs, ts = [], []
    for i in range(count):
        shape = [3, 4, 5]
        shape[dim] = int(rng.integers(0, 5)) if i % 4 else 2
        g, t = sample(tuple(shape), dtype, rng, LAYOUTS[i % 3])
        gs.append(g)
        ts.append(t)
    assert_exact(genesis.cat(gs, dim), torch.cat(ts, dim))


def test_cat_large_and_mixed(rng):
    parts = [sample((2049, 300), genesis.float32, rng, layout) for layout in
             ("contiguous", "transposed", "stepped", "contiguous", "expanded")]
    parts += [sample((1, 300), genesis.float32, rng) for _ in range(100)]
    gs, ts = zip(*parts)
    assert_exact(genesis.cat(gs, 0), torch.cat(ts, 0))
    gs = [g.t() for g in gs]
    ts = [t.t() for t in ts]
    assert_exact(genesis.cat(gs, 1), torch.cat(ts, 1))


def test_cat_promotes_and_skips_legacy_empty(rng):
    a, ta = sample((3, 4), genesis.int32, rng)
    b, tb = sample((2, 4), genesis.float16, rng)
    e, te = sample((0,), genesis.float32, rng)
    assert_exact(genesis.cat([a, e, b, a], 0), torch.cat([ta, te, tb, ta], 0))
    assert_exact(genesis.cat([e, e], 0), torch.cat([te, te], 0))


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_stack(dim, rng):
    parts = [sample((3, 5), genesis.bfloat16, rng, LAYOUTS[i % 4]) for i in range(7)]
    gs, ts = zip(*parts)
    assert_exact(genesis.stack(gs, dim), torch.stack(ts, dim))


def _grad_pair(shape, rng):
    arr = rng.normal(size=shape)
    g = genesis.tensor(arr, dtype=genesis.float64, device="cuda", requires_grad=True)
    return g, torch.tensor(arr, requires_grad=True)


@pytest.mark.parametrize("op", ["flip", "roll", "tril", "triu", "cat", "stack"])
def test_gradients(op, rng):
    g, t = _grad_pair((4, 6, 5), rng)
    g2, t2 = _grad_pair((4, 6, 5), rng)
    fns = {"flip": lambda m, a, b: m.flip(a, (0, 2)),
           "roll": lambda m, a, b: m.roll(a, (2, -1), (1, 2)),
           "tril": lambda m, a, b: m.tril(a, -1),
           "triu": lambda m, a, b: m.triu(a, 2),
           "cat": lambda m, a, b: m.cat([a, b, a], 1),
           "stack": lambda m, a, b: m.stack([a, b, b], 2)}
    out, expected = fns[op](genesis, g, g2), fns[op](torch, t, t2)
    weight = rng.normal(size=tuple(expected.shape))
    (out * genesis.tensor(weight, dtype=genesis.float64, device="cuda")).sum().backward()
    (expected * torch.tensor(weight)).sum().backward()
    assert_close(g.grad, t.grad)
    if op in ("cat", "stack"):
        assert_close(g2.grad, t2.grad)
    assert genesis.autograd.gradcheck(lambda a, b: fns[op](genesis, a, b), (g, g2))
