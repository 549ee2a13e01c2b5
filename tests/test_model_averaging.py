"""Post-local SGD and model averaging against torch's: the averagers' schedule, the hook and
PostLocalSGDOptimizer over a two-rank gloo job (tests/model_averaging_worker.py), and the
errors and warnings in torch's words."""

import random
import socket

import pytest
import torch
from torch.distributed.algorithms.model_averaging import averagers as torch_averagers
from torch.distributed.algorithms.model_averaging import utils as torch_utils

import genesis
import genesis.multiprocessing as mp
import model_averaging_worker
from genesis.distributed.algorithms.model_averaging import averagers, utils


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_model_averaging_over_two_ranks():
    mp.spawn(model_averaging_worker.run, args=(2, free_port(), random.randrange(2 ** 32)),
             nprocs=2)


def _message(make, *args, **kwargs):
    with pytest.raises(Exception) as info:
        make(*args, **kwargs)
    return type(info.value).__name__, str(info.value)


@pytest.mark.parametrize("kwargs", [{"period": 0}, {"period": 4, "warmup_steps": -1}])
def test_averager_errors_match_torch(kwargs):
    group = object()
    want = _message(torch_averagers.PeriodicModelAverager, process_group=group, **kwargs)
    got = _message(averagers.PeriodicModelAverager, process_group=group, **kwargs)
    assert got == want


def test_period_one_warns_as_torch_does():
    with pytest.warns(UserWarning) as want:
        torch_averagers.PeriodicModelAverager(1, process_group=object())
    with pytest.warns(UserWarning) as got:
        averagers.PeriodicModelAverager(1, process_group=object())
    assert [str(w.message) for w in got] == [str(w.message) for w in want]


def test_unsupported_parameter_input_matches_torch():
    want = _message(torch_utils.get_params_to_average, [torch.zeros(2)])
    got = _message(utils.get_params_to_average, [genesis.zeros(2)])
    assert got[0] == want[0] == "NotImplementedError"
    assert got[1] == want[1].replace("torch", "genesis")


def test_abstract_averager_is_not_constructible():
    with pytest.raises(TypeError):
        averagers.ModelAverager(object())
