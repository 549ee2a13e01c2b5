"""Process groups and the collectives on them, with PyTorch's names and arguments."""

import os
import warnings
from datetime import timedelta

from .backend import Backend
from .debug import DebugLevel, get_debug_level
from .groups import (GroupMember, ProcessGroup, _world, default_group, group_peer,
                     member_group)
from .rendezvous import rendezvous, resolve
from .work import ReduceOp

# PyTorch's defaults: 10 minutes for NCCL, 30 for the CPU backends.
default_pg_timeout = timedelta(minutes=30)
_DEFAULT_TIMEOUT = {"nccl": timedelta(minutes=10), "gloo": default_pg_timeout,
                    "mpi": default_pg_timeout}


def is_available():
    return True


def is_initialized():
    return _world.default_pg is not None


def _debug():
    return get_debug_level() is DebugLevel.DETAIL


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1,
                       store=None, group_name="", pg_options=None, device_id=None):
    """Join the job's process group: `backend` "nccl" (CUDA tensors), "gloo" or "mpi" (CPU
    tensors). Genesis runs one backend per job: a device map such as "cpu:gloo,cuda:nccl" (and
    no backend at all) picks the cuda one where CUDA is available, else the cpu one."""
    if _world.default_pg is not None:
        raise RuntimeError("trying to initialize the default process group twice!")
    backend = _one_backend(backend)
    timeout = timeout or _DEFAULT_TIMEOUT[backend]
    seconds = timeout.total_seconds()
    if backend == "mpi":
        made = _init_mpi(init_method, rank, world_size, seconds)
    elif backend == "nccl":
        made = _init_nccl(init_method, rank, world_size, store, seconds, device_id)
    else:
        made = _init_gloo(init_method, rank, world_size, store, seconds)
    _world.default_pg = ProcessGroup(made, range(made.world_size), "0", timeout)


def _one_backend(backend):
    """The backend this job runs, from a name, a "device:backend,..." map or None."""
    if backend is None or ":" in backend:
        from .. import cuda
        device = "cuda" if cuda.is_available() else "cpu"
        chosen = dict(part.split(":", 1) for part in backend.lower().split(",")) if backend \
            else Backend.default_device_backend_map
        backend = chosen.get(device) or next(iter(chosen.values()))
    backend = Backend(backend)
    if backend not in ("nccl", "gloo", "mpi"):
        raise ValueError(f"init_process_group: unknown backend {backend!r} ('nccl', 'gloo' or "
                         f"'mpi')")
    return backend


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
        return NCCLBackend.create(rank, world_size, store, index or 0)
    host, port, rank, world_size = resolve(init_method, rank, world_size)
    store = rendezvous(host, port, rank, world_size, seconds)
    return _owning(store, lambda: NCCLBackend.create(rank, world_size, store, index or 0))


def _init_gloo(init_method, rank, world_size, store, seconds):
    """The ranks connected to each other through `store` (or the rendezvous's store)."""
    from .gloo_backend import GlooBackend
    if store is not None:
        return GlooBackend.create(store, rank, world_size, seconds)
    host, port, rank, world_size = resolve(init_method, rank, world_size)
    store = rendezvous(host, port, rank, world_size, seconds)
    return _owning(store, lambda: GlooBackend.create(store, rank, world_size, seconds))


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
    """Leave `group` (None: the default group, and with it every group): its ranks meet once
    more, then its communicator (and the store of the default group) closes."""
    world = default_group("destroy_process_group")
    if group is not None and group is not world:
        if isinstance(group, ProcessGroup):
            _close(group)
            _world.groups.remove(group)
        return
    try:
        for sub in _world.groups:
            sub._backend.shutdown()
        _close(world)
    finally:
        if _world.store is not None:
            _world.store.close()
        _world.reset()


def _close(pg):
    pg._backend.barrier().wait()
    pg._backend.shutdown()


def new_group(ranks=None, timeout=None, backend=None, pg_options=None,
              use_local_synchronization=False, group_desc=None, device_id=None,
              sort_ranks=True):
    """A group of the global `ranks` (None: all), with its own communicator. Every rank of the
    job calls it; those outside `ranks` get GroupMember.NON_GROUP_MEMBER."""
    world = default_group("new_group")
    if backend is not None and Backend(backend) != world.name():
        raise ValueError(f"new_group: backend {backend!r} differs from the default group's "
                         f"{world.name()!r}; genesis runs one backend per job")
    if use_local_synchronization and world.name() == Backend.MPI:
        raise ValueError("MPI backend doesn't support use_local_synchronization=True")
    ranks = _group_ranks(ranks, world.size(), sort_ranks)
    _world.group_count += 1
    name = str(_world.group_count)
    made = world._backend.split(ranks, name)
    if made is None:
        return GroupMember.NON_GROUP_MEMBER
    pg = ProcessGroup(made, ranks, name, timeout or world._timeout)
    _world.groups.append(pg)
    return pg


