"""apply_, map_ and map2_ (ops/python_calls.py) against PyTorch: values through every dtype and
layout, broadcasting, and PyTorch's errors."""

import numpy as np
import pytest
import torch
from helpers import assert_close

import genesis


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "float16", "int64", "int8",
                                   "bool"])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_apply_map_and_map2_as_torch(dtype, layout, rng):
    values = rng.uniform(-3, 3, (3, 4))
    results = []
    for lib in (torch, genesis):
        def make(a):
            t = lib.tensor(a).to(getattr(lib, dtype))
            return t.t() if layout == "transposed" else t
        x = make(values)
        x.apply_(lambda v: v * 2 if not isinstance(v, bool) else not v)
        y = make(values)
        y.map_(make(values[:1]), lambda a, b: a - b if not isinstance(a, bool) else a or b)
        z = make(values)
        z.map2_(make(values), make(values[:, :1] if layout == "contiguous" else values[:1]),
                lambda a, b, c: max(a, b, c))
        results.append((x, y, z))
    for ours, theirs in zip(results[1], results[0]):
        assert_close(ours, theirs)


def test_errors_as_torch():
    for lib in (torch, genesis):
        with pytest.raises(RuntimeError, match=r"Can't call apply_\(\) on Variable that requires"):
            lib.ones(2, requires_grad=True).apply_(lambda v: v)
        with pytest.raises(TypeError, match="'int' object is not callable"):
            lib.ones(2).apply_(3)
        with pytest.raises(TypeError, match="must be real number, not str"):
            lib.ones(2).apply_(lambda v: "x")
        with pytest.raises(RuntimeError, match="The expanded size of the tensor"):
            lib.ones(2, 3).map_(lib.ones(4), lambda a, b: a)
    x = genesis.ones(2)
    version = x._version
    assert x.apply_(lambda v: v + 1) is x and x.tolist() == [2.0, 2.0]
    assert x._version > version  # saved copies of it see the change
    assert np.array_equal(x.numpy(), [2.0, 2.0])
