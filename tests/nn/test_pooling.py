"""Pooling in 1, 2 and 3-D (max, average, LP, adaptive, fractional, unpooling) against torch."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from helpers import assert_close, assert_refuses_as_torch, make_pair
from nn_compare import compare

import genesis
import genesis.nn as nn
import genesis.nn.functional as F
from genesis.autograd import gradcheck

# (functional name, input shape, kwargs)
POOLS = [
    ("max_pool1d", (2, 3, 11), {"kernel_size": 3, "stride": 2, "padding": 1, "dilation": 2,
                                "ceil_mode": True}),
    ("max_pool2d", (2, 3, 7, 6), {"kernel_size": (3, 2), "stride": (2, 1), "padding": (1, 0)}),
    ("max_pool2d", (3, 8, 7), {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True}),
    ("max_pool3d", (1, 2, 5, 6, 5), {"kernel_size": 2, "stride": (1, 2, 2), "dilation": (2, 1, 1),
                                     "ceil_mode": True}),
    ("avg_pool1d", (2, 3, 10), {"kernel_size": 4, "stride": 3, "padding": 2, "ceil_mode": True,
                                "count_include_pad": False}),
    ("avg_pool2d", (2, 3, 7, 6), {"kernel_size": 3, "stride": 2, "padding": 1,
                                  "ceil_mode": True}),
    ("avg_pool2d", (2, 3, 5, 6), {"kernel_size": (2, 3), "divisor_override": 5}),
    ("avg_pool3d", (1, 2, 5, 6, 5), {"kernel_size": (2, 3, 2), "stride": 2, "padding": 1,
                                     "count_include_pad": False}),
    ("lp_pool1d", (2, 3, 9), {"norm_type": 2.0, "kernel_size": 3, "stride": 2}),
    ("lp_pool2d", (2, 3, 7, 6), {"norm_type": 3.0, "kernel_size": (3, 2), "ceil_mode": True}),
    ("lp_pool3d", (1, 2, 4, 5, 4), {"norm_type": 2.0, "kernel_size": 2}),
    ("adaptive_avg_pool1d", (2, 3, 11), {"output_size": 4}),
    ("adaptive_avg_pool2d", (2, 3, 7, 5), {"output_size": (3, None)}),
    ("adaptive_avg_pool3d", (1, 2, 5, 7, 4), {"output_size": (2, 3, 5)}),
    ("adaptive_max_pool1d", (2, 3, 11), {"output_size": 4}),
    ("adaptive_max_pool2d", (2, 3, 7, 5), {"output_size": (3, 4)}),
    ("adaptive_max_pool3d", (1, 2, 5, 7, 4), {"output_size": (2, 3, 3)}),
]


@pytest.mark.parametrize("name, shape, kwargs", POOLS,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(POOLS)])
@pytest.mark.parametrize("dtype", [genesis.float32, genesis.float64, genesis.bfloat16,
                                   genesis.float16])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_pool_matches_torch(name, shape, kwargs, dtype, layout, rng, device):
    if dtype in (genesis.bfloat16, genesis.float16) and layout == "transposed":
        pytest.skip("one layout suffices for the half types")
    if name.startswith("lp_pool") and dtype in (genesis.bfloat16, genesis.float16):
        pytest.skip("x ** p of a half type rounds before the pool; compared in float")
    compare(lambda x: getattr(F, name)(x, **kwargs), lambda x: getattr(TF, name)(x, **kwargs),
            [shape], dtype, device, rng, layout=layout,
            low=0.1 if name.startswith("lp_pool") else -1.0)


@pytest.mark.parametrize("name, shape, kwargs", [c for c in POOLS if "max" in c[0]],
                         ids=[c[0] for c in POOLS if "max" in c[0]])
def test_max_pool_indices(name, shape, kwargs, rng, device):
    g, t = make_pair(shape, device=device, rng=rng)
    (g_out, g_idx), (t_out, t_idx) = (getattr(F, name)(g, **kwargs, return_indices=True),
                                      getattr(TF, name)(t, **kwargs, return_indices=True))
    assert_close(g_out, t_out)
    assert_close(g_idx, t_idx)


@pytest.mark.parametrize("name, shape, kwargs", POOLS[::3],
                         ids=[c[0] for c in POOLS[::3]])
def test_pool_gradcheck(name, shape, kwargs, rng, device):
    low = 0.5 if name.startswith("lp") else -1.0
    x = genesis.tensor(rng.uniform(low, 1.0, (1, 1, *shape[2:])), dtype=genesis.float64,
                       device=device, requires_grad=True)
    assert gradcheck(lambda x: getattr(F, name)(x, **kwargs), [x])


def test_pool_empty_batch(rng, device):
    for name, shape, kwargs in POOLS:
        compare(lambda x: getattr(F, name)(x, **kwargs), lambda x: getattr(TF, name)(x, **kwargs),
                [(0, *shape[-len(shape) + 1:])] if len(shape) > 3 or "1d" in name else
                [(0, *shape)], device=device, rng=rng)


@pytest.mark.parametrize("dims, shape, out", [(2, (2, 3, 9, 8), (4, 5)),
                                              (3, (2, 2, 7, 6, 8), (3, 4, 5))])
def test_fractional_max_pool_matches_torch(dims, shape, out, rng, device):
    samples = torch.rand(shape[0], shape[1], dims, dtype=torch.float64)
    g_samples = genesis.tensor(samples.numpy(), device=device)
    name = f"fractional_max_pool{dims}d"
    for kwargs in ({"output_size": out}, {"output_ratio": (0.5,) * dims}):
        g_out, t_out = compare(
            lambda x: getattr(F, name)(x, 2, _random_samples=g_samples, **kwargs),
            lambda x: getattr(TF, name)(x, 2, _random_samples=samples, **kwargs),
            [shape], genesis.float64, device, rng)
        g, t = make_pair(shape, genesis.float64, device=device, rng=rng)
        g_idx = getattr(F, name)(g, 2, **kwargs, return_indices=True,
                                 _random_samples=g_samples)[1]
        assert_close(g_idx, getattr(TF, name)(t, 2, **kwargs, return_indices=True,
                                              _random_samples=samples)[1])
    module = getattr(nn, f"FractionalMaxPool{dims}d")(2, output_size=out)
    assert module(genesis.randn(*shape, device=device)).shape == (*shape[:2], *out)


@pytest.mark.parametrize("dims, shape", [(1, (2, 3, 10)), (2, (2, 3, 7, 6)), (3, (1, 2, 4, 6, 6))])
def test_max_unpool_matches_torch(dims, shape, rng, device):
    _, t = make_pair(shape, device=device, rng=rng)
    t_vals, t_idx = getattr(TF, f"max_pool{dims}d")(t, 2, 2, return_indices=True)
    g_idx = genesis.tensor(t_idx.numpy(), device=device)
    for size in (None, shape[2:]):
        compare(lambda v: getattr(F, f"max_unpool{dims}d")(v, g_idx, 2, output_size=size),
                lambda v: getattr(TF, f"max_unpool{dims}d")(v, t_idx, 2, output_size=size),
                [tuple(t_vals.shape)], device=device, rng=rng)
    name = f"MaxUnpool{dims}d"
    g_layer, t_layer = getattr(nn, name)(2), getattr(torch.nn, name)(2)
    assert repr(g_layer) == repr(t_layer)
    compare(lambda v: g_layer(v, g_idx), lambda v: t_layer(v, t_idx), [tuple(t_vals.shape)],
            device=device, rng=rng)


LAYERS = [
    ("MaxPool1d", (3,), {"stride": 2, "padding": 1, "return_indices": True}, (2, 3, 9)),
    ("MaxPool2d", (3,), {"stride": 2, "ceil_mode": True}, (3, 8, 7)),
    ("MaxPool3d", ((2, 1, 2),), {"dilation": (1, 1, 2)}, (1, 2, 4, 5, 6)),
    ("AvgPool1d", (3,), {"stride": 2, "padding": 1, "count_include_pad": False}, (2, 3, 9)),
    ("AvgPool2d", (3,), {"stride": 2, "divisor_override": 2}, (2, 3, 8, 7)),
    ("AvgPool3d", (2,), {"ceil_mode": True}, (1, 2, 5, 5, 5)),
    ("LPPool1d", (2, 3), {"stride": 2}, (2, 3, 9)),
    ("LPPool2d", (1.5, (2, 3)), {}, (2, 3, 6, 7)),
    ("LPPool3d", (2, 2), {"ceil_mode": True}, (1, 2, 5, 4, 5)),
    ("AdaptiveAvgPool1d", (4,), {}, (2, 3, 9)),
    ("AdaptiveAvgPool2d", ((None, 3),), {}, (2, 3, 6, 7)),
    ("AdaptiveAvgPool3d", (2,), {}, (1, 2, 5, 4, 5)),
    ("AdaptiveMaxPool1d", (4,), {"return_indices": True}, (2, 3, 9)),
    ("AdaptiveMaxPool2d", ((2, 3),), {}, (3, 6, 7)),
    ("AdaptiveMaxPool3d", (2,), {}, (1, 2, 5, 4, 5)),
]


@pytest.mark.parametrize("name, args, kwargs, shape", LAYERS, ids=[c[0] for c in LAYERS])
def test_layer_matches_torch(name, args, kwargs, shape, rng, device):
    g_layer, t_layer = getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)
    assert repr(g_layer) == repr(t_layer)
    g, t = make_pair(shape, low=0.1 if name.startswith("LP") else -2.0, device=device, rng=rng)
    g_out, t_out = g_layer(g), t_layer(t)
    if kwargs.get("return_indices"):
        assert_close(g_out[1], t_out[1])
        g_out, t_out = g_out[0], t_out[0]
    assert_close(g_out, t_out)


POOL_ERRORS = [
    (lambda d: F.max_pool2d(genesis.randn(1, 2, 5, 5, device=d), 2, padding=2),
     "pad should be at most half of effective kernel size"),
    (lambda d: F.max_pool2d(genesis.randn(1, 2, 1, 1, device=d), 3), "Output size is too small"),
    (lambda d: F.max_pool1d(genesis.randn(5, device=d), 3),
     r"Expected 2D or 3D \(batch mode\) tensor"),
    (lambda d: F.max_pool2d(genesis.randn(2, 0, 5, 5, device=d), 2),
     r"Expected 3D or 4D \(batch mode\) tensor"),
    (lambda d: F.avg_pool2d(genesis.randn(1, 2, 5, 5, device=d), 2, padding=2),
     "pad should be at most half of kernel size"),
    (lambda d: F.max_pool2d(genesis.randn(1, 2, 5, 5, device=d), 2, stride=0),
     "stride should not be zero"),
    (lambda d: F.adaptive_max_pool2d(genesis.randn(1, 2, 0, 5, device=d), 2),
     "Expected input to have non-zero size for non-batch dimensions"),
    (lambda d: F.max_unpool2d(genesis.randn(1, 2, 2, 2, device=d),
                              genesis.full((1, 2, 2, 2), 100, dtype=genesis.int64, device=d), 2),
     r"Found an invalid max index: 100 \(output volumes are of size 4x4\)"),
    (lambda d: F.fractional_max_pool2d(genesis.randn(1, 2, 5, 5, device=d), 3, output_size=4),
     "pool height 3 too large relative to input height 5"),
]


@pytest.mark.parametrize("call, match", POOL_ERRORS)
def test_pool_errors(call, match, device):
    with pytest.raises(RuntimeError, match=match):
        call(device)
    with pytest.raises(ValueError, match="either an output_size or an output_ratio"):
        F.fractional_max_pool2d(genesis.randn(1, 2, 5, 5, device=device), 2)


def _pool_layers(dims):
    """Each pooling layer over `dims` dims, called as its forward is, by its name."""
    n = dims
    layers = {f"MaxPool{n}d": lambda m, x: getattr(m.nn, f"MaxPool{n}d")(2)(x),
              f"AvgPool{n}d": lambda m, x: getattr(m.nn, f"AvgPool{n}d")(2)(x),
              f"LPPool{n}d": lambda m, x: getattr(m.nn, f"LPPool{n}d")(2, 2)(x),
              f"AdaptiveAvgPool{n}d": lambda m, x: getattr(m.nn, f"AdaptiveAvgPool{n}d")(2)(x),
              f"AdaptiveMaxPool{n}d": lambda m, x: getattr(m.nn, f"AdaptiveMaxPool{n}d")(2)(x),
              f"MaxUnpool{n}d": lambda m, x: getattr(m.nn, f"MaxUnpool{n}d")(2)(
                  x, m.zeros(x.shape, dtype=m.int64))}
    if n > 1:
        layers[f"FractionalMaxPool{n}d"] = lambda m, x: getattr(
            m.nn, f"FractionalMaxPool{n}d")(2, output_size=2)(x)
    return layers


@pytest.mark.parametrize("dims, name, rank", [
    (dims, name, rank) for dims in (1, 2, 3) for name in _pool_layers(dims)
    for rank in (dims, dims + 3)])
def test_pool_layer_rank_refusals_as_torch(dims, name, rank):
    """A pooling layer refuses an input of the wrong rank as its torch functional does: each
    kernel's own words ('non-empty 3D or 4D (batch mode) tensor expected for input', 'Expected 2
    to 3 dimensions, but got 1-dimensional tensor ...'), or the IndexError of avg_pool2d's and
    the fractional pools' shape arithmetic."""
    call = _pool_layers(dims)[name]
    assert_refuses_as_torch(lambda m: call(m, m.ones((4,) * rank)))


