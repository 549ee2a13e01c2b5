"""Convolutions, transposed convolutions, Fold/Unfold and the Conv layers against torch."""

import math
import re

import pytest
import torch
import torch.nn.functional as TF
from helpers import assert_close, assert_refuses_as_torch, make_pair
from nn_compare import assert_param_grads, compare, copy_module, torch_state

import genesis
import genesis.nn as nn
import genesis.nn.functional as F
from genesis.autograd import gradcheck, gradgradcheck

pytestmark = pytest.mark.usefixtures("cudnn_ieee")

# (functional name, input shape, weight shape, kwargs); the bias has the output channels.
CONVS = [
    ("conv1d", (2, 4, 11), (6, 2, 3), {"stride": 2, "padding": 1, "dilation": 2, "groups": 2}),
    ("conv1d", (3, 9), (2, 3, 4), {"padding": "same"}),
    ("conv2d", (2, 3, 7, 6), (4, 3, 3, 2), {"stride": (2, 1), "padding": (1, 0)}),
    ("conv2d", (1, 4, 6, 5), (6, 2, 2, 3), {"padding": "same", "dilation": (1, 2),
                                            "groups": 2}),
    ("conv2d", (2, 2, 5, 5), (3, 2, 3, 3), {"padding": "valid", "stride": 3}),
    ("conv3d", (2, 2, 5, 4, 6), (3, 2, 2, 3, 2), {"stride": (1, 2, 2), "padding": 1}),
    ("conv3d", (1, 3, 4, 5, 3), (3, 1, 2, 2, 2), {"padding": "same", "groups": 3}),
    ("conv_transpose1d", (2, 4, 7), (4, 3, 3), {"stride": 3, "padding": 1,
                                                "output_padding": 2, "groups": 2}),
    ("conv_transpose2d", (2, 3, 5, 4), (3, 2, 3, 2), {"stride": (2, 3), "padding": (1, 0),
                                                      "output_padding": (1, 2)}),
    ("conv_transpose2d", (1, 4, 3, 5), (4, 1, 2, 3), {"dilation": (2, 1), "groups": 2,
                                                      "output_padding": (1, 0),
                                                      "stride": (1, 1)}),
    ("conv_transpose3d", (2, 2, 3, 4, 3), (2, 3, 2, 3, 2), {"stride": 2, "padding": (0, 1, 1),
                                                            "output_padding": (1, 0, 1)}),
]


def _bias_channels(name, weight, kwargs):
    if name.startswith("conv_transpose"):
        return weight[1] * kwargs.get("groups", 1)
    return weight[0]


@pytest.mark.parametrize("name, x_shape, w_shape, kwargs", CONVS,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CONVS)])
@pytest.mark.parametrize("dtype", [genesis.float32, genesis.float64, genesis.bfloat16,
                                   genesis.float16])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_conv_matches_torch(name, x_shape, w_shape, kwargs, dtype, layout, rng, device):
    if dtype in (genesis.bfloat16, genesis.float16) and layout == "transposed":
        pytest.skip("one layout suffices for the half types")
    b_shape = (_bias_channels(name, w_shape, kwargs),)
    compare(lambda x, w, b: getattr(F, name)(x, w, b, **kwargs),
            lambda x, w, b: getattr(TF, name)(x, w, b, **kwargs),
            [x_shape, w_shape, b_shape], dtype, device, rng, layout=layout)


@pytest.mark.parametrize("name, x_shape, w_shape, kwargs", CONVS[::2],
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CONVS[::2])])
def test_conv_gradcheck(name, x_shape, w_shape, kwargs, rng, device):
    shrink = [1] + [min(s, 4) for s in x_shape[-len(w_shape) + 1:]]
    x_shape = (*x_shape[:-len(shrink)], *shrink) if len(x_shape) == len(w_shape) else \
        (x_shape[0], *shrink)
    shapes = [x_shape, w_shape, (_bias_channels(name, w_shape, kwargs),)]
    inputs = [genesis.tensor(rng.uniform(-1, 1, s), dtype=genesis.float64, device=device,
                             requires_grad=True) for s in shapes]
    assert gradcheck(lambda x, w, b: getattr(F, name)(x, w, b, **kwargs), inputs)


