"""Multi-tensor optimizer kernels: the fused Adam, SGD, RMSprop and Adagrad steps, the step
counters' advance and the total-norm gradient clip.

Registered as "adam_step", "sgd_step", "rmsprop_step", "adagrad_step", "advance_steps",
"total_norm" and "clip_by_total_norm_" (same contracts as backends/cpu/optim.py). Each launch
covers a whole list of contiguous arrays of one dtype: the host writes a table of the arrays
(addresses and sizes, int64) and of their chunks (CHUNK elements of one array each, one program
per chunk), uploads it once and keeps it while the same arrays come back (an optimizer's
parameters, state and, with the caching allocator, usually its gradients), so a step of any
number of parameters is one launch per dtype.

Every step kernel (these and kernels/optim_extra.py's) is `multi_tensor_step`, the chunk walk
they share, given its per-element update (a jit function taking the block of parameters and
gradients, the update's scalars as a tuple and its flags) and computing its per-step scalars
before. Launchers call their kernel positionally through launch.Launch, one per
specialization and grid (`_launch`).

The math runs in float32 (float64 for float64) and each stored value is rounded once. The total
norm is deterministic: each chunk writes its partial (sum of |x|^p, or max/min of |x|) to its own
slot, and one program combines the slots in a fixed order; no atomics.

What a CUDA graph replays must read nothing from the host: with step counters on the device
(capturable Adam), the Adam kernel computes its bias corrections from each parameter's counter
(a table column) and may read the learning rate from device memory; the Adam and SGD kernels
take GradScaler's scale (dividing the gradients, which they store unscaled) and its inf flag
(a nonzero flag makes the launch a no-op) as device pointers.
"""

import math

import numpy as np
import triton
import triton.language as tl
from triton.language.extra import libdevice

from ....dispatch import register
from ..launch import Launch, LaunchCache
from ..runtime.graphs import active_capture, keep_alive, upload
from ..runtime.array import CUDAArray
from ..runtime.device import activate
from ..runtime.stream import current_stream_handle
from ._math import div_rn, sqrt_rn
from ._strided_indexing import placeholder

CHUNK = tl.constexpr(16384)
WIDTH = tl.constexpr(7)  # table columns: up to six addresses, then the element count
BLOCK = 1024
_TABLE_LIMIT = 64
_NORMS = {2.0: 0, 1.0: 1, float("inf"): 2, float("-inf"): 3}
_GENERAL_NORM = 4
_TL = {"float32": tl.float32, "float16": tl.float16, "bfloat16": tl.bfloat16,
       "float64": tl.float64}


@triton.jit
def _chunk(tensors, chunks, COL: tl.constexpr, T: tl.constexpr):
    """(address of column COL as a T pointer, first element, end element) of this program's
    chunk."""
    pid = tl.program_id(0)
    t = tl.load(chunks + 2 * pid)
    start = tl.load(chunks + 2 * pid + 1)
    row = tensors + t * WIDTH
    n = tl.load(row + WIDTH - 1)
    return tl.load(row + COL).to(tl.pointer_type(T)), start, tl.minimum(start + CHUNK, n)


@triton.jit
def _address(tensors, chunks, COL: tl.constexpr, T: tl.constexpr):
    t = tl.load(chunks + 2 * tl.program_id(0))
    return tl.load(tensors + t * WIDTH + COL).to(tl.pointer_type(T))


@triton.jit
def _live_end(start, end, found_inf_ptr):
    """The chunk's end, or its start (nothing to do) when GradScaler's flag at found_inf_ptr is
    nonzero: a step with inf/NaN gradients is skipped without a host read."""
    if found_inf_ptr is not None:
        end = tl.where(tl.load(found_inf_ptr) != 0, start, end)
    return end


@triton.jit
def _param_and_grad(p_ptr, g_ptr, idx, mask, weight_decay, grad_scale_ptr, L2: tl.constexpr,
                    MAXIMIZE: tl.constexpr, CT: tl.constexpr):
    """A block of parameters and of their gradients in CT: divided by the scale at
    grad_scale_ptr (GradScaler's; the unscaled gradient is stored back), negated under
    MAXIMIZE, plus weight_decay * param with L2 (weight decay through the gradient)."""
    param = tl.load(p_ptr + idx, mask=mask).to(CT)
    grad = tl.load(g_ptr + idx, mask=mask).to(CT)
    if grad_scale_ptr is not None:
        grad = div_rn(grad, tl.load(grad_scale_ptr).to(CT))
        tl.store(g_ptr + idx, grad.to(g_ptr.dtype.element_ty), mask=mask)
    if MAXIMIZE:
        grad = -grad
    if L2:
        grad += param * weight_decay
    return param, grad


