"""Which implementation runs a scaled_dot_product_attention call, by the SDP flags
(genesis.backends.cuda.sdp) and what each implementation takes.

The fused implementation's rules are written once each, as generators of the reasons it cannot
take a call: selection stops at the first reason, and `debug` (can_use_*(params, True), or a call
no enabled backend takes) warns them all. On the CPU they are PyTorch's CPU flash kernel's, with
its texts; on the GPU they are Genesis's fused kernel's.
"""

from ... import dtypes
from ...backends.cuda import sdp
from ...backends.cuda.sdp import SDPBackend
from ...dispatch import has_kernel
from ._utils import warn

MATH, FLASH = SDPBackend.MATH, SDPBackend.FLASH_ATTENTION
EFFICIENT, CUDNN = SDPBackend.EFFICIENT_ATTENTION, SDPBackend.CUDNN_ATTENTION
_FUSED_ON = {"cpu": (FLASH,), "cuda": (FLASH, EFFICIENT, CUDNN)}
_HEADERS = {FLASH: "Flash attention kernel not used because:",
            EFFICIENT: "Memory efficient kernel not used because:",
            CUDNN: "CuDNN attention kernel not used because:"}
_DISABLED = {FLASH: "Flash attention has been runtime disabled.",
             EFFICIENT: "Memory Efficient attention has been runtime disabled.",
             CUDNN: "CuDNN attention has been runtime disabled."}
_CPU_FLASH_DTYPES = (dtypes.float32, dtypes.float64, dtypes.bfloat16, dtypes.float16)
GPU_FUSED_DTYPES = (dtypes.float32, dtypes.float16, dtypes.bfloat16)
MIN_HEAD, MAX_HEAD = 16, 128


def _sizes(t):
    return list(t.shape)


def cpu_flash_reasons(p):
    """Why PyTorch's CPU build would not run this call as its flash kernel (its texts)."""
    q, k, v, mask = p.query, p.key, p.value, p.attn_mask
    if p.dropout > 0.0:
        yield "Both fused kernels do not support non-zero dropout."
    if not q.ndim == k.ndim == v.ndim == 4:
        yield (f"All fused kernels requires query, key and value to be 4 dimensional, but got "
               f"Query dim: {q.ndim}, Key dim: {k.ndim}, Value dim: {v.ndim} instead.")
        return
    yield from _batch_and_heads_reasons(q, k, v, p.enable_gqa)
    if mask is not None and not (mask.ndim == 2 or mask.ndim == 4):
        yield ("Please use the following attn mask shapes: 2d - ({Q_seq_len, 1}  x {KV_seq_len, "
               "1}); 4d - ({Batch, 1} x {Num_heads, 1} x {Q_seq_len, 1}  x {KV_seq_len, 1})")
    if not q.shape[-1] == k.shape[-1] == v.shape[-1]:
        yield (f"Flash attention requires q,k,v to have the same last dimension. Got "
               f"Query.size(-1): {q.shape[-1]}, Key.size(-1): {k.shape[-1]}, Value.size(-1): "
               f"{v.shape[-1]} instead.")
    strides = (q.stride(-1), k.stride(-1), v.stride(-1))
    if strides != (1, 1, 1):
        yield (f"All fused kernels require the last dimension of the input to have stride 1. "
               f"Got Query.stride(-1): {strides[0]}, Key.stride(-1): {strides[1]}, "
               f"Value.stride(-1): {strides[2]}")
    if q.dtype not in _CPU_FLASH_DTYPES:
        names = [dtypes.type_meta_name(t.dtype) for t in (q, k, v)]
        yield (f"Expected query, key and value to all be of dtype: {{Float, Double, BFloat16, "
               f"Half}}. Got Query dtype: {names[0]}, Key dtype: {names[1]}, and Value dtype: "
               f"{names[2]} instead.")
    if mask is not None and mask.requires_grad:
        yield "the attention mask requires a gradient, which the fused kernel does not compute"


def _batch_and_heads_reasons(q, k, v, enable_gqa):
    """The fused kernels' rule on batch sizes and heads (grouped heads with enable_gqa)."""
    if not q.shape[0] == k.shape[0] == v.shape[0]:
        yield (f"For dense inputs, both fused kernels require query, key and value to have the "
               f"same batch_size. Query.sizes(): {_sizes(q)}, Key.sizes(): {_sizes(k)}, "
               f"Value.sizes(): {_sizes(v)} instead. To broadcast dense inputs, try using "
               f"unsqueeze and expand_to before passing them into the kernel.")
    heads, k_heads, v_heads = q.shape[1], k.shape[1], v.shape[1]
    if not enable_gqa and not heads == k_heads == v_heads:
        yield (f"For dense input, both fused kernels require query, key and value to have the "
               f"same num_heads. Query.sizes(): {_sizes(q)}, Key sizes(): {_sizes(k)}, Value "
               f"sizes(): {_sizes(v)} instead. To broadcast dense inputs, try using unsqueeze "
               f"and expand_to before passing them into the kernel.")
    elif enable_gqa and k_heads != v_heads:
        yield (f"Both fused kernels require key and value to have the same num_heads and "
               f"batch_size but got: Key sizes: {_sizes(k)}, Value sizes: {_sizes(v)}, Query "
               f"sizes: {_sizes(q)} instead.")
    elif enable_gqa and (k_heads == 0 or heads % k_heads):
        yield (f"The number of heads in key/value must divide number of heads in query.Got "
               f"input Key sizes(): {k_heads}, Value sizes(): {v_heads}, Query sizes(): {heads} "
               f"instead.")


