"""Creation functions against PyTorch: dtype inference, sharing, fills, ranges, random draws."""

import array
import collections
import functools
import math
import warnings

import numpy as np
import pytest
import torch

import genesis
from helpers import ALL_DTYPES, FLOAT_DTYPES, TORCH_DTYPES, assert_close, lay_out

DATA = [
    1, 2.5, True, -3, [], [[]], [1, 2, 3], [1.0, 2, 3], [True, False], [True, 2], [True, 2.5],
    [[1, 2], [3, 4]], [[1.5], [2]], (1, 2), [(1, 2), (3, 4)], [[[1]], [[2]]], [2 ** 40, -1],
    [float("nan"), float("inf")], np.float32(1.5), np.int16(3), np.bool_(True),
    collections.deque([1.5, 2]), range(3), [range(2), collections.deque([3, 4])],
    collections.deque(),
]
NUMPY_DTYPES = [np.float16, np.float32, np.float64, np.int8, np.int16, np.int32, np.int64,
                np.uint8, np.bool_]


@pytest.mark.parametrize("default", [genesis.float32, genesis.float64])
@pytest.mark.parametrize("data", DATA, ids=repr)
def test_tensor_infers_dtype_as_torch(data, default, device):
    genesis.set_default_dtype(default)
    torch.set_default_dtype(TORCH_DTYPES[default])
    try:
        assert_close(genesis.tensor(data, device=device), torch.tensor(data))
    finally:
        torch.set_default_dtype(torch.float32)


@pytest.mark.parametrize("np_dtype", NUMPY_DTYPES, ids=lambda d: np.dtype(d).name)
def test_tensor_from_numpy_keeps_dtype_and_copies(np_dtype, rng, device):
    arr = (rng.standard_normal((3, 4)) * 10).astype(np_dtype)
    g = genesis.tensor(arr, device=device)
    assert_close(g, torch.tensor(arr))
    arr[...] = 0
    assert g.cpu().numpy().any() or not torch.tensor(arr).any()
    assert not np.shares_memory(g.cpu().numpy(), arr)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_tensor_from_tensors(dtype, device):
    parts = [genesis.ones((), dtype=dtype, device=device),
             genesis.zeros((), dtype=dtype, device=device)]
    ref = [torch.ones((), dtype=TORCH_DTYPES[dtype]), torch.zeros((), dtype=TORCH_DTYPES[dtype])]
    assert_close(genesis.tensor(parts, device=device), torch.tensor(ref))
    src = genesis.ones(2, 3, dtype=dtype, device=device)
    with pytest.warns(UserWarning, match="To copy construct from a tensor"):
        copy = genesis.tensor(src, device=device)
    assert copy.dtype is dtype and copy.data_ptr() != src.data_ptr()