@pytest.mark.parametrize("call", [
    lambda m: m.nn.functional.max_unpool2d(m.zeros(1, 1, 4, 4), m.zeros(1, 1, 4, 3,
                                                                        dtype=m.int64), 2),
    lambda m: m.nn.functional.max_unpool1d(m.zeros(1, 1, 4), m.zeros(1, 1, 3, dtype=m.int64), 2),
    lambda m: m.nn.functional.max_unpool2d(m.zeros(1, 1, 4, 4), m.zeros(1, 1, 4, 4), 2),
    lambda m: m.nn.functional.adaptive_max_pool2d(m.zeros(2, 0, 4), 2),
    lambda m: m.nn.functional.adaptive_avg_pool3d(m.zeros(1, 2, 3, 0, 4), 2)])
def test_pool_argument_refusals_as_torch(call):
    """Unpooling indices of another dtype or shape, and an empty spatial dim of adaptive
    pooling, refused in torch's words."""
    assert_refuses_as_torch(call)


def test_max_pool_gradient_goes_to_first_maximum(device):
    x = genesis.tensor(np.ones((1, 1, 4, 4)), device=device, requires_grad=True)
    t = torch.ones(1, 1, 4, 4, dtype=torch.float64, requires_grad=True)
    F.max_pool2d(x, 2, 1).sum().backward()
    TF.max_pool2d(t, 2, 1).sum().backward()
    assert_close(x.grad, t.grad)


