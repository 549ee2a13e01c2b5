"""dtypes: attributes, promote_types/result_type/can_cast against PyTorch, the default dtype."""

import itertools
import pickle
import warnings

import numpy as np
import pytest
import torch

import genesis
from helpers import ALL_DTYPES, TORCH_DTYPES

PAIRS = list(itertools.product(ALL_DTYPES, ALL_DTYPES))
SCALARS = [True, False, 3, -200, 2.5, 1e300]


def _zeros(dtype, ndim, lib):
    if lib is genesis:
        return genesis.zeros((2,) * ndim, dtype=dtype)
    return torch.zeros((2,) * ndim, dtype=TORCH_DTYPES[dtype])


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_attributes_match_torch(dtype):
    ref = TORCH_DTYPES[dtype]
    assert dtype.itemsize == ref.itemsize
    assert dtype.is_floating_point == ref.is_floating_point
    assert dtype.is_signed == ref.is_signed
    assert dtype.is_complex is False
    assert repr(dtype) == repr(ref).replace("torch.", "genesis.")
    assert genesis.zeros(3, dtype=dtype).element_size() == ref.itemsize
    assert genesis.is_floating_point(genesis.zeros(1, dtype=dtype)) == ref.is_floating_point
    assert pickle.loads(pickle.dumps(dtype)) is dtype


def test_aliases():
    assert genesis.half is genesis.float16 and genesis.double is genesis.float64
    assert genesis.float is genesis.float32 and genesis.long is genesis.int64
    assert genesis.int is genesis.int32 and genesis.short is genesis.int16
    assert isinstance(genesis.float32, genesis.dtype)


@pytest.mark.parametrize("a,b", PAIRS, ids=str)
def test_promote_types(a, b):
    assert TORCH_DTYPES[genesis.promote_types(a, b)] is torch.promote_types(TORCH_DTYPES[a],
                                                                             TORCH_DTYPES[b])


@pytest.mark.parametrize("a,b", PAIRS, ids=str)
def test_can_cast(a, b):
    assert genesis.can_cast(a, b) == torch.can_cast(TORCH_DTYPES[a], TORCH_DTYPES[b])


@pytest.mark.parametrize("ndims", [(1, 1), (1, 0), (0, 1), (0, 0)], ids=str)
@pytest.mark.parametrize("a,b", PAIRS, ids=str)
def test_result_type_tensor_tiers(a, b, ndims):
    got = genesis.result_type(_zeros(a, ndims[0], genesis), _zeros(b, ndims[1], genesis))
    want = torch.result_type(_zeros(a, ndims[0], torch), _zeros(b, ndims[1], torch))
    assert TORCH_DTYPES[got] is want


@pytest.mark.parametrize("default", [genesis.float32, genesis.float64])
@pytest.mark.parametrize("ndim", [0, 1])
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_result_type_with_python_scalars(dtype, ndim, default):
    genesis.set_default_dtype(default)
    torch.set_default_dtype(TORCH_DTYPES[default])
    try:
        for s in SCALARS:
            g = _zeros(dtype, ndim, genesis)
            t = _zeros(dtype, ndim, torch)
            assert TORCH_DTYPES[genesis.result_type(g, s)] is torch.result_type(t, s), s
            assert TORCH_DTYPES[genesis.result_type(s, g)] is torch.result_type(s, t), s
    finally:
        torch.set_default_dtype(torch.float32)


def test_three_tier_result_type_in_ops():
    ints = genesis.ones(3, dtype=genesis.int8)
    assert (ints + genesis.tensor(1000)).dtype is genesis.int8
    assert (ints + genesis.tensor(1.5, dtype=genesis.float64)).dtype is genesis.float64
    assert (ints + 1.5).dtype is genesis.float32
    assert (genesis.ones(3, dtype=genesis.float16) + genesis.tensor(1.0, dtype=genesis.float64)
            ).dtype is genesis.float16
    assert (genesis.tensor(True) + genesis.ones(2, dtype=genesis.uint8)).dtype is genesis.uint8


def test_as_dtype_accepts_names_numpy_and_python_types():
    from genesis.dtypes import as_dtype
    assert as_dtype("bfloat16") is genesis.bfloat16
    assert as_dtype(np.int16) is genesis.int16
    assert as_dtype(float) is genesis.float64 and as_dtype(bool) is genesis.bool
    with pytest.raises(TypeError):
        as_dtype("complex64")
    with pytest.raises(TypeError, match="not supported"):
        genesis.from_numpy(np.zeros(2, np.complex64))


