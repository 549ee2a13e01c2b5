"""Neural network building blocks: Module, Parameter, layers, losses, init and functional."""

from . import functional, init, utils
from . import parallel
from .modules import *
from .modules import __all__ as _modules_all
from .parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter
from .parallel import DataParallel

__all__ = ["Buffer", "Parameter", "UninitializedBuffer", "UninitializedParameter", "DataParallel",
           "functional", "init", "utils"] + list(_modules_all)
