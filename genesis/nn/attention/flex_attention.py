"""genesis.nn.attention.flex_attention, as torch.nn.attention.flex_attention: attention whose
scores a user's `score_mod` rewrites and whose `mask_mod` (through a BlockMask) hides.

Genesis has no compiler to fuse the mods into a kernel, so flex_attention runs what torch's own
eager path runs (torch._higher_order_ops.flex_attention.math_attention): the (B, H, L, S)
scores in float32 (float64 for float64 inputs), score_mod, then -inf where mask_mod is False,
the log-sum-exp (-inf for fully masked rows), a softmax that gives zeros for fully masked rows,
and the weights cast to the query's dtype times the values. A call on CUDA with no score_mod
and no statistics asked for is attention under a bool mask: mask_mod's mask, as broadcast as
mask_mod leaves it, goes to the fused kernels of scaled_dot_product_attention where they take
it (same query and key batch, one head dim of 16 to 128), without the float scores. It runs on CPU and CUDA tensors
alike and is differentiable, in the inputs and in tensors the mods capture (torch refuses
backward on the CPU). The block lists of a BlockMask are not read: the math applies mask_mod to
every score, as torch's does. How mods are called (once, on broadcast index tensors, not under
vmap) and what they may contain is described in _block_mask.py.
"""

import math
import typing
import warnings
from typing import Literal, NamedTuple, TypedDict

from ... import dtypes
from ...autograd import autocast_state
from ...ops import elementwise as ew
from ...ops.autocast import autocast_policy
from ..functional.activation import softmax
from ..functional.attention import fused_masked_attention
from ._block_mask import (_LARGE_SPARSE_BLOCK_SIZE, BlockMask, _sliced_mask_mod_error,
                          and_masks, bhqk_grids, create_block_mask, create_mask, noop_mask,
                          or_masks)

__all__ = ["BlockMask", "flex_attention", "AuxOutput", "AuxRequest", "FlexKernelOptions",
           "create_block_mask", "create_mask", "or_masks", "and_masks", "noop_mask"]

_Backend = Literal["AUTO", "TRITON", "FLASH", "TRITON_DECODE"]


class FlexKernelOptions(TypedDict, total=False):
    """torch's tuning options of its FlexAttention kernels (a `fwd_` or `bwd_` prefix limits
    one to that pass). Genesis's eager path accepts and ignores them, as torch's math path does;
    only torch's checks of BACKEND and FORCE_USE_FLEX_ATTENTION apply."""

    num_warps: int
    num_stages: int
    BLOCK_M: int
    BLOCK_N: int
    BLOCK_M1: int
    BLOCK_N1: int
    BLOCK_M2: int
    BLOCK_N2: int
    PRESCALE_QK: bool
    ROWS_GUARANTEED_SAFE: bool
    BLOCKS_ARE_CONTIGUOUS: bool
    WRITE_DQ: bool
    FORCE_USE_FLEX_ATTENTION: bool
    USE_TMA: bool
    kpack: int
    matrix_instr_nonkdim: int
    waves_per_eu: int
    BACKEND: _Backend


class AuxRequest(NamedTuple):
    """Request which auxiliary outputs to compute from flex_attention.

    Each field is a boolean indicating whether that auxiliary output should be computed.
    """

    lse: bool = False
    max_scores: bool = False


class AuxOutput(NamedTuple):
    """Auxiliary outputs from flex_attention operation.

    Fields will be None if not requested, or contain the tensor if requested.
    """

    lse: object = None
    max_scores: object = None


def _identity(score, batch, head, token_q, token_kv):
    return score


def _check_inputs(query, key, value):
    """torch's checks of the inputs' devices, ranks and embedding sizes."""
    if query.device != key.device or query.device != value.device:
        raise ValueError(f"Expected query, key, and value to have the same device type, but got "
                         f"query.device: {query.device}, key.device: {key.device}, and "
                         f"value.device: {value.device} instead.")
    if query.dim() < 2 or key.dim() < 2 or value.dim() < 2:
        raise ValueError(f"Expected query, key, and value to all be  at least 2 dimensional, but "
                         f"got query.dim: {query.dim()}, key.dim: {key.dim()} and value.dim: "
                         f"{value.dim()} instead.")
    if query.size(-1) != key.size(-1):
        raise ValueError(f"Expect query and key/value to have the same embedding dimension but "
                         f"got E={query.size(-1)} and E={key.size(-1)}.")
    if query.device.type not in ("cuda", "cpu", "xpu", "hpu", "mps"):
        raise ValueError(f"FlexAttention is only supported on CUDA, CPU, HPU, or MPS devices. "
                         f"Found input tensors on {query.device.type} device.")
    if query.dim() != 4 or key.dim() != 4 or value.dim() != 4:
        raise NotImplementedError("NYI: query, key, and value must be 4D tensors")