def get_pg_count():
    """How many process groups this rank belongs to: the default one and those made since."""
    return 0 if _world.default_pg is None else 1 + len(_world.groups)


def _group_ranks(ranks, world_size, sort_ranks):
    """`ranks` checked against the world (PyTorch's errors), sorted unless asked not to."""
    if ranks is None:
        return list(range(world_size))
    ranks = sorted(ranks) if sort_ranks else list(ranks)
    if len(set(ranks)) != len(ranks):
        raise ValueError(f"ranks list must not contain duplicate entries, got {ranks}")
    if len(ranks) > world_size:
        raise ValueError("the new group's world size should be less or equal to the world size "
                         "set by init_process_group")
    for r in ranks:
        if not 0 <= r < world_size:
            raise ValueError(f"Rank {r} is out of range. Valid ranks are 0 to "
                             f"{world_size - 1} (world_size={world_size})")
    return ranks


def get_rank(group=None):
    """This process's rank in `group` (None: the default group); -1 outside it."""
    if group == GroupMember.NON_GROUP_MEMBER:
        return -1
    return (group or default_group("get_rank")).rank()


def get_world_size(group=None):
    """The number of ranks in `group` (None: the default group); -1 outside it."""
    if group == GroupMember.NON_GROUP_MEMBER:
        return -1
    return (group or default_group("get_world_size")).size()


def get_backend(group=None):
    if group == GroupMember.NON_GROUP_MEMBER:
        raise ValueError("Invalid process group specified")
    return Backend((group or default_group("get_backend")).name())


def _check(name, backend, *tensors):
    """Tensors of the backend's device, contiguous; in debug mode, the same shapes on all ranks."""
    check_placement(name, backend, *tensors)
    if _debug():
        mine = [(tuple(t.shape), str(t.dtype)) for t in tensors]
        every = backend.exchange((name, mine))
        if any(other != (name, mine) for other in every):
            listing = "; ".join(f"rank {r}: {op} {desc}" for r, (op, desc) in enumerate(every))
            raise RuntimeError(f"{name}: collectives differ across ranks (shapes, dtypes or "
                               f"the collective itself): {listing}")


def check_placement(name, backend, *tensors):
    """Tensors of the backend's device, contiguous."""
    device = "cuda" if backend.name == "nccl" else "cpu"
    for t in tensors:
        if t.device.type != device:
            raise ValueError(f"{name}: the {backend.name} backend works on {device} tensors, "
                             f"got a tensor on {t.device}")
        if not t.is_contiguous():
            raise ValueError(f"{name}: Tensors must be contiguous")


def _finish(work, async_op, outputs=()):
    """`work` (recording `outputs`) for async_op, else None once it is done."""
    work._outputs = list(outputs)
    if async_op:
        return work
    work.wait()
    return None


def _check_op(name, backend, tensor, op):
    """PyTorch's errors for ops the backend lacks, bitwise ops on floats, AVG on integers."""
    if not isinstance(op, ReduceOp):
        raise TypeError(f"{name}: op must be a ReduceOp, got {op!r}")
    if op not in backend.reduce_ops:
        raise ValueError(f"Cannot use {op} with {backend.name.upper()}")
    bitwise = (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR)
    if op in bitwise and (tensor.dtype.is_floating_point or tensor.dtype.is_complex):
        raise RuntimeError(f"Cannot use {op} with non-integral dtype")
    if op is ReduceOp.AVG and not tensor.dtype.is_floating_point:
        raise ValueError(f"{name}: ReduceOp.AVG needs a floating-point tensor, got "
                         f"{tensor.dtype}")


