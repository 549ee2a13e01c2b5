"""The NCCL backend: collectives on CUDA tensors through nccl4py.

Each collective runs on the process group's own stream. The stream first waits for the work
queued so far on the caller's current stream (an event), so the collective sees finished
inputs; the returned Work's `wait()` makes the current stream wait for the collective in turn
(the host does not block, as in PyTorch). The tensors are marked as used on the
communication stream so the caching allocator does not reuse them early.
"""

from .store import DistBackendError
from .work import ReduceOp, Work

# ncclRedOp_t and ncclDataType_t values from nccl.h.
_OPS = {ReduceOp.SUM: 0, ReduceOp.PRODUCT: 1, ReduceOp.MAX: 2, ReduceOp.MIN: 3,
        ReduceOp.AVG: 4}
_TYPES = {"int8": 0, "uint8": 1, "bool": 1, "int32": 2, "int64": 4, "float16": 6,
          "float32": 7, "float64": 8, "bfloat16": 9}
_UID_KEY = "nccl/unique_id"


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

    def __init__(self, rank, world_size, store, device_index):
        from .. import cuda
        self.nccl = _nccl()
        self.rank, self.world_size, self.store = rank, world_size, store
        cuda.set_device(device_index)
        self.device_index, self.cuda = device_index, cuda
        self.device = f"cuda:{device_index}"
        if rank == 0:
            store.set(_UID_KEY, bytes(self._call("get_unique_id", self.nccl.get_unique_id)))
        uid = bytearray(store.get(_UID_KEY))
        self.comm = self._call("init", lambda: self.nccl.comm_init_rank_scalable(
            world_size, rank, 1, uid, 0))
        self.stream = cuda.Stream(device_index)
        self._exchanges = 0

    def _call(self, name, fn):
        try:
            return fn()
        except Exception as e:  # nccl4py raises its own error types, NCCL's message inside
            raise DistBackendError(f"NCCL error in {name}: {e}") from None

    def _launch(self, name, tensors, fn):
        """Run `fn(stream_handle)` on the communication stream, ordered after the current one."""
        current = self.cuda.current_stream(self.device_index)
        self.stream.wait_stream(current)
        self._call(name, lambda: fn(self.stream.cuda_stream))
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
        key = f"exchange/{self._exchanges}/"
        self._exchanges += 1
        self.store.set(key + str(self.rank), pickle.dumps(obj))
        return [pickle.loads(v) for v in
                self.store.wait([key + str(r) for r in range(self.world_size)])]

    def shutdown(self):
        self.stream.synchronize()
        self._call("destroy", lambda: self.nccl.comm_destroy(self.comm))


def _uint8():
    from .. import uint8
    return uint8
