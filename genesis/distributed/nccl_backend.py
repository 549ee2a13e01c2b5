"""The NCCL backend: collectives on CUDA tensors through nccl4py.

Each collective runs on the process group's own stream. The stream first waits for the work
queued so far on the caller's current stream (an event), so the collective sees finished
inputs; the returned Work's `wait()` makes the current stream wait for the collective in turn
(the host does not block, as in PyTorch). The tensors are marked as used on the
communication stream so the caching allocator does not reuse them early.
"""

from .errors import DistBackendError
from .work import ReduceOp, Work

# ncclRedOp_t and ncclDataType_t values from nccl.h.
_OPS = {ReduceOp.SUM: 0, ReduceOp.PRODUCT: 1, ReduceOp.MAX: 2, ReduceOp.MIN: 3,
        ReduceOp.AVG: 4}
_TYPES = {"int8": 0, "uint8": 1, "bool": 1, "int32": 2, "int64": 4, "float16": 6,
          "float32": 7, "float64": 8, "bfloat16": 9}
_UID_KEY = "nccl/unique_id"
_SPLIT_NOCOLOR = -1  # NCCL_SPLIT_NOCOLOR: this rank joins no new communicator


def _nccl():
    """nccl4py's low-level bindings (NCCL's C API on raw pointers and stream handles)."""
    try:
        from nccl.bindings import nccl as bindings
    except ImportError as e:
        raise RuntimeError("the 'nccl' backend needs nccl4py and NCCL: "
                           "pip install 'genesis[distributed]'") from e
    return bindings