def root_rank(name, what, pg, global_rank, group_rank, default=None):
    """The group rank named by `global_rank` or `group_rank`, checked against the group."""
    r = group_peer(pg, global_rank, group_rank, default)
    if not 0 <= r < pg.size():
        raise ValueError(f"{name}: {what}={r} is not a rank of a world of {pg.size()}")
    return r


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce `tensor` over the group's ranks, in place; every rank gets the result."""
    pg = member_group("all_reduce", group)
    if pg is None:
        return None
    _check_op("all_reduce", pg._backend, tensor, op)
    _check("all_reduce", pg._backend, tensor)
    return _finish(pg._backend.all_reduce(tensor, op), async_op, [tensor])


def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    """Copy rank `src`'s `tensor` into every rank's `tensor`."""
    pg = member_group("broadcast", group)
    if pg is None:
        return None
    root = root_rank("broadcast", "src", pg, src, group_src)
    _check("broadcast", pg._backend, tensor)
    return _finish(pg._backend.broadcast(tensor, root), async_op, [tensor])


def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op=False, group_dst=None):
    """Reduce `tensor` over the group's ranks into rank `dst`'s `tensor`."""
    pg = member_group("reduce", group)
    if pg is None:
        return None
    root = root_rank("reduce", "dst", pg, dst, group_dst)
    _check_op("reduce", pg._backend, tensor, op)
    _check("reduce", pg._backend, tensor)
    return _finish(pg._backend.reduce(tensor, root, op), async_op, [tensor])


def all_gather_single(output_tensor, input_tensor, group=None, async_op=False):
    """Every rank's `input_tensor`, concatenated (or stacked) along dim 0 in rank order, into
    `output_tensor`."""
    pg = member_group("all_gather_single", group)
    if pg is None:
        return None
    same_dtype("all_gather_single", [output_tensor, input_tensor])
    _check_sizes("all_gather_single", output_tensor, input_tensor, pg.size())
    _check("all_gather_single", pg._backend, output_tensor, input_tensor)
    return _finish(pg._backend.all_gather_into_tensor(output_tensor, input_tensor), async_op,
                   [output_tensor])


