"""The gloo backend: collectives on CPU tensors in pure Python, over the TCP connections of
gloo_transport, with numpy doing the arithmetic (PyTorch's "gloo" backend on the CPU).

A group runs its collectives on a thread of its own, in the order its ranks issue them, so
`async_op=True` returns at once. A reduction splits the tensor into one chunk per rank; rank r
receives every rank's chunk r, combines them in rank order (half types in float32, rounded
once) and sends the result to the others (reduce-scatter, then all-gather): every rank gets
bit-identical values, whatever the timing. Broadcasts, gathers and all-to-all send each part
straight to the rank that needs it. Point-to-point sends leave from the caller's thread; a
receive completes when its message lands. Groups made by new_group share the world's
connections, their messages told apart by the group's name.
"""

import pickle
import queue
import threading
import time
from concurrent.futures import Future

import numpy as np

from .gloo_transport import Mesh, PeerClosed
from .errors import DistBackendError
from .work import ReduceOp, Work

_COMBINE = {ReduceOp.SUM: np.add, ReduceOp.AVG: np.add, ReduceOp.PRODUCT: np.multiply,
            ReduceOp.MIN: np.minimum, ReduceOp.MAX: np.maximum,
            ReduceOp.BAND: np.bitwise_and, ReduceOp.BOR: np.bitwise_or,
            ReduceOp.BXOR: np.bitwise_xor}


class _Worker:
    """A daemon thread that runs the group's collectives one after another, in issue order."""

    def __init__(self):
        self.queue = queue.SimpleQueue()
        threading.Thread(target=self._loop, daemon=True).start()

    def submit(self, fn):
        future = Future()
        self.queue.put((fn, future))
        return future

    def _loop(self):
        while (item := self.queue.get()) is not None:
            fn, future = item
            try:
                future.set_result(fn())
            except BaseException as e:  # handed to the caller's wait()
                future.set_exception(e)

    def stop(self):
        self.queue.put(None)