def gpu_fused_reasons(p, backend):
    """Why Genesis's GPU fused kernel cannot run this call as `backend`. One kernel serves
    every fused backend; as torch's, the flash backend takes no attn_mask and the
    memory-efficient and cuDNN ones do."""
    q, k, v, mask = p.query, p.key, p.value, p.attn_mask
    if not (q.device == k.device == v.device and has_kernel("flash_attention", "cuda")):
        yield "Genesis's fused attention kernel takes CUDA tensors of one device"
        return
    if mask is not None:
        yield from _gpu_mask_reasons(mask, q, k, backend)
    if p.dropout >= 1.0:
        yield "Genesis's fused attention kernel takes dropout_p below 1"
    if not (q.dtype in GPU_FUSED_DTYPES and k.dtype is q.dtype and v.dtype is q.dtype):
        yield (f"Genesis's fused attention kernel takes float32, float16 or bfloat16 inputs "
               f"of one dtype, got {q.dtype}, {k.dtype} and {v.dtype}")
    if not (2 <= q.ndim == k.ndim == v.ndim <= 4):
        yield (f"Genesis's fused attention kernel takes inputs of 2 to 4 dims alike, got "
               f"{q.ndim}, {k.ndim} and {v.ndim}")
        return
    if not (MIN_HEAD <= q.shape[-1] <= MAX_HEAD and k.shape[-1] == v.shape[-1] == q.shape[-1]):
        yield (f"Genesis's fused attention kernel takes one head dim of {MIN_HEAD} to "
               f"{MAX_HEAD} for query, key and value, got {q.shape[-1]}, {k.shape[-1]} and "
               f"{v.shape[-1]}")
    if not _leading_dims_fit(q, k, v, p.enable_gqa):
        yield (f"Genesis's fused attention kernel takes query, key and value of one batch and "
               f"head count (key and value heads dividing the query's with enable_gqa), got "
               f"{_sizes(q)}, {_sizes(k)} and {_sizes(v)}")
    if q.numel() == 0 or k.numel() == 0:
        yield "Genesis's fused attention kernel takes no empty inputs"


def _gpu_mask_reasons(mask, q, k, backend):
    if backend is FLASH:
        yield ("Genesis's flash attention backend takes no attn_mask (its memory-efficient "
               "backend does)")
        return
    if mask.device != q.device:
        yield f"the attn_mask is on {mask.device}, the query on {q.device}"
    if mask.requires_grad:
        yield "the attention mask requires a gradient, which the fused kernel does not compute"
    if not broadcasts_to(tuple(mask.shape), tuple(q.shape[:-1]) + (k.shape[-2],)):
        yield (f"Genesis's fused attention kernel takes an attn_mask that broadcasts to the "
               f"scores' shape {[*q.shape[:-1], k.shape[-2]]}, got {_sizes(mask)}")


def broadcasts_to(shape, target):
    """Whether `shape` broadcasts to `target` without growing it."""
    if len(shape) > len(target):
        return False
    return all(n in (1, t) for n, t in zip(reversed(shape), reversed(target)))


def _leading_dims_fit(q, k, v, enable_gqa):
    if k.shape[:-2] != v.shape[:-2]:
        return False
    if q.shape[:-2] == k.shape[:-2]:
        return True
    return (enable_gqa and q.ndim >= 3 and q.shape[:-3] == k.shape[:-3] and k.shape[-3] > 0
            and q.shape[-3] % k.shape[-3] == 0)


_REASONS = {"cpu": lambda p, backend: cpu_flash_reasons(p), "cuda": gpu_fused_reasons}


def _fused_reasons(p, backend):
    reasons = _REASONS.get(p.query.device.type)
    return reasons(p, backend) if reasons else iter(("no fused attention kernel on this device",))


def fused_fits(p, backend):
    """Whether the device's fused kernel takes this call as `backend`."""
    return next(_fused_reasons(p, backend), None) is None


def _check(backend):
    """can_use_*'s check for `backend`: the fused kernel's rules where it serves `backend`."""
    def check(p, debug=False):
        if backend not in _FUSED_ON.get(p.query.device.type, ()):
            if debug:
                warn(f"{backend.name} is not available on {p.query.device.type}")
            return False
        if not debug:
            return fused_fits(p, backend)
        reasons = list(_fused_reasons(p, backend))
        for reason in reasons:
            warn(reason)
        return not reasons
    return check


sdp.register_checks({b: _check(b) for b in (FLASH, EFFICIENT, CUDNN)})


def choose(p, fits=None):
    """MATH or FLASH (the fused kernel, for any fused backend) for this call, by the enabled
    backends in priority order; the errors PyTorch gives when none takes it. `fits`: whether
    the fused kernel takes the call as any fused backend, when the caller knows already."""
    device = p.query.device.type
    fused_on = _FUSED_ON.get(device, ())
    enabled = [b for b in sdp.enabled_backends() if b is MATH or b in fused_on]
    if not enabled:
        raise RuntimeError("No viable backend for scaled_dot_product_attention was found. This "
                           "is likely due to turning off both the math kernel and the fused "
                           "kernels.")
    for backend in enabled:
        if backend is MATH:
            return MATH
        if fits if fits is not None else fused_fits(p, backend):
            return FLASH
    _warn_why_not(p, fused_on)
    raise RuntimeError("No available kernel.  Aborting execution." if device == "cpu" else
                       "No available kernel. Aborting execution.")


def _warn_why_not(p, fused_on):
    enabled = sdp.enabled_backends()
    for backend in sorted(fused_on, key=(EFFICIENT, FLASH, CUDNN).index):
        warn(_HEADERS[backend])
        for reason in ([_DISABLED[backend]] if backend not in enabled
                       else _fused_reasons(p, backend)):
            warn(reason)