@pytest.mark.parametrize("name, x_shape, w_shape", [
    ("conv2d", (0, 3, 5, 5), (2, 3, 3, 3)),
    ("conv_transpose1d", (0, 2, 5), (2, 3, 2)), ("conv3d", (0, 1, 3, 3, 3), (2, 1, 2, 2, 2))])
def test_conv_empty(name, x_shape, w_shape, rng, device):
    compare(lambda x, w: getattr(F, name)(x, w), lambda x, w: getattr(TF, name)(x, w),
            [x_shape, w_shape], device=device, rng=rng)


def test_conv_without_bias_and_unbatched(rng, device):
    compare(lambda x, w: F.conv2d(x, w, padding=1), lambda x, w: TF.conv2d(x, w, padding=1),
            [(3, 5, 4), (2, 3, 3, 3)], device=device, rng=rng)
    compare(lambda x, w: F.conv_transpose2d(x, w, stride=2),
            lambda x, w: TF.conv_transpose2d(x, w, stride=2), [(3, 4, 4), (3, 2, 2, 2)],
            device=device, rng=rng)


CONV_ERRORS = [
    (lambda d: F.conv2d(genesis.randn(1, 4, 5, 5, device=d), genesis.randn(2, 3, 3, 3, device=d)),
     RuntimeError, r"expected input\[1, 4, 5, 5\] to have 3 channels, but got 4"),
    (lambda d: F.conv2d(genesis.randn(5, 5, device=d), genesis.randn(2, 3, 3, 3, device=d)),
     RuntimeError, r"Expected 3D \(unbatched\) or 4D \(batched\) input to conv2d"),
    (lambda d: F.conv2d(genesis.randn(1, 3, 2, 2, device=d), genesis.randn(2, 3, 3, 3, device=d)),
     RuntimeError, "Kernel size can't be greater than actual input size"),
    (lambda d: F.conv_transpose2d(genesis.randn(1, 4, 5, 5, device=d),
                                  genesis.randn(3, 2, 3, 3, device=d)),
     RuntimeError, r"transposed=1, weight of size \[3, 2, 3, 3\]"),
    (lambda d: F.conv_transpose2d(genesis.randn(1, 4, 5, 5, device=d),
                                  genesis.randn(4, 2, 3, 3, device=d), stride=2,
                                  output_padding=2),
     RuntimeError, "output padding must be smaller than either stride or dilation"),
    (lambda d: F.conv_transpose2d(genesis.randn(1, 4, 5, 5, device=d),
                                  genesis.randn(4, 2, 3, 3, device=d), padding="same"),
     TypeError, "must be tuple of ints, not str"),
    (lambda d: F.conv2d(genesis.randn(1, 4, 5, 5, device=d), genesis.randn(2, 4, 3, 3, device=d),
                        padding="foo"), RuntimeError, "Invalid padding string: 'foo'"),
    (lambda d: F.conv2d(genesis.randn(1, 4, 5, 5, device=d), genesis.randn(2, 4, 3, 3, device=d),
                        stride=0), RuntimeError, "non-positive stride is not supported"),
    (lambda d: F.conv2d(genesis.randn(1, 4, 5, 5, device=d), genesis.randn(2, 4, 3, 3, device=d),
                        padding=-1), RuntimeError, "negative padding is not supported"),
    (lambda d: F.conv2d(genesis.randn(1, 4, 5, 5, device=d), genesis.randn(2, 4, 3, 3, device=d),
                        genesis.randn(3, device=d)),
     RuntimeError, "expected bias to be 1-dimensional with 2 elements"),
    (lambda d: F.conv2d(genesis.randn(1, 4, 5, 5, device=d), genesis.randn(3, 2, 3, 3, device=d),
                        groups=2), RuntimeError, "expected weight to be divisible by 2"),
    (lambda d: F.conv1d(genesis.randn(1, 3, 5, device=d), genesis.randn(2, 3, 3, device=d),
                        stride=2, padding="same"), ValueError, "strided convolutions"),
    (lambda d: F.conv2d(genesis.randn(1, 3, 5, 5, device=d),
                        genesis.randn(2, 3, 3, 3, dtype=genesis.float64, device=d)),
     RuntimeError, "same dtype and device"),
    (lambda d: nn.Conv2d(3, 3, 3, padding_mode="foo"), ValueError, "padding_mode must be one of"),
    (lambda d: nn.ConvTranspose2d(3, 3, 3, padding_mode="reflect"), ValueError,
     'Only "zeros" padding mode is supported for ConvTranspose2d'),
    (lambda d: nn.Conv2d(3, 3, 3, padding="same", stride=2), ValueError, "strided convolutions"),
    (lambda d: nn.Conv2d(3, 4, 3, groups=2), ValueError, "in_channels must be divisible"),
    (lambda d: nn.ConvTranspose1d(2, 2, 3, stride=2)(genesis.randn(1, 2, 4), output_size=[20]),
     ValueError, "requested an output size of"),
]


