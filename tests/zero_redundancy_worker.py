"""Checks that tests/test_zero_redundancy.py runs inside each rank of a two-rank gloo job:
ZeroRedundancyOptimizer under DDP against one process's optimizer on the averaged gradients,
its partition against torch's rule, its sharded state, state_dict round trips, bucket views,
added groups and Join. Every rank builds both ranks' data from the job's seed."""

import os
import types

import numpy as np
import pytest
import torch
from torch.distributed.optim import ZeroRedundancyOptimizer as TorchZeRO

import genesis
import genesis.distributed as dist
from genesis import nn
from genesis.distributed.algorithms import Join
from genesis.distributed.optim import ZeroRedundancyOptimizer
from genesis.nn.parallel import DistributedDataParallel as DDP

STEPS = 3
OPTIMIZERS = [(genesis.optim.SGD, {"lr": 0.1, "momentum": 0.9}),
              (genesis.optim.Adam, {"lr": 0.01})]


def start(rank, world, port):
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)


def model(seed):
    genesis.manual_seed(seed)
    return nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 3))


def batch(seed, step, rank):
    rng = np.random.default_rng([seed, step, rank])
    return genesis.tensor(rng.standard_normal((6, 4)).astype(np.float32))


def groups(net, lrs):
    """One parameter group per Linear layer of `net`, with the learning rates `lrs`."""
    return [{"params": list(net[i].parameters()), "lr": lr} for i, lr in zip((0, 2), lrs)]


def reference(seed, optimizer_class, kwargs, lrs=None):
    """One process's training on both ranks' batches: each step's gradients are the average of
    the two ranks'. Returns the model and its optimizer."""
    net = model(seed)
    opt = optimizer_class(net.parameters() if lrs is None else groups(net, lrs), **kwargs)
    for step in range(STEPS):
        grads = []
        for r in range(2):
            net.zero_grad()
            net(batch(seed, step, r)).pow(2).mean().backward()
            grads.append([p.grad.numpy().copy() for p in net.parameters()])
        for p, a, b in zip(net.parameters(), *grads):
            p.grad = genesis.tensor(a / 2 + b / 2)
        opt.step()
    return net, opt


def sharded(seed, rank, optimizer_class, kwargs, **zero_kwargs):
    """DDP training with ZeroRedundancyOptimizer; returns DDP and the optimizer."""
    ddp = DDP(model(seed))
    zero = ZeroRedundancyOptimizer(ddp.parameters(), optimizer_class, **zero_kwargs, **kwargs)
    train(ddp, zero, seed, rank)
    return ddp, zero


def train(ddp, zero, seed, rank):
    for step in range(STEPS):
        zero.zero_grad()
        ddp(batch(seed, step, rank)).pow(2).mean().backward()
        zero.step()


def assert_same_params(got, want):
    for p, q in zip(got.parameters(), want.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)


def torch_partition(shapes_per_group, world_size):
    """torch's own ZeroRedundancyOptimizer._partition_parameters on tensors of these shapes, as
    (group, index in group) pairs per rank and group."""
    tensors = [[torch.zeros(s) for s in shapes] for shapes in shapes_per_group]
    where = {id(t): (g, i) for g, ts in enumerate(tensors) for i, t in enumerate(ts)}
    fake = types.SimpleNamespace(_partition_parameters_cache=[], world_size=world_size,
                                 param_groups=[{"params": ts} for ts in tensors])
    fake._get_min_index = lambda values, disallowed=None: TorchZeRO._get_min_index(
        fake, values, disallowed)
    fake._partition_param_group = lambda group, per_rank: TorchZeRO._partition_param_group(
        fake, group, per_rank)
    parts = TorchZeRO._partition_parameters(fake)
    return [[[where[id(t)] for t in g["params"]] for g in rank_groups] for rank_groups in parts]


def check_partition(rank):
    shapes = [[(7,), (3, 4), (5,), (2, 2), (10,), (1,)], [(6,), (6,), (2,), (3, 3)]]
    params = [[genesis.zeros(s, requires_grad=True) for s in group] for group in shapes]
    where = {id(p): (g, i) for g, ps in enumerate(params) for i, p in enumerate(ps)}
    zero = ZeroRedundancyOptimizer([{"params": ps} for ps in params], genesis.optim.SGD, lr=0.1)
    got = [[[where[id(p)] for p in g["params"]] for g in rank_groups]
           for rank_groups in zero._partition_parameters()]
    assert got == torch_partition(shapes, 2)
    mine = [where[id(p)] for g in zero.optim.param_groups for p in g["params"]]
    assert mine == [pair for group in got[rank] for pair in group]


