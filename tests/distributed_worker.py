"""Checks run inside each rank of a job by tests/test_distributed.py (MPI, CPU tensors) and,
with the argument `cuda`, on GPUs over NCCL:

    python -m genesis.distributed.run --nproc-per-node 2 tests/distributed_worker.py cuda

Every rank runs every check; a failed check raises, which makes the job exit non-zero with the
traceback on stderr. The last line of stdout of rank 0 is "all checks passed".
"""

import os
import sys
from functools import partial

import numpy as np

sys.path.insert(0, ".")

import genesis  # noqa: E402
import genesis.distributed as dist  # noqa: E402
from genesis import nn  # noqa: E402
from genesis.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

DEVICE = "cuda" if "cuda" in sys.argv[1:] else "cpu"
on_device = partial(genesis.tensor, device=DEVICE)
empty = partial(genesis.empty, device=DEVICE)
ones = partial(genesis.ones, device=DEVICE)
full = partial(genesis.full, device=DEVICE)

OPS = {dist.ReduceOp.SUM: np.sum, dist.ReduceOp.AVG: np.mean, dist.ReduceOp.MAX: np.max,
       dist.ReduceOp.MIN: np.min, dist.ReduceOp.PRODUCT: np.prod}
DTYPES = {"float32": (genesis.float32, 1e-6), "float64": (genesis.float64, 1e-12),
          "int64": (genesis.int64, 0), "bfloat16": (genesis.bfloat16, 1e-2)}


def rank_data(shape, rank, dtype="float32"):
    """The same pseudo-random array on every rank for a given `rank` (so each can check all)."""
    values = np.random.default_rng(1000 + rank).uniform(-2, 2, shape)
    return values.round() if dtype == "int64" else values


def tensor(values, dtype):
    return on_device(values, dtype=DTYPES[dtype][0])


def host(t):
    return t.detach().cpu().numpy()


def close(actual, expected, dtype, world=1):
    """Within the dtype's tolerance; NCCL reduces bfloat16 in bfloat16, rounding each of its
    world - 1 partial results (half an ulp of at most 8, 2**-5, each), where MPI rounds once."""
    tol = DTYPES[dtype][1]
    atol = tol + (world - 1) * 2.0 ** -5 if dtype == "bfloat16" and DEVICE == "cuda" else tol
    np.testing.assert_allclose(np.asarray(actual, dtype=np.float64), expected, rtol=tol,
                               atol=atol)


def check_all_reduce(rank, world):
    for dtype in DTYPES:
        for op, fn in OPS.items():
            if op is dist.ReduceOp.AVG and dtype == "int64":
                continue
            every = [rank_data((3, 5), r, dtype) for r in range(world)]
            t = tensor(every[rank], dtype)
            dist.all_reduce(t, op)
            expected = host(tensor(fn(np.stack(every), axis=0), dtype).to(genesis.float64))
            close(host(t.to(genesis.float64)), expected, dtype, world)


def check_async_and_views(rank, world):
    every = [rank_data((4, 6), r) for r in range(world)]
    t = on_device(every[rank], dtype=genesis.float32)
    work = dist.all_reduce(t[1:3], async_op=True)
    work.wait()
    assert work.is_completed()
    expected = np.array(every[rank], dtype=np.float32)
    expected[1:3] = np.sum(np.stack(every), axis=0)[1:3]
    close(host(t), expected, "float32")
    zero_d = on_device(float(rank + 1))
    dist.all_reduce(zero_d)
    close(zero_d.item(), world * (world + 1) / 2, "float32")
    dist.all_reduce(empty(0))


def check_broadcast_and_reduce(rank, world):
    for src in range(world):
        t = on_device(rank_data((7,), rank), dtype=genesis.float64)
        dist.broadcast(t, src)
        close(host(t), rank_data((7,), src), "float64")
    for dst in range(world):
        t = on_device(rank_data((2, 3), rank), dtype=genesis.float64)
        dist.reduce(t, dst, dist.ReduceOp.MAX)
        mine = rank_data((2, 3), rank)
        expected = np.max([rank_data((2, 3), r) for r in range(world)], axis=0) \
            if rank == dst else mine
        close(host(t), expected, "float64")


