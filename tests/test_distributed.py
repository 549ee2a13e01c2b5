"""genesis.distributed on the CPU: MPI worlds of 2 and 3 processes, the TCP store and its
rendezvous, and the launcher's watching of its workers. Loopback only."""

import os
import subprocess
import sys
import textwrap
import time

import pytest

import genesis
import genesis.distributed as dist
from genesis.distributed import TCPStore

pytest.importorskip("mpi4py")
MPIEXEC = os.path.join(os.path.dirname(sys.executable), "mpiexec")
WORKER = os.path.join(os.path.dirname(__file__), "distributed_worker.py")
API_WORKER = os.path.join(os.path.dirname(__file__), "distributed_api_worker.py")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(command, timeout=60, **env):
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **env})


LAUNCHER = [sys.executable, "-m", "genesis.distributed.run"]


@pytest.mark.skipif(not os.path.exists(MPIEXEC), reason="mpiexec (the mpich wheel) missing")
@pytest.mark.parametrize("world, start", [(2, "mpiexec"), (3, "launcher")])
def test_collectives_and_ddp_under_mpi(world, start):
    """Every collective against numpy, DDP gradients against one process on the whole batch,
    no_sync accumulation and unused parameters (tests/distributed_worker.py); the world is
    mpiexec's, or joined from workers the launcher started apart."""
    command = [MPIEXEC, "-n", str(world), sys.executable] if start == "mpiexec" else \
        LAUNCHER + ["--mpi", "--nproc-per-node", str(world)]
    result = run(command + [WORKER])
    assert result.returncode == 0, result.stderr[-4000:]
    assert result.stdout.strip().endswith("all checks passed")


@pytest.mark.skipif(not os.path.exists(MPIEXEC), reason="mpiexec (the mpich wheel) missing")
@pytest.mark.parametrize("world", [2, 3])
def test_point_to_point_all_to_all_objects_groups_under_mpi(world):
    """send/recv, batch_isend_irecv, all_to_all(_single), reduce_scatter, all_reduce_coalesced,
    object collectives, a group of ranks [0, world - 1] and monitored_barrier against numpy
    (tests/distributed_api_worker.py)."""
    result = run([MPIEXEC, "-n", str(world), sys.executable, API_WORKER])
    assert result.returncode == 0, result.stderr[-4000:]
    assert result.stdout.strip().endswith("all checks passed")


@pytest.mark.skipif(not os.path.exists(MPIEXEC), reason="mpiexec (the mpich wheel) missing")
def test_debug_mode_names_mismatched_shapes():
    result = run([MPIEXEC, "-n", "2", sys.executable, WORKER, "debug"],
                 GENESIS_DISTRIBUTED_DEBUG="1")
    assert result.returncode == 0, result.stderr[-4000:]


def test_mpi_backend_refuses_to_join_processes_not_started_by_mpiexec(monkeypatch):
    """MPICH cannot join processes started alone: a clear error, not a hang."""
    monkeypatch.delenv("PMI_RANK", raising=False)
    with pytest.raises(RuntimeError, match=r"not started by mpiexec.*run --mpi"):
        dist.init_process_group("mpi", world_size=2, rank=1)
    assert not dist.is_initialized()


def test_store_set_get_add_wait():
    master = TCPStore("127.0.0.1", 0, is_master=True, timeout=5)
    client = TCPStore("127.0.0.1", master.port, timeout=5)
    client.set("a", "1")
    assert master.get("a") == b"1"
    assert client.add("n", 2) == 2 and master.add("n", 3) == 5
    assert client.check(["a", "n"]) and not client.check(["b"])
    master.set("b", b"\x00\xff")
    assert client.wait(["a", "b"]) == [b"1", b"\x00\xff"]
    start = time.monotonic()
    with pytest.raises(dist.DistStoreError, match="timed out after 0.2 s waiting for keys"):
        client.wait(["never"], timeout=0.2)
    assert time.monotonic() - start < 2
    client.close()
    master.close()


def test_store_client_without_master_times_out():
    with pytest.raises(dist.DistStoreError, match="could not connect"):
        TCPStore("127.0.0.1", _unused_port(), timeout=0.3)


def _unused_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_rendezvous_times_out_when_a_rank_never_joins(monkeypatch):
    """A world of 2 with only rank 0: a clear error within the timeout, never a hang."""
    from datetime import timedelta
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", str(_unused_port()))
    start = time.monotonic()
    with pytest.raises(dist.DistStoreError, match="1 of 2 joined"):
        dist.init_process_group("nccl", init_method="env://", rank=0, world_size=2,
                                timeout=timedelta(seconds=1))
    assert time.monotonic() - start < 5
    assert not dist.is_initialized()