def reduce_scatter_single(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce `input` over the group; group rank r gets the r-th of its equal dim-0 chunks."""
    pg = member_group("reduce_scatter_single", group)
    if pg is None:
        return None
    _check_op("reduce_scatter_single", pg._backend, input, op)
    same_dtype("reduce_scatter_single", [output, input])
    _check_sizes("reduce_scatter_single", input, output, pg.size())
    _check("reduce_scatter_single", pg._backend, output, input)
    return _finish(pg._backend.reduce_scatter_tensor(output, input, op), async_op, [output])


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """all_gather_single's former name, deprecated as in torch 2.13."""
    _deprecated("all_gather_into_tensor", "all_gather_single")
    return all_gather_single(output_tensor, input_tensor, group, async_op)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """reduce_scatter_single's former name, deprecated as in torch 2.13."""
    _deprecated("reduce_scatter_tensor", "reduce_scatter_single")
    return reduce_scatter_single(output, input, op, group, async_op)


def _deprecated(old, new):
    warnings.warn(f"`torch.distributed.{old}` is deprecated. Please use "
                  f"`torch.distributed.{new}` instead.", FutureWarning, stacklevel=3)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce the ranks' `input_list`s element by element; group rank r gets `input_list[r]`'s
    reduction (one reduce_scatter_single of the stacked list)."""
    _check_tensor_list("reduce_scatter", input_list, "input_list")
    same_dtype("reduce_scatter", [output] + input_list)
    pg = member_group("reduce_scatter", group)
    if pg is None:
        return None
    if len(input_list) != pg.size() or any(t.numel() != output.numel() for t in input_list):
        raise ValueError(f"reduce_scatter: input_list must hold {pg.size()} tensors of the "
                         f"output's {output.numel()} elements, got shapes "
                         f"{[tuple(t.shape) for t in input_list]}")
    from .. import stack
    flat = stack([t.reshape(-1) for t in input_list])
    return reduce_scatter_single(output, flat, op, pg, async_op)


def all_reduce_coalesced(tensors, op=ReduceOp.SUM, group=None, async_op=False):
    """all_reduce of several tensors of one dtype as one flat buffer, each written back."""
    warnings.warn("`torch.distributed.all_reduce_coalesced` will be deprecated. If you must "
                  "use it, please revisit our documentation later at "
                  "https://pytorch.org/docs/main/distributed.html#collective-functions",
                  FutureWarning, stacklevel=2)
    tensors = [tensors] if not isinstance(tensors, (list, tuple)) else tensors
    _check_tensor_list("all_reduce_coalesced", list(tensors), "tensor")
    same_dtype("all_reduce_coalesced", tensors)
    if not tensors:
        return None
    from .. import cat
    flat = cat([t.reshape(-1) for t in tensors])
    work = all_reduce(flat, op, group, async_op=True)
    if work is None:
        return None
    parts = flat.split([t.numel() for t in tensors])
    return _finish(then_copy(work, tensors, parts), async_op, tensors)


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None,
                      group=None, async_op=False):
    """Rank r's dim-0 chunk j of `input` (sizes `input_split_sizes`, else equal) to rank j,
    which takes the chunks of all ranks, in rank order, into `output` (sizes
    `output_split_sizes`, else equal)."""
    pg = member_group("all_to_all_single", group)
    if pg is None:
        return None
    same_dtype("all_to_all_single", [output, input])
    check_placement("all_to_all_single", pg._backend, output, input)
    counts = [_split_counts(t, sizes, pg.size())
              for t, sizes in ((output, output_split_sizes), (input, input_split_sizes))]
    return _finish(pg._backend.all_to_all_single(output, input, *counts), async_op, [output])


def _split_counts(tensor, split_sizes, group_size):
    """Element counts of `tensor`'s dim-0 chunks, one per rank (PyTorch's split checks)."""
    rows = tensor.shape[0] if tensor.dim() else 1
    if not split_sizes:
        if rows % group_size:
            raise RuntimeError(f"all_to_all_single: Tensor's dim 0 does not divide equally "
                               f"across group size (dim 0 is {rows}, group size {group_size})")
        split_sizes = [rows // group_size] * group_size
    elif len(split_sizes) != group_size:
        raise RuntimeError(f"all_to_all_single: Number of tensor splits not equal to group "
                           f"size ({len(split_sizes)} splits, group size {group_size})")
    elif sum(split_sizes) != rows:
        raise RuntimeError(f"all_to_all_single: Split sizes doesn't match total dim 0 size "
                           f"(splits {list(split_sizes)}, dim 0 is {rows})")
    row = tensor.numel() // rows if rows else 0
    return [int(n) * row for n in split_sizes]


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    """`input_tensor_list[j]` of rank r into rank j's `output_tensor_list[r]` (one
    all_to_all_single over the lists' concatenations)."""
    _check_tensor_list("all_to_all", output_tensor_list, "output_tensor_list")
    _check_tensor_list("all_to_all", input_tensor_list, "input_tensor_list")
    same_dtype("all_to_all", output_tensor_list + input_tensor_list)
    pg = member_group("all_to_all", group)
    if pg is None:
        return None
    for what, tensors in (("output", output_tensor_list), ("input", input_tensor_list)):
        if len(tensors) != pg.size():
            raise ValueError(f"all_to_all: {what}_tensor_list has {len(tensors)} tensors for "
                             f"a group of {pg.size()}")
    from .. import cat, empty
    flat_in = cat([t.reshape(-1) for t in input_tensor_list])
    sizes_out = [t.numel() for t in output_tensor_list]
    flat_out = empty(sum(sizes_out), dtype=flat_in.dtype, device=flat_in.device)
    work = all_to_all_single(flat_out, flat_in, sizes_out,
                             [t.numel() for t in input_tensor_list], pg, async_op=True)
    return _finish(then_copy(work, output_tensor_list, flat_out.split(sizes_out)), async_op,
                   output_tensor_list)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """Every rank's `tensor` into `tensor_list[rank]` (one all_gather into a flat buffer)."""
    pg = member_group("all_gather", group)
    if pg is None:
        return None
    if len(tensor_list) != pg.size():
        raise ValueError(f"all_gather: tensor_list has {len(tensor_list)} tensors for a world "
                         f"of {pg.size()}")
    from .. import empty
    flat = empty((pg.size(), *tensor.shape), dtype=tensor.dtype, device=tensor.device)
    work = all_gather_single(flat, tensor.contiguous(), pg, async_op=True)
    return _finish(then_copy(work, tensor_list, flat), async_op, tensor_list)


def gather(tensor, gather_list=None, dst=None, group=None, async_op=False, group_dst=None):
    """Every rank's `tensor` into `gather_list` on rank `dst` (through all_gather)."""
    pg = member_group("gather", group)
    if pg is None:
        return None
    root = root_rank("gather", "dst", pg, dst, group_dst, default=0)
    output_list_only_on_root("gather_list", pg.rank(), root, gather_list)
    from .. import empty
    targets = gather_list if pg.rank() == root else \
        [empty(tensor.shape, dtype=tensor.dtype, device=tensor.device) for _ in range(pg.size())]
    return all_gather(targets, tensor, pg, async_op=async_op)


