"""The Triton kernels of fused scaled dot-product attention (FlashAttention-2) on the GPU,
forward and backward. attention_launch.py plans their launches and registers them as the ops
"flash_attention" and "flash_attention_backward".

Forward (_attn_fwd_kernel): one launch over (query blocks, batch x heads). Each program keeps
its BM queries in registers and walks the keys BN at a time with an online softmax in base 2
(running max m, running sum l, the output accumulator rescaled whenever m grows), so the
(L, S) scores never reach memory. It writes O and the row logsumexp of the scaled scores
(natural log, float32), which the backward uses to rebuild P = exp(S * scale - lse) exactly.
Causal masking (query i sees keys j <= i, top-left aligned as torch) skips the key blocks past
the diagonal; only the blocks on the diagonal and the key tail pay for the mask. An attn_mask
(bool, or additive in the query's dtype; MASK) is read in place through its strides, zero
where it broadcasts (a (B, 1, 1, S) key-padding mask is one row per batch), one tile per block
of scores in the forward and again in the backward, which rebuilds P under it. A row that
every key is masked from gives zeros, as torch's math backend does. Dropout drops the
probabilities (after the softmax's sum) by flags drawn by Philox counter in each kernel, the
same in the forward and the backward (attention_dropout.py).

Backward: a preprocess launch (_attn_delta_kernel) for Delta = rowsum(dO * O), then one of two
forms, each recomputing P from the saved logsumexp. One-pass (FlashAttention-2's): one kernel
over key blocks (_attn_dkdv_kernel) walks the query blocks once, computing P, dV += P^T dO,
dP = dO V^T, dS, dK += dS^T Q and each query block's share dS K of dQ, which it adds with
float32 atomics to a float32 accumulator (zeroed by the Delta launch); a last launch
(_attn_dq_cast_kernel) scales that into dQ. Five products per block pair, and the order of the
atomic adds, so dQ's last bits, varies from run to run, as in torch's flash and
memory-efficient backwards. Two-pass (deterministic): the same kernel over key blocks for dK,
dV only, and one over query blocks (_attn_dq_kernel: walks the key blocks), recomputing Q K^T
and dP there (seven products per block pair); every gradient element is summed by one program
in a fixed order, no atomics. Which form runs is attention_launch.py's choice.

Numerics: products accumulate in float32. For float16/bfloat16 the float32 probabilities P (and
dS) are rounded to the input dtype before they enter their second product, as FlashAttention and
torch's fused kernels do: one tensor-core product each, and an error of one half-precision
rounding of P (or dS) per term, which the GPU tests bound. float32 products run on tensor cores
as three TF32 products (Triton's "tf32x3": each operand split into a TF32 high part and a TF32
remainder, the remainders' product dropped), about 21 bits of each product against IEEE
float32's 24; this is what torch's float32 SDPA does (CUTLASS's OpMultiplyAddFastF32 in its
memory-efficient kernel). With genesis.backends.cuda.matmul.allow_tf32 they are single TF32
products (10-bit mantissas).

Operands: the kernels read q, k, v (and the output gradient) in place through the strides of
their batch, head and row dims (the last stride 1), and write the results through theirs. They
take grouped-query attention, H query heads over H / G key/value heads (query head h reads
key/value head h // G), without repeating the keys and values: the backward's dK/dV programs
each walk the G query heads of their key/value head, summing dK and dV over them in registers.
Head dims run in a power-of-two tile BD (80 and 96 in 128), masked to HEAD.

Order (attention_tiles.longest_first): where the kernels are bound by arithmetic (float32's
TF32x3 products, dropout's Philox draws), the grid is (planes, blocks) and under a causal mask
every plane's longest-working blocks start first, so that the last wave is made of short
programs rather than of some planes' longest ones: on an H200, B=4 H=12 T=1024 D=128 float32
took 1.69 ms against 1.91, and bf16 dropout at B=4 H=16 T=2048 D=64 0.99 against 1.09 (forward
+ backward, two alternated rounds). Half types without dropout keep (blocks, planes), each
plane's blocks together, sharing its keys and values in L2: the other order took 0.536 ms
against 0.499 at B=4 H=16 T=2048 D=64 in the same rounds.

Tiles (sm_90), measured on an H200 (bf16, causal, D=64 and 128, `benchmarks/attention.py
--tiles`): small tiles with 4 warps, since more programs in flight hide the loads better than
spill-free registers do: attention_tiles.py holds each kernel's tiles with their timings.
"""

