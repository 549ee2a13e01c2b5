"""Recurrent layers RNN, LSTM and GRU and their cells, with torch's parameter names and init.

A layer runs layer by layer and direction by direction: the input projection of all time steps
is one matmul, then each step adds one matmul of the hidden state and the gate math
(functional/recurrent.py). Padded and packed inputs share that path: both become time-major
rows with a batch size per step. On the GPU the layers' float32 products, forward and backward,
run TF32 when genesis.backends.cudnn.allow_tf32 is set as they run forward (the default), as
PyTorch's cuDNN RNN does; the cells follow genesis.backends.cuda.matmul.allow_tf32, as
PyTorch's do.
"""

import functools
import math
import numbers
import warnings

from ...autograd.function import name_node
from ...backends import cudnn
from ...ops import creation
from ...ops import shape_copies
from .. import functional as F
from .. import init
from ..functional import recurrent as R
from ..functional import recurrent_scan as S
from ..utils.rnn import PackedSequence
from ._utils import new_parameter
from .module import Module

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


def _check_type(name, value, kind):
    if not isinstance(value, kind):
        raise TypeError(f"{name} should be of type {kind.__name__}, got: {type(value).__name__}")


def _check_sizes(input_size, hidden_size, num_layers, proj_size, bias, batch_first):
    """torch's constructor checks, in torch's order."""
    _check_type("bias", bias, bool)
    _check_type("batch_first", batch_first, bool)
    _check_type("input_size", input_size, int)
    if input_size <= 0:
        raise ValueError("input_size must be greater than zero")
    _check_type("hidden_size", hidden_size, int)
    if hidden_size <= 0:
        raise ValueError("hidden_size must be greater than zero")
    if num_layers <= 0:
        raise ValueError("num_layers must be greater than zero")
    if proj_size < 0:
        raise ValueError("proj_size should be a positive integer or zero to disable projections")
    if proj_size >= hidden_size:
        raise ValueError("proj_size has to be smaller than hidden_size")


def _check_dropout(dropout, num_layers):
    if not isinstance(dropout, numbers.Number) or isinstance(dropout, bool) \
            or not 0 <= dropout <= 1:
        raise ValueError("dropout should be a number in range [0, 1] representing the "
                         "probability of an element being zeroed")
    if dropout > 0 and num_layers == 1:
        warnings.warn("dropout option adds dropout after all but last recurrent layer, so "
                      "non-zero dropout expects num_layers greater than 1, but got "
                      f"dropout={dropout} and num_layers={num_layers}", stacklevel=3)


def _uniform_reset(module):
    """Every parameter U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), as torch."""
    stdv = 1.0 / math.sqrt(module.hidden_size) if module.hidden_size > 0 else 0
    for weight in module.parameters():
        init.uniform_(weight, -stdv, stdv)


