"""The math of the recurrent layers: one cell step of RNN, LSTM and GRU, and a direction's scan.

The layers project the input of every time step in one matmul (`x W_ih^T + b`), so a step
receives its precomputed input gates `gi` and adds one matmul of the hidden state
(`gh = h W_hh^T + b_hh`) before the gate math. The LSTM and GRU gate math is one backend kernel
forward and one backward ("lstm_cell_fwd"/"_bwd", "gru_cell_fwd"/"_bwd"); when the backward
itself is differentiated (create_graph), its gradients are written with genesis ops instead,
so every order is exact.

Precision: the layers (nn.RNN, LSTM, GRU) pass `allow_tf32`, genesis.backends.cudnn.allow_tf32
as it was when the layer ran forward, so that on the GPU their float32 products, forward and
backward, run TF32 as PyTorch's cuDNN RNN does by default; the cells (RNNCell, LSTMCell,
GRUCell, not cuDNN in PyTorch either) leave it None: genesis.backends.cuda.matmul.allow_tf32.
"""

from ...autograd.function import Function, name_node
from ...autograd.grad_mode import is_grad_enabled
from ...ops import elementwise as ew
from ...ops import shape_copies
from ...ops.common import call, wrap
from .activation import relu, sigmoid, tanh
from .linear import linear_activation

_ACTIVATIONS = {"tanh": tanh, "relu": relu}


def _linear(x, weight, bias, allow_tf32):
    """x W^T + b, float32 in TF32 per `allow_tf32` (None: the matmul flag)."""
    return linear_activation(x, weight, bias, None, allow_tf32)


def rnn_step(gi, state, w_hh, b_hh, nonlinearity, allow_tf32=None):
    """Elman step: h' = act(gi + h W_hh^T + b_hh)."""
    (h,) = state
    return (_ACTIVATIONS[nonlinearity](gi + _linear(h, w_hh, b_hh, allow_tf32)),)


def lstm_step(gi, state, w_hh, b_hh, w_hr=None, allow_tf32=None):
    """LSTM step on gates (input, forget, cell, output); h' is projected by W_hr when given."""
    h, c = state
    h, c = _LSTMCell.apply(gi, _linear(h, w_hh, b_hh, allow_tf32), c)
    return (h if w_hr is None else _linear(h, w_hr, None, allow_tf32), c)


def gru_step(gi, state, w_hh, b_hh, allow_tf32=None):
    """GRU step: reset r, update z, candidate n = tanh(gi_n + r (h W_hn^T + b_hn)),
    h' = (1 - z) n + z h."""
    (h,) = state
    h_new = _GRUCell.apply(gi, _linear(h, w_hh, b_hh, allow_tf32), h)
    return (name_node(h_new, "AddBackward0"),)  # PyTorch's last step: (1 - z) n + z h


def _lstm_gates(gi, gh, c):
    """Activated gates i, f, g, o and the new cell state f c + i g."""
    i, f, g, o = (gi + gh).chunk(4, -1)
    i, f, g, o = sigmoid(i), sigmoid(f), tanh(g), sigmoid(o)
    return i, f, g, o, f * c + i * g


def _lstm_grads(dh, dc, gi, gh, c):
    """(d gates, d c) of the LSTM gate math, with genesis ops."""
    i, f, g, o, c_new = _lstm_gates(gi, gh, c)
    tanh_c = tanh(c_new)
    dc = dc + dh * o * (1 - tanh_c * tanh_c)
    d_gates = shape_copies.cat([dc * g * i * (1 - i), dc * c * f * (1 - f), dc * i * (1 - g * g),
                                dh * tanh_c * o * (1 - o)], -1)
    return d_gates, dc * f


def _gru_grads(dh, gi, gh, h):
    """(d gi, d gh, d h) of the GRU gate math, with genesis ops."""
    i_r, i_z, i_n = gi.chunk(3, -1)
    h_r, h_z, h_n = gh.chunk(3, -1)
    r, z = sigmoid(i_r + h_r), sigmoid(i_z + h_z)
    n = tanh(i_n + r * h_n)
    d_n = dh * (1 - z) * (1 - n * n)
    d_r = d_n * h_n * r * (1 - r)
    d_z = dh * (h - n) * z * (1 - z)
    return (shape_copies.cat([d_r, d_z, d_n], -1), shape_copies.cat([d_r, d_z, d_n * r], -1),
            dh * z)


