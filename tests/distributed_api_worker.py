"""Checks of point-to-point, all_to_all, object collectives, subgroups and monitored_barrier,
run inside each rank by tests/test_distributed.py (MPI, CPU tensors) and, with the argument
`cuda`, on GPUs over NCCL:

    python -m genesis.distributed.run --nproc-per-node 3 tests/distributed_api_worker.py cuda

A failed check raises; the last line of stdout of rank 0 is "all checks passed".
"""

import sys
import time
import warnings
from datetime import timedelta

import numpy as np

sys.path.insert(0, ".")

import genesis  # noqa: E402
import genesis.distributed as dist  # noqa: E402
from distributed_worker import (DEVICE, close, empty, expect_error, host, on_device,  # noqa: E402
                                rank_data, tensor)


def check_send_recv(rank, world):
    """A ring of isend/irecv, rank 0 sending to each other rank by tag, and receives from any
    source returning the sender."""
    right, left = (rank + 1) % world, (rank - 1) % world
    got = empty((2, 3), dtype=genesis.bfloat16)
    sent = tensor(rank_data((2, 3), rank), "bfloat16")
    starts = [lambda: dist.isend(sent, right), lambda: dist.irecv(got, left)]
    if rank % 2:  # NCCL runs them in order on one stream: a rank's send waits for its receiver
        starts.reverse()
    for work in [start() for start in starts]:
        work.wait()
    close(host(got.float()), host(tensor(rank_data((2, 3), left), "bfloat16").float()),
          "float32")
    for tag in (3, 1):
        t = on_device(rank_data((4,), tag), dtype=genesis.float64)
        if rank == 0:
            for r in range(1, world):
                dist.send(t * r, r, tag=tag)
        else:
            got = empty(4, dtype=genesis.float64)
            assert dist.recv(got, 0, tag=tag) == 0
            close(host(got), rank_data((4,), tag) * rank, "float64")
    if DEVICE == "cpu":
        check_recv_any_source(rank, world)
    expect_error(ValueError, "Invalid destination rank: destination rank should not be the "
                             "same as the rank of the current process.",
                 lambda: dist.send(empty(1), rank))


def check_recv_any_source(rank, world):
    if rank == 0:
        senders = set()
        for _ in range(world - 1):
            got = empty(1, dtype=genesis.int64)
            sender = dist.recv(got)
            assert got.item() == 10 * sender, (got.item(), sender)
            senders.add(sender)
        assert senders == set(range(1, world))
    else:
        dist.send(on_device([10 * rank]), 0)


def check_batch_isend_irecv(rank, world):
    right, left = (rank + 1) % world, (rank - 1) % world
    got_left, got_right = empty(3, dtype=genesis.int64), empty(3, dtype=genesis.int64)
    ops = [dist.P2POp(dist.irecv, got_left, left),
           dist.P2POp(dist.isend, on_device([rank] * 3), right),
           dist.P2POp(dist.isend, on_device([-rank] * 3), left),
           dist.P2POp(dist.irecv, got_right, right)]
    works = dist.batch_isend_irecv(ops)
    assert len(works) == (1 if DEVICE == "cuda" else 4)
    for work in works:
        work.wait()
    assert got_left.tolist() == [left] * 3 and got_right.tolist() == [-right] * 3
    assert repr(ops[1]).startswith(f"P2POp(isend pg=0, group_src={rank}, group_dst={right}")
    expect_error(ValueError, "Invalid ``op``", lambda: dist.P2POp(dist.send, empty(1), 0))
    expect_error(TypeError, "Expected parameter `tensor` of type Tensor",
                 lambda: dist.P2POp(dist.isend, [1.0], 0))
    expect_error(ValueError, "Each op is expected to to be of type",
                 lambda: dist.batch_isend_irecv([]))


def splits(world):
    """Rows rank r sends rank j: uneven, some zero."""
    return [[(r + 2 * j) % 3 for j in range(world)] for r in range(world)]


