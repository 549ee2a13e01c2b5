"""Neural network building blocks: Module, Parameter, layers, losses, init and functional."""

from . import functional, init, utils
from . import parallel
from .modules import *
from .modules import __all__ as _modules_all
from .parameter import Buffer, Parameter
from .parallel import DataParallel

__all__ = ["Buffer", "Parameter", "DataParallel", "functional", "init", "utils"] + list(_modules_all)