def _kernel_grads(op, grads, saved):
    """The backend's backward kernel `op` on contiguous operands, as tensors."""
    device = saved[0].device
    results = call(op, *(t.contiguous() for t in grads + saved), device=device)
    return tuple(wrap(r, device) for r in results)


class _LSTMCell(Function):
    """(h', c') from the step's input gates gi, hidden gates gh and cell state c."""

    @staticmethod
    def forward(ctx, gi, gh, c):
        gi, gh, c = gi.contiguous(), gh.contiguous(), c.contiguous()
        h_new, c_new = call("lstm_cell_fwd", gi, gh, c, device=gi.device)
        ctx.save_for_backward(gi, gh, c)
        return wrap(h_new, gi.device), wrap(c_new, gi.device)

    @staticmethod
    def backward(ctx, dh, dc):
        saved = ctx.saved_tensors
        if is_grad_enabled():
            d_gates, d_c = _lstm_grads(dh, dc, *saved)
        else:
            d_gates, d_c = _kernel_grads("lstm_cell_bwd", (dh, dc), saved)
        return d_gates, d_gates, d_c


class _GRUCell(Function):
    """h' from the step's input gates gi, hidden gates gh (with b_hh) and hidden state h."""

    @staticmethod
    def forward(ctx, gi, gh, h):
        gi, gh, h = gi.contiguous(), gh.contiguous(), h.contiguous()
        ctx.save_for_backward(gi, gh, h)
        return wrap(call("gru_cell_fwd", gi, gh, h, device=gi.device), gi.device)

    @staticmethod
    def backward(ctx, dh):
        saved = ctx.saved_tensors
        if is_grad_enabled():
            return _gru_grads(dh, *saved)
        return _kernel_grads("gru_cell_bwd", (dh,), saved)


def _split_state(state, size):
    """The first `size` rows of each state tensor, and the rest."""
    return tuple(s[:size] for s in state), tuple(s[size:] for s in state)


def scan_forward(step, gates, batch_sizes, state):
    """Run `step` over time steps 0..T-1 of the time-major rows `gates` (batch_sizes[t] rows at
    step t, non-increasing). A sequence that ends keeps its last state; returns the outputs
    (rows, H) and the final state of every sequence. The steps' rows come from one split, whose
    backward is one concatenation (slices would each scatter into a zero tensor of all rows)."""
    outputs, finished = [], []
    for rows in gates.split(batch_sizes, 0):
        if rows.shape[0] < state[0].shape[0]:
            state, done = _split_state(state, rows.shape[0])
            finished.append(done)
        state = step(rows, state)
        outputs.append(state[0])
    final = tuple(shape_copies.cat([s] + [done[k] for done in reversed(finished)], 0)
                  if finished else s for k, s in enumerate(state))
    return shape_copies.cat(outputs, 0), final


def scan_reverse(step, gates, batch_sizes, initial):
    """Run `step` from the last time step to the first; a sequence joins at its own last step
    with its initial state. Returns the outputs (rows, H, in time order) and final states."""
    pieces = gates.split(batch_sizes, 0)
    state = _split_state(initial, batch_sizes[-1])[0]
    outputs = [None] * len(batch_sizes)
    for t in reversed(range(len(batch_sizes))):
        size, have = batch_sizes[t], state[0].shape[0]
        if size > have:
            state = tuple(shape_copies.cat([s, init[have:size]], 0)
                          for s, init in zip(state, initial))
        state = step(pieces[t], state)
        outputs[t] = state[0]
    return shape_copies.cat(outputs, 0), state


def input_gates(x, w_ih, b_ih, b_hh, fold_hidden_bias, allow_tf32=None):
    """x W_ih^T + b_ih for every time step at once; b_hh joins it when the step adds it
    unscaled (RNN, LSTM), but not for GRU, whose candidate gate scales h W_hn^T + b_hn by r."""
    if b_ih is not None:
        b_ih = ew.add(b_ih, b_hh) if fold_hidden_bias else b_ih
    return _linear(x, w_ih, b_ih, allow_tf32)
