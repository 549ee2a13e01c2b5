"""genesis.testing against torch.testing: assert_close's pass/fail decision and message on the
same inputs, and make_tensor's ranges, layouts and errors."""

import math
import warnings

import numpy as np
import pytest
import torch

import genesis
from genesis.testing import assert_close, make_tensor
from helpers import FLOAT_DTYPES, INT_DTYPES, TORCH_DTYPES

# Default (rtol, atol) of each floating dtype, as torch.testing documents them.
DEFAULT_TOLERANCES = {genesis.float16: (1e-3, 1e-5), genesis.bfloat16: (1.6e-2, 1e-5),
                      genesis.float32: (1.3e-6, 1e-5), genesis.float64: (1e-7, 1e-7)}


def _outcome(fn):
    """None when `fn` passes, else its exception type and message in Genesis's spelling."""
    try:
        fn()
        return None
    except Exception as error:  # compared with PyTorch's
        return type(error), str(error).replace("torch.", "genesis.")


def _pair(array, dtype):
    """The same values as a genesis tensor and a torch tensor of `dtype` (half types rounded
    once from float32 in both)."""
    array = np.asarray(array)
    if dtype.is_floating_point:
        array = array.astype(np.float32 if dtype.itemsize < 4 else dtype.numpy_dtype)
        return (genesis.tensor(array).to(dtype), torch.tensor(array).to(TORCH_DTYPES[dtype]))
    array = array.astype(dtype.numpy_dtype)
    return genesis.tensor(array), torch.tensor(array)


def _check(actual, expected, dtype=genesis.float32, expected_dtype=None, **kwargs):
    """assert_close on tensors of these values: the same outcome and message as PyTorch's."""
    ga, ta = _pair(actual, dtype)
    ge, te = _pair(expected, expected_dtype or dtype)
    return _check_objects(ga, ge, ta, te, **kwargs)


def _check_objects(ga, ge, ta, te, **kwargs):
    result = _outcome(lambda: assert_close(ga, ge, **kwargs))
    assert result == _outcome(lambda: torch.testing.assert_close(ta, te, **kwargs))
    return result


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("scale", [0.0, 0.5, 0.9, 1.1, 2.0, 30.0])
def test_default_tolerances(rng, dtype, scale):
    """Perturbations around each dtype's default tolerance: the same decisions and messages."""
    rtol, atol = DEFAULT_TOLERANCES[dtype]
    expected = rng.uniform(-4, 4, size=(5, 7))
    ga, ta = _pair(expected, dtype)
    host = ga.float().numpy().astype(np.float64)
    signs = rng.choice([-1.0, 1.0], size=host.shape)
    mask = rng.random(host.shape) < 0.4
    actual = host + mask * signs * scale * (atol + rtol * np.abs(host))
    _check(actual, host, dtype)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_explicit_tolerances(rng, dtype):
    expected = rng.uniform(-4, 4, size=(3, 4))
    actual = expected + rng.uniform(-0.1, 0.1, size=expected.shape)
    for rtol, atol in [(0.0, 0.0), (0.0, 0.05), (0.02, 0.0), (0.0, 1.0), (1e-2, 1e-2)]:
        _check(actual, expected, dtype, rtol=rtol, atol=atol)


@pytest.mark.parametrize("dtype", INT_DTYPES + [genesis.bool], ids=str)
def test_integers_and_bools_compare_exactly(rng, dtype):
    high = 2 if dtype is genesis.bool else 50
    expected = rng.integers(0, high, size=(4, 6))
    actual = expected.copy()
    assert _check(actual, expected, dtype) is None
    actual[rng.random(actual.shape) < 0.3] = 1 if dtype is genesis.bool else 7
    actual[0, 0] = 1 - expected[0, 0] if dtype is genesis.bool else expected[0, 0] + 1
    assert _check(actual, expected, dtype) is not None
    _check(actual, expected, dtype, rtol=0.1, atol=2)


