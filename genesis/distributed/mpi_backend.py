"""The MPI backend: collectives on CPU tensors through mpi4py, in place on their numpy arrays.

As with PyTorch's MPI backend, the ranks can be those of MPI_COMM_WORLD: start the workers with
`mpiexec -n N` (the `mpich` wheel installs one). Workers started apart, each its own MPI world
(`python -m genesis.distributed.run --mpi` runs each under `mpiexec -n 1`), are joined into one
communicator after the env:// rendezvous: rank 0 opens an MPI port and accepts the others one
at a time, in rank order. Half types have no MPI datatype; they are reduced in float32 and
rounded once.
"""

import os
import time

import numpy as np

from .errors import DistBackendError
from .work import ReduceOp, Work

_HALF = (np.float16, )


def _mpi():
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise RuntimeError("the 'mpi' backend needs mpi4py and an MPI library: "
                           "pip install 'genesis[distributed]'") from e
    return MPI


def world_comm_size():
    """The number of processes mpiexec started together with this one."""
    return _mpi().COMM_WORLD.Get_size()


def require_mpiexec():
    """MPICH joins only processes that a process manager started (singletons share an id)."""
    if "PMI_RANK" not in os.environ:
        raise RuntimeError(
            "init_process_group(backend='mpi'): this process was not started by mpiexec, so it "
            "cannot join other MPI processes; start the workers with `mpiexec -n N python "
            "script.py` or `python -m genesis.distributed.run --mpi --nproc-per-node N "
            "script.py`")


class MPIBackend:
    """The world communicator and the collectives over it; every call returns a Work."""

    name = "mpi"
    reduce_ops = tuple(ReduceOp)

    def __init__(self, rank, world_size, comm=None):
        self.MPI = MPI = _mpi()
        self.comm = MPI.COMM_WORLD if comm is None else comm
        self.rank, self.world_size = self.comm.Get_rank(), self.comm.Get_size()
        for what, asked, actual in (("world_size", world_size, self.world_size),
                                    ("rank", rank, self.rank)):
            if asked not in (None, -1) and asked != actual:
                raise ValueError(
                    f"init_process_group(backend='mpi'): {what}={asked} but MPI_COMM_WORLD "
                    f"gives {actual}; start the workers with `mpiexec -n N python script.py` "
                    f"or `python -m genesis.distributed.run --mpi --nproc-per-node N script.py`")
        self.monitor, self._monitored, self._unanswered = self.comm.Dup(), 0, []
        self.ops = {ReduceOp.SUM: MPI.SUM, ReduceOp.AVG: MPI.SUM, ReduceOp.PRODUCT: MPI.PROD,
                    ReduceOp.MIN: MPI.MIN, ReduceOp.MAX: MPI.MAX, ReduceOp.BAND: MPI.BAND,
                    ReduceOp.BOR: MPI.BOR, ReduceOp.BXOR: MPI.BXOR}

    @classmethod
    def joined(cls, store, rank, world_size):
        """The backend over `world_size` separately started MPI processes, met through `store`."""
        return cls(rank, world_size, _join(_mpi(), store, rank, world_size))

    def _start(self, name, start, finish=lambda: None):
        """Run `start()` (an MPI nonblocking call) and wrap its request; errors keep MPI's text.
        The Work's source is the rank a receive heard from."""
        try:
            request = start()
        except self.MPI.Exception as e:
            raise DistBackendError(f"MPI error in {name}: {e}") from None
        status, done = self.MPI.Status(), []

        def test():
            if not done and request.Test(status):
                done.append(True)
            return bool(done)

        def wait():
            try:
                if not done:
                    request.Wait(status)
            except self.MPI.Exception as e:
                raise DistBackendError(f"MPI error in {name}: {e}") from None
            finish()
        return Work(wait, test, status.Get_source)

    def all_reduce(self, tensor, op):
        buf, write_back = _buffer(tensor)
        finish = _then(_averager(buf, self.world_size, op), write_back)
        return self._start("all_reduce", lambda: self.comm.Iallreduce(
            self.MPI.IN_PLACE, buf, op=self.ops[op]), finish)

    def broadcast(self, tensor, src):
        buf, write_back = _buffer(tensor)
        return self._start("broadcast", lambda: self.comm.Ibcast(buf, root=src), write_back)

    def reduce(self, tensor, dst, op):
        buf, write_back = _buffer(tensor)
        if self.rank != dst:
            return self._start("reduce", lambda: self.comm.Ireduce(buf, None, op=self.ops[op],
                                                                   root=dst))
        finish = _then(_averager(buf, self.world_size, op), write_back)
        return self._start("reduce", lambda: self.comm.Ireduce(
            self.MPI.IN_PLACE, buf, op=self.ops[op], root=dst), finish)

    def all_gather_into_tensor(self, output, input):
        out, write_back = _buffer(output)
        inp, _ = _buffer(input)
        return self._start("all_gather_into_tensor",
                           lambda: self.comm.Iallgather(inp, out), write_back)

    def reduce_scatter_tensor(self, output, input, op):
        out, write_back = _buffer(output)
        inp, _ = _buffer(input)
        finish = _then(_averager(out, self.world_size, op), write_back)
        return self._start("reduce_scatter_tensor", lambda: self.comm.Ireduce_scatter_block(
            inp, out, op=self.ops[op]), finish)

    def barrier(self):
        return self._start("barrier", self.comm.Ibarrier)

    def p2p(self, ops):
        """Sends and receives `(is_send, tensor, peer, tag)`, each its own nonblocking request
        (a receive's peer None: any source); one Work each."""
        return [self._send(t, peer, tag) if is_send else self._recv(t, peer, tag)
                for is_send, t, peer, tag in ops]

    def _send(self, tensor, dst, tag):
        buf, _ = _buffer(tensor)
        return self._start("send", lambda: self.comm.Isend(buf, dest=dst, tag=tag))

    def _recv(self, tensor, src, tag):
        buf, write_back = _buffer(tensor)
        source = self.MPI.ANY_SOURCE if src is None else src
        return self._start("recv", lambda: self.comm.Irecv(buf, source=source, tag=tag),
                           write_back)

    def all_to_all_single(self, output, input, output_counts, input_counts):
        """Rank r's `input_counts[j]` elements (in order) to rank j, which takes them as its
        `output_counts[r]` elements."""
        out, write_back = _buffer(output)
        inp, _ = _buffer(input)
        out_spec, in_spec = [[buf.reshape(-1), (counts, _offsets(counts))]
                             for buf, counts in ((out, output_counts), (inp, input_counts))]
        return self._start("all_to_all", lambda: self.comm.Ialltoallv(in_spec, out_spec),
                           write_back)

    def split(self, ranks, name):
        """The backend over the world ranks `ranks` (in that order), or None for a rank outside
        them; every rank of this communicator calls it."""
        sub = self.comm.Create(self.comm.Get_group().Incl(ranks))
        return None if sub == self.MPI.COMM_NULL else MPIBackend(None, None, sub)

    def monitored_barrier(self, timeout, wait_all_ranks):
        """Every rank tells rank 0 it is here and waits for rank 0's answer, each side for at
        most `timeout`; the one that waits too long names the ranks it did not hear from."""
        self._monitored += 1
        tag, deadline = self._monitored, time.monotonic() + timeout.total_seconds()
        token = np.zeros(1, dtype=np.uint8)
        if self.rank != 0:
            self._unanswered.append(self.monitor.Isend(token.copy(), dest=0, tag=tag))
            answer = self.monitor.Irecv(token, source=0, tag=tag)
            if _poll([answer], deadline):
                answer.Cancel()
                answer.Wait()
                raise RuntimeError(
                    f"Rank {self.rank} successfully reached monitoredBarrier, but received "
                    f"errors while waiting for send/recv from rank 0. Please check rank 0 logs "
                    f"for faulty rank.")
            return
        hellos = [self.monitor.Irecv(token.copy(), source=r, tag=tag)
                  for r in range(1, self.world_size)]
        late = _poll(hellos, deadline)
        if late:
            self._unanswered += [hellos[i] for i in late]  # the late ranks' hellos land here
            ms = int(timeout.total_seconds() * 1000)
            names = f"Ranks {', '.join(str(r + 1) for r in late)}" if wait_all_ranks else \
                f"Rank {late[0] + 1}"
            raise RuntimeError(f"[Rank 0]: {names} failed to pass monitoredBarrier in {ms} ms")
        self.MPI.Request.Waitall([self.monitor.Isend(token, dest=r, tag=tag)
                                  for r in range(1, self.world_size)])

    def exchange(self, obj):
        """Every rank's `obj`, in rank order (used by the debug shape check)."""
        return self.comm.allgather(obj)

    def shutdown(self):
        """Nothing to free: mpi4py finalizes MPI at exit."""


