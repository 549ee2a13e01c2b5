"""More ported PyTorch tutorials and recipes (the benchmark recipe, the timer quick start, the
CPU parts of the AMP recipe and the performance tuning guide, the introductory tensors
tutorial), each cut to the API it exercises, written once against a framework and run in both:
what they print and compute agrees with torch's."""

import math
import warnings

import numpy as np
import torch
import torch.utils.benchmark  # noqa: F401  (torch.utils.benchmark as an attribute)
from helpers import TOLERANCES
from nn_compare import copy_module

import genesis
import genesis.utils.benchmark  # noqa: F401


def _batched_dot_mul_sum(a, b):
    return a.mul(b).sum(-1)


def _benchmark_recipe(lib):
    """Fuzzed inputs labelled as the recipe labels them, both batched dots agreeing on each,
    timed with Timer (Language.PYTHON) and gathered by Compare."""
    bench = lib.utils.benchmark
    fuzzer = bench.Fuzzer(
        parameters=[bench.FuzzedParameter("k0", minval=1, maxval=1000, distribution="loguniform"),
                    bench.FuzzedParameter("k1", minval=1, maxval=1000, distribution="loguniform")],
        tensors=[bench.FuzzedTensor("x", size=("k0", "k1"), min_elements=16, max_elements=5000,
                                    probability_contiguous=0.6)],
        seed=0)
    shown, results = [], []
    for tensors, tensor_params, params in fuzzer.take(4):
        x = tensors["x"]
        label = (f"{params['k0']:<6} x {params['k1']:<4} "
                 f"{'' if tensor_params['x']['is_contiguous'] else '(discontiguous)'}")
        bmm = lib.bmm(x.reshape(-1, 1, x.shape[-1]), x.reshape(-1, x.shape[-1], 1)).flatten(-3)
        shown.append((label, tuple(x.shape), bool(_batched_dot_mul_sum(x, x).allclose(bmm))))
        timer = bench.Timer("batched_dot_mul_sum(x, x)", globals={
            "x": x, "batched_dot_mul_sum": _batched_dot_mul_sum}, label="Batched dot",
            sub_label=label, description="mul/sum", language=bench.Language.PYTHON)
        results.append(timer.timeit(2))
    shown.append(repr(results[0]).splitlines()[0].split(" object at ")[0])
    shown.append(str(bench.Compare(results)).count("\n"))
    return shown


def test_benchmark_recipe_as_torch():
    ours, theirs = _benchmark_recipe(genesis), _benchmark_recipe(torch)
    assert ours[:-2] == theirs[:-2] and ours[-1] == theirs[-1]
    assert ours[-2] == theirs[-2].replace("torch", "genesis")


def _amp_recipe(lib, state, batches):
    """Two epochs of bfloat16 autocast on the CPU with a GradScaler, unscaling to clip, then
    the scaler's state saved and loaded back."""
    layers = [lib.nn.Linear(16, 16), lib.nn.ReLU(), lib.nn.Linear(16, 8)]
    net = lib.nn.Sequential(*layers)
    net.load_state_dict({k: lib.tensor(v) for k, v in state.items()})
    opt = lib.optim.SGD(net.parameters(), lr=0.01)
    scaler = lib.amp.GradScaler("cpu", enabled=True)
    losses, dtypes = [], set()
    for _ in range(2):
        for x, y in batches:
            with lib.autocast(device_type="cpu", dtype=lib.bfloat16):
                out = net(lib.tensor(x))
                loss = lib.nn.functional.mse_loss(out, lib.tensor(y))
            dtypes.add((str(out.dtype)[-8:], str(loss.dtype)[-7:]))
            scaler.scale(loss).backward()
            scaler.unscale_(opt)
            lib.nn.utils.clip_grad_norm_(net.parameters(), max_norm=0.5)
            scaler.step(opt)
            scaler.update()
            opt.zero_grad(set_to_none=True)
            losses.append(loss.item())
    saved = scaler.state_dict()
    scaler.load_state_dict(saved)
    return losses, dtypes, saved


