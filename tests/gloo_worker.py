"""Checks that tests/test_distributed_gloo.py runs inside each rank of a gloo job started by
genesis.multiprocessing.spawn. Every rank builds every rank's inputs from the job's seed, so it
can compute each expected result with numpy; a failed check raises, which fails the spawn."""

import functools
import os
from datetime import timedelta

import numpy as np
import pytest

import genesis
import genesis.distributed as dist
from genesis import nn
from genesis.nn.parallel import DistributedDataParallel as DDP

R = dist.ReduceOp
NUMPY_OPS = {R.SUM: np.add, R.AVG: np.add, R.PRODUCT: np.multiply, R.MIN: np.minimum,
             R.MAX: np.maximum, R.BAND: np.bitwise_and, R.BOR: np.bitwise_or,
             R.BXOR: np.bitwise_xor}
FLOAT_OPS = [R.SUM, R.AVG, R.PRODUCT, R.MIN, R.MAX]
INT_OPS = [R.SUM, R.PRODUCT, R.MIN, R.MAX, R.BAND, R.BOR, R.BXOR]
DTYPES = {genesis.float32: FLOAT_OPS, genesis.float64: FLOAT_OPS, genesis.float16: FLOAT_OPS,
          genesis.bfloat16: FLOAT_OPS, genesis.int64: INT_OPS, genesis.int32: INT_OPS,
          genesis.uint8: INT_OPS, genesis.bool: INT_OPS}


def start(rank, world, port, init_method=None):
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=world)
    assert dist.get_backend() == "gloo" and dist.get_world_size() == world


class Inputs:
    """Every rank's pseudo-random tensor of a given shape and dtype, the same on all ranks."""

    def __init__(self, seed):
        self.seed, self.calls = seed, 0

    def every(self, shape, dtype, world):
        self.calls += 1
        rng = np.random.default_rng([self.seed, self.calls])
        if dtype == genesis.bool:
            return [genesis.tensor(rng.random(shape) < 0.5) for _ in range(world)]
        low, high = (0, 6) if dtype == genesis.uint8 else (-3, 4)
        values = [rng.integers(low, high, shape) if not dtype.is_floating_point else
                  rng.uniform(-2, 2, shape) for _ in range(world)]
        return [genesis.tensor(v, dtype=dtype) for v in values]


def expected(tensors, op):
    """The ranks' arrays folded in rank order (half types in float32, rounded once)."""
    arrays = [t.numpy() for t in tensors]
    half = tensors[0].dtype in (genesis.float16, genesis.bfloat16)
    work = [a.astype(np.float32) if half else a for a in arrays]
    out = functools.reduce(NUMPY_OPS[op], work)
    return (out / len(arrays) if op is R.AVG else out).astype(arrays[0].dtype)


def same(actual, want):
    np.testing.assert_array_equal(np.asarray(actual.numpy(), dtype=np.float64),
                                  np.asarray(want, dtype=np.float64))


def check_all_reduce(rank, world, inputs):
    """Every dtype and op, bit-identical to numpy's rank-order fold; a tensor with fewer
    elements than ranks; async Works."""
    for dtype, ops in DTYPES.items():
        for op in ops:
            every = inputs.every((5, 3), dtype, world)
            mine = every[rank].clone()
            dist.all_reduce(mine, op)
            same(mine, expected(every, op))
    every = inputs.every((world - 1,), genesis.float32, world)
    mine = every[rank].clone()
    work = dist.all_reduce(mine, R.MAX, async_op=True)
    assert work.wait() and work.is_completed()
    same(mine, expected(every, R.MAX))
    scalars = [genesis.tensor(float(r + 1)) for r in range(world)]
    mine = scalars[rank].clone()
    dist.all_reduce(mine)
    assert mine.item() == world * (world + 1) / 2


def check_rooted(rank, world, inputs):
    """broadcast, reduce, gather and scatter from and to a rank other than 0."""
    root = world - 1
    every = inputs.every((4, 3), genesis.float32, world)
    mine = every[rank].clone()
    dist.broadcast(mine, src=root)
    same(mine, every[root].numpy())
    every = inputs.every((7,), genesis.float64, world)
    mine = every[rank].clone()
    dist.reduce(mine, dst=root, op=R.SUM)
    if rank == root:
        same(mine, expected(every, R.SUM))
    every = inputs.every((2, 2), genesis.int64, world)
    gathered = [genesis.empty(2, 2, dtype=genesis.int64) for _ in range(world)]
    dist.gather(every[rank], gathered if rank == root else None, dst=root)
    if rank == root:
        for got, want in zip(gathered, every):
            same(got, want.numpy())
    out = genesis.empty(3)
    source = inputs.every((3,), genesis.float32, world)
    dist.scatter(out, source if rank == 1 else None, src=1)
    same(out, source[rank].numpy())


