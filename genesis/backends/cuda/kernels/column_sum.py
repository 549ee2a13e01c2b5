"""Column sums on the GPU: a float16, bfloat16 or float32 array summed over leading dims whose
kept dims are contiguous (a Linear layer's bias gradient, grad.sum(0) of (rows, cols)), in one
launch, deterministic, float32 accumulation rounded once to the output type.

reduce.py sends such sums here: its input seen as n_rows x n_cols, the columns contiguous and the
rows at one stride (the reduced dims coalesce into one). GPT-2 small's bias gradients are
(8192, 768 to 3072) bfloat16, 12 to 50 MB: 3 to 12 us at HBM's copy rate (about 4.2 TB/s on an
H100/H200), so the launch's ramp and tail count as much as its streaming.

The kernel, tutorial style
--------------------------
Each program owns BC columns and a split of the rows: it walks its rows in [BR, BC] tiles, each
row of a tile one contiguous run along the columns, adds them into a [BR, BC] float32
accumulator, and sums that over its BR rows once at the end.

- A tile is 16 KB of input, four 16-byte vectors a thread at 8 warps, BC along a row: 512
  bytes where the merge allows it (a warp reads a whole 512-byte run of a row), else 256 or 128.
- The loop is pipelined (STAGES = 4): cp.async copies the next three tiles into shared memory
  while one is summed, 48 KB in flight a program. (Loaded into registers, ptxas issues only two
  of a tile's four vectors before it uses the first.) Rows past the split are masked in every
  step, so its last, partial tile is in the pipeline too; columns only where they run past the
  array (not EVEN_COLS). About 64 registers a thread and 49 KB of shared memory: up to four
  programs resident an SM.
- Splits: the rows are split so that about PROGRAMS programs run in all (two an SM on 132 SMs,
  all resident at once: 96 KB in flight an SM, past the ~30 KB that HBM's latency times its
  rate asks for), every split but the last of equal length, so the SMs finish together. Each
  split stores its BC float32 partial sums in scratch from the stream's workspace and bumps its
  column block's int32 counter (reduce.split_counters); the program that brings it to the split
  count sums the block's partials (_math.sum_splits: SB splits a load, each load's splits
  summed as a tree fixed at compile time, the loads in order) and sets the counter back to 0.
  Which program is last varies; the order of the sum does not, so neither do the bits. One
  launch, no host sync, no float atomics: capturable in a CUDA graph.
- The last program reads splits x BC x 4 bytes alone, in the launch's tail: BC is halved
  (down to 128 bytes of a row) until that is at most MERGE_BYTES (32 KB, one load of 32
  float32 a thread). GPT-2 small: x 768 takes 128 columns (6 blocks x 44 splits, 48 KB a
  program), x 2304 and x 3072 take 256 (9 x 29 and 12 x 22 splits, 144 and 191 KB a program).

Timings: unmeasured. benchmarks/ops.py times the bias gradients beside PyTorch;
benchmarks/column_sum.py times each setting of the sizes above.
"""

import ml_dtypes
import numpy as np
import triton
import triton.language as tl

from ..launch import Launch, workspace_float32
from ._math import sum_splits
from ._strided_indexing import cdiv, next_pow2, placeholder, program_range, stride_arg

# Why these sizes: see the module docstring (a row's bytes a tile at most and at least, a tile's
# bytes, programs in all, bytes of partial sums the last program merges).
ROW_BYTES = 512
MIN_ROW_BYTES = 128
TILE_BYTES = 16384
PROGRAMS = 264
STAGES = 4
MERGE_BYTES = 32768
# Bytes a warp loads per tile: four 16-byte vectors a thread. Partial sums a warp merges per
# load: 32 float32 a thread.
_WARP_BYTES = 2048
_SUM_PER_WARP = 1024
_TYPES = frozenset(np.dtype(t) for t in (np.float16, ml_dtypes.bfloat16, np.float32))


@triton.jit
def _column_partial(x_ptr, cols, col_mask, lo, hi, x_row_stride, EVEN_COLS: tl.constexpr,
                    STAGES: tl.constexpr, BR: tl.constexpr, BC: tl.constexpr):
    """The float32 sums of columns `cols` over rows [lo, hi), BR rows a step, STAGES - 1 steps
    loaded ahead (cp.async into shared memory). Rows past `hi` are masked in every step, so the
    last, partial step is pipelined with the rest; columns only where they run past the array
    (not EVEN_COLS)."""
    rr = tl.arange(0, BR)
    acc = tl.zeros((BR, BC), tl.float32)
    for r0 in tl.range(lo, hi, BR, num_stages=STAGES):
        rows = r0 + rr
        if EVEN_COLS:
            mask = (rows < hi)[:, None]
        else:
            mask = (rows < hi)[:, None] & col_mask[None, :]
        tile = tl.load(x_ptr + rows[:, None] * x_row_stride + cols[None, :], mask=mask, other=0)
        acc += tile.to(tl.float32)
    return tl.sum(acc, axis=0)