@pytest.mark.parametrize("call, error, match", CONV_ERRORS)
def test_conv_errors(call, error, match, device):
    with pytest.raises(error, match=match):
        call(device)


@pytest.mark.parametrize("layer, args, shape", [
    ("Conv2d", (3, 4, 3), (1, 5, 8, 8)), ("Conv2d", (3, 4, 3), (5, 8, 8)),
    ("Conv2d", (3, 4, 3), (8, 8)), ("Conv2d", (4, 4, 3, 1, 0, 1, 2), (1, 6, 8, 8)),
    ("Conv1d", (3, 4, 3), (2, 3, 4, 4)), ("Conv3d", (2, 4, 3), (1, 3, 4, 4, 4)),
    ("ConvTranspose2d", (3, 4, 3), (1, 5, 8, 8))], ids=str)
def test_conv_layer_refusals_as_torch(layer, args, shape, device):
    """A convolution layer refuses an input of the wrong rank or channels in torch's words
    (its functional's: 'Given groups=1, weight of size [4, 3, 3, 3], expected input[1, 5, 8,
    8] to have 3 channels, but got 5 channels instead'), after the op's name where torch's
    functional names none."""
    with pytest.raises(RuntimeError) as expected:
        getattr(torch.nn, layer)(*args)(torch.zeros(shape))
    with pytest.raises(RuntimeError) as got:
        getattr(nn, layer)(*args).to(device)(genesis.zeros(shape, device=device))
    text, words = str(got.value), str(expected.value)
    assert text.endswith(words) and re.fullmatch(r"(\w+: )?", text[:-len(words)])


# (layer, positional args, kwargs, input shape); the layer's own padding_mode is exercised.
LAYERS = [
    ("Conv1d", (4, 6, 3), {"stride": 2, "padding": 2, "groups": 2, "padding_mode": "reflect"},
     (2, 4, 9)),
    ("Conv1d", (3, 2, 4), {"padding": "same", "padding_mode": "circular"}, (3, 8)),
    ("Conv2d", (3, 4, (3, 2)), {"padding": (1, 2), "padding_mode": "replicate",
                                "dilation": (1, 2)}, (2, 3, 6, 5)),
    ("Conv2d", (2, 4, 4), {"padding": "same", "padding_mode": "reflect", "bias": False},
     (1, 2, 7, 6)),
    ("Conv2d", (2, 2, 3), {"padding": 1, "padding_mode": "circular"}, (2, 2, 4, 5)),
    ("Conv3d", (2, 3, 2), {"padding": 1, "padding_mode": "replicate", "stride": 2},
     (1, 2, 4, 5, 3)),
    ("ConvTranspose1d", (4, 2, 3), {"stride": 2, "output_padding": 1, "groups": 2}, (2, 4, 5)),
    ("ConvTranspose2d", (3, 4, (2, 3)), {"stride": 2, "padding": 1, "dilation": 2},
     (2, 3, 4, 3)),
    ("ConvTranspose3d", (2, 2, 2), {"stride": (2, 1, 2), "bias": False}, (1, 2, 3, 2, 3)),
]


