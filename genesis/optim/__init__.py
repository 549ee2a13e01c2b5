"""Optimizers with PyTorch's API (`genesis.optim.SGD`, `Adam`, `AdamW`, ...) and LR schedulers.

`swa_utils` averages `nn` modules, and `nn.utils` clips gradients with the optimizers'
multi-tensor helpers, so it is imported on first use rather than with this package.
"""

import importlib

from . import lr_scheduler
from .adadelta import Adadelta
from .adafactor import Adafactor
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .adamax import Adamax
from .asgd import ASGD
from .lbfgs import LBFGS
from .muon import Muon
from .nadam import NAdam
from .optimizer import Optimizer
from .radam import RAdam
from .rmsprop import RMSprop
from .rprop import Rprop
from .sgd import SGD
from .sparse_adam import SparseAdam

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "lr_scheduler", "NAdam",
           "RAdam", "Adamax", "Adadelta", "ASGD", "Rprop", "SparseAdam", "Adafactor", "Muon",
           "LBFGS", "swa_utils"]


def __getattr__(name):
    if name == "swa_utils":
        return importlib.import_module("genesis.optim.swa_utils")
    raise AttributeError(f"module 'genesis.optim' has no attribute {name!r}")