@pytest.mark.parametrize("equal_nan", [False, True])
@pytest.mark.parametrize("dtype", [genesis.float32, genesis.float64, genesis.float16], ids=str)
def test_nan_and_inf(rng, dtype, equal_nan):
    expected = rng.uniform(-1, 1, size=6)
    expected[[1, 4]] = np.nan
    expected[2], expected[3] = np.inf, -np.inf
    assert (_check(expected, expected, dtype, equal_nan=equal_nan) is None) == equal_nan
    actual = expected.copy()
    actual[3] = np.inf  # -inf against inf: never close
    _check(actual, expected, dtype, equal_nan=equal_nan)
    actual = expected.copy()
    actual[1] = 0.5  # a number against NaN
    _check(actual, expected, dtype, equal_nan=equal_nan)
    _check(np.float64(np.nan), np.float64(np.nan), dtype, equal_nan=equal_nan)
    _check(np.float64(np.nan), np.float64(1.0), dtype, equal_nan=equal_nan)


def test_zero_expected_and_zero_dim(rng):
    _check([0.0, 1.0, 0.0], [0.0, 1.0, 1e-3])
    _check([1e-3, 1.0], [0.0, 1.0])
    for a, e in [(1.0, 1.1), (0.0, 0.0), (1.0, 0.0), (2.0, 2.0 + 1e-6)]:
        _check(np.float64(a), np.float64(e), genesis.float32)
        _check(np.float64(a), np.float64(e), genesis.float64)
    _check(np.int64(3), np.int64(5), genesis.int64)
    _check(np.bool_(True), np.bool_(False), genesis.bool)
    _check(np.zeros((0, 3)), np.zeros((0, 3)))


def test_greatest_difference_indices(rng):
    """The message's indices unravel the flat position of the greatest differences."""
    expected = rng.uniform(1, 2, size=(2, 3, 4))
    actual = expected.copy()
    actual[1, 2, 3] += 0.5
    actual[0, 1, 2] = 1e-3 * expected[0, 1, 2] + 0.01
    actual[0, 0, 1] -= 0.3
    message = _check(actual, expected)[1]
    assert "Mismatched elements: 3 / 24 (12.5%)" in message


def test_shape_dtype_and_stride_mismatch(rng):
    a = rng.standard_normal((2, 3))
    _check(a, a[:, :2])
    _check(a, a.reshape(3, 2))
    _check(a, a, genesis.float32, genesis.float64)
    _check(a, a, genesis.float32, genesis.float64, check_dtype=False)
    _check(a + 1e-4, a, genesis.float32, genesis.float64, check_dtype=False)
    _check(a.round(), a.round(), genesis.int64, genesis.float32, check_dtype=False)
    _check(a, a, genesis.float16, genesis.bfloat16, check_dtype=False)
    ga, ta = _pair(a, genesis.float32)
    gt, tt = ga.t().contiguous().t(), ta.t().contiguous().t()
    _check_objects(ga, gt, ta, tt)
    _check_objects(ga, gt, ta, tt, check_stride=True)
    _check_objects(ga, ga.detach().requires_grad_(), ta, ta.detach().requires_grad_())


def test_python_and_numpy_scalars():
    cases = [(1, 1), (1, 2), (1.0, 1.0 + 1e-8), (1.0, 1.001), (1.0, 1), (1, 1.0), (True, True),
             (True, False), (np.bool_(True), True), (None, None), (None, 1), (1, None),
             (np.float32(1.5), 1.5), (np.int64(3), 3), (2 + 1j, 2 + 1j), (2 + 1j, 2 - 1j),
             (float("nan"), float("nan")), (float("inf"), float("inf")),
             (float("inf"), float("-inf")), (0.0, 1e-8), ("a", "a"), ("a", "b")]
    for actual, expected in cases:
        for kwargs in [{}, {"check_dtype": False}, {"equal_nan": True},
                       {"rtol": 0.01, "atol": 0.0}]:
            assert (_outcome(lambda: assert_close(actual, expected, **kwargs))
                    == _outcome(lambda: torch.testing.assert_close(actual, expected, **kwargs)))