def check_training(rank, seed):
    """Same parameters as the reference on every rank; state held for this rank's shard only."""
    for optimizer_class, kwargs in OPTIMIZERS:
        net, _ = reference(seed, optimizer_class, kwargs)
        ddp, zero = sharded(seed, rank, optimizer_class, kwargs)
        assert_same_params(ddp.module, net)
        shard = [p for g in zero._partition_parameters()[rank] for p in g["params"]]
        assert shard and {id(p) for p in zero.optim.state} == {id(p) for p in shard}
        assert all(zero.optim.state[p] for p in shard) and not zero.state


def check_state_dict(rank, seed):
    """consolidate_state_dict(to=1) then state_dict on rank 1: the reference's whole state;
    rank 0 gets torch's error. Loaded into a fresh optimizer, each rank keeps its shard."""
    optimizer_class, kwargs = OPTIMIZERS[1]
    _, opt = reference(seed, optimizer_class, kwargs)
    ddp, zero = sharded(seed, rank, optimizer_class, kwargs)
    zero.consolidate_state_dict(to=1)
    if rank == 0:
        with pytest.raises(RuntimeError, match=r"Optimizer state has not been consolidated on "
                           r"this rank. Please call `consolidate_state_dict\(to=0\)` on all "
                           r"ranks beforehand if you meant to save the global state."):
            zero.state_dict()
    full = [zero.state_dict() if rank == 1 else None]
    dist.broadcast_object_list(full, src=1)
    want = opt.state_dict()
    assert list(full[0]["state"]) == list(want["state"]) == [0, 1, 2, 3]
    assert full[0]["param_groups"] == want["param_groups"]
    for index, state in want["state"].items():
        for key, value in state.items():
            np.testing.assert_allclose(full[0]["state"][index][key].numpy(), value.numpy(),
                                       rtol=1e-5, atol=1e-7)
    fresh = ZeroRedundancyOptimizer(ddp.parameters(), optimizer_class, **kwargs)
    fresh.load_state_dict(full[0])
    index = {id(p): i for i, p in enumerate(ddp.parameters())}
    assert {id(p) for p in fresh.optim.state} == {id(p) for p in zero.optim.state}
    for p, state in fresh.optim.state.items():
        for key, value in state.items():
            np.testing.assert_array_equal(
                value.numpy(), full[0]["state"][index[id(p)]][key].numpy())


def check_bucket_view(rank, seed):
    """parameters_as_bucket_view trains as the reference does; parameters view the buckets."""
    for optimizer_class, kwargs in OPTIMIZERS:
        net, _ = reference(seed, optimizer_class, kwargs)
        ddp, zero = sharded(seed, rank, optimizer_class, kwargs, parameters_as_bucket_view=True)
        assert_same_params(ddp.module, net)
        for r, bucket in enumerate(zero._buckets[0]):
            shard = [p for g in zero._partition_parameters()[r] for p in g["params"]]
            assert bucket.numel() == sum(p.numel() for p in shard)
            assert all(np.shares_memory(p.detach().numpy(), bucket.numpy()) for p in shard)


def check_add_param_group(rank, seed):
    """A group added after construction joins the partition and trains with its own lr."""
    optimizer_class, kwargs = OPTIMIZERS[0]
    net, _ = reference(seed, optimizer_class, kwargs, lrs=(0.1, 0.05))
    ddp = DDP(model(seed))
    first, second = groups(ddp.module, (0.1, 0.05))
    zero = ZeroRedundancyOptimizer(first["params"], optimizer_class, **kwargs)
    zero.add_param_group(second)
    assert len(zero.param_groups) == len(zero.optim.param_groups) == 2
    assert zero.optim.param_groups[1]["lr"] == 0.05
    train(ddp, zero, seed, rank)
    assert_same_params(ddp.module, net)


def check_join(rank, seed):
    """Under Join with uneven inputs (rank 1 has one batch fewer) the joined rank keeps
    broadcasting its shard, and both ranks end with the same parameters."""
    optimizer_class, kwargs = OPTIMIZERS[0]
    ddp = DDP(model(seed))
    zero = ZeroRedundancyOptimizer(ddp.parameters(), optimizer_class, **kwargs)
    assert zero.join_device == genesis.device("cpu")
    assert zero.join_process_group is dist.group.WORLD
    with Join([ddp, zero]):
        for step in range(STEPS - rank):
            zero.zero_grad()
            ddp(batch(seed, step, rank)).pow(2).mean().backward()
            zero.step()
    every = [None, None]
    dist.all_gather_object(every, [p.detach().numpy() for p in ddp.parameters()])
    for a, b in zip(*every):
        np.testing.assert_array_equal(a, b)
    assert not np.allclose(every[0][0], model(seed)[0].weight.detach().numpy())


def run(rank, world, port, seed):
    start(rank, world, port)
    try:
        check_partition(rank)
        check_training(rank, seed)
        check_state_dict(rank, seed)
        check_bucket_view(rank, seed)
        check_add_param_group(rank, seed)
        check_join(rank, seed)
    finally:
        dist.destroy_process_group()
