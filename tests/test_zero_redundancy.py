"""genesis.distributed.optim.ZeroRedundancyOptimizer against torch's: training, partition,
state and buckets over a two-rank gloo job (tests/zero_redundancy_worker.py), and the
constructor's errors in torch's words."""

import pytest
import torch
from torch.distributed.optim import ZeroRedundancyOptimizer as TorchZeRO

import genesis
import zero_redundancy_worker
from genesis.distributed.optim import ZeroRedundancyOptimizer
from helpers import raised, spawn_job


def test_zero_redundancy_over_two_ranks():
    spawn_job(zero_redundancy_worker.run, 2)


@pytest.mark.parametrize("case", ["tensor", "empty", "mixed", "no_params_key", "dtypes"])
def test_constructor_errors_match_torch(case):
    def params(lib):
        return {"tensor": lib.zeros(2),
                "empty": [],
                "mixed": [lib.zeros(2), {"params": [lib.zeros(2)]}],
                "no_params_key": [{"lr": 0.1}],
                "dtypes": [lib.zeros(2), lib.zeros(2, dtype=lib.float64)]}[case]
    want = raised(TorchZeRO, params(torch), torch.optim.SGD, lr=0.1)
    got = raised(ZeroRedundancyOptimizer, params(genesis), genesis.optim.SGD, lr=0.1)
    assert got == want


def test_overlap_with_ddp_is_refused_by_name():
    with pytest.raises(NotImplementedError, match="overlap_with_ddp=True"):
        ZeroRedundancyOptimizer([genesis.zeros(2, requires_grad=True)], genesis.optim.SGD,
                                overlap_with_ddp=True, lr=0.1)
