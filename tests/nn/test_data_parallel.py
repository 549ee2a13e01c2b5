"""nn.DataParallel: without CUDA the module runs as it is; scatter, replicate and gather are
checked on several CPU 'devices', where the split run must give the whole batch's outputs and
gradients (GPU runs in tests/cuda/test_data_parallel_cuda.py)."""

import collections
import warnings

import numpy as np
import pytest
import torch

import genesis
import genesis.nn as nn
from genesis.nn.parallel import gather, replicate, scatter
from genesis.nn.parallel.data_parallel import run_parallel

CPU = genesis.device("cpu")
Pair = collections.namedtuple("Pair", "a b")


class TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 8), nn.Tanh())
        self.head = nn.Linear(8, 3)
        self.register_buffer("scale", genesis.tensor(2.0, dtype=genesis.float64))

    def forward(self, x, extra=None, shift=0.0):
        h = self.body(x) * self.scale + shift
        out = {"logits": self.head(h), "pair": Pair(h.sum(1), None if extra is None else extra)}
        return out


def _model():
    genesis.manual_seed(0)
    return TwoHeads().double()


def test_without_cuda_the_module_runs_as_it_is(rng):
    model = _model()
    wrapped = nn.DataParallel(model)
    x = genesis.tensor(rng.standard_normal((5, 4)))
    assert genesis.equal(wrapped(x)["logits"], model(x)["logits"])
    assert list(wrapped.state_dict()) == ["module." + k for k in model.state_dict()]
    assert all(p is q for p, q in zip(wrapped.parameters(), model.parameters()))
    assert repr(wrapped).startswith("DataParallel(\n  (module): TwoHeads(")
    assert wrapped.device_ids == [] and wrapped.module is model


@pytest.mark.parametrize("devices", [1, 2, 3, 7])
def test_split_run_equals_the_whole_batch(devices, rng):
    x = genesis.tensor(rng.standard_normal((5, 4)), requires_grad=True)
    extra = genesis.tensor(rng.standard_normal((5, 2)))
    whole_model, split_model = _model(), _model()
    whole = whole_model(x, extra=extra, shift=0.5)
    (whole["logits"].square().sum() + whole["pair"].a.sum()).backward()
    whole_grads = [p.grad for p in whole_model.parameters()] + [x.grad]
    x.grad = None
    split = run_parallel(split_model, (x,), {"extra": extra, "shift": 0.5}, [CPU] * devices, CPU)
    assert isinstance(split["pair"], Pair)
    (split["logits"].square().sum() + split["pair"].a.sum()).backward()
    for got, want in [(split["logits"], whole["logits"]), (split["pair"].b, extra)] + list(
            zip([p.grad for p in split_model.parameters()] + [x.grad], whole_grads)):
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-12,
                                   atol=1e-13)


def test_replicas_share_the_first_device_and_copy_elsewhere():
    model = _model()
    first, second = replicate(model, [CPU, genesis.device("cpu")])
    assert first is not model and first.head.weight is model.head.weight
    assert first.body[0] is not model.body[0] and first.scale is model.scale
    assert second.body[0].weight is model.body[0].weight  # .to() of a CPU tensor to the CPU


def test_scatter_and_gather_structures():
    x = genesis.arange(10.0).reshape(5, 2)
    parts = scatter((x, [x, 3], {"k": x}, "text"), [CPU] * 2)
    assert len(parts) == 2 and parts[0][0].shape == (3, 2) and parts[1][1][1] == 3
    assert parts[1][2]["k"].tolist() == [[6.0, 7.0], [8.0, 9.0]] and parts[0][3] == "text"
    assert len(scatter((genesis.ones(2, 3),), [CPU] * 4)) == 2
    joined = gather([(x[:2], {"v": x[:2, 0]}), (x[2:], {"v": x[2:, 0]})], CPU)
    assert genesis.equal(joined[0], x) and genesis.equal(joined[1]["v"], x[:, 0])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        vector = gather([genesis.tensor(1.0), genesis.tensor(2.0)], CPU)
    assert vector.tolist() == [1.0, 2.0]
    assert str(caught[0].message) == ("Was asked to gather along dimension 0, but all input "
                                      "tensors were scalars; will instead unsqueeze and return a "
                                      "vector.")


def test_names_as_torch():
    for name in ("DataParallel", "data_parallel", "scatter", "replicate", "gather"):
        assert hasattr(torch.nn.parallel, name) and hasattr(genesis.nn.parallel, name)
    assert genesis.nn.DataParallel is genesis.nn.parallel.DataParallel