def _copy_construct_warnings(lib):
    """The warnings lib.tensor gives for a tensor, a list of 0-dim tensors and an array."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lib.tensor(lib.ones(2))
        lib.tensor([lib.ones(()), lib.zeros(())])
        lib.tensor(np.ones(2))
    return [(w.category, str(w.message), w.filename) for w in caught]


def test_tensor_of_a_tensor_warns_as_torch():
    """Copy-constructing from a tensor (as score-model code does with a time tensor) warns,
    attributed to the caller; a list of tensors does not."""
    assert _copy_construct_warnings(genesis) == _copy_construct_warnings(torch)


def _new_tensor_copies(lib, values, like):
    """new_tensor of a tensor (with its warnings) and of a list, from a float64 `like`."""
    base = lib.tensor(like)
    source = lib.tensor(values, dtype=lib.float16).t().requires_grad_()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        copies = [base.new_tensor(source), base.new_tensor(source, dtype=lib.float32),
                  base.new_tensor(values.tolist())]
    return copies, [(w.category, str(w.message), w.filename) for w in caught]


def test_new_tensor_of_a_tensor_warns_as_torch(rng):
    """new_tensor copies a tensor into the caller's dtype (as RealNVP's sampling does), warning
    under its own name; a list gives no warning."""
    values, like = rng.integers(-5, 5, (3, 5)) / 4, rng.standard_normal(2)
    ours, theirs = _new_tensor_copies(genesis, values, like), _new_tensor_copies(torch, values,
                                                                               like)
    assert ours[1] == theirs[1] and len(ours[1]) == 2
    for g, t in zip(ours[0], theirs[0]):
        assert_close(g, t)
        assert not g.requires_grad and g.is_contiguous()


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_tensor_explicit_dtype(dtype, device):
    data = [[0, 1.5, -2], [3, 0.25, 1]]
    if dtype in (genesis.uint8,):
        data = [[0, 1.5, 2], [3, 0.25, 1]]
    assert_close(genesis.tensor(data, dtype=dtype, device=device),
                 torch.tensor(data, dtype=TORCH_DTYPES[dtype]))


def test_tensor_requires_grad_and_errors(device):
    t = genesis.tensor([1.0, 2.0], requires_grad=True, device=device)
    assert t.requires_grad and t.is_leaf
    with pytest.raises(RuntimeError):
        genesis.tensor([1, 2], requires_grad=True, device=device)
    with pytest.raises(ValueError):
        genesis.tensor([[1, 2], [3]], device=device)
    with pytest.raises(TypeError):
        genesis.tensor("abc", device=device)
    with pytest.raises(TypeError):
        genesis.tensor([object()], device=device)


@pytest.mark.parametrize("data, dtype", [
    ([300], "int8"), ([[1, 300]], "uint8"), ([-129], "int8"), ([-129], "uint8"),
    ([-300], "uint8"), ([255.0], "int8"), ([255.0], "uint8"), (300, "int8"), ([True, 2], "int8"),
    ([1e40], "int8"), ([1e40], "float16"), ([float("nan")], "int8"), ([2 ** 63], "int64"),
    ([2 ** 63 - 1], "int64"), ([40000], "int16"), ([2.7, -2.7], "int8"), ([], "int8")])
def test_tensor_of_python_numbers_checks_overflow_as_torch(data, dtype, device):
    """Python numbers an integer dtype cannot hold raise PyTorch's error (a negative one wraps
    into uint8); a numpy array converts as it is, wrapping."""
    def build(lib, values):
        try:
            return lib.tensor(values, dtype=getattr(lib, dtype),
                              device=device if lib is genesis else "cpu").tolist()
        except (RuntimeError, ValueError) as e:
            return type(e), str(e)
    assert build(genesis, data) == build(torch, data)
    wide = np.array([300, -129])
    assert build(genesis, wide) == build(torch, wide)


@pytest.mark.parametrize("np_dtype", NUMPY_DTYPES, ids=lambda d: np.dtype(d).name)
def test_from_numpy_shares_memory_both_ways(np_dtype):
    arr = np.arange(12).reshape(3, 4).astype(np_dtype)
    t = genesis.from_numpy(arr)
    assert t.dtype is genesis.dtypes.from_numpy_dtype(arr.dtype)
    assert t.data_ptr() == arr.ctypes.data
    arr[1, 2] = 0
    assert t.numpy()[1, 2] == 0
    t.numpy()[2, 3] = 1
    assert arr[2, 3] == 1
    t.mul_(False if t.dtype is genesis.bool else 0)
    assert not arr.any()


def test_from_numpy_strided_and_rejects():
    arr = np.arange(24, dtype=np.float32).reshape(4, 6)[::2, 1::3]
    t = genesis.from_numpy(arr)
    assert t.shape == (2, 2) and t.stride() == (12, 3)
    assert_close(t, torch.from_numpy(arr))
    with pytest.raises(ValueError, match="negative"):
        genesis.from_numpy(np.arange(4.0)[::-1])
    with pytest.raises(TypeError):
        genesis.from_numpy(np.zeros(2, np.complex64))
    with pytest.raises(TypeError):
        genesis.from_numpy(np.zeros(2, np.uint32))
    with pytest.raises(TypeError):
        genesis.from_numpy([1, 2])


SIZES = [(), (0,), (3,), (2, 3), (2, 0, 4), (1, 1, 5)]


@pytest.mark.parametrize("size", SIZES, ids=str)
@pytest.mark.parametrize("dtype", [None] + ALL_DTYPES, ids=str)
@pytest.mark.parametrize("name", ["zeros", "ones", "empty"])
def test_fills(name, dtype, size, device):
    kwargs = {} if dtype is None else {"dtype": dtype}
    tkwargs = {} if dtype is None else {"dtype": TORCH_DTYPES[dtype]}
    g = getattr(genesis, name)(*(size or [()]), device=device, **kwargs)
    t = getattr(torch, name)(*(size or [()]), **tkwargs)
    assert tuple(g.shape) == tuple(t.shape) and TORCH_DTYPES[g.dtype] is t.dtype
    assert g.is_contiguous() and g.stride() == t.stride()
    if name != "empty":
        assert_close(g, t)
    g2 = getattr(genesis, name)(size, device=device, **kwargs)
    assert tuple(g2.shape) == tuple(t.shape)


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "stepped"])
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_fill_and_zero_in_place(dtype, layout, device):
    """fill_/zero_ write the tensor where it lies (strided views too, 0-d and empty ones),
    each value converted as torch converts it, the base seeing the write."""
    values = [0, 1, True] + ([2.5, -3.25, float("-inf")] if dtype.is_floating_point else
                             [2.5] if dtype is genesis.bool else [7, 2.9])
    for size in [(), (0, 3), (3, 5)]:
        g = lay_out(genesis.ones(size, dtype=dtype, device=device), layout)
        t = torch.ones(size, dtype=TORCH_DTYPES[dtype])
        for value in values:
            version = g._version
            assert g.fill_(value) is g
            t.fill_(value)
            assert_close(g, t)
            assert g._version == version + 1
        g.zero_()
        assert_close(g, torch.zeros(size, dtype=TORCH_DTYPES[dtype]))
    base = genesis.ones(4, 6, dtype=dtype, device=device)
    base[1:3, ::2].fill_(0)
    expected = torch.ones(4, 6, dtype=TORCH_DTYPES[dtype])
    expected[1:3, ::2] = 0
    assert_close(base, expected)


def test_fill_in_place_and_autograd(device):
    leaf = genesis.ones(3, requires_grad=True, device=device)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        leaf.fill_(2)
    with genesis.no_grad():
        leaf.fill_(2)
    assert leaf.tolist() == [2.0] * 3 and leaf.requires_grad and leaf.grad_fn is None
    y = leaf * 3
    y.zero_()
    y.sum().backward()
    assert leaf.grad.tolist() == [0.0] * 3
    with pytest.raises(RuntimeError, match="single memory location"):
        genesis.zeros(3, device=device).expand(2, 3).fill_(1)


@pytest.mark.parametrize("fill", [3, 2.5, True, -1, float("inf")], ids=repr)
@pytest.mark.parametrize("dtype", [None, genesis.float64, genesis.int32, genesis.bool,
                                   genesis.bfloat16], ids=str)
def test_full(fill, dtype, device):
    if dtype is not None and not dtype.is_floating_point and isinstance(fill, float):
        return
    tdtype = None if dtype is None else TORCH_DTYPES[dtype]
    for size in ((2, 3), [4]):
        assert_close(genesis.full(size, fill, dtype=dtype, device=device),
                     torch.full(size, fill, dtype=tdtype))


@pytest.mark.parametrize("dtype", [None, genesis.int8, genesis.float64, genesis.bool], ids=str)
def test_like_functions(dtype, rng, device):
    values = rng.standard_normal((3, 4)).astype(np.float16).T
    base_g = lay_out(genesis.tensor(values, device=device), "transposed")
    base_t = torch.from_numpy(values)
    tdtype = None if dtype is None else TORCH_DTYPES[dtype]
    for name in ("zeros_like", "ones_like", "empty_like"):
        g = getattr(genesis, name)(base_g, dtype=dtype)
        t = getattr(torch, name)(base_t, dtype=tdtype)
        assert tuple(g.shape) == tuple(t.shape) and TORCH_DTYPES[g.dtype] is t.dtype, name
        if name != "empty_like":
            assert_close(g, t)
    assert_close(genesis.full_like(base_g, 7, dtype=dtype),
                 torch.full_like(base_t, 7, dtype=tdtype))
    g = genesis.zeros_like(genesis.ones(2, requires_grad=True, device=device), requires_grad=True)
    assert g.requires_grad and g.is_leaf


@pytest.mark.parametrize("n,m", [(0, None), (1, None), (3, None), (3, 5), (4, 2), (0, 3)])
@pytest.mark.parametrize("dtype", [None, genesis.int64, genesis.bool, genesis.float64], ids=str)
def test_eye(n, m, dtype, device):
    tdtype = None if dtype is None else TORCH_DTYPES[dtype]
    want = torch.eye(n, dtype=tdtype) if m is None else torch.eye(n, m, dtype=tdtype)
    got = genesis.eye(n, dtype=dtype, device=device) if m is None \
        else genesis.eye(n, m, dtype=dtype, device=device)
    assert_close(got, want)


ARANGE = [(5,), (0,), (2, 7), (7, 2, -1), (0, 1, 0.1), (1, 2.5, 0.5), (-1.5, 1.5, 0.3),
          (0.0, 10), (10, 0, -3), (0, 1, 1 / 3), (1e-3, 1e-2, 1e-3), (2.5,), (0, 5, 2),
          (-3, 3), (0, 0.3, 0.1), (1, 1), (np.int64(6),), (np.int32(1), np.int64(9), np.int8(3)),
          (np.float32(2.5),), (0, np.int64(4), 0.5)]


@pytest.mark.parametrize("dtype", [None, genesis.float64, genesis.int32, genesis.bfloat16],
                         ids=str)
@pytest.mark.parametrize("args", ARANGE, ids=str)
def test_arange_counts_like_torch(args, dtype, device):
    tdtype = None if dtype is None else TORCH_DTYPES[dtype]
    assert_close(genesis.arange(*args, dtype=dtype, device=device),
                 torch.arange(*args, dtype=tdtype))


def test_arange_errors(device):
    with pytest.raises(RuntimeError):
        genesis.arange(0, 5, 0, device=device)
    with pytest.raises(RuntimeError):
        genesis.arange(5, 0, 1, device=device)
    assert genesis.arange(genesis.tensor(4, device=device)).tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize("args", [(0, 1, 5), (-2, 3.5, 7), (1, 1, 1), (0, 1, 0), (3, -3, 4),
                                  (0, 10, 1), (0, 1e6, 11)], ids=str)
@pytest.mark.parametrize("dtype", [None, genesis.float64, genesis.int64, genesis.float16], ids=str)
def test_linspace_logspace(args, dtype, device):
    tdtype = None if dtype is None else TORCH_DTYPES[dtype]
    if dtype is genesis.float16 and max(map(abs, args[:2])) > 65504:
        with pytest.raises(RuntimeError, match="overflow"):
            torch.linspace(*args, dtype=tdtype)
        with pytest.raises(RuntimeError, match="overflow"):
            genesis.linspace(*args, dtype=dtype, device=device)
        return
    assert_close(genesis.linspace(*args, dtype=dtype, device=device),
                 torch.linspace(*args, dtype=tdtype))
    start, end, steps = args
    if abs(end) < 20:
        for base in (10.0, 2.0):
            got = genesis.logspace(start, end, steps, base=base, dtype=dtype, device=device)
            if dtype is genesis.float16:
                # torch's half logspace is not correctly rounded (its exponent arithmetic mixes
                # half and float); the oracle is the float64 result rounded once
                want = torch.logspace(start, end, steps, base=base, dtype=torch.float64).half()
            else:
                want = torch.logspace(start, end, steps, base=base, dtype=tdtype)
            assert_close(got, want)
    with pytest.raises(RuntimeError):
        genesis.linspace(0, 1, -1, device=device)


def _count_arguments(lib):
    """What linspace, logspace and randperm make of counts of several Python types: values,
    or the error's type and text."""
    calls = [lambda: lib.linspace(0, 1, np.int64(3)), lambda: lib.linspace(-1, 2, lib.tensor(4)),
             lambda: lib.linspace(0, 1, 3.0), lambda: lib.linspace(0, 1, True),
             lambda: lib.linspace(lib.tensor(0.5), 1, lib.tensor(3.0), dtype=lib.float64),
             lambda: lib.logspace(0, 1, 2.5, dtype=lib.float64, device="cpu"),
             lambda: lib.logspace(0, 2, np.float32(3)),
             lambda: lib.linspace(0, 1, None), lambda: lib.linspace(0, 1, "3"),
             lambda: lib.randperm(np.int64(5)).sort().values,
             lambda: lib.randperm(lib.tensor(4)).sort().values, lambda: lib.randperm(2.5),
             lambda: lib.randperm(lib.tensor(2.0)), lambda: lib.randperm(-2)]
    out = []
    for call in calls:
        try:
            out.append(call().tolist())
        except (TypeError, RuntimeError) as e:
            out.append((type(e), str(e).replace("randperm: ", "")))
    return out


