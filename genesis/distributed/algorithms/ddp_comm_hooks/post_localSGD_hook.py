"""The post-local SGD communication hook for DDP (PyTorch's ddp_comm_hooks.post_localSGD_hook):
gradients are averaged over the whole group for the first iterations, then only within a
subgroup, while a model averager averages the parameters globally now and then."""

import logging

from ...groups import group_or_world
from ...subgroups import new_subgroups
from . import default_hooks as default
from .debugging_hooks import noop_hook

__all__ = ["PostLocalSGDState", "post_localSGD_hook"]

logger = logging.getLogger(__name__)


class PostLocalSGDState:
    """The hook's state: the global group (None: the world) used until iteration
    `start_localSGD_iter`, the subgroup used after it (None: one per node, made on first use),
    and whether gradients are still all-reduced within the subgroup after the start."""

    __slots__ = ["process_group", "subgroup", "start_localSGD_iter",
                 "post_local_gradient_allreduce", "iter"]

    def __init__(self, process_group, subgroup, start_localSGD_iter,
                 post_local_gradient_allreduce=True):
        logger.info("Local SGD will be started after %s iterations", start_localSGD_iter)
        self.process_group = process_group
        self.subgroup = subgroup
        self.start_localSGD_iter = start_localSGD_iter
        self.post_local_gradient_allreduce = post_local_gradient_allreduce
        self.iter = 0

    def maybe_increase_iter(self, bucket):
        """Count an iteration at its last bucket; log when local SGD starts."""
        if bucket.is_last():
            self.iter += 1
        if self.iter == self.start_localSGD_iter:
            logger.info("Start to apply local SGD after %s iterations.", self.iter)


def post_localSGD_hook(state, bucket):
    """Average the bucket over the global group before `state.start_localSGD_iter`, then over
    the subgroup (or not at all, without post_local_gradient_allreduce)."""
    if state.iter < state.start_localSGD_iter:
        state.maybe_increase_iter(bucket)
        return default.allreduce_hook(group_or_world(state.process_group), bucket)
    if not state.post_local_gradient_allreduce:
        return noop_hook(state, bucket)
    if state.subgroup is None:
        state.subgroup, _ = new_subgroups()
    return default.allreduce_hook(state.subgroup, bucket)
