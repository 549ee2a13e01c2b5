"""The max and average pooling kernels (kernels/pool.py) against torch's pooling, on the CPU,
through Triton's interpreter.

Run explicitly: `TRITON_INTERPRET=1 python -m pytest tests/interpret/test_pool_interpret.py`.
The `kernels` fixture registers them as the CPU backend's max pooling kernels for the test's
duration, so genesis's F.max_pool*d and F.avg_pool*d on CPU tensors take the path the GPU takes
(the autograd Functions, 1-D and 2-D as 3-D, gradients of gradients) with the kernels
interpreted. Maxima and indices are exact; averages and gradients within the dtype's tolerance.
"""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
import triton_interpret as ti
from helpers import TORCH_DTYPES, assert_close, lay_out, make_pair
from nn_compare import compare

import genesis
import genesis.nn.functional as F
from genesis import nn
from genesis.autograd import gradcheck, gradgradcheck
from genesis.backends.cuda import array_ops
from genesis.backends.cuda.kernels import _spatial, pool
from genesis.backends.cuda.launch import LaunchCache

DTYPES = [genesis.float32, genesis.float64, genesis.float16, genesis.bfloat16]
# (functional name, input shape, kwargs): odd sizes, padding, dilation, ceil_mode, unbatched,
# a window of more taps than pool.MAX_UNROLLED (loops)
POOLS = [
    ("max_pool1d", (2, 3, 11), {"kernel_size": 3, "stride": 2, "padding": 1, "dilation": 2,
                                "ceil_mode": True}),
    ("max_pool1d", (3, 9), {"kernel_size": 2}),
    ("max_pool2d", (2, 3, 7, 6), {"kernel_size": (3, 2), "stride": (2, 1), "padding": (1, 0)}),
    ("max_pool2d", (3, 8, 7), {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True}),
    ("max_pool2d", (2, 5, 9, 11), {"kernel_size": 3, "stride": 2, "padding": 1, "dilation": 2}),
    ("max_pool2d", (1, 2, 8, 8), {"kernel_size": 2, "stride": 3, "ceil_mode": True}),
    ("max_pool2d", (1, 3, 9, 10), {"kernel_size": (7, 6), "padding": 3}),
    ("max_pool3d", (1, 2, 5, 6, 5), {"kernel_size": 2, "stride": (1, 2, 2), "dilation": (2, 1, 1),
                                     "ceil_mode": True}),
    ("max_pool3d", (2, 3, 4, 7, 6), {"kernel_size": 3, "stride": 2, "padding": 1}),
]
IDS = [f"{c[0]}-{i}" for i, c in enumerate(POOLS)]
# (functional name, input shape, kwargs): the divisor rules with ceil_mode windows past the end
AVERAGES = [
    ("avg_pool1d", (2, 3, 10), {"kernel_size": 4, "stride": 3, "padding": 2, "ceil_mode": True,
                                "count_include_pad": False}),
    ("avg_pool2d", (2, 3, 7, 6), {"kernel_size": 3, "stride": 2, "padding": 1,
                                  "ceil_mode": True}),
    ("avg_pool2d", (2, 3, 5, 6), {"kernel_size": (2, 3), "divisor_override": 5}),
    ("avg_pool2d", (3, 9, 8), {"kernel_size": 3, "stride": (2, 3), "padding": 1,
                               "ceil_mode": True, "count_include_pad": False}),
    ("avg_pool3d", (1, 2, 5, 6, 5), {"kernel_size": (2, 3, 2), "stride": 2, "padding": 1,
                                     "count_include_pad": False}),
    ("avg_pool3d", (2, 3, 4, 7, 6), {"kernel_size": 3, "stride": 2, "padding": 1,
                                     "ceil_mode": True, "divisor_override": 7}),
    ("lp_pool2d", (2, 3, 7, 6), {"norm_type": 3.0, "kernel_size": (3, 2), "ceil_mode": True}),
]


@pytest.fixture
def kernels(monkeypatch):
    """genesis's CPU tensors max-pool through the interpreted kernels, in programs of 16
    threads (16 to 64 elements: several programs and a ragged tail on small inputs)."""
    if not ti.ENABLED:
        pytest.skip("set TRITON_INTERPRET=1 to run")
    monkeypatch.setattr(pool, "THREADS", 16)
    monkeypatch.setattr(pool, "_plans", LaunchCache())
    ti.on_cpu(monkeypatch, pool, "max_pool_fwd", "max_pool_bwd", "avg_pool")
    with ti.device(pool, _spatial, array_ops):
        yield


