"""Projections that read one input fused into one matrix: a layer's query, key and value
projections, or the gate and up projections of a SwiGLU MLP, are one (sum of outputs, inputs)
weight and one matmul (a decode step reads the input once and launches one kernel instead of
three or two).

Where the backend has the kernels (CUDA), SwiGLU's silu(gate) * up reads the fused gate/up output
once and writes once (`silu_gate`); without gradients, a decoding step's gate runs inside the
down projection's kernel (`silu_gate_down`), and a residual add and the RMSNorm after it are one
kernel (`add_norm`).

State dicts keep Hugging Face's names: the module holding the fused projection
(`FusedParent`) writes each part under its own name (`q_proj.weight`, ...) as a view of the
fused weight, and reads those names back into it, so checkpoints load and save both ways and
an optimizer trains the fused parameter itself.
"""

from .. import nn
from ..autograd.function import Function, records
from ..autograd.grad_mode import is_grad_enabled
from ..dispatch import has_kernel
from ..nn import functional as F
from ..nn.modules.state_loading import load_plan
from ..ops.common import call, wrap
from ..ops.shape_copies import cat


class FusedLinear(nn.Linear):
    """nn.Linear whose output features are the parts' outputs, concatenated in order;
    `parts` maps each part's name to its number of output features."""

    def __init__(self, in_features, parts, bias=True, device=None, dtype=None):
        super().__init__(in_features, sum(parts.values()), bias=bias, device=device, dtype=dtype)
        self.parts = dict(parts)

    def forward(self, input):
        """The parts' outputs, one tensor each (views of one matmul's result)."""
        return self.fused(input).split(list(self.parts.values()), -1)

    def fused(self, input):
        """The parts' outputs side by side, as one tensor."""
        return F.linear(input, self.weight, self.bias)

    def part_views(self):
        """{(part, parameter name): the rows of that parameter that part owns}."""
        views = {}
        for pname, param in self._parameters.items():
            if param is None:
                continue
            start = 0
            for part, size in self.parts.items():
                views[part, pname] = param.narrow(0, start, size)
                start += size
        return views

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        """Nothing under the fused name: the parent writes the parts."""

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        """Nothing under the fused name: the parent reads the parts (also a part named as
        this module, the whole matrix, as Phi-3's checkpoints keep it)."""
        name = prefix[:-1].rpartition(".")[2]
        read = {prefix + p for p in self._parameters} if name in self.parts else set()
        unexpected_keys.extend(k for k in state_dict if k not in read)


class FusedParent(nn.Module):
    """A module with FusedLinear children, whose state dicts name the parts."""

    def _fused(self):
        return [(name, m) for name, m in self._modules.items() if isinstance(m, FusedLinear)]

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        super()._save_to_state_dict(destination, prefix, keep_vars)
        for _, module in self._fused():
            for (part, pname), view in module.part_views().items():
                destination[f"{prefix}{part}.{pname}"] = view if keep_vars else view.detach()

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        parts = {}
        for _, module in self._fused():
            for (part, pname), view in module.part_views().items():
                parts[f"{prefix}{part}.{pname}"] = (module, pname, view)
        own = {k: v for k, v in state_dict.items() if k not in parts}
        super()._load_from_state_dict(own, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)
        load_views(state_dict, parts, local_metadata, missing_keys, error_msgs)


def load_views(state_dict, views, local_metadata, missing_keys, error_msgs):
    """Check the entries of `state_dict` that fill `views` ({key: (module, parameter name, the
    view of that parameter the key names)}) and plan their writes into the views."""
    with load_plan(local_metadata.get("assign_to_params_buffers", False)) as plan:
        for key, (module, pname, view) in views.items():
            if key not in state_dict:
                missing_keys.append(key)
            elif tuple(state_dict[key].shape) != tuple(view.shape):
                error_msgs.append(f"size mismatch for {key}: copying a param with shape "
                                  f"{state_dict[key].shape} from checkpoint, the shape in "
                                  f"current model is {view.shape}.")
            else:
                plan.append((module, pname, view.detach(), state_dict[key]))


