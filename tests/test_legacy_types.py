"""Legacy typed constructors (genesis.FloatTensor, ...) and Tensor.type against PyTorch's."""

import subprocess
import sys

import numpy as np
import pytest
import torch

import genesis
from helpers import TORCH_DTYPES, assert_close, from_torch, raised

NAMES = ["FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor", "IntTensor",
         "ShortTensor", "CharTensor", "ByteTensor", "BoolTensor"]


@pytest.mark.parametrize("name", NAMES)
def test_constructors_match_torch(name):
    mine, theirs = getattr(genesis, name), getattr(torch, name)
    sized = mine(2, 3)
    assert tuple(sized.shape) == (2, 3) and sized.type() == theirs(2, 3).type()
    assert tuple(mine(genesis.Size([4, 1])).shape) == (4, 1)
    assert tuple(mine().shape) == (0,) and mine().type() == f"torch.{name}"
    data = [[1, 0, 3], [0, 2, 1]]
    assert_close(mine(data), theirs(data))
    assert_close(mine((1, 2)), theirs((1, 2)))
    existing = mine(data)
    assert mine(existing) is existing


@pytest.mark.parametrize("name", NAMES)
def test_isinstance_as_torch(name):
    for dtype in (torch.float32, torch.float64, torch.int64, torch.bool, torch.uint8):
        t = torch.zeros(2, dtype=dtype)
        g = from_torch(t)
        assert isinstance(g, getattr(genesis, name)) == isinstance(t, getattr(torch, name))
        assert not isinstance(g, getattr(genesis.cuda, name))
    assert not isinstance([1.0], getattr(genesis, name))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16,
                                   torch.int64, torch.int32, torch.int16, torch.int8,
                                   torch.uint8, torch.bool])
def test_type_names_and_conversions(dtype):
    t = torch.zeros(2, dtype=dtype)
    g = from_torch(t)
    assert g.type() == t.type()
    assert g.type(g.type()) is g
    for target in ("torch.DoubleTensor", "torch.IntTensor", "torch.BoolTensor"):
        assert_close(g.type(target), t.type(target))
    assert g.type(genesis.LongTensor).dtype is genesis.int64
    assert g.type(genesis.float16).dtype is genesis.float16
    assert g.type("genesis.ShortTensor").dtype is genesis.int16


@pytest.mark.parametrize("default", [genesis.float32, genesis.float64])
def test_type_of_the_tensor_class_is_the_default_type(default):
    """x.type(torch.Tensor) (CycleGAN's `batch.type(Tensor)`) and x.type('torch.Tensor') convert
    to the default dtype."""
    t = torch.arange(3)
    g = from_torch(t)
    genesis.set_default_dtype(default)
    torch.set_default_dtype(TORCH_DTYPES[default])
    try:
        for target, t_target in ((genesis.Tensor, torch.Tensor), ("torch.Tensor", "torch.Tensor")):
            assert_close(g.type(target), t.type(t_target))
    finally:
        torch.set_default_dtype(torch.float32)


@pytest.mark.parametrize("arg", [np.float32(3), np.float64(2), np.bool_(True), np.int64(3),
                                 np.array(3.0)], ids=repr)
def test_numpy_scalars_in_legacy_constructors_as_torch(arg):
    """A numpy integer is a size, other numpy scalars are refused as data (named as numpy's
    types), a 0-d array is data: as torch's legacy constructors take them."""
    for name in ("Tensor", "LongTensor"):
        mine, theirs = getattr(genesis, name), getattr(torch, name)
        if isinstance(arg, (np.floating, np.bool_)):
            assert raised(mine, arg) == raised(theirs, arg)
        else:
            assert (mine(arg).shape, mine(arg).type()) == (theirs(arg).shape, theirs(arg).type())


def test_errors():
    with pytest.raises(TypeError, match="expected a tensor of type torch.FloatTensor, got "
                                        "torch.DoubleTensor"):
        genesis.FloatTensor(genesis.zeros(2, dtype=genesis.float64))
    with pytest.raises(TypeError, match="data must be a sequence"):
        genesis.FloatTensor(2.5)
    with pytest.raises(ValueError, match="invalid type: 'torch.NoSuchTensor'"):
        genesis.zeros(2).type("torch.NoSuchTensor")


def test_cuda_forms_are_lazy():
    """Importing genesis and naming genesis.cuda.FloatTensor initialise no driver."""
    code = ("import genesis, genesis.backends.cuda.runtime.driver as d\n"
            "T = genesis.cuda.FloatTensor\n"
            "assert repr(T) == \"<class 'genesis.cuda.FloatTensor'>\"\n"
            "assert not isinstance(genesis.zeros(1), T)\n"
            "assert d._cu is None and d._init_error is None\n"
            "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=".")
    assert out.stdout.strip() == "ok", out.stderr
    with pytest.raises(AttributeError, match="has no attribute 'NoSuchTensor'"):
        genesis.cuda.NoSuchTensor


@pytest.mark.parametrize("args", [(), (2, 3), ((4,),), ([1, 2.5],), ([[1, 2], [3, 4]],)],
                         ids=repr)
@pytest.mark.parametrize("default", [genesis.float32, genesis.float64])
def test_tensor_class_is_the_default_types_legacy_constructor(args, default):
    """`torch.Tensor(n, m)` (graph-convolution weights), `torch.Tensor([data])`: the legacy
    constructor of the default dtype, as in PyTorch."""
    torch_args = tuple(torch.Size(a) if isinstance(a, tuple) else a for a in args)
    genesis_args = tuple(genesis.Size(a) if isinstance(a, tuple) else a for a in args)
    genesis.set_default_dtype(default)
    torch.set_default_dtype(TORCH_DTYPES[default])
    try:
        got, want = genesis.Tensor(*genesis_args), torch.Tensor(*torch_args)
    finally:
        genesis.set_default_dtype(genesis.float32)
        torch.set_default_dtype(torch.float32)
    assert type(got) is genesis.Tensor and got.dtype is default
    assert tuple(got.shape) == tuple(want.shape)
    if args and isinstance(args[0], list):
        assert_close(got, want)


def test_tensor_class_aliases_a_tensor_and_refuses_scalars():
    x = genesis.ones(3, dtype=genesis.int64)
    assert genesis.Tensor(x).data_ptr() == x.data_ptr() and genesis.Tensor(x).dtype is x.dtype
    w = genesis.ones(2, requires_grad=True)
    genesis.Tensor(w).sum().backward()
    assert w.grad.tolist() == [1.0, 1.0]
    with pytest.raises(TypeError) as want:
        torch.Tensor(2.5)
    with pytest.raises(TypeError, match=str(want.value).replace("(", r"\(").replace(")", r"\)")):
        genesis.Tensor(2.5)
    assert isinstance(genesis.nn.Parameter(genesis.Tensor(3, 4)), genesis.Tensor)


def test_class_names_as_torch():
    """type(x) prints as PyTorch's does: <class 'genesis.Tensor'>, <class 'genesis.Size'>."""
    for name in ("Tensor", "Size"):
        assert repr(getattr(genesis, name)) == repr(getattr(torch, name)).replace("torch",
                                                                                  "genesis")
    assert repr(type(genesis.ones(1))) == "<class 'genesis.Tensor'>"
