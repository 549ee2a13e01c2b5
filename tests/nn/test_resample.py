"""interpolate/Upsample, pixel and channel shuffles, grid_sample and affine_grid against torch."""

import warnings

import pytest
import torch
import torch.nn.functional as TF
from helpers import assert_close, assert_refuses_as_torch, make_pair
from nn_compare import compare

import genesis
import genesis.nn as nn
import genesis.nn.functional as F
from genesis.autograd import gradcheck, gradgradcheck

# (input shape, interpolate kwargs)
INTERPOLATIONS = [
    ((2, 3, 7, 5), {"size": (11, 3), "mode": "nearest"}),
    ((2, 3, 7), {"scale_factor": 1.7, "mode": "nearest"}),
    ((1, 2, 4, 5, 3), {"scale_factor": (2, 0.5, 1.7), "mode": "nearest"}),
    ((2, 3, 7, 5), {"scale_factor": (0.6, 2.5), "mode": "nearest-exact"}),
    ((1, 2, 4, 5, 3), {"size": (7, 2, 5), "mode": "nearest-exact"}),
    ((2, 3, 7, 5), {"size": (3, 4), "mode": "area"}),
    ((1, 2, 6, 5, 7), {"scale_factor": 0.5, "mode": "area"}),
    ((2, 3, 7), {"size": 13, "mode": "linear"}),
    ((2, 3, 9), {"scale_factor": 0.6, "mode": "linear", "align_corners": True}),
    ((2, 3, 7, 5), {"scale_factor": (1.5, 2.3), "mode": "bilinear"}),
    ((2, 3, 7, 5), {"size": (4, 9), "mode": "bilinear", "align_corners": True}),
    ((2, 3, 7, 5), {"scale_factor": 1.7, "mode": "bilinear", "recompute_scale_factor": True}),
    ((2, 3, 2, 3), {"scale_factor": 2, "mode": "bilinear", "align_corners": True}),
    ((1, 2, 1, 2), {"size": (6, 7), "mode": "bilinear"}),
    ((2, 3, 7, 5), {"size": (11, 3), "mode": "bicubic"}),
    ((2, 3, 6, 5), {"scale_factor": (1.5, 0.7), "mode": "bicubic", "align_corners": True}),
    ((1, 2, 4, 5, 3), {"size": (7, 2, 5), "mode": "trilinear"}),
    ((1, 2, 4, 5, 3), {"scale_factor": 1.5, "mode": "trilinear", "align_corners": True}),
    ((2, 3, 17, 15), {"size": (5, 7), "mode": "bilinear", "antialias": True}),
    ((2, 3, 17, 15), {"scale_factor": 0.37, "mode": "bicubic", "antialias": True}),
    ((2, 3, 12, 9), {"size": (5, 14), "mode": "bicubic", "antialias": True,
                     "align_corners": True}),
]


@pytest.mark.parametrize("shape, kwargs", INTERPOLATIONS,
                         ids=[f"{c[1]['mode']}-{i}" for i, c in enumerate(INTERPOLATIONS)])
@pytest.mark.parametrize("dtype", [genesis.float32, genesis.float64, genesis.bfloat16,
                                   genesis.float16])
def test_interpolate_matches_torch(shape, kwargs, dtype, rng, device):
    compare(lambda x: F.interpolate(x, **kwargs), lambda x: TF.interpolate(x, **kwargs), [shape],
            dtype, device, rng, layout="transposed" if dtype is genesis.float32 else "contiguous")


@pytest.mark.parametrize("shape, kwargs", INTERPOLATIONS[::3],
                         ids=[c[1]["mode"] for c in INTERPOLATIONS[::3]])
def test_interpolate_gradcheck(shape, kwargs, rng, device):
    x = genesis.tensor(rng.uniform(-1, 1, (1, 1, *shape[2:])), dtype=genesis.float64,
                       device=device, requires_grad=True)
    assert gradcheck(lambda x: F.interpolate(x, **kwargs), [x])


