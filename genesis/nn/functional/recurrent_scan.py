"""The sequence-level path of the LSTM and GRU layers: one autograd Function per layer direction
runs the whole time loop on backend arrays.

The per-step path (recurrent.scan_forward / scan_reverse) records several autograd ops per time
step, and its backward replays them one by one: on the GPU the host time of those ops, not the
device work, sets the layer's speed. Here a step costs what the device must do, with no tensor
or graph node made in the loop. Forward: one matmul of the hidden state written into its step's
slice of a (T, B, G * H) buffer, and the fused gate kernel writing the new state into its slice
of a (T + 1, B, *) state buffer, whose extra slot holds the initial state (an LSTM projection
adds one matmul). Backward: the gate-backward kernel, which adds the output's gradient and the
parts carried from the next step itself, and one matmul for the previous state's gradient (an
LSTM projection adds an add and a matmul). The recurrent weights' gradients are one matmul each
over all steps after the loop; the input gates' gradient flows on into the input projection's
autograd. A backward that must itself be differentiable (create_graph) recomputes the layer
direction through the per-step path and differentiates that.

A loop's launches are planned once (the backend's "scan_step"): the kernel looked up, its
arguments assembled, the matmul's configuration chosen; a step then moves only the addresses
of its slots, so its host time is a few Python calls per launch (about a third of what views
and a full dispatch per launch cost). A backend without scan_step gets views made each step.

Every product, forward and backward, runs in the precision the layer passed (`allow_tf32`, see
recurrent.py): the backward keeps the forward's.
"""

import functools

from ...autograd import engine
from ...autograd.function import Function
from ...autograd.grad_mode import enable_grad, is_grad_enabled
from ...dispatch import has_kernel, kernel
from ...ops import creation
from ...ops.common import wrap
from . import recurrent as R

# Whether layers take this path where it applies (tests switch it off to run the per-step path).
ENABLED = True
_CELLS = {"LSTM": ("lstm_cell_fwd", "lstm_cell_bwd"), "GRU": ("gru_cell_fwd", "gru_cell_bwd")}


def applies(mode, gates, state, w_hh, extra, batch_sizes):
    """Whether `scan` can run this layer direction: an LSTM or GRU over equal-length steps of a
    non-empty batch, its operands of one floating dtype on one device with the gate kernels."""
    if not ENABLED or mode not in _CELLS or batch_sizes[0] == 0:
        return False
    if any(size != batch_sizes[0] for size in batch_sizes):
        return False
    dtype, device = gates.dtype, gates.device
    tensors = (*state, w_hh) if extra is None else (*state, w_hh, extra)
    return (dtype.is_floating_point
            and all(t.dtype is dtype and t.device == device for t in tensors)
            and has_kernel(_CELLS[mode][0], device.type))


def scan(mode, gates, steps, state, w_hh, extra, reverse, allow_tf32=None):
    """(output rows, final states) of one layer direction, as recurrent.scan_forward (or
    scan_reverse when `reverse`) returns them; `extra` is the LSTM's W_hr or the GRU's b_hh;
    float32 products in TF32 per `allow_tf32` (None: the matmul flag)."""
    if mode == "LSTM":
        out, h, c = _LSTMScan.apply(gates, *state, w_hh, extra, steps, reverse, allow_tf32)
        return out, (h, c)
    out, h = _GRUScan.apply(gates, *state, w_hh, extra, steps, reverse, allow_tf32)
    return out, (h,)


