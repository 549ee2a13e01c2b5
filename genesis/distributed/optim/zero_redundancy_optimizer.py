"""ZeroRedundancyOptimizer: an optimizer whose state is sharded over a process group (ZeRO).

The parameters of each group are partitioned over the ranks, largest first, each to the rank
holding the fewest elements so far. A rank keeps a local optimizer (of `optimizer_class`) over
its shard only, so it holds the state of those parameters alone; after each local step, every
rank broadcasts its shard, and all ranks end with the same parameters.
"""

import logging
from itertools import chain

from ...autograd.grad_mode import no_grad
from ...ops.legacy import typename
from ...optim.optimizer import Optimizer, _cast_state
from ...tensor import Tensor
from ..algorithms.join import Join, Joinable, JoinHook
from ..groups import group_or_world
from ..objects import gather_object
from ..process_group import broadcast, get_rank, get_world_size

__all__ = ["ZeroRedundancyOptimizer"]

logger = logging.getLogger(__name__)


def _to_cpu(value):
    """A copy of `value` with every tensor in its lists, tuples and dicts moved to the CPU."""
    if isinstance(value, Tensor):
        return value.to("cpu")
    if isinstance(value, (list, tuple)):
        return type(value)(_to_cpu(v) for v in value)
    if isinstance(value, dict):
        return {k: _to_cpu(v) for k, v in value.items()}
    return value


def _greedy_partition(param_groups, world_size):
    """Each rank's parameter groups: a copy of every group holding the parameters it gets when
    each parameter, largest first, goes to the rank with the fewest elements so far (counted
    over all groups, ties to the lowest rank)."""
    per_rank = [[] for _ in range(world_size)]
    sizes = [0] * world_size
    for param_group in param_groups:
        shards = [[] for _ in range(world_size)]
        for param in sorted(param_group["params"], key=lambda t: t.numel(), reverse=True):
            rank = sizes.index(min(sizes))
            shards[rank].append(param)
            sizes[rank] += param.numel()
        for rank, params in enumerate(shards):
            per_rank[rank].append({**param_group, "params": params})
    return per_rank


def _flat_bucket(params, device):
    """One flat buffer on `device` holding the trainable ones of `params`, which become views of
    it; the others get storage of their own. A one-element zero buffer if none trains."""
    from ... import empty, zeros
    trainable = [p for p in params if p.requires_grad]
    with no_grad():
        for param in params:
            if not param.requires_grad:
                param.data = param.data.detach().clone()
        if not trainable:
            return zeros(1, device=device)
        bucket = empty(sum(p.numel() for p in trainable), dtype=trainable[-1].dtype,
                       device=device)
        offset = 0
        for param in trainable:
            view = bucket[offset:offset + param.numel()]
            view.copy_(param.data.flatten())
            param.data = view.view_as(param.data)
            offset += param.numel()
    return bucket


def _sync_param_groups(src_param_groups, dst_param_groups):
    """Copy every hyperparameter (all but "params") of each source group to its destination."""
    if len(src_param_groups) != len(dst_param_groups):
        raise AssertionError("Mismatch between number of source and destination parameter "
                             "groups")
    for src, dst in zip(src_param_groups, dst_param_groups):
        dst.update({k: v for k, v in src.items() if k != "params"})


class _ZeROJoinHook(JoinHook):
    """A joined rank steps as the active ranks do, so that it broadcasts its shard to them."""

    def __init__(self, zero):
        if not isinstance(zero, ZeroRedundancyOptimizer):
            raise AssertionError("ZeRO join hook requires passing in a ZeroRedundancyOptimizer "
                                 "instance as the state")
        self.zero = zero
        super().__init__()

    def main_hook(self):
        """Step (without gradients) to match the active ranks' broadcasts."""
        self.zero.step()