def check_gathers_and_scatters(rank, world, inputs):
    every = inputs.every((2, 3), genesis.float32, world)
    flat = genesis.empty(world * 2, 3)
    dist.all_gather_single(flat, every[rank])
    same(flat, np.concatenate([t.numpy() for t in every]))
    listed = [genesis.empty(2, 3) for _ in range(world)]
    dist.all_gather(listed, every[rank], async_op=True).wait()
    for got, want in zip(listed, every):
        same(got, want.numpy())
    for op in (R.SUM, R.MAX):
        every = inputs.every((world * 2, 3), genesis.float32, world)
        out = genesis.empty(2, 3)
        dist.reduce_scatter_single(out, every[rank], op)
        same(out, expected(every, op)[2 * rank:2 * rank + 2])
    every = [inputs.every((4,), genesis.float32, world) for _ in range(world)]
    out = genesis.empty(4)
    dist.reduce_scatter(out, [every[j][rank] for j in range(world)])
    same(out, expected(every[rank], R.SUM))


def check_all_to_all(rank, world, inputs):
    """Equal and uneven splits: rank r sends r + j + 1 rows to rank j."""
    every = inputs.every((world * 2, 3), genesis.float32, world)
    out = genesis.empty(world * 2, 3)
    dist.all_to_all_single(out, every[rank])
    same(out, np.concatenate([t.numpy()[2 * rank:2 * rank + 2] for t in every]))
    sends = [[r + j + 1 for j in range(world)] for r in range(world)]
    every = [genesis.tensor(np.random.default_rng([r, 7]).uniform(size=(sum(sends[r]), 2)),
                            dtype=genesis.float32) for r in range(world)]
    out = genesis.empty(sum(sends[r][rank] for r in range(world)), 2)
    dist.all_to_all_single(out, every[rank], [sends[r][rank] for r in range(world)], sends[rank])
    starts = [np.cumsum([0] + s) for s in sends]
    same(out, np.concatenate([every[r].numpy()[starts[r][rank]:starts[r][rank + 1]]
                              for r in range(world)]))
    outs = [genesis.empty(2) for _ in range(world)]
    ins = [genesis.full((2,), float(10 * rank + j)) for j in range(world)]
    dist.all_to_all(outs, ins)
    assert [o.tolist() for o in outs] == [[10.0 * r + rank] * 2 for r in range(world)]


def check_point_to_point(rank, world):
    """A ring of isend/irecv, tags matched out of order, a receive from any source,
    batch_isend_irecv."""
    right, left = (rank + 1) % world, (rank - 1) % world
    got = genesis.empty(3)
    works = [dist.isend(genesis.full((3,), float(rank)), right), dist.irecv(got, left)]
    for work in works:
        work.wait()
    assert got.tolist() == [float(left)] * 3
    if rank == 0:
        dist.send(genesis.tensor([1.0]), 1, tag=1)
        dist.send(genesis.tensor([2.0]), 1, tag=2)
    elif rank == 1:
        second, first = genesis.empty(1), genesis.empty(1)
        dist.recv(second, 0, tag=2)
        dist.recv(first, 0, tag=1)
        assert (first.item(), second.item()) == (1.0, 2.0)
    if rank == 0:
        senders = set()
        for _ in range(world - 1):
            box = genesis.empty(1, dtype=genesis.int64)
            sender = dist.recv(box, tag=5)
            assert box.item() == sender * 100
            senders.add(sender)
        assert senders == set(range(1, world))
    else:
        dist.send(genesis.tensor([rank * 100]), 0, tag=5)
    got = genesis.empty(2, dtype=genesis.int32)
    mine = genesis.full((2,), rank, dtype=genesis.int32)
    ops = [dist.P2POp(dist.irecv, got, left), dist.P2POp(dist.isend, mine, right)]
    for work in dist.batch_isend_irecv(ops):
        work.wait()
    assert got.tolist() == [left, left]
    with pytest.raises(ValueError, match="destination rank should not be the same"):
        dist.send(got, rank)