@pytest.mark.parametrize("dtype", [genesis.float64, genesis.float16, genesis.bfloat16,
                                   genesis.float32], ids=str)
def test_default_dtype_effects(dtype):
    genesis.set_default_dtype(dtype)
    torch.set_default_dtype(TORCH_DTYPES[dtype])
    try:
        assert genesis.get_default_dtype() is dtype
        cases = [
            (genesis.tensor(1.5), torch.tensor(1.5)),
            (genesis.tensor([1, 2.5]), torch.tensor([1, 2.5])),
            (genesis.tensor([1, 2]), torch.tensor([1, 2])),
            (genesis.arange(0, 1, 0.25), torch.arange(0, 1, 0.25)),
            (genesis.arange(5), torch.arange(5)),
            (genesis.rand(3), torch.rand(3)),
            (genesis.randn(3), torch.randn(3)),
            (genesis.zeros(2), torch.zeros(2)),
            (genesis.full((2,), 1.5), torch.full((2,), 1.5)),
            (genesis.full((2,), 3), torch.full((2,), 3)),
            (genesis.linspace(0, 1, 3), torch.linspace(0, 1, 3)),
            (genesis.tensor([1, 2]) * 2.5, torch.tensor([1, 2]) * 2.5),
            (genesis.tensor([1, 2]) / 2, torch.tensor([1, 2]) / 2),
            (genesis.sqrt(genesis.tensor([4])), torch.sqrt(torch.tensor([4]))),
        ]
        for i, (g, t) in enumerate(cases):
            assert TORCH_DTYPES[g.dtype] is t.dtype, i
        assert genesis.tensor(np.array([1.5])).dtype is genesis.float64
    finally:
        torch.set_default_dtype(torch.float32)


@pytest.mark.parametrize("dtype", [genesis.int32, genesis.bool, "int64"])
def test_set_default_dtype_rejects_non_float(dtype):
    with pytest.raises(TypeError):
        genesis.set_default_dtype(dtype)
    assert genesis.get_default_dtype() is genesis.float32


# (source dtype, half dtype, value) where rounding through float32 (c10's conversion) and
# rounding once give different half values
DOUBLE_ROUNDINGS = [(genesis.float64, genesis.float16, 1 + 2 ** -11 + 2 ** -40),
                    (genesis.float64, genesis.bfloat16, 1 + 2 ** -8 + 2 ** -40),
                    (genesis.int64, genesis.bfloat16, 2 ** 24 + 2 ** 16 + 1)]


@pytest.mark.parametrize("source,half,value", DOUBLE_ROUNDINGS, ids=str)
def test_conversions_into_half_types_round_as_torch(source, half, value, device):
    """tensor(), .to() and copy_ from float64 and int64 into float16 and bfloat16 go through
    float32, as PyTorch's conversions do: the same half value bit for bit."""
    t_source, t_half = TORCH_DTYPES[source], TORCH_DTYPES[half]
    wide = torch.tensor([value] * 3, dtype=t_source)
    expected = [wide.to(t_half), torch.tensor([value] * 3, dtype=t_half),
                torch.zeros(3, dtype=t_half).copy_(wide)]
    g_wide = genesis.tensor([value] * 3, dtype=source, device=device)
    got = [g_wide.to(half), genesis.tensor([value] * 3, dtype=half, device=device),
           genesis.zeros(3, dtype=half, device=device).copy_(g_wide)]
    for g, t in zip(got, expected):
        assert g.dtype is half
        np.testing.assert_array_equal(g.float().cpu().numpy(), t.float().numpy())


@pytest.mark.parametrize("dtype", [genesis.int64, genesis.int32, genesis.int16, genesis.int8,
                                   genesis.uint8])
def test_nonfinite_float_to_integer_is_silent_as_torch(dtype):
    """nan, infinities and floats past the integer range cast (by .to and by copy_) to what
    torch's CPU cast gives, without numpy's 'invalid value encountered in cast' warning (a
    T5 bucket's log(0) cast to long is such a value, discarded by a where)."""
    values = [float("-inf"), float("nan"), float("inf"), 1e20, -3.7, 2.5]
    expected = torch.tensor(values).to(TORCH_DTYPES[dtype]).tolist()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cast = genesis.tensor(values).to(dtype)
        copied = genesis.zeros(len(values), dtype=dtype).copy_(genesis.tensor(values))
    assert cast.dtype == dtype and cast.tolist() == expected
    assert copied.tolist() == expected
