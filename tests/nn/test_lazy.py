"""Lazy modules against torch's: the shapes they infer from the first input, the class they
become, their printing before and after, loading a state dict into them, and a model of lazy
layers computing as torch's once their weights are copied."""

import pytest
import torch
from helpers import assert_close, from_torch
from nn_compare import copy_module

import genesis

CASES = [  # (name, constructor arguments, first input shape)
    ("LazyLinear", (5,), (3, 7)),
    ("LazyLinear", (4, False), (2, 3, 6)),
    ("LazyConv1d", (4, 3), (2, 3, 9)),
    ("LazyConv2d", (6, 3, 1, 1, 1, 2), (2, 4, 7, 7)),
    ("LazyConv3d", (2, 2), (3, 4, 4, 4)),
    ("LazyConvTranspose1d", (4, 2, 2), (2, 3, 5)),
    ("LazyConvTranspose2d", (4, 3, 1, 0, 0, 2), (1, 6, 4, 4)),
    ("LazyConvTranspose3d", (2, 2), (1, 3, 2, 2, 2)),
    ("LazyBatchNorm1d", (), (4, 5)),
    ("LazyBatchNorm2d", (1e-3, 0.2, True, False), (2, 3, 4, 4)),
    ("LazyBatchNorm3d", (), (2, 3, 2, 2, 2)),
    ("LazyInstanceNorm1d", (), (2, 3, 6)),
    ("LazyInstanceNorm2d", (1e-5, 0.1, False), (2, 3, 4, 4)),
    ("LazyInstanceNorm3d", (), (2, 3, 2, 2, 2)),
]


def _shapes(module):
    return {name: tuple(t.shape) for name, t in module.state_dict().items()}


@pytest.mark.parametrize("name, args, shape", CASES)
def test_lazy_module_infers_as_torch(name, args, shape):
    ours, theirs = getattr(genesis.nn, name)(*args), getattr(torch.nn, name)(*args)
    assert repr(ours) == repr(theirs).replace("torch.", "genesis.")
    assert ours.has_uninitialized_params()
    ours(genesis.randn(*shape))
    theirs(torch.randn(*shape))
    assert type(ours).__name__ == type(theirs).__name__ == name[len("Lazy"):]
    assert repr(ours) == repr(theirs)
    assert _shapes(ours) == _shapes(theirs)
    assert all(isinstance(p, genesis.nn.Parameter) for p in ours.parameters())


def test_lazy_model_computes_as_torch_once_copied(rng):
    def build(lib):
        return lib.nn.Sequential(lib.nn.LazyConv2d(4, 3), lib.nn.LazyBatchNorm2d(), lib.nn.ReLU(),
                                 lib.nn.Flatten(), lib.nn.LazyLinear(3))
    ours, theirs = build(genesis).double(), build(torch).double()
    x = torch.from_numpy(rng.standard_normal((2, 3, 6, 6)))
    theirs(x)
    ours(from_torch(x))
    copy_module(ours, theirs)
    assert_close(ours(from_torch(x)), theirs(x))


def test_load_state_dict_shapes_a_lazy_module():
    trained = genesis.nn.Linear(6, 2)
    lazy = genesis.nn.LazyLinear(2)
    lazy.load_state_dict(trained.state_dict())
    assert tuple(lazy.weight.shape) == (2, 6)
    assert genesis.equal(lazy.weight, trained.weight)
    lazy(genesis.ones(1, 6))
    assert type(lazy) is genesis.nn.Linear


def test_lazy_errors_as_torch():
    for lib in (genesis, torch):
        with pytest.raises(RuntimeError, match=r"Expected 3D \(unbatched\) or 4D \(batched\) "
                                               "input to LazyConv2d"):
            lib.nn.LazyConv2d(2, 3)(lib.ones(2, 3))
        with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
            lib.nn.LazyConv1d(4, 1, groups=2)(lib.ones(1, 3, 4))
    assert repr(genesis.nn.UninitializedParameter()) == "<UninitializedParameter>"
