"""Post-local SGD and model averaging against torch's: the averagers' schedule, the hook and
PostLocalSGDOptimizer over a two-rank gloo job (tests/model_averaging_worker.py), the
hierarchical averager over four ranks, and the errors and warnings in torch's words."""

import pytest
import torch
from torch.distributed.algorithms.model_averaging import averagers as torch_averagers
from torch.distributed.algorithms.model_averaging import (
    hierarchical_model_averager as torch_hierarchical)
from torch.distributed.algorithms.model_averaging import utils as torch_utils

import genesis
import model_averaging_worker
from genesis.distributed.algorithms.model_averaging import averagers, utils
from genesis.distributed.algorithms.model_averaging import hierarchical_model_averager
from helpers import raised, spawn_job


def test_model_averaging_over_two_ranks():
    spawn_job(model_averaging_worker.run, 2)


def test_hierarchical_averaging_over_four_ranks():
    spawn_job(model_averaging_worker.run_hierarchical, 4)


@pytest.mark.parametrize("sizes", [{}, {0: 2, 4: 4}])
def test_hierarchical_averager_errors_match_torch(sizes):
    group = object()
    want = raised(torch_hierarchical.HierarchicalModelAverager, sizes, process_group=group)
    got = raised(hierarchical_model_averager.HierarchicalModelAverager, sizes,
                 process_group=group)
    assert got == want


@pytest.mark.parametrize("kwargs", [{"period": 0}, {"period": 4, "warmup_steps": -1}])
def test_averager_errors_match_torch(kwargs):
    group = object()
    want = raised(torch_averagers.PeriodicModelAverager, process_group=group, **kwargs)
    got = raised(averagers.PeriodicModelAverager, process_group=group, **kwargs)
    assert got == want


def test_period_one_warns_as_torch_does():
    with pytest.warns(UserWarning) as want:
        torch_averagers.PeriodicModelAverager(1, process_group=object())
    with pytest.warns(UserWarning) as got:
        averagers.PeriodicModelAverager(1, process_group=object())
    assert [str(w.message) for w in got] == [str(w.message) for w in want]


def test_unsupported_parameter_input_matches_torch():
    want = raised(torch_utils.get_params_to_average, [torch.zeros(2)])
    got = raised(utils.get_params_to_average, [genesis.zeros(2)])
    assert got[0] == want[0] == "NotImplementedError"
    assert got[1] == want[1].replace("torch", "genesis")


def test_abstract_averager_is_not_constructible():
    with pytest.raises(TypeError):
        averagers.ModelAverager(object())
