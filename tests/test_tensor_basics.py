"""Tensor basics against PyTorch: geometry, host values, conversions, autograd flags, detach and
clone, `repr` character for character, and zero-copy DLPack exchange with numpy and torch."""

import numpy as np
import pytest
import torch

import genesis
from helpers import ALL_DTYPES, TORCH_DTYPES, assert_close, raised, to_torch


def _views(rng):
    """(genesis, torch) pairs over one storage: contiguous, transposed, stepped, offset, 0-d."""
    base = rng.standard_normal((4, 6))
    g, t = genesis.tensor(base), torch.tensor(base, dtype=torch.float32)
    return [(g, t), (g.t(), t.t()), (g[::2, 1::3], t[::2, 1::3]), (g[1:, 2:], t[1:, 2:]),
            (g[2, 3], t[2, 3]), (g[:, 1], t[:, 1]), (g[0:0], t[0:0]),
            (g.unsqueeze(1).expand(4, 3, 6), t.unsqueeze(1).expand(4, 3, 6))]


def test_geometry_matches_torch(rng):
    for g, t in _views(rng):
        assert g.shape == t.shape and g.size() == t.size() and isinstance(g.shape, tuple)
        assert g.stride() == t.stride() and g.storage_offset() == t.storage_offset()
        assert g.dim() == t.dim() == g.ndim and g.numel() == t.numel()
        assert g.is_contiguous() == t.is_contiguous()
        assert all(g.size(d) == t.size(d) and g.stride(d) == t.stride(d)
                   for d in range(-g.ndim, g.ndim))
    assert repr(genesis.zeros(2, 3).shape) == "genesis.Size([2, 3])"
    assert genesis.zeros(2, 3).shape.numel() == 6
    with pytest.raises(IndexError):
        genesis.zeros(2, 3).size(2)


def test_contiguous_and_data_ptr(rng):
    g = genesis.tensor(rng.standard_normal((3, 4)), dtype=genesis.float32)
    assert g.contiguous() is g
    t = g.t()
    c = t.contiguous()
    assert c.is_contiguous() and c.data_ptr() != g.data_ptr()
    assert_close(c, to_torch(t))
    assert t.data_ptr() == g.data_ptr()
    assert g[1].data_ptr() == g.data_ptr() + 4 * g.element_size()
    assert g.nbytes == 12 * 4 and g.itemsize == 4


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_item_tolist_python_conversions(dtype, rng):
    arr = rng.uniform(-3, 3, (2, 3)) if dtype.is_floating_point else rng.integers(0, 3, (2, 3))
    g = genesis.tensor(arr, dtype=dtype)
    t = to_torch(g)
    assert g.tolist() == t.tolist()
    assert g[1, 2].item() == t[1, 2].item() and type(g[1, 2].item()) is type(t[1, 2].item())
    assert genesis.tensor(arr[0, 0], dtype=dtype).tolist() == t[0, 0].tolist()
    one = g[0, 0]
    assert float(one) == float(t[0, 0]) and int(one) == int(t[0, 0])
    assert bool(one) == bool(t[0, 0])
    with pytest.raises(RuntimeError):
        g.item()
    with pytest.raises(RuntimeError):
        bool(g)


@pytest.mark.parametrize("convert", [bool, float, int, complex, lambda t: t.item(),
                                     lambda t: t.is_nonzero()],
                         ids=["bool", "float", "int", "complex", "item", "is_nonzero"])
@pytest.mark.parametrize("shape", [(0,), (2,), (2, 3)], ids=str)
def test_python_conversions_refuse_other_than_one_value_as_torch(convert, shape):
    """A tensor of no values or several: torch's error type and words for each conversion
    (bool and is_nonzero: RuntimeError, float, int, complex: ValueError)."""
    assert raised(convert, genesis.zeros(shape)) == raised(convert, torch.zeros(shape))


def test_len_iteration_index():
    g = genesis.arange(6).reshape(3, 2)
    assert len(g) == 3
    rows = list(g)
    assert len(rows) == 3 and rows[1].tolist() == [2, 3]
    with pytest.raises(TypeError):
        len(genesis.tensor(1.0))
    with pytest.raises(TypeError):
        iter(genesis.tensor(1.0))
    assert [10, 20, 30][genesis.tensor(2)] == 30
    with pytest.raises(TypeError):
        [1, 2][genesis.tensor(1.0)]
    assert f"{genesis.tensor(2.5):.2f}" == "2.50"