def check_all_to_all_single(rank, world):
    every = [rank_data((2 * world, 3), r) for r in range(world)]
    out = empty((2 * world, 3), dtype=genesis.float64)
    work = dist.all_to_all_single(out, on_device(every[rank], dtype=genesis.float64),
                                  async_op=True)
    work.wait()
    close(host(out), np.concatenate([e[2 * rank:2 * rank + 2] for e in every]), "float64")
    rows = splits(world)
    sent = [rank_data((sum(rows[r]), 3), r) for r in range(world)]
    chunks = [np.split(s, np.cumsum(rows[r])[:-1]) for r, s in enumerate(sent)]
    expected = np.concatenate([chunks[r][rank] for r in range(world)])
    for dtype in ("float32", "bfloat16", "int64"):
        out = empty((len(expected), 3), dtype=genesis.float32 if dtype == "float32" else
                    tensor(expected, dtype).dtype)
        dist.all_to_all_single(out, tensor(sent[rank], dtype), [rows[r][rank] for r in
                                                                range(world)], rows[rank])
        close(host(out.to(genesis.float64)), host(tensor(expected, dtype).to(genesis.float64)),
              dtype)
    expect_error(RuntimeError, "Split sizes doesn't match total dim 0 size",
                 lambda: dist.all_to_all_single(empty(4), empty(4), [1] * world, [2] * world))
    expect_error(RuntimeError, "Number of tensor splits not equal to group size",
                 lambda: dist.all_to_all_single(empty(4), empty(4), [4], [4]))
    expect_error(RuntimeError, "Tensor's dim 0 does not divide equally across group size",
                 lambda: dist.all_to_all_single(empty(world + 1), empty(world)))


def check_all_to_all(rank, world):
    rows = splits(world)
    inputs = [on_device(rank_data((rows[rank][j] + 1,), 10 * rank + j), dtype=genesis.float32)
              for j in range(world)]
    outputs = [empty(rows[r][rank] + 1) for r in range(world)]
    dist.all_to_all(outputs, inputs)
    for r, out in enumerate(outputs):
        close(host(out), rank_data((rows[r][rank] + 1,), 10 * r + rank), "float32")
    expect_error(ValueError, "different dtypes",
                 lambda: dist.all_to_all([empty(1)] * world,
                                         [empty(1, dtype=genesis.float64)] * world))


def check_reduce_scatter_and_coalesced(rank, world):
    every = [[rank_data((2, 2), 10 * r + j) for j in range(world)] for r in range(world)]
    out = empty((2, 2), dtype=genesis.float64)
    dist.reduce_scatter(out, [on_device(x, dtype=genesis.float64) for x in every[rank]],
                        dist.ReduceOp.MAX)
    close(host(out), np.max([every[r][rank] for r in range(world)], axis=0), "float64")
    tensors = [on_device(rank_data((3,), rank), dtype=genesis.float32),
               on_device(rank_data((2, 2), rank + 5), dtype=genesis.float32)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dist.all_reduce_coalesced(tensors)
    assert any(w.category is FutureWarning and "all_reduce_coalesced" in str(w.message)
               for w in caught)
    close(host(tensors[0]), np.sum([rank_data((3,), r) for r in range(world)], axis=0),
          "float32")
    close(host(tensors[1]), np.sum([rank_data((2, 2), r + 5) for r in range(world)], axis=0),
          "float32")


def check_objects(rank, world):
    objects = [{"a": [1, 2]}, "text", 3.5] if rank == world - 1 else [None] * 3
    dist.broadcast_object_list(objects, src=world - 1)
    assert objects == [{"a": [1, 2]}, "text", 3.5]
    gathered = [None] * world if rank == 0 else None
    dist.gather_object(("rank", rank), gathered)
    if rank == 0:
        assert gathered == [("rank", r) for r in range(world)]
    mine = [None]
    dist.scatter_object_list(mine, [{"to": r} for r in range(world)] if rank == 1 else None,
                             src=1)
    assert mine == [{"to": rank}]
    if rank == 0:
        expect_error(ValueError, "source rank must provide non-None scatter_object_input_list",
                     lambda: dist.scatter_object_list([None], None))
        expect_error(ValueError, "Argument ``gather_list`` must be specified on destination",
                     lambda: dist.gather_object(1, None))


def check_group(rank, world):
    """A group of the first and last ranks: collectives, point-to-point and objects on it take
    global ranks; the ranks outside get NON_GROUP_MEMBER, -1 and a warning."""
    members = [0, world - 1]
    g = dist.new_group(members)
    if rank not in members:
        check_outside(g)
        return
    me = members.index(rank)
    assert dist.get_rank(g) == me and dist.get_world_size(g) == 2
    assert dist.get_process_group_ranks(g) == members
    assert dist.get_global_rank(g, 1) == world - 1 and dist.get_group_rank(g, world - 1) == 1
    t = on_device(rank_data((3,), rank))
    dist.all_reduce(t, group=g)
    close(host(t), rank_data((3,), 0) + rank_data((3,), world - 1), "float32")
    t = on_device(rank_data((2,), rank))
    dist.broadcast(t, src=world - 1, group=g)
    close(host(t), rank_data((2,), world - 1), "float32")
    out = empty(4, dtype=genesis.int64)
    dist.all_gather_single(out, on_device([rank, rank]), group=g)
    assert out.tolist() == [0, 0, world - 1, world - 1]
    check_group_p2p(rank, world, g, members)
    objects = [rank] if rank == world - 1 else [None]
    dist.broadcast_object_list(objects, group=g, group_src=1)
    assert objects == [world - 1]
    swapped = empty(2, dtype=genesis.int64)
    dist.all_to_all_single(swapped, on_device([10 * rank, 10 * rank + 1]), group=g)
    assert swapped.tolist() == [me, 10 * (world - 1) + me]
    expect_error(ValueError, "is not part of group",
                 lambda: dist.broadcast(empty(1), src=1, group=g) if world == 3 else
                 dist.get_group_rank(g, 5))
    dist.barrier(group=g)
    dist.destroy_process_group(g)


def check_group_p2p(rank, world, g, members):
    got = empty(2)
    if rank == 0:
        dist.send(on_device([7.0, 8.0]), group=g, group_dst=1)
    else:
        any_source = None if DEVICE == "cpu" else 0  # NCCL receives from a named rank only
        assert dist.recv(got, group=g, group_src=any_source) == 0
        assert got.tolist() == [7.0, 8.0]
    peer = members[1 - members.index(rank)]
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, on_device([float(rank)]), peer, g),
                                    dist.P2POp(dist.irecv, got[:1], peer, g)])
    for work in works:
        work.wait()
    assert got[0].item() == peer