class GlooBackend:
    """The collectives of a group of the world's ranks over the world's connections."""

    name = "gloo"
    reduce_ops = tuple(_COMBINE)

    def __init__(self, mesh, ranks, prefix, timeout):
        self.mesh, self.ranks, self.prefix, self.timeout = mesh, ranks, prefix, timeout
        self.rank, self.world_size = ranks.index(mesh.rank), len(ranks)
        self._worker, self._issued, self._monitored = _Worker(), 0, 0

    @classmethod
    def create(cls, store, rank, world_size, timeout):
        """The world group: every rank connected to every other through `store`'s addresses."""
        return cls(Mesh(store, rank, world_size, timeout), list(range(world_size)), "", timeout)

    def split(self, ranks, name):
        """The group of the world ranks `ranks` (in that order), or None for a rank outside
        them; no messages needed, as it shares the world's connections."""
        if self.mesh.rank not in ranks:
            return None
        return GlooBackend(self.mesh, list(ranks), f"{self.prefix}group{name}/", self.timeout)

    def _others(self):
        return [p for p in range(self.world_size) if p != self.rank]

    def _send(self, peer, key, data):
        self.mesh.send(self.ranks[peer], key, data)

    def _recv(self, peer, key, timeout=None):
        """The payload of the message under `key` from group rank `peer`."""
        return self._wait(self.mesh.mailbox.post(key, self.ranks[peer]), timeout)

    def _wait(self, slot, timeout=None):
        timeout = self.timeout if timeout is None else timeout
        try:
            return self.mesh.mailbox.wait(slot, timeout)
        except TimeoutError:
            raise DistBackendError(f"timed out after {timeout:g} s waiting for rank "
                                   f"{slot.src if slot.src is not None else 'any'}") from None
        except PeerClosed as e:
            raise DistBackendError(str(e)) from None

    def _exchange(self, key, sends, sources):
        """Send `sends[p]` to each group rank p, then the payloads from `sources`, by rank."""
        for peer, data in sends.items():
            self._send(peer, key, data)
        return {peer: self._recv(peer, key) for peer in sources}

    def _collective(self, name, body):
        """A Work for `body(key)` run on the group's thread (see _submit)."""
        future = self._submit(name, body)
        return Work(future.result, future.done)

    def _submit(self, name, body):
        """The future of `body(key)`, run on the group's thread after the collectives issued
        before it; `key` names its messages, the same on every rank."""
        self._issued += 1
        key = f"{self.prefix}{self._issued}/"

        def run():
            try:
                return body(key)
            except (DistBackendError, OSError) as e:
                raise DistBackendError(f"gloo {name} (rank {self.mesh.rank}): {e}") from None
        return self._worker.submit(run)

    def _reduce_scatter(self, key, flat, op):
        """This rank's chunk of `flat` combined over the group."""
        bounds = _bounds(flat.size, self.world_size)
        chunk = [flat[bounds[p]:bounds[p + 1]] for p in range(self.world_size)]
        got = self._exchange(key + "rs", {p: chunk[p] for p in self._others()}, self._others())
        parts = [chunk[p] if p == self.rank else _array(got[p], flat.dtype)
                 for p in range(self.world_size)]
        return _combine(parts, op)

    def all_reduce(self, tensor, op):
        arr = tensor._data

        def body(key):
            mine = self._reduce_scatter(key, arr.reshape(-1), op)
            got = self._exchange(key + "ag", {p: mine for p in self._others()}, self._others())
            _write(arr, self._in_rank_order(mine, got, arr.dtype))
        return self._collective("all_reduce", body)

    def reduce(self, tensor, dst, op):
        arr = tensor._data

        def body(key):
            mine = self._reduce_scatter(key, arr.reshape(-1), op)
            if self.rank != dst:
                self._send(dst, key + "to", mine)
                return
            got = {p: self._recv(p, key + "to") for p in self._others()}
            _write(arr, self._in_rank_order(mine, got, arr.dtype))
        return self._collective("reduce", body)

    def reduce_scatter_tensor(self, output, input, op):
        def body(key):
            mine = self._reduce_scatter(key, input._data.reshape(-1), op)
            _write(output._data, mine)
        return self._collective("reduce_scatter_tensor", body)

    def broadcast(self, tensor, src):
        arr = tensor._data

        def body(key):
            if self.rank == src:
                for peer in self._others():
                    self._send(peer, key, arr)
            else:
                _write(arr, _array(self._recv(src, key), arr.dtype))
        return self._collective("broadcast", body)

    def all_gather_into_tensor(self, output, input):
        def body(key):
            mine = input._data
            got = self._exchange(key, {p: mine for p in self._others()}, self._others())
            _write(output._data, self._in_rank_order(mine, got, mine.dtype))
        return self._collective("all_gather_into_tensor", body)

    def all_to_all_single(self, output, input, output_counts, input_counts):
        """Rank r's `input_counts[j]` elements (in order) to rank j, which takes them as its
        `output_counts[r]` elements."""
        def body(key):
            flat = input._data.reshape(-1)
            starts = np.cumsum([0] + list(input_counts))
            chunk = [flat[starts[p]:starts[p + 1]] for p in range(self.world_size)]
            got = self._exchange(key, {p: chunk[p] for p in self._others()}, self._others())
            parts = [chunk[p] if p == self.rank else _array(got[p], flat.dtype)
                     for p in range(self.world_size)]
            for p, (part, count) in enumerate(zip(parts, output_counts)):
                if part.size != count:
                    raise DistBackendError(f"expected {count} elements from rank {p}, got "
                                           f"{part.size}")
            _write(output._data, np.concatenate(parts))
        return self._collective("all_to_all", body)

    def barrier(self):
        return self._collective("barrier", lambda key: self._exchange(
            key, {p: b"" for p in self._others()}, self._others()))

    def exchange(self, obj):
        """Every rank's picklable `obj`, in rank order (object collectives, the debug check)."""
        def body(key):
            mine = pickle.dumps(obj)
            got = self._exchange(key, {p: mine for p in self._others()}, self._others())
            return [obj if p == self.rank else pickle.loads(got[p])
                    for p in range(self.world_size)]
        return self._submit("exchange", body).result()

    def p2p(self, ops):
        """Sends and receives `(is_send, tensor, peer, tag)` (a receive's peer None: any
        source); a send leaves at once, a receive's Work completes when its message lands."""
        return [self._isend(t, peer, tag) if is_send else self._irecv(t, peer, tag)
                for is_send, t, peer, tag in ops]

    def _p2p_key(self, tag):
        return f"{self.prefix}p2p/{tag}"

    def _isend(self, tensor, peer, tag):
        try:
            self._send(peer, self._p2p_key(tag), tensor._data)
        except OSError as e:
            raise DistBackendError(f"gloo send to rank {self.ranks[peer]}: {e}") from None
        return Work(lambda: None, lambda: True)

    def _irecv(self, tensor, peer, tag):
        mailbox, arr = self.mesh.mailbox, tensor._data
        slot = mailbox.post(self._p2p_key(tag), None if peer is None else self.ranks[peer])

        def wait():
            try:
                _write(arr, _array(self._wait(slot), arr.dtype))
            except DistBackendError as e:
                raise DistBackendError(f"gloo recv (rank {self.mesh.rank}): {e}") from None
        return Work(wait, lambda: mailbox.ready(slot), lambda: self.ranks.index(slot.src))

    def monitored_barrier(self, timeout, wait_all_ranks):
        """Every rank tells rank 0 it is here and waits for rank 0's answer, each side for at
        most `timeout`; the one that waits too long names the ranks it did not hear from."""
        self._monitored += 1
        key, seconds = f"{self.prefix}monitored/{self._monitored}", timeout.total_seconds()
        if self.rank != 0:
            self._send(0, key, b"")
            try:
                self._recv(0, key, seconds)
            except DistBackendError:
                raise RuntimeError(
                    f"Rank {self.rank} successfully reached monitoredBarrier, but received "
                    f"errors while waiting for send/recv from rank 0. Please check rank 0 logs "
                    f"for faulty rank.") from None
            return
        late = self._late_ranks(key, time.monotonic() + seconds, wait_all_ranks)
        if late:
            names = f"Ranks {', '.join(map(str, late))}" if wait_all_ranks else f"Rank {late[0]}"
            raise RuntimeError(f"[Rank 0]: {names} failed to pass monitoredBarrier in "
                               f"{int(seconds * 1000)} ms")
        for peer in self._others():
            self._send(peer, key, b"")

    def _late_ranks(self, key, deadline, wait_all_ranks):
        """The ranks whose hello under `key` did not come by `deadline` (the first only, unless
        `wait_all_ranks`)."""
        mailbox, late = self.mesh.mailbox, []
        slots = {p: mailbox.post(key, self.ranks[p]) for p in self._others()}
        for peer, slot in slots.items():
            try:
                self._wait(slot, max(0.0, deadline - time.monotonic()))
            except DistBackendError:
                late.append(peer)
                if not wait_all_ranks:
                    break
        return late

    def _in_rank_order(self, mine, got, dtype):
        """This rank's array and the others' payloads, concatenated in rank order."""
        return np.concatenate([mine.reshape(-1) if p == self.rank else _array(got[p], dtype)
                               for p in range(self.world_size)])

    def shutdown(self):
        """Stop the group's thread; the world group also closes the connections."""
        self._worker.stop()
        if not self.prefix:
            self.mesh.close()


def _bounds(n, parts):
    """Where `parts` near-equal chunks of `n` elements start, and the end."""
    return [n * i // parts for i in range(parts + 1)]


def _array(payload, dtype):
    return np.frombuffer(payload, dtype=dtype)


def _combine(parts, op):
    """`parts` (one per rank, in rank order) folded left to right, the same on every rank; half
    types in float32, rounded once; AVG divides the sum by the number of ranks."""
    dtype = parts[0].dtype
    work = np.float32 if dtype == np.float16 or dtype.name == "bfloat16" else dtype
    acc = parts[0].astype(work)
    for part in parts[1:]:
        _COMBINE[op](acc, part.astype(work, copy=False), out=acc)
    if op is ReduceOp.AVG:
        np.divide(acc, len(parts), out=acc)
    return acc.astype(dtype, copy=False)


def _write(arr, values):
    """`values` (flat) into the tensor's array `arr`, in place."""
    if values.size != arr.size:
        raise DistBackendError(f"received {values.size} elements for a tensor of {arr.size}")
    np.copyto(arr, values.reshape(arr.shape))