def scatter(tensor, scatter_list=None, src=None, group=None, async_op=False, group_src=None):
    """`scatter_list[r]` of rank `src` into group rank r's `tensor` (through one broadcast)."""
    pg = member_group("scatter", group)
    if pg is None:
        return None
    root = root_rank("scatter", "src", pg, src, group_src, default=0)
    from .. import empty, stack
    if pg.rank() == root:
        if not scatter_list:
            raise ValueError("Argument ``scatter_list`` must be specified on source rank.")
        if len(scatter_list) != pg.size():
            raise ValueError(f"scatter: rank {root} needs a scatter_list of {pg.size()} tensors, "
                             f"got {len(scatter_list)}")
        flat = stack([t.to(tensor.dtype) for t in scatter_list]).contiguous()
    elif scatter_list:
        raise ValueError("Argument ``scatter_list`` must NOT be specified on non-source ranks.")
    else:
        flat = empty((pg.size(), *tensor.shape), dtype=tensor.dtype, device=tensor.device)
    work = broadcast(flat, group=pg, async_op=True, group_src=root)
    return _finish(then_copy(work, [tensor], flat[pg.rank():]), async_op, [tensor])


def barrier(group=None, async_op=False, device_ids=None, timeout=None):
    """Wait until every rank of the group has reached this call."""
    pg = member_group("barrier", group)
    return None if pg is None else _finish(pg._backend.barrier(), async_op)


def monitored_barrier(group=None, timeout=None, wait_all_ranks=False):
    """A barrier that names the ranks which did not reach it within `timeout` (default: the
    group's): rank 0 hears from every other rank, then answers each (gloo and mpi backends)."""
    pg = member_group("monitored_barrier", group)
    if pg is None:
        return None
    if pg.name() not in (Backend.GLOO, Backend.MPI):
        raise ValueError("monitored_barrier is only implemented for GLOO backend (and MPI in "
                         "genesis).")
    if isinstance(timeout, float):
        warnings.warn(f"Please specify timeout arg as a timedelta. Converting current value of "
                      f"{timeout} assuming it represents seconds", stacklevel=2)
        timeout = timedelta(seconds=timeout)
    timeout = pg._timeout if timeout is None else timeout
    if not isinstance(timeout, timedelta):
        raise TypeError(f"Expected timeout argument to be of type datetime.timedelta, got "
                        f"{type(timeout)}")
    pg._backend.monitored_barrier(timeout, wait_all_ranks)


def all_gather_object(object_list, obj, group=None):
    """Every rank's picklable `obj` into `object_list[rank]`."""
    pg = member_group("all_gather_object", group)
    if pg is not None:
        object_list[:] = pg._backend.exchange(obj)


def then_copy(work, targets, parts):
    """A Work that, once `work` is done, copies `parts` (rows or views of one buffer) into
    `targets`."""
    from .work import Work

    def wait():
        work.wait()
        for target, part in zip(targets, parts):
            target.copy_(part.reshape(target.shape))
    return Work(wait, work.is_completed)


def output_list_only_on_root(what, rank, root, output_list):
    if rank == root and not output_list:
        raise ValueError(f"Argument ``{what}`` must be specified on destination rank.")
    if rank != root and output_list:
        raise ValueError(f"Argument ``{what}`` must NOT be specified on non-destination ranks.")


def _check_tensor_list(name, tensors, what):
    from ..tensor import Tensor
    if not isinstance(tensors, list) or not all(isinstance(t, Tensor) for t in tensors):
        raise TypeError(f"{name}: Invalid function argument. Expected parameter `{what}` of "
                        f"type List[Tensor] but got {type(tensors)}")


def same_dtype(name, tensors):
    dtypes = {t.dtype for t in tensors}
    if len(dtypes) > 1:
        raise ValueError(f"{name}: Invalid usage of tensors with different dtypes: "
                         f"{sorted(str(d) for d in dtypes)}")


def _check_sizes(name, big, small, world_size):
    if big.numel() != small.numel() * world_size:
        raise ValueError(f"{name}: the larger tensor must have world_size ({world_size}) times "
                         f"the elements of the smaller one, got shapes {tuple(big.shape)} and "
                         f"{tuple(small.shape)}")