def test_amp_recipe_on_cpu_as_torch(rng):
    shapes = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU(),
                                 torch.nn.Linear(16, 8)).state_dict()
    state = {k: rng.standard_normal(tuple(v.shape)).astype(np.float32) * 0.3
             for k, v in shapes.items()}
    batches = [(rng.standard_normal((4, 16)).astype(np.float32),
                rng.standard_normal((4, 8)).astype(np.float32)) for _ in range(3)]
    ours, theirs = (_amp_recipe(lib, state, batches) for lib in (genesis, torch))
    assert ours[1:] == theirs[1:]
    rtol, atol = TOLERANCES[genesis.bfloat16]
    np.testing.assert_allclose(ours[0], theirs[0], rtol=rtol, atol=atol)


def _tuning_guide(lib, t_model):
    """The CPU advice: gradients set to None, a compiled pointwise gelu, debugging APIs off,
    a traced and frozen model in inference, and bfloat16 autocast by its torch.cpu.amp name."""
    model = t_model if lib is torch else copy_module(
        genesis.nn.Sequential(genesis.nn.Conv2d(3, 4, 3, bias=False), genesis.nn.BatchNorm2d(4),
                              genesis.nn.ReLU(), genesis.nn.Flatten()), t_model)
    x = lib.linspace(-1, 1, 2 * 3 * 5 * 5).reshape(2, 3, 5, 5)
    model(x).sum().backward()
    for param in model.parameters():
        param.grad = None
    gelu = lib.compile(lambda v: v * 0.5 * (1.0 + lib.erf(v / 1.41421)))
    shown = [gelu(lib.linspace(-2, 2, 5)).tolist()]
    lib.autograd.set_detect_anomaly(False)
    with lib.autograd.profiler.emit_nvtx(enabled=False), lib.autograd.profiler.emit_itt():
        lib.jit.enable_onednn_fusion(True)
        shown.append(lib.jit.onednn_fusion_enabled())
        lib.jit.enable_onednn_fusion(False)
    frozen = lib.jit.freeze(lib.jit.trace(model.eval(), [x]))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with lib.no_grad(), lib.cpu.amp.autocast(cache_enabled=False, dtype=lib.bfloat16):
            out = frozen(x)
            # torch's frozen graph folds the batch norm into the conv's weights, which then
            # round to bfloat16 otherwise: the values compared are the module's own
            values = model(x)
    shown += [str(out.dtype)[-8:], list(out.shape),
              [str(w.category.__name__) for w in caught]]
    return shown, values.float().numpy()


def test_tuning_guide_cpu_parts_as_torch():
    t_model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, bias=False), torch.nn.BatchNorm2d(4),
                                  torch.nn.ReLU(), torch.nn.Flatten())
    ours, theirs = _tuning_guide(genesis, t_model), _tuning_guide(torch, t_model)
    np.testing.assert_allclose(ours[0][0], theirs[0][0], rtol=1.3e-6, atol=1e-5)
    assert ours[0][1:] == theirs[0][1:]
    rtol, atol = TOLERANCES[genesis.bfloat16]
    np.testing.assert_allclose(ours[1], theirs[1], rtol=rtol, atol=atol * 100)


def _tensors_tutorial(lib):
    """The deterministic cells of the introductory tensors tutorial, printed."""
    twos = lib.ones(2, 2) * 2
    angles = lib.tensor([0, math.pi / 4, math.pi / 2, 3 * math.pi / 4])
    d = lib.tensor([[1., 2.], [3., 4.]])
    m3 = lib.matmul(lib.tensor([[0.5, 0.25], [0.125, 0.75]]), lib.tensor([[3., 0.], [0., 3.]]))
    cells = [lib.ones((2, 3), dtype=lib.int16), (lib.ones(2, 2) * 7 - 1) / 2, twos ** 0.5,
             twos ** lib.tensor([[1, 2], [3, 4]]), lib.asin(lib.sin(angles)),
             lib.bitwise_xor(lib.tensor([1, 5, 11]), lib.tensor([2, 7, 10])),
             lib.eq(d, lib.ones(1, 2)), lib.std(d), lib.prod(d),
             lib.unique(lib.tensor([1, 2, 1, 2, 1, 2])), lib.svd(m3)]
    return [str(c).replace(lib.__name__, "lib") for c in cells]


def test_tensors_tutorial_prints_as_torch():
    assert _tensors_tutorial(genesis) == _tensors_tutorial(torch)
