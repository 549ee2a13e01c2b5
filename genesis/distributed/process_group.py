"""The default process group and the collectives on it, with PyTorch's names and arguments."""

import os
from datetime import timedelta

from .rendezvous import rendezvous, resolve
from .work import ReduceOp

_DEFAULT_TIMEOUT = timedelta(minutes=10)


class _World:
    """The state `init_process_group` sets up: the backend and the store it made, if any."""

    backend = None
    store = None


_world = _World()


def is_available():
    return True


def is_initialized():
    return _world.backend is not None


def _require_init(name):
    if _world.backend is None:
        raise ValueError(f"{name}: Default process group has not been initialized, please "
                         f"make sure to call init_process_group.")
    return _world.backend


def _debug():
    return os.environ.get("GENESIS_DISTRIBUTED_DEBUG", "0") not in ("", "0")


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1,
                       store=None, group_name="", pg_options=None, device_id=None):
    """Join the job's process group: `backend` "nccl" (CUDA tensors) or "mpi" (CPU tensors)."""
    if _world.backend is not None:
        raise RuntimeError("trying to initialize the default process group twice!")
    from .. import cuda
    backend = (backend or ("nccl" if cuda.is_available() else "mpi")).lower()
    seconds = (timeout or _DEFAULT_TIMEOUT).total_seconds()
    if backend == "mpi":
        _world.backend = _init_mpi(init_method, rank, world_size, seconds)
    elif backend == "nccl":
        _world.backend = _init_nccl(init_method, rank, world_size, store, seconds, device_id)
    else:
        raise ValueError(f"init_process_group: unknown backend {backend!r} ('nccl' or 'mpi')")


def _init_mpi(init_method, rank, world_size, seconds):
    """MPI_COMM_WORLD when mpiexec started the whole world, else the processes joined through
    the rendezvous (each started alone, as by the launcher with --mpi)."""
    from .mpi_backend import MPIBackend, require_mpiexec, world_comm_size
    wanted = world_size if world_size != -1 else int(os.environ.get("WORLD_SIZE", 1))
    if wanted == 1 or world_comm_size() > 1:
        return MPIBackend(None if rank == -1 else rank, None if world_size == -1 else world_size)
    require_mpiexec()
    host, port, rank, world_size = resolve(init_method, rank, world_size)
    store = rendezvous(host, port, rank, world_size, seconds)
    return _owning(store, lambda: MPIBackend.joined(store, rank, world_size))


def _init_nccl(init_method, rank, world_size, store, seconds, device_id):
    from .nccl_backend import NCCLBackend
    index = device_id.index if device_id is not None else int(os.environ.get("LOCAL_RANK", 0))
    if store is not None:
        return NCCLBackend(rank, world_size, store, index or 0)
    host, port, rank, world_size = resolve(init_method, rank, world_size)
    store = rendezvous(host, port, rank, world_size, seconds)
    return _owning(store, lambda: NCCLBackend(rank, world_size, store, index or 0))


def _owning(store, make_backend):
    """`make_backend()`, keeping `store` to close at destroy, or closing it now if that fails."""
    try:
        backend = make_backend()
    except BaseException:
        store.close()
        raise
    _world.store = store
    return backend


def destroy_process_group(group=None):
    """Leave the process group: all ranks meet once more, then the backend and store close."""
    backend = _require_init("destroy_process_group")
    try:
        backend.barrier().wait()
        backend.shutdown()
    finally:
        if _world.store is not None:
            _world.store.close()
        _world.backend = _world.store = None


def get_rank(group=None):
    return _require_init("get_rank").rank


def get_world_size(group=None):
    return _require_init("get_world_size").world_size


def get_backend(group=None):
    return _require_init("get_backend").name


def _check(name, backend, *tensors):
    """Tensors of the backend's device, contiguous; in debug mode, the same shapes on all ranks."""
    device = "cuda" if backend.name == "nccl" else "cpu"
    for t in tensors:
        if t.device.type != device:
            raise ValueError(f"{name}: the {backend.name} backend works on {device} tensors, "
                             f"got a tensor on {t.device}")
        if not t.is_contiguous():
            raise ValueError(f"{name}: Tensors must be contiguous")
    if _debug():
        mine = [(tuple(t.shape), str(t.dtype)) for t in tensors]
        every = backend.exchange((name, mine))
        if any(other != (name, mine) for other in every):
            listing = "; ".join(f"rank {r}: {op} {desc}" for r, (op, desc) in enumerate(every))
            raise RuntimeError(f"{name}: collectives differ across ranks (shapes, dtypes or "
                               f"the collective itself): {listing}")


def _finish(work, async_op):
    if async_op:
        return work
    work.wait()
    return None


