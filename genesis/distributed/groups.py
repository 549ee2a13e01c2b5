"""Process groups: the default one `init_process_group` makes and those `new_group` makes from a
subset of its ranks, each with its own communicator, and the translation between global ranks
and a group's ranks."""

import os
import warnings


class ProcessGroup:
    """Some ranks of the job, in group-rank order, and the backend over their communicator."""

    def __init__(self, backend, ranks, group_name, timeout):
        self._backend, self._ranks, self.group_name = backend, list(ranks), group_name
        self._group_rank = {g: i for i, g in enumerate(self._ranks)}
        self._timeout = timeout
        backend.timeout = timeout.total_seconds()  # how long gloo waits for a peer

    def rank(self):
        return self._backend.rank

    def size(self):
        return self._backend.world_size

    def name(self):
        return self._backend.name

    def __repr__(self):
        return f"ProcessGroup(name={self.group_name!r}, backend={self.name()!r}, " \
               f"ranks={self._ranks})"


class _World:
    """What `init_process_group` sets up: the default group, the store it made (if any), the
    groups made since, and how many `new_group` calls named one (every rank counts each)."""

    def __init__(self):
        self.reset()

    def reset(self):
        self.default_pg = self.store = None
        self.groups, self.group_count = [], 0


_world = _World()


class _WorldMeta(type):
    """Gives `group` and `GroupMember` the class property WORLD: the default group, or None."""

    @property
    def WORLD(cls):
        return _world.default_pg


class group(metaclass=_WorldMeta):
    """`group.WORLD` is the default process group."""


class GroupMember(metaclass=_WorldMeta):
    """`GroupMember.WORLD` is the default group; `new_group` gives the ranks outside the new
    group NON_GROUP_MEMBER."""

    NON_GROUP_MEMBER = -100


def group_or_world(process_group):
    """`process_group`, or the default group where it is None (what `process_group=None`
    means to the hooks, averagers and optimizers of genesis.distributed)."""
    return process_group if process_group is not None else group.WORLD


def default_group(name):
    if _world.default_pg is None:
        raise ValueError(f"{name}: Default process group has not been initialized, please "
                         f"make sure to call init_process_group.")
    return _world.default_pg


def member_group(name, group):
    """The ProcessGroup `group` stands for (None: the default), or None with PyTorch's warning
    where this rank is outside it."""
    world = default_group(name)
    if group is None:
        return world
    if not isinstance(group, ProcessGroup):
        warnings.warn(f"Running {name} on global rank {world.rank()} which does not belong to "
                      f"the given group.", stacklevel=3)
        return None
    return group


def _registered(group):
    if not isinstance(group, ProcessGroup) or (group is not _world.default_pg and
                                               group not in _world.groups):
        raise ValueError(f"Group {group} is not registered, please create group with "
                         f"genesis.distributed.new_group API")
    return group


def get_group_rank(group, global_rank):
    """`global_rank`'s rank in `group` (the default group: the same number)."""
    if group is GroupMember.WORLD:
        return global_rank
    ranks = _registered(group)._group_rank
    if global_rank not in ranks:
        raise ValueError(f"Global rank {global_rank} is not part of group {group}")
    return ranks[global_rank]


def get_global_rank(group, group_rank):
    """The global rank of `group`'s rank `group_rank` (the default group: the same number)."""
    if group is GroupMember.WORLD:
        return group_rank
    ranks = _registered(group)._ranks
    if not 0 <= group_rank < len(ranks):
        raise ValueError(f"Group rank {group_rank} is not part of group {group}")
    return ranks[group_rank]


def get_process_group_ranks(group):
    """The global ranks of `group` (None: the default group), in group-rank order."""
    return list(_registered(group or default_group("get_process_group_ranks"))._ranks)


def group_peer(pg, global_rank, group_rank, default=None):
    """The group rank that a collective's `src`/`dst` (a global rank) or `group_src`/`group_dst`
    names; `default` is the global rank taken when neither is given."""
    if group_rank is not None:
        if global_rank is not None:
            raise ValueError("Can't specify both group_rank and global_rank")
        return group_rank
    global_rank = default if global_rank is None else global_rank
    if global_rank is None:
        raise ValueError("Must specify global_rank or group_rank")
    return get_group_rank(pg, global_rank)


def get_node_local_rank(fallback_rank=None):
    """This process's rank on its node: LOCAL_RANK as the launcher sets it, else
    `fallback_rank`."""
    if "LOCAL_RANK" in os.environ:
        return int(os.environ["LOCAL_RANK"])
    if fallback_rank is not None:
        return int(fallback_rank)
    raise RuntimeError(
        "LOCAL_RANK is not in the environment. Consider passing fallback_rank to allow "
        "`get_node_local_rank` to work, assuming you are not running in a multi-device context "
        "and want the code to run locally instead.")