@triton.jit
def multi_tensor_step(
        # the table: parameters (column 0), gradients (1), then the update's state columns
        tensors, chunks,
        # the update's scalars (a tuple), the L2 weight decay, GradScaler's inputs (or None)
        scalars, weight_decay, grad_scale_ptr, found_inf_ptr,
        # the per-element update and its constexpr flags (a tuple, or None)
        UPDATE: tl.constexpr, FLAGS: tl.constexpr,
        L2: tl.constexpr, MAXIMIZE: tl.constexpr, PT: tl.constexpr, GT: tl.constexpr,
        CT: tl.constexpr, BLOCK: tl.constexpr):
    """The body of every step kernel: this program's chunk walked in BLOCK-element blocks, the
    gradients taken by _param_and_grad, and `UPDATE(tensors, chunks, idx, mask, param, grad,
    scalars, FLAGS, PT, CT)` (which updates its state columns) giving the new parameters,
    stored rounded once. A nonzero found_inf makes it a no-op."""
    p_ptr, start, end = _chunk(tensors, chunks, 0, PT)
    end = _live_end(start, end, found_inf_ptr)
    g_ptr = _address(tensors, chunks, 1, GT)
    for off in range(start, end, BLOCK):
        idx = off + tl.arange(0, BLOCK)
        mask = idx < end
        param, grad = _param_and_grad(p_ptr, g_ptr, idx, mask, weight_decay, grad_scale_ptr,
                                      L2, MAXIMIZE, CT)
        param = UPDATE(tensors, chunks, idx, mask, param, grad, scalars, FLAGS, PT, CT)
        tl.store(p_ptr + idx, param.to(PT), mask=mask)


@triton.jit
def _lerp(m, grad, lerp_coef, lerp_small):
    """lerp(m, grad, w) as PyTorch computes it, one fma: from m when `lerp_small` (w below
    0.5), else from grad, `lerp_coef` the matching coefficient."""
    return tl.fma(lerp_coef, grad - m, tl.where(lerp_small != 0, m, grad))


@triton.jit
def state_columns(tensors, chunks, PT: tl.constexpr):
    """The addresses of this program's first two state arrays (table columns 2 and 3)."""
    return _address(tensors, chunks, 2, PT), _address(tensors, chunks, 3, PT)


@triton.jit
def decayed_moments(tensors, chunks, idx, mask, param, grad, decay, beta2, lerp_coef,
                    lerp_small, one_minus_beta2, DECOUPLED: tl.constexpr, PT: tl.constexpr,
                    CT: tl.constexpr):
    """Adam's decoupled weight decay (param * decay when DECOUPLED) and moments (columns 2 and
    3), updated and stored: m = lerp(m, g, 1 - beta1), v = beta2 v + (1 - beta2) g^2; returns
    (param, m, v)."""
    if DECOUPLED:
        param = param * decay
    m_ptr, v_ptr = state_columns(tensors, chunks, PT)
    m = _lerp(tl.load(m_ptr + idx, mask=mask).to(CT), grad, lerp_coef, lerp_small)
    v = tl.load(v_ptr + idx, mask=mask).to(CT) * beta2 + one_minus_beta2 * grad * grad
    tl.store(m_ptr + idx, m.to(PT), mask=mask)
    tl.store(v_ptr + idx, v.to(PT), mask=mask)
    return param, m, v


@triton.jit
def bias_correction(step, log_beta):
    """1 - beta^step from log(beta), through expm1: accurate where beta^step is near 1."""
    return -libdevice.expm1(step * log_beta)


@triton.jit
def device_step(tensors, chunks, COL: tl.constexpr, lr, weight_decay, DECOUPLED: tl.constexpr,
                CT: tl.constexpr):
    """(this program's step counter, in column COL; the learning rate, a float or read where it
    points; Adam's weight-decay factor: 1 - lr * weight_decay when DECOUPLED, else
    weight_decay), for a step whose counters are on the device."""
    step = tl.load(_address(tensors, chunks, COL, tl.float32)).to(CT)
    if lr.dtype.is_ptr():
        lr = tl.load(lr)
    lr = lr.to(CT)
    decay = weight_decay
    if DECOUPLED:
        decay = 1 - lr * weight_decay
    return step, lr, decay


