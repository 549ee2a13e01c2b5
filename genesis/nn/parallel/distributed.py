"""DistributedDataParallel: one model replica per process, gradients averaged over the world."""

import contextlib

from ... import distributed as dist
from ...autograd.grad_mode import is_grad_enabled, no_grad
from ...device import device as Device
from ...distributed.algorithms.join import Join, Joinable, JoinHook
from ..modules.module import Module
from .data_parallel import gather, scatter_kwargs
from .reducer import Reducer


class DistributedDataParallel(Module, Joinable):
    """Wraps `module` for data-parallel training (PyTorch's constructor and behaviour).

    At construction the parameters and buffers of rank 0 are broadcast to every rank. After
    each backward, every parameter's `.grad` holds the average over the ranks of their
    gradients, reduced in buckets while backward runs (by a registered communication hook, if
    any). Inside `no_sync()` gradients only accumulate locally; the first backward after it
    averages the accumulated sums. `join()` lets ranks with fewer inputs finish early.
    """

    def __init__(self, module, device_ids=None, output_device=None, dim=0,
                 broadcast_buffers=True, process_group=None, bucket_cap_mb=None,
                 find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False):
        super().__init__()
        Joinable.__init__(self)
        if not dist.is_initialized():
            raise ValueError("DistributedDataParallel: Default process group has not been "
                             "initialized, please make sure to call init_process_group.")
        self.module, self.dim = module, dim
        self.process_group = process_group if process_group is not None else dist.group.WORLD
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.require_backward_grad_sync = self.require_forward_param_sync = True
        self._divide_by_initial_world_size = True
        params = _unique([p for p in module.parameters() if p.requires_grad])
        if not params:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't "
                               "have any parameter that requires a gradient.")
        self.device = params[0].device
        self._sync_module_states(0)
        self.reducer = Reducer(params, 25 if bucket_cap_mb is None else bucket_cap_mb,
                               find_unused_parameters, self.process_group)

    @property
    def broadcast_buffers(self):
        """Whether each forward first copies the buffers of one rank to all."""
        return self.forward_sync_buffers

    @broadcast_buffers.setter
    def broadcast_buffers(self, value):
        self.forward_sync_buffers = value

    def _sync_module_states(self, src):
        """Group rank `src`'s parameters (and buffers, when broadcast_buffers) to every rank."""
        tensors = list(self.module.parameters())
        tensors += list(self.module.buffers()) if self.broadcast_buffers else []
        self._broadcast(tensors, src)

    def _broadcast(self, tensors, src):
        with no_grad():
            for t in tensors:
                dist.broadcast(t.detach(), group=self.process_group, group_src=src)

    def will_sync_module_buffers(self):
        """Whether the next forward broadcasts the buffers (broadcast_buffers, buffers to send,
        and the last forward synchronised its backward)."""
        return self.require_forward_param_sync and self.forward_sync_buffers and \
            any(True for _ in self.module.buffers())

    def _sync_buffers(self):
        """Buffers from rank 0, or under join from the highest rank still training."""
        src = self._find_common_rank(True) if self._join_config.enable else 0
        self._broadcast(list(self.module.buffers()), src)

    def _find_common_rank(self, candidate):
        """The highest group rank of those for which `candidate` is True."""
        from ... import tensor
        rank = tensor([dist.get_rank(self.process_group) if candidate else -1],
                      device=self.device)
        dist.all_reduce(rank, op=dist.ReduceOp.MAX, group=self.process_group)
        if rank.item() == -1:
            raise ValueError("BUG! Expected rank_cond to be true for at least one process.")
        return int(rank.item())

    def forward(self, *inputs, **kwargs):
        work = Join.notify_join_context(self)
        if work is not None:
            self.reducer.set_count_work(work, self._divide_by_initial_world_size)
        if self.will_sync_module_buffers():
            self._sync_buffers()
        if self._join_config.enable:
            self._backward_sync_count(joined=False)
        output = self.module(*inputs, **kwargs)
        self.require_forward_param_sync = is_grad_enabled() and self.require_backward_grad_sync
        if self.require_forward_param_sync:
            self.reducer.prepare(output)
        return output

    def _backward_sync_count(self, joined):
        """Under join: all-reduce whether this rank's backward will reduce gradients (a joined
        rank adds 0); the joined ranks learn whether to shadow the backward."""
        from ... import full
        flag = full((1,), float(not joined and self.require_backward_grad_sync),
                    device=self.device)
        work = dist.all_reduce(flag, group=self.process_group, async_op=True)
        if joined:
            work.wait()
            return flag.item() != 0
        return None

    @contextlib.contextmanager
    def no_sync(self):
        """Backward passes inside only accumulate gradients locally (gradient accumulation)."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    def register_comm_hook(self, state, hook):
        """Reduce each gradient bucket with `hook(state, bucket)` (a GradBucket), which returns
        a genesis.futures.Future of the bucket's reduced flat tensor."""
        if not callable(hook):
            raise TypeError("Communication hook must be callable.")
        self.reducer.register_comm_hook(state, hook)

    def _register_builtin_comm_hook(self, comm_hook_type):
        """A hook DDP has built in, by BuiltinCommHookType: ALLREDUCE or FP16_COMPRESS."""
        from ...distributed.algorithms.ddp_comm_hooks import default_hooks
        hooks = {dist.BuiltinCommHookType.ALLREDUCE: default_hooks.allreduce_hook,
                 dist.BuiltinCommHookType.FP16_COMPRESS: default_hooks.fp16_compress_hook}
        self.reducer.register_comm_hook(self.process_group, hooks[comm_hook_type])

    def join(self, divide_by_initial_world_size=True, enable=True,
             throw_on_early_termination=False):
        """Context manager for uneven inputs: ranks that run out shadow the others' forward and
        backward collectives; at the end the last rank to join broadcasts its model.
        Gradients are divided by the initial world size, or by the ranks still training."""
        return Join([self], enable, throw_on_early_termination,
                    divide_by_initial_world_size=divide_by_initial_world_size)

    def join_hook(self, **kwargs):
        """The hook a joined rank runs (kwargs: divide_by_initial_world_size, default True)."""
        return _DDPJoinHook(self, kwargs.get("divide_by_initial_world_size", True))

    @property
    def join_device(self):
        return self.device

    @property
    def join_process_group(self):
        return self.process_group

    def scatter(self, inputs, kwargs, device_ids):
        return scatter_kwargs(inputs, kwargs, device_ids, dim=self.dim)

    def to_kwargs(self, inputs, kwargs, device_id):
        """The inputs with their tensors moved to device `device_id` of the model's type."""
        return scatter_kwargs(inputs, kwargs, [Device(self.device.type, device_id)], self.dim)

    def gather(self, outputs, output_device):
        return gather(outputs, output_device, dim=self.dim)


class _DDPJoinHook(JoinHook):
    """What a DDP rank that has run out of inputs does while the others train."""

    def __init__(self, ddp, divide_by_initial_world_size):
        if not isinstance(ddp, DistributedDataParallel):
            raise AssertionError(f"DDP join hook requires passing in a DistributedDataParallel "
                                 f"instance as the state, got {type(ddp).__name__}")
        self.ddp = ddp
        ddp._divide_by_initial_world_size = divide_by_initial_world_size

    def main_hook(self):
        """Shadow one iteration: the buffer broadcast, the backward flag, the reductions."""
        ddp = self.ddp
        if ddp.will_sync_module_buffers():
            ddp._broadcast(list(ddp.module.buffers()), ddp._find_common_rank(False))
        ddp.require_forward_param_sync = ddp._backward_sync_count(joined=True)
        if ddp.require_forward_param_sync:
            ddp.reducer.match_backward()

    def post_hook(self, is_last_joiner):
        """Every rank takes the model of the last rank to join."""
        self.ddp._sync_module_states(self.ddp._find_common_rank(is_last_joiner))


def _unique(params):
    seen, out = set(), []
    for p in params:
        if id(p) not in seen:
            seen.add(id(p))
            out.append(p)
    return out
