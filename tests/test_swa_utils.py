"""genesis.optim.swa_utils against torch.optim.swa_utils: averaged weights (SWA, EMA, custom
functions, buffers), SWALR's lr sequence and update_bn's recomputed statistics."""

import numpy as np
import pytest
import torch

import genesis
from genesis import nn, optim
from genesis.optim import swa_utils


def _models(rng):
    """The same small model (Linear, BatchNorm1d, Linear) in both frameworks."""
    g = nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6), nn.Linear(6, 2))
    t = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.BatchNorm1d(6),
                            torch.nn.Linear(6, 2))
    _copy_weights(g, t, rng)
    return g, t


def _copy_weights(g, t, rng):
    """Fresh random weights and buffers, the same in both models."""
    with torch.no_grad(), genesis.no_grad():
        for a, b in zip(list(g.parameters()) + list(g.buffers()),
                        list(t.parameters()) + list(t.buffers())):
            if b.is_floating_point():
                value = rng.standard_normal(tuple(b.shape)).astype(np.float32)
                if b is t[1].running_var:
                    value = np.abs(value) + 0.5
            else:
                value = np.array(rng.integers(0, 5), dtype=np.int64)
            a.copy_(genesis.tensor(value))
            b.copy_(torch.tensor(value))


def _assert_same(g, t):
    for a, b in zip(list(g.parameters()) + list(g.buffers()),
                    list(t.parameters()) + list(t.buffers())):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6, atol=1e-6)


AVERAGING = {
    "swa": lambda S: dict(),
    "ema": lambda S: dict(multi_avg_fn=S.get_ema_multi_avg_fn(0.9)),
    "ema-avg_fn": lambda S: dict(avg_fn=S.get_ema_avg_fn(0.8)),
    "swa-avg_fn": lambda S: dict(avg_fn=S.get_swa_avg_fn()),
    "swa-buffers": lambda S: dict(use_buffers=True),
    "swa-multi": lambda S: dict(multi_avg_fn=S.get_swa_multi_avg_fn()),
    "ema-buffers": lambda S: dict(multi_avg_fn=S.get_ema_multi_avg_fn(0.7), use_buffers=True),
}


@pytest.mark.parametrize("name", AVERAGING)
def test_averaged_model_matches_torch(name, rng):
    g, t = _models(rng)
    gavg = swa_utils.AveragedModel(g, **AVERAGING[name](swa_utils))
    tavg = torch.optim.swa_utils.AveragedModel(t, **AVERAGING[name](torch.optim.swa_utils))
    for _ in range(5):
        _copy_weights(g, t, rng)
        gavg.update_parameters(g)
        tavg.update_parameters(t)
        _assert_same(gavg, tavg)
    assert int(gavg.n_averaged) == int(tavg.n_averaged) == 5
    x = rng.standard_normal((3, 4)).astype(np.float32)
    gavg.eval()
    tavg.eval()
    np.testing.assert_allclose(gavg(genesis.tensor(x)).detach().numpy(),
                               tavg(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_averaged_model_state_dict_keys_as_torch(rng):
    g, t = _models(rng)
    assert (list(swa_utils.AveragedModel(g).state_dict())
            == list(torch.optim.swa_utils.AveragedModel(t).state_dict()))


def test_update_bn_matches_torch(rng):
    g, t = _models(rng)
    g.eval()
    t.eval()
    batches = [rng.standard_normal((5, 4)).astype(np.float32) for _ in range(4)]
    swa_utils.update_bn([(genesis.tensor(b), 0) for b in batches], g)
    torch.optim.swa_utils.update_bn([(torch.tensor(b), 0) for b in batches], t)
    _assert_same(g, t)
    assert not g.training and g[1].momentum == t[1].momentum == 0.1


@pytest.mark.parametrize("kwargs", [dict(swa_lr=0.05), dict(swa_lr=[0.01, 0.2], anneal_epochs=3,
                                                          anneal_strategy="linear"),
                                    dict(swa_lr=0.02, anneal_epochs=0)])
def test_swalr_matches_torch(kwargs):
    def make(lib, opt):
        params = [lib.zeros(2, requires_grad=True), lib.zeros(3, requires_grad=True)]
        return opt.SGD([{"params": params[:1]}, {"params": params[1:], "lr": 0.3}], lr=0.1)
    gopt, topt = make(genesis, optim), make(torch, torch.optim)
    gsched = swa_utils.SWALR(gopt, **kwargs)
    tsched = torch.optim.swa_utils.SWALR(topt, **kwargs)
    for _ in range(15):
        assert gsched.get_last_lr() == pytest.approx(tsched.get_last_lr(), rel=1e-12)
        gopt.step()
        topt.step()
        gsched.step()
        tsched.step()


@pytest.mark.parametrize("build,message", [
    (lambda S, opt: S.SWALR(opt, 0.1, anneal_strategy="step"),
     "anneal_strategy must be one of 'cos' or 'linear', instead got step"),
    (lambda S, opt: S.SWALR(opt, 0.1, anneal_epochs=-1),
     "anneal_epochs must be equal or greater than 0, got -1"),
    (lambda S, opt: S.get_ema_multi_avg_fn(1.5), r"Invalid decay value 1.5 provided"),
])
def test_bad_input_as_torch(build, message):
    for lib, opt, S in ((genesis, optim, swa_utils), (torch, torch.optim, torch.optim.swa_utils)):
        o = opt.SGD([lib.zeros(2, requires_grad=True)], lr=0.1)
        with pytest.raises(ValueError, match=message):
            build(S, o)
