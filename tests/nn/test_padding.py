"""F.pad in every mode and the padding layers against torch, with gradients."""

import pytest
import torch
import torch.nn.functional as TF
from helpers import assert_refuses_as_torch, make_pair
from nn_compare import compare

import genesis
import genesis.nn as nn
import genesis.nn.functional as F
from genesis.autograd import gradcheck

# (input shape, pad) for every number of padded dims the non-constant modes support
CASES = [((3, 7), (2, 3)), ((2, 3, 6), (1, 4)), ((2, 5, 6), (2, 1, 3, 4)),
         ((2, 3, 5, 6), (0, 3, 2, 1)), ((3, 4, 5, 6), (1, 2, 3, 1, 2, 0)),
         ((1, 2, 4, 5, 6), (2, 2, 1, 3, 3, 1)), ((2, 3, 6), (-1, 2))]


@pytest.mark.parametrize("shape, pad", CASES, ids=[str(c[1]) for c in CASES])
@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("dtype", [genesis.float32, genesis.float64, genesis.bfloat16,
                                   genesis.float16])
def test_pad_matches_torch(shape, pad, mode, dtype, rng, device):
    kwargs = {"value": 0.75} if mode == "constant" else {}
    compare(lambda x: F.pad(x, pad, mode, **kwargs), lambda x: TF.pad(x, pad, mode, **kwargs),
            [shape], dtype, device, rng, layout="transposed" if dtype is genesis.float32 else
            "contiguous")


def test_pad_empty_batch_and_constant_any_rank(rng, device):
    for mode in ("constant", "reflect", "replicate", "circular"):
        compare(lambda x: F.pad(x, (1, 2), mode), lambda x: TF.pad(x, (1, 2), mode),
                [(0, 2, 5)], device=device, rng=rng)
    compare(lambda x: F.pad(x, (1, 0, 0, 2, 1, 1, 2, 0)),
            lambda x: TF.pad(x, (1, 0, 0, 2, 1, 1, 2, 0)), [(2, 3, 1, 2, 3)], device=device,
            rng=rng)


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_pad_gradcheck(mode, rng, device):
    x = genesis.tensor(rng.uniform(-1, 1, (1, 2, 3, 4)), dtype=genesis.float64, device=device,
                       requires_grad=True)
    assert gradcheck(lambda x: F.pad(x, (3, 2, 2, 1), mode), [x])


LAYERS = [("ZeroPad1d", (2,)), ("ZeroPad2d", ((1, 0, 2, 3),)), ("ZeroPad3d", (1,)),
          ("ConstantPad1d", ((3, 1), 2.5)), ("ConstantPad2d", (1, -1.0)),
          ("ConstantPad3d", ((1, 0, 0, 2, 1, 1), 0.5)), ("ReflectionPad1d", ((2, 1),)),
          ("ReflectionPad2d", (2,)), ("ReflectionPad3d", ((1, 2, 0, 1, 2, 1),)),
          ("ReplicationPad1d", (3,)), ("ReplicationPad2d", ((0, 1, 4, 2),)),
          ("ReplicationPad3d", (2,)), ("CircularPad1d", (2,)), ("CircularPad2d", ((1, 2, 3, 0),)),
          ("CircularPad3d", (1,))]


@pytest.mark.parametrize("name, args", LAYERS, ids=[c[0] for c in LAYERS])
def test_layer_matches_torch(name, args, rng, device):
    g_layer, t_layer = getattr(nn, name)(*args), getattr(torch.nn, name)(*args)
    assert repr(g_layer) == repr(t_layer)
    assert g_layer.padding == t_layer.padding
    dims = int(name[-2])
    for shape in [(2, 3, 4, 5, 6)[-dims - 2:], (3, 4, 5, 6)[-dims - 1:]]:
        compare(g_layer, t_layer, [shape], device=device, rng=rng)


