"""sort, argsort, topk, unique and median on "cuda" against PyTorch on the CPU.

Every dtype, ascending and descending (stable: indices must match torch's stable sort exactly),
NaN/inf/-0 and heavy ties, each dim of 3-d inputs, transposed and stepped views, row lengths
around the block sizes (1, 2, 1023, 1025, 2048, 2049, 5000, 100003), empty and 0-d inputs, and
gradients. Skipped without a GPU.
"""

import numpy as np
import pytest
import torch
from helpers import ALL_DTYPES, FLOAT_DTYPES, assert_close, lay_out, skip_no_cuda, to_torch

import genesis

pytestmark = skip_no_cuda


def sample(shape, dtype, rng):
    """Values with many ties; floats with NaN, +-inf and +-0 mixed in."""
    if dtype is genesis.bool:
        arr = rng.random(shape) < 0.5
    elif dtype.is_floating_point:
        pool = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.5, -2.25, 3.0])
        arr = rng.choice(pool, size=shape)
        spread = rng.random(shape) < 0.5
        arr[spread] = rng.normal(size=int(spread.sum())) * 100
    else:
        arr = rng.integers(0 if dtype is genesis.uint8 else -5, 6, size=shape)
    host = genesis.tensor(arr, dtype=dtype)
    return host.to("cuda"), to_torch(host)


def assert_exact(actual, expected):
    """Same shape, dtype and values (NaN where torch has NaN)."""
    assert_close(actual, expected, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("length", [1, 2, 1023, 1025, 5000])
def test_sort_dtypes_lengths(dtype, descending, length, rng):
    g, t = sample((3, length), dtype, rng)
    values, indices = genesis.sort(g, dim=1, descending=descending, stable=True)
    expected = torch.sort(t, dim=1, descending=descending, stable=True)
    assert_exact(values, expected.values)
    assert_exact(indices, expected.indices)


@pytest.mark.parametrize("dtype", [genesis.float32, genesis.int64, genesis.float16,
                                   genesis.float64], ids=str)
@pytest.mark.parametrize("length", [2049, 100003])
def test_sort_long_rows(dtype, length, rng):
    g, t = sample((2, length), dtype, rng)
    for descending in (False, True):
        values, indices = genesis.sort(g, descending=descending)
        expected = torch.sort(t, descending=descending, stable=True)
        assert_exact(values, expected.values)
        assert_exact(indices, expected.indices)


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "stepped", "expanded"])
def test_sort_dims_and_layouts(dim, layout, rng):
    g, _ = sample((5, 6, 7), genesis.float32, rng)
    g = lay_out(g, layout)
    t = to_torch(g)
    values, indices = genesis.sort(g, dim=dim, descending=dim == 1)
    expected = torch.sort(t, dim=dim, descending=dim == 1, stable=True)
    assert_exact(values, expected.values)
    assert_exact(indices, expected.indices)


def test_sort_many_dims_view(rng):
    g, _ = sample((3, 4, 5, 6, 7), genesis.int32, rng)
    g = g.permute(4, 2, 0, 3, 1)[:, ::2]
    t = to_torch(g)
    for dim in range(5):
        values, indices = genesis.sort(g, dim=dim)
        expected = torch.sort(t, dim=dim, stable=True)
        assert_exact(values, expected.values)
        assert_exact(indices, expected.indices)


@pytest.mark.parametrize("shape,dim", [((0,), 0), ((4, 0), 1), ((0, 5), 1), ((), 0)])
def test_sort_empty_and_scalar(shape, dim, rng):
    g, t = sample(shape, genesis.float32, rng)
    values, indices = genesis.sort(g, dim=dim)
    expected = torch.sort(t, dim=dim)
    assert_exact(values, expected.values)
    assert_exact(indices, expected.indices)
    assert_exact(genesis.argsort(g, dim=dim, descending=True),
                 torch.argsort(t, dim=dim, descending=True, stable=True))


@pytest.mark.parametrize("dtype", [genesis.float32, genesis.bfloat16, genesis.int64,
                                   genesis.uint8], ids=str)
@pytest.mark.parametrize("length,k", [(1, 1), (10, 3), (1000, 1000), (5000, 1), (5000, 50),
                                      (100003, 7), (100003, 1500), (5000, 4000)])
@pytest.mark.parametrize("largest", [True, False])
def test_topk(dtype, length, k, largest, rng):
    g, t = sample((2, length), dtype, rng)
    values, indices = genesis.topk(g, k, dim=1, largest=largest)
    expected = torch.sort(t, dim=1, descending=largest, stable=True)
    assert_exact(values, expected.values[:, :k])
    assert_exact(indices, expected.indices[:, :k])
    assert_exact(values, torch.topk(t, k, dim=1, largest=largest).values)


def test_topk_strided_dim0_and_kthvalue(rng):
    g, _ = sample((300, 9), genesis.float32, rng)
    g = lay_out(g, "stepped")
    t = to_torch(g)
    values, indices = genesis.topk(g, 5, dim=0)
    expected = torch.sort(t, dim=0, descending=True, stable=True)
    assert_exact(values, expected.values[:5])
    assert_exact(indices, expected.indices[:5])
    assert_exact(genesis.kthvalue(g, 3, dim=0).values, torch.kthvalue(t, 3, dim=0).values)


