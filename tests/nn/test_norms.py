"""Batch, instance, group, RMS and local response norms against torch: outputs, input and
parameter gradients, running statistics, dtypes and layouts; BatchNorm's gradient precision."""

import numpy as np
import pytest
import torch
import torch.nn as tnn
import torch.nn.functional as TF
from helpers import TORCH_DTYPES, assert_close, assert_refuses_as_torch, from_torch

import genesis
import genesis.nn as nn
import genesis.nn.functional as F
from genesis.autograd import gradcheck


def _relative(actual, expected):
    """max |actual - expected| / max |expected|."""
    expected = expected.detach().double().numpy()
    return np.abs(actual.detach().numpy().astype(np.float64) - expected).max() / \
        np.abs(expected).max()


@pytest.mark.parametrize("shape, offset", [((256, 8), 10.0), ((32, 8, 50), 3.0),
                                           ((8, 4, 6, 5), 0.0)])
def test_batch_norm_input_gradient_precision(shape, offset, rng):
    """float32 input gradients within 1e-6 (relative to the largest) of torch's and of the
    float64 truth."""
    x = (rng.standard_normal(shape) + offset).astype(np.float32)
    g = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal(shape[1]).astype(np.float32)
    results = {}
    for name, dtype in (("float32", torch.float32), ("float64", torch.float64)):
        tx = torch.tensor(x, dtype=dtype, requires_grad=True)
        TF.batch_norm(tx, None, None, torch.tensor(w, dtype=dtype), None,
                      training=True).backward(torch.tensor(g, dtype=dtype))
        results[name] = tx.grad
    gx = genesis.tensor(x, requires_grad=True)
    F.batch_norm(gx, None, None, genesis.tensor(w), None, training=True).backward(
        genesis.tensor(g))
    assert _relative(gx.grad, results["float32"]) < 1e-6
    assert _relative(gx.grad, results["float64"]) < 1e-6


def test_batch_norm_gradient_beats_cancellation(rng):
    """Channels far from zero: the stable form stays within 1e-6 of the float64 truth."""
    x = (rng.standard_normal((4096, 4)) + 1000).astype(np.float32)
    g = rng.standard_normal(x.shape).astype(np.float32)
    truth = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    TF.batch_norm(truth, None, None, training=True).backward(torch.tensor(g, dtype=torch.float64))
    gx = genesis.tensor(x, requires_grad=True)
    F.batch_norm(gx, None, None, training=True).backward(genesis.tensor(g))
    assert _relative(gx.grad, truth.grad) < 1e-6


def _copy_parameters(g_module, t_module, rng):
    with torch.no_grad():
        for name, p in t_module.named_parameters():
            p.copy_(torch.tensor(rng.uniform(0.5, 1.5, tuple(p.shape))))
            getattr(g_module, name).data = from_torch(p.detach())


def _compare_module(g_module, t_module, shape, dtype, rng, transposed=False, steps=2,
                    device="cpu"):
    """Forward and backward (inputs and parameters) over `steps` training steps, then eval."""
    torch_dtype = TORCH_DTYPES[dtype]
    _copy_parameters(g_module, t_module, rng)
    g_module.to(device=device, dtype=dtype)
    t_module.to(torch_dtype)
    for _ in range(steps):
        base = rng.standard_normal(shape[::-1] if transposed else shape) * 2 + 0.5
        t = torch.tensor(base, dtype=torch_dtype)
        if transposed:
            t = t.permute(*reversed(range(len(shape))))
        g = from_torch(t, device=device, requires_grad=True)
        t.requires_grad_(True)
        out_g, out_t = g_module(g), t_module(t)
        assert_close(out_g, out_t)
        grad = torch.randn(out_t.shape, dtype=torch.float64).to(torch_dtype)
        if out_t.numel():
            out_t.backward(grad)
            out_g.backward(from_torch(grad, device=device))
            assert_close(g.grad, t.grad)
            for name, p in t_module.named_parameters():
                assert_close(getattr(g_module, name).grad, p.grad, rtol=1e-5 if dtype is
                             genesis.float32 else None)
    for name, buffer in t_module.named_buffers():
        assert_close(getattr(g_module, name), buffer)
    g_module.eval()
    t_module.eval()
    t = torch.tensor(rng.standard_normal(shape), dtype=torch_dtype)
    assert_close(g_module(from_torch(t, device=device)), t_module(t))