class RNNBase(Module):
    """Shared machinery of RNN, LSTM and GRU: parameters, checks, the layer/direction loop.

    States travel internally as tuples of (num_layers * num_directions, batch, *) tensors:
    (h,) for RNN and GRU, (h, c) for LSTM.
    """

    # The end of torch's message for input of the wrong rank ("RNN: Expected input to be 2D
    # or 3D, got 4D tensor instead"; LSTM and GRU omit "tensor").
    _dim_error_tail = "tensor instead"
    # Whether b_hh joins the input projection (see functional.recurrent.input_gates).
    _folds_hidden_bias = True

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        if mode not in _GATES:
            raise ValueError("Unrecognized RNN mode: " + mode)
        _check_dropout(dropout, num_layers)
        _check_sizes(input_size, hidden_size, num_layers, proj_size, bias, batch_first)
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.num_layers, self.bias, self.batch_first = num_layers, bias, batch_first
        self.dropout, self.bidirectional, self.proj_size = float(dropout), bidirectional, proj_size
        self._flat_weights_names, self._all_weights = [], []
        for layer in range(num_layers):
            for direction in range(self._num_directions):
                self._add_layer_parameters(layer, direction, device, dtype)
        self.reset_parameters()

    @property
    def _num_directions(self):
        return 2 if self.bidirectional else 1

    @property
    def _real_hidden_size(self):
        return self.proj_size if self.proj_size > 0 else self.hidden_size

    def _add_layer_parameters(self, layer, direction, device, dtype):
        """weight_ih, weight_hh, (bias_ih, bias_hh), (weight_hr) of one layer and direction."""
        gate_size = _GATES[self.mode] * self.hidden_size
        layer_input = self.input_size if layer == 0 \
            else self._real_hidden_size * self._num_directions
        shapes = {"weight_ih": (gate_size, layer_input),
                  "weight_hh": (gate_size, self._real_hidden_size)}
        if self.bias:
            shapes.update(bias_ih=(gate_size,), bias_hh=(gate_size,))
        if self.proj_size > 0:
            shapes["weight_hr"] = (self.proj_size, self.hidden_size)
        suffix = "_reverse" if direction == 1 else ""
        names = []
        for role, shape in shapes.items():
            name = f"{role}_l{layer}{suffix}"
            setattr(self, name, new_parameter(*shape, device=device, dtype=dtype))
            names.append(name)
        self._flat_weights_names.extend(names)
        self._all_weights.append(names)

    @property
    def _flat_weights(self):
        return [getattr(self, name, None) for name in self._flat_weights_names]

    @property
    def all_weights(self):
        """The parameters grouped per layer and direction, in torch's order."""
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def flatten_parameters(self):
        """A no-op: the parameters are used as they are (torch packs them for cuDNN here)."""

    def reset_parameters(self):
        _uniform_reset(self)

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)

    def check_input(self, input, batch_sizes):
        weight_dtype = self._flat_weights[0].dtype
        if input.dtype != weight_dtype:
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype "
                             f"({weight_dtype}). Convert input: input.to({weight_dtype}), or "
                             f"convert model: model.to({input.dtype})")
        expected_dim = 2 if batch_sizes is not None else 3
        if input.ndim != expected_dim:
            raise RuntimeError(f"input must have {expected_dim} dimensions, got {input.ndim}")
        if self.input_size != input.shape[-1]:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {input.shape[-1]}")

    def get_expected_hidden_size(self, input, batch_sizes):
        if batch_sizes is not None:
            mini_batch = int(batch_sizes[0])
        else:
            mini_batch = input.shape[0] if self.batch_first else input.shape[1]
        return (self.num_layers * self._num_directions, mini_batch, self._real_hidden_size)

    def check_hidden_size(self, hx, expected_hidden_size, msg="Expected hidden size {}, got {}"):
        if tuple(hx.shape) != tuple(expected_hidden_size):
            raise RuntimeError(msg.format(expected_hidden_size, list(hx.shape)))

    def check_forward_args(self, input, hidden, batch_sizes):
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    def permute_hidden(self, hx, permutation):
        if permutation is None:
            return hx
        return hx.index_select(1, permutation)

    def _state_sizes(self):
        """The feature size of each state tensor."""
        return (self.hidden_size,)

    def _as_states(self, hx):
        return (hx,)

    def _from_states(self, states):
        return states[0]

    def _check_hx_dims(self, hx, batched):
        want = 3 if batched else 2
        if hx.ndim != want:
            kind = "batched 3-D" if batched else "unbatched 2-D"
            raise RuntimeError(f"For {kind} input, hx should also be {want}-D but got "
                               f"{hx.ndim}-D tensor")

    def _zero_states(self, batch, like):
        return tuple(creation.zeros(self.num_layers * self._num_directions, batch, size,
                                    dtype=like.dtype, device=like.device)
                     for size in self._state_sizes())

    def _layer_weights(self, index):
        """{'weight_ih': ..., 'bias_hh': ...} of layer/direction `index` (absent ones None)."""
        weights = dict.fromkeys(("weight_ih", "weight_hh", "bias_ih", "bias_hh", "weight_hr"))
        for name in self._all_weights[index]:
            weights[name.split("_l")[0]] = getattr(self, name)
        return weights

    def forward(self, input, hx=None):
        if isinstance(input, PackedSequence):
            return self._forward_packed(input, hx)
        if input.ndim not in (2, 3):
            raise ValueError(f"{self._get_name()}: Expected input to be 2D or 3D, got "
                             f"{input.ndim}D {self._dim_error_tail}")
        batched = input.ndim == 3
        batch_dim = 0 if self.batch_first else 1
        if not batched:
            input = input.unsqueeze(batch_dim)
        if hx is None:
            states = self._zero_states(input.shape[batch_dim], input)
        else:
            self._check_hx_dims(hx, batched)
            states = self._as_states(hx)
            if not batched:
                states = tuple(s.unsqueeze(1) for s in states)
        self._check_args(input, states, None)
        if self.batch_first:
            input = input.transpose(0, 1)
        steps, batch = input.shape[0], input.shape[1]
        if steps == 0:
            raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
        rows = input.reshape(steps * batch, input.shape[2])
        out, states = self._run(rows, [batch] * steps, states)
        # PyTorch's CPU LSTM in float32 and bfloat16 names its oneDNN layer instead
        output = name_node(out.reshape(steps, batch, out.shape[-1]),
                           "CatBackward0" if self.bidirectional else "StackBackward0")
        if self.batch_first:  # PyTorch's RNN and GRU transpose in place (overload 1)
            node = "TransposeBackward0" if self.mode == "LSTM" else "TransposeBackward1"
            output = name_node(output.transpose(0, 1), node)
        if not batched:
            output = output.squeeze(batch_dim)
            states = tuple(s.squeeze(1) for s in states)
        return output, self._from_states(states)

    def _forward_packed(self, packed, hx):
        data, batch_sizes, sorted_indices, unsorted_indices = packed
        sizes = [int(b) for b in batch_sizes.tolist()]
        if hx is None:
            states = self._zero_states(sizes[0], data)
        else:
            states = self._as_states(self.permute_hidden(hx, sorted_indices))
        self._check_args(data, states, batch_sizes)
        out, states = self._run(data, sizes, states)
        hidden = self.permute_hidden(self._from_states(states), unsorted_indices)
        return PackedSequence(out, batch_sizes, sorted_indices, unsorted_indices), hidden

    def _check_args(self, input, states, batch_sizes):
        self.check_forward_args(input, self._from_states(states), batch_sizes)

    def _step(self, weights, allow_tf32):
        """The step function of one layer/direction, called as step(input_gates, states)."""
        raise NotImplementedError

    def _scan(self, weights, gates, batch_sizes, state, reverse, allow_tf32):
        """One layer direction over its input gates: the sequence-level Function where it
        applies (LSTM and GRU over equal lengths), else the per-step path."""
        extra = weights["weight_hr"] if self.mode == "LSTM" else weights["bias_hh"]
        if S.applies(self.mode, gates, state, weights["weight_hh"], extra, batch_sizes):
            return S.scan(self.mode, gates, len(batch_sizes), state, weights["weight_hh"],
                          extra, reverse, allow_tf32)
        scan = R.scan_reverse if reverse else R.scan_forward
        return scan(self._step(weights, allow_tf32), gates, batch_sizes, state)

    def _run(self, x, batch_sizes, states):
        """All layers and directions over time-major rows `x`; returns the last layer's output
        rows and the final states stacked as (num_layers * num_directions, batch, *). The
        products' precision is cudnn.allow_tf32 as it is now, kept for their backward."""
        allow_tf32 = cudnn.allow_tf32
        finals, initial = [], [s.unbind(0) for s in states]
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(self._num_directions):
                index = layer * self._num_directions + direction
                weights = self._layer_weights(index)
                gates = R.input_gates(x, weights["weight_ih"], weights["bias_ih"],
                                      weights["bias_hh"], self._folds_hidden_bias, allow_tf32)
                out, final = self._scan(weights, gates, batch_sizes,
                                        tuple(s[index] for s in initial), direction == 1,
                                        allow_tf32)
                outputs.append(out)
                finals.append(final)
            x = shape_copies.cat(outputs, -1) if len(outputs) > 1 else outputs[0]
            if self.dropout > 0 and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        return x, tuple(shape_copies.stack([f[k] for f in finals], 0) for k in range(len(states)))