def silu_gate(gate_up):
    """silu(gate) * up of a (..., 2 * N) fused gate/up output (gate first)."""
    if has_kernel("silu_mul", gate_up.device.type) and gate_up.is_contiguous():
        return _SiluMul.apply(gate_up) if records(gate_up) else _SiluMul.compute(gate_up)
    gate, up = gate_up.chunk(2, -1)
    return F.silu(gate) * up


class _SiluMul(Function):
    """silu(gate) * up through the backend's kernel; the gradient with genesis ops (in
    float32: differentiable again)."""

    @staticmethod
    def compute(gate_up):
        """silu(gate) * up from the kernel."""
        return wrap(call("silu_mul", gate_up), gate_up.device, gate_up.dtype)

    @staticmethod
    def forward(ctx, gate_up):
        ctx.save_for_backward(gate_up)
        return _SiluMul.compute(gate_up)

    @staticmethod
    def backward(ctx, grad):
        """In float32, rounded once to the input's dtype."""
        (gate_up,) = ctx.saved_tensors
        gate, up = gate_up.float().chunk(2, -1)
        grad = grad.float()
        sig = gate.sigmoid()
        d_gate = grad * up * sig * (1 + gate * (1 - sig))
        return cat([d_gate, grad * gate * sig], -1).to(gate_up.dtype)


FUSED_GATE_ROWS = 1
"""Rows up to which SwiGLU's gate runs inside the down projection: that product recomputes the
gate (an exp and a division an element) for every block of its output columns, which costs
nothing beside the weight's read at one row (batch-1 decoding). At 16 rows it does not: the
1.1B benchmark's batch-16 decode measured 10,279 tok/s with it on an H200, against
14,525-15,010 without it."""


def silu_gate_down(gate_up, down):
    """down(silu(gate) * up) of a fused gate/up output and the plain nn.Linear `down`: one kernel
    without gradients where the backend has it and the rows are few, else silu_gate then
    down."""
    if _gate_fusable(gate_up, down):
        out = call("linear_silu_gate", gate_up, down.weight, down.bias)
        return wrap(out, gate_up.device, gate_up.dtype)
    gated = silu_gate(gate_up)
    del gate_up  # freed before the down projection runs, as in down(silu_gate(gate_up))
    return down(gated)


def _gate_fusable(gate_up, down):
    """One kernel can run down(silu_gate(gate_up)): see silu_gate_down."""
    shape = gate_up._data.shape
    if not shape or gate_up.numel() > FUSED_GATE_ROWS * shape[-1]:  # more rows than it takes
        return False
    weight, bias = down.weight, down.bias
    tensors = (gate_up, weight) if bias is None else (gate_up, weight, bias)
    return (has_kernel("linear_silu_gate", gate_up.device.type) and type(down) is nn.Linear
            and not (down._forward_pre_hooks or down._forward_hooks)
            and not (is_grad_enabled() and any(t.requires_grad for t in tensors))
            and all(t.dtype is gate_up.dtype and t.device == gate_up.device for t in tensors)
            and shape[-1] == 2 * weight.shape[1])


FUSED_NORM_WIDTH = 16384
"""The widest rows the fused add + RMSNorm kernel holds in registers."""


def add_norm(x, y, norm):
    """(x + y, norm(x + y)) for the nn.RMSNorm `norm` over the last dim."""
    weight = norm.weight
    shape = x._data.shape
    if (has_kernel("add_rms_norm", x.device.type) and weight is not None
            and norm.eps is not None and len(norm.normalized_shape) == 1
            and not (is_grad_enabled() and (x.requires_grad or y.requires_grad
                                            or weight.requires_grad))
            and shape == y._data.shape and x.dtype is y.dtype is weight.dtype
            and y.device == x.device == weight.device
            and 0 < shape[-1] <= FUSED_NORM_WIDTH and x.is_contiguous() and y.is_contiguous()):
        h, out = call("add_rms_norm", x, y, weight, norm.eps)
        return wrap(h, x.device, x.dtype), wrap(out, x.device, x.dtype)
    h = x + y
    return h, norm(h)
