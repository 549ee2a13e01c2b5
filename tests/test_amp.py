"""Autocast against PyTorch's autocast: output dtypes op by op, values, gradients, the weight-cast
cache, nesting, and the public state functions. CPU cases run everywhere (bfloat16 and float16);
CUDA cases compare with torch's CUDA autocast where torch has a GPU."""

import threading
import warnings

import numpy as np
import pytest
import torch

import genesis
import genesis.nn.functional as F
from genesis.autograd import autocast_state
from helpers import TOLERANCES, assert_close, from_torch, to_torch

LOW = {"bfloat16": (genesis.bfloat16, torch.bfloat16), "float16": (genesis.float16, torch.float16)}


def _torch_device(device):
    if device == "cuda" and not torch.cuda.is_available():
        pytest.skip("torch has no GPU here to compare CUDA autocast with")
    return device


def _pair(rng, shape, device, low=-2.0, high=2.0):
    x = rng.uniform(low, high, size=shape).astype(np.float32)
    return genesis.tensor(x, device=device), torch.tensor(x, device=device)


def _targets(rng, n, classes, device):
    t = rng.integers(0, classes, size=n)
    return genesis.tensor(t, device=device), torch.tensor(t, device=device)


# name -> (genesis call, torch call); each takes (lib, a, b, c, w4, v4, tgt) built below
CASES = {
    "matmul": lambda m, a, b, *_: a @ b,
    "mm": lambda m, a, b, *_: m.mm(a, b),
    "bmm": lambda m, a, b, *_: m.bmm(a.unsqueeze(0), b.unsqueeze(0)),
    "addmm": lambda m, a, b, c, *_: m.addmm(c, a, b),
    "baddbmm": lambda m, a, b, c, *_: m.baddbmm(c.unsqueeze(0), a.unsqueeze(0), b.unsqueeze(0)),
    "linear": lambda m, a, b, c, *_: m.nn.functional.linear(a, b, c[0]),
    "conv2d": lambda m, a, b, c, w4, *_: m.nn.functional.conv2d(a.reshape(1, 1, 6, 6), w4),
    "conv1d": lambda m, a, b, c, w4, *_: m.nn.functional.conv1d(a.reshape(1, 6, 6), b[:, :, None]),
    "sdpa": lambda m, a, b, c, *_: m.nn.functional.scaled_dot_product_attention(
        a[None, None], b[None, None], c[None, None]),
    "softmax": lambda m, a, *_: m.softmax(a @ a, -1),
    "log_softmax": lambda m, a, *_: m.log_softmax(a @ a, -1),
    "layer_norm": lambda m, a, *_: m.nn.functional.layer_norm(a @ a, (6,)),
    "group_norm": lambda m, a, *_: m.nn.functional.group_norm((a @ a).reshape(1, 6, 6), 2),
    "cross_entropy": lambda m, a, b, c, w4, v4, t: m.nn.functional.cross_entropy(a @ b, t),
    "nll_loss": lambda m, a, b, c, w4, v4, t: m.nn.functional.nll_loss(a @ b, t),
    "mse_loss": lambda m, a, b, *_: m.nn.functional.mse_loss(a @ b, b),
    "l1_loss": lambda m, a, b, *_: m.nn.functional.l1_loss(a @ b, b),
    "bce_with_logits": lambda m, a, *_: m.nn.functional.binary_cross_entropy_with_logits(
        a @ a, (a @ a).sigmoid()),
    "exp": lambda m, a, *_: m.exp(a @ a),
    "log": lambda m, a, *_: m.log((a @ a).abs() + 1),
    "pow": lambda m, a, *_: m.pow(a @ a, 2),
    "pow_operator": lambda m, a, *_: (a @ a) ** 2,
    "sum": lambda m, a, *_: m.sum(a @ a),
    "cumsum": lambda m, a, *_: m.cumsum(a @ a, 0),
    "norm": lambda m, a, *_: (a @ a).norm(),
    "cat": lambda m, a, b, *_: m.cat([a @ a, b]),
    "stack": lambda m, a, b, *_: m.stack([a @ a, b]),
    "add_mixed": lambda m, a, b, *_: a @ a + b,
    "addcmul": lambda m, a, b, *_: m.addcmul(a @ a, b, b),
    "relu": lambda m, a, *_: m.relu(a @ a),
    "float64_matmul": lambda m, a, *_: a.double() @ a.double(),
}


