"""Skinny matrix products on the GPU: c = act(a @ b + bias) for a of at most MAX_ROWS rows, the
products of a decoding step (x (M, K) @ W^T with W (N, K) row-major, M the batch's rows).

Such a product reads b (the weight, N*K elements) once and does M multiply-adds per element:
at M = 16 in bfloat16 that is 16 flops a byte, about a twentieth of what an H100's tensor cores
do per byte of HBM bandwidth, so its time is the time to stream b. The goal is HBM's copy
rate, which needs every SM busy with many loads in flight, each a 16-byte vector.

The kernel, tutorial style
--------------------------
Each program owns BN output columns for every row (so b is read once, by one program) and a
range of K: it walks its range in steps of BK, loads a BK x BN tile of b and the BM x BK tile of a
(a is small: it stays in L1/L2), accumulates in float32, then adds the bias, applies the
activation and rounds once to the output dtype (the epilogue of kernels/matmul.py).

- The tile of b is long along b's contiguous axis: 256 x 16 (BK x BN) when b has unit stride
  along K (W^T, the Linear layout), 16 x 256 when along N (x @ W); either way a thread loads
  whole 16-byte vectors and a warp a whole 512-byte run of a row of W.
- One row (M = 1, DOT off): plain FMAs, acc[k, n] += a[k] * b[k, n] in a BK x BN float32 tile;
  the sum over K, across the threads, happens once after the loop. Exact float32 arithmetic, so
  float32 products honour the strict (ieee) precision flag as well as tf32.
- 2 to 16 rows (DOT on; also timed for one row): tl.dot with BM = 16, mma's smallest row tile;
  rows past M are masked zeros. The padded rows cost tensor-core time the loads of b hide.
  MAX_ROWS = 16 for that reason: one 16-row tile holds every row, so each program reads its tile
  of b once; past 16 rows the tiled kernel of kernels/matmul.py with a taller tile is the tool.
- Split K: N / BN programs may be too few to keep 132 SMs streaming (o_proj, N = 2048 in
  16-column blocks: 128 programs, under one per SM), so K is split to give about `programs`
  programs in all (a config value; 0: no split). Each split stores its M x BN float32 partial sum
  in scratch from the stream workspace and bumps an int32 counter of its column block
  (reduce.py's per-stream counters); the program that brings the count to the split count sums
  the partials, runs the epilogue and sets the counter back to 0. Which program is last varies;
  the order of the sum does not (blocks of up to SB splits loaded at once, each summed as a
  tree fixed at compile time, the blocks in order), so the bits do not: no float atomics. One
  launch, no host sync, scratch from the workspace: capturable in a CUDA graph.
- Gated a (GATED, SwiGLU's down projection): a's rows hold K gate then K up columns, and the
  program computes silu(gate) * up as it loads a, rounded to a's dtype as the separate gate
  kernel would write it. Each column block recomputes it (M x K exps: a few thousand while
  decoding, beside a weight of millions of elements), and the step saves that kernel's launch.
- Block sizes: the FMA tiles load 4096 or 8192 elements of b a step at 4 warps, 32 or 64 a
  thread: four or eight 16-byte vectors (bfloat16) in flight per thread. Triton does not
  pipeline loads that feed no dot, so those, and the several programs resident per SM, are
  what keeps HBM busy. The DOT tiles load 4096 or 8192 elements of b a step into shared
  memory with cp.async, num_stages steps in flight while the tensor cores work; BN >= 32 so
  the 4 warps' mma columns are not duplicated. Which tile, DOT or not and how many splits win
  depends on the shape, so kernels/matmul.py times them per shape bucket beside cuBLASLt's
  algorithms and its own tiles (`config_space`).
"""

import ml_dtypes
import numpy as np
import triton
import triton.language as tl

from ..launch import Launch, workspace_views
from ..runtime.array import CUDAArray
from ._math import apply_activation, swiglu_gate, wait_for_prior_grid
from ._strided_indexing import cdiv, next_pow2, placeholder, program_range, stride_arg
from .reduce import split_counters

MAX_ROWS = 16
_DOT_ROWS = 16
# Partial sums the last program of a column block loads at once (32 a thread at 4 warps).
_SUM_TILE = 4096
_TYPES = (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16), np.dtype(np.float32))


@triton.jit
def _load(ptrs, row_mask, col_mask, EVEN_ROWS: tl.constexpr, EVEN_COLS: tl.constexpr):
    """A 2-D tile, masked only along the axes that may run past the matrix (unmasked loads let
    the compiler keep more of them in flight)."""
    if EVEN_ROWS and EVEN_COLS:
        tile = tl.load(ptrs)
    elif EVEN_ROWS:
        tile = tl.load(ptrs, mask=col_mask[None, :], other=0)
    elif EVEN_COLS:
        tile = tl.load(ptrs, mask=row_mask[:, None], other=0)
    else:
        tile = tl.load(ptrs, mask=row_mask[:, None] & col_mask[None, :], other=0)
    return tile


