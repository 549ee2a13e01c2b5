"""nn.utils.fusion folds an eval-mode BatchNorm into the convolution or linear layer before it:
the fused layer's parameters equal torch's and its output equals bn(layer(x)); and
convert_conv2d/3d_weight_memory_format re-lays only convolution weights."""

import numpy as np
import pytest
import torch
from helpers import assert_close, from_torch
from nn_compare import copy_module

import genesis
from genesis import nn

CASES = [  # (layer, bn, input shape, transpose)
    (lambda lib: lib.nn.Conv2d(3, 5, 3, padding=1), lambda lib: lib.nn.BatchNorm2d(5),
     (2, 3, 6, 7), False),
    (lambda lib: lib.nn.Conv1d(4, 6, 3, bias=False), lambda lib: lib.nn.BatchNorm1d(6),
     (3, 4, 9), False),
    (lambda lib: lib.nn.ConvTranspose2d(3, 4, 2, stride=2), lambda lib: lib.nn.BatchNorm2d(4),
     (2, 3, 5, 5), True),
    (lambda lib: lib.nn.Conv3d(2, 3, 2), lambda lib: lib.nn.BatchNorm3d(3, affine=False),
     (1, 2, 4, 4, 4), False),
]


def _trained_pair(make, rng):
    """A torch module with random parameters and running statistics, and its genesis copy."""
    theirs = make(torch).double()
    with torch.no_grad():
        floats = [b for b in theirs.buffers() if b.is_floating_point()]
        for tensor in list(theirs.parameters()) + floats:
            tensor.copy_(torch.from_numpy(rng.uniform(0.5, 1.5, tuple(tensor.shape))))
    ours = copy_module(make(genesis).double(), theirs)
    return ours.eval(), theirs.eval()


@pytest.mark.parametrize("layer, bn, shape, transpose", CASES)
def test_fuse_conv_bn_eval_as_torch(layer, bn, shape, transpose, rng):
    conv, t_conv = _trained_pair(layer, rng)
    norm, t_norm = _trained_pair(bn, rng)
    fused = nn.utils.fuse_conv_bn_eval(conv, norm, transpose=transpose)
    t_fused = torch.nn.utils.fuse_conv_bn_eval(t_conv, t_norm, transpose=transpose)
    assert fused is not conv and isinstance(fused.weight, nn.Parameter)
    assert_close(fused.weight, t_fused.weight)
    assert_close(fused.bias, t_fused.bias)
    x = torch.from_numpy(rng.standard_normal(shape))
    assert_close(fused(from_torch(x)), t_norm(t_conv(x)))


def test_fuse_linear_bn_eval_as_torch(rng):
    linear, t_linear = _trained_pair(lambda lib: lib.nn.Linear(4, 3), rng)
    norm, t_norm = _trained_pair(lambda lib: lib.nn.BatchNorm1d(3), rng)
    fused = nn.utils.fuse_linear_bn_eval(linear, norm)
    x = torch.from_numpy(rng.standard_normal((5, 4)))
    assert_close(fused(from_torch(x)), t_norm(t_linear(x)))
    assert_close(fused.weight, torch.nn.utils.fuse_linear_bn_eval(t_linear, t_norm).weight)


def test_fusion_refuses_training_mode_and_mismatched_features():
    with pytest.raises(AssertionError, match="Fusion only for eval!"):
        nn.utils.fuse_conv_bn_eval(nn.Conv2d(1, 2, 1), nn.BatchNorm2d(2).eval())
    with pytest.raises(AssertionError, match="linear.out_features=3 and bn.num_features=4"):
        nn.utils.fuse_linear_bn_eval(nn.Linear(2, 3).eval(), nn.BatchNorm1d(4).eval())


def test_convert_conv_weight_memory_format_touches_only_convolutions():
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4),
                          nn.Sequential(nn.ConvTranspose2d(4, 2, 2)), nn.Conv3d(2, 3, 2))
    before = [p.detach().clone() for p in model.parameters()]
    assert nn.utils.convert_conv2d_weight_memory_format(model, genesis.channels_last) is model
    assert model[0].weight.is_contiguous(memory_format=genesis.channels_last)
    assert model[2][0].weight.is_contiguous(memory_format=genesis.channels_last)
    assert not model[0].weight.is_contiguous()
    assert model[3].weight.is_contiguous()
    assert not model[3].weight.is_contiguous(memory_format=genesis.channels_last_3d)
    nn.utils.convert_conv3d_weight_memory_format(model, genesis.channels_last_3d)
    assert model[3].weight.is_contiguous(memory_format=genesis.channels_last_3d)
    for b, p in zip(before, model.parameters()):
        np.testing.assert_array_equal(p.detach().numpy(), b.numpy())
    assert isinstance(model[0].weight, nn.Parameter)


def test_clip_grad_norm_is_the_deprecated_name():
    p = nn.Parameter(genesis.ones(3))
    p.grad = genesis.full((3,), 4.0)
    with pytest.warns(FutureWarning, match="in favor of `torch.nn.utils.clip_grad_norm_`"):
        total = nn.utils.clip_grad_norm(p, 1.0)
    assert abs(total.item() - 48 ** 0.5) < 1e-5
