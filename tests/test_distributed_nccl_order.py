"""The NCCL backend's stream ordering and calls, checked without a GPU: nccl4py's bindings and
genesis.cuda's streams are replaced by recorders, so the test sees what the backend asks for.
(The real NCCL runs in tests/cuda/test_distributed_gpu.py.)"""

import pytest

import genesis
import genesis.distributed as dist
from genesis.distributed import nccl_backend


class Recorder:
    """A log shared by the fake streams, events and NCCL."""

    def __init__(self):
        self.log = []


class FakeEvent:
    def __init__(self, rec, name):
        self.rec, self.name = rec, name

    def query(self):
        return True


class FakeStream:
    def __init__(self, rec, name, handle):
        self.rec, self.name, self.cuda_stream = rec, name, handle

    def wait_stream(self, other):
        self.rec.log.append(f"{self.name} waits {other.name}")

    def wait_event(self, event):
        self.rec.log.append(f"{self.name} waits {event.name}")

    def record_event(self):
        self.rec.log.append(f"{self.name} records done")
        return FakeEvent(self.rec, "done")

    def synchronize(self):
        self.rec.log.append(f"host waits {self.name}")


class FakeCuda:
    def __init__(self, rec):
        self.rec, self.compute = rec, FakeStream(rec, "compute", 7)

    def set_device(self, index):
        self.rec.log.append(f"set_device {index}")

    def Stream(self, device):
        return FakeStream(self.rec, "comm", 42)

    def current_stream(self, device=None):
        return self.compute


class FakeNccl:
    """nccl4py's binding signatures; a world of one leaves the data as it is."""

    def __init__(self, rec):
        self.rec = rec

    def get_unique_id(self):
        return b"u" * 128

    def comm_init_rank_scalable(self, nranks, rank, n_ids, ids, config):
        assert (nranks, rank, n_ids, bytes(ids), config) == (1, 0, 1, b"u" * 128, 0)
        return "comm"

    def all_reduce(self, send, recv, count, datatype, op, comm, stream):
        self.rec.log.append(f"all_reduce {count} type {datatype} op {op} on {stream}")
        assert send == recv and comm in ("comm", "subcomm")

    def all_gather(self, send, recv, count, datatype, comm, stream):
        self.rec.log.append(f"all_gather {count} type {datatype} on {stream}")

    def reduce_scatter(self, send, recv, count, datatype, op, comm, stream):
        self.rec.log.append(f"reduce_scatter {count} type {datatype} op {op} on {stream}")

    def broadcast(self, send, recv, count, datatype, root, comm, stream):
        self.rec.log.append(f"broadcast {count} from {root} on {stream}")

    def reduce(self, send, recv, count, datatype, op, root, comm, stream):
        self.rec.log.append(f"reduce {count} to {root} on {stream}")

    def send(self, buf, count, datatype, peer, comm, stream):
        self.rec.log.append(f"send {count} type {datatype} at {buf} to {peer} on {stream}")

    def recv(self, buf, count, datatype, peer, comm, stream):
        self.rec.log.append(f"recv {count} type {datatype} at {buf} from {peer} on {stream}")

    def group_start(self):
        self.rec.log.append("group start")

    def group_end(self):
        self.rec.log.append("group end")

    def comm_split(self, comm, color, key, config):
        self.rec.log.append(f"split {comm} color {color} key {key}")
        return "subcomm"

    def comm_destroy(self, comm):
        self.rec.log.append(f"destroy {comm}")


@pytest.fixture
def fake_world(monkeypatch):
    """A world of one over the recorders; yields the log."""
    rec = Recorder()
    monkeypatch.setattr(nccl_backend, "_nccl", lambda: FakeNccl(rec))
    monkeypatch.setattr(genesis, "cuda", FakeCuda(rec))
    monkeypatch.setattr(genesis.Tensor, "record_stream",
                        lambda t, s: rec.log.append(f"tensor used on {s.name}"))
    monkeypatch.setattr(nccl_backend.NCCLBackend, "name", "nccl-on-cpu-for-this-test")
    store = dist.TCPStore("127.0.0.1", 0, is_master=True, timeout=5)
    dist.init_process_group("nccl", store=store, rank=0, world_size=1)
    dist.group.WORLD._backend.device = "cpu"  # the barrier's flag, in this test
    yield rec.log
    if dist.is_initialized():
        dist.destroy_process_group()
    store.close()


