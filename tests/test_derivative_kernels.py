"""The fused activation-gradient kernels against PyTorch's own backward ops (aten), per dtype.

These kernels (relu_backward, tanh_backward, gelu_backward, ...) give a unary op's gradient in one launch when
no graph of the backward is recorded; each must match PyTorch's kernel of the same name. Half
types are compared with that kernel run in float32 and rounded once, as PyTorch's CUDA kernels
compute them (its CPU kernels round some of them after every step).
"""

import pytest
import torch
from helpers import FLOAT_DTYPES, TORCH_DTYPES, assert_close, from_torch

import genesis
from genesis import Tensor
from genesis.dispatch import kernel

HALF = (genesis.float16, genesis.bfloat16)
ATEN = {
    "relu_backward": lambda g, v: torch.ops.aten.threshold_backward(g, v, 0),
    "tanh_backward": lambda g, v: torch.ops.aten.tanh_backward(g, v),
    "sigmoid_backward": lambda g, v: torch.ops.aten.sigmoid_backward(g, v),
    "silu_backward": lambda g, v: torch.ops.aten.silu_backward(g, v),
    "gelu_backward": lambda g, v: torch.ops.aten.gelu_backward(g, v),
    "gelu_tanh_backward": lambda g, v: torch.ops.aten.gelu_backward(g, v, approximate="tanh"),
}


def _operand(name, shape, dtype, rng):
    """Random values in the op's domain: outputs of tanh/sigmoid for theirs, inputs otherwise."""
    values = torch.from_numpy(rng.uniform(-4, 4, shape))
    if name == "relu_backward":  # relu's outputs, zeros among them, and a NaN
        values = values.relu()
        if values.numel():
            values.view(-1)[0] = float("nan")
    elif name == "tanh_backward":
        values = values.tanh()
    elif name == "sigmoid_backward":
        values = values.sigmoid()
    return values.to(dtype)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("name", sorted(ATEN))
@pytest.mark.parametrize("shape", [(), (0,), (7,), (33, 65)], ids=str)
def test_matches_aten(name, dtype, shape, rng, device):
    torch_dtype = TORCH_DTYPES[dtype]
    g = torch.from_numpy(rng.standard_normal(shape)).to(torch_dtype)
    v = _operand(name, shape, torch_dtype, rng)
    gg, gv = from_torch(g, device), from_torch(v, device)
    out = Tensor._make(kernel(name, gg.device.type)(gg._data, gv._data), gg.device)
    expected = ATEN[name](g.float(), v.float()).to(torch_dtype) if dtype in HALF \
        else ATEN[name](g, v)
    assert_close(out, expected)
