"""With genesis.backends.cudnn.allow_tf32 on (the default, as torch's), a float32 Conv2d and an
LSTM on the GPU run TF32 products, forward and backward, and match torch's float64 results on
the same values within TF32's rounding.

TF32 keeps 10 of float32's 23 mantissa bits of each operand (2**-11 relative when rounded,
2**-10 truncated), and over a sum of K products the errors grow about as sqrt(K). The bound, per
tensor: max |genesis - torch| <= 2**-11 * sqrt(K) * max |torch|, K the inner dimension of the
products behind the tensor (about 1e-2 of the largest value here). TF32 emulated on the CPU
(operands truncated, products exact) stays 4 to 15 times inside it."""

import numpy as np
import pytest
import torch
from helpers import from_torch, skip_no_cuda

import genesis

pytestmark = [skip_no_cuda]


@pytest.fixture(autouse=True)
def _tf32(monkeypatch):
    monkeypatch.setattr(genesis.backends.cudnn, "allow_tf32", True)
    monkeypatch.setattr(genesis.backends.cuda.matmul, "allow_tf32", False)


def _output(layer, x):
    out = layer(x)
    return out[0] if isinstance(out, tuple) else out


def _results(layer, x, out):
    return {"out": out, "x.grad": x.grad, **{k: p.grad for k, p in layer.named_parameters()}}


def _compare(g_layer, t_layer, x_shape, inner):
    """Forward and backward of torch's layer (float64 on the CPU) and Genesis's holding its
    float32 weights (float32 on the GPU) on the same input and output gradient; `inner` gives
    K of each tensor compared ("out", "x.grad", parameter names)."""
    g_layer = g_layer.to("cuda")
    g_layer.load_state_dict({k: from_torch(v, "cuda") for k, v in t_layer.state_dict().items()})
    t_layer = t_layer.double()
    x = torch.randn(x_shape)
    t_x = x.double().requires_grad_()
    t_out = _output(t_layer, t_x)
    grad = torch.randn(tuple(t_out.shape))
    t_out.backward(grad.double())
    g_x = from_torch(x, "cuda").requires_grad_()
    g_out = _output(g_layer, g_x)
    g_out.backward(from_torch(grad, "cuda"))
    expected, actual = _results(t_layer, t_x, t_out), _results(g_layer, g_x, g_out)
    for key, k in inner.items():
        got = actual[key].detach().cpu().numpy().astype(np.float64)
        want = expected[key].detach().numpy()
        bound = 2.0 ** -11 * np.sqrt(k) * np.abs(want).max()
        error = np.abs(got - want).max()
        assert error <= bound, f"{key}: max error {error:.3g} beyond {bound:.3g}"


def test_conv2d_runs_tf32_within_its_rounding():
    n, c, h, w = 4, 64, 16, 16
    _compare(genesis.nn.Conv2d(c, c, 3, padding=1), torch.nn.Conv2d(c, c, 3, padding=1),
             (n, c, h, w), {"out": c * 9, "x.grad": c * 9, "weight": n * h * w})


def test_lstm_runs_tf32_within_its_rounding():
    steps, batch, features, hidden = 32, 16, 128, 256
    layers = (features, hidden, 2)
    inner = {"out": hidden, "x.grad": 4 * hidden}
    inner.update({f"weight_{kind}_l{i}": steps * batch for kind in ("ih", "hh") for i in (0, 1)})
    _compare(genesis.nn.LSTM(*layers), torch.nn.LSTM(*layers), (steps, batch, features), inner)
