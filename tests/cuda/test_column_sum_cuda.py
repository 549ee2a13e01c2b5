"""Column sums on the GPU (kernels/column_sum.py: sums over leading dims with the kept dims
contiguous, a Linear layer's bias gradient) at GPT-2 small's sizes and odd ones, against
PyTorch on the CPU: within an ulp of the output dtype (plus what two float32 accumulations may
differ by), the exact sum rounded once where every float32 partial sum is exact, the same bits
on every call, on two streams and from a CUDA graph's replay."""

import numpy as np
import pytest
import torch
from helpers import on_two_streams, skip_no_cuda, to_torch, warm_up_on_side_stream

import genesis

pytestmark = skip_no_cuda

DTYPES = [genesis.float32, genesis.float16, genesis.bfloat16]
# (shape, dims): GPT-2 small's bias gradients (out, QKV and MLP projections) as a 2-D gradient
# and as a (batch, sequence, features) one; odd sizes; one row.
SHAPES = [((8192, 768), (0,)), ((8192, 2304), (0,)), ((8192, 3072), (0,)),
          ((8, 1024, 768), (0, 1)), ((1001, 333), (0,)), ((1, 768), (0,))]


def device_tensor(arr, dtype):
    return genesis.tensor(arr, dtype=dtype, device="cuda")


def reference(arr, dtype, dims):
    """PyTorch's CPU sum of the data as `dtype` holds it (float32 accumulation, rounded once)."""
    held = to_torch(genesis.tensor(arr, dtype=dtype))
    return held, held.sum(dims)


@pytest.mark.parametrize("shape,dims", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_within_an_ulp_of_pytorch_and_repeatable(shape, dims, dtype, rng):
    arr = rng.standard_normal(shape)
    held, want = reference(arr, dtype, dims)
    x = device_tensor(arr, dtype)
    got = to_torch(x.sum(dims))
    rows = held.numel() // max(want.numel(), 1)
    exp = want.double()
    ulp = torch.from_numpy(np.spacing(np.abs(exp.numpy()).astype(dtype.numpy_dtype))
                           .astype(np.float64))
    accumulation = 2 * rows * 2.0 ** -24 * held.double().abs().sum(dims)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert bool(((got.double() - exp).abs() <= ulp + accumulation).all())
    for _ in range(3):
        assert torch.equal(to_torch(x.sum(dims)), got)


@pytest.mark.parametrize("shape,dims", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_exact_sums_round_once(shape, dims, dtype, rng):
    """Eighths in [0.5, 1.5]: every float32 partial sum is exact, so the result is the exact
    sum rounded once, bit for bit."""
    arr = rng.integers(4, 13, shape) / 8
    held, _ = reference(arr, dtype, dims)
    got = to_torch(device_tensor(arr, dtype).sum(dims))
    assert torch.equal(got, held.double().sum(dims).to(held.dtype))


def test_half_input_summed_to_float32(rng):
    arr = rng.standard_normal((8192, 768))
    held, _ = reference(arr, genesis.bfloat16, (0,))
    got = to_torch(device_tensor(arr, genesis.bfloat16).sum(0, dtype=genesis.float32))
    torch.testing.assert_close(got, held.sum(0, dtype=torch.float32), rtol=1e-5, atol=1e-4)


def test_on_two_streams(rng):
    """Launches on two streams may overlap; each has its own split counters and workspace."""
    x = device_tensor(rng.standard_normal((8192, 768)), genesis.bfloat16)
    want = to_torch(x.sum(0))
    assert all(torch.equal(to_torch(t), want) for t in on_two_streams(lambda: x.sum(0)))


def test_graph_replay_equals_eager(rng):
    x = device_tensor(rng.standard_normal((8192, 3072)), genesis.bfloat16)
    warm_up_on_side_stream(lambda: x.sum(0))
    g = genesis.cuda.CUDAGraph()
    with genesis.cuda.graph(g):
        out = x.sum(0)
    for _ in range(3):
        x.copy_(device_tensor(rng.standard_normal((8192, 3072)), genesis.bfloat16))
        g.replay()
        assert torch.equal(to_torch(out), to_torch(x.sum(0)))