@triton.jit
def _adam_update(tensors, chunks, idx, mask, param, grad, scalars, FLAGS: tl.constexpr,
                 PT: tl.constexpr, CT: tl.constexpr):
    decay, neg_step_size, bc2_sqrt, beta2, lerp_coef, lerp_small, one_minus_beta2, eps = scalars
    AMSGRAD: tl.constexpr = FLAGS[1]
    param, m, v = decayed_moments(tensors, chunks, idx, mask, param, grad, decay, beta2,
                                  lerp_coef, lerp_small, one_minus_beta2, FLAGS[0], PT, CT)
    if AMSGRAD:
        vmax_ptr = _address(tensors, chunks, 4, PT)
        v = tl.maximum(tl.load(vmax_ptr + idx, mask=mask).to(CT), v)
        tl.store(vmax_ptr + idx, v.to(PT), mask=mask)
    denom = div_rn(sqrt_rn(v), bc2_sqrt) + eps
    return param + div_rn(neg_step_size * m, denom)


@triton.jit
def _adam_kernel(
        # the table of parameters, gradients, moments (then max moments, step counters)
        tensors, chunks,
        # per-step scalars from the host (None with step counters on the device): `decay`
        # is 1 - lr * weight_decay when DECOUPLED, else weight_decay
        decay, neg_step_size, bc2_sqrt,
        # with step counters on the device (None otherwise): the learning rate (a float, or a
        # pointer to it), the weight decay, log(beta1), log(beta2)
        lr, weight_decay, log_beta1, log_beta2,
        # the moments' coefficients (lerp's as _lerp takes them), eps
        beta2, lerp_coef, lerp_small, one_minus_beta2, eps,
        # GradScaler's scale and inf flag (None without a scaler)
        grad_scale_ptr, found_inf_ptr,
        WEIGHT_DECAY: tl.constexpr, DECOUPLED: tl.constexpr, MAXIMIZE: tl.constexpr,
        AMSGRAD: tl.constexpr, PT: tl.constexpr, GT: tl.constexpr, CT: tl.constexpr,
        BLOCK: tl.constexpr):
    """PyTorch's fused step, operation for operation; with step counters on the device the
    per-step scalars are computed here from this parameter's counter (already advanced)."""
    if lr is not None:
        step, lr, decay = device_step(tensors, chunks, 4 + AMSGRAD, lr, weight_decay, DECOUPLED,
                                      CT)
        neg_step_size = -div_rn(lr, bias_correction(step, log_beta1))
        bc2_sqrt = sqrt_rn(bias_correction(step, log_beta2))
    multi_tensor_step(tensors, chunks, (decay, neg_step_size, bc2_sqrt, beta2, lerp_coef,
                                        lerp_small, one_minus_beta2, eps),
                      decay, grad_scale_ptr, found_inf_ptr, _adam_update,
                      (WEIGHT_DECAY and DECOUPLED, AMSGRAD), WEIGHT_DECAY and not DECOUPLED,
                      MAXIMIZE, PT, GT, CT, BLOCK)


@triton.jit
def _advance_kernel(tensors, chunks, found_inf_ptr):
    """This program's step counter (float32) plus 1, unless GradScaler's flag is set."""
    step_ptr = _address(tensors, chunks, 0, tl.float32)
    increment = 1.0
    if found_inf_ptr is not None:
        increment = tl.where(tl.load(found_inf_ptr) != 0, 0.0, 1.0)
    tl.store(step_ptr, tl.load(step_ptr) + increment)


@triton.jit
def _sgd_update(tensors, chunks, idx, mask, param, grad, scalars, FLAGS: tl.constexpr,
                PT: tl.constexpr, CT: tl.constexpr):
    lr, momentum, keep = scalars
    MOMENTUM: tl.constexpr = FLAGS[0]
    FIRST: tl.constexpr = FLAGS[1]
    NESTEROV: tl.constexpr = FLAGS[2]
    if MOMENTUM:
        b_ptr = _address(tensors, chunks, 2, PT)
        if FIRST:
            buf = grad
        else:
            buf = tl.load(b_ptr + idx, mask=mask).to(CT) * momentum + grad * keep
        tl.store(b_ptr + idx, buf.to(PT), mask=mask)
        if NESTEROV:
            grad += buf * momentum
        else:
            grad = buf
    return param - grad * lr