@pytest.mark.parametrize("name, args, kwargs, shape", LAYERS,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(LAYERS)])
def test_layer_matches_torch(name, args, kwargs, shape, rng, device):
    t_layer = getattr(torch.nn, name)(*args, **kwargs).double()
    g_layer = copy_module(getattr(nn, name)(*args, **kwargs, dtype=genesis.float64), t_layer,
                          device)
    assert repr(g_layer) == repr(t_layer)
    compare(g_layer, t_layer, [shape], genesis.float64, device, rng)
    assert_param_grads(g_layer, t_layer)
    for key, value in torch_state(g_layer).items():
        assert torch.equal(value, t_layer.state_dict()[key])


def test_conv_transpose_output_size(rng, device):
    t_layer = torch.nn.ConvTranspose2d(2, 3, 3, stride=3, padding=1)
    g_layer = copy_module(nn.ConvTranspose2d(2, 3, 3, stride=3, padding=1), t_layer, device)
    g, t = make_pair((1, 2, 4, 3), device=device, rng=rng)
    for size in [(10, 8), (1, 3, 12, 9), (11, 7)]:
        assert_close(g_layer(g, output_size=size), t_layer(t, output_size=size))


@pytest.mark.parametrize("name, args, kwargs", [
    ("Conv1d", (4, 6, 3), {"groups": 2}), ("Conv3d", (2, 4, (1, 2, 3)), {}),
    ("ConvTranspose2d", (6, 4, 3), {"groups": 2})])
def test_layer_init_as_torch(name, args, kwargs):
    """Weights uniform within torch's kaiming bound for the weight's fan-in, bias within
    1/sqrt(fan_in), and the same shapes as torch's."""
    g_layer, t_layer = getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)
    assert g_layer.weight.shape == t_layer.weight.shape
    fan_in = g_layer.weight.shape[1] * math.prod(g_layer.weight.shape[2:])
    bound = 1 / math.sqrt(fan_in)
    for p in (g_layer.weight, g_layer.bias):
        values = p.detach().numpy()
        assert abs(values).max() <= bound
        if values.size >= 64:  # all of them under half the bound: probability 2^-64
            assert abs(values).max() > 0.5 * bound


@pytest.mark.parametrize("kwargs", [{"kernel_size": 2}, {"kernel_size": (2, 3), "dilation": 2,
                                                         "padding": 1, "stride": (1, 2)}])
def test_fold_unfold_layers(kwargs, rng, device):
    compare(nn.Unfold(**kwargs), torch.nn.Unfold(**kwargs), [(2, 3, 6, 7)], device=device,
            rng=rng)
    blocks = torch.nn.Unfold(**kwargs)(torch.zeros(1, 1, 6, 7)).shape[-1]
    k = math.prod(torch.nn.modules.utils._pair(kwargs["kernel_size"]))
    compare(nn.Fold((6, 7), **kwargs), torch.nn.Fold((6, 7), **kwargs), [(2, 3 * k, blocks)],
            device=device, rng=rng)
    assert repr(nn.Fold((6, 7), **kwargs)) == repr(torch.nn.Fold((6, 7), **kwargs))