def check_groups(rank, world, inputs):
    """A group of the first and last ranks: collectives and p2p in group ranks; the middle
    rank is not a member."""
    ends = dist.new_group([0, world - 1])
    every = inputs.every((6,), genesis.float32, world)
    if rank not in (0, world - 1):
        assert ends == dist.GroupMember.NON_GROUP_MEMBER and dist.get_rank(ends) == -1
        return
    assert dist.get_rank(ends) == (rank > 0) and dist.get_world_size(ends) == 2
    mine = every[rank].clone()
    dist.all_reduce(mine, R.MIN, group=ends)
    same(mine, expected([every[0], every[world - 1]], R.MIN))
    dist.broadcast(mine, group=ends, group_src=1)
    box = genesis.empty(1)
    if rank == 0:
        dist.send(genesis.tensor([3.5]), group=ends, group_dst=1)
    else:
        assert dist.recv(box, group=ends, group_src=0) == 0 and box.item() == 3.5
    dist.barrier(group=ends)


def check_objects_and_barriers(rank, world):
    objects = [None] * world
    dist.all_gather_object(objects, {"rank": rank})
    assert objects == [{"rank": r} for r in range(world)]
    shared = [("from", rank), None] if rank == 0 else [None, None]
    dist.broadcast_object_list(shared, src=0)
    assert shared[0] == ("from", 0)
    assert dist.barrier(async_op=True).wait()
    dist.monitored_barrier(timeout=timedelta(seconds=30), wait_all_ranks=True)


def check_errors(rank, world):
    """PyTorch's errors, raised before anything is sent (so the ranks stay in step)."""
    with pytest.raises(RuntimeError, match=r"Cannot use ReduceOp.BAND with non-integral dtype"):
        dist.all_reduce(genesis.ones(2), R.BAND)
    with pytest.raises(ValueError, match="AVG needs a floating-point tensor"):
        dist.all_reduce(genesis.ones(2, dtype=genesis.int64), R.AVG)
    with pytest.raises(ValueError, match="Tensors must be contiguous"):
        dist.all_reduce(genesis.ones(3, 2).t())
    with pytest.raises(ValueError, match="Invalid usage of tensors with different dtypes"):
        dist.all_gather_single(genesis.empty(world, dtype=genesis.float64), genesis.ones(1))


def collectives(rank, world, port, seed):
    """Every collective, p2p, groups and errors in a world of `world` ranks."""
    start(rank, world, port)
    inputs = Inputs(seed)
    check_all_reduce(rank, world, inputs)
    check_rooted(rank, world, inputs)
    check_gathers_and_scatters(rank, world, inputs)
    check_all_to_all(rank, world, inputs)
    check_point_to_point(rank, world)
    check_groups(rank, world, inputs)
    check_objects_and_barriers(rank, world)
    check_errors(rank, world)
    dist.destroy_process_group()
    assert not dist.is_initialized()


def model(seed):
    genesis.manual_seed(seed)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))


def train(net, batches, steps=3):
    opt = genesis.optim.SGD(net.parameters(), lr=0.1)
    for x, y in batches[:steps]:
        opt.zero_grad()
        nn.functional.mse_loss(net(x), y).backward()
        opt.step()


def ddp_and_timeouts(rank, world, port, seed):
    """DDP over the ranks' shards of each batch against one process on the whole batch; a
    group's timeout; monitored_barrier naming a rank that did not come."""
    start(rank, world, port, init_method=f"tcp://127.0.0.1:{port}")
    rng = np.random.default_rng(seed)
    batches = [(genesis.tensor(rng.normal(size=(4 * world, 4)), dtype=genesis.float32),
                genesis.tensor(rng.normal(size=(4 * world, 2)), dtype=genesis.float32))
               for _ in range(3)]
    shards = [(x[4 * rank:4 * rank + 4], y[4 * rank:4 * rank + 4]) for x, y in batches]
    ddp, alone = DDP(model(seed + rank)), model(seed)
    train(ddp, shards)
    train(alone, batches)
    for p, q in zip(ddp.module.parameters(), alone.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)
    check_timeouts(rank)
    dist.destroy_process_group()


def check_timeouts(rank):
    """Rank 1 skips a collective of a group with a short timeout, and is late for a
    monitored_barrier: both sides fail in time with PyTorch's messages."""
    pair = dist.new_group([0, 1], timeout=timedelta(seconds=0.3))
    if rank == 0:
        with pytest.raises(dist.DistBackendError, match="timed out after 0.3 s waiting for "
                                                        "rank 1"):
            dist.all_reduce(genesis.ones(2), group=pair)
        with pytest.raises(RuntimeError, match=r"\[Rank 0\]: Rank 1 failed to pass "
                                               r"monitoredBarrier in 300 ms"):
            dist.monitored_barrier(timeout=timedelta(seconds=0.3))
    dist.barrier()
    if rank == 1:
        with pytest.raises(RuntimeError, match="Rank 1 successfully reached monitoredBarrier"):
            dist.monitored_barrier(timeout=timedelta(seconds=0.3))
    dist.barrier()
