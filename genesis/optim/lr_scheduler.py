"""Learning-rate schedulers with PyTorch's API and its exact (recursive) update formulas.

A scheduler sets `group["lr"]` of its optimizer on construction (epoch 0) and on every
`step()`. Most compute the new lr from the current one (PyTorch's chainable form), so several
schedulers can act on one optimizer; `step(epoch)` uses the closed form where there is one.
"""

import functools
import math
import types
import warnings
import weakref
from bisect import bisect_right
from collections import Counter

from .optimizer import Optimizer

__all__ = ["LRScheduler", "LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR", "ConstantLR",
           "LinearLR", "ExponentialLR", "PolynomialLR", "CosineAnnealingLR", "SequentialLR",
           "ChainedScheduler", "ReduceLROnPlateau", "OneCycleLR", "CyclicLR",
           "CosineAnnealingWarmRestarts"]


def _group_values(optimizer, key):
    return [group[key] for group in optimizer.param_groups]


def _per_group(name, optimizer, value):
    """`value` repeated for each param group, or checked to have one entry per group."""
    if isinstance(value, (list, tuple)):
        if len(value) != len(optimizer.param_groups):
            raise ValueError(f"{name} must have the same length as optimizer.param_groups. {name} "
                             f"has {len(value)} values, param_groups has "
                             f"{len(optimizer.param_groups)}.")
        return list(value)
    return [value] * len(optimizer.param_groups)


def _check_optimizer(optimizer):
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")


def _track_step_calls(optimizer):
    """Have `optimizer.step` set `optimizer._opt_called` when it runs (PyTorch's schedulers wrap
    it the same way), so that a scheduler stepped before it can say so."""
    if hasattr(optimizer.step, "_wrapped_by_lr_sched"):
        return
    opt_ref, step = weakref.ref(optimizer), optimizer.step.__func__

    @functools.wraps(step)
    def wrapper(*args, **kwargs):
        opt = opt_ref()
        opt._opt_called = True
        return step(opt, *args, **kwargs)

    wrapper._wrapped_by_lr_sched = True
    optimizer.step = wrapper


def _check_step_order(scheduler):
    """PyTorch's warnings for a first scheduler step that comes before the optimizer's, or
    after the optimizer's step was replaced."""
    if not hasattr(scheduler.optimizer.step, "_wrapped_by_lr_sched"):
        warnings.warn("Seems like `optimizer.step()` has been overridden after learning rate "
                      "scheduler initialization. Please, make sure to call `optimizer.step()` "
                      "before `lr_scheduler.step()`. See more details at "
                      "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate",
                      UserWarning, stacklevel=3)
    elif not getattr(scheduler.optimizer, "_opt_called", False):
        warnings.warn("Detected call of `lr_scheduler.step()` before `optimizer.step()`. In "
                      "PyTorch 1.1.0 and later, you should call them in the opposite order: "
                      "`optimizer.step()` before `lr_scheduler.step()`.  Failure to do this will "
                      "result in PyTorch skipping the first value of the learning rate schedule. "
                      "See more details at "
                      "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate",
                      UserWarning, stacklevel=3)


def _warn_get_lr_called_within_step(scheduler):
    """get_lr() outside step() warns, as PyTorch's: get_last_lr() is the lr it set."""
    if not scheduler._get_lr_called_within_step:
        warnings.warn("To get the last learning rate computed by the scheduler, please use "
                      "`get_last_lr()`.", UserWarning, stacklevel=3)