BATCH_NORMS = [("BatchNorm1d", (4, 3)), ("BatchNorm1d", (5, 3, 7)), ("BatchNorm2d", (3, 3, 4, 5)),
               ("BatchNorm3d", (2, 3, 3, 2, 4)), ("SyncBatchNorm", (4, 3, 5))]


@pytest.mark.parametrize("name, shape", BATCH_NORMS)
@pytest.mark.parametrize("dtype", [genesis.float32, genesis.float64], ids=str)
def test_batch_norms_match_torch(name, shape, dtype, rng, device):
    for kwargs in ({}, {"momentum": None}, {"affine": False, "track_running_stats": False}):
        _compare_module(getattr(nn, name)(3, **kwargs), getattr(tnn, name)(3, **kwargs), shape,
                        dtype, rng, transposed=True, device=device)
    assert_same_repr(getattr(nn, name)(3), getattr(tnn, name)(3))


def assert_same_repr(ours, theirs):
    """Equal reprs; PyTorch before 2.13 does not print the norms' `bias=`."""
    expected = repr(theirs)
    mine = repr(ours)
    if "bias=" not in expected:
        mine = mine.replace(", bias=True", "").replace(", bias=False", "")
    assert mine == expected


INSTANCE_NORMS = [("InstanceNorm1d", (4, 3, 7)), ("InstanceNorm1d", (3, 5)),
                  ("InstanceNorm2d", (2, 3, 4, 5)), ("InstanceNorm3d", (2, 3, 3, 2, 4)),
                  ("InstanceNorm2d", (3, 2, 5))]


@pytest.mark.parametrize("name, shape", INSTANCE_NORMS)
@pytest.mark.parametrize("kwargs", [{}, {"affine": True}, {"track_running_stats": True},
                                    {"affine": True, "track_running_stats": True,
                                     "momentum": 0.3}], ids=str)
def test_instance_norms_match_torch(name, shape, kwargs, rng, device):
    _compare_module(getattr(nn, name)(3, **kwargs), getattr(tnn, name)(3, **kwargs), shape,
                    genesis.float32, rng, transposed=True, device=device)
    assert_same_repr(getattr(nn, name)(3, **kwargs), getattr(tnn, name)(3, **kwargs))


@pytest.mark.parametrize("module_args", [("GroupNorm", (3, 6)), ("GroupNorm", (1, 6)),
                                         ("RMSNorm", ((5,),)), ("LayerNorm", ((4, 5),))],
                         ids=str)
def test_group_and_rms_norm_match_torch(module_args, rng):
    name, args = module_args
    for dtype in (genesis.float32, genesis.float64):
        _compare_module(getattr(nn, name)(*args), getattr(tnn, name)(*args), (3, 6, 4, 5), dtype,
                        rng)


@pytest.mark.parametrize("dtype", [genesis.float32, genesis.bfloat16], ids=str)
def test_half_and_empty_batch_norm(dtype, rng, device):
    """Half types compute in float32 and round once: compared with torch's float32 result
    rounded (torch's own CPU bfloat16 batch and instance norms are several ulps off)."""
    torch_dtype = TORCH_DTYPES[dtype]
    t = torch.tensor(rng.standard_normal((6, 4, 3)), dtype=torch_dtype)
    for fn, t_fn in ((lambda x: F.batch_norm(x, None, None, training=True),
                      lambda x: TF.batch_norm(x, None, None, training=True)),
                     (lambda x: F.instance_norm(x), lambda x: TF.instance_norm(x)),
                     (lambda x: F.local_response_norm(x, 3), lambda x: TF.local_response_norm(x, 3)),
                     (lambda x: F.group_norm(x, 2), lambda x: TF.group_norm(x, 2))):
        assert_close(fn(from_torch(t, device=device)), t_fn(t.float()).to(torch_dtype))
    empty = torch.zeros(0, 4, 3, dtype=torch_dtype)
    assert_close(F.local_response_norm(from_torch(empty), 2), TF.local_response_norm(empty, 2))
    assert_close(F.instance_norm(from_torch(empty)), TF.instance_norm(empty))
    assert_close(F.group_norm(from_torch(empty), 2), TF.group_norm(empty, 2))