def test_reversed_flips_dim0_as_torch(rng):
    """reversed() of a tensor is the tensor flipped along dim 0 (a 0-d tensor itself), gradients
    flowing back through it."""
    base = rng.standard_normal((3, 2, 4)).astype(np.float32)
    g = genesis.tensor(base, requires_grad=True)
    t = torch.tensor(base, requires_grad=True)
    g_out, t_out = reversed(g), reversed(t)
    assert isinstance(g_out, genesis.Tensor)
    assert_close(g_out, t_out.detach())
    weights = rng.standard_normal(base.shape).astype(np.float32)
    (g_out * genesis.tensor(weights)).sum().backward()
    (t_out * torch.tensor(weights)).sum().backward()
    assert_close(g.grad, t.grad)
    scalar = genesis.tensor(1.5)
    assert reversed(scalar) is scalar


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_numpy_shares_memory(dtype):
    g = genesis.zeros(2, 3, dtype=dtype)
    arr = g.numpy()
    assert arr.dtype == dtype.numpy_dtype and np.shares_memory(arr, g.numpy())
    arr[1, 1] = 1
    assert g[1, 1].item() == 1
    g.add_(True if dtype is genesis.bool else 1)
    assert arr[0, 0] == 1
    view = g.t().numpy()
    assert view.strides == tuple(s * dtype.itemsize for s in g.t().stride())
    x = genesis.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError):
        x.numpy()
    assert x.detach().numpy().tolist() == [1.0, 1.0]
    assert np.asarray(x).tolist() == [1.0, 1.0]


@pytest.mark.filterwarnings("ignore:__array_wrap__ must accept context")
@pytest.mark.parametrize("make", [
    lambda lib, x: np.exp(x), lambda lib, x: np.sqrt(x[0].abs()), lambda lib, x: x * np.ones(3),
    lambda lib, x: x + np.array(2.0), lambda lib, x: np.greater(x, 0), lambda lib, x: np.argmax(x)],
    ids=["exp", "sqrt_0d", "times_array", "plus_0d_array", "greater", "argmax"])
def test_numpy_functions_over_tensors_give_tensors_as_torch(make, rng):
    """numpy's ufuncs over a tensor (and an array operand, which numpy takes over) give a CPU
    tensor back, as torch's do: a bool result as uint8."""
    arr = rng.uniform(-1, 1, 3).astype(np.float32)
    got, want = make(genesis, genesis.tensor(arr)), make(torch, torch.tensor(arr))
    assert isinstance(got, genesis.Tensor) and isinstance(want, torch.Tensor)
    assert_close(got, want)


@pytest.mark.parametrize("src", ALL_DTYPES, ids=str)
def test_to_dtype_and_shortcuts(src, rng):
    arr = rng.uniform(-3, 3, (2, 3)) * 10
    g = genesis.tensor(arr, dtype=src)
    t = to_torch(g)
    for dst in ALL_DTYPES:
        assert_close(g.to(dst), t.to(TORCH_DTYPES[dst]))
    assert g.to(src) is g and g.to("cpu") is g and g.to(src, copy=True) is not g
    for name in ("float", "double", "half", "bfloat16", "long", "int", "short", "char", "byte",
                 "bool"):
        assert_close(getattr(g, name)(), getattr(t, name)())
    assert g.type() == t.type()
    assert g.type(genesis.float64).dtype is genesis.float64
    assert g.to(genesis.ones(1, dtype=genesis.int16)).dtype is genesis.int16
    assert g.to(device="cpu", dtype=genesis.float64).dtype is genesis.float64


def test_device_and_cpu():
    g = genesis.ones(2)
    assert g.device == genesis.device("cpu") and g.device.type == "cpu" and g.is_cpu
    assert not g.is_cuda and g.get_device() == -1 and g.cpu() is g
    assert repr(genesis.device("cuda:1")) == "device(type='cuda', index=1)"
    assert str(genesis.device("cuda", 0)) == "cuda:0"
    assert genesis.device("cpu") == "cpu"
    with pytest.raises(RuntimeError):
        genesis.device("tpu")


def test_requires_grad_rules():
    assert not genesis.ones(2).requires_grad
    for dtype in (genesis.int64, genesis.bool, genesis.uint8):
        with pytest.raises(RuntimeError, match="floating point"):
            genesis.ones(2, dtype=dtype).requires_grad_()
        with pytest.raises(RuntimeError):
            genesis.ones(2, dtype=dtype, requires_grad=True)
    x = genesis.ones(2, requires_grad=True)
    y = x * 2
    assert y.requires_grad and not y.is_leaf and x.is_leaf
    with pytest.raises(RuntimeError):
        y.requires_grad_(False)
    with genesis.no_grad():
        assert not (x * 2).requires_grad
    assert not (x > 0).requires_grad
    assert not x.long().requires_grad
    x.requires_grad = False
    assert not x.requires_grad