@triton.jit
def _sgd_kernel(tensors, chunks, lr, momentum, keep, weight_decay, grad_scale_ptr,
                found_inf_ptr, WEIGHT_DECAY: tl.constexpr, MOMENTUM: tl.constexpr,
                FIRST: tl.constexpr, NESTEROV: tl.constexpr, MAXIMIZE: tl.constexpr,
                PT: tl.constexpr, GT: tl.constexpr, CT: tl.constexpr, BLOCK: tl.constexpr):
    """PyTorch's fused SGD step: grad (+ weight_decay * param); with MOMENTUM the buffer
    becomes momentum * buffer + keep * grad (keep = 1 - dampening; the grad itself on the
    FIRST step) and the step direction the buffer (NESTEROV: grad + momentum * buffer). The
    scaler's inputs as Adam's."""
    multi_tensor_step(tensors, chunks, (lr, momentum, keep), weight_decay, grad_scale_ptr,
                      found_inf_ptr, _sgd_update, (MOMENTUM, FIRST, NESTEROV), WEIGHT_DECAY,
                      MAXIMIZE, PT, GT, CT, BLOCK)


@triton.jit
def _rmsprop_update(tensors, chunks, idx, mask, param, grad, scalars, FLAGS: tl.constexpr,
                    PT: tl.constexpr, CT: tl.constexpr):
    lr, alpha, one_minus_alpha, lerp_coef, lerp_small, eps, momentum = scalars
    CENTERED: tl.constexpr = FLAGS[0]
    MOMENTUM: tl.constexpr = FLAGS[1]
    v_ptr = _address(tensors, chunks, 2, PT)
    v = tl.load(v_ptr + idx, mask=mask).to(CT) * alpha + one_minus_alpha * grad * grad
    tl.store(v_ptr + idx, v.to(PT), mask=mask)
    if CENTERED:
        m_ptr = _address(tensors, chunks, 3, PT)
        m = _lerp(tl.load(m_ptr + idx, mask=mask).to(CT), grad, lerp_coef, lerp_small)
        tl.store(m_ptr + idx, m.to(PT), mask=mask)
        v = v - m * m
    avg = sqrt_rn(v) + eps
    if MOMENTUM:
        b_ptr = _address(tensors, chunks, 3 + CENTERED, PT)
        buf = tl.load(b_ptr + idx, mask=mask).to(CT) * momentum + div_rn(grad, avg)
        tl.store(b_ptr + idx, buf.to(PT), mask=mask)
        param -= lr * buf
    else:
        param -= div_rn(lr * grad, avg)
    return param


@triton.jit
def _rmsprop_kernel(tensors, chunks, lr, alpha, one_minus_alpha, lerp_coef, lerp_small, eps,
                    weight_decay, momentum, WEIGHT_DECAY: tl.constexpr, CENTERED: tl.constexpr,
                    MOMENTUM: tl.constexpr, MAXIMIZE: tl.constexpr, PT: tl.constexpr,
                    GT: tl.constexpr, CT: tl.constexpr, BLOCK: tl.constexpr):
    """PyTorch's RMSprop step: v = alpha v + (1 - alpha) g^2, less m^2 when CENTERED (m =
    lerp(m, g, 1 - alpha)); p -= lr g / (sqrt(v) + eps), or with MOMENTUM through the buffer
    b = momentum b + g / (sqrt(v) + eps) (the column after the centered mean's)."""
    multi_tensor_step(tensors, chunks, (lr, alpha, one_minus_alpha, lerp_coef, lerp_small, eps,
                                        momentum),
                      weight_decay, None, None, _rmsprop_update, (CENTERED, MOMENTUM),
                      WEIGHT_DECAY, MAXIMIZE, PT, GT, CT, BLOCK)


@triton.jit
def _adagrad_update(tensors, chunks, idx, mask, param, grad, scalars, FLAGS: tl.constexpr,
                    PT: tl.constexpr, CT: tl.constexpr):
    clr, eps = scalars
    s_ptr = _address(tensors, chunks, 2, PT)
    total = tl.load(s_ptr + idx, mask=mask).to(CT) + grad * grad
    tl.store(s_ptr + idx, total.to(PT), mask=mask)
    return param - div_rn(clr * grad, sqrt_rn(total) + eps)


@triton.jit
def _adagrad_kernel(tensors, chunks, clr, eps, weight_decay, WEIGHT_DECAY: tl.constexpr,
                    MAXIMIZE: tl.constexpr, PT: tl.constexpr, GT: tl.constexpr, CT: tl.constexpr,
                    BLOCK: tl.constexpr):
    """PyTorch's Adagrad step: s += g^2; p -= clr g / (sqrt(s) + eps), clr being the step's
    decayed learning rate."""
    multi_tensor_step(tensors, chunks, (clr, eps), weight_decay, None, None, _adagrad_update,
                      None, WEIGHT_DECAY, MAXIMIZE, PT, GT, CT, BLOCK)