def test_collective_waits_for_compute_and_hands_back_an_event(fake_world):
    log = fake_world
    t = genesis.ones(6, dtype=genesis.bfloat16)
    log.clear()
    work = dist.all_reduce(t, dist.ReduceOp.AVG, async_op=True)
    assert log == ["comm waits compute", "all_reduce 6 type 9 op 4 on 42",
                   "tensor used on comm", "comm records done"]
    work.wait()
    assert log[-1] == "compute waits done" and work.is_completed()


def test_synchronous_collectives_order_the_compute_stream_without_blocking_the_host(fake_world):
    log = fake_world
    out, inp = genesis.empty(4), genesis.ones(4)
    log.clear()
    assert dist.all_gather_single(out, inp) is None
    dist.reduce_scatter_single(out, inp, dist.ReduceOp.MAX)
    dist.broadcast(inp, 0)
    dist.reduce(inp, 0, dist.ReduceOp.MIN)
    launches = [e for e in log if " on 42" in e]
    assert launches == ["all_gather 4 type 7 on 42", "reduce_scatter 4 type 7 op 2 on 42",
                        "broadcast 4 from 0 on 42", "reduce 4 to 0 on 42"]
    assert log.count("compute waits done") == 4 and not any(e.startswith("host") for e in log)


def test_barrier_blocks_the_host_and_destroy_frees_the_communicator(fake_world):
    log = fake_world
    log.clear()
    dist.barrier()
    assert log[-3:] == ["comm records done", "compute waits done", "host waits comm"]
    dist.destroy_process_group()
    assert log[-1] == "destroy comm" and not dist.is_initialized()


def test_point_to_point_batch_is_one_group_on_the_comm_stream(fake_world):
    log = fake_world
    a, b = genesis.ones(3), genesis.empty(3)
    log.clear()
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, a, 0), dist.P2POp(dist.irecv, b, 0)])
    assert len(works) == 1
    assert log[:5] == ["comm waits compute", "group start",
                       f"send 3 type 7 at {a.data_ptr()} to 0 on 42",
                       f"recv 3 type 7 at {b.data_ptr()} from 0 on 42", "group end"]
    with pytest.raises(RuntimeError, match="does not support recvAnysource"):
        dist.irecv(b)


def test_all_to_all_single_sends_and_receives_each_peer_its_split(fake_world):
    """Rank 1 of 3: a send and a receive per peer with a nonzero count, at the splits' offsets."""
    backend = nccl_backend.NCCLBackend("comm", 1, 3, None, 0)
    log = fake_world
    out, inp = genesis.empty(3), genesis.empty(3)
    i, o = inp.data_ptr(), out.data_ptr()
    log.clear()
    backend.all_to_all_single(out, inp, [2, 0, 1], [1, 2, 0])
    assert log[1:7] == ["group start", f"send 1 type 7 at {i} to 0 on 42",
                        f"send 2 type 7 at {i + 4} to 1 on 42",
                        f"recv 2 type 7 at {o} from 0 on 42",
                        f"recv 1 type 7 at {o + 8} from 2 on 42", "group end"]


def test_new_group_splits_the_communicator(fake_world):
    log = fake_world
    log.clear()
    group = dist.new_group([0])
    assert log == ["split comm color 0 key 0"]
    assert (group._backend.comm, dist.get_rank(group), group._backend.prefix) == \
        ("subcomm", 0, "group/1/")
    outside = nccl_backend.NCCLBackend("comm", 1, 3, None, 0)
    assert outside.split([0, 2], "2") is None and log[-1] == "split comm color -1 key 0"
    group._backend.device = "cpu"
    dist.destroy_process_group(group)
    assert log[-1] == "destroy subcomm"
