"""clip_grad_norm_, get_total_norm and clip_grads_with_norm_ through the multi-tensor kernels
("total_norm", "clip_by_total_norm_") and the per-tensor path, against torch on the CPU."""

import math

import numpy as np
import pytest
import torch
from helpers import FLOAT_DTYPES, TORCH_DTYPES, assert_close

import genesis
from genesis import dispatch, nn

NORMS = [2.0, 1.0, math.inf, -math.inf, 0.0, 3.5]
HALF = (genesis.float16, genesis.bfloat16)


def _grads(rng, dtypes, device, layouts=("contiguous",) * 4):
    """(genesis params, torch params) whose gradients hold the same random values; gradient i
    has dtype dtypes[i % len] and layout layouts[i] (a transposed or stepped view)."""
    shapes = [(3, 4), (20000,), (5, 6), (1,)]
    gp, tp = [], []
    for i, shape in enumerate(shapes):
        dtype = dtypes[i % len(dtypes)]
        value = rng.standard_normal(shape).astype(np.float32)
        value[..., ::3] = 0.0
        tgrad = torch.tensor(value, dtype=TORCH_DTYPES[dtype])
        grad = _lay_out(genesis.tensor(value, dtype=dtype, device=device), layouts[i])
        g = nn.Parameter(genesis.zeros(shape, dtype=dtype, device=device))
        g.grad = grad
        t = torch.nn.Parameter(torch.zeros(shape, dtype=TORCH_DTYPES[dtype]))
        t.grad = tgrad
        gp.append(g)
        tp.append(t)
    gp.append(nn.Parameter(genesis.zeros(2, device=device)))
    tp.append(torch.nn.Parameter(torch.zeros(2)))
    return gp, tp


def _lay_out(t, layout):
    """`t`'s values in a non-contiguous tensor (transposed or every other element of a wider
    one) when asked."""
    if layout == "transposed" and t.ndim == 2:
        return t.t().contiguous().t()
    if layout == "stepped":
        wide = genesis.zeros(tuple(t.shape[:-1]) + (2 * t.shape[-1],), dtype=t.dtype,
                             device=t.device)
        view = wide[..., ::2]
        view.copy_(t)
        return view
    return t


def _assert_grads(gp, tp, rtol=None):
    for g, t in zip(gp, tp):
        if t.grad is None:
            assert g.grad is None
            continue
        assert_close(g.grad, t.grad, rtol=rtol)


def _torch_total(tp, norm_type):
    """torch's total norm; for float32 computed in float64 and rounded (torch's float32 CPU
    norms accumulate sequentially: 3e-6 off over 20000 elements, where numpy's pairwise sums
    and our kernels are not)."""
    grads = [p.grad for p in tp if p.grad is not None]
    if grads[0].dtype is not torch.float32:
        return torch.nn.utils.get_total_norm(grads, norm_type)
    return torch.nn.utils.get_total_norm([g.double() for g in grads], norm_type).float()


def _exact_totals(device, dtype):
    """Whether our total norm must match torch's to its tolerance: on the CPU the per-tensor
    norms are rounded as torch's are; on CUDA a half total is one rounding of a float32 sum."""
    return device == "cpu" or dtype not in HALF


@pytest.mark.parametrize("foreach", [None, False])
@pytest.mark.parametrize("norm_type", NORMS)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_clip_grad_norm_matches_torch(dtype, norm_type, foreach, rng, device):
    if not _exact_totals(device, dtype) and foreach is None:
        pytest.skip("see test_half_total_norm_on_cuda")
    gp, tp = _grads(rng, [dtype], device, ("transposed", "stepped", "contiguous", "stepped"))
    max_norm = 0.5 if norm_type else 1.5
    total = nn.utils.clip_grad_norm_(gp, max_norm, norm_type, foreach=foreach)
    expected = _torch_total(tp, norm_type)
    torch.nn.utils.clip_grads_with_norm_(tp, max_norm, expected)
    assert_close(total, expected)
    _assert_grads(gp, tp)
    assert not gp[0].grad.is_contiguous()


