"""cross_entropy with class-index targets on the fused kernels ("cross_entropy_fwd"/"_bwd")
against torch: every reduction, ignore_index, class weights, dtypes, odd class counts, layouts,
gradients (and the composed double backward)."""

import numpy as np
import pytest
import torch
from helpers import FLOAT_DTYPES, TORCH_DTYPES, assert_close, assert_refuses_as_torch

import genesis
from genesis import dispatch
from genesis.autograd import gradcheck, gradgradcheck
from genesis.nn import functional as F

REDUCTIONS = ["mean", "sum", "none"]
HALF = (genesis.float16, genesis.bfloat16)


def _logits(rng, shape, dtype, device, layout="contiguous"):
    """(genesis leaf, torch leaf) holding the same logits; the genesis one may be strided."""
    values = rng.uniform(-4.0, 4.0, shape)
    g = genesis.tensor(values, dtype=dtype, device=device)
    t = torch.from_numpy(g.float().cpu().numpy() if dtype is genesis.bfloat16
                         else g.cpu().numpy()).to(TORCH_DTYPES[dtype])
    g.requires_grad_()
    t.requires_grad_()
    if layout == "transposed":
        return g, t, g.t().contiguous().t()
    if layout == "stepped":
        return g, t, _stepped(g)
    return g, t, g


def _stepped(g):
    """g's values at every other element of a wider buffer (differentiable w.r.t. g)."""
    wide = genesis.stack([g, genesis.zeros_like(g)], dim=-1).reshape(*g.shape[:-1], -1)
    return wide[..., ::2]


def _targets(rng, shape, classes, device, ignored=0, ignore_index=-100):
    values = rng.integers(0, classes, shape)
    values.reshape(-1)[:ignored] = ignore_index
    return genesis.tensor(values, device=device), torch.from_numpy(values)


def _reference(t_x, t_target, dtype, **kwargs):
    """torch's loss; for half types computed in float32 and rounded once, as genesis does."""
    if dtype in HALF:
        x = t_x.detach().float().requires_grad_()
        kwargs = {k: v.float() if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()}
        return x, torch.nn.functional.cross_entropy(x, t_target, **kwargs)
    return t_x, torch.nn.functional.cross_entropy(t_x, t_target, **kwargs)


def _compare(rng, g_leaf, g_x, t_x, g_target, t_target, dtype, **kwargs):
    """Loss and input gradient of genesis's cross_entropy against torch's."""
    g_kwargs = {k: v[0] if isinstance(v, tuple) else v for k, v in kwargs.items()}
    t_kwargs = {k: v[1] if isinstance(v, tuple) else v for k, v in kwargs.items()}
    loss = F.cross_entropy(g_x, g_target, **g_kwargs)
    ref_x, expected = _reference(t_x, t_target, dtype, **t_kwargs)
    assert_close(loss, expected.to(TORCH_DTYPES[dtype]), dtype)
    grad = rng.standard_normal(tuple(expected.shape))
    expected.backward(torch.from_numpy(np.asarray(grad)).to(expected.dtype))
    loss.backward(genesis.tensor(grad, dtype=loss.dtype, device=loss.device))
    assert_close(g_leaf.grad, ref_x.grad.to(TORCH_DTYPES[dtype]), dtype)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("options", ["plain", "ignore", "weight", "weight_ignore", "index_7"])
def test_options(options, dtype, reduction, rng, device):
    x, t_x, _ = _logits(rng, (9, 7), dtype, device)
    ignore_index = 3 if options == "index_7" else -100
    target = _targets(rng, (9,), 7, device, 0 if options in ("plain", "weight") else 3,
                      ignore_index)
    kwargs = {"reduction": reduction, "ignore_index": ignore_index}
    if "weight" in options:
        w = rng.uniform(0.2, 2.0, 7)
        kwargs["weight"] = (genesis.tensor(w, dtype=dtype, device=device),
                            torch.from_numpy(w).to(TORCH_DTYPES[dtype]))
    _compare(rng, x, x, t_x, *target, dtype, **kwargs)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(4, 1), (3, 1000), (2, 50257), (1, 33), (6, 16)], ids=str)
def test_class_counts(shape, dtype, reduction, rng, device):
    x, t_x, _ = _logits(rng, shape, dtype, device)
    target = _targets(rng, shape[:1], shape[1], device, ignored=1 if shape[0] > 2 else 0)
    _compare(rng, x, x, t_x, *target, dtype, reduction=reduction)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("layout", ["transposed", "stepped"])
