"""HierarchicalModelAverager (PyTorch's model_averaging.hierarchical_model_averager): small
groups of ranks average often, larger ones less often, the whole group least often; e.g.
{4: 8, 16: 32} averages within groups of 8 ranks every 4 steps and over all 32 every 16."""

import warnings
from collections import OrderedDict

from ...process_group import get_world_size
from ...subgroups import new_subgroups
from . import utils
from .averagers import ModelAverager

__all__ = ["HierarchicalModelAverager"]


class HierarchicalModelAverager(ModelAverager):
    """Averages at each step past `warmup_steps` that a period of `period_group_size_dict`
    (period -> group size, increasing; the last size is the process group's) divides, within
    this rank's subgroup of that period's size; where several periods divide the step, the
    largest one's."""

    def __init__(self, period_group_size_dict=None, warmup_steps=0, process_group=None):
        super().__init__(process_group)
        if not period_group_size_dict:
            raise ValueError("Arg ``period_group_size_dict`` must not be empty.")
        self._periods = list(period_group_size_dict.keys())
        _check_periods(self._periods)
        sizes = list(period_group_size_dict.values())
        overall = get_world_size(group=self.process_group)
        if sizes[-1] != overall:
            raise ValueError(f"The last value in arg ``period_group_size_dict`` {sizes[-1]} "
                             f"must be equal to the size of arg ``process_group`` {overall}.")
        self.period_process_group_dict = OrderedDict(
            (period, self._subgroup(size, overall))
            for period, size in period_group_size_dict.items())
        if warmup_steps < 0:
            raise ValueError("Arg ``warmup_steps`` must be a non-negative number.")
        self.warmup_steps = warmup_steps

    def _subgroup(self, size, overall):
        """This rank's subgroup of `size` consecutive ranks of the process group."""
        if size == overall:
            return self.process_group
        return new_subgroups(group_size=size, group=self.process_group)[0]

    def _find_process_group(self):
        """The group of the largest period dividing this step, or None."""
        for period in reversed(self._periods):
            if self.step % period == 0:
                return self.period_process_group_dict[period]
        return None

    def average_parameters(self, params):
        """Average a model's parameters or an optimizer's groups over this step's group, if
        any, then count the step."""
        if self.step >= self.warmup_steps:
            group = self._find_process_group()
            if group is not None:
                utils.average_parameters_or_parameter_groups(params, group)
        self.step += 1


def _check_periods(periods):
    if periods[0] <= 0:
        raise ValueError("The minimum period in arg ``period_group_size_dict`` must be a "
                         "positive value.")
    if periods[-1] == 1:
        warnings.warn(
            "When the maximum period in arg ``period_group_size_dict`` is 1, no need to use "
            "model averaging because the communication cost of all-reducing parameters will "
            "be no less than the cost of all-reducing gradients by DistributedDataParallel in "
            "the backward pass. Therefore, only DistributedDataParallel should be used for "
            "this case.", stacklevel=3)
