"""Fused LSTM and GRU gate math on numpy ("lstm_cell_fwd"/"lstm_cell_bwd",
"gru_cell_fwd"/"gru_cell_bwd").

Contracts (shared with backends/cuda/kernels/recurrent.py): `gi` is a step's input projection
x W_ih^T (+ biases) and `gh` the hidden projection h W_hh^T (+ b_hh), both (B, G * H) with the
gates side by side, G = 4 (input, forget, cell, output) for LSTM and 3 (reset, update, new) for
GRU; states are (B, H). The backward recomputes the gates from its inputs instead of saving
them. Half types compute in float32 and round once; float64 stays float64. With `out` (a tuple
of arrays of the results' shapes and dtype, which a sequence-level scan passes as slices of its
buffers) the results are written there and those arrays returned; `out` may not overlap an
operand. The backward kernels take the new state's gradient as dh, plus dh2 (and, for GRU,
dh3) when given: the parts a scan carries from the next step, summed in the compute type.
"""

import numpy as np

from ...dispatch import register


def _compute(*arrays):
    ct = np.float64 if arrays[0].dtype == np.float64 else np.float32
    return [a.astype(ct, copy=False) for a in arrays]


def _results(results, dtype, out):
    """`results` rounded to `dtype`, or written into the arrays `out`."""
    if out is None:
        return tuple(r.astype(dtype) for r in results)
    for r, o in zip(results, out):
        np.copyto(o, r, casting="unsafe")
    return tuple(out)


def _state_grad(dh, *more):
    """dh plus those of `more` that are given, in the compute type."""
    for extra in more:
        if extra is not None:
            dh = dh + _compute(extra)[0]
    return dh


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _lstm_gates(gi, gh, c):
    """Activated gates i, f, g, o and the new cell state."""
    i, f, g, o = np.split(gi + gh, 4, axis=1)
    i, f, g, o = _sigmoid(i), _sigmoid(f), np.tanh(g), _sigmoid(o)
    return i, f, g, o, f * c + i * g


@register("lstm_cell_fwd", "cpu")
def lstm_cell_fwd(gi, gh, c, out=None):
    """(h', c'): c' = f c + i g, h' = o tanh(c')."""
    with np.errstate(over="ignore"):
        i, f, g, o, c_new = _lstm_gates(*_compute(gi, gh, c))
        return _results((o * np.tanh(c_new), c_new), gi.dtype, out)


@register("lstm_cell_bwd", "cpu")
def lstm_cell_bwd(dh, dc, gi, gh, c, out=None, dh2=None):
    """(d gates, d c): the gradient of the pre-activation gates (of gi and gh alike) and of
    the previous cell state, given those of h' and c'."""
    dtype = gi.dtype
    dh, dc, gi, gh, c = _compute(dh, dc, gi, gh, c)
    dh = _state_grad(dh, dh2)
    with np.errstate(over="ignore"):
        i, f, g, o, c_new = _lstm_gates(gi, gh, c)
    tanh_c = np.tanh(c_new)
    dc_total = dc + dh * o * (1.0 - tanh_c * tanh_c)
    d_gates = np.concatenate([dc_total * g * i * (1.0 - i), dc_total * c * f * (1.0 - f),
                              dc_total * i * (1.0 - g * g), dh * tanh_c * o * (1.0 - o)], axis=1)
    return _results((d_gates, dc_total * f), dtype, out)


def _gru_gates(gi, gh):
    """Reset r, update z, candidate n, and the hidden projection's new-gate part."""
    i_r, i_z, i_n = np.split(gi, 3, axis=1)
    h_r, h_z, h_n = np.split(gh, 3, axis=1)
    r, z = _sigmoid(i_r + h_r), _sigmoid(i_z + h_z)
    return r, z, np.tanh(i_n + r * h_n), h_n


@register("gru_cell_fwd", "cpu")
def gru_cell_fwd(gi, gh, h, out=None):
    """h' = n + z (h - n); `out` is a 1-tuple."""
    with np.errstate(over="ignore"):
        gi_c, gh_c, h_c = _compute(gi, gh, h)
        r, z, n, _ = _gru_gates(gi_c, gh_c)
        return _results((n + z * (h_c - n),), gi.dtype, out)[0]


@register("gru_cell_bwd", "cpu")
def gru_cell_bwd(dh, gi, gh, h, out=None, dh2=None, dh3=None):
    """(d gi, d gh, d h): d gh differs from d gi in the new gate, which r scales."""
    dtype = gi.dtype
    dh, gi, gh, h = _compute(dh, gi, gh, h)
    dh = _state_grad(dh, dh2, dh3)
    with np.errstate(over="ignore"):
        r, z, n, h_n = _gru_gates(gi, gh)
    d_n = dh * (1.0 - z) * (1.0 - n * n)
    d_r = d_n * h_n * r * (1.0 - r)
    d_z = dh * (h - n) * z * (1.0 - z)
    d_gi = np.concatenate([d_r, d_z, d_n], axis=1)
    d_gh = np.concatenate([d_r, d_z, d_n * r], axis=1)
    return _results((d_gi, d_gh, dh * z), dtype, out)