def test_counts_of_other_types_as_torch():
    """Integer counts of numpy and tensor types are taken; floats, bools, None and strings get
    PyTorch's TypeErrors (linspace's names the call's types and lists the signatures), and a
    negative permutation length its RuntimeError."""
    assert _count_arguments(genesis) == _count_arguments(torch)


_SIZE_CALLS = ["zeros(2, 3.0)", "zeros(2.0, 3)", "zeros([2, 3, 4.0])", "zeros(np.float64(2))",
               "zeros(True)", "zeros((True, 2))", "zeros(2, True)", "zeros(lib.tensor(2.0))",
               "zeros(lib.tensor(2))", "randn(2, 3.0)", "empty(2, 3.0)", "ones((2.0,))",
               "zeros(2, None)", "zeros('a')", "zeros([2, [3]])", "zeros(np.array([2, 3]))",
               "zeros((2, np.float32(3)))", "zeros((2, lib.tensor(3)))", "rand(2.0)",
               "full((2, 3.0), 1.0)", "zeros(2, 3, 4.5)", "zeros(2, np.int32(3))",
               "zeros((2, True))", "ones(2, 3).new_zeros((2, 3.0))", "randint(0, 5.5, (3,))",
               "randint(5.0, (3,))", "randint(True, (3,))", "randint(np.int64(5), (3,))",
               "nn.Linear(2.0, 3)", "nn.Linear(2, 3.5)", "nn.Embedding(10.0, 3)",
               "ones(2, 3).new_full((2.5,), 1.0)", "ones(2, 3).new_full([2, np.int64(2)], 7.0)",
               "empty_strided((2, 3.0), (3, 1))", "empty_strided([2, np.int64(3)], (3, 1))"]


