"""The Hopper TMA convolution kernels (kernels/conv_hopper.py) against torch's convolutions, on
the CPU, through Triton's interpreter.

Run explicitly: `TRITON_INTERPRET=1 python -m pytest tests/interpret/test_conv_hopper_interpret.py`.
The conv entry points run on a pretend sm_90
GPU of four SMs, so each persistent program walks several tiles, with blocks of 2 x 8 pixels of
2 images (2 x 4 in the weight gradient) and 16-channel tiles: small odd images and odd batches
walk ragged pixel blocks (TMA's zero fill), channel tails (C = 24 in 16-wide steps, K = 40 in
16-wide tiles) and windows past every edge of the padding; at stride 2, kernels of 1 to 5 taps
across both phases of the input, and input gradients and transposed convolutions of even
kernels stored phase by phase. The weight gradient splits its pixel blocks over several units.
Inputs of fewer than 16 channels take the weight gradient over their unfolded copy
(kernels/conv_few_channels.py). Each test checks that the TMA kernels, not the implicit GEMM,
ran.
"""

import numpy as np
import pytest
import torch.nn.functional as TF
import triton_interpret as ti
from interpret.test_conv_interpret import (BF16, _check, _f64, _on_device, _values,
                                           check_conv_and_gradients)
from triton.runtime import interpreter

import genesis
from genesis.backends.cuda import array_ops
from genesis.backends.cuda.kernels import conv, conv_few_channels, conv_hopper
from genesis.backends.cuda.launch import LaunchCache

# float32 takes the TMA kernels as TF32 products (cudnn.allow_tf32, the default)
DTYPES = [np.dtype(np.float16), BF16, np.dtype(np.float32)]
# (N, C, H, W, K, (R, S), padding)
CASES = [
    (2, 16, 5, 7, 24, (3, 3), (1, 1)),
    (1, 24, 6, 8, 40, (3, 3), (0, 0)),
    (2, 16, 7, 5, 16, (1, 1), (0, 0)),
    (1, 24, 9, 6, 32, (5, 3), (2, 1)),
    (3, 16, 4, 4, 16, (3, 1), (1, 0)),
]
# Stride 2: even heights and widths, channels a multiple of the 16-wide blocks.
STRIDE_TWO = [
    (2, 16, 8, 10, 24, (3, 3), (1, 1)),
    (1, 32, 6, 8, 16, (1, 1), (0, 0)),
    (3, 16, 10, 6, 16, (5, 3), (2, 1)),
    (1, 16, 8, 8, 16, (2, 2), (0, 0)),
]


@pytest.fixture
def gpu(monkeypatch):
    """Interpreted TMA kernels in small blocks on four SMs; "forward", "phases" and
    "weight_grad" count their runs."""
    if not ti.ENABLED:
        pytest.skip("set TRITON_INTERPRET=1 to run")
    ran = {"forward": 0, "phases": 0, "weight_grad": 0, "few_channels": 0}
    monkeypatch.setattr(conv_hopper, "is_hopper", lambda device: True)
    monkeypatch.setattr(conv, "_pointwise_applies", lambda *args: False)  # not a matmul
    monkeypatch.setattr(conv_hopper, "grid_sms", lambda device, target=None: 4)
    monkeypatch.setattr(conv_hopper, "MIN_OUT_CHANNELS", 16)
    monkeypatch.setattr(conv_hopper, "MIN_SPLIT_STEPS", 2)
    monkeypatch.setattr(conv_hopper, "forward_config", lambda *args, **kwargs: dict(
        BI=2, BH=2, BW=8, BN=16, BK=16, num_warps=4, num_stages=1))
    monkeypatch.setattr(conv_hopper, "weight_grad_config", lambda *args: dict(
        BI=2, BH=2, BW=4, BM=16, BN=16, ROW_TAPS=1, num_warps=4, num_stages=1))
    for name, cls in (("forward", conv_hopper.ForwardPlan), ("phases", conv_hopper.PhasePlan),
                      ("weight_grad", conv_hopper.WeightGradPlan),
                      ("few_channels", conv_few_channels.WeightGradPlan)):
        monkeypatch.setattr(cls, "run", _counted(cls.run, ran, name))
    monkeypatch.setattr(conv, "_conv_plans", LaunchCache())
    monkeypatch.setattr(conv, "_wgrad_plans", LaunchCache())
    monkeypatch.setattr(interpreter.InterpreterBuilder, "create_dot", ti.bf16_dot)
    with ti.device(conv, conv_hopper, conv_few_channels, array_ops):
        yield ran


def _counted(run, ran, name):
    def counted(self, *args):
        ran[name] += 1
        run(self, *args)
    return counted


