"""The Hopper TMA convolutions' host-side decisions, without a GPU: which convolutions the
kernels take (dtype and cudnn.allow_tf32, stride, output phases) and the blocks they run, whose
pipeline stages must fit in an SM's shared memory beside the staged output tile."""

import ml_dtypes
import numpy as np
import pytest

pytest.importorskip("triton")

import genesis  # noqa: E402
from genesis.backends.cuda.kernels import conv_hopper  # noqa: E402
from genesis.backends.cuda.kernels._strided_indexing import placeholder  # noqa: E402
from genesis.backends.cuda.kernels.conv import Conv  # noqa: E402

BF16, FP32 = np.dtype(ml_dtypes.bfloat16), np.dtype(np.float32)
SMEM = 227 * 1024
# (images, out height, out width, C_in, C_out) of ResNet-50's and U-Net's layers
LAYERS = [(32, 112, 112, 64, 64), (32, 56, 56, 64, 64), (32, 56, 56, 256, 64),
          (32, 56, 56, 64, 256), (32, 28, 28, 128, 128), (32, 14, 14, 256, 256),
          (32, 7, 7, 512, 512), (8, 256, 256, 64, 64), (8, 128, 128, 128, 128),
          (8, 32, 32, 512, 512), (8, 16, 16, 1024, 512)]


@pytest.fixture(autouse=True)
def hopper(monkeypatch):
    monkeypatch.setattr(conv_hopper, "is_hopper", lambda device: True)


def channels_last(shape, dtype):
    n, c, h, w = shape
    return placeholder(shape, dtype, (h * w * c, 1, w * c, c))


@pytest.mark.parametrize("dtype", [BF16, FP32], ids=str)
@pytest.mark.parametrize("layer", LAYERS, ids=str)
def test_forward_blocks_fit_shared_memory(layer, dtype):
    """Each forward config (plain, into NCHW, by phases) keeps 128-byte channel steps and 3 or
    4 stages that fit beside the output tile; float32 never takes 256 x 128 tiles."""
    n, h, w, c_in, c_out = layer
    size = dtype.itemsize
    for nchw, phases in ((False, False), (True, False), (False, True)):
        config = conv_hopper.forward_config(n, h, w, c_in, c_out, 132, size, nchw, phases)
        area = config["BI"] * config["BH"] * config["BW"]
        assert config["BK"] * size == min(128, c_in * size)
        assert 3 <= config["num_stages"] <= 4
        stage = (area + config["BN"]) * config["BK"] * size
        assert config["num_stages"] * stage + area * config["BN"] * size <= SMEM
        assert not (size == 4 and area * config["BN"] == 256 * 128)
        assert not phases or c_out % config["BN"] == 0


@pytest.mark.parametrize("kernel_w", [1, 3])
@pytest.mark.parametrize("dtype", [BF16, FP32], ids=str)
@pytest.mark.parametrize("layer", LAYERS, ids=str)
def test_weight_grad_blocks_fit_shared_memory(layer, dtype, kernel_w):
    """The weight gradient steps 256 bytes of pixels (128 of bf16, 64 of float32) in stages
    that fit in shared memory: a block of dy and the windows of the taps a unit takes (a
    3-wide kernel row's three for 64 x 64 tiles)."""
    n, h, w, c_in, c_out = layer
    config = conv_hopper.weight_grad_config(n, h, w, c_out, c_in, dtype.itemsize, kernel_w)
    area = config["BI"] * config["BH"] * config["BW"]
    assert area * dtype.itemsize == 256
    small = config["BM"] * config["BN"] <= 64 * 64
    assert config["ROW_TAPS"] == (3 if small and kernel_w == 3 else 1)
    stage = area * (config["BM"] + config["ROW_TAPS"] * config["BN"]) * dtype.itemsize
    assert 3 <= config["num_stages"] <= 4 and config["num_stages"] * stage <= SMEM


def test_bf16_forward_tiles_follow_the_occupancy_rule():
    """The largest tile that still makes 0.7 tiles an SM: 256 x 128 where the layer is big,
    down to 128 x 64 at 7^2."""
    def tile(layer):
        config = conv_hopper.forward_config(*layer, 132)
        return config["BI"] * config["BH"] * config["BW"], config["BN"]
    assert tile((8, 128, 128, 128, 128)) == (256, 128)
    assert tile((32, 14, 14, 256, 256)) == (256, 64)
    assert tile((32, 7, 7, 512, 512)) == (128, 64)


@pytest.mark.parametrize("allow_tf32", [True, False])
def test_float32_takes_the_tma_kernels_as_tf32_only(monkeypatch, allow_tf32):
    monkeypatch.setattr(genesis.backends.cudnn, "allow_tf32", allow_tf32)
    conv = Conv((1, 1), (1, 1), (1, 1), 1)
    for dtype in (BF16, FP32):
        x, out = (channels_last((2, 64, 8, 8), dtype) for _ in range(2))
        weight = placeholder((64, 64, 3, 3), dtype)
        expected = dtype == BF16 or allow_tf32
        assert conv_hopper.forward_applies(x, weight, out, conv) == expected
        assert conv_hopper.weight_grad_applies(out, x, conv) == expected


def test_output_phases_need_an_even_channels_last_output():
    """A stride-2 transposed convolution goes by output phases into an even, channels-last
    output whose channels are a multiple of the 64-wide blocks, with any kernel size."""
    conv = Conv((2, 2), (1, 1), (1, 1), 1)
    x = channels_last((2, 64, 8, 8), BF16)
    for kernel, out_shape, layout, expected in [
            (3, (2, 128, 16, 16), channels_last, True), (2, (2, 64, 16, 16), channels_last, True),
            (1, (2, 128, 16, 16), channels_last, True), (3, (2, 128, 15, 16), channels_last, False),
            (3, (2, 96, 16, 16), channels_last, False), (3, (2, 128, 16, 16), placeholder, False)]:
        weight = placeholder((64, out_shape[1], kernel, kernel), BF16)
        out = layout(out_shape, BF16)
        assert conv_hopper.phases_apply(x, weight, out, conv) == expected, (kernel, out_shape)
    for other in (Conv((2, 2), (1, 1), (2, 2), 1), Conv((2, 2), (1, 1), (1, 1), 2),
                  Conv((3, 3), (1, 1), (1, 1), 1)):
        weight = placeholder((64, 128, 3, 3), BF16)
        assert not conv_hopper.phases_apply(x, weight, channels_last((2, 128, 16, 16), BF16),
                                            other)