@triton.jit
def _load_a(ptrs, mask, up_offset, MASKED: tl.constexpr, GATED: tl.constexpr):
    """A tile of a, or with GATED silu(gate) * up of the gate tile at `ptrs` and the up tile
    `up_offset` elements on, rounded to a's dtype as silu_mul's output is."""
    if MASKED:
        av = tl.load(ptrs, mask=mask, other=0)
    else:
        av = tl.load(ptrs)
    if GATED:
        if MASKED:
            up = tl.load(ptrs + up_offset, mask=mask, other=0)
        else:
            up = tl.load(ptrs + up_offset)
        av = swiglu_gate(av, up).to(av.dtype)
    return av


@triton.jit
def _partial_product(a_ptr, b_ptr, rm, rn, m_mask, n_mask, k_lo, k_len, up_offset,
                     a_row_stride, a_col_stride, b_row_stride, b_col_stride,
                     DOT: tl.constexpr, PRECISION: tl.constexpr, GATED: tl.constexpr,
                     EVEN_K: tl.constexpr, EVEN_N: tl.constexpr, BM: tl.constexpr,
                     BN: tl.constexpr, BK: tl.constexpr):
    """The BM x BN float32 sum of a[rm, k] * b[k, rn] over k in [k_lo, k_lo + k_len) (a[rm, k]:
    see _load_a)."""
    rk = tl.arange(0, BK)
    b_ptrs = b_ptr + (k_lo + rk)[:, None] * b_row_stride + rn[None, :] * b_col_stride
    if DOT:
        a_ptrs = a_ptr + rm[:, None] * a_row_stride + (k_lo + rk)[None, :] * a_col_stride
        acc = tl.zeros((BM, BN), tl.float32)
    else:
        a_ptrs = a_ptr + (k_lo + rk) * a_col_stride
        acc = tl.zeros((BK, BN), tl.float32)
    for k in range(0, tl.cdiv(k_len, BK)):
        k_mask = rk < k_len - k * BK
        bv = _load(b_ptrs, k_mask, n_mask, EVEN_K, EVEN_N)
        if DOT:
            if EVEN_K:
                a_mask = m_mask[:, None]
            else:
                a_mask = m_mask[:, None] & k_mask[None, :]
            av = _load_a(a_ptrs, a_mask, up_offset, True, GATED)
            acc = tl.dot(av, bv, acc, input_precision=PRECISION)
        else:
            av = _load_a(a_ptrs, k_mask, up_offset, not EVEN_K, GATED)
            acc += av.to(tl.float32)[:, None] * bv.to(tl.float32)
        a_ptrs += BK * a_col_stride
        b_ptrs += BK * b_row_stride
    if not DOT:
        acc = tl.sum(acc, axis=0)[None, :]
    return acc