@pytest.mark.parametrize("op", ["sort", "topk"])
def test_gradients(op, rng):
    """Distinct values: where two are equal, which one receives which output's gradient depends
    on the order the sort puts them in (float32 normals tie now and then in 1500 a row)."""
    distinct = rng.permutation(6000).reshape(4, 1500) / 1000 - 3
    g = genesis.tensor(distinct, dtype=genesis.float32, device="cuda")
    t = to_torch(g).requires_grad_(True)
    g.requires_grad_(True)
    weight = rng.normal(size=(4, 1500 if op == "sort" else 20))
    if op == "sort":
        out, expected = genesis.sort(g, dim=1, descending=True).values, t.sort(1, True).values
    else:
        out, expected = genesis.topk(g, 20, dim=1).values, t.topk(20, 1).values
    (out * genesis.tensor(weight, dtype=genesis.float32, device="cuda")).sum().backward()
    (expected * torch.tensor(weight, dtype=torch.float32)).sum().backward()
    assert_close(g.grad, t.grad)


def test_sort_gradcheck(rng):
    x = genesis.tensor(rng.normal(size=(3, 40)), dtype=genesis.float64, device="cuda",
                       requires_grad=True)
    assert genesis.autograd.gradcheck(lambda a: genesis.sort(a, dim=1).values, (x,))
    assert genesis.autograd.gradcheck(lambda a: genesis.topk(a, 5, dim=1).values, (x,))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("length", [1, 50, 3000])
def test_unique(dtype, length, rng):
    """Each NaN is a value of its own, as in torch; torch orders the NaNs arbitrarily (its sort
    is not stable there), genesis by position, so their inverse indices are compared as sets."""
    g, t = sample((length,), dtype, rng)
    nan = torch.isnan(t) if t.is_floating_point() else torch.zeros(t.shape, dtype=torch.bool)
    values, inverse, counts = genesis.unique(g, return_inverse=True, return_counts=True)
    expected = torch.unique(t, return_inverse=True, return_counts=True)
    assert_exact(values, expected[0])
    assert_exact(counts, expected[2])
    actual_inverse = to_torch(inverse)
    assert torch.equal(actual_inverse[~nan], expected[1][~nan])
    assert torch.equal(actual_inverse[nan].sort().values, expected[1][nan].sort().values)
    assert_exact(genesis.unique(g), expected[0])


@pytest.mark.parametrize("dim", [0, 1])
def test_unique_dim(dim, rng):
    g, _ = sample((40, 3), genesis.int64, rng)
    g = g // 3
    g = g if dim == 0 else g.t()
    t = to_torch(g)
    values, inverse, counts = genesis.unique(g, return_inverse=True, return_counts=True, dim=dim)
    expected = torch.unique(t, return_inverse=True, return_counts=True, dim=dim)
    for a, e in zip((values, inverse, counts), expected):
        assert_exact(a, e)


def test_unique_multidim_and_empty(rng):
    g, t = sample((7, 9, 4), genesis.int16, rng)
    g = lay_out(g, "transposed")
    t = to_torch(g)
    values, inverse = genesis.unique(g, return_inverse=True)
    expected = torch.unique(t, return_inverse=True)
    assert_exact(values, expected[0])
    assert_exact(inverse, expected[1])
    g, t = sample((0, 3), genesis.float32, rng)
    assert_exact(genesis.unique(g), torch.unique(t))


def _check_median_dim(g, t, dim, keepdim):
    values, indices = genesis.median(g, dim=dim, keepdim=keepdim)
    expected = torch.median(t, dim=dim, keepdim=keepdim)
    assert_exact(values, expected.values)
    cpu = genesis.median(g.cpu(), dim=dim, keepdim=keepdim)
    assert_exact(indices, to_torch(cpu.indices))
    picked = torch.gather(t, dim, to_torch(indices) if keepdim
                          else to_torch(indices).unsqueeze(dim))
    assert_exact(values, picked if keepdim else picked.squeeze(dim))


@pytest.mark.parametrize("dtype", [d for d in ALL_DTYPES if d is not genesis.bool], ids=str)
@pytest.mark.parametrize("length", [1, 2, 7, 1024, 5001])
def test_median_dim(dtype, length, rng):
    g, t = sample((3, length), dtype, rng)
    _check_median_dim(g, t, 1, False)
    _check_median_dim(g, t, 0, True)


@pytest.mark.parametrize("layout", ["transposed", "stepped"])
def test_median_layouts_and_all(layout, rng):
    g, _ = sample((6, 5, 9), genesis.float32, rng)
    g = lay_out(g, layout)
    t = to_torch(g)
    for dim in range(3):
        _check_median_dim(g, t, dim, dim == 2)
    assert_exact(genesis.median(g), torch.median(t))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + [genesis.int32], ids=str)
@pytest.mark.parametrize("length", [0, 1, 2, 10, 4097])
def test_median_all(dtype, length, rng):
    g, t = sample((length,), dtype, rng)
    if dtype is genesis.int32 and length == 0:
        pytest.skip("torch rejects the median of an empty integer tensor")
    assert_exact(genesis.median(g), torch.median(t))


def test_median_gradient(rng):
    x = genesis.tensor(rng.normal(size=(5, 31)), dtype=genesis.float64, device="cuda",
                       requires_grad=True)
    assert genesis.autograd.gradcheck(lambda a: genesis.median(a, dim=1).values, (x,))