def check_gathers(rank, world):
    every = [rank_data((2, 3), r) for r in range(world)]
    for dtype in ("float32", "bfloat16"):
        out = empty((2 * world, 3), dtype=DTYPES[dtype][0])
        dist.all_gather_single(out, tensor(every[rank], dtype))
        close(host(out.to(genesis.float64)),
              host(tensor(np.concatenate(every), dtype).to(genesis.float64)), dtype)
    parts = [empty((2, 3)) for _ in range(world)]
    dist.all_gather(parts, on_device(every[rank], dtype=genesis.float32))
    for part, values in zip(parts, every):
        close(host(part), values, "float32")
    gathered = [empty((2, 3)) for _ in range(world)] if rank == world - 1 else None
    dist.gather(on_device(every[rank], dtype=genesis.float32), gathered, dst=world - 1)
    if gathered is not None:
        for part, values in zip(gathered, every):
            close(host(part), values, "float32")
    mine = empty((2, 3))
    dist.scatter(mine, [on_device(v, dtype=genesis.float32) for v in every]
                 if rank == 0 else None, src=0)
    close(host(mine), every[rank], "float32")
    objects = [None] * world
    dist.all_gather_object(objects, {"rank": rank})
    assert objects == [{"rank": r} for r in range(world)]


def check_reduce_scatter(rank, world):
    every = [rank_data((3 * world, 2), r) for r in range(world)]
    for op in (dist.ReduceOp.SUM, dist.ReduceOp.AVG, dist.ReduceOp.MIN):
        out = empty((3, 2), dtype=genesis.float64)
        dist.reduce_scatter_single(out, on_device(every[rank], dtype=genesis.float64), op)
        close(host(out), OPS[op](np.stack(every), axis=0)[3 * rank:3 * rank + 3], "float64")


def check_errors(rank, world):
    expect_error(ValueError, "Tensors must be contiguous",
                 lambda: dist.all_reduce(ones(3, 4).t()))
    expect_error(ValueError, "AVG needs a floating-point",
                 lambda: dist.all_reduce(ones(3, dtype=genesis.int64),
                                         dist.ReduceOp.AVG))
    expect_error(ValueError, "world_size",
                 lambda: dist.all_gather_single(empty(5), empty(3)))
    expect_error(ValueError, f"is not a rank of a world of {world}",
                 lambda: dist.broadcast(empty(1), world))


def expect_error(kind, text, fn):
    try:
        fn()
    except kind as e:
        assert text in str(e), str(e)
    else:
        raise AssertionError(f"expected {kind.__name__} containing {text!r}")


class Net(nn.Module):
    """Two layers and a branch that only some inputs take (for find_unused_parameters)."""

    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.extra = nn.Linear(5, 8), nn.Linear(8, 3), nn.Linear(8, 3)

    def forward(self, x, use_extra=False):
        h = self.fc1(x).tanh()
        return self.fc2(h) + (self.extra(h) if use_extra else 0)


def make_batch(world, per_rank):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((world * per_rank, 5)).astype(np.float32)
    y = rng.standard_normal((world * per_rank, 3)).astype(np.float32)
    return on_device(x), on_device(y)


def loss_of(model, x, y, **kwargs):
    return ((model(x, **kwargs) - y) ** 2).mean()


def reference_grads(world, per_rank, steps=1, **kwargs):
    """Gradients of one process on the whole concatenated batch, from rank 0's weights."""
    genesis.manual_seed(0)
    model = Net().to(DEVICE)
    x, y = make_batch(world, per_rank)
    for _ in range(steps):
        loss_of(model, x, y, **kwargs).backward()
    return model


def ddp_model(rank, **kwargs):
    genesis.manual_seed(rank)  # rank 0's weights must reach every rank
    return DDP(Net().to(DEVICE), bucket_cap_mb=1e-4, **kwargs)


def shard(rank, world, per_rank):
    x, y = make_batch(world, per_rank)
    return x[rank * per_rank:(rank + 1) * per_rank], y[rank * per_rank:(rank + 1) * per_rank]


def compare_grads(ddp, reference, scale=1.0):
    for (name, p), q in zip(ddp.module.named_parameters(), reference.parameters()):
        if q.grad is None:
            assert p.grad is None, name
            continue
        np.testing.assert_allclose(host(p.grad) * scale, host(q.grad), rtol=1e-5,
                                   atol=1e-6, err_msg=name)


def check_ddp(rank, world):
    per_rank = 4
    ddp = ddp_model(rank)
    assert len(ddp.reducer.buckets) > 1  # a tiny cap: several buckets in flight
    reference = reference_grads(world, per_rank, use_extra=True)
    for p, q in zip(ddp.module.parameters(), reference.parameters()):
        np.testing.assert_array_equal(host(p), host(q))
    x, y = shard(rank, world, per_rank)
    loss_of(ddp, x, y, use_extra=True).backward()
    compare_grads(ddp, reference)
    assert set(ddp.state_dict()) == {"module." + k for k in ddp.module.state_dict()}


