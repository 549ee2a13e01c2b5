"""The fused LayerNorm/RMSNorm path (nn/functional/fused_norm.py) on the CPU, against torch.

The CPU backend has no fused norm kernels, so these tests register numpy stand-ins that follow
the CUDA kernels' contract (kernels/norm.py): the same autograd Function, hooks and argument
plumbing run as on a GPU, first-order gradients through the "backward kernel", higher-order ones
through the genesis-op formulas.
"""

import numpy as np
import pytest
import torch.nn.functional as TF
from helpers import assert_close, make_pair

import genesis
import genesis.nn.functional as F
from genesis import dispatch
from genesis.autograd import gradcheck, gradgradcheck


def _stats(x, n, rms, eps):
    rows = x.reshape(-1, n).astype(np.float64)
    mean = np.zeros(len(rows)) if rms else rows.mean(1)
    var = (rows * rows).mean(1) if rms else rows.var(1)
    return rows, mean, 1.0 / np.sqrt(var + eps)


def _vector(v, n):
    return np.ones(n) if v is None else v.reshape(-1).astype(np.float64)


def _forward(x, w, b, nd, eps, rms):
    n = int(np.prod(x.shape[x.ndim - nd:]))
    rows, mean, rstd = _stats(x, n, rms, eps)
    y = (rows - mean[:, None]) * rstd[:, None] * _vector(w, n)
    if b is not None:
        y += _vector(b, n)
    stats = np.float64 if x.dtype == np.float64 else np.float32
    return y.reshape(x.shape).astype(x.dtype), mean.astype(stats), rstd.astype(stats)


def _backward(dy, x, w, mean, rstd, nd, need_w, need_b):
    n = int(np.prod(x.shape[x.ndim - nd:]))
    xhat = (x.reshape(-1, n).astype(np.float64) - mean[:, None]) * rstd[:, None]
    g = dy.reshape(-1, n).astype(np.float64)
    wg = g * _vector(w, n)
    c2 = wg.mean(1, keepdims=True) if mean.any() else 0.0
    dx = (wg - xhat * (xhat * wg).mean(1, keepdims=True) - c2) * rstd[:, None]
    shape = x.shape[x.ndim - nd:]
    dw = (g * xhat).sum(0).reshape(shape).astype(w.dtype) if need_w else None
    db = g.sum(0).reshape(shape).astype(x.dtype) if need_b else None
    return dx.reshape(x.shape).astype(x.dtype), dw, db


STAND_INS = {
    "layer_norm_fwd": lambda x, w, b, nd, eps: _forward(x, w, b, nd, eps, False),
    "layer_norm_bwd": _backward,
    "rms_norm_fwd": lambda x, w, nd, eps: _forward(x, w, None, nd, eps, True)[::2],
    "rms_norm_bwd": lambda dy, x, w, rstd, nd, need_w: _backward(
        dy, x, w, np.zeros_like(rstd), rstd, nd, need_w, False)[:2],
}


@pytest.fixture
def fused(monkeypatch):
    """The stand-ins registered as CPU kernels, counting their calls."""
    calls = []
    for name, fn in STAND_INS.items():
        def counted(*args, _fn=fn, _name=name):
            calls.append(_name)
            return _fn(*args)
        monkeypatch.setitem(dispatch._KERNELS, (name, "cpu"), counted)
    return calls


def _torch_norm(t, shape, w, b, eps, rms):
    """torch's layer_norm, or rms_norm (which takes no bias)."""
    if rms:
        return TF.rms_norm(t, shape, w, eps)
    return TF.layer_norm(t, shape, w, b, eps)


@pytest.mark.parametrize("rms", [False, True])
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("dtype", [genesis.float32, genesis.bfloat16], ids=str)
@pytest.mark.parametrize("shape,nd", [((4, 5, 6), 1), ((3, 4, 5), 2), ((7,), 1)], ids=str)
def test_fused_norm_matches_torch(fused, rms, affine, dtype, shape, nd, rng):
    """Against torch in float64 on the same values, rounded once: what the fused kernels
    compute (torch's bfloat16 CPU backward rounds at every step)."""
    norm_shape = shape[len(shape) - nd:]
    pairs = [make_pair(shape, dtype, rng=rng)]
    pairs += [make_pair(norm_shape, dtype, rng=rng) if affine else (None, None)]
    pairs += [make_pair(norm_shape, dtype, rng=rng) if affine and not rms else (None, None)]
    mine = [t if t is None else t.requires_grad_() for t, _ in pairs]
    exact = [t if t is None else t.double().requires_grad_() for _, t in pairs]
    x, w, b = mine
    out = F.rms_norm(x, norm_shape, w, 1e-5) if rms else F.layer_norm(x, norm_shape, w, b, 1e-5)
    expected = _torch_norm(*exact[:1], norm_shape, *exact[1:], 1e-5, rms)
    assert_close(out, expected.to(pairs[0][1].dtype))
    g, tg = make_pair(shape, dtype, rng=rng)
    out.backward(g)
    expected.backward(tg.double())
    for t, e, (_, ref) in zip(mine, exact, pairs):
        if t is not None:
            assert_close(t.grad, e.grad.to(ref.dtype))
    assert fused and fused[-1].endswith("_bwd")


@pytest.mark.parametrize("rms", [False, True])
def test_fused_norm_second_order(fused, rms, rng):
    x = genesis.tensor(rng.uniform(-1, 1, (3, 4)), dtype=genesis.float64, requires_grad=True)
    w = genesis.tensor(rng.uniform(0.5, 1.5, (4,)), dtype=genesis.float64, requires_grad=True)
    b = genesis.tensor(rng.uniform(-1, 1, (4,)), dtype=genesis.float64, requires_grad=True)
    if rms:
        fn, inputs = (lambda x, w: F.rms_norm(x, (4,), w, 1e-5)), (x, w)
    else:
        fn, inputs = (lambda x, w, b: F.layer_norm(x, (4,), w, b, 1e-5)), (x, w, b)
    assert gradcheck(fn, inputs)
    assert gradgradcheck(fn, inputs)