def test_only_one_tolerance_is_an_error():
    for kwargs in [{"rtol": 1e-3}, {"atol": 1e-3}]:
        assert (_outcome(lambda: assert_close(1.0, 1.0, **kwargs))
                == _outcome(lambda: torch.testing.assert_close(1.0, 1.0, **kwargs)))
        _check([1.0], [1.0], **kwargs)


def _nested(lib, a, b, c, dtype):
    """The same nested sequences and mappings, built with `lib`'s tensors."""
    t = lambda x: lib.tensor(x, dtype=dtype)  # noqa: E731
    return {"weights": [t(a), (t(b), 2.0)], "step": 3, "bias": t(c), "name": None}


@pytest.mark.parametrize("change", ["none", "value", "leaf_number", "length", "keys",
                                    "tensor_vs_number", "leaf_dtype"])
def test_nested_containers(rng, change):
    a, b, c = (rng.standard_normal(s) for s in [(3,), (2, 2), ()])
    expected = {lib: _nested(lib, a, b, c, lib.float64) for lib in (genesis, torch)}
    actual = {lib: _nested(lib, a, b, c, lib.float64) for lib in (genesis, torch)}
    for lib in (genesis, torch):
        if change == "value":
            actual[lib]["weights"][1] = (lib.tensor(b + 1.0, dtype=lib.float64), 2.0)
        elif change == "leaf_number":
            actual[lib]["step"] = 4
        elif change == "length":
            actual[lib]["weights"].append(1)
        elif change == "keys":
            actual[lib]["extra"] = 1
            del actual[lib]["step"]
        elif change == "tensor_vs_number":
            actual[lib]["step"] = lib.tensor(3)
        elif change == "leaf_dtype":
            actual[lib]["bias"] = actual[lib]["bias"].float()
    g = _outcome(lambda: assert_close(actual[genesis], expected[genesis]))
    t = _outcome(lambda: torch.testing.assert_close(actual[torch], expected[torch]))
    assert g == t


def test_sequences_of_tensors_and_numbers(rng):
    a = rng.standard_normal(4)
    for actual, expected in [([1, 2.0], [1, 2.0]), ([1, 2], [1, 3]), ((1, 2), [1, 2]),
                             ([1, [2, 3]], [1, [2, 4]]), ([1], [1, 2])]:
        assert (_outcome(lambda: assert_close(actual, expected))
                == _outcome(lambda: torch.testing.assert_close(actual, expected)))
    _check_objects([genesis.tensor(a)], [genesis.tensor(a + 1)], [torch.tensor(a)],
                   [torch.tensor(a + 1)])


def test_numpy_arrays(rng):
    a = rng.standard_normal((3, 2))
    for actual, expected in [(a, a), (a, a + 1e-3), (a.astype(np.float32), a),
                             (a.astype(np.float32), a.astype(np.float32) + 1e-6),
                             (np.arange(4), np.arange(4) + (np.arange(4) == 2))]:
        assert (_outcome(lambda: assert_close(actual, expected))
                == _outcome(lambda: torch.testing.assert_close(actual, expected)))


def test_tensor_against_array_is_a_type_error(rng):
    a = rng.standard_normal(3)
    error = _outcome(lambda: assert_close(genesis.tensor(a), a))
    assert error == (TypeError, "No comparison pair was able to handle inputs of type "
                                "<class 'genesis.Tensor'> and <class 'numpy.ndarray'>.")
    assert _outcome(lambda: torch.testing.assert_close(torch.tensor(a), a))[0] is TypeError


def test_allow_subclasses(rng):
    a = rng.standard_normal(3)
    p, t = genesis.nn.Parameter(genesis.tensor(a)), genesis.tensor(a)
    assert _outcome(lambda: assert_close(p, t)) is None
    error = _outcome(lambda: assert_close(p, t, allow_subclasses=False))
    tp, tt = torch.nn.Parameter(torch.tensor(a)), torch.tensor(a)
    assert error[0] is _outcome(lambda: torch.testing.assert_close(
        tp, tt, allow_subclasses=False))[0] is TypeError


@pytest.mark.parametrize("msg", ["Argh, the tensors are not close!",
                                 lambda m: f"Header\n\n{m}\n\nFooter"])