PAD_ERRORS = [
    (lambda d: F.pad(genesis.randn(5, device=d), (1, 1), mode="reflect"), NotImplementedError,
     "Padding size 2 is not supported for 1D input tensor"),
    (lambda d: F.pad(genesis.randn(2, 3, 5, device=d), (1,) * 6, mode="replicate"),
     NotImplementedError, "Padding size 6 is not supported for 3D input tensor"),
    (lambda d: F.pad(genesis.randn(2, 3, 5, device=d), (5, 1), mode="reflect"), RuntimeError,
     "Padding size should be less than the corresponding input dimension"),
    (lambda d: F.pad(genesis.randn(2, 3, 5, device=d), (6, 1), mode="circular"), RuntimeError,
     "wrapping around more than once"),
    (lambda d: F.pad(genesis.randn(2, 3, 5, device=d), (1, 1), mode="foo"), NotImplementedError,
     "Unrecognised padding mode foo"),
    (lambda d: F.pad(genesis.randn(2, 0, 5, device=d), (1, 1), mode="reflect"), RuntimeError,
     "possibly 0 batch size and other non-zero dimensions"),
    (lambda d: F.pad(genesis.randn(2, 3, 5, device=d), (1, 1, 1)), RuntimeError,
     "Padding length must be divisible by 2"),
    (lambda d: F.pad(genesis.randn(2, 3, 5, device=d), (1, 1), mode="replicate", value=1),
     RuntimeError, "doesn't take in value argument"),
    (lambda d: nn.CircularPad2d(1)(genesis.randn(5, 5, device=d)), ValueError,
     r"expected 3D or 4D input \(got 2D input\)"),
]


@pytest.mark.parametrize("call, error, match", PAD_ERRORS)
def test_pad_errors(call, error, match, device):
    with pytest.raises(error, match=match):
        call(device)


@pytest.mark.parametrize("call", [
    lambda m: m.nn.ReflectionPad1d(2)(m.ones(1, 2)),
    lambda m: m.nn.ReflectionPad1d(2)(m.ones(1, 2, 2, 2)),
    lambda m: m.nn.ReflectionPad2d(3)(m.ones(1, 2, 2)),
    lambda m: m.nn.ReflectionPad2d((1, 1, 3, 3))(m.ones(1, 2, 2)),
    lambda m: m.nn.ReflectionPad3d(1)(m.ones(1, 1, 1, 3)),
    lambda m: m.nn.ReflectionPad3d(2)(m.ones(1, 2, 3, 3)),
    lambda m: m.nn.ReflectionPad2d(2)(m.ones(1, 0, 3)),
    lambda m: m.nn.ReflectionPad1d((-3, 0))(m.ones(1, 2)),
    lambda m: m.nn.ReplicationPad2d(2)(m.ones(3, 3)),
    lambda m: m.nn.ReplicationPad1d(2)(m.ones(2, 0)),
    lambda m: m.nn.ReplicationPad1d((-2, -1))(m.ones(1, 3)),
    lambda m: m.nn.CircularPad1d(3)(m.ones(1, 2)),
    lambda m: m.nn.CircularPad2d(2)(m.ones(1, 0, 3)),
    lambda m: m.nn.CircularPad3d(1)(m.ones(2, 2, 2)),
    lambda m: m.nn.functional.pad(m.ones(1, 2), (2, 2), mode="reflect"),
    lambda m: m.nn.functional.pad(m.ones(1, 2, 3, 4, 5, 6), (1, 1), mode="reflect"),
    lambda m: m.nn.functional.pad(m.ones(1, 2, 3), (1, 1), mode="foo"),
    lambda m: m.nn.functional.pad(m.ones(1, 2, 3), (-4, 2)),
    lambda m: m.nn.functional.pad(m.ones(1, 2, 3), (2, -4)),
    lambda m: m.nn.functional.pad(m.ones(1, 2, 3), (-1, -3))])
def test_pad_refusals_as_torch(call):
    """Inputs of a rank the mode cannot pad, empty dims, reflect padding as long as its dim
    (torch's 'Argument #4: ...' naming the input's shape), circular padding past it, negative
    padding that crops more than there is: in torch's words."""
    assert_refuses_as_torch(call)


def test_pad_negative_crops_in_every_mode(rng, device):
    g, t = make_pair((2, 3, 6), device=device, rng=rng)
    for mode in ("reflect", "replicate", "circular"):
        assert F.pad(g, (-2, 1), mode).shape == TF.pad(t, (-2, 1), mode).shape
