"""F.max_pool*d, F.avg_pool*d and F.interpolate (linear modes) on "cuda" through
kernels/pool.py and kernels/upsample.py, against torch on the CPU: ResNet's stem pool and
U-Net's 2x bilinear at reduced batch, odd sizes, NCHW, channels-last and sliced inputs, each
float dtype, forward and input gradients; the results' memory format, NaN propagation,
determinism of the backward.

Maxima and indices are exact. Results and gradients are compared with torch on the same
values in float64 for pooling, for interpolation in float32 (float64 for float64). Source
positions are computed in float32 as PyTorch's CUDA kernels do (its CPU kernels add the 0.5 in
float64), which moves a weight by up to an ulp of the position: the scale factors of the large
cases are powers of two (exact positions), the others' sizes small. float32 within its
tolerance, half types within 1 ulp of the reference rounded once (or float32 rounding of the
sum near zero)."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from helpers import (TORCH_DTYPES, assert_close, from_torch, lay_out, skip_no_cuda, to_torch,
                     ulp_distance)

import genesis
import genesis.nn.functional as F
from genesis import nn

pytestmark = [skip_no_cuda]

DTYPES = [genesis.float32, genesis.float16, genesis.bfloat16, genesis.float64]
LAYOUTS = ["contiguous", "channels_last", "stepped"]
# (functional name, input shape, kwargs): the last two loop over their windows (more taps or
# backward candidates than kernels/pool.py's MAX_UNROLLED), the others unroll
POOLS = [
    ("max_pool2d", (4, 64, 112, 112), {"kernel_size": 3, "stride": 2, "padding": 1}),
    ("max_pool2d", (3, 5, 17, 19), {"kernel_size": (3, 2), "stride": (2, 3), "padding": 1,
                                    "dilation": (1, 2), "ceil_mode": True}),
    ("max_pool1d", (4, 16, 1001), {"kernel_size": 5, "stride": 3, "padding": 2}),
    ("max_pool3d", (2, 8, 9, 20, 21), {"kernel_size": 3, "stride": 2, "padding": 1,
                                       "ceil_mode": True}),
    ("max_pool2d", (2, 8, 30, 31), {"kernel_size": 7, "stride": 1, "padding": 3}),
    ("max_pool1d", (2, 4, 301), {"kernel_size": 3, "stride": 1, "padding": 1, "dilation": 20}),
]
AVERAGES = [
    ("avg_pool2d", (4, 64, 56, 56), {"kernel_size": 3, "stride": 2, "padding": 1,
                                     "ceil_mode": True, "count_include_pad": False}),
    ("avg_pool2d", (3, 5, 17, 19), {"kernel_size": (2, 3), "divisor_override": 5}),
    ("avg_pool1d", (4, 16, 1001), {"kernel_size": 4, "stride": 3, "padding": 2}),
    ("avg_pool3d", (2, 8, 9, 20, 21), {"kernel_size": 3, "stride": 2, "padding": 1}),
]
INTERPOLATIONS = [
    ((4, 64, 64, 64), {"scale_factor": 2, "mode": "bilinear"}),
    ((3, 5, 17, 19), {"size": (40, 9), "mode": "bilinear", "align_corners": True}),
    ((3, 5, 17, 19), {"scale_factor": (1.7, 0.45), "mode": "bilinear"}),
    ((4, 16, 301), {"scale_factor": 4, "mode": "linear"}),
    ((2, 8, 9, 20, 21), {"scale_factor": 2, "mode": "trilinear", "align_corners": True}),
]


def _pair(shape, dtype, layout, rng, reference=torch.float64):
    """(a genesis cuda leaf laid out as `layout`, a torch leaf of type `reference`) of the
    same values."""
    g = genesis.tensor(rng.uniform(-2, 2, shape), dtype=dtype, device="cuda")
    t = to_torch(g).to(reference)
    return lay_out(g, layout).detach().requires_grad_(), t.requires_grad_()


def _check(actual, expected):
    """A genesis result against a float64 torch one (see the module docstring)."""
    dtype = actual.dtype
    if dtype in (genesis.float32, genesis.float64):
        assert_close(actual, expected.to(TORCH_DTYPES[dtype]))
        return
    got = actual.detach().cpu().numpy()
    exact = expected.detach().double().numpy()
    near = np.abs(got.astype(np.float64) - exact) <= 1e-5 * max(1.0, np.abs(exact).max())
    far = (ulp_distance(got, exact.astype(got.dtype)) > 1) & ~near
    assert not far.any(), f"{far.sum()} of {far.size} elements more than 1 ulp off"


def _run(g_fn, t_fn, shape, dtype, layout, rng, reference=torch.float64):
    g, t = _pair(shape, dtype, layout, rng, reference)
    g_out, t_out = g_fn(g), t_fn(t)
    _check(g_out, t_out)
    grad = genesis.tensor(rng.uniform(-1, 1, tuple(t_out.shape)), dtype=dtype, device="cuda")
    g_out.backward(grad)
    t_out.backward(to_torch(grad).to(reference))
    _check(g.grad, t.grad)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name, shape, kwargs", POOLS + AVERAGES,
                         ids=[p[0] for p in POOLS + AVERAGES])
def test_pool(name, shape, kwargs, dtype, layout, rng):
    if layout == "channels_last" and len(shape) < 4:
        pytest.skip("no channels-last format below 4-D")
    _run(lambda x: getattr(F, name)(x, **kwargs), lambda x: getattr(TF, name)(x, **kwargs),
         shape, dtype, layout, rng)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape, kwargs", INTERPOLATIONS,
                         ids=[f"{c[1]['mode']}-{i}" for i, c in enumerate(INTERPOLATIONS)])
def test_interpolate(shape, kwargs, dtype, layout, rng):
    if layout == "channels_last" and len(shape) < 4:
        pytest.skip("no channels-last format below 4-D")
    _run(lambda x: F.interpolate(x, **kwargs), lambda x: TF.interpolate(x, **kwargs), shape,
         dtype, layout, rng, torch.float64 if dtype is genesis.float64 else torch.float32)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_max_pool_indices_and_nan(dtype, rng):
    """PyTorch's indices; a NaN wins its windows."""
    values = rng.uniform(-2, 2, (2, 8, 33, 31))
    values[0, 1, 4, 5] = values[1, 7, 30, 30] = np.nan
    g = genesis.tensor(values, dtype=dtype, device="cuda")
    t = to_torch(g)
    for layout in ("contiguous", "channels_last"):
        (g_out, g_idx) = F.max_pool2d(lay_out(g, layout), 3, 2, 1, return_indices=True)
        t_out, t_idx = TF.max_pool2d(t, 3, 2, 1, return_indices=True)
        assert_close(g_out, t_out, rtol=0, atol=0)
        assert_close(g_idx, t_idx)