def check_no_sync(rank, world):
    """Two micro-batches: one inside no_sync, then a synced one; the sum of both is averaged."""
    per_rank = 4
    ddp = ddp_model(rank)
    reference = reference_grads(world, per_rank, steps=2, use_extra=True)
    x, y = shard(rank, world, per_rank)
    with ddp.no_sync():
        loss_of(ddp, x, y, use_extra=True).backward()
    local = [host(p.grad).copy() for p in ddp.module.parameters()]
    loss_of(ddp, x, y, use_extra=True).backward()
    compare_grads(ddp, reference)
    if world > 1:  # the first backward stayed local: its gradient is the shard's own
        assert not np.allclose(local[0] * 2, host(ddp.module.fc1.weight.grad))


def check_unused(rank, world):
    """A branch used by rank 0 only: every rank gets rank 0's gradient over the world size; a
    branch no rank uses keeps `.grad` None; without find_unused_parameters the next forward
    says what happened."""
    per_rank = 4
    ddp = ddp_model(rank, find_unused_parameters=True)
    x, y = shard(rank, world, per_rank)
    loss_of(ddp, x, y, use_extra=rank == 0).backward()
    genesis.manual_seed(0)
    alone = Net().to(DEVICE)
    loss_of(alone, *shard(0, world, per_rank), use_extra=True).backward()
    np.testing.assert_allclose(host(ddp.module.extra.weight.grad) * world,
                               host(alone.extra.weight.grad), rtol=1e-5, atol=1e-7)
    unused_everywhere = ddp_model(rank, find_unused_parameters=True)
    loss_of(unused_everywhere, x, y).backward()
    assert unused_everywhere.module.extra.weight.grad is None
    assert unused_everywhere.module.fc1.weight.grad is not None
    strict = ddp_model(rank)
    loss_of(strict, x, y).backward()
    expect_error(RuntimeError, "find_unused_parameters=True", lambda: strict(x))


def amp_step(model, x, y, scaler):
    """One step as the main job takes it: autocast bf16, GradScaler, clipping to norm 1, SGD."""
    with genesis.autocast(DEVICE, dtype=genesis.bfloat16):
        loss = loss_of(model, x, y, use_extra=True)
    scaler.scale(loss).backward()
    optimizer = genesis.optim.SGD(model.parameters(), lr=0.1)
    scaler.unscale_(optimizer)
    genesis.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()


def check_autocast_grad_scaler_clipping(rank, world):
    """DDP under autocast with GradScaler and clipping: the step uses the mean of the ranks'
    unscaled gradients (clipped), and every rank ends with the same weights."""
    per_rank = 4
    ddp = ddp_model(rank)
    amp_step(ddp, *shard(rank, world, per_rank), genesis.amp.GradScaler(DEVICE))
    locals_ = []
    for r in range(world):
        genesis.manual_seed(0)
        alone = Net().to(DEVICE)
        with genesis.autocast(DEVICE, dtype=genesis.bfloat16):
            loss = loss_of(alone, *shard(r, world, per_rank), use_extra=True)
        loss.backward()
        locals_.append([host(p.grad) for p in alone.parameters()])
    genesis.manual_seed(0)
    reference = Net().to(DEVICE)
    with genesis.no_grad():
        for k, p in enumerate(reference.parameters()):
            p.grad = on_device(np.mean([g[k] for g in locals_], axis=0))
    genesis.nn.utils.clip_grad_norm_(reference.parameters(), 1.0)
    genesis.optim.SGD(reference.parameters(), lr=0.1).step()
    for p, q in zip(ddp.module.parameters(), reference.parameters()):
        np.testing.assert_allclose(host(p), host(q), rtol=1e-5, atol=1e-6)
    weights = [None] * world
    dist.all_gather_object(weights, [host(p) for p in ddp.module.parameters()])
    for other in weights:
        for a, b in zip(other, weights[0]):
            np.testing.assert_array_equal(a, b)


CHECKS = [check_all_reduce, check_async_and_views, check_broadcast_and_reduce, check_gathers,
          check_reduce_scatter, check_errors, check_ddp, check_no_sync, check_unused,
          check_autocast_grad_scaler_clipping]


def check_debug_mismatch(rank, world):
    """GENESIS_DISTRIBUTED_DEBUG=1: shapes that differ across ranks are an error on every rank."""
    expect_error(RuntimeError, "rank 0: all_reduce [((1,), 'genesis.float32')]",
                 lambda: dist.all_reduce(ones(rank + 1)))


def main():
    if DEVICE == "cuda":
        genesis.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)))
    dist.init_process_group("nccl" if DEVICE == "cuda" else "mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    checks = [check_debug_mismatch] if "debug" in sys.argv[1:] else CHECKS
    for check in checks:
        check(rank, world)
        dist.barrier()
    dist.destroy_process_group()
    if rank == 0:
        print("all checks passed", flush=True)


if __name__ == "__main__":
    main()
