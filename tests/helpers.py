"""Shared test helpers: conversions to and from PyTorch (the oracle) and tolerances by dtype."""

import os
import re

import numpy as np
import pytest
import torch

import genesis

# rtol, atol per dtype: float32 as torch.testing's defaults, half types by their 8/11-bit mantissas.
TOLERANCES = {
    genesis.float64: (1e-7, 1e-7),
    genesis.float32: (1.3e-6, 1e-5),
    genesis.float16: (1e-3, 1e-5),
    genesis.bfloat16: (1.6e-2, 1e-5),
}

FLOAT_DTYPES = [genesis.float32, genesis.float64, genesis.float16, genesis.bfloat16]
INT_DTYPES = [genesis.uint8, genesis.int8, genesis.int16, genesis.int32, genesis.int64]
ALL_DTYPES = FLOAT_DTYPES + INT_DTYPES + [genesis.bool]

TORCH_DTYPES = {
    genesis.float32: torch.float32, genesis.float64: torch.float64,
    genesis.float16: torch.float16, genesis.bfloat16: torch.bfloat16,
    genesis.uint8: torch.uint8, genesis.int8: torch.int8, genesis.int16: torch.int16,
    genesis.int32: torch.int32, genesis.int64: torch.int64, genesis.bool: torch.bool,
}
GENESIS_DTYPES = {v: k for k, v in TORCH_DTYPES.items()}


def devices():
    """The devices the op tests run on (a test taking a `device` argument runs once on each,
    marked with the device's name): the CPU, plus CUDA where a GPU is present.
    GENESIS_TEST_DEVICES overrides it with a comma-separated list ("cpu", "cuda", "cpu,cuda").
    On a GPU machine `pytest -m cuda tests --ignore=tests/cuda` runs just the cuda cases."""
    chosen = os.environ.get("GENESIS_TEST_DEVICES")
    if chosen:
        return [d.strip() for d in chosen.split(",") if d.strip()]
    return ["cpu"] + (["cuda"] if genesis.cuda.is_available() else [])


def to_torch(t, requires_grad=None):
    """A torch CPU tensor with `t`'s values, dtype and geometry-independent contents."""
    host = t.detach().cpu()
    if host.dtype is genesis.bfloat16:
        out = torch.from_numpy(host.numpy().astype(np.float32)).to(torch.bfloat16)
    else:
        out = torch.from_numpy(host.numpy().copy())
    rg = t.requires_grad if requires_grad is None else requires_grad
    return out.requires_grad_(rg) if rg else out


def from_torch(t, device="cpu", requires_grad=None):
    t = t.detach()
    if t.dtype is torch.bfloat16:
        arr = t.float().numpy()
        out = genesis.tensor(arr, dtype=genesis.bfloat16, device=device)
    else:
        out = genesis.tensor(t.numpy(), device=device)
    rg = t.requires_grad if requires_grad is None else requires_grad
    return out.requires_grad_(True) if rg else out


def assert_close(actual, expected, dtype=None, rtol=None, atol=None, check_dtype=True):
    """Compare a genesis tensor with a torch tensor: shape, dtype and values within tolerance."""
    if isinstance(expected, torch.Tensor):
        exp_dtype = GENESIS_DTYPES[expected.dtype]
        exp = expected.detach().float().numpy() if expected.dtype is torch.bfloat16 \
            else expected.detach().numpy()
    else:
        exp_dtype, exp = None, np.asarray(expected)
    assert tuple(actual.shape) == tuple(exp.shape), f"shape {tuple(actual.shape)} != {exp.shape}"
    if check_dtype and exp_dtype is not None:
        assert actual.dtype is exp_dtype, f"dtype {actual.dtype} != {exp_dtype}"
    dtype = dtype or actual.dtype
    d_rtol, d_atol = TOLERANCES.get(dtype, (0, 0))
    rtol = d_rtol if rtol is None else rtol
    atol = d_atol if atol is None else atol
    host = actual.detach().cpu()
    act = host.numpy().astype(np.float32) if host.dtype is genesis.bfloat16 else host.numpy()
    if act.dtype.kind in "biu" and exp.dtype.kind in "biu":
        np.testing.assert_array_equal(act, exp)
    else:
        np.testing.assert_allclose(act.astype(np.float64), exp.astype(np.float64), rtol=rtol,
                                   atol=atol, equal_nan=True)