def test_interpolate_nearest_of_integers(rng, device):
    g, t = make_pair((2, 3, 5, 4), genesis.uint8, device=device, rng=rng)
    for mode in ("nearest", "nearest-exact"):
        assert_close(F.interpolate(g, scale_factor=1.6, mode=mode),
                     TF.interpolate(t, scale_factor=1.6, mode=mode))


def test_interpolate_empty_batch(rng, device):
    for shape, kwargs in INTERPOLATIONS[::2]:
        compare(lambda x: F.interpolate(x, **kwargs), lambda x: TF.interpolate(x, **kwargs),
                [(0, *shape[1:])], device=device, rng=rng)


@pytest.mark.parametrize("name, args, kwargs", [
    ("Upsample", (), {"scale_factor": 2, "mode": "bilinear"}),
    ("Upsample", ((5, 3),), {"mode": "bicubic", "align_corners": True}),
    ("Upsample", (), {"scale_factor": (1.5, 2.0), "mode": "nearest-exact"}),
    ("UpsamplingNearest2d", (), {"size": 9}), ("UpsamplingBilinear2d", (), {"scale_factor": 1.5}),
    ("PixelShuffle", (2,), {}), ("PixelUnshuffle", (2,), {}), ("ChannelShuffle", (4,), {})])
def test_layers_match_torch(name, args, kwargs, rng, device):
    g_layer, t_layer = getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)
    assert repr(g_layer) == repr(t_layer)
    compare(g_layer, t_layer, [(2, 8, 4, 6)], device=device, rng=rng)


@pytest.mark.parametrize("shape, factor", [((2, 8, 3, 4), 2), ((3, 2, 9, 4, 5), 3),
                                           ((4, 2, 3), 1), ((0, 4, 3, 5), 2)])
def test_pixel_shuffles_match_torch(shape, factor, rng, device):
    compare(lambda x: F.pixel_shuffle(x, factor), lambda x: TF.pixel_shuffle(x, factor), [shape],
            device=device, rng=rng, layout="transposed")
    unshuffled = (*shape[:-3], shape[-3] // factor ** 2, shape[-2] * factor,
                  shape[-1] * factor)
    if shape[0]:  # torch returns an empty input unchanged; genesis gives the unshuffled shape
        compare(lambda x: F.pixel_unshuffle(x, factor), lambda x: TF.pixel_unshuffle(x, factor),
                [unshuffled], device=device, rng=rng)
    channels = (shape[0], shape[1] * 3, *shape[2:])
    compare(lambda x: F.channel_shuffle(x, 3), lambda x: TF.channel_shuffle(x, 3), [channels],
            device=device, rng=rng)


GRID_CASES = [(mode, padding, align) for mode in ("bilinear", "nearest", "bicubic")
              for padding in ("zeros", "border", "reflection") for align in (False, True)]


@pytest.mark.parametrize("mode, padding_mode, align_corners", GRID_CASES)
@pytest.mark.parametrize("dtype", [genesis.float32, genesis.float64])
def test_grid_sample_2d_matches_torch(mode, padding_mode, align_corners, dtype, rng, device):
    g_grid, t_grid = _grid(rng, (2, 4, 7, 2), dtype, device)
    kwargs = {"mode": mode, "padding_mode": padding_mode, "align_corners": align_corners}
    g_x, t_x = _grid(rng, (2, 3, 5, 6), dtype, device, 1.0)
    g_out, t_out = F.grid_sample(g_x, g_grid, **kwargs), TF.grid_sample(t_x, t_grid, **kwargs)
    assert_close(g_out, t_out)
    g_go, t_go = _grid(rng, tuple(t_out.shape), dtype, device, 1.0)
    g_out.backward(g_go)
    t_out.backward(t_go)
    assert_close(g_x.grad, t_x.grad)
    assert_close(g_grid.grad, t_grid.grad)  # nearest's is zeros, not None