@pytest.mark.parametrize("norm_type", [2.0, math.inf, 3.5])
@pytest.mark.parametrize("dtype", HALF, ids=str)
def test_half_total_norm_and_clip_by_a_given_norm(dtype, norm_type, rng, device):
    """Each piece against torch: the total norm (within the dtype's tolerance) and the scaling by
    torch's own total, which rounds the coefficient in the total's dtype as torch does."""
    gp, tp = _grads(rng, [dtype], device)
    total = nn.utils.get_total_norm([p.grad for p in gp if p.grad is not None], norm_type)
    expected = torch.nn.utils.get_total_norm([p.grad for p in tp if p.grad is not None],
                                             norm_type)
    assert_close(total, expected)
    given = genesis.tensor(expected.float().numpy(), dtype=dtype, device=device)
    nn.utils.clip_grads_with_norm_(gp, 0.5, given)
    torch.nn.utils.clip_grads_with_norm_(tp, 0.5, expected)
    _assert_grads(gp, tp)


def test_mixed_dtypes_promote_the_total(rng, device):
    gp, tp = _grads(rng, [genesis.float32, genesis.float64], device)
    total = nn.utils.clip_grad_norm_(gp, 0.5)
    expected = torch.nn.utils.get_total_norm([p.grad.double() for p in tp if p.grad is not None])
    torch.nn.utils.clip_grads_with_norm_(tp, 0.5, expected)
    assert total.dtype is genesis.float64
    assert_close(total, expected)
    _assert_grads(gp, tp)


@pytest.mark.parametrize("foreach", [None, True, False])
def test_nonfinite_total(foreach, rng, device):
    gp, _ = _grads(rng, [genesis.float32], device)
    gp[1].grad[7] = math.nan
    with pytest.raises(RuntimeError, match="non-finite"):
        nn.utils.clip_grad_norm_(gp, 1.0, error_if_nonfinite=True, foreach=foreach)
    total = nn.utils.clip_grad_norm_(gp, 1.0, foreach=foreach)
    assert math.isnan(float(total))
    assert np.isnan(gp[0].grad.cpu().numpy()).all()


@pytest.mark.parametrize("foreach", [None, True])
def test_one_kernel_call_each_for_norm_and_scale(foreach, rng, device, monkeypatch):
    gp, _ = _grads(rng, [genesis.float32, genesis.float16], device)
    kind = genesis.device(device).type
    calls = []
    for name in ("total_norm", "clip_by_total_norm_"):
        fn = dispatch.kernel(name, kind)
        monkeypatch.setitem(dispatch._KERNELS, (name, kind),
                            lambda *a, _fn=fn, _name=name: calls.append(_name) or _fn(*a))
    nn.utils.clip_grad_norm_(gp, 1.0, foreach=foreach)
    assert calls == ["total_norm", "clip_by_total_norm_"]


def test_total_norm_of_one_tensor_and_of_none(rng, device):
    g = genesis.tensor(rng.standard_normal((4, 5)), device=device)
    assert_close(nn.utils.get_total_norm(g, 3.0), torch.nn.utils.get_total_norm(
        torch.tensor(g.cpu().numpy()), 3.0))
    empty = nn.utils.get_total_norm([])
    assert float(empty) == 0.0 and empty.device.type == "cpu"
    nn.utils.clip_grads_with_norm_([nn.Parameter(genesis.zeros(2, device=device))], 1.0, empty)


def test_tensors_on_two_devices(rng, device):
    if device == "cpu":
        pytest.skip("needs a second device")
    a = genesis.tensor(rng.standard_normal(6), device=device)
    b = genesis.tensor(rng.standard_normal(5))
    total = nn.utils.get_total_norm([a, b])
    assert total.device.type == genesis.device(device).type
    expected = np.sqrt(np.sum(a.cpu().numpy() ** 2) + np.sum(b.numpy() ** 2))
    np.testing.assert_allclose(float(total), expected, rtol=1e-6)


@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf, 3.5])
def test_clip_grad_norm_reads_nothing_on_the_host(norm_type, rng, device, monkeypatch):
    """The foreach path (the default) keeps the total norm and the coefficient clamp(max_norm /
    (norm + 1e-6), max=1) on the device, as PyTorch's does, so a CUDA graph can capture it;
    error_if_nonfinite=True must read the norm."""
    gp, tp = _grads(rng, [genesis.float32], device)

    def host_read(*args):
        raise AssertionError("clip_grad_norm_ read a value on the host")

    with monkeypatch.context() as patch:
        patch.setattr(genesis.Tensor, "_host", host_read)
        total = nn.utils.clip_grad_norm_(gp, 0.5, norm_type)
        with pytest.raises(AssertionError, match="on the host"):
            nn.utils.clip_grad_norm_(gp, 0.5, norm_type, error_if_nonfinite=True)
    expected = _torch_total(tp, norm_type)
    torch.nn.utils.clip_grads_with_norm_(tp, 0.5, expected)
    assert_close(total, expected)
    _assert_grads(gp, tp)
