"""Reductions against PyTorch: values, dtypes, keepdim, gradients, empty and 0-d inputs."""

import numpy as np
import pytest
import torch

import genesis
from helpers import ALL_DTYPES, FLOAT_DTYPES, TORCH_DTYPES, assert_close, make_pair, to_torch

DIMS = [None, 0, -1, (0, 2), [1, -1], ()]


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("keepdim", [False, True])
def test_sum_forward(dtype, dim, keepdim, rng):
    g, t = make_pair((3, 5, 4), dtype, rng=rng)
    assert_close(g.sum(dim=dim, keepdim=keepdim), t.sum(dim=dim, keepdim=keepdim))


@pytest.mark.parametrize("dtype", [genesis.float32, genesis.float64, genesis.int32])
def test_sum_dtype_argument(dtype, rng):
    g, t = make_pair((4, 3), genesis.int16, rng=rng)
    assert_close(genesis.sum(g, 1, dtype=dtype), torch.sum(t, 1, dtype=TORCH_DTYPES[dtype]))


@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("keepdim", [False, True])
def test_sum_backward(dim, keepdim, rng):
    g, t = make_pair((3, 5, 4), requires_grad=True, rng=rng)
    w = rng.standard_normal(t.sum(dim=dim, keepdim=keepdim).shape).astype(np.float32)
    (g.sum(dim=dim, keepdim=keepdim) * genesis.tensor(w)).sum().backward()
    (t.sum(dim=dim, keepdim=keepdim) * torch.tensor(w)).sum().backward()
    assert_close(g.grad, t.grad)


def test_sum_noncontiguous_and_gradcheck(rng):
    x = genesis.tensor(rng.standard_normal((4, 3, 5)), requires_grad=True)
    assert genesis.autograd.gradcheck(lambda a: a.permute(2, 0, 1).sum((0, 2)), (x,)) \
        if hasattr(x, "permute") else genesis.autograd.gradcheck(lambda a: a.sum((0, 2)), (x,))
    assert genesis.autograd.gradgradcheck(lambda a: (a.sum(1, keepdim=True) * a).sum(0), (x,))


@pytest.mark.parametrize("shape,dim", [((), None), ((), 0), ((), -1), ((0,), None), ((2, 0), 1),
                                       ((2, 0), 0)])
def test_sum_zero_dim_and_empty(shape, dim, rng):
    g, t = make_pair(shape, rng=rng)
    assert_close(g.sum() if dim is None else g.sum(dim), t.sum() if dim is None else t.sum(dim))


def test_sum_errors():
    x = genesis.zeros(2, 3)
    with pytest.raises(IndexError, match="sum"):
        x.sum(2)
    with pytest.raises(RuntimeError, match="multiple times"):
        x.sum((1, -1))