class NCCLBackend:
    """One NCCL communicator over the world, on the device `cuda:LOCAL_RANK`."""

    name = "nccl"
    reduce_ops = tuple(_OPS)

    def __init__(self, comm, rank, world_size, store, device_index, prefix=""):
        from .. import cuda
        self.nccl, self.comm, self.cuda = _nccl(), comm, cuda
        self.rank, self.world_size, self.store, self.prefix = rank, world_size, store, prefix
        self.device_index, self.device = device_index, f"cuda:{device_index}"
        self.stream = cuda.Stream(device_index)
        self._exchanges = 0

    @classmethod
    def create(cls, rank, world_size, store, device_index):
        """The world communicator: rank 0 makes NCCL's unique id and shares it through `store`."""
        from .. import cuda
        nccl = _nccl()
        cuda.set_device(device_index)
        if rank == 0:
            store.set(_UID_KEY, bytes(_call("get_unique_id", nccl.get_unique_id)))
        uid = bytearray(store.get(_UID_KEY))
        comm = _call("init", lambda: nccl.comm_init_rank_scalable(world_size, rank, 1, uid, 0))
        return cls(comm, rank, world_size, store, device_index)

    def split(self, ranks, name):
        """The backend over the ranks `ranks` (in that order; ncclCommSplit), or None for a rank
        outside them; every rank of this communicator calls it."""
        inside = self.rank in ranks
        color, key = (0, ranks.index(self.rank)) if inside else (_SPLIT_NOCOLOR, 0)
        comm = _call("comm_split", lambda: self.nccl.comm_split(self.comm, color, key, 0))
        if not inside:
            return None
        return NCCLBackend(comm, key, len(ranks), self.store, self.device_index,
                           f"{self.prefix}group/{name}/")

    def _launch(self, name, tensors, fn):
        """Run `fn(stream_handle)` on the communication stream, ordered after the current one."""
        current = self.cuda.current_stream(self.device_index)
        self.stream.wait_stream(current)
        _call(name, lambda: fn(self.stream.cuda_stream))
        for t in tensors:
            t.record_stream(self.stream)
        done = self.stream.record_event()
        return Work(lambda: self.cuda.current_stream(self.device_index).wait_event(done),
                    done.query)

    def _type(self, tensor):
        name = str(tensor.dtype).split(".")[-1]
        if name not in _TYPES:
            raise TypeError(f"NCCL has no type for {tensor.dtype}")
        return _TYPES[name]

    def all_reduce(self, tensor, op):
        p = tensor.data_ptr()
        return self._launch("all_reduce", [tensor], lambda s: self.nccl.all_reduce(
            p, p, tensor.numel(), self._type(tensor), _OPS[op], self.comm, s))

    def broadcast(self, tensor, src):
        p = tensor.data_ptr()
        return self._launch("broadcast", [tensor], lambda s: self.nccl.broadcast(
            p, p, tensor.numel(), self._type(tensor), src, self.comm, s))

    def reduce(self, tensor, dst, op):
        p = tensor.data_ptr()
        return self._launch("reduce", [tensor], lambda s: self.nccl.reduce(
            p, p, tensor.numel(), self._type(tensor), _OPS[op], dst, self.comm, s))

    def all_gather_into_tensor(self, output, input):
        return self._launch("all_gather_into_tensor", [output, input],
                            lambda s: self.nccl.all_gather(
                                input.data_ptr(), output.data_ptr(), input.numel(),
                                self._type(input), self.comm, s))

    def reduce_scatter_tensor(self, output, input, op):
        return self._launch("reduce_scatter_tensor", [output, input],
                            lambda s: self.nccl.reduce_scatter(
                                input.data_ptr(), output.data_ptr(), output.numel(),
                                self._type(input), _OPS[op], self.comm, s))

    def p2p(self, ops):
        """Sends and receives `(is_send, tensor, peer, tag)` as one NCCL group on the
        communication stream; one Work for them all (PyTorch's coalesced batch). NCCL has no
        tags and no receive from any source."""
        if any(peer is None for _, _, peer, _ in ops):
            raise RuntimeError("ProcessGroupNCCL does not support recvAnysource")
        parts = [(is_send, t.data_ptr(), t.numel(), self._type(t), peer)
                 for is_send, t, peer, _ in ops]
        return [self._launch("batch_isend_irecv", [t for _, t, _, _ in ops],
                             lambda s: self._grouped(parts, s))]

    def all_to_all_single(self, output, input, output_counts, input_counts):
        """One NCCL group of a send and a receive per peer with a nonzero count, at the counts'
        offsets (elements)."""
        size, kind = input.element_size(), self._type(input)
        sends = _segments(input.data_ptr(), input_counts, size)
        recvs = _segments(output.data_ptr(), output_counts, size)
        parts = [(True, p, n, kind, peer) for peer, (p, n) in enumerate(sends) if n] + \
                [(False, p, n, kind, peer) for peer, (p, n) in enumerate(recvs) if n]
        return self._launch("all_to_all", [output, input], lambda s: self._grouped(parts, s))

    def _grouped(self, parts, stream):
        """ncclSend/ncclRecv of each `(is_send, pointer, count, type, peer)` in one group."""
        self.nccl.group_start()
        try:
            for is_send, pointer, count, kind, peer in parts:
                (self.nccl.send if is_send else self.nccl.recv)(pointer, count, kind, peer,
                                                                 self.comm, stream)
        finally:
            self.nccl.group_end()

    def barrier(self):
        """An all_reduce of one byte, then the host waits for it (as PyTorch's NCCL barrier)."""
        from .. import ones
        flag = ones(1, dtype=_uint8(), device=self.device)
        work = self.all_reduce(flag, ReduceOp.SUM)

        def wait():
            work.wait()
            self.stream.synchronize()
        return Work(wait, work.is_completed)

    def exchange(self, obj):
        """Every rank's `obj`, in rank order, through the store (the debug shape check)."""
        import pickle
        key = f"{self.prefix}exchange/{self._exchanges}/"
        self._exchanges += 1
        self.store.set(key + str(self.rank), pickle.dumps(obj))
        return [pickle.loads(v) for v in
                self.store.wait([key + str(r) for r in range(self.world_size)])]

    def shutdown(self):
        self.stream.synchronize()
        _call("destroy", lambda: self.nccl.comm_destroy(self.comm))


def _segments(pointer, counts, element_size):
    """(pointer, count) of each of the consecutive runs of `counts` elements from `pointer`."""
    out, offset = [], 0
    for n in counts:
        out.append((pointer + offset * element_size, n))
        offset += n
    return out


def _call(name, fn):
    try:
        return fn()
    except Exception as e:  # nccl4py raises its own error types, NCCL's message inside
        raise DistBackendError(f"NCCL error in {name}: {e}") from None


def _uint8():
    from .. import uint8
    return uint8