def _check_op(name, tensor, op):
    if not isinstance(op, ReduceOp):
        raise TypeError(f"{name}: op must be a ReduceOp, got {op!r}")
    if op is ReduceOp.AVG and not tensor.dtype.is_floating_point:
        raise ValueError(f"{name}: ReduceOp.AVG needs a floating-point tensor, got "
                         f"{tensor.dtype}")


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce `tensor` over all ranks, in place; every rank gets the result."""
    backend = _require_init("all_reduce")
    _check_op("all_reduce", tensor, op)
    _check("all_reduce", backend, tensor)
    return _finish(backend.all_reduce(tensor, op), async_op)


def broadcast(tensor, src, group=None, async_op=False):
    """Copy rank `src`'s `tensor` into every rank's `tensor`."""
    backend = _require_init("broadcast")
    _check_rank("broadcast", "src", src, backend)
    _check("broadcast", backend, tensor)
    return _finish(backend.broadcast(tensor, src), async_op)


def reduce(tensor, dst, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce `tensor` over all ranks into rank `dst`'s `tensor`."""
    backend = _require_init("reduce")
    _check_rank("reduce", "dst", dst, backend)
    _check_op("reduce", tensor, op)
    _check("reduce", backend, tensor)
    return _finish(backend.reduce(tensor, dst, op), async_op)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """Every rank's `input_tensor`, concatenated along dim 0 in rank order, into `output_tensor`."""
    backend = _require_init("all_gather_into_tensor")
    _check_sizes("all_gather_into_tensor", output_tensor, input_tensor, backend.world_size)
    _check("all_gather_into_tensor", backend, output_tensor, input_tensor)
    return _finish(backend.all_gather_into_tensor(output_tensor, input_tensor), async_op)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce `input` over all ranks; rank r gets the r-th of `world_size` equal dim-0 chunks."""
    backend = _require_init("reduce_scatter_tensor")
    _check_op("reduce_scatter_tensor", input, op)
    _check_sizes("reduce_scatter_tensor", input, output, backend.world_size)
    _check("reduce_scatter_tensor", backend, output, input)
    return _finish(backend.reduce_scatter_tensor(output, input, op), async_op)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """Every rank's `tensor` into `tensor_list[rank]` (one all_gather into a flat buffer)."""
    backend = _require_init("all_gather")
    if len(tensor_list) != backend.world_size:
        raise ValueError(f"all_gather: tensor_list has {len(tensor_list)} tensors for a world "
                         f"of {backend.world_size}")
    from .. import empty
    flat = empty((backend.world_size, *tensor.shape), dtype=tensor.dtype, device=tensor.device)
    work = all_gather_into_tensor(flat, tensor.contiguous(), async_op=True)
    return _finish(_then_copy(work, tensor_list, flat), async_op)


def gather(tensor, gather_list=None, dst=0, group=None, async_op=False):
    """Every rank's `tensor` into `gather_list` on rank `dst` (through all_gather)."""
    backend = _require_init("gather")
    _check_rank("gather", "dst", dst, backend)
    if backend.rank == dst and gather_list is None:
        raise ValueError("gather: gather_list is required on the destination rank")
    from .. import empty
    targets = gather_list if backend.rank == dst else \
        [empty(tensor.shape, dtype=tensor.dtype, device=tensor.device)
         for _ in range(backend.world_size)]
    return all_gather(targets, tensor, async_op=async_op)


def scatter(tensor, scatter_list=None, src=0, group=None, async_op=False):
    """`scatter_list[r]` of rank `src` into rank r's `tensor` (through one broadcast)."""
    backend = _require_init("scatter")
    _check_rank("scatter", "src", src, backend)
    from .. import empty, stack
    if backend.rank == src:
        if scatter_list is None or len(scatter_list) != backend.world_size:
            raise ValueError(f"scatter: rank {src} needs a scatter_list of "
                             f"{backend.world_size} tensors")
        flat = stack([t.to(tensor.dtype) for t in scatter_list]).contiguous()
    else:
        flat = empty((backend.world_size, *tensor.shape), dtype=tensor.dtype,
                     device=tensor.device)
    work = broadcast(flat, src, async_op=True)
    return _finish(_then_copy(work, [tensor], flat[backend.rank:]), async_op)


def barrier(group=None, async_op=False, device_ids=None):
    """Wait until every rank has reached this call."""
    return _finish(_require_init("barrier").barrier(), async_op)


def all_gather_object(object_list, obj, group=None):
    """Every rank's picklable `obj` into `object_list[rank]`."""
    object_list[:] = _require_init("all_gather_object").exchange(obj)


def _then_copy(work, targets, flat):
    """A Work that, once `work` is done, copies the rows of `flat` into `targets`."""
    from .work import Work

    def wait():
        work.wait()
        for target, row in zip(targets, flat):
            target.copy_(row.reshape(target.shape))
    return Work(wait, work.is_completed)


def _check_rank(name, what, r, backend):
    if not 0 <= r < backend.world_size:
        raise ValueError(f"{name}: {what}={r} is not a rank of a world of {backend.world_size}")


def _check_sizes(name, big, small, world_size):
    if big.numel() != small.numel() * world_size:
        raise ValueError(f"{name}: the larger tensor must have world_size ({world_size}) times "
                         f"the elements of the smaller one, got shapes {tuple(big.shape)} and "
                         f"{tuple(small.shape)}")

