"""Partitions of a group's ranks into subgroups, each rank getting its own (PyTorch's
new_subgroups and new_subgroups_by_enumeration)."""

from .groups import get_process_group_ranks
from .process_group import get_rank, get_world_size, new_group


def new_subgroups(group_size=None, group=None, timeout=None, backend=None, pg_options=None,
                  group_desc=None):
    """`group`'s ranks (None: the world) cut into consecutive subgroups of `group_size` (None:
    the number of GPUs); returns (this rank's subgroup, all of them)."""
    if group_size is None:
        from .. import cuda
        if not cuda.is_available():
            raise ValueError("Default group size only takes effect when CUDA is available.If "
                             "your subgroup using a backend that does not depend on CUDA,please "
                             "pass in 'group_size' correctly.")
        group_size = cuda.device_count()
    if group_size <= 0:
        raise ValueError(f"The arg 'group_size' ({group_size}) must be positive")
    world_size = get_world_size(group=group)
    if world_size < group_size:
        raise ValueError(f"The arg 'group_size' ({group_size}) must not exceed the world size "
                         f"({world_size})")
    if world_size % group_size != 0:
        raise ValueError(f"The world size ({world_size}) must be divisible by "
                         f"'group_size={group_size}'")
    ranks = get_process_group_ranks(group)
    return new_subgroups_by_enumeration([ranks[i:i + group_size]
                                         for i in range(0, len(ranks), group_size)],
                                        timeout, backend, pg_options, group_desc)


def new_subgroups_by_enumeration(ranks_per_subgroup_list, timeout=None, backend=None,
                                 pg_options=None, group_desc=None):
    """A subgroup per list of global ranks (disjoint lists); returns (this rank's subgroup, or
    None, and all of them)."""
    if not ranks_per_subgroup_list:
        raise ValueError("The arg 'ranks_per_subgroup_list' cannot be empty")
    subgroups, mine, owner = [], None, {}
    for ranks in ranks_per_subgroup_list:
        subgroup = new_group(ranks=ranks, timeout=timeout, backend=backend,
                             pg_options=pg_options, group_desc=group_desc)
        subgroups.append(subgroup)
        for rank in ranks:
            if rank in owner:
                raise ValueError(f"Rank {rank} has appeared in both subgroup {owner[rank]} and "
                                 f"{ranks}")
            owner[rank] = ranks
            if rank == get_rank():
                mine = subgroup
    return mine, subgroups