HALF_INPUT_NORMS = {
    "layer_norm": lambda lib, x, w, b: lib.nn.functional.layer_norm(x, (3,), w[:3], b[:3]),
    "rms_norm": lambda lib, x, w, b: lib.nn.functional.rms_norm(x, (3,), w[:3], 1e-6),
    "group_norm": lambda lib, x, w, b: lib.nn.functional.group_norm(x, 2, w, b),
    "batch_norm": lambda lib, x, w, b: lib.nn.functional.batch_norm(x, b.abs(), w.abs() + 0.5,
                                                                    w, b),
}


@pytest.mark.parametrize("name", list(HALF_INPUT_NORMS))
@pytest.mark.parametrize("dtype", [genesis.float16, genesis.bfloat16], ids=str)
def test_half_input_with_float32_parameters_keeps_its_dtype(name, dtype, rng, device):
    """A model converted to half but for its norms (CLIP's convert_weights) feeds half inputs
    to float32 parameters: the result has the input's dtype, computed in float32 and rounded
    once, as torch's."""
    fn = HALF_INPUT_NORMS[name]
    x = torch.tensor(rng.standard_normal((2, 4, 3)), dtype=TORCH_DTYPES[dtype])
    w, b = (torch.tensor(rng.standard_normal(4), dtype=torch.float32) for _ in range(2))
    out = fn(genesis, *(from_torch(t, device=device) for t in (x, w, b)))
    assert_close(out, fn(torch, x.float(), w, b).to(x.dtype))


@pytest.mark.parametrize("shape", [(2, 5, 3), (2, 6, 3, 4), (1, 4, 2, 3, 2)])
@pytest.mark.parametrize("size", [1, 2, 3, 4])
def test_local_response_norm_matches_torch(shape, size, rng, device):
    t = torch.tensor(rng.standard_normal(shape) * 3, requires_grad=True)
    g = from_torch(t, device=device, requires_grad=True)
    out_t = tnn.LocalResponseNorm(size, 0.1, 0.6, 2.0)(t)
    out_g = nn.LocalResponseNorm(size, 0.1, 0.6, 2.0)(g)
    assert_close(out_g, out_t)
    out_t.sum().backward()
    out_g.sum().backward()
    assert_close(g.grad, t.grad)


def test_norm_gradchecks(rng):
    def leaf(*shape):
        return genesis.tensor(rng.uniform(-1, 1, shape), dtype=genesis.float64,
                              requires_grad=True)
    x, w, b = leaf(3, 4, 5), leaf(4), leaf(4)
    assert gradcheck(lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True), (x, w, b))
    assert gradcheck(lambda x, w, b: F.instance_norm(x, weight=w, bias=b), (x, w, b))
    assert gradcheck(lambda x: F.local_response_norm(x, 3, 0.5, 0.7, 1.5), (x,))
    from genesis.autograd import gradgradcheck
    assert gradgradcheck(lambda x, w: F.batch_norm(x, None, None, w, None, training=True),
                         (leaf(4, 3), leaf(3)))


def test_convert_sync_batchnorm(rng):
    model = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3, momentum=0.2),
                          nn.Sequential(nn.BatchNorm2d(3, affine=False)))
    model.eval()
    converted = nn.SyncBatchNorm.convert_sync_batchnorm(model, process_group="group")
    assert isinstance(converted[1], nn.SyncBatchNorm) and isinstance(converted[2][0],
                                                                     nn.SyncBatchNorm)
    assert converted[1].weight is model[1].weight if converted is not model else True
    assert converted[1].momentum == 0.2 and converted[1].process_group == "group"
    assert not converted[1].training and converted[2][0].weight is None
    single = nn.SyncBatchNorm.convert_sync_batchnorm(nn.BatchNorm1d(3))
    assert type(single) is nn.SyncBatchNorm