@pytest.mark.parametrize("call", [
    lambda m: m.nn.functional.unfold(m.ones(2, 3), 2),
    lambda m: m.nn.Unfold(2)(m.ones(4)),
    lambda m: m.nn.functional.unfold(m.ones(1, 1, 4, 4, 4), 2),
    lambda m: m.nn.functional.unfold(m.ones(1, 1, 4, 0), 2),
    lambda m: m.nn.functional.unfold(m.ones(2, 3), 0),
    lambda m: m.nn.functional.unfold(m.ones(1, 1, 4, 4), 2, dilation=0, padding=-1, stride=0),
    lambda m: m.nn.functional.unfold(m.ones(1, 1, 4, 4), 2, padding=-1, stride=0),
    lambda m: m.nn.functional.unfold(m.ones(1, 1, 4, 4), 2, stride=0),
    lambda m: m.nn.functional.unfold(m.ones(1, 1, 4, 4), 9, stride=2),
    lambda m: m.nn.functional.fold(m.ones(1, 4, 5), (3, 3), 2),
    lambda m: m.nn.Fold((3, 3), 2)(m.ones(1, 5, 4)),
    lambda m: m.nn.functional.fold(m.ones(4, 5, 6, 7), (3, 3), 2),
    lambda m: m.nn.functional.fold(m.ones(4, 0), (3, 3), 2),
    lambda m: m.nn.functional.fold(m.ones(4, 5, 6, 7), (3, 3), 0),
    lambda m: m.nn.functional.fold(m.ones(1, 4, 4), 3, 2, dilation=0, padding=-1, stride=0),
    lambda m: m.nn.functional.fold(m.ones(1, 4, 4), 3, 2, dilation=0, padding=-1),
    lambda m: m.nn.functional.fold(m.ones(1, 4, 4), 3, 2, padding=-1),
    lambda m: m.nn.functional.unfold(m.ones(1, 1, 4, 4), (2, 2, 2)),
    lambda m: m.nn.Unfold([2])(m.ones(1, 1, 4, 4)),
    lambda m: m.nn.functional.unfold(m.ones(1, 1, 4, 4, 4), (0, 2, 2), stride=(1, 1, 1)),
    lambda m: m.nn.functional.unfold(m.ones(1, 1, 4, 4), 2, padding=(1, 1, 1), dilation=()),
    lambda m: m.nn.functional.unfold(m.ones(1, 1, 4, 4), 2, stride=(1, 1, 1), padding=-1),
    lambda m: m.nn.functional.unfold(m.ones(1, 1, 4, 4), (2, 2, 2), stride=(1.5, 1)),
    lambda m: m.nn.functional.unfold(m.ones(1, 1, 4, 4), (True, 2)),
    lambda m: m.nn.functional.unfold(m.ones(1, 1, 4, 4), None),
    lambda m: m.nn.functional.fold(m.ones(1, 8, 16), (5, 5, 5), (2, 2, 2)),
    lambda m: m.nn.Fold((5, 5), (2, 2, 2))(m.ones(1, 8, 16)),
    lambda m: m.nn.functional.fold(m.ones(1, 8, 16), [5], 2),
    lambda m: m.nn.functional.fold(m.ones(4, 5, 6, 7), (5, 5), 2, stride=(1, 1, 1),
                                   dilation=(1, 1, 1)),
    lambda m: m.nn.functional.fold(m.ones(1, 8, 16), (5, 5), 0, padding=(1, 1, 1)),
    lambda m: m.nn.functional.fold(m.ones(1, 8, 16), (5.0, 5), (2, 2, 2))])
def test_fold_unfold_refusals_as_torch(call):
    """Inputs of another rank or with an empty dim, window arguments out of range (in each
    op's order of checks) and block counts that do not fit, in torch's words and types
    (unfold's input of fewer than 3 dims is an IndexError, as torch's); window arguments that
    are no pair of ints, element types first (TypeError), then lengths in argument order."""
    assert_refuses_as_torch(call)


def test_conv_tbc_matches_torch(rng, device):
    compare(lambda x, w, b: F.conv_tbc(x, w, b, 2), lambda x, w, b: TF.conv_tbc(x, w, b, 2),
            [(7, 2, 3), (3, 3, 4), (4,)], genesis.float64, device, rng)


def test_integer_conv_matches_torch(rng, device):
    (g, t), (gw, tw) = (make_pair(s, genesis.int64, device=device, rng=rng)
                        for s in ((2, 3, 6, 5), (4, 3, 2, 3)))
    assert_close(F.conv2d(g, gw, stride=2, padding=1), TF.conv2d(t, tw, stride=2, padding=1))


def test_conv_transpose_gradgradcheck(rng, device):
    inputs = [genesis.tensor(rng.uniform(-1, 1, s), dtype=genesis.float64, device=device,
                             requires_grad=True) for s in ((1, 2, 3, 2), (2, 1, 2, 2), (1,))]
    assert gradgradcheck(lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1,
                                                            output_padding=1), inputs)


@pytest.mark.parametrize("name, w_shape, kwargs", [
    ("conv2d", (6, 4, 3, 3), {"padding": 1}),
    ("conv_transpose2d", (4, 6, 2, 2), {"stride": 2})])
