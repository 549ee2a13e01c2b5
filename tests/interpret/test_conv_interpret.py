"""The implicit-GEMM convolution kernels (kernels/conv.py) against torch's convolutions, on the
CPU, through Triton's interpreter.

Run explicitly: `TRITON_INTERPRET=1 python -m pytest tests/interpret/test_conv_interpret.py`.
16 x 16 x 16 tiles make small odd shapes walk several tiles, channel blocks and ragged tails;
the weight gradient runs split (float32 partials summed by a second kernel) and direct.
The reference is torch in float64 on the same values, rounded once to the dtype: float32 within
its tolerances (or a few ulps of the largest output), half types within 1 ulp (or float32
accumulation error near zero).

The functional tests register the kernels as the CPU backend's implicit-GEMM kernels for the
test's duration, so genesis's F.conv*d on CPU tensors takes the path the GPU takes (autograd,
1-D as 2-D, gradients of gradients) with the kernels interpreted.
"""

import ml_dtypes
import numpy as np
import pytest
import torch
import torch.nn.functional as TF
import triton_interpret as ti
from helpers import TOLERANCES, ulp_distance
from triton.runtime import interpreter

import genesis
import genesis.nn.functional as F
from genesis import dispatch
from genesis.backends.cuda import array_ops
from genesis.backends.cuda.kernels import conv, conv_hopper
from genesis.backends.cuda.launch import LaunchCache

BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = [np.dtype(np.float32), np.dtype(np.float16), BF16]
GENESIS_DTYPES = {np.dtype(np.float32): genesis.float32, np.dtype(np.float16): genesis.float16,
                  BF16: genesis.bfloat16}
# (N, C, H, W, C_out, (R, S), stride, padding, dilation, groups)
CASES = [
    (2, 3, 7, 9, 5, (3, 2), (2, 1), (1, 2), (1, 2), 1),
    (1, 4, 5, 6, 6, (3, 3), (1, 1), (1, 1), (1, 1), 2),
    (2, 6, 9, 8, 4, (3, 3), (2, 3), (2, 1), (2, 1), 2),
    (3, 20, 6, 5, 18, (1, 1), (1, 1), (0, 0), (1, 1), 1),
    (1, 5, 11, 4, 5, (5, 1), (3, 1), (2, 0), (1, 1), 5),
    (2, 3, 9, 11, 4, (3, 7), (2, 2), (1, 3), (1, 1), 1),
    (1, 2, 10, 8, 3, (3, 3), (1, 2), (2, 1), (2, 1), 1),
]
LAYOUTS = ["contiguous", "channels_last", "strided"]


def _small_tiles(rows, c_out, c_in, dtype, programs):
    return 16, 16, 16, 4, 1


def _small_wgrad_tiles(c_out, c_in, dtype):
    return 16, 16, 16, 4, 1


@pytest.fixture
def gpu(monkeypatch):
    """Interpreted kernels in 16-wide tiles (the implicit GEMM, not the Hopper TMA kernels); the
    weight gradient split into partial sums of 8 or more positions."""
    if not ti.ENABLED:
        pytest.skip("set TRITON_INTERPRET=1 to run")
    monkeypatch.setattr(conv, "_tiles", _small_tiles)
    monkeypatch.setattr(conv, "_wgrad_tiles", _small_wgrad_tiles)
    monkeypatch.setattr(conv, "_MIN_SPLIT", 8)
    monkeypatch.setattr(conv_hopper, "is_hopper", lambda device: False)
    monkeypatch.setattr(conv, "_pointwise_applies", lambda *args: False)  # not a matmul
    monkeypatch.setattr(conv, "_conv_plans", LaunchCache())
    monkeypatch.setattr(conv, "_wgrad_plans", LaunchCache())
    monkeypatch.setattr(interpreter.InterpreterBuilder, "create_dot", ti.bf16_dot)
    with ti.device(conv, array_ops):
        yield


def _on_device(array, layout="contiguous"):
    """A device array of `array`'s (N, C, H, W) values: contiguous, channels-last, or every
    other element of a buffer twice as wide."""
    if layout == "contiguous":
        return ti.to_device(array)
    n, c, h, w = array.shape
    if layout == "channels_last":
        dev = ti.to_device(np.ascontiguousarray(array.transpose(0, 2, 3, 1)))
        return ti.view(dev, array.shape, (h * w * c, 1, w * c, c))
    wide = np.zeros((n, c, h, 2 * w), array.dtype)
    wide[..., ::2] = array
    return ti.view(ti.to_device(wide), array.shape, (c * h * 2 * w, h * 2 * w, 2 * w, 2))