def _grid(rng, shape, dtype, device, extent=1.3):
    """Points in [-extent, extent] (past the edges for extent > 1), as leaves in both."""
    values = rng.uniform(-extent, extent, shape)
    g = genesis.tensor(values, dtype=dtype, device=device, requires_grad=True)
    t = torch.tensor(values, dtype=torch.float64 if dtype is genesis.float64 else torch.float32,
                     requires_grad=True)
    return g, t


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
def test_grid_sample_3d_matches_torch(mode, padding_mode, rng, device):
    g_grid, t_grid = _grid(rng, (2, 3, 4, 2, 3), genesis.float64, device)
    g_x, t_x = _grid(rng, (2, 3, 4, 5, 6), genesis.float64, device, 1.0)
    kwargs = {"mode": mode, "padding_mode": padding_mode, "align_corners": False}
    g_out, t_out = F.grid_sample(g_x, g_grid, **kwargs), TF.grid_sample(t_x, t_grid, **kwargs)
    assert_close(g_out, t_out)
    g_out.sum().backward()
    t_out.sum().backward()
    assert_close(g_x.grad, t_x.grad)
    assert_close(g_grid.grad, t_grid.grad)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
def test_grid_sample_gradcheck(mode, padding_mode, rng, device):
    x = genesis.tensor(rng.uniform(-1, 1, (1, 2, 3, 4)), device=device, requires_grad=True)
    grid = genesis.tensor(rng.uniform(-1.2, 1.2, (1, 2, 3, 2)), device=device,
                          requires_grad=True)
    assert gradcheck(lambda x, g: F.grid_sample(x, g, mode, padding_mode, align_corners=False),
                     [x, grid])


@pytest.mark.parametrize("size, align_corners", [((2, 3, 4, 5), False), ((2, 3, 1, 5), True),
                                                 ((2, 1, 4, 5, 3), False),
                                                 ((2, 1, 3, 1, 2), True)])
def test_affine_grid_matches_torch(size, align_corners, rng, device):
    dims = len(size) - 2
    if align_corners and min(size[2:]) == 1:
        with pytest.warns(UserWarning, match="unit-size grids"):
            F.affine_grid(genesis.zeros(2, dims, dims + 1, device=device), size, True)
        warnings.simplefilter("ignore")
    compare(lambda t: F.affine_grid(t, size, align_corners),
            lambda t: TF.affine_grid(t, size, align_corners), [(2, dims, dims + 1)],
            genesis.float64, device, rng)


