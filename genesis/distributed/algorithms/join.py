"""Training on uneven inputs (PyTorch's torch.distributed.algorithms.join).

Inside `with Join([ddp_model, ...]):` a rank that runs out of inputs leaves its loop and, at
the context's exit, "shadows" the collectives the other ranks still issue each iteration: every
iteration the ranks all-reduce how many of them are still training (each active rank adds 1,
`notify_join_context`), and while that count is not zero the joined ranks run their joinables'
`main_hook` to match the rest of the iteration's collectives. Once every rank has joined, each
joinable's `post_hook` runs (DDP: the last rank to join broadcasts its model to the others).
"""

import warnings
from abc import ABC, abstractmethod
from typing import NamedTuple

from ..process_group import all_reduce, get_rank

__all__ = ["JoinHook", "Joinable", "Join"]


class JoinHook:
    """What a joined rank runs: `main_hook` once per iteration the other ranks still run,
    `post_hook(is_last_joiner)` once all have joined."""

    def main_hook(self):
        """Shadow one iteration's collectives."""

    def post_hook(self, is_last_joiner):
        """Finish up once every rank has joined."""


class _JoinConfig(NamedTuple):
    enable: bool
    throw_on_early_termination: bool
    is_first_joinable: bool

    @staticmethod
    def construct_disabled_join_config():
        return _JoinConfig(enable=False, throw_on_early_termination=False,
                           is_first_joinable=False)


class Joinable(ABC):
    """Something a Join context manages: it gives a join hook, the device its collectives use
    and its process group, and calls `Join.notify_join_context(self)` each iteration."""

    @abstractmethod
    def __init__(self):
        super().__init__()
        self._join_config = _JoinConfig.construct_disabled_join_config()

    @abstractmethod
    def join_hook(self, **kwargs):
        """The JoinHook for this joinable (`kwargs` come from the Join context)."""

    @property
    @abstractmethod
    def join_device(self):
        """The device of the join context's own all-reduces."""

    @property
    @abstractmethod
    def join_process_group(self):
        """The group the joinable's collectives run in."""


class Join:
    """Context manager for uneven inputs over `joinables` (one process group); `kwargs` go to
    every `join_hook`. With `throw_on_early_termination`, every rank raises once one runs out."""

    def __init__(self, joinables, enable=True, throw_on_early_termination=False, **kwargs):
        if len(joinables) == 0:
            raise ValueError("The join context manager requires at least one joinable")
        self._joinables = joinables
        self._join_hooks = [joinable.join_hook(**kwargs) for joinable in joinables]
        self._enable, self._throw_on_early_termination = enable, throw_on_early_termination
        for i, joinable in enumerate(joinables):
            joinable._join_config = _JoinConfig(enable, throw_on_early_termination, i == 0)
        self._process_group = joinables[0].join_process_group
        if any(j.join_process_group != self._process_group for j in joinables):
            raise ValueError("Using join context manager with multiple process groups")
        self._rank = get_rank(self._process_group)
        self._device = joinables[0].join_device

    def __enter__(self):
        return self

    def __exit__(self, type, value, traceback):
        """Shadow the active ranks' iterations until all have joined, then run the post
        hooks (an exception in the block passes through without either)."""
        if not self._enable or type:
            return
        is_last_joiner, skew = True, 0
        while self._count(0.0) != 0:
            if skew == 1001:
                warnings.warn(f"Detected uneven input skew of greater than 1000. This means that "
                              f"rank {self._rank} has at least 1000 fewer inputs than other "
                              f"currently-active ranks. This level of skew could lead to "
                              f"performance degradation during training.", stacklevel=2)
            if self._throw_on_early_termination:
                self._count(1.0)
                raise RuntimeError(f"Rank {self._rank} exhausted all inputs.")
            for hook in self._join_hooks:
                hook.main_hook()
            is_last_joiner, skew = False, skew + 1
        for hook in self._join_hooks:
            hook.post_hook(is_last_joiner)

    def _count(self, mine):
        """The sum over the group of `mine` (a joined rank counts 0)."""
        return _all_reduce_scalar(mine, self._device, self._process_group).item()

    @staticmethod
    def notify_join_context(joinable):
        """Called by an active rank's first joinable each iteration: adds 1 to the count of
        active ranks (and raises everywhere when a rank ran out under throw_on_early_termination);
        returns the count's Work (None when not the first joinable or not enabled)."""
        if not hasattr(joinable, "_join_config"):
            raise AssertionError(f"Check that the {type(joinable)} constructor calls the "
                                 f"``Joinable`` constructor")
        config = joinable._join_config
        if not config.is_first_joinable or not config.enable:
            return None
        device, group = joinable.join_device, joinable.join_process_group
        work = _all_reduce_scalar(1.0, device, group, async_op=True)
        if config.throw_on_early_termination and \
                _all_reduce_scalar(0.0, device, group).item():
            raise RuntimeError("Detected at least one rank that exhausted inputs. Throwing "
                               "across all ranks.")
        return work


def _all_reduce_scalar(value, device, group, async_op=False):
    """A one-element tensor of `value`, summed over `group`: the tensor, or its Work."""
    from ... import full
    t = full((1,), value, device=device)
    work = all_reduce(t, group=group, async_op=async_op)
    return work if async_op else t
