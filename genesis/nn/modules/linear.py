"""Identity, Linear and Bilinear layers, initialised as in torch."""

import math

from .. import functional as F
from .. import init
from ._utils import new_parameter, optional_parameter
from .module import Module


class Identity(Module):
    """Returns its input; accepts and ignores any constructor arguments."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """y = x A^T + b over the last dimension; weight (out_features, in_features)."""

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.weight = new_parameter(out_features, in_features, device=device, dtype=dtype)
        optional_parameter(self, "bias", bias, out_features, device=device, dtype=dtype)
        self.reset_parameters()

    def reset_parameters(self):
        """Kaiming-uniform weight (a=sqrt(5)), bias U(-1/sqrt(in), 1/sqrt(in)), as torch."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1 / math.sqrt(self.in_features) if self.in_features > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class Bilinear(Module):
    """y = x1^T A x2 + b; weight (out_features, in1_features, in2_features)."""

    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None,
                 dtype=None):
        super().__init__()
        self.in1_features, self.in2_features = in1_features, in2_features
        self.out_features = out_features
        self.weight = new_parameter(out_features, in1_features, in2_features, device=device,
                                    dtype=dtype)
        optional_parameter(self, "bias", bias, out_features, device=device, dtype=dtype)
        self.reset_parameters()

    def reset_parameters(self):
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")