@pytest.mark.parametrize("name, args", [
    ("max_pool1d_with_indices", (3,)), ("max_pool2d_with_indices", (2, 1, 1)),
    ("max_pool3d_with_indices", (2,)), ("adaptive_max_pool1d_with_indices", (3,)),
    ("adaptive_max_pool2d_with_indices", ((2, 3),)), ("adaptive_max_pool3d_with_indices", (2,))])
def test_with_indices_forms(name, args, rng, device):
    dims = int(name.split("_pool")[1][0])
    g, t = make_pair((2, 3, 6, 5, 4)[:dims + 2], device=device, rng=rng)
    for actual, expected in zip(getattr(F, name)(g, *args), getattr(TF, name)(t, *args)):
        assert_close(actual, expected)


@pytest.mark.parametrize("name, kwargs", [
    ("max_pool2d", {"kernel_size": 3, "stride": 2, "padding": 1, "return_indices": True}),
    ("avg_pool2d", {"kernel_size": 3, "stride": 2, "padding": 1}),
    ("avg_pool1d", {"kernel_size": 2, "ceil_mode": True})])
def test_integer_pools_match_torch(name, kwargs, rng, device):
    shape = (1, 2, 7) if name.endswith("1d") else (1, 2, 5, 6)
    g, t = make_pair(shape, genesis.int64, device=device, rng=rng)
    g_out, t_out = getattr(F, name)(g, **kwargs), getattr(TF, name)(t, **kwargs)
    for actual, expected in zip(*((g_out, t_out) if isinstance(t_out, tuple) else
                                  ((g_out,), (t_out,)))):
        assert_close(actual, expected)
