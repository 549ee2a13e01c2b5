"""The layers of `genesis.nn`, one module per family."""

from .activation import (
                         ELU,
                         GELU,
                         LeakyReLU,
                         LogSigmoid,
                         LogSoftmax,
                         ReLU,
                         Sigmoid,
                         SiLU,
                         Softmax,
                         Softmin,
                         Softplus,
                         Tanh,
)
from .attention import MultiheadAttention
from .batchnorm import BatchNorm1d, BatchNorm2d
from .container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .conv import Conv1d, Conv2d
from .dropout import Dropout, Dropout1d, Dropout2d
from .embedding import Embedding
from .flatten import Flatten, Unflatten
from .linear import Bilinear, Identity, Linear
from .loss import (
                         BCELoss,
                         BCEWithLogitsLoss,
                         CrossEntropyLoss,
                         HuberLoss,
                         KLDivLoss,
                         L1Loss,
                         MSELoss,
                         NLLLoss,
                         SmoothL1Loss,
)
from .module import Module
from .normalization import GroupNorm, LayerNorm, RMSNorm
from .pooling import AdaptiveAvgPool2d, AvgPool2d, MaxPool2d
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase
from .transformer import (
                         Transformer,
                         TransformerDecoder,
                         TransformerDecoderLayer,
                         TransformerEncoder,
                         TransformerEncoderLayer,
)

__all__ = [
                         "ELU",
                         "GELU",
                         "AdaptiveAvgPool2d",
                         "AvgPool2d",
                         "BCELoss",
                         "BCEWithLogitsLoss",
                         "BatchNorm1d",
                         "BatchNorm2d",
                         "Bilinear",
                         "Conv1d",
                         "Conv2d",
                         "CrossEntropyLoss",
                         "Dropout",
                         "Dropout1d",
                         "Dropout2d",
                         "Embedding",
                         "Flatten",
                         "GRU",
                         "GRUCell",
                         "GroupNorm",
                         "HuberLoss",
                         "Identity",
                         "KLDivLoss",
                         "L1Loss",
                         "LSTM",
                         "LSTMCell",
                         "LayerNorm",
                         "LeakyReLU",
                         "Linear",
                         "LogSigmoid",
                         "LogSoftmax",
                         "MSELoss",
                         "MaxPool2d",
                         "Module",
                         "ModuleDict",
                         "ModuleList",
                         "MultiheadAttention",
                         "NLLLoss",
                         "ParameterDict",
                         "ParameterList",
                         "RMSNorm",
                         "RNN",
                         "RNNBase",
                         "RNNCell",
                         "RNNCellBase",
                         "ReLU",
                         "Sequential",
                         "SiLU",
                         "Sigmoid",
                         "SmoothL1Loss",
                         "Softmax",
                         "Softmin",
                         "Softplus",
                         "Tanh",
                         "Transformer",
                         "TransformerDecoder",
                         "TransformerDecoderLayer",
                         "TransformerEncoder",
                         "TransformerEncoderLayer",
                         "Unflatten",
]
