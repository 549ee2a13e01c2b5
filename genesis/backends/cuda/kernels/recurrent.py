"""Fused LSTM and GRU gate math on the GPU: "lstm_cell_fwd"/"lstm_cell_bwd" and
"gru_cell_fwd"/"gru_cell_bwd" (the contracts of backends/cpu/recurrent.py), one launch each.

A recurrent step is one matmul of the hidden state (gh = h W_hh^T + b_hh) and then this gate
math on it and on the step's slice of the precomputed input projection gi. Unfused, the LSTM
gates cost about ten elementwise launches forward and more backward; here each direction is
one launch over the (B, H) state elements: each program reads the G gate pre-activations of
its elements from gi and gh (contiguous (B, G * H) rows, so neighbouring lanes read neighbouring
addresses), and writes the new state. The backward recomputes the gates from gi, gh and the
previous state instead of saving them. Half types compute in float32 and round once; float64
computes in float64. With `out` the results go into the given contiguous arrays (slices of a
sequence-level scan's buffers) instead of new ones; "scan_step" binds one of these launches,
or a matmul, once for a scan's whole loop, whose steps then move only its addresses.
"""

import numpy as np
import triton
import triton.language as tl
from triton.language.extra import libdevice

from ....dispatch import register
from ..launch import LaunchCache, get_kernel, pointer_type
from ..runtime.array import CUDAArray
from ..runtime.device import activate
from ..runtime.stream import current_stream_handle
from .matmul import matmul_plan

# State elements per program: 1024 over 4 warps is 8 per thread, enough independent loads in
# flight to cover memory latency while a (64, 1024) state still spreads over 64 programs.
BLOCK = 1024
NUM_WARPS = 4
# Gate offsets reach rows * 4 * hidden; from here on they are computed in 64 bits.
INDEX32_LIMIT = 2 ** 31


@triton.jit
def _sigmoid(x):
    return 1.0 / (1.0 + tl.exp(-x))


@triton.jit
def _elements(n_elements, hidden, GATES: tl.constexpr, INDEX64: tl.constexpr,
              BLOCK: tl.constexpr):
    """This program's state elements, their mask, and where their first gate sits in gi/gh."""
    pid = tl.program_id(0)
    if INDEX64:
        pid = pid.to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    row = offs // hidden
    gate = row * (GATES * hidden) + (offs - row * hidden)
    return offs, mask, gate


@triton.jit
def _load(ptr, idx, mask, CT: tl.constexpr):
    return tl.load(ptr + idx, mask=mask, other=0.0).to(CT)


@triton.jit
def _lstm_gates(gi_ptr, gh_ptr, gate, mask, hidden, CT: tl.constexpr):
    """Activated input, forget, cell and output gates from gi + gh."""
    i = _sigmoid(_load(gi_ptr, gate, mask, CT) + _load(gh_ptr, gate, mask, CT))
    f = _sigmoid(_load(gi_ptr, gate + hidden, mask, CT) + _load(gh_ptr, gate + hidden, mask, CT))
    g = libdevice.tanh(_load(gi_ptr, gate + 2 * hidden, mask, CT)
                       + _load(gh_ptr, gate + 2 * hidden, mask, CT))
    o = _sigmoid(_load(gi_ptr, gate + 3 * hidden, mask, CT)
                 + _load(gh_ptr, gate + 3 * hidden, mask, CT))
    return i, f, g, o