def test_channels_last_gradients_keep_the_layout(name, w_shape, kwargs, rng, device):
    """The gradient reaching a channels-last input is channels-last, as torch's, from an output
    gradient of either layout: the backward lays that out as the input."""
    (x, tx), (w, tw) = (make_pair(s, device=device, rng=rng, requires_grad=True)
                        for s in ((2, 4, 5, 7), w_shape))
    strides = {}
    for key, t, lib in (("genesis", x, genesis), ("torch", tx, torch)):
        cl = t.contiguous(memory_format=lib.channels_last)
        cl.register_hook(lambda g, key=key: strides.update({key: g.stride()}))
        out = getattr(F if lib is genesis else TF, name)(cl, w if lib is genesis else tw,
                                                         **kwargs)
        out.backward(lib.ones(out.shape, device=out.device))
    assert strides["genesis"] == strides["torch"]
    assert_close(x.grad, tx.grad)
    assert_close(w.grad, tw.grad)


@pytest.mark.parametrize("name, w_shape, kwargs", [
    ("conv2d", (4, 1, 3, 3), {"stride": 2, "padding": 1}),
    ("conv_transpose2d", (1, 4, 3, 3), {"stride": 2, "padding": 1, "output_padding": 1})])
def test_contiguous_results_and_input_gradients_as_torch(name, w_shape, kwargs, rng, device):
    """A one-channel convolution's input gradient (a transposed convolution) is contiguous, as
    torch's: a gradient penalty views it as (N, -1)."""
    (x, tx), (w, tw) = (make_pair(s, device=device, rng=rng, requires_grad=True)
                        for s in ((2, w_shape[1] if name == "conv2d" else 1, 6, 6), w_shape))
    out = getattr(F, name)(x, w, **kwargs)
    t_out = getattr(TF, name)(tx, tw, **kwargs)
    gx, = genesis.autograd.grad(out.sum(), x)
    tgx, = torch.autograd.grad(t_out.sum(), tx)
    assert (out.stride(), gx.stride()) == (t_out.stride(), tgx.stride())
    assert_close(gx.view(gx.size(0), -1), tgx.view(tgx.size(0), -1))


def test_channels_last_weight_gets_its_gradient_in_its_layout(rng, device, monkeypatch):
    """A channels-last weight's gradient is computed in the weight's layout, so its .grad is
    the kernel's result, not re-laid out (PyTorch's gradient layout contract, without a copy)."""
    from genesis.autograd import function
    relaid = []
    monkeypatch.setattr(function, "_laid_out_as", lambda grad, leaf: relaid.append(leaf) or grad)
    conv = nn.Conv2d(4, 6, 3, padding=1).to(device=device, memory_format=genesis.channels_last)
    x, tx = make_pair((2, 4, 5, 7), device=device, rng=rng)
    conv(x.contiguous(memory_format=genesis.channels_last)).sum().backward()
    assert conv.weight.grad.stride() == conv.weight.stride()
    assert not any(leaf is conv.weight for leaf in relaid)
    t_conv = torch.nn.Conv2d(4, 6, 3, padding=1)
    t_conv.load_state_dict(torch_state(conv))
    t_conv(tx).sum().backward()
    assert_close(conv.weight.grad, t_conv.weight.grad)


@pytest.mark.parametrize("dims", [1, 2, 3])
@pytest.mark.parametrize("dtype", ["float64", "float32", "bfloat16"])
@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("transposed", [False, True])
def test_results_laid_out_as_torch(dims, dtype, channels_last, transposed):
    """Every convolution's result has torch's strides: contiguous for a contiguous input (the
    im2col path's product is channels-last, and a float64 or 3-D network's `.view(n, -1)`
    failed), channels-last where torch keeps the input's."""
    strides = []
    for lib in (torch, genesis):
        F = lib.nn.functional
        x = lib.randn(2, 3, *(5,) * dims, dtype=getattr(lib, dtype))
        if channels_last and dims > 1:
            x = x.contiguous(memory_format=lib.channels_last if dims == 2
                             else lib.channels_last_3d)
        if transposed:
            w = lib.randn(3, 4, *(3,) * dims, dtype=x.dtype)
            out = getattr(F, f"conv_transpose{dims}d")(x, w)
        else:
            w = lib.randn(4, 3, *(3,) * dims, dtype=x.dtype)
            out = getattr(F, f"conv{dims}d")(x, w, padding=1)
        strides.append(out.stride())
        if not channels_last:
            out.view(2, -1)
    assert strides[1] == strides[0]
