"""The layers of `genesis.nn`, one module per family."""

from .activation import (ELU, GELU, LeakyReLU, LogSigmoid, LogSoftmax, ReLU, Sigmoid, SiLU,
                         Softmax, Softmin, Softplus, Tanh)
from .attention import MultiheadAttention
from .batchnorm import BatchNorm1d, BatchNorm2d
from .container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .conv import Conv1d, Conv2d
from .dropout import Dropout, Dropout1d, Dropout2d
from .embedding import Embedding
from .flatten import Flatten, Unflatten
from .linear import Bilinear, Identity, Linear
from .loss import (BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, HuberLoss, KLDivLoss, L1Loss,
                   MSELoss, NLLLoss, SmoothL1Loss)
from .module import Module
from .normalization import GroupNorm, LayerNorm, RMSNorm
from .pooling import AdaptiveAvgPool2d, AvgPool2d, MaxPool2d

__all__ = [
    "ELU", "GELU", "LeakyReLU", "LogSigmoid", "LogSoftmax", "ReLU", "Sigmoid", "SiLU", "Softmax",
    "Softmin", "Softplus", "Tanh", "MultiheadAttention", "BatchNorm1d", "BatchNorm2d",
    "ModuleDict", "ModuleList", "ParameterDict", "ParameterList", "Sequential", "Conv1d",
    "Conv2d", "Dropout", "Dropout1d", "Dropout2d", "Embedding", "Flatten", "Unflatten",
    "Bilinear", "Identity", "Linear", "BCELoss", "BCEWithLogitsLoss", "CrossEntropyLoss",
    "HuberLoss", "KLDivLoss", "L1Loss", "MSELoss", "NLLLoss", "SmoothL1Loss", "Module",
    "GroupNorm", "LayerNorm", "RMSNorm", "AdaptiveAvgPool2d", "AvgPool2d", "MaxPool2d"]
