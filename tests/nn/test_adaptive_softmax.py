"""AdaptiveLogSoftmaxWithLoss against torch with the same weights: outputs, loss, gradients,
log_prob, predict and errors; and the layers the issue asks to check (Identity, Unflatten,
Bilinear)."""

import pytest
import torch
import torch.nn as tnn
from helpers import assert_close, from_torch

import genesis
import genesis.nn as nn


def _pair(rng, cutoffs=(3, 6), head_bias=True):
    t = tnn.AdaptiveLogSoftmaxWithLoss(8, 10, list(cutoffs), div_value=2.0,
                                       head_bias=head_bias).double()
    g = nn.AdaptiveLogSoftmaxWithLoss(8, 10, list(cutoffs), div_value=2.0,
                                      head_bias=head_bias).to(genesis.float64)
    assert list(g.state_dict()) == list(t.state_dict())
    g.load_state_dict({k: from_torch(v) for k, v in t.state_dict().items()})
    return g, t


def test_forward_backward_log_prob_predict(rng, device):
    g, t = _pair(rng)
    g.to(device)
    x = torch.tensor(rng.standard_normal((7, 8)), requires_grad=True)
    target = torch.tensor([0, 9, 4, 2, 7, 5, 8])
    gx = from_torch(x, device=device, requires_grad=True)
    out_g, out_t = g(gx, from_torch(target, device=device)), t(x, target)
    assert_close(out_g.output, out_t.output)
    assert_close(out_g.loss, out_t.loss)
    out_t.loss.backward()
    out_g.loss.backward()
    assert_close(gx.grad, x.grad)
    for name, p in t.named_parameters():
        assert_close(dict(g.named_parameters())[name].grad, p.grad)
    assert_close(g.log_prob(gx), t.log_prob(x))
    assert_close(g.predict(gx), t.predict(x))
    single = g(gx[0], from_torch(target[0], device=device))
    assert_close(single.output, t(x[0], target[0]).output)


def test_errors():
    with pytest.raises(ValueError, match="cutoffs should be a sequence of unique"):
        nn.AdaptiveLogSoftmaxWithLoss(8, 10, [5, 3])
    module = nn.AdaptiveLogSoftmaxWithLoss(8, 10, [4])
    with pytest.raises(RuntimeError, match="Target values should be in"):
        module(genesis.randn(2, 8), genesis.tensor([1, 10]))
    with pytest.raises(RuntimeError, match="1D target tensor expects 2D input"):
        module(genesis.randn(2, 2, 8), genesis.tensor([1, 2]))


def test_identity_unflatten_bilinear_match_torch(rng, device):
    x = torch.tensor(rng.standard_normal((3, 12)))
    g_x = from_torch(x, device=device)
    assert nn.Identity(54, unused="x")(g_x) is g_x
    assert_close(nn.Unflatten(1, (3, 4))(from_torch(x, device=device)),
                 tnn.Unflatten(1, (3, 4))(x))
    assert repr(nn.Unflatten(1, (3, 4))) == repr(tnn.Unflatten(1, (3, 4)))
    t_bil = tnn.Bilinear(12, 5, 4).double()
    g_bil = nn.Bilinear(12, 5, 4).to(genesis.float64)
    g_bil.load_state_dict({k: from_torch(v) for k, v in t_bil.state_dict().items()})
    g_bil.to(device)
    y = torch.tensor(rng.standard_normal((3, 5)))
    assert_close(g_bil(from_torch(x, device=device), from_torch(y, device=device)), t_bil(x, y))
    assert repr(g_bil) == repr(t_bil)
