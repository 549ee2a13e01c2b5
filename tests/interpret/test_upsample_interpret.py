"""The linear interpolation kernels (kernels/upsample.py) against torch's interpolate, on the CPU,
through Triton's interpreter.

Run explicitly: `TRITON_INTERPRET=1 python -m pytest tests/interpret/test_upsample_interpret.py`.
The `kernels` fixture registers them as the CPU backend's interpolation kernels for the test's
duration, so genesis's F.interpolate on CPU tensors takes the path the GPU takes (the autograd
Functions, 1-D and 2-D as 3-D, gradients of gradients) with the kernels interpreted.
"""

import numpy as np
import pytest
import torch.nn.functional as TF
import triton_interpret as ti
from helpers import lay_out, make_pair
from nn_compare import compare

import genesis
import genesis.nn.functional as F
from genesis.autograd import gradcheck, gradgradcheck
from genesis.backends.cuda import array_ops
from genesis.backends.cuda.kernels import _spatial, upsample
from genesis.backends.cuda.launch import LaunchCache

DTYPES = [genesis.float32, genesis.float64, genesis.float16, genesis.bfloat16]
# (input shape, interpolate kwargs): up and down, sizes and scale factors, align_corners
INTERPOLATIONS = [
    ((2, 3, 7), {"size": 13, "mode": "linear"}),
    ((2, 3, 9), {"scale_factor": 0.6, "mode": "linear", "align_corners": True}),
    ((2, 3, 7, 5), {"scale_factor": 2, "mode": "bilinear"}),
    ((2, 3, 7, 5), {"scale_factor": (1.5, 2.3), "mode": "bilinear"}),
    ((2, 3, 7, 5), {"size": (4, 9), "mode": "bilinear", "align_corners": True}),
    ((2, 3, 7, 5), {"scale_factor": 1.7, "mode": "bilinear", "recompute_scale_factor": True}),
    ((1, 2, 9, 11), {"scale_factor": (0.45, 0.3), "mode": "bilinear"}),
    ((1, 2, 3, 4), {"scale_factor": 5, "mode": "bilinear", "align_corners": True}),
    ((1, 2, 4, 3), {"size": (1, 3), "mode": "bilinear", "align_corners": True}),
    ((2, 3, 2, 3), {"scale_factor": 2, "mode": "bilinear", "align_corners": True}),
    ((1, 2, 1, 2), {"size": (6, 7), "mode": "bilinear"}),
    ((1, 2, 3, 4, 3), {"size": (5, 2, 4), "mode": "trilinear"}),
    ((1, 2, 3, 2, 3), {"scale_factor": 1.5, "mode": "trilinear", "align_corners": True}),
]
IDS = [f"{c[1]['mode']}-{i}" for i, c in enumerate(INTERPOLATIONS)]


@pytest.fixture
def kernels(monkeypatch):
    """genesis's CPU tensors interpolate through the interpreted kernels, in 64-element blocks
    (several programs and a ragged tail on small inputs)."""
    if not ti.ENABLED:
        pytest.skip("set TRITON_INTERPRET=1 to run")
    monkeypatch.setattr(upsample, "BLOCK", 64)
    monkeypatch.setattr(upsample, "_plans", LaunchCache())
    ti.on_cpu(monkeypatch, upsample, "upsample_linear_fwd", "upsample_linear_bwd")
    with ti.device(upsample, _spatial, array_ops):
        yield


@pytest.mark.parametrize("shape, kwargs", INTERPOLATIONS, ids=IDS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("layout", ["contiguous", "channels_last", "stepped"])
def test_interpolate_matches_torch(kernels, shape, kwargs, dtype, layout, rng):
    """Values and input gradients of every dtype, input read where it lies."""
    if layout == "channels_last" and len(shape) < 4:
        pytest.skip("no channels-last format below 4-D")
    compare(lambda x: F.interpolate(x, **kwargs), lambda x: TF.interpolate(x, **kwargs),
            [shape], dtype, "cpu", rng, layout=layout)


def test_channels_last_results(kernels, rng):
    """A channels-last input gives a channels-last output, and its gradient is laid out as
    the output gradient."""
    g, _ = make_pair((2, 4, 3, 5), rng=rng)
    x = lay_out(g, "channels_last").requires_grad_()
    out = F.interpolate(x, scale_factor=2, mode="bilinear")
    assert out.stride() == (240, 1, 40, 4)
    out.backward(lay_out(genesis.ones(2, 4, 6, 10), "channels_last"))
    assert x.grad.stride() == x.stride()


def test_gradcheck_and_gradgradcheck(kernels, rng):
    """float64 gradients of the Functions, and of the backward (the forward, its adjoint), on
    inputs small enough for the interpreter."""
    cases = [((1, 1, 4), {"size": 7, "mode": "linear"}),
             ((1, 1, 3, 4), {"scale_factor": (1.5, 0.7), "mode": "bilinear"}),
             ((1, 1, 2, 3, 2), {"size": (3, 2, 3), "mode": "trilinear", "align_corners": True})]
    for shape, kwargs in cases:
        x = genesis.tensor(rng.uniform(-1, 1, shape), dtype=genesis.float64, requires_grad=True)
        assert gradcheck(lambda x, kwargs=kwargs: F.interpolate(x, **kwargs), [x])
        if len(shape) == 3:
            assert gradgradcheck(lambda x, kwargs=kwargs: F.interpolate(x, **kwargs), [x])


def test_large_upsampling(kernels, rng):
    """An 11x upsampling: each input position is read by about 22 outputs per dim."""
    compare(lambda x: F.interpolate(x, scale_factor=(1, 11), mode="bilinear"),
            lambda x: TF.interpolate(x, scale_factor=(1, 11), mode="bilinear"), [(1, 1, 2, 3)],
            genesis.float32, "cpu", rng)


def test_antialias_and_empty_take_the_generic_path(kernels, rng):
    compare(lambda x: F.interpolate(x, size=(3, 4), mode="bilinear", antialias=True),
            lambda x: TF.interpolate(x, size=(3, 4), mode="bilinear", antialias=True),
            [(1, 2, 7, 9)], genesis.float32, "cpu", rng)
    out = F.interpolate(genesis.zeros(0, 2, 3, 3), scale_factor=2, mode="bilinear")
    assert out.shape == (0, 2, 6, 6)
    assert np.all(out.numpy() == 0)
