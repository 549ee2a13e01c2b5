"""Model averagers (PyTorch's model_averaging.averagers): called after each optimizer step,
they count the steps and decide when to average the parameters over a process group."""

import warnings
from abc import ABC, abstractmethod

from ...groups import group_or_world
from . import utils

__all__ = ["ModelAverager", "PeriodicModelAverager"]


class ModelAverager(ABC):
    """Base of the averagers: the group averaged over (None: the world) and the step count."""

    def __init__(self, process_group=None):
        self.process_group = group_or_world(process_group)
        self.step = 0

    @abstractmethod
    def average_parameters(self, params):
        raise NotImplementedError


class PeriodicModelAverager(ModelAverager):
    """Averages every `period` steps once `warmup_steps` steps have passed (the first average
    at step `warmup_steps`); before then DDP is expected to average the gradients."""

    def __init__(self, period, warmup_steps=0, process_group=None):
        super().__init__(process_group)
        if warmup_steps < 0:
            raise ValueError("Arg ``warmup_steps`` must be a non-negative number.")
        self.warmup_steps = warmup_steps
        if period < 1:
            raise ValueError("Arg ``period`` must be a positive value.")
        if period == 1:
            warnings.warn(
                "When period is 1, no need to use model averaging because the communication "
                "cost of all-reducing parameters will be no less than the cost of all-reducing "
                "gradients by DistributedDataParallel in the backward pass. Therefore, only "
                "DistributedDataParallel should be used for this case.", stacklevel=2)
        self.period = period

    def _due(self):
        """Whether this step averages: past the warm-up, and on the period."""
        return (self.step >= self.warmup_steps
                and (self.step - self.warmup_steps) % self.period == 0)

    def average_parameters(self, params):
        """Average a model's parameters or an optimizer's groups if this step is due, then
        count the step."""
        if self._due():
            utils.average_parameters_or_parameter_groups(params, self.process_group)
        self.step += 1