@triton.jit
def _max_nan(a, b):
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def _min_nan(a, b):
    return tl.minimum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def _identity(NORM: tl.constexpr, CT: tl.constexpr, BLOCK: tl.constexpr):
    if NORM == 3:
        acc = tl.full((BLOCK,), float("inf"), CT)
    else:
        acc = tl.zeros((BLOCK,), CT)
    return acc


@triton.jit
def _combine(acc, term, mask, NORM: tl.constexpr):
    if NORM == 2:
        acc = tl.where(mask, _max_nan(acc, term), acc)
    elif NORM == 3:
        acc = tl.where(mask, _min_nan(acc, term), acc)
    else:
        acc += tl.where(mask, term, 0.0)
    return acc


@triton.jit
def _reduce(acc, NORM: tl.constexpr):
    if NORM == 2:
        r = tl.reduce(acc, 0, _max_nan)
    elif NORM == 3:
        r = tl.reduce(acc, 0, _min_nan)
    else:
        r = tl.sum(acc, 0)
    return r


@triton.jit
def _norm_partials_kernel(tensors, chunks, partials, first, p, NORM: tl.constexpr,
                          XT: tl.constexpr, CT: tl.constexpr, BLOCK: tl.constexpr):
    """partials[first + chunk] = this chunk's sum of |x|^p (max/min |x| for +-inf)."""
    x_ptr, start, end = _chunk(tensors, chunks, 0, XT)
    acc = _identity(NORM, CT, BLOCK)
    for off in range(start, end, BLOCK):
        idx = off + tl.arange(0, BLOCK)
        mask = idx < end
        x = tl.abs(tl.load(x_ptr + idx, mask=mask, other=0.0).to(CT))
        if NORM == 0:
            term = x * x
        elif NORM == 4:
            term = libdevice.pow(x, p)
        else:
            term = x
        acc = _combine(acc, term, mask, NORM)
    tl.store(partials + first + tl.program_id(0), _reduce(acc, NORM))


@triton.jit
def _norm_finish_kernel(partials, count, out, inv_p, NORM: tl.constexpr, CT: tl.constexpr,
                        BLOCK: tl.constexpr):
    """out = the norm from the `count` partials, combined in a fixed order."""
    acc = _identity(NORM, CT, BLOCK)
    for off in range(0, count, BLOCK):
        idx = off + tl.arange(0, BLOCK)
        mask = idx < count
        acc = _combine(acc, tl.load(partials + idx, mask=mask, other=0.0), mask, NORM)
    total = _reduce(acc, NORM)
    if NORM == 0:
        total = sqrt_rn(total)
    elif NORM == 4:
        total = libdevice.pow(total, inv_p)
    tl.store(out, total.to(out.dtype.element_ty))


@triton.jit
def _scale_kernel(tensors, chunks, total, max_norm, shift, XT: tl.constexpr, CT: tl.constexpr,
                  BLOCK: tl.constexpr):
    """x *= min(max_norm / (total + shift), 1), the coefficient rounded to total's dtype at each
    operation as PyTorch computes it on a 0-d tensor (`max_norm / t` is t.reciprocal() *
    max_norm there)."""
    TT: tl.constexpr = total.dtype.element_ty
    shifted = (tl.load(total).to(CT) + shift).to(TT).to(CT)
    reciprocal = div_rn(tl.full((), 1.0, CT), shifted).to(TT).to(CT)
    coef = _min_nan((reciprocal * max_norm).to(TT).to(CT), 1.0)
    x_ptr, start, end = _chunk(tensors, chunks, 0, XT)
    for off in range(start, end, BLOCK):
        idx = off + tl.arange(0, BLOCK)
        mask = idx < end
        x = tl.load(x_ptr + idx, mask=mask).to(CT)
        tl.store(x_ptr + idx, (x * coef).to(XT), mask=mask)


def _compute(*dtypes):
    """(Triton, numpy) compute dtypes: float64 when any array is float64, else float32."""
    if any(d == np.float64 for d in dtypes):
        return tl.float64, np.dtype(np.float64)
    return tl.float32, np.dtype(np.float32)


def _scalar_type(ct):
    return "fp64" if ct == tl.float64 else "fp32"