import triton
import triton.language as tl

from ._math import div_rn
from .attention_dropout import dropout_keep
from .random import philox_start

NO_MASK, BOOL_MASK, ADDITIVE_MASK = 0, 1, 2  # the kernels' MASK: no attn_mask, bool, additive
LOG2E = tl.constexpr(1.4426950408889634)
FLT_MAX = tl.constexpr(3.4028234663852886e38)


@triton.jit
def _head(ptr, bh, H, s_b, s_h):
    """The (batch, head) plane `bh` of a (B, H, rows, D) operand."""
    return ptr + (bh // H) * s_b + (bh % H) * s_h


@triton.jit
def _block_and_plane(LONGEST_FIRST: tl.constexpr, HEAVY_LAST: tl.constexpr):
    """(block, plane) of this program. Programs start in the order of their linear id.
    LONGEST_FIRST: the grid is (planes, blocks), planes fastest, so every plane's
    longest-working block starts first and the shortest ones fill the last wave (under a
    causal mask a query block's work grows with its index, a key block's shrinks; HEAVY_LAST:
    the last block is the longest, so the blocks are taken from the last). Otherwise the grid
    is (blocks, planes), a plane's blocks one after another, sharing its keys in L2."""
    if not LONGEST_FIRST:
        return tl.program_id(0), tl.program_id(1)
    block = tl.program_id(1)
    if HEAVY_LAST:
        block = tl.num_programs(1) - 1 - block
    return block, tl.program_id(0)


@triton.jit
def _mask_plane(mask_ptr, bh, H, s_b, s_h, MASK: tl.constexpr):
    """The attn_mask's plane for (batch, head) plane `bh` (None without a mask)."""
    plane = mask_ptr
    if MASK != 0:
        plane = _head(mask_ptr, bh, H, s_b, s_h)
    return plane


@triton.jit
def _load_rows(base, r, stride, n_rows, d, HEAD: tl.constexpr, BD: tl.constexpr,
               CHECK_ROWS: tl.constexpr):
    """Rows `r` of a (rows, HEAD) plane as a (len(r), BD) tile, zero past the ends."""
    ptrs = base + r[:, None] * stride + d[None, :]
    if CHECK_ROWS:
        if HEAD == BD:
            x = tl.load(ptrs, mask=(r < n_rows)[:, None], other=0.0)
        else:
            x = tl.load(ptrs, mask=(r < n_rows)[:, None] & (d < HEAD)[None, :], other=0.0)
    else:
        if HEAD == BD:
            x = tl.load(ptrs)
        else:
            x = tl.load(ptrs, mask=(d < HEAD)[None, :], other=0.0)
    return x


@triton.jit
def _load_cols(base, r, stride, n_rows, d, HEAD: tl.constexpr, BD: tl.constexpr):
    """Rows `r` of a (rows, HEAD) plane, transposed: a (BD, len(r)) tile, zero past the ends."""
    mask = (r < n_rows)[None, :]
    if HEAD != BD:
        mask = mask & (d < HEAD)[:, None]
    return tl.load(base + r[None, :] * stride + d[:, None], mask=mask, other=0.0)


@triton.jit
def _rows_mask(r, n_rows, d, HEAD: tl.constexpr, BD: tl.constexpr):
    """Which elements of a (len(r), BD) tile of rows `r` lie in a (n_rows, HEAD) plane."""
    mask = (r < n_rows)[:, None]
    if HEAD != BD:
        mask = mask & (d < HEAD)[None, :]
    return mask


@triton.jit
def _store_rows(base, r, stride, n_rows, d, x, HEAD: tl.constexpr, BD: tl.constexpr):
    """The (len(r), BD) tile `x` as rows `r` of a (rows, HEAD) plane, within its ends."""
    tl.store(base + r[:, None] * stride + d[None, :], x.to(base.dtype.element_ty),
             mask=_rows_mask(r, n_rows, d, HEAD, BD))


@triton.jit
def _add_rows(base, r, n_rows, d, x, HEAD: tl.constexpr, BD: tl.constexpr):
    """Atomically add the float32 (len(r), BD) tile `x` to rows `r` of a dense (rows, HEAD)
    float32 plane, within its ends (relaxed: only the sums matter, read by a later launch)."""
    tl.atomic_add(base + r[:, None] * HEAD + d[None, :], x,
                  mask=_rows_mask(r, n_rows, d, HEAD, BD), sem="relaxed")


@triton.jit
def _dot_f32(a, b, acc, PRECISION: tl.constexpr):
    """acc + a @ b for a float32 `a` rounded to `b`'s dtype (half types: as FlashAttention
    and torch's fused kernels round P and dS; see the module docstring)."""
    return tl.dot(a.to(b.dtype), b, acc, input_precision=PRECISION)


@triton.jit
def _apply_mask(s, mask_p, qi, ki, L, S, m_row_stride, m_col_stride, MASK: tl.constexpr):
    """The base-2 scores `s` of queries `qi` and keys `ki` (index tiles that broadcast to s's
    shape) under the attn_mask plane `mask_p`: MASK 1 a bool mask (False: -inf), 2 an
    additive one (in natural-log units, like the scores before their base change), 0 none.

    An additive value that is finite stays finite (at least -FLT_MAX), as it does in torch's
    float32 math: a row masked everywhere by a huge finite value (as Hugging Face's masks
    use the dtype's min) then gives uniform weights, as torch's, not zeros."""
    if MASK == 1:
        keep = tl.load(mask_p + qi * m_row_stride + ki * m_col_stride,
                       mask=(qi < L) & (ki < S), other=0)
        s = tl.where(keep != 0, s, float("-inf"))
    elif MASK == 2:
        add = tl.load(mask_p + qi * m_row_stride + ki * m_col_stride,
                      mask=(qi < L) & (ki < S), other=0.0).to(tl.float32)
        s = tl.where(add == float("-inf"), add, tl.maximum(s + add * LOG2E, -FLT_MAX))
    return s


@triton.jit
def _fwd_blocks(acc, m_i, l_i, q, kp, vp, k_sn, v_sn, mask_p, m_sr, m_sc, rng, rows, lo, hi, L,
                S, qk_scale, d, HEAD: tl.constexpr, BD: tl.constexpr, BM: tl.constexpr,
                BN: tl.constexpr, CAUSAL: tl.constexpr, MASKED: tl.constexpr,
                MASK: tl.constexpr, DROPOUT: tl.constexpr, PRECISION: tl.constexpr):
    """The online softmax over key blocks lo..hi; MASKED: blocks with the key tail or the
    diagonal in them; MASK: the attn_mask's kind (_apply_mask); DROPOUT: `rng` = (key, first
    counter, plane, p) of dropout_keep, the dropped probabilities left out of O but not of
    the softmax's sum.

    The running max starts at -FLT_MAX, not -inf: a row no key of a block may reach keeps
    exp2(-inf - m) = 0 and a rescale of exp2(0) = 1 instead of NaN."""
    for n0 in range(lo, hi, BN):
        n = n0 + tl.arange(0, BN)
        k = _load_rows(kp, n, k_sn, S, d, HEAD, BD, MASKED)
        s = tl.dot(q, tl.trans(k), input_precision=PRECISION) * qk_scale
        s = _apply_mask(s, mask_p, rows[:, None], n[None, :], L, S, m_sr, m_sc, MASK)
        if MASKED:
            ok = (n < S)[None, :]
            if CAUSAL:
                ok = ok & (n[None, :] <= rows[:, None])
            s = tl.where(ok, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.exp2(s - m_new[:, None])
        alpha = tl.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        if DROPOUT:
            p = tl.where(dropout_keep(rng[0], rng[1], rng[2], L, S, rows, n0, rng[3], BM, BN),
                         p, 0.0)
        v = _load_rows(vp, n, v_sn, S, d, HEAD, BD, MASKED)
        acc = _dot_f32(p, v, acc * alpha[:, None], PRECISION)
        m_i = m_new
    return acc, m_i, l_i


@triton.jit
def _attn_fwd_kernel(
        # pointers: queries, keys, values, the attn_mask (or None); the output, the row
        # logsumexp, the float32 output (or None)
        q_ptr, k_ptr, v_ptr, mask_ptr, out_ptr, lse_ptr, out_f_ptr,
        # the score scale; dropout: its probability, 1 / (1 - it), the Philox seed and first
        # counter, the device's [seed, base offset] (None without dropout) and whether to read
        # them from it (1 in a CUDA graph)
        scale, dropout_p, dropout_scale, seed, offset, rng_state_ptr, seed_in_memory,
        # sizes: heads, query rows, key rows
        n_heads, q_len, k_len,
        # strides, in elements, of each operand's batch, head and row dims
        q_batch_stride, q_head_stride, q_row_stride, k_batch_stride, k_head_stride, k_row_stride,
        v_batch_stride, v_head_stride, v_row_stride, o_batch_stride, o_head_stride, o_row_stride,
        # strides, in elements, of the attn_mask's batch, head, query and key dims (0 where
        # it broadcasts)
        m_batch_stride, m_head_stride, m_row_stride, m_col_stride,
        # meta-parameters
        CAUSAL: tl.constexpr, MASK: tl.constexpr, DROPOUT: tl.constexpr, HEAD: tl.constexpr,
        BD: tl.constexpr, PRECISION: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
        GROUP: tl.constexpr, LONGEST_FIRST: tl.constexpr):
    """O and logsumexp (and O in float32 when `out_f` is given, laid out as O) for queries
    block*BM.. of plane bh (_block_and_plane); GROUP query heads share each key/value head.
    A row that no key may reach (every key masked to -inf) gets O = 0 and logsumexp +inf, so
    the backward's P = exp(S - lse) is 0 there: torch's math backend's zeros."""
    block, bh = _block_and_plane(LONGEST_FIRST, CAUSAL)
    start = block * BM
    rows = start + tl.arange(0, BM)
    d = tl.arange(0, BD)
    kp = _head(k_ptr, bh // GROUP, n_heads // GROUP, k_batch_stride, k_head_stride)
    vp = _head(v_ptr, bh // GROUP, n_heads // GROUP, v_batch_stride, v_head_stride)
    qt = _load_rows(_head(q_ptr, bh, n_heads, q_batch_stride, q_head_stride), rows, q_row_stride,
                    q_len, d, HEAD, BD, True)
    mask_p = _mask_plane(mask_ptr, bh, n_heads, m_batch_stride, m_head_stride, MASK)
    key, start_counter = philox_start(seed, offset, rng_state_ptr, seed_in_memory)
    rng = (key, start_counter, bh, dropout_p)
    qk_scale = scale * LOG2E
    m_i = tl.full([BM], -FLT_MAX, tl.float32)
    l_i = tl.zeros([BM], tl.float32)
    acc = tl.zeros([BM, BD], tl.float32)
    full = (k_len // BN) * BN
    end = k_len
    if CAUSAL:
        full = tl.minimum(full, start)
        end = tl.minimum(k_len, start + BM)
    acc, m_i, l_i = _fwd_blocks(acc, m_i, l_i, qt, kp, vp, k_row_stride, v_row_stride, mask_p,
                                m_row_stride, m_col_stride, rng, rows, 0, full, q_len, k_len,
                                qk_scale, d, HEAD, BD, BM, BN, CAUSAL, False, MASK, DROPOUT,
                                PRECISION)
    acc, m_i, l_i = _fwd_blocks(acc, m_i, l_i, qt, kp, vp, k_row_stride, v_row_stride, mask_p,
                                m_row_stride, m_col_stride, rng, rows, full, end, q_len, k_len,
                                qk_scale, d, HEAD, BD, BM, BN, CAUSAL, True, MASK, DROPOUT,
                                PRECISION)
    lse = (m_i + tl.log2(l_i)) * 0.6931471805599453
    if MASK != 0:
        lse = tl.where(l_i == 0.0, float("inf"), lse)
        l_i = tl.where(l_i == 0.0, 1.0, l_i)
    o = acc * div_rn(1.0, l_i)[:, None]
    if DROPOUT:
        o = o * dropout_scale
    plane = bh.to(tl.int64) * q_len
    tl.store(lse_ptr + plane + rows, lse, mask=rows < q_len)
    _store_rows(_head(out_ptr, bh, n_heads, o_batch_stride, o_head_stride), rows, o_row_stride,
                q_len, d, o, HEAD, BD)
    if out_f_ptr is not None:
        _store_rows(_head(out_f_ptr, bh, n_heads, o_batch_stride, o_head_stride), rows,
                    o_row_stride, q_len, d, o, HEAD, BD)


@triton.jit
def _attn_delta_kernel(
        # pointers: the output gradient, the output, Delta; the float32 dQ accumulator to zero
        # (or None)
        do_ptr, o_ptr, delta_ptr, dq_acc_ptr,
        # sizes: heads, query rows
        n_heads, q_len,
        # strides, in elements, of each operand's batch, head and row dims
        do_batch_stride, do_head_stride, do_row_stride, o_batch_stride, o_head_stride,
        o_row_stride,
        # meta-parameters
        HEAD: tl.constexpr, BD: tl.constexpr, BM: tl.constexpr):
    """Delta = rowsum(dO * O) (float32) for rows pid0*BM.. of plane pid1, and zeros in those
    rows of the dQ accumulator when there is one."""
    bh = tl.program_id(1)
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    d = tl.arange(0, BD)
    plane = bh.to(tl.int64) * q_len
    g = _load_rows(_head(do_ptr, bh, n_heads, do_batch_stride, do_head_stride), rows,
                   do_row_stride, q_len, d, HEAD, BD, True)
    y = _load_rows(_head(o_ptr, bh, n_heads, o_batch_stride, o_head_stride), rows, o_row_stride,
                   q_len, d, HEAD, BD, True)
    total = tl.sum(g.to(tl.float32) * y.to(tl.float32), 1)
    tl.store(delta_ptr + plane + rows, total, mask=rows < q_len)
    if dq_acc_ptr is not None:
        _store_rows(dq_acc_ptr + plane * HEAD, rows, HEAD, q_len, d,
                    tl.zeros([BM, BD], tl.float32), HEAD, BD)


@triton.jit
def _lse2(lsep, rows, L, other):
    """The forward's logsumexp of rows `rows` in base 2 (`other` past L), at least -FLT_MAX:
    a row of huge finite mask values has one near -FLT_MAX that the base change may round
    past it."""
    return tl.maximum(tl.load(lsep + rows, mask=rows < L, other=other) * LOG2E, -FLT_MAX)


@triton.jit
def _dkdv_blocks(dk, dv, k, v, qp, dop, lsep, deltap, dqp, mask_p, m_sr, m_sc, rng, q_sm, do_sm,
                 n, n_start, lo, hi, L, S, qk_scale, d, HEAD: tl.constexpr, BD: tl.constexpr,
                 BM: tl.constexpr, BN: tl.constexpr, MASKED: tl.constexpr, MASK: tl.constexpr,
                 DROPOUT: tl.constexpr, PRECISION: tl.constexpr):
    """dK, dV of keys `n` (n_start..) from query blocks lo..hi (MASKED: on the causal
    diagonal); with a float32 dQ accumulator plane `dqp` (None for none), also these keys'
    share dS K of dQ, added to it atomically. DROPOUT: `rng` = (key, first counter, plane, p,
    1 / (1 - p)); dV takes the kept probabilities scaled, and dS the output gradient's share
    through them.

    Query rows past L load zeros and an infinite logsumexp, so their P is 0. Keys past S load
    zeros: their dK, dV are not stored, and with `dqp` their P is zeroed so that they add
    nothing to dQ (exp(-lse) may overflow a half type's dS)."""
    for m0 in range(lo, hi, BM):
        m = m0 + tl.arange(0, BM)
        qT = _load_cols(qp, m, q_sm, L, d, HEAD, BD)
        lse2 = _lse2(lsep, m, L, float("inf"))
        sT = tl.dot(k, qT, input_precision=PRECISION) * qk_scale
        sT = _apply_mask(sT, mask_p, m[None, :], n[:, None], L, S, m_sr, m_sc, MASK)
        pT = tl.exp2(sT - lse2[None, :])
        if MASKED:
            pT = tl.where(m[None, :] >= n[:, None], pT, 0.0)
        if dqp is not None:
            pT = tl.where((n < S)[:, None], pT, 0.0)
        g = _load_rows(dop, m, do_sm, L, d, HEAD, BD, True)
        dpT = tl.dot(v, tl.trans(g), input_precision=PRECISION)
        if DROPOUT:
            keepT = tl.trans(dropout_keep(rng[0], rng[1], rng[2], L, S, m, n_start, rng[3],
                                           BM, BN))
            dv = _dot_f32(tl.where(keepT, pT * rng[4], 0.0), g, dv, PRECISION)
            dpT = tl.where(keepT, dpT * rng[4], 0.0)
        else:
            dv = _dot_f32(pT, g, dv, PRECISION)
        delta = tl.load(deltap + m, mask=m < L, other=0.0)
        dsT = pT * (dpT - delta[None, :])
        dk = _dot_f32(dsT, tl.trans(qT), dk, PRECISION)
        if dqp is not None:
            _add_rows(dqp, m, L, d, _dot_f32(tl.trans(dsT), k, None, PRECISION), HEAD, BD)
    return dk, dv


@triton.jit
def _attn_dkdv_kernel(
        # pointers: queries, keys, values, the attn_mask (or None), the output gradient, the
        # forward's logsumexp, Delta; the key and value gradients, the float32 dQ accumulator
        # (None: the dQ kernel's)
        q_ptr, k_ptr, v_ptr, mask_ptr, do_ptr, lse_ptr, delta_ptr, dk_ptr, dv_ptr, dq_acc_ptr,
        # the score scale and the forward's dropout (see _attn_fwd_kernel)
        scale, dropout_p, dropout_scale, seed, offset, rng_state_ptr, seed_in_memory,
        # sizes: heads, query rows, key rows
        n_heads, q_len, k_len,
        # strides, in elements, of each operand's batch, head and row dims
        q_batch_stride, q_head_stride, q_row_stride, k_batch_stride, k_head_stride, k_row_stride,
        v_batch_stride, v_head_stride, v_row_stride, do_batch_stride, do_head_stride,
        do_row_stride, dk_batch_stride, dk_head_stride, dk_row_stride, dv_batch_stride,
        dv_head_stride, dv_row_stride,
        # strides, in elements, of the attn_mask's batch, head, query and key dims
        m_batch_stride, m_head_stride, m_row_stride, m_col_stride,
        # meta-parameters
        CAUSAL: tl.constexpr, MASK: tl.constexpr, DROPOUT: tl.constexpr, HEAD: tl.constexpr,
        BD: tl.constexpr, PRECISION: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
        GROUP: tl.constexpr, LONGEST_FIRST: tl.constexpr):
    """dK and dV of keys block*BN.. of key/value plane kv (_block_and_plane), summed over its
    GROUP query heads and every query block that sees them (and their share of dQ, unscaled,
    added to the dQ accumulator when there is one)."""
    block, kv = _block_and_plane(LONGEST_FIRST, False)
    start = block * BN
    kv_heads = n_heads // GROUP
    n = start + tl.arange(0, BN)
    d = tl.arange(0, BD)
    kt = _load_rows(_head(k_ptr, kv, kv_heads, k_batch_stride, k_head_stride), n, k_row_stride,
                    k_len, d, HEAD, BD, True)
    vt = _load_rows(_head(v_ptr, kv, kv_heads, v_batch_stride, v_head_stride), n, v_row_stride,
                    k_len, d, HEAD, BD, True)
    dk_acc = tl.zeros([BN, BD], tl.float32)
    dv_acc = tl.zeros([BN, BD], tl.float32)
    key, start_counter = philox_start(seed, offset, rng_state_ptr, seed_in_memory)
    qk_scale = scale * LOG2E
    lo = 0
    if CAUSAL:
        lo = tl.minimum(start + BN, q_len)
    for h in range(GROUP):
        bh = (kv // kv_heads) * n_heads + (kv % kv_heads) * GROUP + h
        qp = _head(q_ptr, bh, n_heads, q_batch_stride, q_head_stride)
        dop = _head(do_ptr, bh, n_heads, do_batch_stride, do_head_stride)
        mask_p = _mask_plane(mask_ptr, bh, n_heads, m_batch_stride, m_head_stride, MASK)
        rng = (key, start_counter, bh, dropout_p, dropout_scale)
        plane = bh.to(tl.int64) * q_len
        dqp = None
        if dq_acc_ptr is not None:
            dqp = dq_acc_ptr + plane * HEAD
        if CAUSAL:
            dk_acc, dv_acc = _dkdv_blocks(dk_acc, dv_acc, kt, vt, qp, dop, lse_ptr + plane,
                                          delta_ptr + plane, dqp, mask_p, m_row_stride,
                                          m_col_stride, rng, q_row_stride, do_row_stride, n,
                                          start, start, lo, q_len, k_len, qk_scale, d, HEAD, BD,
                                          BM, BN, True, MASK, DROPOUT, PRECISION)
        dk_acc, dv_acc = _dkdv_blocks(dk_acc, dv_acc, kt, vt, qp, dop, lse_ptr + plane,
                                      delta_ptr + plane, dqp, mask_p, m_row_stride, m_col_stride,
                                      rng, q_row_stride, do_row_stride, n, start, lo, q_len,
                                      q_len, k_len, qk_scale, d, HEAD, BD, BM, BN, False, MASK,
                                      DROPOUT, PRECISION)
    _store_rows(_head(dk_ptr, kv, kv_heads, dk_batch_stride, dk_head_stride), n, dk_row_stride,
                k_len, d, dk_acc * scale, HEAD, BD)
    _store_rows(_head(dv_ptr, kv, kv_heads, dv_batch_stride, dv_head_stride), n, dv_row_stride,
                k_len, d, dv_acc, HEAD, BD)


@triton.jit
def _dq_blocks(dq, q, g, lse2, delta, kp, vp, k_sn, v_sn, mask_p, m_sr, m_sc, rng, rows, lo, hi,
               L, S, qk_scale, d, HEAD: tl.constexpr, BD: tl.constexpr, BM: tl.constexpr,
               BN: tl.constexpr, MASKED: tl.constexpr, MASK: tl.constexpr,
               DROPOUT: tl.constexpr, PRECISION: tl.constexpr):
    """dQ of queries `rows` from key blocks lo..hi (MASKED: on the causal diagonal).

    Keys past S load zeros and get P = 0: their exp(0 - lse) overflows where every score of
    a row is far below zero (lse < -88), and inf times their zero K is NaN."""
    for n0 in range(lo, hi, BN):
        n = n0 + tl.arange(0, BN)
        kT = _load_cols(kp, n, k_sn, S, d, HEAD, BD)
        s = tl.dot(q, kT, input_precision=PRECISION) * qk_scale
        s = _apply_mask(s, mask_p, rows[:, None], n[None, :], L, S, m_sr, m_sc, MASK)
        p = tl.where((n < S)[None, :], tl.exp2(s - lse2[:, None]), 0.0)
        if MASKED:
            p = tl.where(n[None, :] <= rows[:, None], p, 0.0)
        vT = _load_cols(vp, n, v_sn, S, d, HEAD, BD)
        dp = tl.dot(g, vT, input_precision=PRECISION)
        if DROPOUT:
            keep = dropout_keep(rng[0], rng[1], rng[2], L, S, rows, n0, rng[3], BM, BN)
            dp = tl.where(keep, dp * rng[4], 0.0)
        ds = p * (dp - delta[:, None])
        dq = _dot_f32(ds, tl.trans(kT), dq, PRECISION)
    return dq


@triton.jit
def _attn_dq_kernel(
        # pointers: queries, keys, values, the attn_mask (or None), the output gradient, the
        # forward's logsumexp, Delta; the query gradient
        q_ptr, k_ptr, v_ptr, mask_ptr, do_ptr, lse_ptr, delta_ptr, dq_ptr,
        # the score scale and the forward's dropout (see _attn_fwd_kernel)
        scale, dropout_p, dropout_scale, seed, offset, rng_state_ptr, seed_in_memory,
        # sizes: heads, query rows, key rows
        n_heads, q_len, k_len,
        # strides, in elements, of each operand's batch, head and row dims
        q_batch_stride, q_head_stride, q_row_stride, k_batch_stride, k_head_stride, k_row_stride,
        v_batch_stride, v_head_stride, v_row_stride, do_batch_stride, do_head_stride,
        do_row_stride, dq_batch_stride, dq_head_stride, dq_row_stride,
        # strides, in elements, of the attn_mask's batch, head, query and key dims
        m_batch_stride, m_head_stride, m_row_stride, m_col_stride,
        # meta-parameters
        CAUSAL: tl.constexpr, MASK: tl.constexpr, DROPOUT: tl.constexpr, HEAD: tl.constexpr,
        BD: tl.constexpr, PRECISION: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
        GROUP: tl.constexpr, LONGEST_FIRST: tl.constexpr):
    """dQ of queries block*BM.. of plane bh (_block_and_plane), over every key block they
    see; GROUP query heads share each key/value head."""
    block, bh = _block_and_plane(LONGEST_FIRST, CAUSAL)
    start = block * BM
    rows = start + tl.arange(0, BM)
    d = tl.arange(0, BD)
    plane = bh.to(tl.int64) * q_len
    qt = _load_rows(_head(q_ptr, bh, n_heads, q_batch_stride, q_head_stride), rows, q_row_stride,
                    q_len, d, HEAD, BD, True)
    g = _load_rows(_head(do_ptr, bh, n_heads, do_batch_stride, do_head_stride), rows,
                   do_row_stride, q_len, d, HEAD, BD, True)
    lse2 = _lse2(lse_ptr + plane, rows, q_len, 0.0)
    delta = tl.load(delta_ptr + plane + rows, mask=rows < q_len, other=0.0)
    mask_p = _mask_plane(mask_ptr, bh, n_heads, m_batch_stride, m_head_stride, MASK)
    key, start_counter = philox_start(seed, offset, rng_state_ptr, seed_in_memory)
    rng = (key, start_counter, bh, dropout_p, dropout_scale)
    kp = _head(k_ptr, bh // GROUP, n_heads // GROUP, k_batch_stride, k_head_stride)
    vp = _head(v_ptr, bh // GROUP, n_heads // GROUP, v_batch_stride, v_head_stride)
    qk_scale = scale * LOG2E
    acc = tl.zeros([BM, BD], tl.float32)
    end = k_len
    if CAUSAL:
        end = tl.minimum(start, k_len)
    acc = _dq_blocks(acc, qt, g, lse2, delta, kp, vp, k_row_stride, v_row_stride, mask_p,
                     m_row_stride, m_col_stride, rng, rows, 0, end, q_len, k_len, qk_scale, d,
                     HEAD, BD, BM, BN, False, MASK, DROPOUT, PRECISION)
    if CAUSAL:
        acc = _dq_blocks(acc, qt, g, lse2, delta, kp, vp, k_row_stride, v_row_stride, mask_p,
                         m_row_stride, m_col_stride, rng, rows, end,
                         tl.minimum(start + BM, k_len), q_len, k_len, qk_scale, d, HEAD, BD, BM,
                         BN, True, MASK, DROPOUT, PRECISION)
    _store_rows(_head(dq_ptr, bh, n_heads, dq_batch_stride, dq_head_stride), rows, dq_row_stride,
                q_len, d, acc * scale, HEAD, BD)


@triton.jit
def _attn_dq_cast_kernel(
        # pointers: the float32 dQ accumulator, the query gradient
        dq_acc_ptr, dq_ptr,
        # the score scale
        scale,
        # sizes: heads, query rows
        n_heads, q_len,
        # strides, in elements, of the query gradient's batch, head and row dims
        dq_batch_stride, dq_head_stride, dq_row_stride,
        # meta-parameters
        HEAD: tl.constexpr, BD: tl.constexpr, BM: tl.constexpr):
    """dQ = scale * the accumulated dS K, in dQ's dtype and layout, for rows pid0*BM.. of
    plane pid1 (the one-pass backward's last launch)."""
    bh = tl.program_id(1)
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    d = tl.arange(0, BD)
    acc = _load_rows(dq_acc_ptr + bh.to(tl.int64) * q_len * HEAD, rows, HEAD, q_len, d, HEAD,
                     BD, True)
    _store_rows(_head(dq_ptr, bh, n_heads, dq_batch_stride, dq_head_stride), rows, dq_row_stride,
                q_len, d, acc * scale, HEAD, BD)