def _run(lib, case, tensors):
    with lib.autocast(**tensors["kwargs"]):
        return CASES[case](lib, *tensors["args"])


def _inputs(rng, device):
    g, t = [], []
    for shape in ((6, 6), (6, 6), (6, 6), (2, 1, 3, 3), (6,)):
        a, b = _pair(rng, shape, device)
        g.append(a)
        t.append(b)
    gt, tt = _targets(rng, 6, 6, device)
    return g + [gt], t + [tt]


@pytest.mark.parametrize("low", ["bfloat16", "float16"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_op_dtypes_and_values_match_torch(device, case, low, rng):
    _torch_device(device)
    gdt, tdt = LOW[low]
    gargs, targs = _inputs(rng, device)
    out = _run(genesis, case, {"args": gargs, "kwargs": {"device_type": device, "dtype": gdt}})
    expected = _run(torch, case, {"args": targs, "kwargs": {"device_type": device, "dtype": tdt}})
    assert out.dtype is from_torch(expected.detach().cpu()).dtype, case
    tol = max(TOLERANCES[genesis.bfloat16 if low == "bfloat16" else genesis.float16])
    assert_close(out.float(), expected.float().cpu(), rtol=4 * tol, atol=4 * tol)


def test_binary_cross_entropy_is_banned_on_cuda_only(device, rng):
    x, _ = _pair(rng, (4,), device, 0.1, 0.9)
    with genesis.autocast(device, dtype=genesis.bfloat16):
        if device == "cuda":
            with pytest.raises(RuntimeError, match="unsafe to autocast"):
                F.binary_cross_entropy(x, x)
        else:
            assert F.binary_cross_entropy(x, x).dtype is genesis.float32


def _mlp_step(lib, params, x, t, device, dtype):
    w1, b1, w2, b2 = params
    with lib.autocast(device, dtype=dtype):
        h = lib.nn.functional.gelu(lib.nn.functional.linear(x, w1, b1))
        h = lib.nn.functional.layer_norm(h, (h.shape[-1],))
        loss = lib.nn.functional.cross_entropy(lib.nn.functional.linear(h, w2, b2), t)
    loss.backward()
    return loss


@pytest.mark.parametrize("low", ["bfloat16", "float16"])
def test_gradients_come_back_in_the_parameters_dtype(device, low, rng):
    _torch_device(device)
    gdt, tdt = LOW[low]
    shapes = ((32, 16), (32,), (10, 32), (10,))
    gp, tp = [], []
    for s in shapes:
        a, b = _pair(rng, s, device, -0.3, 0.3)
        gp.append(a.requires_grad_())
        tp.append(b.requires_grad_())
    x, tx = _pair(rng, (8, 16), device)
    t, tt = _targets(rng, 8, 10, device)
    loss = _mlp_step(genesis, gp, x, t, device, gdt)
    tloss = _mlp_step(torch, tp, tx, tt, device, tdt)
    assert loss.dtype is genesis.float32
    tol = 4 * max(TOLERANCES[gdt])
    assert_close(loss, tloss.detach().cpu(), rtol=tol, atol=tol)
    for p, q in zip(gp, tp):
        assert p.grad.dtype is genesis.float32
        scale = float(q.grad.abs().max())
        assert_close(p.grad, q.grad.cpu(), rtol=tol, atol=tol * scale)


def test_weight_casts_are_cached_within_a_region():
    w = genesis.randn(4, 4, requires_grad=True)
    x = genesis.randn(4, 4)
    cache = autocast_state.state().cache
    calls = []
    w.register_hook(lambda g: calls.append(g))
    with genesis.autocast("cpu"):
        a = F.linear(x, w)
        b = F.linear(x, w)
        assert len(cache) == 1
        (a + b).float().sum().backward()
        assert len(calls) == 1  # one cast node: its gradient reaches w once
        x.requires_grad_()
        F.linear(x, x)  # a leaf input: cached too, as PyTorch caches every leaf that needs grad
        F.linear(x.detach(), w.detach())  # neither requires grad: not cached
        assert len(cache) == 2
    assert len(cache) == 0
    with genesis.autocast("cpu", cache_enabled=False):
        F.linear(x.detach(), w)
        assert len(cache) == 0


def test_cache_lives_until_the_outermost_region_exits():
    w = genesis.randn(4, 4, requires_grad=True)
    cache = autocast_state.state().cache
    with genesis.autocast("cpu"):
        with genesis.autocast("cpu"):
            F.linear(genesis.randn(2, 4), w)
        assert len(cache) == 1
    assert len(cache) == 0


def test_nested_and_disabled_regions():
    x, w = genesis.randn(4, 4), genesis.randn(4, 4)
    with genesis.autocast("cpu", dtype=genesis.bfloat16):
        assert (x @ w).dtype is genesis.bfloat16
        with genesis.autocast("cpu", enabled=False):
            assert (x @ w).dtype is genesis.float32
            assert not genesis.is_autocast_enabled("cpu")
        with genesis.autocast("cpu", dtype=genesis.float16):
            assert (x @ w).dtype is genesis.float16
            assert genesis.get_autocast_dtype("cpu") is genesis.float16
        assert (x @ w).dtype is genesis.bfloat16
        assert genesis.is_autocast_enabled("cpu")
    assert not genesis.is_autocast_enabled("cpu")
    assert (x @ w).dtype is genesis.float32


def test_state_functions_match_torch_defaults():
    assert genesis.get_autocast_dtype("cpu") is genesis.bfloat16
    assert genesis.get_autocast_dtype("cuda") is genesis.float16
    assert not genesis.is_autocast_enabled("cuda")
    assert genesis.amp.is_autocast_available("cuda")
    assert not genesis.amp.is_autocast_available("xla")


def test_decorator_and_other_threads():
    @genesis.autocast("cpu")
    def product(a, b):
        return a @ b

    x = genesis.randn(3, 3)
    assert product(x, x).dtype is genesis.bfloat16
    seen = []
    with genesis.autocast("cpu"):
        worker = threading.Thread(target=lambda: seen.append((x @ x).dtype))
        worker.start()
        worker.join()
    assert seen == [genesis.float32]


def test_backward_inside_the_region_runs_in_the_forward_dtypes():
    w = genesis.randn(8, 8, requires_grad=True)
    x = genesis.randn(4, 8)
    with genesis.autocast("cpu"):
        F.linear(x, w).float().pow(2).sum().backward()
        inside = w.grad.clone()
    w.grad = None
    with genesis.autocast("cpu"):
        loss = F.linear(x, w).float().pow(2).sum()
    loss.backward()
    assert w.grad.dtype is genesis.float32
    assert_close(inside, to_torch(w.grad), rtol=0, atol=0)


def test_bad_arguments():
    with pytest.raises(RuntimeError, match="unsupported autocast device_type 'xla'"):
        genesis.autocast("xla")
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
        genesis.autocast(genesis.device("cpu"))
    caught = []
    for lib in (genesis, torch):
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            region = lib.autocast("cpu", dtype=lib.float64)
        caught.append([(str(w.message).replace("torch.", "genesis."), w.filename)
                       for w in seen])
        with region:
            assert not lib.is_autocast_enabled("cpu")
    assert caught[0] == caught[1] and caught[0][0][1] == __file__
    assert caught[0][0][0].startswith("In CPU autocast, but the target dtype is not supported.")


def test_cuda_region_without_cuda_warns_and_is_off(monkeypatch):
    """As torch: a CUDA region (the decorator of old scripts included) on a machine without CUDA
    warns once and runs with autocast off."""
    monkeypatch.setattr(genesis.amp.autocast_mode.driver, "is_available", lambda: False)
    with pytest.warns(UserWarning, match="CUDA is not available.*Disabling autocast"):
        region = genesis.autocast("cuda")

    @region
    def inside():
        return genesis.is_autocast_enabled("cuda")

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not inside()


class _Scaled(genesis.autograd.Function):
    @staticmethod
    @genesis.amp.custom_fwd(device_type="cpu", cast_inputs=genesis.float32)
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a @ b

    @staticmethod
    @genesis.amp.custom_bwd(device_type="cpu")
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return g @ b.mT, a.mT @ g


def test_custom_fwd_casts_inputs_and_custom_bwd_restores_the_state():
    a = genesis.randn(3, 3, requires_grad=True)
    b = genesis.randn(3, 3, requires_grad=True)
    with genesis.autocast("cpu"):
        out = _Scaled.apply(a.bfloat16(), b)
        assert out.dtype is genesis.float32
        plain = a @ b
    assert plain.dtype is genesis.bfloat16
    out.sum().backward()
    assert a.grad.dtype is genesis.float32 and b.grad.dtype is genesis.float32


def _warnings(lib, call):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        call(lib)
    return [(w.category, str(w.message)) for w in seen]


def test_cuda_amp_spellings():
    """Each device spelling warns as torch's, word for word (scripts filter on these texts)."""
    for call in (lambda lib: lib.cuda.amp.autocast(enabled=False),
                 lambda lib: lib.cuda.amp.GradScaler(enabled=False),
                 lambda lib: lib.cpu.amp.autocast(enabled=False),
                 lambda lib: lib.cuda.amp.custom_fwd(lambda ctx, x: x),
                 lambda lib: lib.cuda.amp.custom_bwd(lambda ctx, g: g)):
        assert _warnings(genesis, call) == _warnings(torch, call)
    with pytest.warns(FutureWarning):
        region = genesis.cuda.amp.autocast()
    assert region.device == "cuda" and region.fast_dtype is genesis.float16
    with pytest.warns(FutureWarning):
        scaler = genesis.cuda.amp.GradScaler(enabled=False)
    assert not scaler.is_enabled()
    with pytest.warns(FutureWarning) as record:
        class Double(genesis.autograd.Function):
            @staticmethod
            @genesis.cuda.amp.custom_fwd(cast_inputs=genesis.float32)
            def forward(ctx, x):
                return x * 2

            @staticmethod
            @genesis.cuda.amp.custom_bwd
            def backward(ctx, grad):
                return grad * 2
    assert sorted(str(w.message).split("(")[0] for w in record) == [
        "`torch.cuda.amp.custom_bwd", "`torch.cuda.amp.custom_fwd"]
    x = genesis.ones(3, requires_grad=True)
    Double.apply(x).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]


def test_cpu_amp_spellings_as_torch(rng):
    """genesis.cpu.amp.autocast and GradScaler warn as torch.cpu.amp's, at the user's line, and
    run a bfloat16 region and a CPU scaler as genesis.amp's do."""
    seen = []
    for lib in (genesis, torch):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            region = lib.cpu.amp.autocast(cache_enabled=False)
            scaler = lib.cpu.amp.GradScaler(init_scale=8.0)
        with region:
            a = lib.tensor(rng.standard_normal((3, 4)).astype(np.float32))
            dtype = str((a @ a.mT).dtype).split(".")[1]
        seen.append(([(str(w.message), w.category, w.filename)
                      for w in caught], dtype, scaler.get_scale(), scaler.state_dict()))
    assert seen[0] == seen[1] and seen[0][0][0][2] == __file__
    assert seen[0][1] == "bfloat16"