def ulp_distance(actual, expected):
    """Elementwise distance in units in the last place between two half-precision numpy arrays
    of one dtype (float16 or ml_dtypes' bfloat16), through their bit patterns ordered as
    integers (so +0 and -0 are 0 apart and the distance across zero is counted)."""
    bits = np.int16 if actual.dtype == np.float16 else np.uint16
    def ordered(a):
        raw = a.view(bits).astype(np.int32) & 0xFFFF
        return np.where(raw & 0x8000, 0x8000 - raw, raw)
    return np.abs(ordered(actual) - ordered(expected))


def make_pair(shape, dtype=genesis.float32, low=-2.0, high=2.0, requires_grad=False,
              device="cpu", rng=None):
    """The same fresh random values as a genesis tensor and a torch tensor."""
    rng = rng or np.random.default_rng()
    if dtype is genesis.bool:
        arr = rng.random(shape) < 0.5
    elif dtype.is_floating_point:
        arr = rng.uniform(low, high, size=shape)
    else:
        lo = 0 if dtype is genesis.uint8 else int(low) * 5
        arr = rng.integers(lo, int(high) * 5 + 1, size=shape)
    g = genesis.tensor(np.asarray(arr), dtype=dtype, device=device)
    t = to_torch(g)
    if requires_grad:
        g.requires_grad_(True)
        t.requires_grad_(True)
    return g, t


def noncontiguous_pair(shape, dtype=genesis.float32, device="cpu", rng=None):
    """A transposed (non-contiguous) view with `shape`, in genesis and torch (leaf copies of it
    are what tests should mark requires_grad)."""
    dims = list(reversed(range(len(shape))))
    g, t = make_pair(tuple(reversed(shape)), dtype, device=device, rng=rng)
    return g.permute(*dims), t.permute(*dims)


def torch_act(z, activation):
    """PyTorch's result of the fused linear epilogue `activation` (None, "relu", "gelu",
    "gelu_tanh", "silu") applied to `z`."""
    if activation is None:
        return z
    if activation == "gelu_tanh":
        return torch.nn.functional.gelu(z, approximate="tanh")
    return getattr(torch.nn.functional, activation)(z)


def lay_out(g, layout):
    """`g`'s values in a non-contiguous layout on g's device: "transposed" (a copy in reversed
    dim order, permuted back), "stepped" (every other element of a zero buffer) or "expanded"
    (g's first row broadcast over its shape: the values become that row's), "channels_last" (a
    copy with dim 1 innermost, permuted back); "contiguous" is g."""
    if layout == "contiguous" or g.ndim == 0:
        return g
    if layout == "channels_last":
        order = [0, *range(2, g.ndim), 1]
        return g.permute(*order).contiguous().permute(0, g.ndim - 1, *range(1, g.ndim - 1))
    if layout == "transposed":
        order = list(reversed(range(g.ndim)))
        return g.permute(*order).contiguous().permute(*order)
    if layout == "stepped":
        big = genesis.zeros(tuple(2 * s + 1 for s in g.shape), dtype=g.dtype, device=g.device)
        view = big[tuple(slice(1, None, 2) for _ in g.shape)]
        view.copy_(g)
        return view
    if layout == "expanded":
        return g.reshape(-1)[: g.shape[-1]].expand(*g.shape) if g.numel() else g
    raise ValueError(layout)


skip_no_cuda = pytest.mark.skipif(not (hasattr(genesis, "cuda") and genesis.cuda.is_available()),
                                  reason="needs a CUDA GPU")


def warm_up_on_side_stream(fn, iters=3):
    """Run `fn` `iters` times on a side stream, as PyTorch's CUDA graph recipe does before a
    capture: kernels compile and tune, and lazily made state appears, outside the graph."""
    side = genesis.cuda.Stream()
    side.wait_stream(genesis.cuda.current_stream())
    with genesis.cuda.stream(side):
        for _ in range(iters):
            fn()
    genesis.cuda.current_stream().wait_stream(side)