@pytest.mark.parametrize("name, shape, kwargs", POOLS, ids=IDS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("layout", ["contiguous", "channels_last", "stepped"])
def test_max_pool_matches_torch(kernels, name, shape, kwargs, dtype, layout, rng):
    """Values and input gradients of every dtype, input read where it lies."""
    if layout == "channels_last" and len(shape) < 4:
        pytest.skip("no channels-last format below 4-D")
    compare(lambda x: getattr(F, name)(x, **kwargs), lambda x: getattr(TF, name)(x, **kwargs),
            [shape], dtype, "cpu", rng, layout=layout)


@pytest.mark.parametrize("name, shape, kwargs", AVERAGES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(AVERAGES)])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
def test_avg_pool_matches_torch(kernels, name, shape, kwargs, dtype, layout, rng):
    """Averages (count_include_pad, divisor_override, ceil_mode) and their input gradients."""
    if layout == "channels_last" and len(shape) < 4:
        pytest.skip("no channels-last format below 4-D")
    if name.startswith("lp_pool") and dtype in (genesis.bfloat16, genesis.float16):
        pytest.skip("x ** p of a half type rounds before the pool; compared in float")
    compare(lambda x: getattr(F, name)(x, **kwargs), lambda x: getattr(TF, name)(x, **kwargs),
            [shape], dtype, "cpu", rng, layout=layout,
            low=0.1 if name.startswith("lp_pool") else -1.0)


@pytest.mark.parametrize("name, shape, kwargs", POOLS, ids=IDS)
@pytest.mark.parametrize("dtype", [genesis.float32, genesis.bfloat16], ids=str)
def test_max_pool_indices(kernels, name, shape, kwargs, dtype, rng):
    """PyTorch's flat indices, ties (frequent in bfloat16 of few values) to the first."""
    g, t = make_pair(shape, dtype, rng=rng, low=-4, high=4)
    if dtype is genesis.bfloat16:
        g, t = g.round(), t.round()
    (g_out, g_idx), (t_out, t_idx) = (getattr(F, name)(g, **kwargs, return_indices=True),
                                      getattr(TF, name)(t, **kwargs, return_indices=True))
    assert_close(g_out, t_out, rtol=0, atol=0)
    assert_close(g_idx, t_idx)


def test_channels_last_results(kernels, rng):
    """A channels-last input gives channels-last values, indices and input gradient."""
    g, _ = make_pair((2, 4, 7, 6), rng=rng)
    x = lay_out(g, "channels_last").requires_grad_()
    out, idx = F.max_pool2d(x, 3, 2, 1, return_indices=True)
    assert out.stride() == (48, 1, 12, 4) and idx.stride() == out.stride()
    out.sum().backward()
    assert x.grad.stride() == x.stride()
    g5, _ = make_pair((2, 3, 4, 5, 6), rng=rng)
    assert F.max_pool3d(lay_out(g5, "channels_last"), 2).stride() == (36, 1, 18, 9, 3)


@pytest.mark.parametrize("name, shape, kwargs", [POOLS[0], POOLS[3], POOLS[4], POOLS[7]],
                         ids=[IDS[0], IDS[3], IDS[4], IDS[7]])
@pytest.mark.parametrize("grad_layout", ["contiguous", "channels_last", "transposed", "expanded"])
@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
def test_output_gradient_layouts(kernels, name, shape, kwargs, layout, grad_layout, rng):
    """The input gradient from an output gradient laid out as the values or otherwise (read
    where it lies, or first copied into the indices' layout when the lanes would read it
    strided), in the indices' layout; bfloat16 against torch's sums in float32 rounded once."""
    if "channels_last" in (layout, grad_layout) and len(shape) < 4:
        pytest.skip("no channels-last format below 4-D")
    g, t = make_pair(shape, genesis.bfloat16, rng=rng)
    x = lay_out(g, layout).requires_grad_()
    t = t.float().requires_grad_()
    out, t_out = getattr(F, name)(x, **kwargs), getattr(TF, name)(t, **kwargs)
    g_go = lay_out(make_pair(tuple(t_out.shape), genesis.bfloat16, rng=rng)[0], grad_layout)
    out.backward(g_go)
    t_out.backward(torch.tensor(g_go.float().numpy()))
    assert x.grad.stride() == x.stride()
    assert_close(x.grad, t.grad.to(torch.bfloat16), rtol=0, atol=0)


def _special(dtype):
    """An input whose windows hold NaNs (several in one window), -inf and +inf."""
    x = np.arange(2 * 3 * 6 * 7, dtype=np.float64).reshape(2, 3, 6, 7) % 11 - 5
    x[0, 0, 1, 1] = x[0, 0, 2, 2] = np.nan
    x[0, 1, :3, :3] = -np.inf
    x[1, 2, 4, 5] = np.inf
    x[1, 0, 5, 6] = np.nan
    return genesis.tensor(x, dtype=dtype), torch.tensor(x).to(TORCH_DTYPES[dtype])


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_nan_and_infinities(kernels, dtype):
    """A NaN wins (the last of several); a window of -inf points at its first element."""
    g, t = _special(dtype)
    for kwargs in ({"kernel_size": 3, "stride": 2, "padding": 1}, {"kernel_size": 2},
                   {"kernel_size": 3, "stride": 1, "ceil_mode": True, "dilation": 2}):
        (g_out, g_idx), (t_out, t_idx) = (F.max_pool2d(g, **kwargs, return_indices=True),
                                          TF.max_pool2d(t, **kwargs, return_indices=True))
        assert_close(g_out, t_out, rtol=0, atol=0)
        assert_close(g_idx, t_idx)