class RNN(RNNBase):
    """Elman RNN: h_t = act(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh), act tanh or relu."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' "
                             f"or 'relu'.")
        mode = "RNN_TANH" if self.nonlinearity == "tanh" else "RNN_RELU"
        super().__init__(mode, *args, **kwargs)

    def _step(self, weights, allow_tf32):
        return functools.partial(R.rnn_step, w_hh=weights["weight_hh"], b_hh=None,
                                 nonlinearity=self.nonlinearity, allow_tf32=allow_tf32)


class LSTM(RNNBase):
    """LSTM with optional projection of the hidden state (proj_size); hx is (h_0, c_0)."""

    _dim_error_tail = "instead"

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)

    def get_expected_cell_size(self, input, batch_sizes):
        expected = self.get_expected_hidden_size(input, batch_sizes)
        return expected[:2] + (self.hidden_size,)

    def check_forward_args(self, input, hidden, batch_sizes):
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden[0], self.get_expected_hidden_size(input, batch_sizes),
                               "Expected hidden[0] size {}, got {}")
        self.check_hidden_size(hidden[1], self.get_expected_cell_size(input, batch_sizes),
                               "Expected hidden[1] size {}, got {}")

    def permute_hidden(self, hx, permutation):
        if permutation is None:
            return hx
        return tuple(s.index_select(1, permutation) for s in hx)

    def _state_sizes(self):
        return (self._real_hidden_size, self.hidden_size)

    def _as_states(self, hx):
        return tuple(hx)

    def _from_states(self, states):
        return tuple(states)

    def _check_hx_dims(self, hx, batched):
        want = 3 if batched else 2
        if hx[0].ndim != want or hx[1].ndim != want:
            kind = "batched 3-D" if batched else "unbatched 2-D"
            raise RuntimeError(f"For {kind} input, hx and cx should also be {want}-D but got "
                               f"({hx[0].ndim}-D, {hx[1].ndim}-D) tensors")

    def _step(self, weights, allow_tf32):
        return functools.partial(R.lstm_step, w_hh=weights["weight_hh"], b_hh=None,
                                 w_hr=weights["weight_hr"], allow_tf32=allow_tf32)


class GRU(RNNBase):
    """GRU: reset and update gates, candidate tanh(x W_in^T + b_in + r (h W_hn^T + b_hn))."""

    _dim_error_tail = "instead"
    _folds_hidden_bias = False

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)

    def _step(self, weights, allow_tf32):
        return functools.partial(R.gru_step, w_hh=weights["weight_hh"], b_hh=weights["bias_hh"],
                                 allow_tf32=allow_tf32)


class RNNCellBase(Module):
    """weight_ih (chunks * hidden, input), weight_hh (chunks * hidden, hidden) and biases."""

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        factory = {"device": device, "dtype": dtype}
        self.weight_ih = new_parameter(num_chunks * hidden_size, input_size, **factory)
        self.weight_hh = new_parameter(num_chunks * hidden_size, hidden_size, **factory)
        for name in ("bias_ih", "bias_hh"):
            self.register_parameter(
                name, new_parameter(num_chunks * hidden_size, **factory) if bias else None)
        self.reset_parameters()

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += ", bias={bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)

    def reset_parameters(self):
        _uniform_reset(self)

    def _batched(self, input, states, labels):
        """Input and states as 2-D (batch, features) with torch's checks, and whether the
        input was batched; missing states are zeros."""
        name = self._get_name()
        if input.ndim not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.ndim}D instead")
        if states is not None:
            for label, s in zip(labels, states):
                if s.ndim not in (1, 2):
                    raise ValueError(f"{name}: Expected {label} to be 1D or 2D, got "
                                     f"{s.ndim}D instead")
        batched = input.ndim == 2
        if not batched:
            input = input.unsqueeze(0)
        if states is None:
            zeros = creation.zeros(input.shape[0], self.hidden_size, dtype=input.dtype,
                                   device=input.device)
            states = (zeros,) * len(labels)
        elif not batched:
            states = tuple(s.unsqueeze(0) for s in states)
        self._check_shapes(input, states)
        return input, states, batched

    def _check_shapes(self, input, states):
        if input.shape[1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.shape[1]} "
                               f"expected {self.input_size}")
        for k, s in enumerate(states):
            if s.shape[0] != input.shape[0]:
                raise RuntimeError(f"Input batch size {input.shape[0]} doesn't match "
                                   f"hidden{k} batch size {s.shape[0]}")
            if s.shape[1] != self.hidden_size:
                raise RuntimeError(f"hidden{k} has inconsistent hidden_size: got "
                                   f"{s.shape[1]}, expected {self.hidden_size}")

    def _cell(self, input, hx, labels, step):
        """Check and batch the arguments, then one `step` on the projected input."""
        states = None if hx is None else (hx,) if len(labels) == 1 else tuple(hx)
        input, states, batched = self._batched(input, states, labels)
        out = step(F.linear(input, self.weight_ih, self.bias_ih), states)
        return out if batched else tuple(s.squeeze(0) for s in out)


class RNNCell(RNNCellBase):
    """One Elman step: h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh)."""

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None,
                 dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        if self.nonlinearity not in ("tanh", "relu"):
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        step = functools.partial(R.rnn_step, w_hh=self.weight_hh, b_hh=self.bias_hh,
                                 nonlinearity=self.nonlinearity)
        return self._cell(input, hx, ("hidden",), step)[0]


class LSTMCell(RNNCellBase):
    """One LSTM step; returns (h', c')."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        step = functools.partial(R.lstm_step, w_hh=self.weight_hh, b_hh=self.bias_hh)
        return self._cell(input, hx, ("hx[0]", "hx[1]"), step)


class GRUCell(RNNCellBase):
    """One GRU step; returns h'."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        step = functools.partial(R.gru_step, w_hh=self.weight_hh, b_hh=self.bias_hh)
        return self._cell(input, hx, ("hidden",), step)[0]