@triton.jit
def _column_sum_kernel(
        # pointers: the input, the sums; the splits' float32 partial sums (splits x n_cols) and
        # the column blocks' split counters (None when the rows are not split)
        x_ptr, out_ptr, part_ptr, counts_ptr,
        # sizes: the input is n_rows x n_cols, each split summing split_len of its rows
        n_rows, n_cols, split_len,
        # strides, in elements: between the input's rows (its columns are contiguous)
        x_row_stride,
        # meta-parameters
        SPLIT: tl.constexpr, EVEN_COLS: tl.constexpr, INDEX64: tl.constexpr,
        STAGES: tl.constexpr, BR: tl.constexpr, BC: tl.constexpr, SB: tl.constexpr):
    """Sums of columns pid_c*BC.. over rows [pid_s*split_len, +split_len); with SPLIT the last
    split of the column block to finish sums the splits' partials and writes them."""
    pid_s = tl.program_id(1)
    cols = program_range(BC, INDEX64)
    col_mask = cols < n_cols
    lo = pid_s.to(cols.dtype) * split_len
    acc = _column_partial(x_ptr, cols, col_mask, lo, tl.minimum(lo + split_len, n_rows),
                          x_row_stride, EVEN_COLS, STAGES, BR, BC)
    if SPLIT:
        splits = tl.num_programs(1)
        tl.store(part_ptr + pid_s.to(cols.dtype) * n_cols + cols, acc, mask=col_mask)
        # Every thread's stores precede the count (CTA barrier); the count releases them to the
        # program that sees it reach `splits` and acquires them (acq_rel, GPU scope).
        tl.debug_barrier()
        done = tl.atomic_add(counts_ptr + tl.program_id(0), 1, sem="acq_rel", scope="gpu")
        if done == splits - 1:
            tl.store(counts_ptr + tl.program_id(0), 0)
            total = sum_splits(part_ptr, cols[None, :], col_mask[None, :], splits, n_cols, 1,
                               BC, SB)
            tl.store(out_ptr + cols[None, :], total.to(out_ptr.dtype.element_ty),
                     mask=col_mask[None, :])
    else:
        tl.store(out_ptr + cols, acc.to(out_ptr.dtype.element_ty), mask=col_mask)


def takes(layout, dtype):
    """True for the sums this kernel takes: of float16, bfloat16 or float32 data whose kept dims
    coalesce into one contiguous dim of several elements and whose reduced dims into one
    (`layout` is the input's RowLayout)."""
    return (dtype in _TYPES and len(layout.kept_sizes) == 1 and layout.kept_sizes[0] > 1
            and layout.kept_strides[0][0] == 1 and len(layout.red_sizes) == 1
            and layout.length > 0)


def block_cols(n_cols, itemsize):
    """BC: ROW_BYTES of a row, halved (down to MIN_ROW_BYTES) while the partial sums of a column
    block's splits pass MERGE_BYTES (never wider than the array)."""
    bc = min(ROW_BYTES // itemsize, next_pow2(n_cols))
    while (bc * itemsize > MIN_ROW_BYTES
           and max(1, PROGRAMS // cdiv(n_cols, bc)) * bc * 4 > MERGE_BYTES):
        bc //= 2
    return bc


def row_splits(n_rows, col_blocks, br, bc):
    """Splits of the rows: about PROGRAMS programs in all, each at least two tiles of rows, the
    partial sums a column block's last program merges at most MERGE_BYTES."""
    return max(1, min(PROGRAMS // col_blocks, n_rows // (2 * br), MERGE_BYTES // (4 * bc)))


class Plan:
    """The launch of one column sum geometry (n_rows x n_cols of `dtype`, rows `row_stride`
    elements apart) and the scratch it needs; with a `target`, its launch only compiles."""

    __slots__ = ("col_blocks", "device", "dims", "launch", "splits")

    def __init__(self, n_rows, n_cols, row_stride, dtype, device=0, target=None):
        itemsize = dtype.itemsize
        bc = block_cols(n_cols, itemsize)
        br = min(max(1, TILE_BYTES // itemsize // bc), next_pow2(n_rows))
        self.col_blocks = cdiv(n_cols, bc)
        split_len = cdiv(n_rows, row_splits(n_rows, self.col_blocks, br, bc))
        self.splits = cdiv(n_rows, split_len)
        self.device = device
        warps = max(1, min(8, br * bc * itemsize // _WARP_BYTES))
        limit = 2 ** 31 - 1
        index64 = (n_rows - 1) * row_stride + n_cols > limit or self.splits * n_cols > limit
        sb = min(next_pow2(self.splits), max(1, _SUM_PER_WARP * warps // bc))
        meta = dict(SPLIT=self.splits > 1, EVEN_COLS=n_cols % bc == 0, INDEX64=index64,
                    STAGES=STAGES, BR=br, BC=bc, SB=sb)
        self.launch = Launch(_column_sum_kernel, (self.col_blocks, self.splits), meta, warps,
                             int_type="i64" if index64 else "i32", device=device, target=target)
        self.dims = (n_rows, n_cols, split_len, stride_arg(row_stride))

    def partials(self, stream):
        """The splits' partial sums: a view of the stream's workspace (launch.workspace_float32),
        a placeholder when only compiling, None when the rows are not split."""
        if self.splits == 1:
            return None
        n = self.splits * self.dims[1]
        if self.launch.target is not None:
            return placeholder((n,), np.float32)
        return workspace_float32(self.device, stream, n, "column_sum")


def column_sum_launch(plan, stream, x, out, counts):
    """The call of _column_sum_kernel: `out` gets the column sums of `x`; `counts` holds the
    plan's col_blocks split counters (None when it does not split)."""
    n_rows, n_cols, split_len, row_stride = plan.dims
    plan.launch(stream,
                # pointers
                x, out, plan.partials(stream), counts,
                # sizes
                n_rows, n_cols, split_len,
                # strides
                row_stride)