class LRScheduler:
    """Base class: subclasses implement `get_lr()` (the lrs for `self.last_epoch`)."""

    _is_initial = False
    _get_lr_called_within_step = False

    def __init__(self, optimizer, last_epoch=-1):
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        _track_step_calls(optimizer)
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(f"param 'initial_lr' is not specified in param_groups[{i}] when "
                                   "resuming scheduler with last_epoch >= 0")
        self.base_lrs = _group_values(optimizer, "initial_lr")
        self.last_epoch = last_epoch
        self._initial_step()

    def _initial_step(self):
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def state_dict(self):
        """Every attribute except the optimizer."""
        return {key: value for key, value in self.__dict__.items() if key != "optimizer"}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)

    def get_last_lr(self):
        """The lrs this scheduler set last, one per param group."""
        return self._last_lr

    def get_lr(self):
        raise NotImplementedError

    def step(self, epoch=None):
        """Advance one epoch (or jump to `epoch`, deprecated in PyTorch) and set the lrs."""
        if self._step_count == 1:
            _check_step_order(self)
        self._step_count += 1
        if epoch is not None:
            warnings.warn("The epoch parameter in `scheduler.step()` was not necessary and is "
                          "being deprecated where possible. Please use `scheduler.step()` to step "
                          "the scheduler.", UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch=None):
        values = self._stepped_lrs(lambda: self._next_lrs(epoch))
        for group, lr in zip(self.optimizer.param_groups, values):
            group["lr"] = lr
        self._last_lr = _group_values(self.optimizer, "lr")

    def _stepped_lrs(self, compute):
        """`compute()`, the next lrs, with get_lr() running quietly as it does within step()."""
        self._get_lr_called_within_step = True
        try:
            return compute()
        finally:
            self._get_lr_called_within_step = False

    def _next_lrs(self, epoch):
        """The lrs of the next epoch, or (closed form where there is one) of `epoch`."""
        if epoch is None:
            self.last_epoch += 1
            return self.get_lr()
        self.last_epoch = epoch
        return (self._get_closed_form_lr() if hasattr(self, "_get_closed_form_lr")
                else self.get_lr())


_LRScheduler = LRScheduler