def test_affine_grid_then_grid_sample_warns_without_align_corners(device):
    theta = genesis.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]], device=device)
    with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
        grid = F.affine_grid(theta, (1, 1, 3, 4))
    x = genesis.arange(12, dtype=genesis.float32, device=device).reshape(1, 1, 3, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert_close(F.grid_sample(x, grid, align_corners=False),
                     torch.arange(12.0).reshape(1, 1, 3, 4))


RESAMPLE_ERRORS = [
    (lambda d: F.interpolate(genesis.randn(1, 2, 3, 3, device=d), size=4, mode="linear"),
     NotImplementedError, "Got 4D input, but linear mode needs 3D input"),
    (lambda d: F.interpolate(genesis.randn(1, 2, 3, device=d), size=4, mode="nearest",
                             align_corners=True), ValueError, "align_corners option can only"),
    (lambda d: F.interpolate(genesis.randn(1, 2, 3, device=d), size=4, scale_factor=2),
     ValueError, "only one of size or scale_factor"),
    (lambda d: F.interpolate(genesis.randn(1, 2, 3, device=d)), ValueError,
     "either size or scale_factor"),
    (lambda d: F.interpolate(genesis.randn(1, 2, 3, device=d), size=(4, 4)), ValueError,
     "same number of spatial dimensions"),
    (lambda d: F.interpolate(genesis.randn(1, 2, 3, device=d), size=4, mode="linear",
                             antialias=True), ValueError, "Anti-alias option is restricted"),
    (lambda d: F.interpolate(genesis.randn(1, 2, 3, device=d), size=4, mode="foo"),
     NotImplementedError, r"Only 3D, 4D and 5D input Tensors supported"),
    (lambda d: F.interpolate(genesis.ones(1, 2, 3, dtype=genesis.uint8, device=d), size=4,
                             mode="linear"), NotImplementedError, "not implemented for"),
    (lambda d: F.grid_sample(genesis.ones(1, 2, 3, 3, dtype=genesis.int64, device=d),
                             genesis.zeros(1, 2, 2, 2, dtype=genesis.int64, device=d),
                             align_corners=False), NotImplementedError, "not implemented for"),
    (lambda d: F.pixel_shuffle(genesis.randn(5, 3, 4, device=d), 2), RuntimeError,
     "divisible by the square of upscale_factor"),
    (lambda d: F.pixel_unshuffle(genesis.randn(4, 3, 4, device=d), 2), RuntimeError,
     "expects height to be divisible by downscale_factor"),
    (lambda d: F.channel_shuffle(genesis.randn(2, 5, 3, device=d), 2), RuntimeError,
     "Number of channels must be divisible by groups"),
    (lambda d: F.grid_sample(genesis.randn(1, 2, 3, 3, device=d),
                             genesis.randn(2, 2, 2, 2, device=d), align_corners=False),
     RuntimeError, "expected grid and input to have same batch size"),
    (lambda d: F.grid_sample(genesis.randn(1, 2, 3, 3, device=d),
                             genesis.randn(1, 2, 2, 2, device=d), mode="foo"),
     ValueError, "expected mode to be 'bilinear', 'nearest' or 'bicubic'"),
    (lambda d: F.grid_sample(genesis.randn(1, 2, 3, 3, 3, device=d),
                             genesis.randn(1, 2, 2, 2, 3, device=d), mode="bicubic"),
     RuntimeError, "bicubic interpolation only supports 4D input"),
    (lambda d: F.affine_grid(genesis.randn(1, 3, 3, device=d), (1, 1, 3, 3), False),
     ValueError, "Expected a batch of 2D affine matrices of shape Nx2x3"),
]


@pytest.mark.parametrize("call, error, match", RESAMPLE_ERRORS)
def test_resample_errors(call, error, match, device):
    with pytest.raises(error, match=match):
        call(device)


@pytest.mark.parametrize("call", [
    lambda m: m.nn.functional.interpolate(m.ones(1, 2, 4, 4), scale_factor=2, mode="foo"),
    lambda m: m.nn.Upsample(scale_factor=2, mode="cubic")(m.ones(1, 2, 4)),
    lambda m: m.nn.functional.interpolate(m.ones(2, 4), scale_factor=2),
    lambda m: m.nn.functional.interpolate(m.ones(1, 2, 4), scale_factor=2, mode="bilinear")])
def test_interpolate_refusals_as_torch(call):
    """An unknown mode or an input of another rank, in torch's words (its list of modes
    names 'lanczos')."""
    assert_refuses_as_torch(call)


@pytest.mark.parametrize("call", [
    lambda x: F.interpolate(x, scale_factor=1.5, mode="bicubic", align_corners=False),
    lambda x: F.grid_sample(x, genesis.tensor([[[[0.3, -0.7], [1.1, 0.2]]]], dtype=x.dtype,
                                              device=x.device), align_corners=True)])
def test_resample_gradgradcheck(call, rng, device):
    x = genesis.tensor(rng.uniform(-1, 1, (1, 1, 3, 3)), device=device, requires_grad=True)
    assert gradgradcheck(call, [x])


@pytest.mark.parametrize("mode, kwargs", [("bilinear", {}), ("bicubic", {"align_corners": True}),
                                          ("bilinear", {"antialias": True})])
def test_interpolate_long_dimension(mode, kwargs, rng, device):
    """A dimension longer than the dense-matrix limit is resampled through index_selects
    (in float64: at this length torch's float32 input gradient is 5e-5 from its float64 one,
    and genesis's float32 one up to 2e-5 from torch's, past float32's tolerance)."""
    compare(lambda x: F.interpolate(x, size=(3, 700), mode=mode, **kwargs),
            lambda x: TF.interpolate(x, size=(3, 700), mode=mode, **kwargs), [(1, 2, 2, 600)],
            genesis.float64, device=device, rng=rng)