def test_strided_logits(layout, reduction, rng, device):
    x, t_x, view = _logits(rng, (6, 11), genesis.float32, device, layout)
    assert not view.is_contiguous()
    target = _targets(rng, (6,), 11, device, ignored=1)
    _compare(rng, x, view, t_x, *target, genesis.float32, reduction=reduction)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", [(2, 5, 3, 4), (3, 6, 2), (7,)], ids=str)
def test_spatial_and_unbatched(shape, reduction, rng, device):
    x, t_x, _ = _logits(rng, shape, genesis.float32, device)
    target_shape = (shape[0],) + shape[2:] if len(shape) > 1 else ()
    target = _targets(rng, target_shape, shape[1 if len(shape) > 1 else 0], device,
                      ignored=2 if len(shape) > 1 else 0)
    _compare(rng, x, x, t_x, *target, genesis.float32, reduction=reduction)


@pytest.mark.parametrize("weighted", [False, True])
def test_all_ignored_mean_is_nan_with_zero_gradient(weighted, device):
    x = genesis.randn(3, 5, requires_grad=True, device=device)
    w = genesis.rand(5, device=device) + 0.5 if weighted else None
    loss = F.cross_entropy(x, genesis.tensor([-100, -100, -100], device=device), weight=w)
    assert np.isnan(loss.item())
    loss.backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), 0)


def test_zero_weights_give_nan_as_torch(rng, device):
    """Targets whose weights are all 0: 0/0 loss and nan gradients in their rows, as torch."""
    x, t_x, _ = _logits(rng, (3, 4), genesis.float32, device)
    weight = (genesis.tensor([0.0, 1.0, 1.0, 1.0], device=device),
              torch.tensor([0.0, 1.0, 1.0, 1.0]))
    target = (genesis.tensor([0, 0, -100], device=device), torch.tensor([0, 0, -100]))
    _compare(rng, x, x, t_x, *target, genesis.float32, weight=weight)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
def test_gradcheck(weighted, reduction, rng, device):
    x = genesis.tensor(rng.standard_normal((5, 6)), dtype=genesis.float64, device=device,
                       requires_grad=True)
    target = genesis.tensor([1, -100, 5, 0, 3], device=device)
    w = genesis.tensor(rng.uniform(0.2, 2.0, 6), dtype=genesis.float64, device=device)

    def fn(x):
        return F.cross_entropy(x, target, weight=w if weighted else None, reduction=reduction)
    assert gradcheck(fn, (x,))
    assert gradgradcheck(fn, (x,))


def test_double_backward_matches_torch(rng, device):
    """create_graph=True differentiates the composed formula (the backward kernel is not)."""
    x, t_x, _ = _logits(rng, (4, 5), genesis.float64, device)
    target = _targets(rng, (4,), 5, device, ignored=1)
    (g,) = genesis.autograd.grad(F.cross_entropy(x, target[0]), (x,), create_graph=True)
    (t_g,) = torch.autograd.grad(torch.nn.functional.cross_entropy(t_x, target[1]), (t_x,),
                                 create_graph=True)
    assert_close(g, t_g.detach())
    (g * g).sum().backward()
    (t_g * t_g).sum().backward()
    assert_close(x.grad, t_x.grad)


