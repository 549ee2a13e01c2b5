"""The device-agnostic halves of the CUDA matmul paths, checked on the CPU: the fused linear
Function (F.linear / linear_activation through a backend's "linear_act" kernel; here a numpy
stand-in registered for the test) and einsum by permute/reshape/matmul (the path devices
without an einsum kernel take), against PyTorch, with gradients to second order."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from helpers import assert_close, make_pair, torch_act

import genesis
import genesis.nn.functional as F
from genesis import dispatch
from genesis.autograd import gradcheck, gradgradcheck
from genesis.nn.functional.linear import linear_activation
from genesis.ops import linalg

_erf = np.vectorize(math.erf)
NP_ACTS = {None: lambda z: z, "relu": lambda z: np.maximum(z, 0),
           "gelu": lambda z: 0.5 * z * (1 + _erf(z / math.sqrt(2))),
           "gelu_tanh": lambda z: 0.5 * z * (1 + np.tanh(math.sqrt(2 / math.pi)
                                                          * (z + 0.044715 * z ** 3))),
           "silu": lambda z: z / (1 + np.exp(-z))}
ACTS = list(NP_ACTS)


@pytest.fixture
def fused(monkeypatch):
    """A CPU "linear_act" kernel with the CUDA kernel's contract; records its calls."""
    calls = []

    def linear_act(x, weight, bias, activation, keep_preactivation, allow_tf32=None):
        calls.append((activation, keep_preactivation))
        z = np.matmul(x.astype(np.float64), weight.T.astype(np.float64))
        if bias is not None:
            z = z + bias
        y = NP_ACTS[activation](z).astype(x.dtype)
        keep = keep_preactivation and activation is not None
        return y, z.astype(x.dtype) if keep else None

    monkeypatch.setitem(dispatch._KERNELS, ("linear_act", "cpu"), linear_act)
    return calls


@pytest.mark.parametrize("activation", ACTS, ids=str)
@pytest.mark.parametrize("shape", [(7,), (5, 7), (2, 3, 7)], ids=str)
@pytest.mark.parametrize("with_bias", [True, False])
def test_linear_activation_matches_torch(fused, activation, shape, with_bias, rng):
    x, tx = make_pair(shape, genesis.float64, requires_grad=True, rng=rng)
    w, tw = make_pair((4, 7), genesis.float64, requires_grad=True, rng=rng)
    b, tb = make_pair((4,), genesis.float64, requires_grad=True, rng=rng) if with_bias \
        else (None, None)
    out = linear_activation(x, w, b, activation)
    expected = torch_act(TF.linear(tx, tw, tb), activation)
    assert_close(out, expected)
    assert fused == [(activation, activation is not None)]
    g = rng.uniform(-1, 1, tuple(expected.shape))
    out.backward(genesis.tensor(g))
    expected.backward(torch.tensor(g))
    for a, t in ((x, tx), (w, tw), (b, tb)):
        if a is not None:
            assert_close(a.grad, t.grad)


@pytest.mark.parametrize("activation", ACTS, ids=str)
def test_linear_activation_gradcheck(fused, activation, rng):
    x = genesis.tensor(rng.uniform(-2, 2, (3, 5)), requires_grad=True)
    w = genesis.tensor(rng.uniform(-1, 1, (4, 5)), requires_grad=True)
    b = genesis.tensor(rng.uniform(-1, 1, (4,)), requires_grad=True)
    fn = lambda x, w, b: linear_activation(x, w, b, activation)  # noqa: E731
    assert gradcheck(fn, (x, w, b))
    if activation != "relu":
        assert gradgradcheck(fn, (x, w, b))


def test_linear_uses_the_fused_kernel_with_bias_only(fused, rng):
    x, tx = make_pair((6, 3), genesis.float32, rng=rng)
    w, tw = make_pair((2, 3), genesis.float32, rng=rng)
    b, tb = make_pair((2,), genesis.float32, rng=rng)
    assert_close(F.linear(x, w, b), TF.linear(tx, tw, tb))
    assert fused == [(None, False)]