def test_instance_norm_with_other_channels_warns_as_torch(rng):
    """Without affine parameters num_features is unused: another channel count (MUNIT's
    InstanceNorm2d(64) after a narrower conv) warns and normalizes all the same."""
    x = rng.standard_normal((2, 4, 3, 5)).astype(np.float32)
    with pytest.warns(UserWarning, match="input's size at dim=1 does not match num_features"):
        out = nn.InstanceNorm2d(6)(genesis.tensor(x))
    with pytest.warns(UserWarning, match="input's size at dim=0 does not match num_features"):
        nn.InstanceNorm1d(6)(genesis.tensor(x[0, :, 0]))
    assert_close(out, tnn.InstanceNorm2d(4)(torch.tensor(x)))


NORM_REFUSALS = [
    lambda m: m.nn.LayerNorm(6)(m.zeros(2, 5)),
    lambda m: m.nn.LayerNorm((2, 3))(m.zeros(3)),
    lambda m: m.nn.RMSNorm(6)(m.zeros(2, 5)),
    lambda m: m.nn.functional.rms_norm(m.zeros(5), (2, 5)),
    lambda m: m.nn.functional.group_norm(m.zeros(2, 6), 2, m.ones(4), m.zeros(4)),
    lambda m: m.nn.functional.group_norm(m.zeros(2, 6, 3), 2, m.ones(6), m.zeros(4)),
    lambda m: m.nn.functional.group_norm(m.zeros(2, 6, 3), 2, None, m.zeros(4)),
    lambda m: m.nn.functional.group_norm(m.zeros(2, 6, 3), 4),
    lambda m: m.nn.GroupNorm(2, 4)(m.zeros(2, 6)),
    lambda m: m.nn.GroupNorm(2, 4)(m.zeros(4)),
    lambda m: m.nn.functional.batch_norm(m.zeros(2, 3, 3, 3), m.zeros(4), m.ones(4)),
    lambda m: m.nn.functional.batch_norm(m.zeros(2, 3), m.zeros(3), m.ones(4)),
    lambda m: m.nn.functional.batch_norm(m.zeros(2, 3), m.zeros(3), m.ones(3), m.ones(4)),
    lambda m: m.nn.functional.batch_norm(m.zeros(2, 3), None, None, None, m.ones(4), True),
    lambda m: m.nn.functional.batch_norm(m.zeros(2, 3), m.zeros(3), None),
    lambda m: m.nn.functional.batch_norm(m.ones(1, 3), None, None, training=True),
    lambda m: m.nn.BatchNorm2d(4)(m.zeros(2, 3, 3, 3)),
    lambda m: m.nn.BatchNorm2d(4).eval()(m.zeros(2, 3, 3, 3)),
    lambda m: m.nn.BatchNorm2d(4)(m.zeros(2, 4, 3)),
    lambda m: m.nn.BatchNorm1d(4)(m.zeros(2, 4, 3, 3)),
    lambda m: m.nn.BatchNorm3d(3)(m.ones(2, 3, 4, 5)),
    lambda m: m.nn.LazyBatchNorm1d()(m.zeros(4)),
    lambda m: m.nn.SyncBatchNorm(3)(m.ones(3)),
    lambda m: m.nn.SyncBatchNorm(3)(m.ones(2, 0, 3)),
    lambda m: m.nn.functional.instance_norm(m.zeros(2, 3, 3), m.zeros(4), m.ones(4)),
    lambda m: m.nn.functional.instance_norm(m.zeros(2, 3, 3), None, None, None, m.ones(4)),
    lambda m: m.nn.functional.instance_norm(m.zeros(2, 3, 3), use_input_stats=False),
    lambda m: m.nn.functional.instance_norm(m.ones(2, 3, 1)),
    lambda m: m.nn.InstanceNorm1d(3)(m.ones(2, 3, 4, 5)),
    lambda m: m.nn.InstanceNorm1d(3, affine=True)(m.ones(2, 4, 5)),
    lambda m: m.nn.functional.local_response_norm(m.ones(2, 3), 2),
]


@pytest.mark.parametrize("call", NORM_REFUSALS)
def test_norm_refusals_as_torch(call):
    """The norms refuse wrongly shaped inputs and parameters with torch's exception and words
    (the layers' rank checks their own, the rest their functional's, after its name)."""
    assert_refuses_as_torch(call)
