"""Stochastic Weight Averaging and exponential moving averages of a model's weights, as
`torch.optim.swa_utils`: AveragedModel, SWALR, update_bn and the averaging functions."""

import itertools
import math
from copy import deepcopy

from .. import dtypes
from ..autograd.grad_mode import no_grad
from ..nn.modules.batchnorm import _BatchNorm
from ..nn.modules.module import Module
from ..ops.creation import tensor
from .lr_scheduler import LRScheduler, _per_group

__all__ = ["AveragedModel", "update_bn", "SWALR", "get_ema_multi_avg_fn", "get_swa_multi_avg_fn",
           "get_ema_avg_fn", "get_swa_avg_fn"]


def _check_decay(decay):
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] "
                         "range.")


def get_ema_multi_avg_fn(decay=0.999):
    """In place over lists: ema = lerp(ema, current, 1 - decay) (integer tensors: decay ema +
    (1 - decay) current)."""
    _check_decay(decay)

    def ema_update(ema_param_list, current_param_list, _):
        with no_grad():
            for p_ema, p_model in zip(ema_param_list, current_param_list):
                if p_ema.is_floating_point():
                    p_ema.lerp_(p_model, 1 - decay)
                else:
                    p_ema.copy_(p_ema * decay + p_model * (1 - decay))
    return ema_update


def get_swa_multi_avg_fn():
    """In place over lists: the running mean avg += (current - avg) / (n + 1), n the number of
    models averaged so far (floating tensors through lerp, as PyTorch's; integer ones take the
    mean's integer part, as PyTorch's per-tensor average does: its list form fails there)."""
    def swa_update(averaged_param_list, current_param_list, num_averaged):
        with no_grad():
            weight = 1 / (float(num_averaged) + 1)
            for p_avg, p_model in zip(averaged_param_list, current_param_list):
                if p_avg.is_floating_point():
                    p_avg.lerp_(p_model, weight)
                else:
                    p_avg.copy_(p_avg + (p_model - p_avg) / (float(num_averaged) + 1))
    return swa_update


def get_ema_avg_fn(decay=0.999):
    """ema, current -> decay ema + (1 - decay) current."""
    _check_decay(decay)

    def ema_update(ema_param, current_param, num_averaged):
        with no_grad():
            return decay * ema_param + (1 - decay) * current_param
    return ema_update


def get_swa_avg_fn():
    """avg, current, n -> avg + (current - avg) / (n + 1)."""
    def swa_update(averaged_param, current_param, num_averaged):
        with no_grad():
            return averaged_param + (current_param - averaged_param) / (num_averaged + 1)
    return swa_update


class AveragedModel(Module):
    """A copy of `model` whose parameters (and buffers with `use_buffers`) are the running
    average of the models given to `update_parameters`: equal weights (SWA) by default, or
    `avg_fn` per tensor / `multi_avg_fn` per list (e.g. get_ema_multi_avg_fn for an EMA)."""

    def __init__(self, model, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False):
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", tensor(0, dtype=dtypes.int64, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def _tensors(self, model):
        if self.use_buffers:
            return itertools.chain(model.parameters(), model.buffers())
        return model.parameters()

    def update_parameters(self, model):
        """Average `model`'s weights in (the first call copies them)."""
        mine = [p.detach() for p in self._tensors(self.module)]
        theirs = [p.detach().to(a.device) for a, p in zip(mine, self._tensors(model))]
        with no_grad():
            n = int(self.n_averaged)
            if n == 0:
                for a, p in zip(mine, theirs):
                    a.copy_(p)
            elif self.avg_fn is not None:
                for a, p in zip(mine, theirs):
                    a.copy_(self.avg_fn(a, p, self.n_averaged.to(a.device)))
            else:
                multi_avg_fn = self.multi_avg_fn or get_swa_multi_avg_fn()
                for group in _by_device_and_dtype(mine, theirs):
                    multi_avg_fn(*group, self.n_averaged.to(group[0][0].device))
            if not self.use_buffers:
                for b_swa, b_model in zip(self.module.buffers(), model.buffers()):
                    b_swa.copy_(b_model.detach().to(b_swa.device))
            self.n_averaged.add_(1)


def _by_device_and_dtype(mine, theirs):
    """[(averaged list, model list)] grouped by the averaged tensors' (device, dtype)."""
    groups = {}
    for a, p in zip(mine, theirs):
        pair = groups.setdefault((a.device, a.dtype), ([], []))
        pair[0].append(a)
        pair[1].append(p)
    return list(groups.values())


def update_bn(loader, model, device=None):
    """Recompute the BatchNorm running statistics of `model` with one pass over `loader` (the
    cumulative average of the batches: momentum None), as needed after averaging weights."""
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    with no_grad():
        for batch in loader:
            if isinstance(batch, (list, tuple)):
                batch = batch[0]
            if device is not None:
                batch = batch.to(device)
            model(batch)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each group's lr to `swa_lr` over `anneal_epochs` epochs ("cos" or "linear"),
    then hold it."""

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos",
                 last_epoch=-1):
        for lr, group in zip(_per_group("swa_lr", optimizer, swa_lr), optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ["cos", "linear"]:
            raise ValueError("anneal_strategy must be one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        self._anneal_strategy = anneal_strategy
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got "
                             f"{anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    def anneal_func(self, t):
        """The fraction of the way to swa_lr at fraction t of the annealing."""
        if self._anneal_strategy == "cos":
            return (1 - math.cos(math.pi * t)) / 2
        return t

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        """The lr the annealing started from, given the lr it gave at alpha."""
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self):
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_alpha = self.anneal_func(max(0, min(1, (step - 1) / max(1, self.anneal_epochs))))
        prev_lrs = [self._get_initial_lr(group["lr"], group["swa_lr"], prev_alpha)
                    for group in self.optimizer.param_groups]
        alpha = self.anneal_func(max(0, min(1, step / max(1, self.anneal_epochs))))
        return [group["swa_lr"] * alpha + lr * (1 - alpha)
                for group, lr in zip(self.optimizer.param_groups, prev_lrs)]
