"""The fused Adam step and the multi-tensor gradient clip on the GPU (kernels/optim.py).

The device-parametrized tests (tests/test_optim_fused.py, tests/nn/test_clip_grad.py) compare
every option with torch; these check what is particular to the CUDA kernels: one launch per
dtype for a whole parameter list, tensors spanning many chunks, unaligned and empty ones, the
table reused across steps, and a deterministic total norm.
"""

import numpy as np
import pytest
import torch
from helpers import assert_close, skip_no_cuda

import genesis
from genesis import nn, optim
from genesis.optim.optimizer import HOST_SCALARS
from genesis.backends.cuda import launch

pytestmark = skip_no_cuda

SIZES = [(300, 1000), (17,), (0,), (), (64, 3)]
TOL = {genesis.float32: 1e-5, genesis.float16: 2e-3, genesis.bfloat16: 1.6e-2,
       genesis.float64: 1e-12}


@pytest.fixture
def launches(monkeypatch):
    """Counts kernel launches through the bound-kernel path."""
    calls = []
    call = launch.BoundKernel.__call__

    def counting(self, *args):
        calls.append(self.name)
        return call(self, *args)
    monkeypatch.setattr(launch.BoundKernel, "__call__", counting)
    return calls


def _params(rng, dtypes, device):
    """Parameters of SIZES cycling through `dtypes`, plus one starting one element into a
    buffer (an address that is not 16-byte aligned)."""
    out = []
    for i, shape in enumerate(SIZES):
        value = rng.standard_normal(shape).astype(np.float32)
        out.append(genesis.tensor(value, dtype=dtypes[i % len(dtypes)], device=device))
    out.append(genesis.tensor(rng.standard_normal(1001), dtype=genesis.float32,
                              device=device)[1:])
    return [p.detach().requires_grad_() for p in out]


def _set_grads(params, rng, twins=()):
    """Random gradients for `params`, copied to `twins` (on their own devices)."""
    for p in params:
        p.grad = genesis.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32),
                                dtype=p.dtype, device=p.device)
    for p, twin in zip(params, twins):
        twin.grad = p.grad.to(twin.device, copy=True)