def test_msg(rng, msg):
    a = rng.standard_normal(5)
    _check(a, a + 1, msg=msg)
    _check(a, a[:3], msg=msg)
    assert (_outcome(lambda: assert_close([1, (2.0, 3.0)], [1, (2.0, 4.0)], msg=msg))
            == _outcome(lambda: torch.testing.assert_close([1, (2.0, 3.0)], [1, (2.0, 4.0)],
                                                           msg=msg)))


def test_device_mismatch_message():
    """Devices are checked before values; the CPU is the only device here, so the message is
    checked through a tensor whose device reads as another."""
    from genesis.testing import _TensorLikePair
    a, b = genesis.ones(2), genesis.ones(2)
    pair = _TensorLikePair(a, b)
    pair.expected = type("OnCuda", (), {"shape": b.shape, "device": genesis.device("cuda", 0),
                                        "dtype": b.dtype, "stride": b.stride})()
    error = _outcome(pair.compare)
    assert error[1] == "The values for attribute 'device' do not match: cpu != cuda:0."
    tb = torch.ones(2, device="meta")
    assert (_outcome(lambda: torch.testing.assert_close(torch.ones(2), tb))[1]
            == "The values for attribute 'device' do not match: cpu != meta.")


# make_tensor

RANGES = {genesis.bool: (0, 2), genesis.uint8: (0, 10)}


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + INT_DTYPES + [genesis.bool], ids=str)
def test_make_tensor_default_ranges(dtype):
    """Values in PyTorch's default ranges: [0, 2) bool, [0, 10) uint8, [-9, 10) other integers,
    [-9, 9) floating types."""
    t = make_tensor(40, 50, dtype=dtype, device="cpu")
    ref = torch.testing.make_tensor(40, 50, dtype=TORCH_DTYPES[dtype], device="cpu")
    assert t.dtype is dtype and tuple(t.shape) == tuple(ref.shape) and t.is_contiguous()
    low, high = RANGES.get(dtype, (-9, 9 if dtype.is_floating_point else 10))
    values = t.float().numpy() if dtype is not genesis.bool else t.numpy().astype(np.int64)
    assert values.min() >= low and values.max() < high
    assert values.max() - values.min() >= (1 if dtype is genesis.bool else 5)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + INT_DTYPES, ids=str)
def test_make_tensor_low_high(dtype):
    t = make_tensor((30, 30), dtype=dtype, device="cpu", low=2, high=5)
    values = t.float().numpy()
    assert values.min() >= 2 and values.max() < 5 + (dtype is genesis.bfloat16) * 0.02


@pytest.mark.parametrize("dtype", [genesis.float16, genesis.bfloat16, genesis.float32,
                                   genesis.uint8, genesis.int8, genesis.int64], ids=str)
def test_make_tensor_clamps_to_the_dtype(dtype):
    """Bounds beyond the dtype's range are clamped to it; draws stay finite."""
    t = make_tensor(64, dtype=dtype, device="cpu", low=-1e40, high=1e40)
    assert np.isfinite(t.double().numpy()).all()


def test_make_tensor_shapes_and_layouts(rng):
    assert tuple(make_tensor([2, 3], dtype=genesis.float32, device="cpu").shape) == (2, 3)
    assert tuple(make_tensor(genesis.Size([4]), dtype=genesis.float32, device="cpu").shape) == (4,)
    assert tuple(make_tensor(dtype=genesis.float32, device="cpu").shape) == ()
    t = make_tensor(3, 4, dtype=genesis.float32, device="cpu", noncontiguous=True)
    assert tuple(t.shape) == (3, 4) and not t.is_contiguous()
    assert make_tensor(1, dtype=genesis.float32, device="cpu", noncontiguous=True).is_contiguous()
    t = make_tensor(2, 3, 4, 5, dtype=genesis.float32, device="cpu",
                    memory_format=genesis.channels_last)
    assert t.is_contiguous(memory_format=genesis.channels_last)


@pytest.mark.parametrize("dtype", [genesis.bool, genesis.int8, genesis.uint8, genesis.float16,
                                   genesis.float32], ids=str)
