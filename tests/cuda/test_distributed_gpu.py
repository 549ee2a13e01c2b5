"""The NCCL backend with a world of one process on one GPU, through the whole API."""

import os
import socket
import subprocess
import sys

import numpy as np
import pytest

import genesis
import genesis.distributed as dist
from helpers import skip_no_cuda

pytestmark = skip_no_cuda
pytest.importorskip("nccl.bindings")


@pytest.fixture(scope="module")
def nccl_world():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=0,
                            world_size=1)
    yield
    dist.destroy_process_group()


def cuda_tensor(rng, shape, dtype):
    return genesis.tensor(rng.standard_normal(shape).astype(np.float32), device="cuda",
                          dtype=dtype)


NCCL_OPS = [op for op in dist.ReduceOp
            if op not in (dist.ReduceOp.BAND, dist.ReduceOp.BOR, dist.ReduceOp.BXOR)]


@pytest.mark.parametrize("dtype", [genesis.float32, genesis.bfloat16], ids=str)
@pytest.mark.parametrize("op", [dist.ReduceOp.BAND, dist.ReduceOp.BOR, dist.ReduceOp.BXOR],
                         ids=lambda o: o.name)
def test_bitwise_reductions_are_not_nccls(nccl_world, rng, dtype, op):
    """As PyTorch's NCCL group: no bitwise reductions, and the tensor left as it was."""
    t = cuda_tensor(rng, (3, 4), dtype)
    before = t.cpu().numpy().copy()
    with pytest.raises(ValueError, match=f"Cannot use {op} with NCCL"):
        dist.all_reduce(t, op)
    np.testing.assert_array_equal(t.cpu().numpy(), before)


@pytest.mark.parametrize("dtype", [genesis.float32, genesis.bfloat16], ids=str)
@pytest.mark.parametrize("op", NCCL_OPS, ids=lambda o: o.name)
def test_all_reduce_of_one_rank_is_the_identity(nccl_world, rng, dtype, op):
    t = cuda_tensor(rng, (33, 7), dtype)
    before = t.cpu().numpy().copy()
    work = dist.all_reduce(t, op, async_op=True)
    work.wait()
    np.testing.assert_array_equal(t.cpu().numpy(), before)
    genesis.cuda.synchronize()
    assert work.is_completed()


def test_every_collective(nccl_world, rng):
    assert (dist.get_rank(), dist.get_world_size(), dist.get_backend()) == (0, 1, "nccl")
    t = cuda_tensor(rng, (4, 5), genesis.float32)
    host = t.cpu().numpy()
    dist.broadcast(t, 0)
    dist.reduce(t, 0)
    np.testing.assert_array_equal(t.cpu().numpy(), host)
    out = genesis.empty((4, 5), device="cuda")
    dist.all_gather_single(out, t)
    np.testing.assert_array_equal(out.cpu().numpy(), host)
    dist.reduce_scatter_single(out, t, dist.ReduceOp.AVG)
    np.testing.assert_array_equal(out.cpu().numpy(), host)
    parts = [genesis.empty((4, 5), device="cuda")]
    dist.all_gather(parts, t)
    np.testing.assert_array_equal(parts[0].cpu().numpy(), host)
    dist.barrier()


def test_collective_orders_after_the_compute_stream(nccl_world):
    """A result still being written on the current stream is what the collective sees."""
    t = genesis.zeros(1 << 20, device="cuda")
    t.add_(3.0)
    dist.all_reduce(t)
    assert float(t.sum().item()) == 3.0 * (1 << 20)


def test_cpu_tensor_is_refused(nccl_world):
    with pytest.raises(ValueError, match="the nccl backend works on cuda tensors"):
        dist.all_reduce(genesis.ones(2))


def test_ddp_of_one_rank_leaves_gradients_unchanged(nccl_world, rng):
    genesis.manual_seed(0)
    model = genesis.nn.Sequential(genesis.nn.Linear(6, 8), genesis.nn.Tanh(),
                                  genesis.nn.Linear(8, 2)).to("cuda")
    ddp = genesis.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=1e-4)
    x = cuda_tensor(rng, (5, 6), genesis.float32)
    with genesis.autocast("cuda", dtype=genesis.bfloat16):
        ddp(x).float().pow(2).mean().backward()
    grads = [p.grad.cpu().numpy().copy() for p in model.parameters()]
    for p in model.parameters():
        p.grad = None
    with genesis.autocast("cuda", dtype=genesis.bfloat16):
        model(x).float().pow(2).mean().backward()
    for g, p in zip(grads, model.parameters()):
        np.testing.assert_allclose(g, p.grad.cpu().numpy(), rtol=1e-6, atol=1e-7)


def test_point_to_point_all_to_all_objects_and_groups_of_one_rank(nccl_world, rng):
    """A world of one: the batch to itself is one NCCL group; all_to_all, reduce_scatter and a
    group of rank 0 hand the data back; objects come back as they went."""
    t = cuda_tensor(rng, (6, 2), genesis.float32)
    host = t.cpu().numpy()
    got = genesis.empty((6, 2), device="cuda")
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, t, 0), dist.P2POp(dist.irecv, got, 0)])
    for work in works:
        work.wait()
    np.testing.assert_array_equal(got.cpu().numpy(), host)
    out = genesis.empty((6, 2), device="cuda")
    dist.all_to_all_single(out, t, [6], [6])
    np.testing.assert_array_equal(out.cpu().numpy(), host)
    parts = [genesis.empty(3, device="cuda")]
    dist.all_to_all(parts, [t[0:3, 0].contiguous()])
    np.testing.assert_array_equal(parts[0].cpu().numpy(), host[0:3, 0])
    dist.reduce_scatter(out, [t])
    np.testing.assert_array_equal(out.cpu().numpy(), host)
    objects = [{"a": 1}, "b"]
    dist.broadcast_object_list(objects)
    gathered = [None]
    dist.gather_object(("x", 1), gathered)
    mine = [None]
    dist.scatter_object_list(mine, [3.5])
    assert (objects, gathered, mine) == ([{"a": 1}, "b"], [("x", 1)], [3.5])
    group = dist.new_group([0])
    dist.all_reduce(t, group=group)
    np.testing.assert_array_equal(t.cpu().numpy(), host)
    dist.destroy_process_group(group)
    with pytest.raises(ValueError, match="only implemented for GLOO backend"):
        dist.monitored_barrier()


@pytest.mark.skipif(genesis.cuda.device_count() < 2, reason="needs two GPUs")
def test_api_worker_checks_on_two_gpus():
    """tests/distributed_api_worker.py over NCCL: point to point, all_to_all, objects and a
    group, in a world of two."""
    result = _run_worker("distributed_api_worker.py", nproc=2)
    assert "all checks passed" in result.stdout, result.stderr[-4000:]


def _run_worker(worker="distributed_worker.py", nproc=1):
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return subprocess.run([sys.executable, "-m", "genesis.distributed.run", "--nproc-per-node",
                           str(nproc), os.path.join(root, "tests", worker), "cuda"],
                          cwd=root, capture_output=True, text=True, timeout=300)


def test_worker_checks_on_one_gpu():
    """tests/distributed_worker.py's collective and DDP checks over NCCL, a world of one
    (with two GPUs: `--nproc-per-node 2`, see benchmarks/ddp.py's docstring)."""
    result = _run_worker()
    assert "all checks passed" in result.stdout, result.stderr[-4000:]


def test_worker_exits_cleanly():
    """The communication stream outlives the blocks recorded on it: freeing them at exit
    records events on a live stream (it crashed with SIGSEGV when the stream was destroyed
    first)."""
    assert _run_worker().returncode == 0