@triton.jit
def _lstm_forward_kernel(gi_ptr, gh_ptr, c_ptr, h_out_ptr, c_out_ptr, n_elements, hidden,
                         CT: tl.constexpr, INDEX64: tl.constexpr, BLOCK: tl.constexpr):
    """c' = f c + i g and h' = o tanh(c')."""
    offs, mask, gate = _elements(n_elements, hidden, 4, INDEX64, BLOCK)
    i, f, g, o = _lstm_gates(gi_ptr, gh_ptr, gate, mask, hidden, CT)
    c_new = f * _load(c_ptr, offs, mask, CT) + i * g
    h = o * libdevice.tanh(c_new)
    tl.store(h_out_ptr + offs, h.to(h_out_ptr.dtype.element_ty), mask=mask)
    tl.store(c_out_ptr + offs, c_new.to(c_out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _dh(dh_ptr, dh2_ptr, offs, mask, CT: tl.constexpr):
    """The new hidden state's gradient: dh, plus dh2 when given (the gradient a sequence-level
    scan carries from the next step, added here instead of by a launch of its own)."""
    dh = _load(dh_ptr, offs, mask, CT)
    if dh2_ptr is not None:
        dh += _load(dh2_ptr, offs, mask, CT)
    return dh


@triton.jit
def _lstm_backward_kernel(dh_ptr, dh2_ptr, dc_ptr, gi_ptr, gh_ptr, c_ptr, d_gates_ptr,
                          dc_out_ptr, n_elements, hidden, CT: tl.constexpr,
                          INDEX64: tl.constexpr, BLOCK: tl.constexpr):
    """The pre-activation gates' gradient (d gates) and the previous cell state's (d c)."""
    offs, mask, gate = _elements(n_elements, hidden, 4, INDEX64, BLOCK)
    i, f, g, o = _lstm_gates(gi_ptr, gh_ptr, gate, mask, hidden, CT)
    c = _load(c_ptr, offs, mask, CT)
    tanh_c = libdevice.tanh(f * c + i * g)
    dh = _dh(dh_ptr, dh2_ptr, offs, mask, CT)
    dc = _load(dc_ptr, offs, mask, CT) + dh * o * (1.0 - tanh_c * tanh_c)
    out = d_gates_ptr.dtype.element_ty
    tl.store(d_gates_ptr + gate, (dc * g * i * (1.0 - i)).to(out), mask=mask)
    tl.store(d_gates_ptr + gate + hidden, (dc * c * f * (1.0 - f)).to(out), mask=mask)
    tl.store(d_gates_ptr + gate + 2 * hidden, (dc * i * (1.0 - g * g)).to(out), mask=mask)
    tl.store(d_gates_ptr + gate + 3 * hidden, (dh * tanh_c * o * (1.0 - o)).to(out), mask=mask)
    tl.store(dc_out_ptr + offs, (dc * f).to(dc_out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _gru_gates(gi_ptr, gh_ptr, gate, mask, hidden, CT: tl.constexpr):
    """Reset r, update z, candidate n and the hidden projection's new-gate part h_n."""
    r = _sigmoid(_load(gi_ptr, gate, mask, CT) + _load(gh_ptr, gate, mask, CT))
    z = _sigmoid(_load(gi_ptr, gate + hidden, mask, CT) + _load(gh_ptr, gate + hidden, mask, CT))
    h_n = _load(gh_ptr, gate + 2 * hidden, mask, CT)
    n = libdevice.tanh(_load(gi_ptr, gate + 2 * hidden, mask, CT) + r * h_n)
    return r, z, n, h_n


@triton.jit
def _gru_forward_kernel(gi_ptr, gh_ptr, h_ptr, h_out_ptr, n_elements, hidden,
                        CT: tl.constexpr, INDEX64: tl.constexpr, BLOCK: tl.constexpr):
    """h' = n + z (h - n)."""
    offs, mask, gate = _elements(n_elements, hidden, 3, INDEX64, BLOCK)
    r, z, n, h_n = _gru_gates(gi_ptr, gh_ptr, gate, mask, hidden, CT)
    h_new = n + z * (_load(h_ptr, offs, mask, CT) - n)
    tl.store(h_out_ptr + offs, h_new.to(h_out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _gru_backward_kernel(dh_ptr, dh2_ptr, dh3_ptr, gi_ptr, gh_ptr, h_ptr, d_gi_ptr, d_gh_ptr,
                         dh_out_ptr, n_elements, hidden, CT: tl.constexpr,
                         INDEX64: tl.constexpr, BLOCK: tl.constexpr):
    """d gi, d gh (which r scales in the new gate) and the previous hidden state's d h (the
    part through h' = ... + z h; dh3 is that part from the next step, when a scan carries it)."""
    offs, mask, gate = _elements(n_elements, hidden, 3, INDEX64, BLOCK)
    r, z, n, h_n = _gru_gates(gi_ptr, gh_ptr, gate, mask, hidden, CT)
    dh = _dh(dh_ptr, dh2_ptr, offs, mask, CT)
    if dh3_ptr is not None:
        dh += _load(dh3_ptr, offs, mask, CT)
    d_n = dh * (1.0 - z) * (1.0 - n * n)
    d_r = d_n * h_n * r * (1.0 - r)
    d_z = dh * (_load(h_ptr, offs, mask, CT) - n) * z * (1.0 - z)
    out = d_gi_ptr.dtype.element_ty
    tl.store(d_gi_ptr + gate, d_r.to(out), mask=mask)
    tl.store(d_gi_ptr + gate + hidden, d_z.to(out), mask=mask)
    tl.store(d_gi_ptr + gate + 2 * hidden, d_n.to(out), mask=mask)
    tl.store(d_gh_ptr + gate, d_r.to(out), mask=mask)
    tl.store(d_gh_ptr + gate + hidden, d_z.to(out), mask=mask)
    tl.store(d_gh_ptr + gate + 2 * hidden, (d_n * r).to(out), mask=mask)
    tl.store(dh_out_ptr + offs, (dh * z).to(dh_out_ptr.dtype.element_ty), mask=mask)


def _specialization(fn, dtype, rows, hidden, absent=("dh2_ptr", "dh3_ptr")):
    """(signature, constexprs) of `fn` for (rows, hidden) states of `dtype`; every pointer
    argument has that dtype but those named in `absent`, compiled in as None."""
    ity = "i64" if rows * 4 * hidden >= INDEX32_LIMIT else "i32"
    names = fn.arg_names
    pointers = names[:names.index("n_elements")]
    signature = {name: "constexpr" if name in absent else pointer_type(dtype)
                 for name in pointers}
    signature.update(n_elements=ity, hidden=ity, CT="constexpr", INDEX64="constexpr",
                     BLOCK="constexpr")
    ct = tl.float64 if dtype == np.float64 else tl.float32
    constexprs = {name: None for name in absent if name in pointers}
    constexprs.update(CT=ct, INDEX64=ity == "i64", BLOCK=BLOCK)
    return signature, constexprs


def _plan(fn, arrays, rows, hidden, device):
    """(bound kernel, grid) of `fn` over (rows, hidden) states with the arguments `arrays`."""
    absent = [name for name, a in zip(fn.arg_names, arrays) if a is None]
    signature, constexprs = _specialization(fn, arrays[0].dtype, rows, hidden, absent)
    kernel = get_kernel(fn, signature, constexprs, (), NUM_WARPS, 1, device)
    return kernel, (triton.cdiv(rows * hidden, BLOCK),)


# A recurrent layer launches the same kernel at every time step: its plan is looked up once.
_plans = LaunchCache()


def _bound(fn, arrays, rows, hidden):
    """(bound kernel, grid) of `fn` over the (rows, hidden) state elements with the array
    arguments `arrays` (None for an absent optional one)."""
    device = arrays[0].device
    key = (fn, arrays[0].dtype, rows, hidden, device, tuple([a is None for a in arrays]))
    return _plans.get_or_build(key, lambda: _plan(fn, arrays, rows, hidden, device))


def _launch(fn, arrays, state):
    """Run `fn` over the elements of the (rows, hidden) array `state` with the array arguments
    `arrays`."""
    rows, hidden = state.shape
    if rows * hidden == 0:
        return
    kernel, grid = _bound(fn, arrays, rows, hidden)
    kernel(grid, current_stream_handle(state.device),
           *[None if a is None else a.ptr for a in arrays], rows * hidden, hidden)


def _empty(shapes, like, out):
    """`out`, or new contiguous arrays of `shapes` with `like`'s dtype on its device."""
    activate(like.device)
    if out is not None:
        return out
    stream = current_stream_handle(like.device)
    return [CUDAArray.empty(shape, like.dtype, like.device, stream) for shape in shapes]


# Each op's call: its kernel, the kernel's array arguments in order and the state array whose
# elements it runs over, from the op's positional arguments (`out` a tuple).
def _lstm_fwd_call(gi, gh, c, out):
    return _lstm_forward_kernel, [gi, gh, c, *out], c


def _lstm_bwd_call(dh, dc, gi, gh, c, out, dh2=None):
    return _lstm_backward_kernel, [dh, dh2, dc, gi, gh, c, *out], c


def _gru_fwd_call(gi, gh, h, out):
    return _gru_forward_kernel, [gi, gh, h, *out], h


def _gru_bwd_call(dh, gi, gh, h, out, dh2=None, dh3=None):
    return _gru_backward_kernel, [dh, dh2, dh3, gi, gh, h, *out], h


_CALLS = {"lstm_cell_fwd": _lstm_fwd_call, "lstm_cell_bwd": _lstm_bwd_call,
          "gru_cell_fwd": _gru_fwd_call, "gru_cell_bwd": _gru_bwd_call}


@register("lstm_cell_fwd", "cuda")
def lstm_cell_fwd(gi, gh, c, out=None):
    """(h', c') of one LSTM step; operands contiguous."""
    out = _empty([c.shape, c.shape], gi, out)
    _launch(*_lstm_fwd_call(gi, gh, c, out))
    return tuple(out)


@register("lstm_cell_bwd", "cuda")
def lstm_cell_bwd(dh, dc, gi, gh, c, out=None, dh2=None):
    """(d gates, d c) of one LSTM step, the new hidden state's gradient dh (+ dh2); operands
    contiguous."""
    out = _empty([gi.shape, c.shape], gi, out)
    _launch(*_lstm_bwd_call(dh, dc, gi, gh, c, out, dh2))
    return tuple(out)


@register("gru_cell_fwd", "cuda")
def gru_cell_fwd(gi, gh, h, out=None):
    """h' of one GRU step; operands contiguous; `out` is a 1-tuple."""
    out = _empty([h.shape], gi, out)
    _launch(*_gru_fwd_call(gi, gh, h, out))
    return out[0]


@register("gru_cell_bwd", "cuda")
def gru_cell_bwd(dh, gi, gh, h, out=None, dh2=None, dh3=None):
    """(d gi, d gh, d h) of one GRU step, the new hidden state's gradient dh (+ dh2 + dh3);
    operands contiguous."""
    out = _empty([gi.shape, gi.shape, h.shape], gi, out)
    _launch(*_gru_bwd_call(dh, gi, gh, h, out, dh2, dh3))
    return tuple(out)


@register("scan_step", "cuda")
def scan_step(op, args, advances):
    """A sequence-level scan's step, bound once: a function t -> `op` on `args` with each array
    among them moved t times its advance (elements; 0 for one every step uses), whose launch
    arguments were assembled here and of which a step only moves the addresses. None where
    `op` has no such form (the caller then makes its views each step). `args` are the op's
    positional arguments at t = 0 (`out` a tuple), `advances` mirror them; the arrays must
    outlive the function."""
    if op == "matmul":
        return _matmul_steps(advances, *args)
    call = _CALLS.get(op)
    if call is None:
        return None
    fn, arrays, state = call(*args)
    return _cell_steps(fn, arrays, call(*advances)[1], state)


def _cell_steps(fn, arrays, advances, state):
    """scan_step of a gate kernel: its bound kernel and arguments made once."""
    rows, hidden = state.shape
    if rows * hidden == 0:
        return None
    activate(state.device)
    kernel, grid = _bound(fn, arrays, rows, hidden)
    stream = current_stream_handle(state.device)
    args = [None if a is None else a.ptr for a in arrays] + [rows * hidden, hidden]
    moving = [(i, args[i], step * arrays[i].itemsize) for i, step in enumerate(advances) if step]

    def at(t):
        for i, base, step in moving:
            args[i] = base + t * step
        kernel(grid, stream, *args)
    return at


def _matmul_steps(advances, a, b, bias=None, out=None, allow_tf32=None):
    """scan_step of "matmul" (its arguments after `advances`), a product of matrices whose
    moves keep their 16-byte alignment: its first step plans it (kernels/matmul.py's
    matmul_plan, in the precision `allow_tf32` asks), later ones give the plan addresses."""
    if advances[2] or a.ndim != 2 or b.ndim != 2 or out.size == 0:
        return None
    a_step, b_step, out_step = (advances[i] * a.itemsize for i in (0, 1, 3))
    if (a_step | b_step | out_step) % 16:
        return None
    plan = None

    def at(t):
        nonlocal plan
        if plan is None:
            plan = matmul_plan(_moved(a, t * a_step), _moved(b, t * b_step),
                               _moved(out, t * out_step), bias, allow_tf32)
        else:
            plan(a.ptr + t * a_step, b.ptr + t * b_step, out.ptr + t * out_step)
    return at


def _moved(array, nbytes):
    """The view of `array`'s shape and strides `nbytes` further on in its storage."""
    return CUDAArray(array.storage, array.shape, array.strides, array.offset + nbytes,
                     array.dtype)