def test_fused_kernels_are_used(monkeypatch, device):
    """Class-index targets without label smoothing take one forward and one backward kernel."""
    calls = []
    for op in ("cross_entropy_fwd", "cross_entropy_bwd"):
        fn = dispatch.kernel(op, device)
        monkeypatch.setitem(dispatch._KERNELS, (op, device),
                            lambda *a, _fn=fn, _op=op: calls.append(_op) or _fn(*a))
    x = genesis.randn(4, 3, device=device, requires_grad=True)
    F.cross_entropy(x, genesis.tensor([0, 1, 2, 0], device=device)).backward()
    assert calls == ["cross_entropy_fwd", "cross_entropy_bwd"]
    calls.clear()
    F.cross_entropy(x, genesis.tensor([0, 1, 2, 0], device=device), label_smoothing=0.1)
    assert calls == []


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("dtype", HALF, ids=str)
@pytest.mark.parametrize("shape", [(9, 7), (3, 6, 2), (2, 50257)], ids=str)
@pytest.mark.parametrize("weighted", [False, True])
def test_autocast_reads_half_logits(weighted, shape, dtype, reduction, rng, device,
                                    monkeypatch):
    """Under autocast (cross_entropy runs in float32) half logits go to the fused kernels as
    they are, with no float32 copy: the loss is float32 and equals torch's autocast loss (of
    the logits cast to float32); the gradient, in the logits' dtype, is torch's rounded once."""
    if device == "cpu" and dtype is genesis.float16:
        pytest.skip("autocast on the CPU runs bfloat16")
    fwd = dispatch.kernel("cross_entropy_fwd", device)
    seen = []
    monkeypatch.setitem(dispatch._KERNELS, ("cross_entropy_fwd", device),
                        lambda x, *a: seen.append(x.dtype) or fwd(x, *a))
    x, t_x, _ = _logits(rng, shape, dtype, device)
    target = _targets(rng, shape[:1] + shape[2:], shape[1], device, ignored=1)
    kwargs = {"reduction": reduction}
    if weighted:
        w = rng.uniform(0.2, 2.0, shape[1])
        kwargs["weight"] = (genesis.tensor(w, dtype=genesis.float32, device=device),
                            torch.from_numpy(w).float())
    with genesis.autocast(device, dtype=dtype):
        if not genesis.is_autocast_enabled(device):
            pytest.skip("autocast is off where CUDA is simulated")
        loss = F.cross_entropy(x, target[0], **{k: v[0] if isinstance(v, tuple) else v
                                                 for k, v in kwargs.items()})
    assert seen == [dtype.numpy_dtype]
    ref_x, expected = _reference(t_x, target[1], dtype, **{
        k: v[1] if isinstance(v, tuple) else v for k, v in kwargs.items()})
    assert_close(loss, expected, genesis.float32)
    grad = rng.standard_normal(tuple(expected.shape))
    expected.backward(torch.from_numpy(np.asarray(grad)).float())
    loss.backward(genesis.tensor(grad, dtype=genesis.float32, device=device))
    assert_close(x.grad, ref_x.grad.to(TORCH_DTYPES[dtype]), dtype)


def test_weight_gradient_takes_the_composed_path(rng, device):
    """A weight that requires grad is differentiated (composed ops), as before."""
    x = genesis.randn(4, 3, device=device, requires_grad=True)
    w = genesis.tensor(rng.uniform(0.5, 2.0, 3), device=device, requires_grad=True)
    F.cross_entropy(x, genesis.tensor([0, 1, 2, 0], device=device), weight=w,
                    reduction="sum").backward()
    assert w.grad is not None and x.grad is not None


def test_out_of_range_target_raises_on_the_cpu():
    with pytest.raises(IndexError, match="Target 5 is out of bounds"):
        F.cross_entropy(genesis.randn(2, 5), genesis.tensor([0, 5]))
    with pytest.raises(IndexError, match="Target -1 is out of bounds"):
        F.cross_entropy(genesis.randn(2, 5), genesis.tensor([-1, -100]), reduction="sum")


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
@pytest.mark.parametrize("shape", [(4, 5), (5,)])
def test_byte_targets_as_torch(shape, smoothing, rng, device):
    """uint8 class indices are torch's other target dtype, fused and composed paths alike."""
    g_leaf, t_x, g_x = _logits(rng, shape, genesis.float32, device)
    g_target, t_target = _targets(rng, shape[:-1], shape[-1], device)
    _compare(rng, g_leaf, g_x, t_x, g_target.to(genesis.uint8), t_target.to(torch.uint8),
             genesis.float32, label_smoothing=smoothing)
    nll = F.nll_loss(g_x.detach(), g_target.to(genesis.uint8), ignore_index=2)
    assert_close(nll, torch.nn.functional.nll_loss(t_x.detach(), t_target.to(torch.uint8),
                                                   ignore_index=2))


@pytest.mark.parametrize("shape, dtype", [
    ((4, 5), genesis.int32), ((4, 5), genesis.int16), ((4, 5), genesis.bool),
    ((2, 5, 3), genesis.int32), ((2, 5, 3), genesis.uint8)])
