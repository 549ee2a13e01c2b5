"""PostLocalSGDOptimizer (PyTorch's torch.distributed.optim.PostLocalSGDOptimizer): a local
optimizer whose every step is followed by a model averager's turn, for post-local SGD."""

import warnings

from ...optim import Optimizer

__all__ = ["PostLocalSGDOptimizer"]


class PostLocalSGDOptimizer(Optimizer):
    """Runs `optim` at every step, then lets `averager` average the parameters; its state dict
    also records the averager's step, so a reload does not warm up again."""

    def __init__(self, optim, averager):
        self.optim = optim
        self.param_groups = self.optim.param_groups
        self.averager = averager

    @property
    def state(self):
        return self.optim.state

    def __repr__(self):
        return self.optim.__repr__()

    def state_dict(self):
        """The local optimizer's state dict with the averager's step under "step"."""
        optim_state_dict = self.optim.state_dict()
        optim_state_dict["step"] = self.averager.step
        return optim_state_dict

    def load_state_dict(self, state_dict):
        """Load the local optimizer's state and the averager's step (0, with a warning, if the
        dict has none)."""
        self.optim.load_state_dict(state_dict)
        if "step" in state_dict:
            self.averager.step = state_dict["step"]
        else:
            warnings.warn("Loaded state dict does not contain a step counter for an averager. "
                          "Setting step counter to 0.", stacklevel=2)
            self.averager.step = 0

    def step(self):
        """One local step, then the averager's turn on the parameter groups."""
        self.optim.step()
        self.averager.average_parameters(params=self.param_groups)

    def zero_grad(self, set_to_none=True):
        self.optim.zero_grad(set_to_none=set_to_none)

    def add_param_group(self, param_group):
        self.optim.add_param_group(param_group)