def test_no_preactivation_kept_without_grad(fused, rng):
    x, w = genesis.randn(2, 3), genesis.randn(4, 3)
    linear_activation(x, w, None, "gelu")
    assert fused == [("gelu", False)]


def test_unfusable_operands_take_the_composed_path(fused, rng):
    x = genesis.randn(2, 3)
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        F.linear(x, genesis.randn(4, 5))
    with pytest.raises(RuntimeError):
        F.linear(x, genesis.randn(4, 3, dtype=genesis.float64))
    out = F.linear(genesis.arange(6).reshape(2, 3), genesis.arange(12).reshape(4, 3))
    assert out.dtype is genesis.int64
    assert fused == []
    with pytest.raises(ValueError, match="activation must be one of"):
        linear_activation(x, genesis.randn(4, 3), None, "tanh")


def test_cpu_without_the_kernel_is_unchanged(rng):
    x, tx = make_pair((4, 3), genesis.float32, requires_grad=True, rng=rng)
    w, tw = make_pair((5, 3), genesis.float32, requires_grad=True, rng=rng)
    assert_close(linear_activation(x, w, None, "silu"), TF.silu(TF.linear(tx, tw)))


EINSUMS = [("ij,jk->ik", [(3, 4), (4, 5)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
           ("ii->i", [(4, 4)]), ("ii", [(4, 4)]), ("ij->ji", [(3, 4)]), ("ij->ij", [(3, 4)]),
           ("i,i->", [(5,), (5,)]), ("i,j->ij", [(3,), (4,)]),
           ("abc,cd,de->abe", [(2, 3, 4), (4, 5), (5, 6)]), ("iij,jk->ik", [(3, 3, 4), (4, 2)]),
           ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]), ("...ij,...jk", [(2, 3, 4), (4, 5)]),
           ("ij,jk->", [(0, 3), (3, 2)]), ("ijk->", [(2, 0, 3)]), ("ij,kj->ikj", [(2, 3), (4, 3)]),
           ("ab,ab,ab->a", [(3, 2), (3, 2), (3, 2)])]


@pytest.mark.parametrize("equation,shapes", EINSUMS, ids=[e for e, _ in EINSUMS])
def test_einsum_by_matmul_matches_torch(monkeypatch, equation, shapes, rng):
    monkeypatch.setattr(linalg, "has_kernel", lambda op, device_type: False)
    pairs = [make_pair(s, genesis.float64, requires_grad=True, rng=rng) for s in shapes]
    out = genesis.einsum(equation, *(g for g, _ in pairs))
    expected = torch.einsum(equation, *(t for _, t in pairs))
    assert_close(out, expected)
    assert all(out._storage is not g._storage for g, _ in pairs)
    if out.numel():
        g = rng.uniform(-1, 1, tuple(expected.shape))
        out.backward(genesis.tensor(g))
        expected.backward(torch.tensor(g))
        for a, t in pairs:
            assert_close(a.grad, t.grad)


@pytest.mark.parametrize("dtype", [genesis.float32, genesis.bfloat16, genesis.int32], ids=str)
def test_einsum_by_matmul_keeps_the_dtype(monkeypatch, dtype, rng):
    monkeypatch.setattr(linalg, "has_kernel", lambda op, device_type: False)
    (a, ta), (b, tb) = make_pair((3, 4), dtype, rng=rng), make_pair((4,), dtype, rng=rng)
    out = genesis.einsum("ij,j->i", a, b)
    assert out.dtype is dtype
    expected = torch.einsum("ij,j->i", ta.double(), tb.double())
    assert_close(out, expected.to(ta.dtype), check_dtype=False)


def test_einsum_by_matmul_integers_summed_first(monkeypatch, rng):
    """A label summed alone (integer sums widen to int64) keeps the operands' dtype."""
    monkeypatch.setattr(linalg, "has_kernel", lambda op, device_type: False)
    (a, ta), (b, tb) = make_pair((3, 4, 2), genesis.int32, rng=rng), \
        make_pair((4,), genesis.int32, rng=rng)
    out = genesis.einsum("ijk,j->i", a, b)
    assert out.dtype is genesis.int32
    assert_close(out, torch.einsum("ijk,j->i", ta.long(), tb.long()).int())