def _join(MPI, store, rank, world_size):
    """One intracommunicator of the ranks in rank order: rank r connects once ranks < r are in,
    and each member takes part in accepting the later ones."""
    if rank == 0:
        port = MPI.Open_port()
        store.set("mpi/port", port)
        comm = MPI.COMM_SELF
    else:
        port = store.get("mpi/port").decode()
        if rank > 1:
            store.wait([f"mpi/joined/{rank - 1}"])
        comm = MPI.COMM_SELF.Connect(port, root=0).Merge(high=True)
        store.set(f"mpi/joined/{rank}", b"1")
    for _ in range(comm.Get_size(), world_size):
        comm = comm.Accept(port, root=0).Merge(high=False)
    if rank == 0:
        MPI.Close_port(port)
    return comm


def _buffer(tensor):
    """The numpy array MPI works on, and the function that writes it back into `tensor`.

    A contiguous tensor of an MPI type is worked on in place; half types go through float32.
    """
    arr = tensor._data
    if arr.dtype in _HALF or arr.dtype.name == "bfloat16":
        work = arr.astype(np.float32)
        return work, lambda: np.copyto(arr, work.astype(arr.dtype))
    if arr.dtype == np.bool_:
        work = arr.view(np.uint8)
        return work, lambda: None
    return arr, lambda: None


def _averager(buf, world_size, op):
    """Divide the summed `buf` by the world size for AVG (MPI has no averaging op)."""
    if op is not ReduceOp.AVG:
        return lambda: None

    def average():
        np.divide(buf, world_size, out=buf, casting="unsafe")
    return average


def _offsets(counts):
    return np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64).tolist() \
        if counts else []


def _poll(requests, deadline):
    """Wait for `requests` until `deadline` (time.monotonic()); the indices of those still
    pending then."""
    pending = list(range(len(requests)))
    while pending and time.monotonic() < deadline:
        pending = [i for i in pending if not requests[i].Test()]
        if pending:
            time.sleep(0.001)
    return pending


def _then(first, second):
    def both():
        first()
        second()
    return both