def test_collective_before_init_is_an_error():
    with pytest.raises(ValueError, match="all_reduce: Default process group has not been "
                                         "initialized"):
        import genesis
        dist.all_reduce(genesis.ones(2))


def write_script(tmp_path, body):
    path = tmp_path / "worker.py"
    path.write_text(textwrap.dedent(body))
    return str(path)


def test_launcher_sets_the_environment(tmp_path):
    script = write_script(tmp_path, """
        import os, sys
        keys = ["RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"]
        line = " ".join(os.environ[k] for k in keys) + " " + str(sys.argv[1:]) + "\\n"
        os.write(1, line.encode())  # one write: the three workers share the pipe
    """)
    port = _unused_port()
    result = run(LAUNCHER + ["--nproc-per-node", "3", "--nnodes", "1", "--master-port", str(port),
                             script, "--lr", "1"])
    assert result.returncode == 0, result.stderr
    lines = sorted(result.stdout.splitlines())
    assert lines == [f"{r} {r} 3 127.0.0.1 {port} ['--lr', '1']" for r in range(3)], result.stderr


def test_launcher_stops_the_others_when_a_worker_fails(tmp_path):
    """Rank 1 exits 3: the launcher exits 3 naming rank 1, and the sleeping ranks are stopped."""
    script = write_script(tmp_path, """
        import os, sys, time
        if os.environ["RANK"] == "1":
            sys.exit(3)
        time.sleep(60)
    """)
    start = time.monotonic()
    result = run(LAUNCHER + ["--nproc-per-node", "3", script])
    assert time.monotonic() - start < 20
    assert result.returncode == 3
    assert "worker rank 1 failed with exit code 3" in result.stderr


def test_launcher_rejects_several_nodes(tmp_path):
    result = run(LAUNCHER + ["--nnodes", "2", write_script(tmp_path, "")])
    assert result.returncode != 0 and "only --nnodes 1" in result.stderr


TRAIN_GPT = os.path.join(ROOT, "examples", "train_gpt.py")
TINY_GPT = ["--device", "cpu", "--batch-size", "4", "--block-size", "16", "--n-layer", "1",
            "--n-head", "2", "--n-embd", "16", "--eval-interval", "3", "--eval-batches", "1",
            "--sample-chars", "5", "--warmup", "2"]


@pytest.mark.parametrize("backend", [
    pytest.param("mpi", marks=pytest.mark.skipif(not os.path.exists(MPIEXEC),
                                                 reason="mpiexec (the mpich wheel) missing")),
    "gloo"])
def test_train_gpt_data_parallel_then_resumes_on_one_process(backend, tmp_path):
    """The main job under the launcher, 2 ranks over MPI (--mpi) or Gloo: rank 0 alone reports
    and checkpoints; one process resumes from its checkpoint."""
    data = tmp_path / "text.txt"
    data.write_text("the quick brown fox jumps over the lazy dog. " * 100)
    args = TINY_GPT + ["--data", str(data), "--out-dir", str(tmp_path / "run")]
    env = {"PYTHONPATH": ROOT}
    mpi = ["--mpi"] if backend == "mpi" else []
    two = run(LAUNCHER + mpi + ["--nproc-per-node", "2", TRAIN_GPT] + args + ["--steps", "4"],
              **env)
    assert two.returncode == 0, two.stderr[-4000:]
    assert two.stdout.count("2 processes | device cpu") == 1
    assert two.stdout.count("validation loss") == 1
    one = run([sys.executable, TRAIN_GPT] + args + ["--steps", "6", "--resume"], **env)
    assert one.returncode == 0, one.stderr[-4000:]
    state = genesis.load(str(tmp_path / "run" / "ckpt.safetensors"))
    assert state["step"] == 6 and len(state["history"]["train"]) == 6


def test_post_accumulate_grad_hook_sees_the_accumulated_grad_as_torch_does():
    import torch
    seen = {}
    for lib in (genesis, torch):
        w = lib.ones(3, requires_grad=True)
        calls = []
        handle = w.register_post_accumulate_grad_hook(lambda p: calls.append(p.grad.tolist()))
        (w * 2).sum().backward()
        (w * 3).sum().backward()
        handle.remove()
        (w * 4).sum().backward()
        seen[lib.__name__] = calls
        with pytest.raises(RuntimeError, match="post accumulate grad hooks cannot be registered "
                                               "on non-leaf tensors"):
            (w * 1).register_post_accumulate_grad_hook(lambda p: None)
    assert seen["genesis"] == seen["torch"] == [[2.0] * 3, [5.0] * 3]