class _Layout:
    """The kernels of one call, looked up once, the precision of its products, and the
    time-major buffers they work on: a buffer is a contiguous (slots * B, width) array; its
    slots are (B, width) views."""

    def __init__(self, mode, like, steps, reverse, allow_tf32):
        device_type = like.device.type
        self.matmul = kernel("matmul", device_type)
        self.as_strided = kernel("as_strided", device_type)
        self.into = kernel("elementwise_into", device_type)
        self.copy = kernel("copy_", device_type)
        self.cell_fwd, self.cell_bwd = _CELLS[mode]
        self.scan_step = kernel("scan_step", device_type) if has_kernel("scan_step",
                                                                        device_type) else None
        self.dtype, self.device = like.dtype, like.device
        self.steps, self.batch, self.reverse = steps, like.shape[0] // steps, reverse
        self.allow_tf32 = allow_tf32
        # A state buffer's slot t + `prev` holds the state step t reads, t + `new` the one it
        # writes; the initial state sits in slot T (reverse) or 0, the final one in 0 or T.
        self.prev, self.new = (1, 0) if reverse else (0, 1)
        self.first, self.last = (steps, 0) if reverse else (0, steps)

    def order(self, backward=False):
        """The time steps in the order the forward (or the backward) visits them."""
        ascending = self.reverse == backward
        return range(self.steps) if ascending else range(self.steps - 1, -1, -1)

    def empty(self, slots, width):
        return creation.empty(slots * self.batch, width, dtype=self.dtype,
                              device=self.device)._data

    def states(self, initial):
        """A state buffer of T + 1 slots, the initial state copied into its slot."""
        buffer = self.empty(self.steps + 1, initial.shape[-1])
        self.copy(self.slot(buffer, self.first), initial._data)
        return buffer

    def slot(self, buffer, k):
        width = buffer.shape[-1]
        return self.as_strided(buffer, (self.batch, width), (width, 1), k * self.batch * width)

    def stepper(self, op, *args):
        """A function t -> `op`'s kernel on `args` at step t, where an argument `_Slot(buffer,
        k)` stands for slot t + k of a buffer (`out` a tuple of arguments). The backend's
        scan_step binds the launch once and moves only addresses; without it each step makes
        its views (and drops them: T views per buffer made up front would set the garbage
        collector off)."""
        fast = None
        if self.scan_step is not None:
            fast = self.scan_step(op, self._at(args, 0), self._advances(args))
        if fast is not None:
            return fast
        fn = kernel(op, self.device.type)
        return lambda t: fn(*self._at(args, t))

    def product(self, a, b, bias, out):
        """stepper of the matmul a @ b (+ bias) into `out`, in the layer's precision."""
        return self.stepper("matmul", a, b, bias, out, self.allow_tf32)

    def _at(self, args, t):
        return tuple([self.slot(a.buffer, t + a.k) if a.__class__ is _Slot
                      else self._at(a, t) if a.__class__ is tuple else a for a in args])

    def _advances(self, args):
        return tuple([self.batch * a.buffer.shape[-1] if a.__class__ is _Slot
                      else self._advances(a) if a.__class__ is tuple else 0 for a in args])

    def rows(self, buffer, first):
        """Slots first .. first + T - 1 of a buffer as one (T * B, width) array."""
        width = buffer.shape[-1]
        return self.as_strided(buffer, (self.steps * self.batch, width), (width, 1),
                               first * self.batch * width)

    def transposed(self, array):
        """The (m, n) view of a contiguous (n, m) array."""
        n, m = array.shape
        return self.as_strided(array, (m, n), (1, m), 0)

    def tensor(self, array):
        return wrap(array, self.device, self.dtype)

    def weight_grad(self, grads, inputs):
        """The sum over steps of grads_t^T inputs_t, as one (G, T * B) @ (T * B, W) product."""
        return self.tensor(self.matmul(self.transposed(grads), inputs, None, None,
                                       self.allow_tf32))


class _Slot:
    """Slot t + k of a time-major buffer, as an argument of a loop's step t (_Layout.stepper)."""

    __slots__ = ("buffer", "k")

    def __init__(self, buffer, k=0):
        self.buffer, self.k = buffer, k


def _arrays(*tensors):
    """The backend arrays of `tensors` made contiguous (None stays None)."""
    return [None if t is None else t.contiguous()._data for t in tensors]


def _save(ctx, lay, inputs, out, buffers):
    """Keep the inputs (for a create_graph replay), the output (so that an in-place change of
    it, which would change the saved states, is caught) and the buffers the backward reads."""
    ctx.save_for_backward(*inputs, out, *(None if b is None else lay.tensor(b) for b in buffers))
    ctx.layout = lay


def _replay(ctx, per_step, inputs, grads):
    """The input gradients through the per-step path, recomputed from the saved inputs with
    grad mode on, so that they are themselves differentiable (create_graph)."""
    wanted = [i for i, need in enumerate(ctx.needs_input_grad) if need]
    lay = ctx.layout
    with enable_grad():
        outputs = per_step(*inputs, lay.steps, lay.reverse, lay.allow_tf32)
        found = engine.grad(outputs, [inputs[i] for i in wanted], grads, create_graph=True,
                            allow_unused=True)
    result = [None] * len(ctx.needs_input_grad)
    for i, g in zip(wanted, found):
        result[i] = g
    return tuple(result)