class ZeroRedundancyOptimizer(Optimizer, Joinable):
    """`ZeroRedundancyOptimizer(params, optimizer_class, process_group=None,
    parameters_as_bucket_view=False, overlap_with_ddp=False, **defaults)`: `optimizer_class`
    (built with `defaults`) steps this rank's shard; `parameters_as_bucket_view` makes each
    rank's parameters views of one flat buffer per device, broadcast as one tensor."""

    def __init__(self, params, optimizer_class, process_group=None,
                 parameters_as_bucket_view=False, overlap_with_ddp=False, **defaults):
        if overlap_with_ddp:
            raise NotImplementedError("ZeroRedundancyOptimizer: overlap_with_ddp=True (stepping "
                                      "inside DDP's communication hook) is not supported by "
                                      "genesis; pass overlap_with_ddp=False")
        params = self._verify_and_init_params(params)
        self._verify_same_dense_param_type()
        self.initialized = False
        Optimizer.__init__(self, params, defaults)
        Joinable.__init__(self)
        self._clear_cache()
        self._is_trainable_mask = self._get_is_trainable_mask()
        self._default_device = self._all_params[0].device
        self.process_group = group_or_world(process_group)
        self.world_size = get_world_size(self.process_group)
        self.rank = get_rank(self.process_group)
        self._overlap_with_ddp = False
        self._optim_defaults = defaults
        self._optim_constructor = optimizer_class
        self._init_local_optimizer()
        self.parameters_as_bucket_view = parameters_as_bucket_view
        self._buckets = []
        self._build_param_buckets()
        self._all_state_dicts = []
        self.initialized = True

    def _verify_and_init_params(self, params):
        """The constructor's parameters as a list (of tensors or of groups), checked; records
        every parameter in `_all_params`."""
        if isinstance(params, Tensor):
            raise TypeError("`params` argument should be an iterable of Tensors, but got "
                            f"{typename(params)}")
        try:
            all_params = list(params)
        except TypeError as e:
            raise TypeError("`params` argument should be an iterable of Tensors or dicts, but "
                            f"got {typename(params)}") from e
        if len(all_params) == 0:
            raise ValueError("ZeroRedundancyOptimizer got an empty parameter list")
        if all(isinstance(p, Tensor) for p in all_params):
            self._all_params = all_params
            return all_params
        if not all(isinstance(p, dict) for p in all_params):
            raise TypeError("`params` argument should be an iterable of Tensors or dicts")
        if any("params" not in g for g in all_params):
            raise ValueError("Each parameter group passed-in via `params` must have a 'params' "
                             "key mapping to the parameters in the group")
        self._all_params = [p for g in all_params for p in g["params"]]
        return all_params

    def _verify_same_dense_param_type(self):
        """PyTorch's error for parameters of different tensor types (dtypes or devices)."""
        first = typename(self._all_params[0])
        for param in self._all_params[1:]:
            if typename(param) != first:
                raise ValueError("ZeroRedundancyOptimizer only supports using the same dense "
                                 f"type for all parameters but got both {first} and "
                                 f"{typename(param)}")

    def _get_is_trainable_mask(self):
        return [p.requires_grad for p in self._all_params]

    def _init_local_optimizer(self):
        """The optimizer over this rank's shard, its groups' hyperparameters copied back."""
        self.optim = self._optim_constructor(self._partition_parameters()[self.rank],
                                             **self._optim_defaults)
        _sync_param_groups(self.optim.param_groups, self.param_groups)

    def _clear_cache(self):
        """Forget the partition and the maps derived from it (the groups changed)."""
        self._partition_parameters_cache = []
        self._param_to_rank_cache = {}
        self._device_to_params_per_rank_cache = {}

    def _partition_parameters(self):
        """Each rank's parameter groups (_greedy_partition of this optimizer's groups)."""
        if not self._partition_parameters_cache:
            self._partition_parameters_cache = _greedy_partition(self.param_groups,
                                                                 self.world_size)
        return self._partition_parameters_cache

    @property
    def _param_to_rank(self):
        """{id(param): the rank that owns it}."""
        if not self._param_to_rank_cache:
            self._param_to_rank_cache = {
                id(p): rank for rank, groups in enumerate(self._partition_parameters())
                for g in groups for p in g["params"]}
        return self._param_to_rank_cache

    @property
    def _index_to_param(self):
        """Every parameter, in the order of the state_dict's indices."""
        return list(chain.from_iterable(g["params"] for g in self.param_groups))

    @property
    def _device_to_params_per_rank(self):
        """{device: each rank's parameters on it}, for the flat buckets."""
        if not self._device_to_params_per_rank_cache:
            for rank, groups in enumerate(self._partition_parameters()):
                for param in chain.from_iterable(g["params"] for g in groups):
                    per_rank = self._device_to_params_per_rank_cache.setdefault(
                        param.device, [[] for _ in range(self.world_size)])
                    per_rank[rank].append(param)
        return self._device_to_params_per_rank_cache

    def _build_param_buckets(self):
        """With parameters_as_bucket_view: per device, one flat buffer per rank (_flat_bucket)."""
        if not self.parameters_as_bucket_view:
            return
        self._buckets = [[_flat_bucket(params, device) for params in per_rank]
                         for device, per_rank in self._device_to_params_per_rank.items()]

    def add_param_group(self, param_group):
        """Add a group; once constructed, repartition and give this rank's share of the new
        group to the local optimizer."""
        super().add_param_group(param_group)
        if not self.initialized:
            return
        self._clear_cache()
        param_groups = self._partition_parameters()[self.rank]
        if len(param_groups) == len(self.optim.param_groups) + 1:
            self.optim.add_param_group(param_groups[-1])
        self._build_param_buckets()

    def step(self, closure=None, **kwargs):
        """Step this rank's shard, then broadcast every shard from its owner; returns the
        closure's loss (None without one)."""
        loss = self._local_step(closure=closure, **kwargs)
        self._sync_params()
        return loss

    def _local_step(self, closure=None, **kwargs):
        """The local optimizer's step, with this optimizer's hyperparameters passed both ways."""
        Join.notify_join_context(self)
        is_trainable_mask = self._get_is_trainable_mask()
        if is_trainable_mask != self._is_trainable_mask:
            logger.warning("ZeroRedundancyOptimizer detected that the trainable parameters "
                           "changed; rebuilding the parameter buckets if enabled")
            self._build_param_buckets()
            self._is_trainable_mask = is_trainable_mask
        _sync_param_groups(self.param_groups, self.optim.param_groups)
        if closure is None:
            loss = self.optim.step(**kwargs)
        else:
            loss = self.optim.step(closure=closure, **kwargs)
        _sync_param_groups(self.optim.param_groups, self.param_groups)
        return loss

    def _broadcast_params_from_rank(self, rank):
        """Asynchronous broadcasts of group rank `rank`'s shard: its bucket on each device, or
        each of its parameters."""
        if self.parameters_as_bucket_view:
            tensors = [buckets[rank] for buckets in self._buckets]
        else:
            tensors = [p.data for g in self._partition_parameters()[rank] for p in g["params"]]
        return [broadcast(t, group=self.process_group, group_src=rank, async_op=True)
                for t in tensors]

    def _sync_params(self):
        """Every shard from its owner to all ranks."""
        handles = [h for rank in range(self.world_size)
                   for h in self._broadcast_params_from_rank(rank)]
        for handle in handles:
            handle.wait()

    def join_hook(self, **kwargs):
        """The hook a Join context runs on this rank once it has run out of inputs."""
        return _ZeROJoinHook(self)

    @property
    def join_device(self):
        """The device of the first parameter."""
        return self._default_device

    @property
    def join_process_group(self):
        """The group the shards are broadcast in."""
        return self.process_group

    def consolidate_state_dict(self, to=0):
        """Gather every rank's local optimizer state (on the CPU) on group rank `to`, for its
        state_dict(); every rank of the group must call it."""
        _sync_param_groups(self.param_groups, self.optim.param_groups)
        gathered = [None] * self.world_size if self.rank == to else None
        gather_object(_to_cpu(self.optim.state_dict()), gathered, group=self.process_group,
                      group_dst=to)
        self._all_state_dicts = gathered if self.rank == to else []

    def state_dict(self):
        """The whole optimizer's state, in PyTorch's format, from what consolidate_state_dict
        gathered on this rank."""
        if len(self._all_state_dicts) == 0:
            raise RuntimeError("Optimizer state has not been consolidated on this rank. Please "
                               f"call `consolidate_state_dict(to={self.rank})` on all ranks "
                               "beforehand if you meant to save the global state.")
        state_dict = super().state_dict()
        index = {id(p): i for i, p in enumerate(self._index_to_param)}
        for local, global_groups in zip(self._all_state_dicts, self._partition_parameters()):
            if len(local["param_groups"]) != len(global_groups):
                raise AssertionError("Mismatch between number of local and global parameter "
                                     "groups")
            for local_group, global_group in zip(local["param_groups"], global_groups):
                if len(local_group["params"]) != len(global_group["params"]):
                    raise AssertionError("Mismatch between number of local and global "
                                         "parameters in parameter group")
                for local_index, param in zip(local_group["params"], global_group["params"]):
                    if local_index in local["state"]:
                        state_dict["state"][index[id(param)]] = local["state"][local_index]
        state_dict["state"] = dict(sorted(state_dict["state"].items()))
        return state_dict

    def load_state_dict(self, state_dict):
        """Load a full state_dict (every rank): each rank keeps the state of its own shard."""
        params = self._index_to_param
        capturable = {id(p): bool(g.get("capturable"))
                      for g in self.optim.param_groups for p in g["params"]}
        for index, value in state_dict["state"].items():
            param = params[index]
            if self._param_to_rank[id(param)] == self.rank:
                self.optim.state[param] = {k: _cast_state(param, k, v, capturable[id(param)])
                                           for k, v in value.items()}
        super().load_state_dict({**state_dict, "state": {}})
        _sync_param_groups(self.param_groups, self.optim.param_groups)