@triton.jit
def _epilogue(acc, c_ptr, bias_ptr, z_ptr, rm, rn, m_mask, n_mask, c_row_stride, c_col_stride,
              bias_stride, HAS_BIAS: tl.constexpr, KEEP_Z: tl.constexpr, ACT: tl.constexpr):
    """Store act(acc + bias) to c (and acc + bias to z), rounded once to their dtype."""
    if HAS_BIAS:
        acc += tl.load(bias_ptr + rn * bias_stride, mask=n_mask, other=0).to(tl.float32)[None, :]
    c_off = rm[:, None] * c_row_stride + rn[None, :] * c_col_stride
    mask = m_mask[:, None] & n_mask[None, :]
    if KEEP_Z:
        tl.store(z_ptr + c_off, acc.to(z_ptr.dtype.element_ty), mask=mask)
    acc = apply_activation(acc, ACT)
    tl.store(c_ptr + c_off, acc.to(c_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _sum_splits(part_ptr, at, mask, splits, split_stride, BM: tl.constexpr, BN: tl.constexpr,
                SB: tl.constexpr):
    """The sum over the splits of the partial sums at `at` (BM x BN offsets), SB splits a load:
    all of a block's loads in flight at once (one at a time, each would wait for L2), each
    block summed as a tree fixed at compile time, the blocks in order."""
    rs = tl.arange(0, SB)
    acc = tl.zeros((BM, BN), tl.float32)
    for s0 in range(0, splits, SB):
        s = s0 + rs
        tile = tl.load(part_ptr + (s * split_stride)[:, None, None] + at[None, :, :],
                       mask=(s < splits)[:, None, None] & mask[None, :, :], other=0,
                       cache_modifier=".cg")
        acc += tl.sum(tile, axis=0)
    return acc


@triton.jit
def _gemv_kernel(
        # pointers: the operands, the result, the bias (or None), the pre-activation result (or
        # None); the splits' float32 partial sums (splits x M x N) and the column blocks' split
        # counters (None when K is not split)
        a_ptr, b_ptr, c_ptr, bias_ptr, z_ptr, part_ptr, counts_ptr,
        # sizes: c is M x N, the products run over K, each split over split_len of it
        M, N, K, split_len,
        # strides, in elements: of the rows and columns of each matrix, and along the bias
        a_row_stride, a_col_stride, b_row_stride, b_col_stride, c_row_stride, c_col_stride,
        bias_stride,
        # meta-parameters
        HAS_BIAS: tl.constexpr, KEEP_Z: tl.constexpr, ACT: tl.constexpr, DOT: tl.constexpr,
        PRECISION: tl.constexpr, GATED: tl.constexpr, SPLIT: tl.constexpr,
        EVEN_K: tl.constexpr, EVEN_N: tl.constexpr, INDEX64: tl.constexpr, BM: tl.constexpr,
        BN: tl.constexpr, BK: tl.constexpr, SB: tl.constexpr, PDL: tl.constexpr):
    """Columns pid_n*BN.. of c = act(a @ b + bias) for every row, from K split pid_k (see the
    module docstring); with SPLIT the last split of the column block to finish writes them.
    GATED: a's rows hold K gate then K up columns, and the product takes silu(gate) * up."""
    wait_for_prior_grid(PDL)
    pid_k = tl.program_id(1)
    rm = tl.arange(0, BM)
    rn = program_range(BN, INDEX64)
    m_mask = rm < M
    n_mask = rn < N
    k_lo = pid_k * split_len
    acc = _partial_product(a_ptr, b_ptr, rm, rn, m_mask, n_mask, k_lo,
                           tl.minimum(split_len, K - k_lo), K * a_col_stride, a_row_stride,
                           a_col_stride, b_row_stride, b_col_stride, DOT, PRECISION, GATED,
                           EVEN_K, EVEN_N, BM, BN, BK)
    if SPLIT:
        splits = tl.num_programs(1)
        at = rm[:, None] * N + rn[None, :]
        mask = m_mask[:, None] & n_mask[None, :]
        tl.store(part_ptr + pid_k * M * N + at, acc, mask=mask)
        # Every thread's stores precede the count (CTA barrier); the count releases them to the
        # program that sees it reach `splits` and acquires them (acq_rel, GPU scope).
        tl.debug_barrier()
        done = tl.atomic_add(counts_ptr + tl.program_id(0), 1, sem="acq_rel", scope="gpu")
        if done == splits - 1:
            tl.store(counts_ptr + tl.program_id(0), 0)
            acc = _sum_splits(part_ptr, at, mask, splits, M * N, BM, BN, SB)
            _epilogue(acc, c_ptr, bias_ptr, z_ptr, rm, rn, m_mask, n_mask, c_row_stride,
                      c_col_stride, bias_stride, HAS_BIAS, KEEP_Z, ACT)
    else:
        _epilogue(acc, c_ptr, bias_ptr, z_ptr, rm, rn, m_mask, n_mask, c_row_stride,
                  c_col_stride, bias_stride, HAS_BIAS, KEEP_Z, ACT)


def supports(problem):
    """True for the products this kernel takes: float16, bfloat16 or float32, no batch dims
    (a folded batch is fine), at most MAX_ROWS rows, b with a unit stride, no row sums of a."""
    st = problem.strides["b"]
    return (problem.dtype in _TYPES and not problem.batch_sizes and problem.M <= MAX_ROWS
            and (st[-2] == 1 or st[-1] == 1) and problem.arrays.get("row_sum") is None)


# Tiles: (extent along b's contiguous axis, extent across it, warps[, stages]). FMA: 4096 or 8192
# elements; DOT: 8192. Split aims: 1024 programs (about 8 an SM on 132 SMs), 4096 (short
# splits, many programs resident), none.
_FMA_TILES = [(256, 16, 4), (512, 8, 4), (128, 32, 4), (512, 16, 4)]
_DOT_TILES = [(256, 32, 4, 3), (128, 64, 4, 3), (128, 32, 4, 4), (64, 128, 4, 4)]
_PROGRAMS = [1024, 4096, 0]


def config_space(problem):
    """The configs worth timing for `problem`, the untimed pick first: FMA tiles for one row,
    DOT tiles for any, each over the split aims. Each is {"backend": "gemv", "BK", "BN", "DOT",
    "programs", "num_warps", "num_stages"}."""
    k_major = problem.strides["b"][-2] == 1

    def config(along, across, warps, stages=1, dot=False, programs=0):
        bk, bn = (along, across) if k_major else (across, along)
        return {"backend": "gemv", "BK": bk, "BN": bn, "DOT": dot, "programs": programs,
                "num_warps": warps, "num_stages": stages}

    fma = [config(*tile, programs=p) for p in _PROGRAMS for tile in _FMA_TILES]
    dot = [config(*tile, dot=True, programs=p) for p in _PROGRAMS for tile in _DOT_TILES]
    return fma + dot if problem.M == 1 else dot


def heuristic_config(problem):
    """The config for untimed problems: the first of the space."""
    return config_space(problem)[0]


def split(n_blocks, k_steps, programs):
    """(splits, BK steps per split) giving about `programs` programs over `n_blocks` column
    blocks (1 split when they are enough or `programs` is 0); every split but the last is
    whole."""
    if programs <= n_blocks or k_steps <= 1:
        return 1, k_steps
    per = cdiv(k_steps, min(cdiv(programs, n_blocks), k_steps))
    return cdiv(k_steps, per), per


class Plan:
    """The launch of one problem geometry with one config, and the scratch it needs."""

    __slots__ = ("launch", "dims", "splits", "n_blocks", "part_elements", "device")

    def __init__(self, problem, config, target=None):
        M, N, K = problem.M, problem.N, problem.K
        if M > 1 and not config["DOT"]:
            raise ValueError(f"gemv: FMA tiles take one row, not {M}")
        bm = _DOT_ROWS if config["DOT"] else 1
        bn, bk = config["BN"], config["BK"]
        self.n_blocks = cdiv(N, bn)
        self.splits, steps = split(self.n_blocks, cdiv(K, bk), config["programs"])
        self.part_elements = self.splits * M * N if self.splits > 1 else 0
        self.device = problem.device
        ity = _index_type(problem, self.part_elements)
        meta = dict(HAS_BIAS=problem.arrays.get("bias") is not None,
                    KEEP_Z=problem.arrays.get("z") is not None, ACT=problem.act,
                    DOT=config["DOT"], PRECISION=problem.precision, GATED=problem.gated,
                    SPLIT=self.splits > 1,
                    EVEN_K=K % bk == 0, EVEN_N=N % bn == 0, INDEX64=ity == "i64", BM=bm,
                    BN=bn, BK=bk, SB=min(next_pow2(self.splits), max(1, _SUM_TILE // bm // bn)))
        self.launch = Launch(_gemv_kernel, (self.n_blocks, self.splits), meta,
                             config["num_warps"], config["num_stages"], int_type=ity,
                             device=problem.device, target=target, pdl=M == 1)
        st = problem.strides
        self.dims = ((M, N, K, steps * bk),
                     tuple(stride_arg(s) for s in (st["a"][-2], st["a"][-1], st["b"][-2],
                                                   st["b"][-1], st["c"][-2], st["c"][-1],
                                                   st.get("bias", 0))))

    def scratch(self, stream):
        """(partial sums, counters): a view of the stream's workspace (launch.workspace_views)
        and its split counters, or placeholders when only compiling."""
        if not self.part_elements:
            return None, None
        if self.launch.target is not None:
            return (placeholder((self.part_elements,), np.float32),
                    placeholder((self.n_blocks,), np.int32))
        n = self.part_elements
        part = workspace_views(self.device, stream, n * 4, ("gemv", n),
                               lambda workspace: _float32_view(workspace, n))
        return part, split_counters(self.device, stream, self.n_blocks)


def _float32_view(workspace, n):
    """The first n float32 elements of a (uint8) workspace array."""
    return CUDAArray(workspace.storage, (n,), (4,), workspace.offset, np.dtype(np.float32))


def _index_type(problem, part_elements):
    """"i64" when an element offset of an operand or of the partial sums passes int32."""
    limit = 2 ** 31 - 1
    a_cols = problem.K * (2 if problem.gated else 1)
    extents = {"a": (problem.M, a_cols), "b": (problem.K, problem.N),
               "c": (problem.M, problem.N)}
    for role, (rows, cols) in extents.items():
        st = problem.strides[role]
        if abs(st[-2]) * rows + abs(st[-1]) * cols > limit:
            return "i64"
    return "i64" if part_elements > limit else "i32"


def gemv_launch(plan, stream, arrays):
    """The call of _gemv_kernel on the arrays of a Problem (kernels/matmul.py)."""
    part, counts = plan.scratch(stream)
    sizes, strides = plan.dims
    plan.launch(stream,
                # pointers
                arrays["a"], arrays["b"], arrays["c"], arrays.get("bias"), arrays.get("z"), part,
                counts,
                # sizes
                *sizes,
                # strides
                *strides)