# L2 weight decay with a tiny eps is ill-conditioned where g + wd * p cancels to a few ulps:
# m / (sqrt(v) + eps) (Adamax: m / max(b2 u, |g| + eps)) then swings with the last bit (fma or
# not), so those cases take eps=1e-4 (seen on an H200: one element of 300000 off by 7e-5
# relative in Adam, by 6.6e-4 in Adamax, with the default eps).
@pytest.mark.parametrize("name,kwargs", [
    ("AdamW", dict(lr=0.01, weight_decay=0.1)),
    ("Adam", dict(lr=0.02, amsgrad=True, maximize=True, weight_decay=0.05, eps=1e-4)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("RAdam", dict(lr=0.01, weight_decay=0.05, eps=1e-4, maximize=True)),
    ("Adamax", dict(lr=0.01, weight_decay=0.1, eps=1e-4)),
    ("Adadelta", dict(lr=0.5, weight_decay=0.1, maximize=True)),
    ("ASGD", dict(lr=0.05, t0=1, weight_decay=0.1)),
    ("Rprop", dict(lr=0.01, maximize=True)),
])
def test_mixed_dtype_group_matches_the_cpu_kernel(name, kwargs, rng):
    """Three steps, each checked from the same parameters and state: the CPU kernel's values
    are copied to the GPU after each check, so that a last-bit difference (the GPU kernel may
    contract products into FMAs) is not carried into the next step and amplified."""
    dtypes = [genesis.float32, genesis.float16, genesis.bfloat16, genesis.float64]
    gpu = _params(rng, dtypes, "cuda")
    cpu = [p.detach().cpu().requires_grad_() for p in gpu]
    gpu_opt = getattr(optim, name)(gpu, **kwargs)
    cpu_opt = getattr(optim, name)(cpu, **kwargs)
    cpu_opt.param_groups[0]["fused"] = True
    for _ in range(3):
        _set_grads(gpu, rng, cpu)
        gpu_opt.step()
        cpu_opt.step()
        for g, c in zip(gpu, cpu):
            tol = TOL[g.dtype]
            np.testing.assert_allclose(_f64(g), _f64(c), rtol=tol, atol=tol)
            with genesis.no_grad():
                g.copy_(c)
                for key in set(gpu_opt.state[g]) - set(HOST_SCALARS):
                    expected = cpu_opt.state[c][key]
                    np.testing.assert_allclose(_f64(gpu_opt.state[g][key]), _f64(expected),
                                               rtol=tol, atol=tol)
                    gpu_opt.state[g][key].copy_(expected)


def _f64(t):
    return t.detach().cpu().numpy().astype(np.float64)


def test_adamw_takes_one_launch_per_dtype_and_reuses_its_table(rng, launches, monkeypatch):
    from genesis.backends.cuda.kernels import optim as ko
    params = _params(rng, [genesis.float32], "cuda")
    opt = optim.AdamW(params)
    _set_grads(params, rng)
    opt.step()
    uploads = []
    upload = ko._upload
    monkeypatch.setattr(ko, "_upload", lambda *a: uploads.append(1) or upload(*a))
    launches.clear()
    opt.step()  # the same gradients again: the same table
    assert launches == ["_adam_kernel"] and uploads == []
    mixed = _params(rng, [genesis.float32, genesis.float16], "cuda")
    opt = optim.AdamW(mixed)
    _set_grads(mixed, rng)
    launches.clear()
    opt.step()
    assert launches == ["_adam_kernel"] * 2


@pytest.mark.parametrize("name", ["NAdam", "RAdam", "Adamax", "Adadelta", "ASGD", "Rprop"])
def test_new_optimizers_take_one_launch_per_dtype(name, rng, launches):
    mixed = _params(rng, [genesis.float32, genesis.bfloat16], "cuda")
    opt = getattr(optim, name)(mixed)
    _set_grads(mixed, rng)
    opt.step()  # the first step also creates the state (Rprop fills its step sizes)
    for _ in range(2):
        _set_grads(mixed, rng)
        launches.clear()
        opt.step()
        assert launches == [f"_{name.lower()}_kernel"] * 2


def test_clip_grad_norm_takes_three_launches(rng, launches):
    params = _params(rng, [genesis.float32], "cuda")
    _set_grads(params, rng)
    launches.clear()
    total = nn.utils.clip_grad_norm_(params, 0.5)
    assert sorted(launches) == ["_norm_finish_kernel", "_norm_partials_kernel", "_scale_kernel"]
    grads = [p.grad.cpu().numpy().astype(np.float64) for p in params]
    norm = float(total)
    assert abs(np.sqrt(sum(np.sum(g ** 2) for g in grads)) - 0.5) < 1e-5
    assert norm > 0.5


@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf"), 3.0])
def test_large_total_norm_is_deterministic_and_accurate(norm_type, rng):
    value = rng.standard_normal(3_000_001).astype(np.float32)
    grads = [genesis.tensor(value, device="cuda"), genesis.tensor(value[:999], device="cuda")]
    first = nn.utils.get_total_norm(grads, norm_type)
    second = nn.utils.get_total_norm(grads, norm_type)
    assert first.cpu().numpy().tobytes() == second.cpu().numpy().tobytes()
    wide = np.abs(np.concatenate([value, value[:999]]).astype(np.float64))
    expected = wide.max() if norm_type == float("inf") else \
        np.sum(wide ** norm_type) ** (1 / norm_type)
    np.testing.assert_allclose(float(first), expected, rtol=1e-5)


def test_large_parameter_matches_torch(rng):
    value = rng.standard_normal(2_000_003).astype(np.float32)
    p = genesis.tensor(value, device="cuda").requires_grad_()
    t = torch.tensor(value, requires_grad=True)
    gopt = optim.AdamW([p], lr=0.01, betas=(0.8, 0.99), weight_decay=0.1)
    topt = torch.optim.AdamW([t], lr=0.01, betas=(0.8, 0.99), weight_decay=0.1, foreach=False)
    for _ in range(3):
        grad = rng.standard_normal(value.shape).astype(np.float32)
        p.grad = genesis.tensor(grad, device="cuda")
        t.grad = torch.tensor(grad)
        gopt.step()
        topt.step()
    assert_close(p.detach().cpu(), t.detach())
    assert_close(gopt.state[p]["exp_avg_sq"].cpu(), topt.state[t]["exp_avg_sq"])


@pytest.mark.parametrize("name,kwargs,kernel", [
    ("AdamW", dict(lr=0.01, weight_decay=0.1), "_adam_kernel"),
    ("AdamW", dict(lr=0.01, weight_decay=0.1, amsgrad=True), "_adam_kernel"),
    ("RAdam", dict(lr=0.01, betas=(0.9, 0.9), weight_decay=0.1, decoupled_weight_decay=True),
     "_radam_kernel"),
    ("Adamax", dict(lr=0.01, weight_decay=0.1), "_adamax_kernel"),
], ids=["AdamW", "AdamW-amsgrad", "RAdam", "Adamax"])
def test_capturable_step_takes_two_launches_per_dtype_and_matches_fused(name, kwargs, kernel,
                                                                        rng, launches):
    """A capturable step on a mixed-dtype group: per device one launch advancing every counter
    and one update per dtype pair; the parameters follow the default fused step's (counters on
    the host) within the scalars' float32 rounding. RAdam's beta2 = 0.9 crosses into its
    rectified regime at the sixth step."""
    dtypes = [genesis.float32, genesis.bfloat16]
    a = _params(rng, dtypes, "cuda")
    b = [p.detach().clone().requires_grad_() for p in a]
    captured = getattr(optim, name)(a, **kwargs, capturable=True)
    fused = getattr(optim, name)(b, **kwargs)
    for _ in range(6):
        _set_grads(a, rng, b)
        launches.clear()
        captured.step()
        assert sorted(launches) == sorted([kernel] * 2 + ["_advance_kernel"])
        fused.step()
    for p, q in zip(a, b):
        assert captured.state[p]["step"].device == p.device
        assert float(captured.state[p]["step"]) == 6
        tol = 1e-5 if p.dtype is genesis.float32 else TOL[p.dtype]
        np.testing.assert_allclose(_f64(p), _f64(q), rtol=tol, atol=tol)