def _check(actual, expected):
    """`actual` equals the float64 `expected` rounded to its dtype (see the module docstring)."""
    assert actual.shape == expected.shape
    dtype = actual.dtype
    if dtype == np.float32:
        # a sum of hundreds of products rounds at the magnitude of its largest partial sums:
        # the absolute bound grows with the output's, 16 float32 half-ulps of its largest
        rtol, atol = TOLERANCES[genesis.float32]
        atol = max(atol, 16 * 2.0 ** -24 * np.abs(expected).max())
        np.testing.assert_allclose(actual.astype(np.float64), expected, rtol=rtol, atol=atol)
        return
    rounded = expected.astype(dtype)
    near = np.abs(actual.astype(np.float64) - expected) <= 1e-5 * max(1.0, np.abs(expected).max())
    far = (ulp_distance(actual, rounded) > 1) & ~near
    assert not far.any(), (f"{far.sum()} of {far.size} elements more than 1 ulp off, e.g. "
                           f"{actual[far][:4]} vs {expected[far][:4]}")


def _f64(array):
    return torch.from_numpy(np.asarray(array, np.float64))


def _values(rng, dtype, *shapes):
    return [rng.uniform(-2.0, 2.0, shape).astype(dtype) for shape in shapes]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("case", CASES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_conv2d_and_gradients(gpu, rng, dtype, case, layout):
    """Forward with bias, the input gradient (transposed kernel) and the weight gradient."""
    n, c, h, w, k, kernel, stride, padding, dilation, groups = case
    check_conv_and_gradients(rng, dtype, (n, c, h, w), (k, c // groups, *kernel),
                             (stride, padding, dilation, groups), layout)


def check_conv_and_gradients(rng, dtype, x_shape, w_shape, args, layout):
    """conv2d_igemm with bias, conv_transpose2d_igemm as its input gradient and
    conv2d_igemm_weight_grad against torch in float64 on random values; (stride, padding,
    dilation, groups) `args`, x and the output gradient laid out as `layout` (and the weight
    gradient asked for channels-last with channels-last operands). Returns the output's
    shape."""
    x, weight, bias = _values(rng, dtype, x_shape, w_shape, (w_shape[0],))
    tx, tw = _f64(x).requires_grad_(), _f64(weight).requires_grad_()
    expected = TF.conv2d(tx, tw, _f64(bias), *args)
    (grad,) = _values(rng, dtype, expected.shape)
    expected.backward(_f64(grad))
    out = conv.conv2d_igemm(_on_device(x, layout), ti.to_device(weight), ti.to_device(bias),
                            *args)
    _check(ti.to_host(out), expected.detach().numpy())
    dx = conv.conv_transpose2d_igemm(_on_device(grad, layout), ti.to_device(weight), None, *args,
                                     x_shape[2:])
    _check(ti.to_host(dx), tx.grad.numpy())
    channels_last = layout == "channels_last"
    dw = conv.conv2d_igemm_weight_grad(_on_device(x, layout), _on_device(grad, layout),
                                       weight.shape, *args, channels_last)
    _check(ti.to_host(dw), tw.grad.numpy())
    k, c, r, s = weight.shape
    assert dw.element_strides() == ((r * s * c, 1, s * c, c) if channels_last else
                                    (c * r * s, r * s, s, 1))
    return tuple(expected.shape)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_weight_gradient_written_directly(gpu, rng, monkeypatch, dtype):
    """One split: the kernel writes the gradient in its dtype, no partial sums."""
    monkeypatch.setattr(conv, "_MIN_SPLIT", 1 << 40)
    n, c, h, w, k, kernel, stride, padding, dilation, groups = CASES[2]
    x, weight = _values(rng, dtype, (n, c, h, w), (k, c // groups, *kernel))
    tw = _f64(weight).requires_grad_()
    expected = TF.conv2d(_f64(x), tw, None, stride, padding, dilation, groups)
    (grad,) = _values(rng, dtype, expected.shape)
    expected.backward(_f64(grad))
    dw = conv.conv2d_igemm_weight_grad(ti.to_device(x), ti.to_device(grad), weight.shape,
                                       stride, padding, dilation, groups)
    _check(ti.to_host(dw), tw.grad.numpy())


def test_channels_last_input_gives_channels_last_output(gpu, rng):
    x, weight = _values(rng, np.float32, (2, 4, 5, 5), (3, 4, 3, 3))
    out = conv.conv2d_igemm(_on_device(x, "channels_last"), ti.to_device(weight), None, (1, 1),
                            (1, 1), (1, 1), 1)
    assert out.element_strides() == (75, 1, 15, 3)


# (C_in, C_out per group, (R, S), stride, padding, output_padding, dilation, groups)
TRANSPOSED = [
    (4, 3, (3, 3), (2, 2), (1, 1), (1, 1), (1, 1), 1),
    (6, 2, (2, 3), (3, 2), (0, 1), (2, 0), (1, 2), 2),
    (3, 5, (3, 3), (2, 2), (1, 1), (2, 0), (3, 1), 1),
    (4, 4, (1, 1), (1, 1), (0, 0), (0, 0), (1, 1), 4),
]


@pytest.mark.parametrize("case", TRANSPOSED, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_conv_transpose2d(gpu, rng, dtype, case):
    """ConvTranspose2d's forward, output padding up to past the stride (when under the
    dilation) included; the bias a strided view."""
    c_in, c_out, kernel, stride, padding, output_padding, dilation, groups = case
    x, weight, bias = _values(rng, dtype, (2, c_in, 5, 4), (c_in, c_out, *kernel),
                              (c_out * groups,))
    expected = TF.conv_transpose2d(_f64(x), _f64(weight), _f64(bias), stride, padding,
                                   output_padding, groups, dilation).numpy()
    strided_bias = ti.view(ti.to_device(np.repeat(bias, 2)), bias.shape, (2,))
    out = conv.conv_transpose2d_igemm(ti.to_device(x), ti.to_device(weight), strided_bias,
                                      stride, padding, dilation, groups, expected.shape[2:])
    _check(ti.to_host(out), expected)


@pytest.fixture
def cpu_implicit(gpu, monkeypatch):
    """genesis's CPU tensors convolve through the interpreted kernels."""
    for op, fn in (("conv2d_igemm", conv.conv2d_igemm),
                   ("conv_transpose2d_igemm", conv.conv_transpose2d_igemm),
                   ("conv2d_igemm_weight_grad", conv.conv2d_igemm_weight_grad)):
        monkeypatch.setitem(dispatch._KERNELS, (op, "cpu"), ti.host_kernel(fn))


def _pair(array, requires_grad=True):
    return (genesis.tensor(array).requires_grad_(requires_grad),
            _f64(array.astype(np.float32)).requires_grad_(requires_grad))


def _compare_functional(rng, dtype, genesis_fn, torch_fn, x_shape, w_shape, bias_size):
    x, weight, bias = _values(rng, dtype, x_shape, w_shape, (bias_size,))
    pairs = [_pair(a) for a in (x, weight, bias)]
    out = genesis_fn(*(g for g, _ in pairs))
    expected = torch_fn(*(t for _, t in pairs))
    (grad,) = _values(rng, dtype, tuple(expected.shape))
    out.backward(genesis.tensor(grad))
    expected.backward(_f64(grad.astype(np.float32)))
    _check(out.detach().numpy(), expected.detach().numpy())
    for (g, t) in pairs:
        _check(g.grad.numpy(), t.grad.numpy())


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_functional_conv1d_and_conv2d(cpu_implicit, rng, dtype):
    _compare_functional(rng, dtype,
                        lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1, dilation=2),
                        lambda x, w, b: TF.conv1d(x, w, b, stride=2, padding=1, dilation=2),
                        (2, 3, 13), (4, 3, 3), 4)
    _compare_functional(rng, dtype,
                        lambda x, w, b: F.conv2d(x, w, b, padding="same", groups=2),
                        lambda x, w, b: TF.conv2d(x, w, b, padding="same", groups=2),
                        (2, 4, 6, 7), (6, 2, 2, 3), 6)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_functional_conv_transpose(cpu_implicit, rng, dtype):
    _compare_functional(rng, dtype,
                        lambda x, w, b: F.conv_transpose1d(x, w, b, stride=3, padding=1,
                                                           output_padding=2),
                        lambda x, w, b: TF.conv_transpose1d(x, w, b, stride=3, padding=1,
                                                            output_padding=2),
                        (2, 4, 5), (4, 3, 3), 3)
    _compare_functional(rng, dtype,
                        lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1,
                                                           output_padding=(1, 0), groups=2),
                        lambda x, w, b: TF.conv_transpose2d(x, w, b, stride=2, padding=1,
                                                            output_padding=(1, 0), groups=2),
                        (1, 4, 4, 5), (4, 3, 3, 3), 6)


def test_functional_channels_last_input(cpu_implicit, rng):
    (x,) = _values(rng, np.float32, (2, 5, 6, 4))
    weight, bias = _values(rng, np.float32, (3, 4, 3, 3), (3,))
    gx = genesis.tensor(x).permute(0, 3, 1, 2)
    out = F.conv2d(gx, genesis.tensor(weight), genesis.tensor(bias), padding=1)
    expected = TF.conv2d(_f64(x).permute(0, 3, 1, 2), _f64(weight), _f64(bias), padding=1)
    _check(out.numpy(), expected.numpy())


def test_gradients_of_gradients(cpu_implicit, rng):
    """d/d(x, w, grad) of <v, (dx, dw)>: every kernel's gradient is made of the others."""
    x, weight, grad, vx, vw = _values(rng, np.float32, (2, 4, 7, 6), (6, 2, 3, 2), (2, 6, 4, 7),
                                      (2, 4, 7, 6), (6, 2, 3, 2))
    results = []
    for lib, fn, wrap in ((genesis, F.conv2d, genesis.tensor), (torch, TF.conv2d, _f64)):
        tx, tw, tg = (wrap(a).requires_grad_() for a in (x, weight, grad))
        out = fn(tx, tw, None, stride=(2, 1), padding=1, groups=2)
        dx, dw = lib.autograd.grad(out, (tx, tw), tg, create_graph=True)
        ((dx * wrap(vx)).sum() + (dw * wrap(vw)).sum()).backward()
        results.append([t.grad.detach().numpy() for t in (tx, tw, tg)])
    for actual, expected in zip(*results):
        _check(actual.astype(np.float32), expected)