def test_channels_last_in_channels_last_out(rng):
    """Results keep PyTorch's channels_last format, and so do the input gradients (from
    channels-last output gradients)."""
    t = torch.zeros(2, 8, 15, 16).to(memory_format=torch.channels_last)
    for g_fn, t_fn in ((lambda x: nn.MaxPool2d(3, 2, 1)(x), lambda x: TF.max_pool2d(x, 3, 2, 1)),
                       (lambda x: F.interpolate(x, scale_factor=2, mode="bilinear"),
                        lambda x: TF.interpolate(x, scale_factor=2, mode="bilinear"))):
        g, _ = _pair((2, 8, 15, 16), genesis.bfloat16, "channels_last", rng)
        out = g_fn(g)
        assert out.stride() == t_fn(t).stride()
        out.backward(lay_out(genesis.ones(*out.shape, dtype=out.dtype, device="cuda"),
                             "channels_last"))
        assert g.grad.stride() == g.stride()


def test_backward_is_deterministic(rng):
    """Overlapping windows and 2x interpolation give the same gradient bits on every run."""
    x = from_torch(torch.randn(8, 32, 64, 64), "cuda").to(genesis.bfloat16)
    grads = []
    for _ in range(3):
        leaf = x.detach().requires_grad_()
        out = F.max_pool2d(leaf, 3, 1, 1).float().sum() + F.interpolate(
            leaf, scale_factor=2, mode="bilinear").float().square().sum()
        out.backward()
        grads.append(leaf.grad.float().cpu().numpy())
    assert all(np.array_equal(grads[0], g) for g in grads[1:])


@pytest.mark.parametrize("grad_layout", ["contiguous", "channels_last"])
def test_channels_last_gradients_accumulate(grad_layout, rng):
    """Two backward passes of a channels-last stem pool (output gradients contiguous, copied
    into the indices' layout, or channels-last) add up in a channels-last .grad, written in
    place: twice the input gradient, bit for bit."""
    g, _ = _pair((4, 64, 56, 56), genesis.bfloat16, "channels_last", rng)
    out = F.max_pool2d(g, 3, 2, 1)
    grad = lay_out(genesis.tensor(rng.uniform(-1, 1, tuple(out.shape)), dtype=genesis.bfloat16,
                                  device="cuda"), grad_layout)
    out.backward(grad, retain_graph=True)
    once = g.grad.clone()
    storage = g.grad.data_ptr()
    out.backward(grad)
    assert g.grad.stride() == g.stride() and g.grad.data_ptr() == storage
    np.testing.assert_array_equal(g.grad.float().cpu().numpy(), 2 * once.float().cpu().numpy())
