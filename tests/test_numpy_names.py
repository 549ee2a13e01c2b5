"""numpy's keyword names (`axis` for `dim`, `keepdims` for `keepdim`) against PyTorch: taken by
exactly the ops PyTorch binds from C++, refused by those it writes in Python, values and
gradients as under the real names."""

import inspect
import types

import numpy as np
import pytest
import torch
from helpers import assert_close, lay_out, make_pair

import genesis

_NAMESPACES = {
    "genesis": (genesis, torch),
    "genesis.linalg": (genesis.linalg, torch.linalg),
    "genesis.special": (genesis.special, torch.special),
    "genesis.nn.functional": (genesis.nn.functional, torch.nn.functional),
    "Tensor": (genesis.Tensor, torch.Tensor),
}


def _takes_dim(fn):
    try:
        return bool({"dim", "keepdim"} & inspect.signature(fn).parameters.keys())
    except (TypeError, ValueError):
        return False


def _bound_from_cpp(obj):
    return isinstance(obj, types.BuiltinFunctionType) or type(obj).__name__ == "method_descriptor"


@pytest.mark.parametrize("label", list(_NAMESPACES))
def test_aliases_where_torch_binds_the_op_from_cpp(label):
    ours, theirs = _NAMESPACES[label]
    checked = 0
    for name, fn in vars(ours).items():
        if name.startswith("_") or not inspect.isfunction(fn) or not _takes_dim(fn):
            continue
        reference = getattr(theirs, name, None)
        assert reference is not None, f"{label}.{name} has no torch counterpart"
        assert hasattr(fn, "__numpy_names__") == _bound_from_cpp(reference), f"{label}.{name}"
        checked += 1
    assert checked


CALLS = [
    lambda lib, x, y: lib.sum(x, axis=1, keepdims=True),
    lambda lib, x, y: x.mean(axis=(0, 2)),
    lambda lib, x, y: x.amax(axis=-1, keepdims=True),
    lambda lib, x, y: lib.max(x, axis=1, keepdims=True).values,
    lambda lib, x, y: x.min(axis=2).values,
    lambda lib, x, y: lib.std(x, axis=1, keepdims=True),
    lambda lib, x, y: x.var(axis=0, correction=0),
    lambda lib, x, y: x.logsumexp(axis=-1),
    lambda lib, x, y: lib.cumsum(x, axis=1),
    lambda lib, x, y: x.softmax(axis=0),
    lambda lib, x, y: lib.cat([x, y], axis=1),
    lambda lib, x, y: lib.concatenate([x, y], dim=-1),
    lambda lib, x, y: lib.concatenate([x, y], axis=0),
    lambda lib, x, y: lib.stack([x, y], axis=1),
    lambda lib, x, y: x.unsqueeze(axis=1) * 2,
    lambda lib, x, y: lib.linalg.vector_norm(x, axis=1, keepdims=True),
    lambda lib, x, y: lib.special.logsumexp(x, axis=(0, 1)),
    lambda lib, x, y: lib.nn.functional.cosine_similarity(x, y, axis=-1),
    lambda lib, x, y: x.sum(axis=1, keepdim=True),  # one alias beside the other's real name
]


@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
@pytest.mark.parametrize("index", range(len(CALLS)))
def test_aliased_calls_as_torch(index, layout, rng):
    inputs = [make_pair((3, 5, 7), genesis.float64, rng=rng) for _ in range(2)]
    g = [lay_out(a, layout).requires_grad_() for a, _ in inputs]
    t = [b.requires_grad_() for _, b in inputs]
    ours, theirs = CALLS[index](genesis, *g), CALLS[index](torch, *t)
    assert_close(ours, theirs)
    grad = rng.standard_normal(tuple(theirs.shape))
    ours.backward(genesis.tensor(grad))
    theirs.backward(torch.tensor(grad))
    for a, b in zip(g, t):
        if b.grad is None:
            assert a.grad is None
        else:
            assert_close(a.grad, b.grad)


def test_integer_results_and_sizes_as_torch(rng):
    values = rng.standard_normal((4, 6))
    for fn in (lambda lib, x: x.argmax(axis=1, keepdims=True),
               lambda lib, x: lib.sort(x, axis=0).indices,
               lambda lib, x: lib.topk(x, 2, axis=1).indices,
               lambda lib, x: x.any(axis=0)):
        assert_close(fn(genesis, genesis.tensor(values)), fn(torch, torch.tensor(values)))
    assert genesis.ones(2, 3).size(axis=1) == 3


def test_refusals_as_torch():
    for lib in (torch, genesis):
        x = lib.ones(2, 3)
        for call, name in ((lambda: lib.sum(x, dim=1, axis=1), "sum"),
                           (lambda: x.amax(keepdim=True, keepdims=True, dim=0), "amax"),
                           (lambda: lib.cat([x], dim=0, axis=0), "cat"),
                           (lambda: lib.norm(x, axis=1), "norm"),
                           (lambda: lib.split(x, 1, axis=1), "split"),
                           (lambda: lib.nn.functional.softmax(x, axis=1), "softmax")):
            with pytest.raises(TypeError, match=rf"{name}\(\) got an unexpected keyword "
                                                r"argument '(axis|keepdims)'"):
                call()
        with pytest.raises(TypeError, match="unexpected keyword argument 'axis'"):
            x.split(1, axis=0)
        with pytest.raises(TypeError, match="unexpected keyword argument 'keepdims'"):
            lib.cumsum(x, 0, keepdims=True)
    assert np.array_equal(genesis.concatenate([genesis.ones(1)], 0).numpy(), [1.0])


@pytest.mark.parametrize("label", list(_NAMESPACES))
def test_aliased_functions_pickle_as_themselves(label):
    """pickle stores a function by the name it is reached at; each wrapper is found there (as
    torch's functions are), also for a multiprocessing worker given `genesis.unsqueeze`."""
    import pickle
    ours = _NAMESPACES[label][0]
    wrapped = [fn for fn in vars(ours).values() if hasattr(fn, "__numpy_names__")]
    assert wrapped
    for fn in wrapped:
        assert pickle.loads(pickle.dumps(fn)) is fn
