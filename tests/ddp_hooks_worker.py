"""Checks that tests/test_distributed_api.py runs inside each rank of a two-rank gloo job: DDP
communication hooks, join with uneven inputs, object point-to-point and subgroups. Every rank
builds both ranks' data from the job's seed, so it computes each expected result itself."""

import os

import ml_dtypes
import numpy as np
import pytest

import genesis
import genesis.distributed as dist
from genesis import nn
from genesis.distributed.algorithms.ddp_comm_hooks import (DDPCommHookType, default_hooks,
                                                           register_ddp_comm_hook)
from genesis.nn.parallel import DistributedDataParallel as DDP

TINY_BUCKETS = 1e-5  # MB: one parameter per bucket


def start(rank, world, port):
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)


def model(seed, out=3):
    genesis.manual_seed(seed)
    return nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, out))


def batch(seed, step, rank):
    rng = np.random.default_rng([seed, step, rank])
    return genesis.tensor(rng.standard_normal((6, 4)).astype(np.float32))


def local_grads(net, x):
    """Each parameter's gradient of the loss on `x` alone, as numpy arrays."""
    net.zero_grad()
    net(x).pow(2).mean().backward()
    return [p.grad.numpy().copy() for p in net.parameters()]


def hooked_grads(seed, rank, hook=None, state=None, register=None):
    ddp = DDP(model(seed), bucket_cap_mb=TINY_BUCKETS)
    if hook is not None:
        ddp.register_comm_hook(state, hook)
    if register is not None:
        register(ddp)
    ddp(batch(seed, 0, rank)).pow(2).mean().backward()
    return ddp, [p.grad.numpy() for p in ddp.module.parameters()]


def compressed_average(grads, dtype):
    """Both ranks' gradients rounded to `dtype`, halved there, summed in float32 and rounded
    once more (the gloo sum of half types), back in float32."""
    halves = [(g.astype(dtype) / dtype(2)).astype(np.float32) for g in grads]
    return (halves[0] + halves[1]).astype(dtype).astype(np.float32)


def check_hooks(rank, seed):
    per_rank = [local_grads(model(seed), batch(seed, 0, r)) for r in range(2)]
    mean = [(a / 2 + b / 2) for a, b in zip(*per_rank)]
    for hook in (None, default_hooks.allreduce_hook):
        for got, want in zip(hooked_grads(seed, rank, hook)[1], mean):
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    halves = {default_hooks.fp16_compress_hook: np.float16,
              default_hooks.fp16_compress_wrapper(default_hooks.allreduce_hook): np.float16,
              default_hooks.bf16_compress_hook: ml_dtypes.bfloat16,
              default_hooks.bf16_compress_wrapper(default_hooks.allreduce_hook):
                  ml_dtypes.bfloat16}
    for hook, dtype in halves.items():
        for got, *grads in zip(hooked_grads(seed, rank, hook)[1], *per_rank):
            np.testing.assert_array_equal(got, compressed_average(grads, dtype))
    builtin = hooked_grads(seed, rank, register=lambda m: m._register_builtin_comm_hook(
        dist.BuiltinCommHookType.FP16_COMPRESS))[1]
    for got, *grads in zip(builtin, *per_rank):
        np.testing.assert_array_equal(got, compressed_average(grads, np.float16))
    noop = hooked_grads(seed, rank, register=lambda m: register_ddp_comm_hook(
        DDPCommHookType.NOOP, m))[1]
    for got, want in zip(noop, per_rank[rank]):
        np.testing.assert_allclose(got, want, rtol=1e-6)
    check_grad_buckets(rank, seed, per_rank)