def test_target_dtype_errors_as_torch(shape, dtype, device):
    """Other index dtypes fail with torch's message (uint8 too, for spatial input, which torch's
    2-D kernel takes), whichever path the loss takes. Genesis words them as torch 2.13 does."""
    if torch.__version__ < (2, 13):
        pytest.skip(f"torch {torch.__version__} words these errors otherwise")
    target_shape = shape[:1] + shape[2:]
    with pytest.raises(RuntimeError) as expected:
        torch.nn.functional.cross_entropy(
            torch.zeros(shape), torch.zeros(target_shape, dtype=TORCH_DTYPES[dtype]))
    for weight in (None, genesis.ones(shape[1], device=device, requires_grad=True)):
        with pytest.raises(RuntimeError) as got:
            F.cross_entropy(genesis.zeros(shape, device=device),
                            genesis.zeros(target_shape, dtype=dtype, device=device),
                            weight=weight)
        assert str(got.value) == f"nll_loss: {expected.value}"


def _zeros(m, *shape, dtype="long"):
    return m.zeros(shape, dtype=getattr(m, dtype))


@pytest.mark.parametrize("call", [
    lambda m: m.nn.functional.nll_loss(m.ones(2, 3), _zeros(m, 2, 3)),
    lambda m: m.nn.NLLLoss()(m.ones(2, 3), _zeros(m, 2, 3, dtype="float")),
    lambda m: m.nn.functional.nll_loss(m.ones(2, 3), _zeros(m, 3)),
    lambda m: m.nn.functional.nll_loss(m.ones(2, 3), _zeros(m)),
    lambda m: m.nn.functional.nll_loss(m.ones(3), _zeros(m, 3)),
    lambda m: m.nn.functional.nll_loss(m.ones(3), _zeros(m, 1, 1)),
    lambda m: m.nn.functional.nll_loss(m.tensor(1.0), _zeros(m)),
    lambda m: m.nn.functional.nll_loss(m.ones(2, 3, 4), _zeros(m, 2, 3, 4)),
    lambda m: m.nn.functional.nll_loss(m.ones(2, 3, 4, 5, 6), _zeros(m, 2, 4, 5, 5)),
    lambda m: m.nn.functional.nll_loss(m.ones(2, 3, 4, 5), _zeros(m, 2, 4)),
    lambda m: m.nn.functional.nll_loss(m.ones(2, 3, 4, 5), _zeros(m, 2, 4, 4)),
    lambda m: m.nn.functional.nll_loss(m.ones(2, 3, 4), _zeros(m, 2, 4), weight=m.ones(4)),
    lambda m: m.nn.functional.cross_entropy(m.ones(2, 3), _zeros(m, 2, 3)),
    lambda m: m.nn.CrossEntropyLoss()(m.ones(2, 3, 4), _zeros(m, 2, 3, 4, dtype="bool")),
    lambda m: m.nn.functional.cross_entropy(m.ones(2, 3), _zeros(m, 3)),
    lambda m: m.nn.functional.cross_entropy(m.ones(2, 3), _zeros(m, 2, 4, dtype="float")),
    lambda m: m.nn.functional.cross_entropy(m.ones(2, 3), _zeros(m, 2, 3, dtype="float"),
                                            ignore_index=1),
    lambda m: m.nn.functional.cross_entropy(m.ones(2, 3), _zeros(m, 2, 3, dtype="float"),
                                            weight=m.ones(4)),
    lambda m: m.nn.functional.cross_entropy(m.tensor(1.0), _zeros(m)),
    lambda m: m.nn.functional.cross_entropy(m.tensor(1.0), _zeros(m, dtype="float")),
    lambda m: m.nn.functional.cross_entropy(m.ones(2, 3), _zeros(m, 2, 3, 1),
                                            label_smoothing=0.1)])
def test_target_refusals_as_torch(call):
    """Class-index targets of another rank, batch size or spatial shape, and targets of the
    input's shape that are not class probabilities (an integer dtype, an ignore_index), in
    torch's words and order."""
    assert_refuses_as_torch(call)


def test_one_element_target_of_1d_input_as_torch():
    """A 1-D input's target may be 1-D of one element, as torch's nll_loss takes it."""
    for reduction in ("none", "mean"):
        got = F.cross_entropy(genesis.tensor([1.0, 2.0, 3.0]), genesis.tensor([2]),
                              reduction=reduction)
        assert_close(got, torch.nn.functional.cross_entropy(
            torch.tensor([1.0, 2.0, 3.0]), torch.tensor([2]), reduction=reduction))