def test_make_tensor_exclude_zero(dtype):
    t = make_tensor(2000, dtype=dtype, device="cpu", low=0, high=2, exclude_zero=True)
    values = t.float().numpy()
    assert (values != 0).all()


def test_make_tensor_exclude_zero_replacement():
    """Zeros become 1 for integers and the dtype's smallest normal number for floating types."""
    t = make_tensor(500, dtype=genesis.int8, device="cpu", low=0, high=1, exclude_zero=True)
    assert (t.numpy() == 1).all()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        for dtype in (genesis.float16, genesis.float32):
            t = make_tensor(5, dtype=dtype, device="cpu", low=0, high=0, exclude_zero=True)
            ref = torch.testing.make_tensor(5, dtype=TORCH_DTYPES[dtype], device="cpu", low=0,
                                            high=0, exclude_zero=True)
            np.testing.assert_array_equal(t.float().numpy(), ref.float().numpy())


def test_make_tensor_requires_grad():
    t = make_tensor(3, dtype=genesis.float64, device="cpu", requires_grad=True)
    assert t.requires_grad and t.is_leaf
    assert not make_tensor(3, dtype=genesis.float64, device="cpu").requires_grad


@pytest.mark.parametrize("kwargs", [
    {"dtype": "int64", "requires_grad": True},
    {"dtype": "bool", "requires_grad": True},
    {"dtype": "float32", "low": 3, "high": 2},
    {"dtype": "int32", "low": 5, "high": 5},
    {"dtype": "float32", "low": float("nan")},
    {"dtype": "uint8", "low": -20, "high": -5},
    {"dtype": "int8", "low": 200, "high": 300},
    {"dtype": "float32", "noncontiguous": True, "memory_format": "channels_last"},
])
def test_make_tensor_errors(kwargs):
    g_kwargs, t_kwargs = dict(kwargs), dict(kwargs)
    g_kwargs["dtype"] = getattr(genesis, kwargs["dtype"])
    t_kwargs["dtype"] = getattr(torch, kwargs["dtype"])
    if "memory_format" in kwargs:
        g_kwargs["memory_format"] = genesis.channels_last
        t_kwargs["memory_format"] = torch.channels_last
    g = _outcome(lambda: make_tensor(2, 3, 4, 5, device="cpu", **g_kwargs))
    t = _outcome(lambda: torch.testing.make_tensor(2, 3, 4, 5, device="cpu", **t_kwargs))
    assert t is not None and g == t


def test_make_tensor_low_equals_high_warns():
    with pytest.warns(FutureWarning, match="Passing `low==high`"):
        t = make_tensor(4, dtype=genesis.float32, device="cpu", low=1.5, high=1.5)
    assert (t.numpy() == 1.5).all()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert (make_tensor(4, dtype=genesis.int32, device="cpu", low=2, high=3).numpy()
                == 2).all()


def test_import_genesis_makes_testing_available():
    assert genesis.testing.assert_close is assert_close
    assert math.isfinite(make_tensor(1, dtype=genesis.float32, device="cpu").item())


def test_on_each_device(rng, device):
    """make_tensor on `device`; assert_close there, and across devices: the device check first,
    values compared on the CPU with check_device=False."""
    a = make_tensor(3, 4, dtype=genesis.float32, device=device, noncontiguous=True)
    assert a.device.type == device and not a.is_contiguous()
    assert_close(a, a.clone())
    host = a.cpu().numpy()
    moved = host.copy()
    moved[1, 2] += 1.0
    _check_objects(a, genesis.tensor(moved, device=device), torch.tensor(host),
                   torch.tensor(moved))
    if device != "cpu":
        assert _outcome(lambda: assert_close(a, a.cpu())) == (
            AssertionError, f"The values for attribute 'device' do not match: {a.device} != cpu.")
        assert_close(a, a.cpu(), check_device=False)
        assert (_outcome(lambda: assert_close(a, genesis.tensor(moved), check_device=False))
                == _outcome(lambda: torch.testing.assert_close(torch.tensor(host),
                                                               torch.tensor(moved))))
