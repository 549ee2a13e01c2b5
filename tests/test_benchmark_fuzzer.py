"""genesis.utils.benchmark.Fuzzer against torch.utils.benchmark.Fuzzer: a seed draws the same
parameters, resamples as often, and lays the tensors out with the same shapes, strides and
contiguity; misuse raises what torch raises. Modules and Measurements live where torch's do."""

import pickle

import numpy as np
import pytest
import torch
import torch.utils.benchmark as torch_benchmark

import genesis
from genesis.utils import benchmark


def _fuzzer(module, lib, seed=0):
    """Two loguniform sizes, a strict uniform step, an alias, a constraint and two tensors
    (one strided, one int64 with its dimension count drawn)."""
    return module.Fuzzer(
        parameters=[
            module.FuzzedParameter("k0", minval=1, maxval=300, distribution="loguniform"),
            module.FuzzedParameter("k1", minval=1, maxval=300, distribution="loguniform"),
            module.FuzzedParameter("step", minval=1, maxval=3, distribution="uniform",
                                   strict=True),
            [module.FuzzedParameter("dim", minval=1, maxval=2, distribution="uniform"),
             module.FuzzedParameter("scale", minval=0.5, maxval=2.0, distribution="uniform")],
        ],
        tensors=[
            module.FuzzedTensor("x", size=("k0", "k1"), steps=(1, "step"), min_elements=16,
                                max_elements=1024, probability_contiguous=0.4),
            module.FuzzedTensor("y", size=("k1", "k0"), dim_parameter="dim",
                                dtype=lib.int64, max_allocation_bytes=16384),
        ],
        constraints=[lambda params: params["k0"] != params["k1"]],
        seed=seed,
    )


def _draws(module, lib, n=6):
    """Per step: the parameters, each tensor's shape, strides, contiguity and value range, and
    its properties with the order as a list."""
    fuzzer = _fuzzer(module, lib)
    rows = []
    for tensors, properties, params in fuzzer.take(n):
        for name, t in sorted(tensors.items()):
            props = dict(properties[name], order=list(properties[name]["order"]))
            props["dtype"] = props["dtype"].split(".")[-1]
            low, high = float(t.min()), float(t.max())
            rows.append((params, name, tuple(t.shape), t.stride(), t.is_contiguous(), props,
                         low >= 0, high < 127))
    return rows, fuzzer.rejection_rate


def test_fuzzer_draws_as_torch():
    assert _draws(benchmark, genesis) == _draws(torch_benchmark, torch)


def test_fuzzer_seeds_the_generator_as_torch_per_take():
    first = [t["x"].numpy().copy() for t, _, _ in _fuzzer(benchmark, genesis).take(2)]
    again = [t["x"].numpy().copy() for t, _, _ in _fuzzer(benchmark, genesis).take(2)]
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)


def test_parameter_alias_resolves_and_prints_as_torch():
    shown = []
    for module in (benchmark, torch_benchmark):
        fuzzer = module.Fuzzer(
            parameters=[module.FuzzedParameter("n", minval=2, maxval=9, distribution="uniform"),
                        module.FuzzedParameter("m", minval=1, maxval=1, distribution="uniform")],
            tensors=[module.FuzzedTensor("x", size=("n", "m"))], seed=3)
        fuzzer._parameters[1].sample = lambda state, m=module: m.ParameterAlias("n")
        shown.append(([p for _, _, p in fuzzer.take(3)], repr(module.ParameterAlias("n"))))
    assert shown[0] == shown[1]


def _error(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001  (the exception compared with torch's)
        return type(e).__name__, str(e)
    return None


@pytest.mark.parametrize("case", ["unknown", "negative", "duplicate", "cycle", "unsatisfiable"])
def test_fuzzer_errors_as_torch(case):
    def make(module):
        p = module.FuzzedParameter
        if case == "unknown":
            return lambda: p("a", 1, 2, distribution="normal")
        if case == "negative":
            return lambda: p("a", distribution={1: -0.5, 2: 1.5})
        if case == "duplicate":
            return lambda: module.Fuzzer([p("x", 1, 2, "uniform")],
                                         [module.FuzzedTensor("x", size=(2,))])
        if case == "cycle":
            return lambda: module.Fuzzer._resolve_aliases(
                {"a": module.ParameterAlias("b"), "b": module.ParameterAlias("a")})
        fuzzer = module.Fuzzer([p("n", 1, 4, "uniform")],
                               [module.FuzzedTensor("x", size=("n",), min_elements=10)], seed=0)
        return lambda: next(fuzzer.take(1))
    assert _error(make(benchmark)) == _error(make(torch_benchmark))


def test_custom_distribution_draws_its_keys():
    """torch rejects every normalized dict (its check is inverted), so genesis' draws are
    checked against the RandomState stream itself."""
    fuzzer = benchmark.Fuzzer(
        parameters=[benchmark.FuzzedParameter("d", distribution={1: 0.3, 2: 0.4, 3: 0.3})],
        tensors=[benchmark.FuzzedTensor("x", size=(2, 3), dim_parameter="d")], seed=0)
    state = np.random.RandomState(0)
    state.randint(low=0, high=2 ** 63, dtype=np.int64)
    first = [1, 2, 3][state.choice(np.arange(3), p=(0.3, 0.4, 0.3))]
    dims = [params["d"] for _, _, params in fuzzer.take(20)]
    assert dims[0] == first and set(dims) == {1, 2, 3}
    with pytest.raises(AssertionError, match="'maxval' must be None"):
        benchmark.FuzzedParameter("a", maxval=1, distribution={1: 0.5, 2: 0.5})
    with pytest.raises(AssertionError, match="Distribution is not normalized"):
        benchmark.FuzzedParameter("a", distribution={1: 0.25, 2: 0.5})


def test_measurement_lives_where_torch_has_it():
    m = benchmark.Timer("x + 1", globals={"x": genesis.ones(2)}).timeit(3)
    assert repr(m).startswith("<genesis.utils.benchmark.utils.common.Measurement object at")
    assert type(pickle.loads(pickle.dumps(m))) is benchmark.Measurement
    from genesis.utils.benchmark.utils.common import Measurement
    from genesis.utils.benchmark.utils.timer import Timer
    assert (Measurement, Timer) == (benchmark.Measurement, benchmark.Timer)