def test_detach_shares_memory_and_version():
    x = genesis.ones(3, requires_grad=True)
    y = x * 2
    d = y.detach()
    assert not d.requires_grad and d.grad_fn is None and d.is_leaf
    assert d.data_ptr() == y.data_ptr()
    d[0] = 5.0
    assert y[0].item() == 5.0 and y._version == d._version == 1
    assert x.data.data_ptr() == x.data_ptr() and not x.data.requires_grad
    saved = x.exp()
    out = saved * saved
    saved.detach().add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


def test_clone():
    x = genesis.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    c = x.t().clone()  # transposed, as PyTorch's preserve_format keeps a dense layout
    assert c.stride() == (1, 2) and c.data_ptr() != x.data_ptr() and c.grad_fn is not None
    assert c.tolist() == [[1.0, 3.0], [2.0, 4.0]]
    (c * genesis.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
    assert x.grad.tolist() == [[1.0, 3.0], [2.0, 4.0]]
    with genesis.no_grad():
        c.zero_() if hasattr(c, "zero_") else c.mul_(0)
    assert x.tolist() == [[1.0, 2.0], [3.0, 4.0]]


# repr

def _repr_cases():
    rng = np.random.default_rng()
    f = torch.float32
    return [
        torch.tensor([1.0, 2.0, 3.0]), torch.tensor([[1, 2], [3, 4]]), torch.tensor(3.5),
        torch.tensor(3), torch.tensor(True), torch.tensor([1e-5, 1.0]), torch.tensor([1e9, 1.0]),
        torch.tensor([1.5, float("nan"), float("inf"), -float("inf")]),
        torch.tensor([2.0, float("nan")]), torch.zeros(0, 3), torch.zeros(0),
        torch.zeros(0, dtype=torch.int32), torch.zeros(2, 0, 3, dtype=torch.float64),
        torch.arange(2000).reshape(40, 50), torch.tensor(rng.standard_normal(2000), dtype=f),
        torch.tensor(rng.standard_normal((3, 4, 5)) * 100, dtype=f),
        torch.tensor(rng.standard_normal((20, 30, 40)), dtype=f),
        torch.tensor([True, False]), torch.tensor([1, -2], dtype=torch.int8),
        torch.tensor([1.0, 2.0], dtype=torch.float64),
        torch.tensor([1.5, 2.25], dtype=torch.bfloat16),
        torch.tensor([1.5, 2.25], dtype=torch.float16), torch.tensor(rng.standard_normal((8, 8))),
        torch.tensor([-0.0, 0.0]), torch.tensor([123456.789, 0.001]),
        torch.tensor(rng.standard_normal(100) * 1e-3, dtype=f), torch.tensor(float("nan")),
        torch.tensor([[]]), torch.tensor([1e20]), torch.tensor([-1, 2 ** 40]),
        torch.tensor(rng.integers(-1000, 1000, (30, 40)), dtype=torch.int16),
        torch.tensor(rng.standard_normal((2, 3)) * 1e5, dtype=f),
        torch.arange(1001, dtype=torch.uint8), torch.tensor(rng.standard_normal(30), dtype=f),
    ]


@pytest.mark.parametrize("index", range(len(_repr_cases())))
def test_repr_matches_torch(index):
    ref = _repr_cases()[index]
    if ref.dtype is torch.bfloat16:
        g = genesis.tensor(ref.float().numpy(), dtype=genesis.bfloat16)
    else:
        g = genesis.from_numpy(ref.numpy().copy())
    assert repr(g) == repr(ref).replace("torch.", "genesis.")
    assert str(g) == repr(g)


@pytest.mark.parametrize("default", [genesis.float64, genesis.float16])
def test_repr_under_other_default_dtype(default):
    genesis.set_default_dtype(default)
    torch.set_default_dtype(TORCH_DTYPES[default])
    try:
        for ref in (torch.tensor([1.5, 2.0]), torch.tensor([1.5], dtype=torch.float32),
                    torch.zeros(0), torch.zeros(0, dtype=torch.float32)):
            g = genesis.tensor(ref.numpy(), dtype=genesis.dtypes.from_numpy_dtype(
                ref.numpy().dtype))
            assert repr(g) == repr(ref).replace("torch.", "genesis.")
    finally:
        torch.set_default_dtype(torch.float32)


def test_repr_autograd_suffixes():
    g = genesis.tensor([1.0, 2.0], requires_grad=True)
    t = torch.tensor([1.0, 2.0], requires_grad=True)
    assert repr(g) == repr(t)
    assert repr(g * 2) == repr(t * 2)
    assert repr(g.exp()) == repr(t.exp())
    assert repr((g + 1).sum()) == repr((t + 1).sum())
    wide_g = genesis.tensor(np.arange(20.0) * 1.123, requires_grad=True) * 3
    wide_t = torch.tensor(np.arange(20.0) * 1.123, requires_grad=True) * 3
    assert repr(wide_g) == repr(wide_t).replace("torch.", "genesis.")


def test_repr_device_suffix_and_printoptions():
    from genesis._tensor_str import _suffixes
    g = genesis.tensor([1.0])
    g.device = genesis.device("cuda", 0)
    try:
        assert _suffixes(g) == ["device='cuda:0'"]
    finally:
        g.device = genesis.device("cpu")
    cases = [dict(precision=2), dict(threshold=5), dict(edgeitems=1, threshold=5),
             dict(linewidth=40), dict(sci_mode=True), dict(sci_mode=False), dict(profile="short"),
             dict(edgeitems=0, threshold=3)]
    values = np.arange(1, 40, dtype=np.float32) * 1.37
    for kwargs in cases:
        with genesis.printoptions(**kwargs):
            torch.set_printoptions(**kwargs)
            try:
                for arr in (values, values.reshape(3, 13), np.array([1e-5, 3.0], np.float32)):
                    want = repr(torch.from_numpy(arr)).replace("torch.", "genesis.")
                    assert repr(genesis.from_numpy(arr)) == want, kwargs
            finally:
                torch.set_printoptions(profile="default")
    assert genesis.get_printoptions()["precision"] == 4


# DLPack

@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_dlpack_to_torch_zero_copy(dtype):
    g = genesis.zeros(3, 5, dtype=dtype)
    view = g.t()[1:, ::2]
    t = torch.from_dlpack(view)
    assert t.dtype is TORCH_DTYPES[dtype] and t.shape == view.shape
    assert t.stride() == view.stride() and t.data_ptr() == view.data_ptr()
    t.fill_(1)
    assert view.tolist() == t.tolist() and g.sum().item() == t.numel()
    assert g.__dlpack_device__() == (1, 0)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_dlpack_from_torch_zero_copy(dtype):
    t = torch.zeros(5, 4, dtype=TORCH_DTYPES[dtype]).t()[:, 1:]
    g = genesis.from_dlpack(t)
    assert g.dtype is dtype and g.shape == t.shape and g.stride() == t.stride()
    assert g.data_ptr() == t.data_ptr()
    t.fill_(1)
    assert g.tolist() == t.tolist()
    g.mul_(False if dtype is genesis.bool else 0)
    assert not t.any()
    assert genesis.from_dlpack(t.__dlpack__()).data_ptr() == t.data_ptr()


@pytest.mark.parametrize("dtype", [d for d in ALL_DTYPES if d is not genesis.bfloat16], ids=str)
def test_dlpack_with_numpy_both_ways(dtype):
    arr = np.zeros((4, 6), dtype=dtype.numpy_dtype)[::2, 1::2]
    g = genesis.from_dlpack(arr)
    assert g.stride() == (12, 2) and g.dtype is dtype
    arr[0, 0] = 1
    assert g[0, 0].item() == 1
    back = np.from_dlpack(g)
    back[1, 2] = 1
    assert arr[1, 2] == 1 and np.shares_memory(back, arr)


def test_dlpack_rules():
    x = genesis.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="require gradient"):
        torch.from_dlpack(x)
    assert torch.from_dlpack(x.detach()).tolist() == [1.0, 1.0]
    capsule = genesis.ones(2).__dlpack__()
    genesis.from_dlpack(capsule)
    with pytest.raises(BufferError):
        genesis.from_dlpack(capsule)
    with pytest.raises(TypeError):
        genesis.from_dlpack([1, 2])
    g = genesis.ones(3)
    assert genesis.from_dlpack(g) is g
    copied = genesis.from_dlpack(torch.ones(3), copy=True)
    assert copied.tolist() == [1.0, 1.0, 1.0]


def test_empty_results_report_contiguous_strides_as_torch():
    assert (genesis.zeros(0, 3) + 1).stride() == (torch.zeros(0, 3) + 1).stride()