class _LambdaScheduler(LRScheduler):
    """Shared by LambdaLR and MultiplicativeLR: one function of the epoch per param group."""

    def __init__(self, optimizer, lr_lambda, last_epoch=-1):
        self.optimizer = optimizer
        if isinstance(lr_lambda, (list, tuple)):
            if len(lr_lambda) != len(optimizer.param_groups):
                raise ValueError(f"Expected {len(optimizer.param_groups)} lr_lambdas, but got "
                                 f"{len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)
        else:
            self.lr_lambdas = [lr_lambda] * len(optimizer.param_groups)
        for fn in self.lr_lambdas:
            if not callable(fn):
                raise TypeError(f"lr_lambda should be a function, but got {type(fn).__name__}")
        super().__init__(optimizer, last_epoch)

    def state_dict(self):
        """Functions are not saved; callable objects keep their `__dict__`, as in PyTorch."""
        return _state_with(self, "lr_lambdas", [
            None if isinstance(fn, types.FunctionType) else fn.__dict__.copy()
            for fn in self.lr_lambdas])

    def load_state_dict(self, state_dict):
        for fn, saved in zip(self.lr_lambdas, _load_except(self, state_dict, "lr_lambdas")):
            if saved is not None:
                fn.__dict__.update(saved)


class LambdaLR(_LambdaScheduler):
    """lr = initial_lr * lr_lambda(epoch)."""

    def get_lr(self):
        _warn_get_lr_called_within_step(self)
        return [base * fn(self.last_epoch) for fn, base in zip(self.lr_lambdas, self.base_lrs)]


class MultiplicativeLR(_LambdaScheduler):
    """lr *= lr_lambda(epoch) on every step after the first."""

    def get_lr(self):
        _warn_get_lr_called_within_step(self)
        if self._is_initial:
            return _group_values(self.optimizer, "lr")
        return [group["lr"] * fn(self.last_epoch)
                for fn, group in zip(self.lr_lambdas, self.optimizer.param_groups)]


class StepLR(LRScheduler):
    """lr *= gamma every `step_size` epochs."""

    def __init__(self, optimizer, step_size, gamma=0.1, last_epoch=-1):
        self.step_size, self.gamma = step_size, gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        _warn_get_lr_called_within_step(self)
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return _group_values(self.optimizer, "lr")
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        return [base * self.gamma ** (self.last_epoch // self.step_size) for base in self.base_lrs]


class MultiStepLR(LRScheduler):
    """lr *= gamma at each milestone epoch (repeated milestones multiply again)."""

    def __init__(self, optimizer, milestones, gamma=0.1, last_epoch=-1):
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        _warn_get_lr_called_within_step(self)
        if self.last_epoch not in self.milestones:
            return _group_values(self.optimizer, "lr")
        return [group["lr"] * self.gamma ** self.milestones[self.last_epoch]
                for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        milestones = sorted(self.milestones.elements())
        return [base * self.gamma ** bisect_right(milestones, self.last_epoch)
                for base in self.base_lrs]

    def load_state_dict(self, state_dict):
        super().load_state_dict(state_dict)
        self.milestones = Counter(self.milestones)


class ConstantLR(LRScheduler):
    """lr = initial_lr * factor until `total_iters`, then initial_lr."""

    def __init__(self, optimizer, factor=1.0 / 3, total_iters=5, last_epoch=-1):
        if factor > 1.0 or factor < 0:
            raise ValueError("Constant multiplicative factor expected to be between 0 and 1.")
        self.factor, self.total_iters = factor, total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        _warn_get_lr_called_within_step(self)
        if self.last_epoch == 0:
            return [group["lr"] * self.factor for group in self.optimizer.param_groups]
        if self.last_epoch != self.total_iters:
            return _group_values(self.optimizer, "lr")
        return [group["lr"] * (1.0 / self.factor) for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        return [base * (self.factor + (self.last_epoch >= self.total_iters) * (1 - self.factor))
                for base in self.base_lrs]


class LinearLR(LRScheduler):
    """The lr factor goes linearly from `start_factor` to `end_factor` over `total_iters`."""

    def __init__(self, optimizer, start_factor=1.0 / 3, end_factor=1.0, total_iters=5,
                 last_epoch=-1):
        if start_factor > 1.0 or start_factor <= 0:
            raise ValueError("Starting multiplicative factor expected to be greater than 0 and "
                             "less or equal to 1.")
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError("Ending multiplicative factor expected to be between 0 and 1.")
        self.start_factor, self.end_factor = start_factor, end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        _warn_get_lr_called_within_step(self)
        if self.last_epoch == 0:
            return [group["lr"] * self.start_factor for group in self.optimizer.param_groups]
        if self._is_initial or self.last_epoch > self.total_iters:
            return _group_values(self.optimizer, "lr")
        delta = self.end_factor - self.start_factor
        ratio = 1.0 + delta / (self.total_iters * self.start_factor
                               + (self.last_epoch - 1) * delta)
        return [group["lr"] * ratio for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        return [base * (self.start_factor + (self.end_factor - self.start_factor)
                        * min(self.total_iters, self.last_epoch) / self.total_iters)
                for base in self.base_lrs]


class ExponentialLR(LRScheduler):
    """lr *= gamma every epoch."""

    def __init__(self, optimizer, gamma, last_epoch=-1):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        _warn_get_lr_called_within_step(self)
        if self._is_initial:
            return _group_values(self.optimizer, "lr")
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        return [base * self.gamma ** self.last_epoch for base in self.base_lrs]


class PolynomialLR(LRScheduler):
    """lr = initial_lr * (1 - epoch / total_iters) ** power, then constant."""

    def __init__(self, optimizer, total_iters=5, power=1.0, last_epoch=-1):
        self.total_iters, self.power = total_iters, power
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        _warn_get_lr_called_within_step(self)
        if self._is_initial or self.last_epoch > self.total_iters:
            return _group_values(self.optimizer, "lr")
        factor = ((1.0 - self.last_epoch / self.total_iters)
                  / (1.0 - (self.last_epoch - 1) / self.total_iters)) ** self.power
        return [group["lr"] * factor for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        return [base * (1.0 - min(self.total_iters, self.last_epoch) / self.total_iters)
                ** self.power for base in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Cosine from initial_lr down to `eta_min` over `T_max` epochs (PyTorch's recursive form,
    which keeps following the cosine past T_max and composes with other schedulers)."""

    def __init__(self, optimizer, T_max, eta_min=0.0, last_epoch=-1):
        self.T_max, self.eta_min = T_max, eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        _warn_get_lr_called_within_step(self)
        groups = self.optimizer.param_groups
        if self._is_initial:
            return _group_values(self.optimizer, "lr")
        if self._step_count == 1 and self.last_epoch > 0:
            return self._closed_form(self.last_epoch)
        if (self.last_epoch - 1 - self.T_max) % (2 * self.T_max) == 0:
            return [group["lr"] + (base - self.eta_min) * (1 - math.cos(math.pi / self.T_max)) / 2
                    for base, group in zip(self.base_lrs, groups)]
        ratio = ((1 + math.cos(math.pi * self.last_epoch / self.T_max))
                 / (1 + math.cos(math.pi * (self.last_epoch - 1) / self.T_max)))
        return [ratio * (group["lr"] - self.eta_min) + self.eta_min for group in groups]

    def _closed_form(self, epoch):
        return [self.eta_min + (base - self.eta_min) * (1 + math.cos(epoch * math.pi / self.T_max))
                / 2 for base in self.base_lrs]

    def _get_closed_form_lr(self):
        return self._closed_form(self.last_epoch)


class SequentialLR(LRScheduler):
    """Run `schedulers` one after another, switching at the `milestones` epochs."""

    def __init__(self, optimizer, schedulers, milestones, last_epoch=-1):
        name = type(self).__name__
        if len(schedulers) < 1:
            raise ValueError(f"{name} expects at least one scheduler, but got no scheduler.")
        for i, scheduler in enumerate(schedulers):
            if isinstance(scheduler, ReduceLROnPlateau):
                raise ValueError(f"{name} does not support `ReduceLROnPlateau` scheduler as it "
                                 "requires additional kwargs to be specified when calling `step`, "
                                 f"but got one at index {i} in the given schedulers sequence.")
            if getattr(scheduler, "optimizer", None) is not optimizer:
                raise ValueError(f"{name} expects all schedulers to belong to the same optimizer, "
                                 f"but got scheduler {type(scheduler).__name__} at index {i} "
                                 "with a different optimizer.")
        if len(milestones) != len(schedulers) - 1:
            raise ValueError("Sequential Schedulers expects number of schedulers provided to be "
                             "one more than the number of milestone points, but got number of "
                             f"schedulers {len(schedulers)} and the number of milestones to be "
                             f"equal to {len(milestones)}")
        self._schedulers = list(schedulers)
        self._milestones = list(milestones)
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        for group in optimizer.param_groups:
            group["lr"] = group["initial_lr"]
        for scheduler in self._schedulers:
            _undo_last_epoch(scheduler)
        first = self._schedulers[bisect_right(self._milestones, 0)]
        first._initial_step()
        self._last_lr = first.get_last_lr()

    def step(self):
        self.last_epoch += 1
        idx = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[idx]
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            scheduler._update_lr(0)
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()

    def state_dict(self):
        return _state_with(self, "_schedulers", [s.state_dict() for s in self._schedulers])

    def load_state_dict(self, state_dict):
        for scheduler, state in zip(self._schedulers,
                                    _load_except(self, state_dict, "_schedulers")):
            scheduler.load_state_dict(state)


def _state_with(scheduler, key, value):
    """The scheduler's attributes except the optimizer, with `key` saved as `value`."""
    state = {k: v for k, v in scheduler.__dict__.items() if k not in ("optimizer", key)}
    state[key] = value
    return state


def _load_except(scheduler, state_dict, key):
    """Load every attribute of `state_dict` but `key`, and return the saved `key`."""
    state_dict = dict(state_dict)
    saved = state_dict.pop(key)
    scheduler.__dict__.update(state_dict)
    return saved


def _undo_last_epoch(scheduler):
    """Step back the epoch counters that constructing `scheduler` (and its children) advanced."""
    children = getattr(scheduler, "_schedulers", None)
    if children is not None:
        for child in children:
            _undo_last_epoch(child)
    elif hasattr(scheduler, "last_epoch"):
        scheduler.last_epoch -= 1


class ChainedScheduler(LRScheduler):
    """Step several schedulers together (their chainable updates compose)."""

    def __init__(self, schedulers, optimizer=None):
        if len(schedulers) < 1:
            raise ValueError(f"{type(self).__name__} expects at least one scheduler to be "
                             "chained, but got no scheduler.")
        optimizer = optimizer or schedulers[0].optimizer
        for i, scheduler in enumerate(schedulers):
            if getattr(scheduler, "optimizer", None) is not optimizer:
                raise ValueError(f"{type(self).__name__} expects all schedulers to belong to the "
                                 f"same optimizer, but got scheduler {type(scheduler).__name__} "
                                 f"at index {i} with a different optimizer.")
        self._schedulers = list(schedulers)
        self.optimizer = optimizer
        self._last_lr = self._schedulers[-1].get_last_lr()

    def step(self):
        for scheduler in self._schedulers:
            scheduler.step()
        self._last_lr = self._schedulers[-1].get_last_lr()

    state_dict = SequentialLR.state_dict
    load_state_dict = SequentialLR.load_state_dict


class ReduceLROnPlateau(LRScheduler):
    """Multiply the lr by `factor` once `metrics` stop improving for `patience` epochs."""

    def __init__(self, optimizer, mode="min", factor=0.1, patience=10, threshold=1e-4,
                 threshold_mode="rel", cooldown=0, min_lr=0, eps=1e-8):
        if factor >= 1.0:
            raise ValueError("Factor should be < 1.0.")
        _check_optimizer(optimizer)
        self.factor, self.optimizer = factor, optimizer
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != len(optimizer.param_groups):
                raise ValueError(f"expected {len(optimizer.param_groups)} min_lrs, got "
                                 f"{len(min_lr)}")
            self.default_min_lr, self.min_lrs = None, list(min_lr)
        else:
            self.default_min_lr, self.min_lrs = min_lr, [min_lr] * len(optimizer.param_groups)
        self.patience, self.cooldown, self.eps = patience, cooldown, eps
        self.last_epoch = 0
        self._last_lr = _group_values(optimizer, "lr")
        self._init_is_better(mode, threshold, threshold_mode)
        self._reset()

    def _reset(self):
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    def step(self, metrics, epoch=None):
        current = float(metrics)
        self.last_epoch = self.last_epoch + 1 if epoch is None else epoch
        if self._is_better(current, self.best):
            self.best, self.num_bad_epochs = current, 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            self._reduce_lr()
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = _group_values(self.optimizer, "lr")

    def _reduce_lr(self):
        if len(self.optimizer.param_groups) != len(self.min_lrs):
            if self.default_min_lr is None:
                raise RuntimeError(f"The number of param groups in the `optimizer` "
                                   f"({len(self.optimizer.param_groups)}) differs from when "
                                   f"`ReduceLROnPlateau` was initialized ({len(self.min_lrs)})")
            self.min_lrs = [self.default_min_lr] * len(self.optimizer.param_groups)
        for group, min_lr in zip(self.optimizer.param_groups, self.min_lrs):
            old = float(group["lr"])
            new = max(old * self.factor, min_lr)
            if old - new > self.eps:
                group["lr"] = new

    @property
    def in_cooldown(self):
        return self.cooldown_counter > 0

    def _is_better(self, a, best):
        if self.mode == "min":
            return a < best * (1.0 - self.threshold) if self.threshold_mode == "rel" \
                else a < best - self.threshold
        return a > best * (self.threshold + 1.0) if self.threshold_mode == "rel" \
            else a > best + self.threshold

    def _init_is_better(self, mode, threshold, threshold_mode):
        if mode not in {"min", "max"}:
            raise ValueError("mode " + mode + " is unknown!")
        if threshold_mode not in {"rel", "abs"}:
            raise ValueError("threshold mode " + threshold_mode + " is unknown!")
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self.mode, self.threshold, self.threshold_mode = mode, threshold, threshold_mode

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)
        self._init_is_better(self.mode, self.threshold, self.threshold_mode)


class _MomentumCycling:
    """Shared by OneCycleLR and CyclicLR: momentum (or Adam's beta1) cycled against the lr."""

    def _init_momentum(self, optimizer, max_momentum, base_momentum, last_epoch):
        """Check the optimizer has a momentum; on a fresh start set it to `max_momentum` and
        record both bounds in each group. Returns the per-group (max, base) lists."""
        if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
            raise ValueError("optimizer must support momentum or beta1 with `cycle_momentum` "
                             "option enabled")
        self.use_beta1 = "betas" in optimizer.defaults
        tops = _per_group("max_momentum", optimizer, max_momentum)
        bases = _per_group("base_momentum", optimizer, base_momentum)
        if last_epoch == -1:
            for top, base, group in zip(tops, bases, optimizer.param_groups):
                self._set_momentum(group, top)
                group["max_momentum"], group["base_momentum"] = top, base
        return tops, bases

    def _set_momentum(self, group, value):
        if self.use_beta1:
            group["betas"] = (value, *group["betas"][1:])
        else:
            group["momentum"] = value


class OneCycleLR(_MomentumCycling, LRScheduler):
    """The 1cycle policy: lr up from max_lr/div_factor to max_lr, then down to a tiny min_lr,
    with momentum (or Adam's beta1) cycling the opposite way."""

    def __init__(self, optimizer, max_lr, total_steps=None, epochs=None, steps_per_epoch=None,
                 pct_start=0.3, anneal_strategy="cos", cycle_momentum=True, base_momentum=0.85,
                 max_momentum=0.95, div_factor=25.0, final_div_factor=1e4, three_phase=False,
                 last_epoch=-1):
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        self.total_steps = _total_steps(total_steps, epochs, steps_per_epoch)
        self._schedule_phases = _one_cycle_phases(self.total_steps, pct_start, three_phase)
        if pct_start < 0 or pct_start > 1 or not isinstance(pct_start, float):
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError("anneal_strategy must be one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        self._anneal_func_type = anneal_strategy
        max_lrs = _per_group("max_lr", optimizer, max_lr)
        if last_epoch == -1:
            for group, top in zip(optimizer.param_groups, max_lrs):
                group["initial_lr"] = top / div_factor
                group["max_lr"] = top
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self._init_momentum(optimizer, max_momentum, base_momentum, last_epoch)
        super().__init__(optimizer, last_epoch)

    def _anneal(self, start, end, pct):
        if self._anneal_func_type == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self):
        _warn_get_lr_called_within_step(self)
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(f"Tried to step {step} times. The specified number of total steps "
                             f"is {self.total_steps}")
        lrs = []
        for group in self.optimizer.param_groups:
            start = 0.0
            for i, phase in enumerate(self._schedule_phases):
                end = phase["end_step"]
                if step <= end or i == len(self._schedule_phases) - 1:
                    pct = (step - start) / (end - start)
                    break
                start = end
            lrs.append(self._anneal(group[phase["start_lr"]], group[phase["end_lr"]], pct))
            if self.cycle_momentum:
                self._set_momentum(group, self._anneal(group[phase["start_momentum"]],
                                                       group[phase["end_momentum"]], pct))
        return lrs


def _total_steps(total_steps, epochs, steps_per_epoch):
    if total_steps is not None:
        if not isinstance(total_steps, int) or total_steps <= 0:
            raise ValueError(f"Expected positive integer total_steps, but got {total_steps}")
        return total_steps
    if epochs is not None and steps_per_epoch is not None:
        for name, value in (("epochs", epochs), ("steps_per_epoch", steps_per_epoch)):
            if not isinstance(value, int) or value <= 0:
                raise ValueError(f"Expected positive integer {name}, but got {value}")
        return epochs * steps_per_epoch
    raise ValueError("You must define either total_steps OR (epochs AND steps_per_epoch)")


def _phase(end_step, start_lr, end_lr, start_momentum, end_momentum):
    return {"end_step": end_step, "start_lr": start_lr, "end_lr": end_lr,
            "start_momentum": start_momentum, "end_momentum": end_momentum}


def _one_cycle_phases(total_steps, pct_start, three_phase):
    """OneCycleLR's phases: (end step, lr and momentum endpoints by group key)."""
    warmup_end = float(pct_start * total_steps) - 1
    if three_phase:
        return [_phase(warmup_end, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                _phase(float(2 * pct_start * total_steps) - 2, "max_lr", "initial_lr",
                       "base_momentum", "max_momentum"),
                _phase(total_steps - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum")]
    return [_phase(warmup_end, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
            _phase(total_steps - 1, "max_lr", "min_lr", "base_momentum", "max_momentum")]


class CyclicLR(_MomentumCycling, LRScheduler):
    """Cyclical learning rates (Smith, 2017): the lr goes base_lr -> max_lr over step_size_up
    steps and back over step_size_down, the amplitude scaled per cycle ("triangular",
    "triangular2": halved each cycle) or per step ("exp_range": gamma^step), or by `scale_fn`;
    momentum cycles the opposite way."""

    def __init__(self, optimizer, base_lr, max_lr, step_size_up=2000, step_size_down=None,
                 mode="triangular", gamma=1.0, scale_fn=None, scale_mode="cycle",
                 cycle_momentum=True, base_momentum=0.8, max_momentum=0.9, last_epoch=-1):
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        base_lrs = _per_group("base_lr", optimizer, base_lr)
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups):
                group["lr"] = lr
        self.max_lrs = _per_group("max_lr", optimizer, max_lr)
        step_size_up = float(step_size_up)
        step_size_down = float(step_size_down) if step_size_down is not None else step_size_up
        self.total_size = step_size_up + step_size_down
        self.step_ratio = step_size_up / self.total_size
        if mode not in ["triangular", "triangular2", "exp_range"] and scale_fn is None:
            raise ValueError("mode is invalid and scale_fn is None")
        self.mode, self.gamma = mode, gamma
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode
        self._init_scale_fn()
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self.max_momentums, self.base_momentums = self._init_momentum(
                optimizer, max_momentum, base_momentum, last_epoch)
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def _init_scale_fn(self):
        """The built-in modes fix the scale mode: per cycle for the triangular ones, per
        iteration for exp_range."""
        if self._scale_fn_custom is None and self.mode in ("triangular", "triangular2"):
            self.scale_mode = "cycle"
        elif self._scale_fn_custom is None:
            self.scale_mode = "iterations"

    def scale_fn(self, x):
        """The amplitude's scale at cycle (or iteration) x."""
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        if self.mode == "triangular":
            return 1.0
        if self.mode == "triangular2":
            return 1 / (2.0 ** (x - 1))
        return self.gamma ** x

    def get_lr(self):
        _warn_get_lr_called_within_step(self)
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        if x <= self.step_ratio:
            scale_factor = x / self.step_ratio
        else:
            scale_factor = (x - 1) / (self.step_ratio - 1)
        scale = self.scale_fn(cycle if self.scale_mode == "cycle" else self.last_epoch)
        lrs = [base + (top - base) * scale_factor * scale
               for base, top in zip(self.base_lrs, self.max_lrs)]
        if self.cycle_momentum:
            for group, base, top in zip(self.optimizer.param_groups, self.base_momentums,
                                        self.max_momentums):
                self._set_momentum(group, top - (top - base) * scale_factor * scale)
        return lrs

    def state_dict(self):
        """The attributes but the scale function, which cannot be saved (a callable object's
        attributes are, as PyTorch saves them)."""
        fn = self._scale_fn_custom
        state = _state_with(self, "_scale_fn_custom", None)
        if fn is not None and not isinstance(fn, types.FunctionType):
            state["_scale_fn_custom"] = fn.__dict__.copy()
        return state

    def load_state_dict(self, state_dict):
        fn = _load_except(self, state_dict, "_scale_fn_custom")
        if fn is not None:
            self._scale_fn_custom.__dict__.update(fn)
        self._init_scale_fn()


class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine annealing from the base lr to eta_min over T_i epochs, restarting at the base lr;
    the period starts at T_0 and is multiplied by T_mult at each restart (SGDR)."""

    def __init__(self, optimizer, T_0, T_mult=1, eta_min=0.0, last_epoch=-1):
        if T_0 <= 0 or not isinstance(T_0, int):
            raise ValueError(f"Expected positive integer T_0, but got {T_0}")
        if T_mult < 1 or not isinstance(T_mult, int):
            raise ValueError(f"Expected integer T_mult >= 1, but got {T_mult}")
        if not isinstance(eta_min, (float, int)):
            raise ValueError(f"Expected float or int eta_min, but got {eta_min} of type "
                             f"{type(eta_min)}")
        self.T_0, self.T_i, self.T_mult, self.eta_min = T_0, T_0, T_mult, eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        _warn_get_lr_called_within_step(self)
        return [self.eta_min + (base - self.eta_min) * (1 + math.cos(math.pi * self.T_cur /
                                                                     self.T_i)) / 2
                for base in self.base_lrs]

    def step(self, epoch=None):
        """Advance one epoch, or jump to `epoch` (fractional epochs allowed, as PyTorch's)."""
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur = self.T_cur + 1
            if self.T_cur >= self.T_i:
                self.T_cur = self.T_cur % self.T_i
                self.T_i = self.T_i * self.T_mult
        else:
            self._jump(epoch)
        self.last_epoch = math.floor(epoch)
        for group, lr in zip(self.optimizer.param_groups, self._stepped_lrs(self.get_lr)):
            group["lr"] = lr
        self._last_lr = _group_values(self.optimizer, "lr")

    def _jump(self, epoch):
        """Set the period T_i and the position T_cur in it for `epoch`."""
        if epoch < 0:
            raise ValueError(f"Expected non-negative epoch, but got {epoch}")
        if epoch < self.T_0:
            self.T_i, self.T_cur = self.T_0, epoch
        elif self.T_mult == 1:
            self.T_cur = epoch % self.T_0
        else:
            n = int(math.log((epoch / self.T_0 * (self.T_mult - 1) + 1), self.T_mult))
            self.T_cur = epoch - self.T_0 * (self.T_mult ** n - 1) / (self.T_mult - 1)
            self.T_i = self.T_0 * self.T_mult ** n