def _size_outcomes(lib):
    out = []
    for call in _SIZE_CALLS:
        try:
            result = eval(call, {"lib": lib, "np": np, **vars(lib)})
            out.append(tuple(result.weight.shape if hasattr(result, "weight") else result.shape))
        except TypeError as e:
            out.append(str(e))
    return out


def test_sizes_of_other_types_as_torch():
    """Sizes take integers (numpy's, one-element integer tensors and bools past the first too);
    floats, strings, None and arrays get PyTorch's TypeErrors, naming the position (a float
    size was truncated: nn.Linear(d * 1.5, ...) built a layer torch refuses)."""
    assert _size_outcomes(genesis) == _size_outcomes(torch)


def test_negative_sizes_raise(device):
    for fn in (genesis.zeros, genesis.ones, genesis.empty, genesis.rand, genesis.randn):
        with pytest.raises(RuntimeError, match="negative"):
            fn(2, -1, device=device)


@pytest.mark.parametrize("dtype", [None] + FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("name", ["rand", "randn"])
def test_rand_shapes_and_dtypes(name, dtype, device):
    g = getattr(genesis, name)(2, 3, dtype=dtype, device=device)
    assert g.shape == (2, 3) and g.dtype is (dtype or genesis.float32) and g.device.type == device
    assert getattr(genesis, name)((4,), device=device).shape == (4,)
    assert getattr(genesis, name)((), device=device).shape == ()
    like = getattr(genesis, name + "_like")(genesis.zeros(5, 2, dtype=genesis.float64,
                                                          device=device))
    assert like.shape == (5, 2) and like.dtype is genesis.float64 and like.device.type == device
    assert getattr(genesis, name)(3, requires_grad=True, device=device).requires_grad


N = 100_000


def test_rand_statistics(device):
    x = genesis.rand(N, dtype=genesis.float64, device=device).cpu().numpy()
    assert x.min() >= 0 and x.max() < 1
    assert abs(x.mean() - 0.5) < 0.01 and abs(x.std() - math.sqrt(1 / 12)) < 0.01
    hist = np.histogram(x, bins=10, range=(0, 1))[0]
    assert hist.min() > 0.9 * N / 10 and hist.max() < 1.1 * N / 10
    assert abs(np.corrcoef(x[:-1], x[1:])[0, 1]) < 0.02


@pytest.mark.parametrize("dtype", [genesis.float32, genesis.bfloat16], ids=str)
def test_rand_half_types_stay_below_one(dtype, device):
    x = genesis.rand(N, dtype=dtype, device=device).float().cpu().numpy()
    assert x.min() >= 0 and x.max() < 1


def test_randn_statistics(device):
    x = genesis.randn(N, device=device).cpu().numpy().astype(np.float64)
    assert abs(x.mean()) < 0.02 and abs(x.std() - 1) < 0.02
    assert abs(np.mean(np.abs(x) < 1) - 0.6827) < 0.01


@pytest.mark.parametrize("args", [(10, (N,)), (-5, 5, (N,)), (3, (2, 3)), (0, 1, (4,))], ids=str)
@pytest.mark.parametrize("dtype", [None, genesis.int32, genesis.uint8, genesis.float32], ids=str)
def test_randint(args, dtype, device):
    if dtype is genesis.uint8 and args[0] < 0:
        return
    g = genesis.randint(*args, dtype=dtype, device=device)
    t = torch.randint(*args, dtype=None if dtype is None else TORCH_DTYPES[dtype])
    assert tuple(g.shape) == tuple(t.shape) and TORCH_DTYPES[g.dtype] is t.dtype
    low, high = (0, args[0]) if len(args) == 2 else args[:2]
    x = g.cpu().numpy().astype(np.int64)
    assert x.min() >= low and x.max() < high
    if x.size == N:
        assert set(np.unique(x)) == set(range(low, high))
        assert abs(x.mean() - (low + high - 1) / 2) < 0.05 * (high - low)
    with pytest.raises(RuntimeError):
        genesis.randint(5, 5, (2,), device=device)


@pytest.mark.parametrize("kwargs, low, high", [
    ({"high": 7, "size": (50,)}, 0, 7), ({"low": -2, "high": 3, "size": (50,)}, -2, 3)],
    ids=["high", "low_high"])
def test_randint_by_keyword(kwargs, low, high, device):
    g = genesis.randint(**kwargs, dtype=genesis.int64, device=device)
    assert tuple(g.shape) == tuple(torch.randint(**kwargs).shape) and g.dtype is genesis.int64
    x = g.cpu().numpy()
    assert x.min() >= low and x.max() < high
    g = genesis.randint(7, size=(3,), device=device)
    assert g.shape == (3,) and g.max().item() < 7
    with pytest.raises(TypeError, match="randint"):
        genesis.randint(size=(3,), device=device)
    with pytest.raises(TypeError, match="randint"):
        genesis.randint(5, device=device)


@pytest.mark.parametrize("n", [0, 1, 7, 1000])
def test_randperm(n, device):
    g = genesis.randperm(n, device=device)
    assert g.dtype is genesis.int64 and g.shape == (n,)
    assert sorted(g.tolist()) == list(range(n))
    assert genesis.randperm(n, dtype=genesis.float32, device=device).dtype is genesis.float32


def test_normal_forms(device):
    x = genesis.normal(3.0, 2.0, size=(N,), device=device).cpu().numpy().astype(np.float64)
    assert abs(x.mean() - 3) < 0.03 and abs(x.std() - 2) < 0.03
    mean = genesis.tensor([[-10.0], [10.0]], device=device)
    std = genesis.tensor([0.5, 1.0, 2.0], dtype=genesis.float32, device=device)
    y = genesis.normal(mean, std)
    assert y.shape == (2, 3) and y.dtype is genesis.float32
    big = genesis.normal(genesis.full((N,), 5.0, device=device), 0.5).cpu().numpy()
    assert abs(big.mean() - 5) < 0.01 and abs(big.std() - 0.5) < 0.01
    with pytest.raises(RuntimeError):
        genesis.normal(0.0, -1.0, size=(2,), device=device)


@pytest.mark.parametrize("dtype", [genesis.float32, genesis.float64, genesis.float16], ids=str)
def test_bernoulli(dtype, device):
    probs = genesis.tensor(np.linspace(0, 1, 5), dtype=dtype, device=device)
    draws = genesis.bernoulli(probs.unsqueeze(0).expand(N // 5, 5) if hasattr(probs, "expand")
                              else genesis.tensor(np.tile(np.linspace(0, 1, 5), (N // 5, 1)),
                                                  dtype=dtype, device=device))
    assert draws.dtype is dtype and draws.shape == (N // 5, 5)
    freq = draws.cpu().numpy().astype(np.float64).mean(axis=0)
    np.testing.assert_allclose(freq, np.linspace(0, 1, 5), atol=0.015)
    assert freq[0] == 0 and freq[-1] == 1
    p = genesis.bernoulli(genesis.zeros(N, dtype=dtype, device=device), 0.3)
    p = p.cpu().numpy().astype(np.float64).mean()
    assert abs(p - 0.3) < 0.01
    with pytest.raises(RuntimeError):
        genesis.bernoulli(genesis.tensor([1.5], device=device))


def test_multinomial(device):
    weights = genesis.tensor([[1.0, 2.0, 0.0, 7.0], [0.0, 0.0, 5.0, 5.0]], device=device)
    draws = genesis.multinomial(weights, N, replacement=True)
    assert draws.dtype is genesis.int64 and draws.shape == (2, N)
    counts = np.stack([np.bincount(row, minlength=4) for row in draws.cpu().numpy()]) / N
    np.testing.assert_allclose(counts, [[0.1, 0.2, 0, 0.7], [0, 0, 0.5, 0.5]], atol=0.01)
    no_repl = genesis.multinomial(genesis.tensor([1.0, 1.0, 1.0, 0.0], device=device), 3)
    assert sorted(no_repl.tolist()) == [0, 1, 2]
    with pytest.raises(RuntimeError):
        genesis.multinomial(genesis.tensor([1.0, 0.0], device=device), 2)
    with pytest.raises(RuntimeError):
        genesis.multinomial(genesis.tensor([1.0, -1.0], device=device), 1)


RANDOM_CALLS = {
    "rand": lambda device, **kw: genesis.rand(50, device=device, **kw),
    "randn": lambda device, **kw: genesis.randn(5, 10, device=device, **kw),
    "randint": lambda device, **kw: genesis.randint(0, 1000, (50,), device=device, **kw),
    "randperm": lambda device, **kw: genesis.randperm(50, device=device, **kw),
    "normal": lambda device, **kw: genesis.normal(1.0, 2.0, size=(50,), device=device, **kw),
    "bernoulli": lambda device, **kw: genesis.bernoulli(genesis.full((50,), 0.5, device=device),
                                                        **kw),
    "multinomial": lambda device, **kw: genesis.multinomial(genesis.ones(50, device=device), 20,
                                                            **kw),
    "rand_like": lambda device, **kw: genesis.rand_like(genesis.ones(50, device=device), **kw),
    "randn_like": lambda device, **kw: genesis.randn_like(genesis.ones(5, 10, device=device),
                                                          **kw),
    "randint_like": lambda device, **kw: genesis.randint_like(genesis.ones(50, device=device),
                                                              1000, **kw),
}


@pytest.mark.parametrize("name", list(RANDOM_CALLS))
def test_manual_seed_reproduces(name, device):
    draw = functools.partial(RANDOM_CALLS[name], device)
    genesis.manual_seed(1234)
    first = draw().tolist()
    second = draw().tolist()
    genesis.manual_seed(1234)
    assert draw().tolist() == first and draw().tolist() == second
    assert first != second
    assert genesis.initial_seed() == 1234


@pytest.mark.parametrize("name", list(RANDOM_CALLS))
def test_generator_argument(name, device):
    draw = functools.partial(RANDOM_CALLS[name], device)
    gen = genesis.Generator(device).manual_seed(7)
    genesis.manual_seed(99)
    a = draw(generator=gen).tolist()
    default_next = draw().tolist()
    genesis.manual_seed(99)
    assert draw().tolist() == default_next
    assert draw(generator=genesis.Generator(device).manual_seed(7)).tolist() == a
    assert draw(generator=genesis.Generator(device).manual_seed(8)).tolist() != a


def test_rng_state_roundtrip():
    state = genesis.get_rng_state()
    a = genesis.rand(10).tolist()
    genesis.set_rng_state(state)
    assert genesis.rand(10).tolist() == a
    gen = genesis.Generator()
    gen.manual_seed(5)
    saved = gen.get_state()
    b = genesis.randn(4, generator=gen).tolist()
    gen.set_state(saved)
    assert genesis.randn(4, generator=gen).tolist() == b
    assert gen.initial_seed() == 5
    assert genesis.seed() != genesis.seed()


@pytest.mark.parametrize("op", ["empty", "zeros", "ones", "rand", "randn"])
@pytest.mark.parametrize("size", [(2, 3), [4], (), torch.Size([1, 2])], ids=repr)
def test_size_by_keyword_as_torch(op, size, device):
    """`torch.empty(size=(n, m))`, as graph-attention scripts write it; a size given twice, or
    not as a sequence, is the TypeError PyTorch raises."""
    t = getattr(torch, op)(size=size, dtype=torch.float64)
    g = getattr(genesis, op)(size=list(size) if isinstance(size, torch.Size) else size,
                             dtype=genesis.float64, device=device)
    assert tuple(g.shape) == tuple(t.shape) and g.dtype is genesis.float64
    with pytest.raises(TypeError, match=rf"^{op}\(\) got multiple values for argument 'size'"):
        getattr(genesis, op)(2, size=(3,))
    with pytest.raises(TypeError) as expected:
        getattr(torch, op)(size=2)
    with pytest.raises(TypeError) as got:
        getattr(genesis, op)(size=2)
    assert str(got.value) == str(expected.value)


OVERFLOW_CASES = [("int8", 300), ("int8", -129), ("int8", 300.0), ("int8", 2.5), ("uint8", -1),
                  ("uint8", -256), ("uint8", 256), ("int16", 40000), ("int32", 2 ** 31),
                  ("int64", 2 ** 63), ("float32", 1e39), ("float16", 70000.0),
                  ("bfloat16", 1e39), ("float16", float("inf")), ("bool", 2)]


@pytest.mark.parametrize("name, value", OVERFLOW_CASES, ids=str)
@pytest.mark.parametrize("op", ["full", "fill_", "masked_fill_"])
def test_fill_values_overflow_as_torch(name, value, op):
    """A number beyond the dtype's range raises PyTorch's error (full() rounds half types to
    inf instead); one in range, or a negative one into uint8, is stored as PyTorch stores it."""
    results = []
    for lib in (torch, genesis):
        dtype = getattr(lib, name)
        calls = {"full": lambda: lib.full((2,), value, dtype=dtype),
                 "fill_": lambda: lib.zeros(2, dtype=dtype).fill_(value),
                 "masked_fill_": lambda: lib.zeros(2, dtype=dtype).masked_fill_(
                     lib.tensor([True, False]), value)}
        try:
            results.append(calls[op]().tolist())
        except RuntimeError as error:
            results.append(str(error))
    assert results[1] == results[0]


@pytest.mark.parametrize("kwargs", [
    dict(dtype="uint8"), dict(dtype="int16", count=2, offset=2), dict(dtype="int32", offset=8),
    dict(dtype="uint8", count=20), dict(dtype="uint8", offset=11),
    dict(dtype="int16", count=-1, offset=1), dict(dtype="uint8", count=0),
    dict(dtype="float32", count=2, requires_grad=True)])
@pytest.mark.parametrize("make", [lambda: bytearray(range(10)), lambda: bytes(range(10)),
                                  lambda: array.array("b", range(10)), lambda: bytearray(0),
                                  lambda: [1, 2]],
                         ids=["bytearray", "bytes", "array", "empty", "list"])
def test_frombuffer_as_torch(kwargs, make):
    """Values, dtype and requires_grad, or PyTorch's ValueError, for each buffer and range."""
    def build(lib):
        args = dict(kwargs, dtype=getattr(lib, kwargs["dtype"]))
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # a read-only buffer's warning
                t = lib.frombuffer(make(), **args)
            return t.tolist(), str(t.dtype).split(".")[1], t.requires_grad
        except ValueError as e:
            return str(e)
    assert build(genesis) == build(torch)


def test_frombuffer_shares_a_writable_buffer_and_copies_a_read_only_one():
    data = bytearray(range(8))
    t = genesis.frombuffer(data, dtype=genesis.int16, offset=2)
    t[0] = -1
    assert data[2:4] == b"\xff\xff"
    frozen = bytes(range(8))
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        u = genesis.frombuffer(frozen, dtype=genesis.uint8)
    u[0] = 7
    assert frozen[0] == 0 and u[0].item() == 7


def test_resize_as_torch(device):
    """Shrinking keeps the storage, growing replaces it with one that starts with the old
    values; strides dense (channels-last on request), the offset kept, the version bumped."""
    results = []
    for lib in (torch, genesis):
        dev = device if lib is genesis else "cpu"
        x = lib.arange(6.0, device=dev)
        version = x._version
        steps = [x.resize_(2, 2) is x, x.tolist(), x.stride(), x._version > version]
        x.resize_(3, 4)
        steps += [tuple(x.shape), x.flatten()[:6].tolist()]
        view = lib.arange(8.0, device=dev)[2:]
        view.resize_(2)
        steps += [view.tolist(), view.storage_offset()]
        cl = lib.zeros(2, 3, 4, 5, device=dev).resize_(2, 3, 4, 5,
                                                        memory_format=lib.channels_last)
        steps += [cl.stride(), lib.zeros(1, device=dev).resize_as_(cl).stride()]
        steps += [tuple(lib.resize_as_(lib.zeros(2, device=dev), cl).shape)]
        with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
            lib.zeros(2, requires_grad=True, device=dev).resize_(3)
        results.append(steps)
    assert results[1] == results[0]


@pytest.mark.parametrize("name", ["new_zeros", "new_ones", "new_empty"])
def test_new_factories_take_sizes_as_torch(name, device):
    """Sizes as arguments, one sequence or the `size` keyword; torch's TypeErrors otherwise."""
    results = []
    for lib in (torch, genesis):
        x = lib.ones(2, dtype=lib.float64, device=device if lib is genesis else "cpu")
        make = getattr(x, name)
        made = [make(2, 3), make((2, 3)), make(size=[1, 4]), make(()),
                make(size=(), dtype=lib.int32)]
        steps = [(tuple(t.shape), str(t.dtype).split(".")[-1]) for t in made]
        for call in (lambda: make(2, size=(3,)), lambda: make()):
            with pytest.raises(TypeError) as error:
                call()
            steps.append(str(error.value))
        results.append(steps)
    assert results[1] == results[0]