def test_store_on_a_busy_port_is_a_clear_error():
    master = TCPStore("127.0.0.1", 0, is_master=True, timeout=1)
    with pytest.raises(dist.DistStoreError, match=f"cannot serve on 127.0.0.1:{master.port}"):
        TCPStore("127.0.0.1", master.port, is_master=True, timeout=1)
    master.close()


def test_ddp_needs_a_process_group():
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        genesis.nn.parallel.DistributedDataParallel(genesis.nn.Linear(2, 2))


@pytest.mark.parametrize("name", ["nccl", "NCCL", "Mpi", "gloo", "GLOO", "undefined", "Foo",
                                  "cpu:gloo,cuda:nccl"])
def test_backend_names_as_torch(name):
    import torch.distributed as tdist
    assert dist.Backend(name) == tdist.Backend(name)
    assert type(dist.Backend(name)) is str
    assert dist.Backend.NCCL == "nccl" and dist.Backend.MPI == "mpi"
    assert dist.Backend.backend_list == tdist.Backend.backend_list


def test_backend_of_a_non_string_is_an_error():
    with pytest.raises(ValueError, match="Backend constructor parameter must be string-ish"):
        dist.Backend(3)


def test_backend_availability():
    import importlib.util
    assert dist.is_mpi_available() and dist.is_gloo_available()
    assert dist.is_nccl_available() == (importlib.util.find_spec("nccl") is not None)
    assert dist.is_backend_available("MPI") and dist.is_backend_available("gloo")
    assert dist.is_backend_available("fake") and not dist.is_backend_available("ucc")
    assert dist.is_backend_available("cpu:mpi")
    assert not dist.is_backend_available("cpu:mpi,cuda:ucc")


def test_default_backend_for_device():
    assert dist.get_default_backend_for_device("cpu") == "gloo"
    assert dist.get_default_backend_for_device("cuda:1") == "nccl"
    assert dist.get_default_backend_for_device(genesis.device("cuda")) == "nccl"
    with pytest.raises(ValueError, match="Default backend not registered for device : meta"):
        dist.get_default_backend_for_device("meta")


def test_node_local_rank(monkeypatch):
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    assert dist.get_node_local_rank(fallback_rank=3) == 3
    with pytest.raises(RuntimeError, match="LOCAL_RANK is not in the environment"):
        dist.get_node_local_rank()
    monkeypatch.setenv("LOCAL_RANK", "2")
    assert dist.get_node_local_rank(fallback_rank=3) == 2


def test_groups_before_init():
    assert dist.group.WORLD is None and dist.GroupMember.WORLD is None
    assert dist.GroupMember.NON_GROUP_MEMBER == -100
    assert dist.get_rank(dist.GroupMember.NON_GROUP_MEMBER) == -1
    assert dist.get_world_size(dist.GroupMember.NON_GROUP_MEMBER) == -1
    for fn in (lambda: dist.new_group([0]), lambda: dist.get_process_group_ranks(None),
               lambda: dist.send(genesis.ones(1), 1), lambda: dist.monitored_barrier(),
               lambda: dist.broadcast_object_list([1])):
        with pytest.raises(ValueError, match="Default process group has not been initialized"):
            fn()


def test_p2p_argument_errors():
    with pytest.raises(ValueError, match="Invalid ``op``. Expected ``op`` to be of type"):
        dist.P2POp(dist.send, genesis.ones(1), 1)
    with pytest.raises(TypeError, match="Expected parameter `tensor` of type Tensor"):
        dist.P2POp(dist.isend, [1.0], 1)
    with pytest.raises(TypeError, match="Expected parameter `tensor` of type Tensor"):
        dist.isend([1.0], 1)
    for ops in ([], "ops", [1]):
        with pytest.raises(ValueError, match="Each op is expected to to be of type"):
            dist.batch_isend_irecv(ops)


def test_all_reduce_coalesced_is_deprecated_as_in_torch():
    with pytest.warns(FutureWarning, match="all_reduce_coalesced` will be deprecated"):
        with pytest.raises(ValueError, match="Default process group has not been initialized"):
            dist.all_reduce_coalesced([genesis.ones(2)])

