"""The gloo backend on CPU tensors: ranks started by genesis.multiprocessing.spawn meet through
MASTER_ADDR/MASTER_PORT (or tcp://) and run the checks of tests/gloo_worker.py; loopback only.
Spawning costs seconds, so each job runs many checks."""

import pytest

import genesis
import genesis.distributed as dist
import gloo_worker
from helpers import free_port, spawn_job


def test_collectives_p2p_groups_and_errors_over_three_ranks():
    """Every collective and dtype against numpy with fresh random inputs, async Works, p2p with
    tags and any source, a subgroup, object collectives and PyTorch's argument errors."""
    spawn_job(gloo_worker.collectives, 3)


def test_ddp_matches_one_process_and_timeouts_fire_over_two_ranks():
    """DDP on each rank's half of every batch ends where one process on the whole batch does;
    a group's timeout and monitored_barrier's late rank fail in time."""
    spawn_job(gloo_worker.ddp_and_timeouts, 2)


def test_gloo_is_the_cpu_default_as_in_torch():
    import torch.distributed as tdist
    assert dist.is_gloo_available() and dist.is_backend_available("cpu:gloo")
    assert dist.Backend.default_device_backend_map["cpu"] == \
        tdist.Backend.default_device_backend_map["cpu"] == "gloo"
    assert dist.Backend.backend_capability["gloo"] == ["cpu"]


def test_one_rank_world_without_other_processes(monkeypatch):
    """A world of one (as a script run alone): collectives are copies, the store is closed at
    destroy; a CUDA tensor is refused with the op and the backend named."""
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", str(free_port()))
    dist.init_process_group("cpu:gloo", rank=0, world_size=1)
    try:
        assert dist.get_backend() == "gloo"
        t = genesis.tensor([1.0, 2.0])
        dist.all_reduce(t, dist.ReduceOp.PRODUCT)
        assert t.tolist() == [1.0, 2.0]
        out = genesis.empty(2)
        dist.all_gather_single(out, t)
        assert out.tolist() == [1.0, 2.0]
        with pytest.warns(FutureWarning, match="`torch.distributed.all_gather_into_tensor` is "
                                               "deprecated. Please use `torch.distributed."
                                               "all_gather_single` instead."):
            dist.all_gather_into_tensor(out, t * 2)
        assert out.tolist() == [2.0, 4.0]
        with pytest.warns(FutureWarning, match="`torch.distributed.reduce_scatter_tensor` is "
                                               "deprecated"):
            dist.reduce_scatter_tensor(t, out)
        assert t.tolist() == [2.0, 4.0]
        if genesis.cuda.is_available():
            with pytest.raises(ValueError, match="all_reduce: the gloo backend works on cpu "
                                                 "tensors, got a tensor on cuda:0"):
                dist.all_reduce(genesis.ones(1, device="cuda"))
    finally:
        dist.destroy_process_group()