def check_outside(g):
    assert g == dist.GroupMember.NON_GROUP_MEMBER
    assert dist.get_rank(g) == -1 and dist.get_world_size(g) == -1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert dist.all_reduce(empty(3), group=g) is None
        assert dist.isend(empty(1), 0, group=g) is None
    assert all("does not belong to the given group" in str(w.message) for w in caught)
    assert len(caught) == 2


def check_unsorted_group(rank, world):
    """sort_ranks=False keeps the given order: the last rank is the group's rank 0."""
    ranks = list(range(world))[::-1]
    g = dist.new_group(ranks, sort_ranks=False)
    assert dist.get_rank(g) == world - 1 - rank
    got = [None]
    dist.scatter_object_list(got, list(range(world)) if rank == world - 1 else None,
                             src=world - 1, group=g)
    assert got == [world - 1 - rank]
    expect_error(ValueError, "ranks list must not contain duplicate entries",
                 lambda: dist.new_group([0, 0]))
    expect_error(ValueError, f"Rank {world} is out of range",
                 lambda: dist.new_group([0, world]))


def check_monitored_barrier(rank, world):
    if DEVICE == "cuda":
        expect_error(ValueError, "only implemented for GLOO backend",
                     lambda: dist.monitored_barrier())
        return
    dist.monitored_barrier(timeout=timedelta(seconds=10))
    if rank != 0:
        time.sleep(0.5)
        expected = f"Rank {rank} successfully reached monitoredBarrier, but received errors"
    else:
        late = ", ".join(str(r) for r in range(1, world))
        expected = f"[Rank 0]: Ranks {late} failed to pass monitoredBarrier in 100 ms"
    expect_error(RuntimeError, expected, lambda: dist.monitored_barrier(
        timeout=timedelta(milliseconds=100), wait_all_ranks=True))
    dist.barrier()
    if rank == world - 1:
        time.sleep(1.5)
    expected = f"[Rank 0]: Rank {world - 1} failed to pass monitoredBarrier in 500 ms" \
        if rank == 0 else "successfully reached monitoredBarrier"
    expect_error(RuntimeError, expected,
                 lambda: dist.monitored_barrier(timeout=timedelta(milliseconds=500)))
    dist.barrier()
    dist.monitored_barrier(timeout=timedelta(seconds=10))


def check_queries(rank, world):
    assert dist.group.WORLD is dist.GroupMember.WORLD is not None
    assert dist.get_process_group_ranks(dist.group.WORLD) == list(range(world))
    assert dist.get_global_rank(dist.group.WORLD, 1) == 1
    assert dist.get_backend() == BACKEND
    assert dist.get_node_local_rank(fallback_rank=rank) in (0, rank)


BACKEND = "nccl" if DEVICE == "cuda" else "mpi"
CHECKS = [check_send_recv, check_batch_isend_irecv, check_all_to_all_single, check_all_to_all,
          check_reduce_scatter_and_coalesced, check_objects, check_group, check_unsorted_group,
          check_monitored_barrier, check_queries]


def main():
    if DEVICE == "cuda":
        genesis.cuda.set_device(dist.get_node_local_rank(0))
    dist.init_process_group(BACKEND)
    rank, world = dist.get_rank(), dist.get_world_size()
    assert world >= 2, "the checks need a world of 2 or more (--nproc-per-node 2)"
    for check in CHECKS:
        check(rank, world)
        dist.barrier()
    dist.destroy_process_group()
    assert dist.group.WORLD is None
    if rank == 0:
        print("all checks passed", flush=True)


if __name__ == "__main__":
    main()