def assert_replays_as_eager(fn, refill, replays=3):
    """Warm `fn` up, capture it in a CUDA graph, then `replays` times: `refill()` the captured
    inputs in place, replay, and check the graph's output equals a fresh eager call bit for
    bit (compared in float32, which holds every half value exactly)."""
    warm_up_on_side_stream(fn)
    graph = genesis.cuda.CUDAGraph()
    with genesis.cuda.graph(graph):
        out = fn()
    for _ in range(replays):
        refill()
        graph.replay()
        assert np.array_equal(out.cpu().float().numpy(), fn().cpu().float().numpy())


def run_checks_worker(script, timeout=600):
    """Run the checks script `script` in a process of its own (one that replaces the driver
    layer, say): it must exit cleanly with "all checks passed" as its last line."""
    import subprocess
    import sys
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                            timeout=timeout)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip().endswith("all checks passed"), result.stdout


def free_port():
    """A loopback TCP port nothing listens on now: a test job's MASTER_PORT."""
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spawn_job(run, world):
    """Run `run(rank, world, port, seed)` in `world` processes (genesis.multiprocessing.spawn)
    meeting at a free port, with one random seed every rank builds its data from."""
    import random

    import genesis.multiprocessing as mp
    mp.spawn(run, args=(world, free_port(), random.randrange(2 ** 32)), nprocs=world)


def raised(make, *args, **kwargs):
    """(the name of the exception type, its text) that make(*args, **kwargs) raises: to
    compare Genesis's errors with torch's."""
    with pytest.raises(Exception) as info:
        make(*args, **kwargs)
    return type(info.value).__name__, str(info.value)


def assert_refuses_as_torch(call):
    """call(torch) and call(genesis) raise the same exception type, genesis's text torch's (its
    torch.Size printed as genesis.Size) or the op's name and ': ' before it, the codebase's
    convention."""
    kind, words = raised(call, torch)
    words = words.replace("torch.Size", "genesis.Size")
    got_kind, text = raised(call, genesis)
    assert got_kind == kind and text.endswith(words), (got_kind, text, kind, words)
    assert re.fullmatch(r"(\w+: )?", text[:len(text) - len(words)]), (text, words)


_WIDTHS = ["bfloat16", "float16", "float32", "float64"]  # least precise first
MIXED_DTYPES = [(a, b) for a in _WIDTHS for b in _WIDTHS if a != b]


def _mixed_case(m, name, dtypes, base, extra, backward, target_grad):
    """m's loss `name` of an input and a target of the two dtypes `dtypes` (the target
    requiring grad with `target_grad`): (loss,), or with `backward` through its sum (loss, the
    input's grad, and the target's where it requires grad)."""
    x, y = (m.tensor(values, dtype=getattr(m, dtype)) for values, dtype in zip(base, dtypes))
    x.requires_grad_()
    y.requires_grad_(target_grad)
    loss = getattr(m.nn.functional, name)(x, y, **extra(m))
    if not backward:
        return (loss,)
    loss.sum().backward()
    return (loss, x.grad, y.grad) if target_grad else (loss, x.grad)


def check_mixed_dtypes(name, dtypes, base, extra=lambda m: {}, target_grad=True):
    """The loss `name` of an input and a target of the floating dtypes `dtypes` (values
    `base`, keyword arguments extra(m)) as torch's: its dtype and values, then the gradients'
    (or torch's refusal of either), within the least precise dtype's tolerance."""
    least = getattr(genesis, min(dtypes, key=_WIDTHS.index))
    for backward in (False, True):
        def case(m):
            return _mixed_case(m, name, dtypes, base, extra, backward, target_grad)
        try:
            expected = case(torch)
        except RuntimeError:
            assert_refuses_as_torch(case)
            return
        for g, t in zip(case(genesis), expected):
            assert_close(g, t, dtype=least)