def _check_heads_and_batch(query, key, block_mask, enable_gqa):
    """torch's checks that the heads group and the batches match or the block mask covers
    the query's batch."""
    if not enable_gqa and query.size(-3) != key.size(-3):
        raise ValueError(f"Expect query and key/value to have the same number of heads but got "
                         f"Hq={query.size(-3)} and Hkv={key.size(-3)}. Try setting "
                         f"enable_gqa=True for GQA.")
    if enable_gqa and query.size(1) % key.size(1) != 0:
        raise ValueError(f"Expect number of query heads to be a multiple of kv heads for GQA but "
                         f"got Hq={query.size(1)} and Hkv={key.size(1)}.")
    if query.size(0) == key.size(0):
        return
    if block_mask is None:
        raise ValueError(f"Expect query and key/value to have the same batch size, or non-none "
                         f"block_mask, but got block_mask=None, Bq={query.size(0)}, and "
                         f"Bkv={key.size(0)}.")
    if block_mask.kv_num_blocks.size(0) != query.size(0):
        raise ValueError(f"Expect query and key/value to have the same batch size, or "
                         f"block_mask and query to have the same batch size, but got "
                         f"Bq={query.size(0)}, Bkv={key.size(0)}, "
                         f"B_block_mask={block_mask.kv_num_blocks.size(0)}.")


def _check_block_mask(block_mask, query, key):
    """torch's checks that the block mask was made for these lengths and this device."""
    if block_mask.mask_mod is _sliced_mask_mod_error:
        raise RuntimeError("Cannot use mask_mod from a sliced BlockMask")
    if block_mask.BLOCK_SIZE[0] != _LARGE_SPARSE_BLOCK_SIZE or \
            block_mask.BLOCK_SIZE[1] != _LARGE_SPARSE_BLOCK_SIZE:
        _check_lengths(block_mask.shape, query.size(-2), key.size(-2))
    if query.device != block_mask.kv_num_blocks.device:
        raise RuntimeError(f"Expect q/k/v and block_mask to be on the same device but got "
                           f"{query.device} and {block_mask.kv_num_blocks.device}.")


def _check_lengths(shape, q_len, kv_len):
    """A block mask serves exactly the lengths it was made for; torch says how to adjust it."""
    mask_q_len, mask_kv_len = shape[-2], shape[-1]
    seen = f"block_mask was created for block_mask.shape={shape} but got q_len={q_len} and " \
           f"kv_len={kv_len}. "
    if q_len > mask_q_len or kv_len > mask_kv_len:
        raise ValueError(seen + "As the block mask was created for a smaller length than you're "
                         "using it for, you likely need to create a new block mask.")
    if q_len != mask_q_len or kv_len != mask_kv_len:
        raise ValueError(seen + "As the block mask was created for a larger length than you're "
                         "using it for, you can either 1. create a new block mask with the "
                         "correct length, or 2. 'adjust' the existing block mask to the correct "
                         "length by calling block_mask._adjust(q_len, kv_len). This essentially "
                         "'crops' the block mask to the upper left corner, which does not work "
                         "for all mask_mods!")


def _check_options(kernel_options, return_lse, return_aux):
    """torch's checks of the return flags and the kernel options; the deprecated `return_lse`
    warns."""
    if return_lse and return_aux is not None:
        raise ValueError("Cannot specify both return_lse and return_aux. return_lse is "
                         "deprecated, please use return_aux=AuxRequest(lse=True) instead.")
    if return_lse:
        warnings.warn("return_lse is deprecated and will be removed in v2.10. Please use "
                      "return_aux=AuxRequest(lse=True) instead.", FutureWarning, stacklevel=4)
    options = dict(kernel_options or {})
    if "BACKEND" in options and options.get("FORCE_USE_FLEX_ATTENTION", False):
        raise RuntimeError("BACKEND cannot be combined with legacy FORCE_USE_FLEX_ATTENTION. "
                           "BACKEND supersedes the legacy knob; please drop "
                           "FORCE_USE_FLEX_ATTENTION and only specify the desired BACKEND.")
    valid_backends = typing.get_args(_Backend)
    if "BACKEND" in options and options["BACKEND"] not in valid_backends:
        raise ValueError(f"Invalid BACKEND value '{options['BACKEND']}'. "
                         f"Must be one of {valid_backends}")
    for internal in ("OUTPUT_LOGSUMEXP", "OUTPUT_MAX"):
        if internal in options:
            raise AssertionError(f"{internal} must not be in kernel_options")
    if options.get("BACKEND") == "FLASH" and return_aux is not None and return_aux.max_scores:
        raise NotImplementedError("Returning max scores is not supported with BACKEND='FLASH'. "
                                  "Use return_aux=AuxRequest(lse=True) or omit max_scores.")