def _per_step(step, gates, state, steps, reverse):
    """(output rows, *final states) of the per-step path over the same operands."""
    scan_fn = R.scan_reverse if reverse else R.scan_forward
    out, final = scan_fn(step, gates, [gates.shape[0] // steps] * steps, state)
    return (out, *final)


def _per_step_lstm(gates, h0, c0, w_hh, w_hr, steps, reverse, allow_tf32):
    step = functools.partial(R.lstm_step, w_hh=w_hh, b_hh=None, w_hr=w_hr, allow_tf32=allow_tf32)
    return _per_step(step, gates, (h0, c0), steps, reverse)


def _per_step_gru(gates, h0, w_hh, b_hh, steps, reverse, allow_tf32):
    step = functools.partial(R.gru_step, w_hh=w_hh, b_hh=b_hh, allow_tf32=allow_tf32)
    return _per_step(step, gates, (h0,), steps, reverse)


class _LSTMScan(Function):
    """(output rows, h_T, c_T) of an LSTM layer direction from its input gates (T * B, 4H)
    (both biases in), h_0, c_0, W_hh and W_hr (None without projection)."""

    @staticmethod
    def forward(ctx, gates, h0, c0, w_hh, w_hr, steps, reverse, allow_tf32):
        lay = _Layout("LSTM", gates, steps, reverse, allow_tf32)
        gi, w_hh_a, w_hr_a = _arrays(gates, w_hh, w_hr)
        gh = lay.empty(steps, gi.shape[-1])
        hs, cs = lay.states(h0), lay.states(c0)
        raw = None if w_hr is None else lay.empty(steps, c0.shape[-1])
        _lstm_forward(lay, gi, gh, hs, cs, raw, w_hh_a, w_hr_a)
        out = lay.tensor(lay.rows(hs, lay.new))
        _save(ctx, lay, (gates, h0, c0, w_hh, w_hr), out, (gi, gh, hs, cs, raw))
        return out, lay.tensor(lay.slot(hs, lay.last)), lay.tensor(lay.slot(cs, lay.last))

    @staticmethod
    def backward(ctx, d_out, d_h, d_c):
        saved = ctx.saved_tensors
        if is_grad_enabled():
            return _replay(ctx, _per_step_lstm, saved[:5], (d_out, d_h, d_c))
        buffers = _arrays(*saved[6:])
        return _lstm_backward(ctx.layout, ctx.needs_input_grad, _arrays(d_out, d_h, d_c),
                              buffers, *_arrays(saved[3], saved[4]))


def _lstm_forward(lay, gi, gh, hs, cs, raw, w_hh, w_hr):
    """The time loop: gh_t = h_prev W_hh^T, then the gate kernel writes h_t (or its
    unprojected value, which W_hr^T then projects) and c_t into their slots."""
    prev, new = lay.prev, lay.new
    h_out = _Slot(hs, new) if raw is None else _Slot(raw)
    steps = [lay.product(_Slot(hs, prev), lay.transposed(w_hh), None, _Slot(gh)),
             lay.stepper(lay.cell_fwd, _Slot(gi), _Slot(gh), _Slot(cs, prev),
                         (h_out, _Slot(cs, new)))]
    if raw is not None:
        steps.append(lay.product(h_out, lay.transposed(w_hr), None, _Slot(hs, new)))
    for t in lay.order():
        for step in steps:
            step(t)


def _lstm_backward(lay, needs, grads, buffers, w_hh, w_hr):
    """(d gates, d h_0, d c_0, d W_hh, d W_hr, None, None, None). Per step: the gate-backward kernel
    on dh_t = d out_t + the carried gradient (which it adds itself, unless W_hr projects h_t:
    then dh_t is kept for d W_hr and goes through W_hr first), carry = d gates_t W_hh."""
    d_out, carry, dc = grads
    gi, gh, hs, cs, raw = buffers
    size, hidden = hs.shape[-1], cs.shape[-1]
    d_gates = lay.empty(lay.steps, gi.shape[-1])
    d_hs = None if raw is None else lay.empty(lay.steps, size)
    carry_out = lay.empty(1, size)
    dc_pair = [lay.empty(1, hidden) for _ in range(2)]
    d_raw = None if raw is None else lay.empty(1, hidden)
    reads = (_Slot(gi), _Slot(gh), _Slot(cs, lay.prev))

    def cell(dc_in, dc_new, carried):
        """The gate-backward step reading d c from dc_in and the carried gradient."""
        if raw is None:
            return lay.stepper(lay.cell_bwd, _Slot(d_out), dc_in, *reads,
                               (_Slot(d_gates), dc_new), carried)
        add = lay.stepper("elementwise_into", "add", _Slot(d_hs), (_Slot(d_out), carried))
        project = lay.product(_Slot(d_hs), w_hr, None, d_raw)
        gates = lay.stepper(lay.cell_bwd, d_raw, dc_in, *reads, (_Slot(d_gates), dc_new))
        return _chain(add, project, gates)
    back = lay.product(_Slot(d_gates), w_hh, None, carry_out)
    dc = _backward_loop(lay, cell, (dc, carry), dc_pair, carry_out, back)
    d_w_hh = lay.weight_grad(d_gates, lay.rows(hs, lay.prev)) if needs[3] else None
    d_w_hr = lay.weight_grad(d_hs, raw) if raw is not None and needs[4] else None
    return (lay.tensor(d_gates) if needs[0] else None,
            lay.tensor(carry_out) if needs[1] else None,
            lay.tensor(dc) if needs[2] else None, d_w_hh, d_w_hr, None, None, None)


def _backward_loop(lay, cell, first, pair, carry_out, back):
    """The backward time loop; returns the buffer of `pair` its last step wrote. Each step
    runs the step cell(state read, state written, carried gradient) makes, then `back`, which
    writes the next step's carried gradient into `carry_out`. The first step reads `first`
    (the incoming state and carried gradients); later ones read `carry_out` and go back and
    forth between the two buffers of `pair` for their state."""
    steps = (cell(first[0], pair[0], first[1]), cell(pair[1], pair[0], carry_out),
             cell(pair[0], pair[1], carry_out))
    for k, t in enumerate(lay.order(backward=True)):
        steps[0 if k == 0 else 1 + (k & 1)](t)
        back(t)
    return pair[(lay.steps - 1) & 1]


def _chain(*steps):
    """One step running `steps` in order."""
    def step(t):
        for s in steps:
            s(t)
    return step


class _GRUScan(Function):
    """(output rows, h_T) of a GRU layer direction from its input gates (T * B, 3H) (b_ih in),
    h_0, W_hh and b_hh (None without biases)."""

    @staticmethod
    def forward(ctx, gates, h0, w_hh, b_hh, steps, reverse, allow_tf32):
        lay = _Layout("GRU", gates, steps, reverse, allow_tf32)
        gi, w_hh_a, bias = _arrays(gates, w_hh, b_hh)
        gh = lay.empty(steps, gi.shape[-1])
        hs = lay.states(h0)
        prev, new = lay.prev, lay.new
        product = lay.product(_Slot(hs, prev), lay.transposed(w_hh_a), bias, _Slot(gh))
        cell = lay.stepper(lay.cell_fwd, _Slot(gi), _Slot(gh), _Slot(hs, prev), (_Slot(hs, new),))
        for t in lay.order():
            product(t)
            cell(t)
        out = lay.tensor(lay.rows(hs, new))
        _save(ctx, lay, (gates, h0, w_hh, b_hh), out, (gi, gh, hs))
        return out, lay.tensor(lay.slot(hs, lay.last))

    @staticmethod
    def backward(ctx, d_out, d_h):
        saved = ctx.saved_tensors
        if is_grad_enabled():
            return _replay(ctx, _per_step_gru, saved[:4], (d_out, d_h))
        return _gru_backward(ctx.layout, ctx.needs_input_grad, _arrays(d_out, d_h),
                             _arrays(*saved[5:]), *_arrays(saved[2]))


def _gru_backward(lay, needs, grads, buffers, w_hh):
    """(d gates, d h_0, d W_hh, d b_hh, None, None, None). Per step: the gate-backward kernel on
    dh_t = d out_t + the two carried parts, d gh_{t+1} W_hh and dh_{t+1} z_{t+1} (it writes
    d gi_t, d gh_t and dh_t z_t), then carry = d gh_t W_hh."""
    d_out, carry = grads
    gi, gh, hs = buffers
    size = hs.shape[-1]
    d_gi, d_gh = lay.empty(lay.steps, gi.shape[-1]), lay.empty(lay.steps, gi.shape[-1])
    dz_pair, carry_out = [lay.empty(1, size) for _ in range(2)], lay.empty(1, size)

    def cell(dz_in, dz_new, carried):
        """The gate-backward step reading the carried gradient and dh z from dz_in."""
        return lay.stepper(lay.cell_bwd, _Slot(d_out), _Slot(gi), _Slot(gh), _Slot(hs, lay.prev),
                           (_Slot(d_gi), _Slot(d_gh), dz_new), carried, dz_in)
    back = lay.product(_Slot(d_gh), w_hh, None, carry_out)
    dz = _backward_loop(lay, cell, (None, carry), dz_pair, carry_out, back)
    lay.into("add", carry_out, (carry_out, dz))
    d_w_hh = lay.weight_grad(d_gh, lay.rows(hs, lay.prev)) if needs[2] else None
    d_b_hh = lay.tensor(d_gh).sum(0) if needs[3] else None
    return (lay.tensor(d_gi) if needs[0] else None, lay.tensor(carry_out) if needs[1] else None,
            d_w_hh, d_b_hh, None, None, None)
