"""Affine maps: `linear` (x A^T + b) and `bilinear` (x1^T A x2 + b)."""

from ...ops import linalg


def linear(input, weight, bias=None):
    """y = input @ weight.T + bias over the last dimension of `input`."""
    if input.ndim == 0 or input.shape[-1] != weight.shape[-1]:
        raise RuntimeError(f"linear: mat1 and mat2 shapes cannot be multiplied (input of shape "
                           f"{list(input.shape)} and weight of shape {list(weight.shape)})")
    if input.ndim > 2:
        out = linalg.matmul(input.reshape(-1, input.shape[-1]), weight.t())
        out = out.reshape(*input.shape[:-1], weight.shape[0])
    else:
        out = linalg.matmul(input, weight.t())
    return out if bias is None else out + bias


def bilinear(input1, input2, weight, bias=None):
    """y[..., o] = sum_ij input1[..., i] weight[o, i, j] input2[..., j] + bias[o]."""
    out_features, in1, in2 = weight.shape
    if input1.shape[-1] != in1 or input2.shape[-1] != in2 or input1.shape[:-1] != input2.shape[:-1]:
        raise RuntimeError(f"bilinear: expected inputs of shapes [*, {in1}] and [*, {in2}] with "
                           f"the same leading dimensions for weight of shape {list(weight.shape)}, "
                           f"got {list(input1.shape)} and {list(input2.shape)}")
    lead = input1.shape[:-1]
    x1 = input1.reshape(-1, in1)
    x2 = input2.reshape(-1, in2)
    mixed = linalg.matmul(x1, weight.permute(1, 0, 2).reshape(in1, out_features * in2))
    out = (mixed.reshape(-1, out_features, in2) * x2.unsqueeze(1)).sum(-1)
    out = out.reshape(*lead, out_features)
    return out if bias is None else out + bias