@autocast_policy("flex_attention")
def flex_attention(query, key, value, score_mod=None, block_mask=None, scale=None,
                   enable_gqa=False, return_lse=False, kernel_options=None, *, return_aux=None):
    """Attention over (B, Hq, L, E) queries and (B, Hkv, S, E/Ev) keys/values whose scaled
    scores `score_mod(score, b, h, q_idx, kv_idx)` rewrites and whose `block_mask`'s mask_mod
    hides, as torch.nn.attention.flex_attention.flex_attention.

    `scale` defaults to 1/sqrt(E); `enable_gqa` lets Hq be a multiple of Hkv; a key/value batch
    of 1 serves a larger query batch when a block mask of that batch is given. Returns the
    (B, Hq, L, Ev) output, laid out as the query, and, with `return_aux`, an AuxOutput of the
    requested (B, Hq, L) log-sum-exp and max scores (natural log, float32 or float64), or with
    the deprecated `return_lse` the log-sum-exp alone. `kernel_options` are checked as torch
    checks them and otherwise ignored. Max scores are computed on every device (torch's CPU
    path refuses them).
    """
    _check_inputs(query, key, value)
    _check_heads_and_batch(query, key, block_mask, enable_gqa)
    if block_mask is not None:
        _check_block_mask(block_mask, query, key)
    _check_options(kernel_options, return_lse, return_aux)
    scale = 1.0 / math.sqrt(query.size(-1)) if scale is None else scale
    mask_mod = noop_mask if block_mask is None else block_mask.mask_mod
    want_lse = return_lse or (return_aux is not None and return_aux.lse)
    with autocast_state.suspended():
        if score_mod is None and not want_lse and return_aux is None:
            out = _fused(query, key, value, mask_mod, scale, enable_gqa)
            if out is not None:
                return _laid_out_as(out, query)
        out, lse, max_scores = _math_attention(
            query, key, value, _identity if score_mod is None else score_mod, mask_mod, scale)
    out = _laid_out_as(out, query)
    if return_aux is not None:
        return out, AuxOutput(lse=lse if want_lse else None,
                              max_scores=max_scores if return_aux.max_scores else None)
    return (out, lse) if want_lse else out


def _math_attention(query, key, value, score_mod, mask_mod, scale):
    """torch's math_attention: (output, log-sum-exp, max scores), the statistics in the
    working precision (float64 for float64 queries, else float32) and natural log."""
    groups = query.size(1) // key.size(1)
    if groups > 1:
        key, value = key.repeat_interleave(groups, dim=1), value.repeat_interleave(groups, dim=1)
    batch, kv_batch = query.size(0), key.size(0)
    if not (batch == kv_batch or (batch > 1 and kv_batch == 1)):
        raise RuntimeError(f"Bq and Bkv must broadcast. Got Bq={batch} and Bkv={kv_batch}")
    key, value = key.expand(batch, *key.shape[1:]), value.expand(batch, *value.shape[1:])
    working = dtypes.float64 if query.dtype is dtypes.float64 else dtypes.float32
    scores = (query.to(working) @ key.to(working).transpose(-2, -1)) * scale
    scores = _modded_scores(scores, score_mod, mask_mod)
    masked_rows = (scores == -math.inf).all(dim=-1, keepdim=True)
    safe = ew.where(masked_rows, 0.0, scores)
    lse = ew.where(masked_rows, -math.inf, safe.logsumexp(dim=-1, keepdim=True)).squeeze(-1)
    weights = ew.where(masked_rows, 0.0, softmax(safe, dim=-1))
    out = weights.to(query.dtype) @ value.to(query.dtype)
    return out, lse, scores.max(dim=-1).values


def _fused(query, key, value, mask_mod, scale, enable_gqa):
    """The output of the fused kernels under mask_mod's bool mask (as broadcast as mask_mod
    leaves it; none for noop_mask) where they take the call, else None."""
    if query.device.type != "cuda":
        return None
    mask = None
    if mask_mod is not noop_mask:
        shape = (query.size(0), query.size(1), query.size(-2), key.size(-2))
        mask = mask_mod(*bhqk_grids(*shape, query.device))
        if mask.dtype is not dtypes.bool_:
            return None
    return fused_masked_attention(query, key, value, mask, scale, enable_gqa)


def _modded_scores(scores, score_mod, mask_mod):
    """score_mod's scores where mask_mod allows, -inf elsewhere, both mods called once on
    broadcast index tensors and the result broadcast back to the scores' shape."""
    b, h, q_idx, kv_idx = bhqk_grids(*scores.shape, scores.device)
    modded = score_mod(scores, b, h, q_idx, kv_idx)
    if mask_mod is not noop_mask:
        modded = ew.where(mask_mod(b, h, q_idx, kv_idx), modded, -math.inf)
    return modded.expand(*scores.shape)


def _laid_out_as(out, query):
    """`out` with its dims ordered in memory as the query's (the last dim innermost), as
    torch's eager flex_attention returns it."""
    strides, last = query.stride(), out.dim() - 1
    fill_order = sorted(range(out.dim()), key=lambda d: -strides[d])[::-1]
    inner = fill_order[:fill_order.index(last)]
    if math.prod(out.shape[d] for d in inner) != 1:
        fill_order = [last] + [d for d in fill_order if d != last]
    outer_first = fill_order[::-1]
    if outer_first == list(range(out.dim())):
        return out.contiguous()
    inverse = sorted(range(out.dim()), key=outer_first.__getitem__)
    return out.permute(*outer_first).contiguous().permute(*inverse)