def check_grad_buckets(rank, seed, per_rank):
    """A hook sees GradBucket's API: index, is_last, parameters and gradient views."""
    seen = []

    def recording_hook(state, bucket):
        assert state == "state"
        seen.append((bucket.index(), bucket.is_last(), bucket.parameters(),
                     [g.numpy().copy() for g in bucket.gradients()]))
        return default_hooks.allreduce_hook(None, bucket)
    ddp = hooked_grads(seed, rank, recording_hook, "state")[0]
    params = list(ddp.module.parameters())
    assert [s[0] for s in seen] == list(range(len(params)))
    assert [s[1] for s in seen] == [False] * (len(params) - 1) + [True]
    for (_, _, bucket_params, grads), p, want in zip(seen, params[::-1], per_rank[rank][::-1]):
        assert bucket_params == [p] and grads[0].shape == tuple(p.shape)
        np.testing.assert_allclose(grads[0], want, rtol=1e-6)
    with pytest.raises(RuntimeError, match="can only be called once"):
        ddp.register_comm_hook(None, default_hooks.allreduce_hook)
    with pytest.raises(TypeError, match="must be callable"):
        DDP(model(seed)).register_comm_hook(None, 3)


def joined_training(seed, rank, steps, **join_kwargs):
    """Train with join on `steps[rank]` batches; the final parameters as numpy arrays."""
    ddp = DDP(model(seed, out=1))
    opt = genesis.optim.SGD(ddp.parameters(), lr=0.1)
    with ddp.join(**join_kwargs):
        for step in range(steps[rank]):
            opt.zero_grad()
            ddp(batch(seed, step, rank)).pow(2).mean().backward()
            opt.step()
    return [p.detach().numpy() for p in ddp.module.parameters()]


def reference_training(seed, steps, divide_by_initial_world_size):
    """One process: each step's gradient is the sum of the active ranks' over the world size
    (or over the number of active ranks), as DDP's join documents."""
    net = model(seed, out=1)
    for step in range(max(steps)):
        active = [r for r in range(2) if step < steps[r]]
        grads = [local_grads(net, batch(seed, step, r)) for r in active]
        divisor = 2 if divide_by_initial_world_size else len(active)
        with genesis.no_grad():
            for k, p in enumerate(net.parameters()):
                p -= 0.1 * genesis.tensor(sum(g[k] for g in grads) / divisor)
    return [p.detach().numpy() for p in net.parameters()]


def check_join(rank, seed):
    steps = [2, 4]
    for divide in (True, False):
        got = joined_training(seed, rank, steps, divide_by_initial_world_size=divide)
        for g, want in zip(got, reference_training(seed, steps, divide)):
            np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-6)
    expected = "exhausted all inputs" if rank == 0 else "Detected at least one rank"
    with pytest.raises(RuntimeError, match=expected):
        joined_training(seed, rank, [1, 3], throw_on_early_termination=True)
    ddp = DDP(model(seed))
    assert ddp.join_device == genesis.device("cpu") and ddp.join_process_group is dist.group.WORLD
    assert not ddp.will_sync_module_buffers() and ddp.broadcast_buffers
    ddp.broadcast_buffers = False
    assert ddp.forward_sync_buffers is False


def check_objects_and_subgroups(rank):
    objects = [{"a": 1}, "two", [3.0]] if rank == 0 else [None] * 3
    if rank == 0:
        dist.send_object_list(objects, dst=1)
    else:
        assert dist.recv_object_list(objects, src=0) == 0
    assert objects == [{"a": 1}, "two", [3.0]]
    before = dist.get_pg_count()
    mine, every = dist.new_subgroups(group_size=1)
    assert len(every) == 2 and dist.get_process_group_ranks(mine) == [rank]
    assert dist.get_pg_count() == before + 1
    mine, every = dist.new_subgroups_by_enumeration([[0, 1]])
    assert dist.get_world_size(mine) == 2 and len(every) == 1
    t = genesis.tensor([float(rank + 1)])
    assert dist.all_reduce(t, async_op=True).get_future().wait()[0].tolist() == [3.0]
    with pytest.raises(ValueError, match="has appeared in both subgroup"):
        dist.new_subgroups_by_enumeration([[0, 1], [1]])


def run(rank, world, port, seed):
    start(rank, world, port)
    try:
        check_hooks(rank, seed)
        check_join(rank, seed)
        check_objects_and_subgroups(rank)
    finally:
        dist.destroy_process_group()