@pytest.mark.parametrize("layout", ["channels_last", "contiguous"])
@pytest.mark.parametrize("case", CASES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_conv2d_and_gradients(gpu, rng, dtype, case, layout):
    """Forward with bias (channels-last output, or NCHW where its rows are 16-byte multiples),
    the input gradient (the flipped kernel) and the weight gradient."""
    n, c, h, w, k, kernel, padding = case
    out_shape = check_conv_and_gradients(rng, dtype, (n, c, h, w), (k, c, *kernel),
                                         ((1, 1), padding, (1, 1), 1), layout)
    # an NCHW output takes TMA where its rows are 16-byte multiples
    tma_out = [layout == "channels_last" or width * dtype.itemsize % 16 == 0
               for width in (out_shape[3], w)]
    assert gpu == {"forward": sum(tma_out), "phases": 0, "weight_grad": 1, "few_channels": 0}


@pytest.mark.parametrize("layout", ["channels_last", "contiguous"])
@pytest.mark.parametrize("case", STRIDE_TWO, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_stride_two(gpu, rng, dtype, case, layout):
    """Stride 2 through the phase views: the forward and the weight gradient read the input's
    phases, the input gradient (a strided transposed convolution) stores its output's
    (written channels-last, and copied for an NCHW input): odd kernels meet different tap
    counts in different phases, a 1x1 kernel none in three of them."""
    n, c, h, w, k, kernel, padding = case
    out_shape = check_conv_and_gradients(rng, dtype, (n, c, h, w), (k, c, *kernel),
                                         ((2, 2), padding, (1, 1), 1), layout)
    tma_out = layout == "channels_last" or out_shape[3] * dtype.itemsize % 16 == 0
    assert gpu == {"forward": int(tma_out), "phases": 1, "weight_grad": 1, "few_channels": 0}


@pytest.mark.parametrize("layout", ["channels_last", "contiguous"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("splits", [1, 3])
def test_weight_gradient_splits(gpu, rng, monkeypatch, dtype, layout, splits):
    """One split, and three splits of 10 pixel blocks (4, 4 and 2): the partial sums added
    in the weight's layout (channels-last with channels-last operands)."""
    monkeypatch.setattr(conv_hopper, "_splits", lambda *args: splits)
    n, c, h, w, k, kernel, padding = CASES[3]
    check_conv_and_gradients(rng, dtype, (n, c, h, w), (k, c, *kernel),
                             ((1, 1), padding, (1, 1), 1), layout)
    assert gpu["weight_grad"] == 1


# Few channels, (N, C, H, W, K, (R, S), stride, padding): the stem's 7x7/2 (48 unfolded
# channels: three 16-wide tiles), a 3x3 at stride 1 (9 used of 16), a strided 1-D front end of
# one channel, unequal strides, and stride 3 with a kernel its phases do not divide.
FEW_CHANNELS = [
    (2, 3, 10, 9, 16, (7, 7), (2, 2), (3, 3)),
    (1, 3, 6, 7, 16, (3, 3), (1, 1), (1, 1)),
    (2, 1, 1, 40, 24, (1, 10), (1, 5), (0, 0)),
    (1, 2, 9, 11, 16, (5, 3), (2, 1), (2, 1)),
    (1, 3, 11, 10, 16, (4, 4), (3, 3), (1, 0)),
]


@pytest.mark.parametrize("layout", ["channels_last", "contiguous"])
@pytest.mark.parametrize("case", FEW_CHANNELS, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_few_channel_weight_gradient(gpu, rng, dtype, case, layout):
    """The weight gradient of an input of few channels, by the TMA kernel over its unfolded
    copy, written in the weight's layout (channels-last with channels-last operands)."""
    n, c, h, w, k, kernel, stride, padding = case
    x, weight = _values(rng, dtype, (n, c, h, w), (k, c, *kernel))
    tw = _f64(weight).requires_grad_()
    expected = TF.conv2d(_f64(x), tw, None, stride, padding)
    (grad,) = _values(rng, dtype, expected.shape)
    expected.backward(_f64(grad))
    dw = conv.conv2d_igemm_weight_grad(_on_device(x, layout), _on_device(grad, layout),
                                       weight.shape, stride, padding, (1, 1), 1,
                                       layout == "channels_last")
    _check(ti.to_host(dw), tw.grad.numpy())
    assert gpu == {"forward": 0, "phases": 0, "weight_grad": 0, "few_channels": 1}


@pytest.mark.parametrize("row_taps", [2, 3])
@pytest.mark.parametrize("case", [CASES[0], CASES[3], STRIDE_TWO[2],
                                  (1, 16, 6, 9, 16, (3, 5), (1, 2))], ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_weight_gradient_row_taps(gpu, rng, monkeypatch, dtype, case, row_taps):
    """Units of two or three taps of a kernel row (the last unit of a row past its end where
    they do not divide it: 3 taps by 2, 5 by 2 and 3; at stride 2 as well): each tap's
    partials land where a unit of one would put them."""
    config = conv_hopper.weight_grad_config
    monkeypatch.setattr(conv_hopper, "weight_grad_config",
                        lambda *args: dict(config(*args), ROW_TAPS=row_taps))
    n, c, h, w, k, kernel, padding = case
    stride = 2 if case in STRIDE_TWO else 1
    check_conv_and_gradients(rng, dtype, (n, c, h, w), (k, c, *kernel),
                             ((stride, stride), padding, (1, 1), 1), "channels_last")
    assert gpu["weight_grad"] == 1


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_conv_transpose2d_stride_one(gpu, rng, dtype):
    """ConvTranspose2d at stride 1 (padding 0 grows the output by R-1) with a bias."""
    x, weight, bias = _values(rng, dtype, (2, 24, 5, 6), (24, 16, 3, 3), (16,))
    expected = TF.conv_transpose2d(_f64(x), _f64(weight), _f64(bias)).numpy()
    out = conv.conv_transpose2d_igemm(_on_device(x, "channels_last"), ti.to_device(weight),
                                      ti.to_device(bias), (1, 1), (0, 0), (1, 1), 1,
                                      expected.shape[2:])
    _check(ti.to_host(out), expected)
    assert gpu["forward"] == 1


# (x shape, weight shape, padding, output_padding)
TRANSPOSED_STRIDE_TWO = [
    ((2, 24, 3, 5), (24, 16, 2, 2), 0, 0),
    ((1, 16, 4, 3), (16, 32, 4, 4), 1, 0),
    ((3, 16, 3, 4), (16, 16, 4, 2), (2, 0), 0),
    ((1, 32, 2, 3), (32, 48, 2, 4), (1, 2), 0),
    ((2, 16, 3, 4), (16, 16, 3, 5), (1, 2), 1),
]


@pytest.mark.parametrize("layout", ["channels_last", "contiguous"])
@pytest.mark.parametrize("case", TRANSPOSED_STRIDE_TWO, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_conv_transpose2d_stride_two(gpu, rng, dtype, case, layout):
    """ConvTranspose2d at stride 2 with a bias, by output phases: even kernels of 1 to 4 taps
    a phase, odd and even paddings (the phases' first taps), an odd kernel with
    output_padding."""
    x_shape, w_shape, padding, output_padding = case
    x, weight, bias = _values(rng, dtype, x_shape, w_shape, (w_shape[1],))
    expected = TF.conv_transpose2d(_f64(x), _f64(weight), _f64(bias), 2, padding,
                                   output_padding).numpy()
    padding = padding if isinstance(padding, tuple) else (padding,) * 2
    out = conv.conv_transpose2d_igemm(_on_device(x, layout), ti.to_device(weight),
                                      ti.to_device(bias), (2, 2), padding, (1, 1), 1,
                                      expected.shape[2:])
    _check(ti.to_host(out), expected)
    assert gpu["phases"] == 1


def test_float32_without_tf32_takes_the_implicit_gemm(gpu, rng, monkeypatch):
    """float32 with cudnn.allow_tf32 off runs IEEE products: the implicit GEMM's."""
    monkeypatch.setattr(genesis.backends.cudnn, "allow_tf32", False)
    monkeypatch.setattr(conv, "_tiles", lambda rows, c_out, c_in, dtype, programs:
                        (16, 16, 16, 4, 1))
    x, weight = _values(rng, np.float32, (1, 16, 6, 6), (16, 16, 3, 3))
    expected = TF.conv2d(_f64(x), _f64(weight), None, 1, 1).numpy()
    out = conv.conv2d_igemm(_on_device(x, "channels_last"), ti.to_device(weight), None, (1, 1),
                            (1, 1), (1, 1), 1)
    _check(ti.to_host(out), expected)
    assert gpu["forward"] == 0


def test_other_geometries_take_the_implicit_gemm(gpu, rng, monkeypatch):
    """Stride 2 over an odd height, dilation and groups stay on kernels/conv.py."""
    monkeypatch.setattr(conv, "_tiles", lambda rows, c_out, c_in, dtype, programs:
                        (16, 16, 16, 4, 1))
    x, weight = _values(rng, np.float16, (1, 16, 7, 6), (16, 16, 3, 3))
    for args in (((2, 2), (1, 1), (1, 1), 1), ((1, 1), (2, 2), (2, 2), 1),
                 ((1, 1), (1, 1), (1, 1), 2)):
        w = weight[:, :16 // args[3]]
        expected = TF.conv2d(_f64(x), _f64(w), None, *args).numpy()
        out = conv.conv2d_igemm(_on_device(x, "channels_last"), ti.to_device(w), None, *args)
        _check(ti.to_host(out), expected)
    assert gpu["forward"] == 0
