"""The math of the recurrent layers: one cell step of RNN, LSTM and GRU, and a direction's scan.

The layers project the input of every time step in one matmul (`x W_ih^T + b`), so a step
receives its precomputed input gates `gi` and adds one matmul of the hidden state (`h W_hh^T`)
before the gate math. Every function composes differentiable genesis ops, so the same code
runs forward and backward on every device.
"""

from ...ops import elementwise as ew
from ...ops import shape as shape_ops
from .activation import relu, sigmoid, tanh
from .linear import linear

_ACTIVATIONS = {"tanh": tanh, "relu": relu}


def rnn_step(gi, state, w_hh, b_hh, nonlinearity):
    """Elman step: h' = act(gi + h W_hh^T + b_hh)."""
    (h,) = state
    return (_ACTIVATIONS[nonlinearity](gi + linear(h, w_hh, b_hh)),)


def lstm_step(gi, state, w_hh, b_hh, w_hr=None):
    """LSTM step on gates (input, forget, cell, output); h' is projected by W_hr when given."""
    h, c = state
    i, f, g, o = (gi + linear(h, w_hh, b_hh)).chunk(4, -1)
    c = sigmoid(f) * c + sigmoid(i) * tanh(g)
    h = sigmoid(o) * tanh(c)
    return (h if w_hr is None else linear(h, w_hr), c)


def gru_step(gi, state, w_hh, b_hh):
    """GRU step: reset r, update z, candidate n = tanh(gi_n + r (h W_hn^T + b_hn)),
    h' = (1 - z) n + z h."""
    (h,) = state
    i_r, i_z, i_n = gi.chunk(3, -1)
    h_r, h_z, h_n = linear(h, w_hh, b_hh).chunk(3, -1)
    r, z = sigmoid(i_r + h_r), sigmoid(i_z + h_z)
    n = tanh(i_n + r * h_n)
    return (n + z * (h - n),)


def _split_state(state, size):
    """The first `size` rows of each state tensor, and the rest."""
    return tuple(s[:size] for s in state), tuple(s[size:] for s in state)


def scan_forward(step, gates, batch_sizes, state):
    """Run `step` over time steps 0..T-1 of the time-major rows `gates` (batch_sizes[t] rows at
    step t, non-increasing). A sequence that ends keeps its last state; returns the outputs
    (rows, H) and the final state of every sequence."""
    outputs, finished, start = [], [], 0
    for size in batch_sizes:
        if size < state[0].shape[0]:
            state, done = _split_state(state, size)
            finished.append(done)
        state = step(gates[start:start + size], state)
        outputs.append(state[0])
        start += size
    final = tuple(shape_ops.cat([s] + [done[k] for done in reversed(finished)], 0)
                  if finished else s for k, s in enumerate(state))
    return shape_ops.cat(outputs, 0), final


def scan_reverse(step, gates, batch_sizes, initial):
    """Run `step` from the last time step to the first; a sequence joins at its own last step
    with its initial state. Returns the outputs (rows, H, in time order) and final states."""
    starts = [0]
    for size in batch_sizes[:-1]:
        starts.append(starts[-1] + size)
    state = _split_state(initial, batch_sizes[-1])[0]
    outputs = [None] * len(batch_sizes)
    for t in reversed(range(len(batch_sizes))):
        size, have = batch_sizes[t], state[0].shape[0]
        if size > have:
            state = tuple(shape_ops.cat([s, init[have:size]], 0)
                          for s, init in zip(state, initial))
        state = step(gates[starts[t]:starts[t] + size], state)
        outputs[t] = state[0]
    return shape_ops.cat(outputs, 0), state


def input_gates(x, w_ih, b_ih, b_hh, fold_hidden_bias):
    """x W_ih^T + b_ih for every time step at once; b_hh joins it when the step adds it
    unscaled (RNN, LSTM), but not for GRU, whose candidate gate scales h W_hn^T + b_hn by r."""
    if b_ih is None:
        return linear(x, w_ih)
    return linear(x, w_ih, ew.add(b_ih, b_hh) if fold_hidden_bias else b_ih)