class _Tables:
    """The tables of arrays: a host layout per list of sizes (sizes and chunks filled in) and
    the uploaded tables by addresses, so a step that repeats its arrays reuses its table and
    one with new addresses (fresh gradients) only writes them into a copy of the layout."""

    def __init__(self):
        self.layouts, self.uploaded = {}, {}

    def get(self, columns, sizes, device, stream):
        """(device table, tensors address, chunks address, chunk count): `columns` holds one
        tuple of addresses per table column, `sizes` the arrays' element counts."""
        key = (device, columns, sizes)
        table = self.uploaded.get(key)
        if table is None:
            if len(self.uploaded) >= _TABLE_LIMIT:
                self.uploaded.clear()
            table = self.uploaded[key] = _upload(self._layout(sizes), columns, len(sizes),
                                                 device, stream)
        if active_capture(stream) is not None:  # a graph's table must outlive this cache
            keep_alive(stream, table[0])
        return table

    def clear(self):
        self.layouts.clear()
        self.uploaded.clear()

    def _layout(self, sizes):
        layout = self.layouts.get(sizes)
        if layout is None:
            if len(self.layouts) >= _TABLE_LIMIT:
                self.layouts.clear()
            layout = self.layouts[sizes] = _layout(sizes)
        return layout


def _layout(sizes):
    """The host table without addresses: one row of WIDTH int64 per array (its element count
    last), then (array, first element) per chunk of CHUNK elements."""
    width, chunk = WIDTH.value, CHUNK.value
    n = np.array(sizes, dtype=np.int64)
    counts = -(-n // chunk)
    firsts = np.cumsum(counts) - counts
    owners = np.repeat(np.arange(len(sizes), dtype=np.int64), counts)
    starts = (np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(firsts, counts)) * chunk
    host = np.zeros(len(sizes) * width + 2 * len(owners), dtype=np.int64)
    host[width - 1:len(sizes) * width:width] = n
    host[len(sizes) * width::2] = owners
    host[len(sizes) * width + 1::2] = starts
    return host


def _upload(layout, columns, count, device, stream):
    """Copy `layout`, write the addresses of the `count` arrays in, upload it."""
    width = WIDTH.value
    host = layout.copy()
    for c, addresses in enumerate(columns):
        host[c:count * width:width] = addresses
    arr = CUDAArray.empty(host.shape, host.dtype, device, stream)
    upload(arr.ptr, host, stream)
    return arr, arr.ptr, arr.ptr + count * width * 8, (host.size - count * width) // 2


_tables = _Tables()


_launches = LaunchCache()
_TABLE_ARGS = ("tensors", "chunks")


def _kind(arg):
    """What a launch argument specializes on: an array's dtype, else its type (None: absent)."""
    return arg.dtype if arg.__class__ is CUDAArray else arg.__class__


def _launch(fn, grid, args, meta, device, stream, target=None):
    """Launch `fn` over `grid`, positionally: `args` are its runtime parameters in order (table
    addresses and counts as ints, hyperparameters as floats, arrays, None where absent), `meta`
    its constexprs. One launch.Launch per specialization and grid, kept; with a `target`, only
    the compilation."""
    if target is not None:
        _build(fn, grid, args, meta, device, target)(stream, *args)
        return
    key = (fn, grid, device, tuple(meta.items()), tuple(map(_kind, args)))
    launch = _launches.get(key)
    if launch is None:
        launch = _launches.get_or_build(key, lambda: _build(fn, grid, args, meta, device))
    launch(stream, *args)


def _build(fn, grid, args, meta, device, target=None):
    """The Launch of `fn` for arguments like `args`: table addresses are int64 pointers, other
    ints int64 and floats of the compute type meta["CT"] (float32 without one). Every argument
    varies per call: the kernels read their arrays through the table, so no divisibility is
    assumed."""
    sty = _scalar_type(meta.get("CT", tl.float32))
    types = {}
    for name, arg in zip(fn.arg_names, args):
        if name in _TABLE_ARGS:
            types[name] = "*i64"
        elif isinstance(arg, float):
            types[name] = sty
        elif isinstance(arg, int):
            types[name] = "i64"
    return Launch(fn, grid, meta, types=types, per_call=fn.arg_names, device=device,
                  target=target)


def _buckets(arrays, *others):
    """{dtypes: [indices]} of the arrays (and the lists `others` beside them) by dtype."""
    out = {}
    columns = [[a.dtype for a in lst] for lst in (arrays, *others)]
    for i, key in enumerate(zip(*columns)):
        out.setdefault(key, []).append(i)
    return out


def _list_table(arrays, idx, device, stream):
    """The table of arrays[i] for i in idx (one address column)."""
    return _tables.get((tuple(arrays[i].ptr for i in idx),),
                       tuple(arrays[i].size for i in idx), device, stream)


def _lerp_coefficient(weight):
    """(lerp's fma coefficient, 1 when it starts from the start value) for `weight`."""
    small = abs(weight) < 0.5
    return (weight if small else weight - 1.0), int(small)


def _step_meta(pt, gt, flags):
    """A step kernel's constexprs: its `flags`, then the dtypes and the block."""
    ct, _ = _compute(pt, gt)
    return dict(flags, PT=_TL[pt.name], GT=_TL[gt.name], CT=ct, BLOCK=BLOCK)


def _step(fn, lists, scalars, flags):
    """Launch the step kernel `fn` over the parallel `lists` of arrays (parameters, gradients,
    then their state), one launch per (parameter dtype, gradient dtype); `scalars` are its
    arguments after the table."""
    params, grads = lists[0], lists[1]
    if not params:
        return
    device = params[0].device
    activate(device)
    stream = current_stream_handle(device)
    for (pt, gt), idx in _buckets(params, grads).items():
        columns = tuple(tuple(arrays[i].ptr for i in idx) for arrays in lists)
        _, tensors, chunks, count = _tables.get(columns, tuple(params[i].size for i in idx),
                                                device, stream)
        if count:
            _launch(fn, (count,), (tensors, chunks, *scalars), _step_meta(pt, gt, flags),
                    device, stream)


def lr_arg(lr):
    """A learning rate as the step kernels take it: a float, or a 0-d array they read."""
    return lr if lr.__class__ is CUDAArray else float(lr)


def log_beta(beta):
    """log(beta) as a float, -inf for 0 (then beta^step is 0)."""
    return math.log(beta) if beta > 0 else float("-inf")


def _adam_scalars(lr, beta1, beta2, eps, weight_decay, decoupled, bias_correction1,
                  bias_correction2_sqrt, steps, grad_scale, found_inf):
    """The Adam kernel's arguments after the table: the per-step scalars from the host, or
    (with step counters on the device) what the kernel computes them from."""
    weight, small = _lerp_coefficient(1 - beta1)
    if steps is None:
        per_step = (float(1 - lr * weight_decay if decoupled else weight_decay),
                    float(-lr / bias_correction1), float(bias_correction2_sqrt),
                    None, None, None, None)
    else:
        per_step = (None, None, None, lr_arg(lr), float(weight_decay), log_beta(beta1),
                    log_beta(beta2))
    return per_step + (float(beta2), float(weight), small, float(1 - beta2), float(eps),
                       grad_scale, found_inf)


@register("adam_step", "cuda")
def adam_step(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, lr, beta1, beta2, eps,
              weight_decay, decoupled, maximize, bias_correction1, bias_correction2_sqrt,
              steps=None, grad_scale=None, found_inf=None):
    """One Adam/AdamW step of every (param, grad, moments) quadruple, in place: one launch per
    (param dtype, grad dtype). With `steps` (the float32 step counters, already advanced) the
    bias corrections are computed on the device and `lr` may be a 0-d array; `grad_scale` and
    `found_inf` are GradScaler's 0-d float32 arrays (see the module docstring)."""
    flags = dict(WEIGHT_DECAY=weight_decay != 0, DECOUPLED=bool(decoupled),
                 MAXIMIZE=bool(maximize), AMSGRAD=max_exp_avg_sqs is not None)
    lists = [params, grads, exp_avgs, exp_avg_sqs]
    lists += [x for x in (max_exp_avg_sqs, steps) if x is not None]
    _step(_adam_kernel, lists, _adam_scalars(lr, beta1, beta2, eps, weight_decay, decoupled,
                                             bias_correction1, bias_correction2_sqrt, steps,
                                             grad_scale, found_inf), flags)


@register("advance_steps", "cuda")
def advance_steps(steps, found_inf=None):
    """Add 1 to every 0-d float32 step counter in `steps`, unless the 0-d `found_inf` is
    nonzero: one launch, one program per counter."""
    if not steps:
        return
    device = steps[0].device
    activate(device)
    stream = current_stream_handle(device)
    _, tensors, chunks, count = _list_table(steps, range(len(steps)), device, stream)
    _launch(_advance_kernel, (count,), (tensors, chunks, found_inf), {}, device, stream)


@register("sgd_step", "cuda")
def sgd_step(params, grads, momentum_buffers, lr, momentum, dampening, weight_decay, nesterov,
             maximize, first_step, grad_scale=None, found_inf=None):
    """One SGD step of every (param, grad, momentum buffer) triple, in place: one launch per
    (param dtype, grad dtype); GradScaler's inputs as adam_step's."""
    scalars = (float(lr), float(momentum), float(1 - dampening), float(weight_decay),
               grad_scale, found_inf)
    flags = dict(WEIGHT_DECAY=weight_decay != 0, MOMENTUM=momentum_buffers is not None,
                 FIRST=bool(first_step), NESTEROV=bool(nesterov), MAXIMIZE=bool(maximize))
    lists = [params, grads] + ([momentum_buffers] if momentum_buffers is not None else [])
    _step(_sgd_kernel, lists, scalars, flags)


@register("rmsprop_step", "cuda")
def rmsprop_step(params, grads, square_avgs, grad_avgs, momentum_buffers, lr, alpha, eps,
                 weight_decay, momentum, maximize):
    """One RMSprop step of every parameter and its state, in place: one launch per (param
    dtype, grad dtype)."""
    weight, small = _lerp_coefficient(1 - alpha)
    scalars = (float(lr), float(alpha), float(1 - alpha), float(weight), small, float(eps),
               float(weight_decay), float(momentum))
    centered = grad_avgs is not None
    flags = dict(WEIGHT_DECAY=weight_decay != 0, CENTERED=centered,
                 MOMENTUM=momentum_buffers is not None, MAXIMIZE=bool(maximize))
    lists = [params, grads, square_avgs] + [x for x in (grad_avgs, momentum_buffers)
                                            if x is not None]
    _step(_rmsprop_kernel, lists, scalars, flags)


@register("adagrad_step", "cuda")
def adagrad_step(params, grads, state_sums, clr, eps, weight_decay, maximize):
    """One Adagrad step of every (param, grad, sum of squares) triple, in place: one launch per
    (param dtype, grad dtype)."""
    flags = dict(WEIGHT_DECAY=weight_decay != 0, MAXIMIZE=bool(maximize))
    _step(_adagrad_kernel, [params, grads, state_sums],
          (float(clr), float(eps), float(weight_decay)), flags)


def _norm_kind(norm_type):
    """The kernels' NORM: 0 (2), 1 (1), 2 (inf), 3 (-inf), 4 (any other p but 0)."""
    if norm_type == 0:
        raise ValueError("total_norm: the 0 norm counts nonzero tensors (PyTorch's norm of the "
                         "per-tensor norms); compute it per tensor")
    return _NORMS.get(float(norm_type), _GENERAL_NORM)


@register("total_norm", "cuda")
def total_norm(arrays, norm_type, dtype):
    """The norm_type norm of all the arrays as one vector, a 0-d array of `dtype`: one partials
    launch per dtype and one launch combining the partials."""
    device = arrays[0].device
    activate(device)
    stream = current_stream_handle(device)
    kind = _norm_kind(norm_type)
    ct, np_ct = _compute(dtype, *(a.dtype for a in arrays))
    buckets = []
    count = 0
    for (xt,), idx in _buckets(arrays).items():
        table = _list_table(arrays, idx, device, stream)
        buckets.append((xt, table, count))
        count += table[3]
    partials = CUDAArray.empty((max(count, 1),), np_ct, device, stream)
    p = float(norm_type) if kind == _GENERAL_NORM else 1.0
    for xt, (_, tensors, chunks, n), first in buckets:
        if n:
            _launch(_norm_partials_kernel, (n,), (tensors, chunks, partials, first, p),
                    dict(NORM=kind, XT=_TL[xt.name], CT=ct, BLOCK=BLOCK), device, stream)
    out = CUDAArray.empty((), np.dtype(dtype), device, stream)
    _launch(_norm_finish_kernel, (1,), (partials, count, out, 1.0 / p),
            dict(NORM=kind, CT=ct, BLOCK=BLOCK), device, stream)
    return out


@register("clip_by_total_norm_", "cuda")
def clip_by_total_norm_(arrays, max_norm, total_norm):
    """Scale the arrays in place by min(max_norm / (total_norm + 1e-6), 1), computed on the
    device from the 0-d `total_norm` (no host synchronization): one launch per dtype."""
    if not arrays:
        return
    device = arrays[0].device
    activate(device)
    stream = current_stream_handle(device)
    for (xt,), idx in _buckets(arrays).items():
        _, tensors, chunks, n = _list_table(arrays, idx, device, stream)
        if n:
            _scale(tensors, chunks, n, total_norm, max_norm, xt, device, stream)


def _scale(tensors, chunks, n, total, max_norm, xt, device, stream, target=None):
    ct, _ = _compute(xt, total.dtype)
    _launch(_scale_kernel, (n,), (tensors, chunks, total, float(max_norm), 1e-6),
            dict(XT=_TL[xt.name], CT=ct, BLOCK=BLOCK), device, stream, target)


def _floats():
    import ml_dtypes
    return [np.dtype(np.float32), np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16),
            np.dtype(np.float64)]


def _scaler_inputs(amp):
    """(grad_scale, found_inf) placeholders for compile_all, or (None, None)."""
    return (placeholder((), np.float32), placeholder((), np.float32)) if amp else (None, None)
