"""DistributedDataParallel: one model replica per process, gradients averaged over the world."""

import contextlib

from ... import distributed as dist
from ...autograd.grad_mode import is_grad_enabled, no_grad
from ..modules.module import Module
from .reducer import Reducer


class DistributedDataParallel(Module):
    """Wraps `module` for data-parallel training (PyTorch's constructor and behaviour).

    At construction the parameters and buffers of rank 0 are broadcast to every rank. After
    each backward, every parameter's `.grad` holds the average over the ranks of their
    gradients, reduced in buckets while backward runs. Inside `no_sync()` gradients only
    accumulate locally; the first backward after it averages the accumulated sums.
    """

    def __init__(self, module, device_ids=None, output_device=None, dim=0,
                 broadcast_buffers=True, process_group=None, bucket_cap_mb=None,
                 find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False):
        super().__init__()
        if not dist.is_initialized():
            raise ValueError("DistributedDataParallel: Default process group has not been "
                             "initialized, please make sure to call init_process_group.")
        self.module = module
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.require_backward_grad_sync = True
        params = _unique([p for p in module.parameters() if p.requires_grad])
        if not params:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't "
                               "have any parameter that requires a gradient.")
        self._sync_module_states()
        self.reducer = Reducer(params, 25 if bucket_cap_mb is None else bucket_cap_mb,
                               find_unused_parameters)

    def _sync_module_states(self):
        """Rank 0's parameters and buffers, copied to every rank."""
        with no_grad():
            for t in list(self.module.parameters()) + list(self.module.buffers()):
                dist.broadcast(t.detach(), 0)

    def _sync_buffers(self):
        with no_grad():
            for b in self.module.buffers():
                dist.broadcast(b, 0)

    def forward(self, *inputs, **kwargs):
        if self.broadcast_buffers and dist.get_world_size() > 1:
            self._sync_buffers()
        output = self.module(*inputs, **kwargs)
        if is_grad_enabled() and self.require_backward_grad_sync:
            self.reducer.prepare(output)
        return output

    @contextlib.contextmanager
    def no_sync(self):
        """Backward passes inside only accumulate gradients locally (gradient accumulation)."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old


def _unique(params):
    seen, out = set(), []
    for p in params:
        if id(p) not in seen:
            seen.add(id(p))
            out.append(p)
    return out