def test_gradcheck_and_gradgradcheck(kernels, rng):
    """float64 gradients of the kernels' Functions, and of their backward (a gather, or the
    average pool's adjoint), on inputs small enough for the interpreter."""
    cases = [(F.max_pool1d, (1, 1, 7), {"kernel_size": 3, "stride": 2, "padding": 1}),
             (F.max_pool2d, (1, 1, 4, 5), {"kernel_size": 2, "stride": 1, "dilation": (1, 2)}),
             (F.max_pool3d, (1, 1, 3, 3, 2), {"kernel_size": 2, "ceil_mode": True})]
    cases += [(F.avg_pool2d, (1, 1, 4, 5), {"kernel_size": 3, "stride": 2, "padding": 1,
                                            "ceil_mode": True, "count_include_pad": False})]
    for fn, shape, kwargs in cases:
        x = genesis.tensor(rng.uniform(-1, 1, shape), dtype=genesis.float64, requires_grad=True)
        assert gradcheck(lambda x, fn=fn, kwargs=kwargs: fn(x, **kwargs), [x])
        if len(shape) < 5:
            assert gradgradcheck(lambda x, fn=fn, kwargs=kwargs: fn(x, **kwargs), [x])


@pytest.mark.parametrize("size, peak, stride, total", [(5, 2, 1, 108), (7, 3, 2, 30)])
def test_overlapping_windows_add_up(kernels, size, peak, stride, total):
    """An element that is the maximum of several windows (9 at stride 1, the 4 candidates of
    stride 2) gets the sum of their gradients."""
    x = genesis.zeros(1, 1, size, size)
    x[0, 0, peak, peak] = 1.0
    x.requires_grad_()
    out = F.max_pool2d(x, 3, stride, 1)
    out.backward(genesis.arange(out.numel(), dtype=genesis.float32).reshape(out.shape))
    t = torch.zeros(1, 1, size, size)
    t[0, 0, peak, peak] = 1.0
    t.requires_grad_()
    t_out = TF.max_pool2d(t, 3, stride, 1)
    t_out.backward(torch.arange(float(t_out.numel())).reshape(t_out.shape))
    assert_close(x.grad, t.grad, rtol=0, atol=0)
    assert x.grad[0, 0, peak, peak].item() == total


def test_module_and_empty(kernels, rng):
    """nn.MaxPool2d goes through the kernels; an empty batch takes the generic path."""
    g, t = make_pair((2, 3, 9, 8), rng=rng)
    assert_close(nn.MaxPool2d(3, 2, 1, ceil_mode=True)(g),
                 torch.nn.MaxPool2d(3, 2, 1, ceil_mode=True)(t))
    assert F.max_pool2d(genesis.zeros(0, 3, 5, 5), 2).shape == (0, 3, 2, 2)


@pytest.mark.parametrize("kernel_size, stride, padding, dilation",
                         [(40, 7, 19, 1), (20, 7, 9, 1), (3, 1, 1, 20)])
def test_large_window_loops(kernels, rng, kernel_size, stride, padding, dilation):
    """Windows of more taps or backward candidates than pool.MAX_UNROLLED (loops, not
    unrolled: 40 taps; 41 candidates of a dilated window of 3) and one of fewer (unrolled, six
    candidates an input) over a long 1-D input."""
    shape = (1, 2, 3 * math.prod((5, 7)))
    compare(lambda x: F.max_pool1d(x, kernel_size, stride, padding, dilation),
            lambda x: TF.max_pool1d(x, kernel_size, stride, padding, dilation), [shape],
            genesis.float32, "cpu", rng)


def test_magic_division(rng):
    """_spatial.magic's multiplication and shift (the pools' divisions of int32 indices by
    sizes known at launch) give n // d for every int32 n >= 0: the edges of the range and of
    the multiples of d, and random ones, for small, odd, power-of-two and large divisors."""
    divisors = [2, 3, 7, 16, 56, 112, 1000, 2 ** 16 + 1, 2 ** 30, 2 ** 30 + 3, 2 ** 31 - 1]
    for d in divisors + [int(d) for d in rng.integers(2, 2 ** 31, 200)]:
        m, s = _spatial.magic(d)
        last = (2 ** 31 - 1) // d * d
        n = np.concatenate([rng.integers(0, 2 ** 31, 2000),
                            [0, 1, d - 1, d, d + 1, last - 1, last, 2 ** 31 - 1]])
        high = (n.astype(np.uint64) * np.uint64(m % 2 ** 32)) >> np.uint64(32)
        assert np.array_equal(high >> np.uint64(s), n // d), d
