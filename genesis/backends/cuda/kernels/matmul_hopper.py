"""The Hopper matmul: a persistent kernel whose operands and result move by TMA, one of the
candidates the matmul dispatcher (kernels/matmul.py) times per shape key on sm_90.

The kernel, tutorial style
--------------------------
One program per SM walks the output tiles tile, tile + NUM_SMS, ... in the same GROUP_M-banded
order as the pointer-load kernel, so a wave of programs shares the tiles of A and B in L2.
For each tile it walks K in steps of BK: the Tensor Memory Accelerator copies a BM x BK block
of A and a BK x BN block of B into shared memory (asynchronously, out-of-bounds rows and
columns read as zeros, so partial tiles and K tails need no masks), and wgmma multiplies them
into a float32 accumulator; the epilogue adds the bias, keeps the pre-activation value
(KEEP_Z), applies the activation, rounds once to the output dtype and stores the tile by TMA.

- Descriptors: each program builds its TMA descriptors on the device
  (`tl.make_tensor_descriptor`) in Triton's global scratch, which the launcher hands out from
  the stream's workspace (launch.ScratchKernel): no host-side encoding per launch, and inside a
  CUDA graph capture the scratch comes from the graph's pool.
- Layouts: TMA reads rows with a unit stride. An operand stored transposed (unit row stride:
  `x.mT`, or a weight W read as W^T) is described as the matrix it is in memory and its block
  transposed in shared memory (A_T, B_T), which wgmma takes as it is for 16-bit types.
- What TMA needs: 16-byte-aligned base addresses, the non-unit stride a multiple of 16 bytes,
  and no batch dims (a batch times one matrix is already folded into one tall product);
  `supports` says where it runs, and where it does not the candidate is not offered.
- Block sizes: 128 x 256 x 64 with 8 warps (two warpgroups, 128 accumulator registers each per
  thread) is the largest tile that keeps three stages of A and B in shared memory
  ((128 + 256) x 64 x 2 bytes x 3 = 144 KB, plus the 64 KB result tile staged for its TMA
  store, within Hopper's 227 KB); 128 x 128 suits products whose N gives 128 x 256 tiles a
  ragged last wave (GPT-2's N = 768: 192 tiles on 132 SMs). EPILOGUE_SPLIT runs the epilogue
  on two BM x BN/2 halves: the staging buffer halves, so that another stage fits, and the
  bias, activation and kept value of a tile whose accumulator takes 128 registers a thread fit
  in the rest (ptxas for sm_90 reports spills without the split). float32 (TF32) takes
  BK = 32: the same bytes per stage.
- Split-K: a product with few output tiles and a long K (a weight gradient: 768 x 768 outputs
  summed over 8192 tokens, 36 tiles of 128 x 128 for 132 SMs) cuts K into SPLIT_K ranges, one
  work unit per tile and range. Each unit stores its float32 partial product in a workspace
  (padded to whole tiles, so that no store is clipped) and a second launch,
  _sum_partials_kernel, adds the SPLIT_K partials in order and runs the epilogue: the result
  is the same from run to run (no atomics), its last bits differing from the unsplit kernel's.
- Warp specialization (`tl.range(warp_specialize=True)`) is not used: Triton 3.6 accepts it
  for sm_90 but compiles the same code without it (no warp-specialized partitions). The loop
  over tiles is `flatten=True`, merged with the K loop, so the loads of the next tile are
  issued while the last K steps of the current one still multiply.
"""

import numpy as np
import triton
import triton.language as tl

from ..launch import Launch
from ..runtime.array import CUDAArray
from ..runtime.device import get_context
from ._math import apply_activation, grouped_tile
from ._strided_indexing import placeholder, stride_arg


@triton.jit
def _operand_block(desc, row, col, TRANSPOSED: tl.constexpr):
    """The block at (row, col) of an operand whose descriptor describes it as stored: itself,
    or (TRANSPOSED) its transpose, whose block at (col, row) is read and transposed back."""
    if TRANSPOSED:
        block = desc.load([col, row]).T
    else:
        block = desc.load([row, col])
    return block


@triton.jit
def _operand_descriptor(ptr, rows, cols, stride, BR: tl.constexpr, BC: tl.constexpr,
                        TRANSPOSED: tl.constexpr):
    """The TMA descriptor of a rows x cols operand with `stride` between its rows (TRANSPOSED:
    between its columns, its rows then being contiguous), for BR x BC blocks."""
    if TRANSPOSED:
        desc = tl.make_tensor_descriptor(ptr, [cols, rows], [stride, 1], [BC, BR])
    else:
        desc = tl.make_tensor_descriptor(ptr, [rows, cols], [stride, 1], [BR, BC])
    return desc


@triton.jit
def _epilogue(acc, row, col, N, bias_ptr, bias_stride, c_desc, z_desc, ACT: tl.constexpr,
              HAS_BIAS: tl.constexpr, KEEP_Z: tl.constexpr):
    """Finish the float32 block `acc` of c at (row, col): add the bias, store the value before
    the activation (KEEP_Z), apply the activation and store the result, each rounded once."""
    if HAS_BIAS:
        rn = col + tl.arange(0, acc.shape[1])
        acc += tl.load(bias_ptr + rn * bias_stride, mask=rn < N, other=0).to(tl.float32)[None, :]
    if KEEP_Z:
        z_desc.store([row, col], acc.to(z_desc.dtype))
    c_desc.store([row, col], apply_activation(acc, ACT).to(c_desc.dtype))


@triton.jit
def _matmul_tma_kernel(
        # pointers: the operands, the result, the bias (or None), the pre-activation result
        # (or None, else laid out as c), the float32 partial products (SPLIT_K > 1)
        a_ptr, b_ptr, c_ptr, bias_ptr, z_ptr, partial_ptr,
        # sizes: c is M x N, the products run over K
        M, N, K,
        # strides, in elements: each matrix's non-unit stride, and along the bias
        a_stride, b_stride, c_stride, bias_stride,
        # meta-parameters
        A_T: tl.constexpr, B_T: tl.constexpr, HAS_BIAS: tl.constexpr, ACT: tl.constexpr,
        PRECISION: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
        GROUP_M: tl.constexpr, EPILOGUE_SPLIT: tl.constexpr, SPLIT_K: tl.constexpr,
        NUM_SMS: tl.constexpr):
    """c = act(a @ b + bias) (z: the value before the activation), tile after tile, by
    NUM_SMS persistent programs. A_T / B_T: the operand is stored transposed (unit stride
    between its rows). SPLIT_K > 1: each unit (tile, K range) stores its float32 product in
    the partial workspace instead, for _sum_partials_kernel to finish."""
    a_desc = _operand_descriptor(a_ptr, M, K, a_stride, BM, BK, A_T)
    b_desc = _operand_descriptor(b_ptr, K, N, b_stride, BK, BN, B_T)
    store_cols: tl.constexpr = BN // 2 if EPILOGUE_SPLIT else BN
    c_desc = tl.make_tensor_descriptor(c_ptr, [M, N], [c_stride, 1], [BM, store_cols])
    z_desc = c_desc  # never stored through without z_ptr
    if z_ptr is not None:
        z_desc = tl.make_tensor_descriptor(z_ptr, [M, N], [c_stride, 1], [BM, store_cols])
    tiles_m = tl.cdiv(M, BM)
    tiles_n = tl.cdiv(N, BN)
    tiles = tiles_m * tiles_n
    k_steps = tl.cdiv(K, BK)
    range_steps = tl.cdiv(k_steps, SPLIT_K)
    if SPLIT_K > 1:
        partial_desc = tl.make_tensor_descriptor(partial_ptr, [SPLIT_K * tiles_m * BM,
                                                               tiles_n * BN],
                                                 [tiles_n * BN, 1], [BM, store_cols])
    # The epilogue counts its own units: the flattened loop's pipeliner then carries no value
    # from a unit's first K step to its last.
    unit_done = tl.program_id(0) - NUM_SMS
    for unit in tl.range(tl.program_id(0), tiles * SPLIT_K, NUM_SMS, flatten=True):
        pid_m, pid_n = grouped_tile(unit % tiles, tiles_m, tiles_n, GROUP_M)
        k_first = (unit // tiles) * range_steps
        acc = tl.zeros((BM, BN), tl.float32)
        for k in range(k_first, tl.minimum(k_first + range_steps, k_steps)):
            a = _operand_block(a_desc, pid_m * BM, k * BK, A_T)
            b = _operand_block(b_desc, k * BK, pid_n * BN, B_T)
            acc = tl.dot(a, b, acc, input_precision=PRECISION)
        unit_done += NUM_SMS
        pid_m, pid_n = grouped_tile(unit_done % tiles, tiles_m, tiles_n, GROUP_M)
        if SPLIT_K > 1:
            row = (unit_done // tiles * tiles_m + pid_m) * BM
            if EPILOGUE_SPLIT:
                halves = tl.permute(tl.reshape(acc, (BM, 2, BN // 2)), (0, 2, 1))
                left, right = tl.split(halves)
                partial_desc.store([row, pid_n * BN], left)
                partial_desc.store([row, pid_n * BN + BN // 2], right)
            else:
                partial_desc.store([row, pid_n * BN], acc)
        elif EPILOGUE_SPLIT:
            halves = tl.permute(tl.reshape(acc, (BM, 2, BN // 2)), (0, 2, 1))
            left, right = tl.split(halves)
            _epilogue(left, pid_m * BM, pid_n * BN, N, bias_ptr, bias_stride, c_desc, z_desc,
                      ACT, HAS_BIAS, z_ptr is not None)
            _epilogue(right, pid_m * BM, pid_n * BN + BN // 2, N, bias_ptr, bias_stride, c_desc,
                      z_desc, ACT, HAS_BIAS, z_ptr is not None)
        else:
            _epilogue(acc, pid_m * BM, pid_n * BN, N, bias_ptr, bias_stride, c_desc, z_desc, ACT,
                      HAS_BIAS, z_ptr is not None)


@triton.jit
def _sum_partials_kernel(
        # pointers: the SPLIT_K partial products, the result, the bias (or None), the
        # pre-activation result (or None, else laid out as c)
        partial_ptr, c_ptr, bias_ptr, z_ptr,
        # sizes: c is M x N, each partial partial_rows x partial_stride (whole tiles)
        M, N, partial_rows,
        # strides, in elements
        partial_stride, c_stride, bias_stride,
        # meta-parameters
        SPLIT_K: tl.constexpr, HAS_BIAS: tl.constexpr, ACT: tl.constexpr, BM: tl.constexpr,
        BN: tl.constexpr):
    """The BM x BN block (pid0, pid1) of c = act(partial_0 + ... + partial_{SPLIT_K-1} +
    bias) (z: the value before the activation), summed in order. BM and BN divide the
    partials' tiles, so their loads need no mask."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    at = rm[:, None] * partial_stride + rn[None, :]
    acc = tl.load(partial_ptr + at)
    for s in range(1, SPLIT_K):
        acc += tl.load(partial_ptr + s * partial_rows * partial_stride + at)
    mask = (rm < M)[:, None] & (rn < N)[None, :]
    if HAS_BIAS:
        acc += tl.load(bias_ptr + rn * bias_stride, mask=rn < N, other=0).to(tl.float32)[None, :]
    out = rm[:, None] * c_stride + rn[None, :]
    if z_ptr is not None:
        tl.store(z_ptr + out, acc.to(z_ptr.dtype.element_ty), mask=mask)
    tl.store(c_ptr + out, apply_activation(acc, ACT).to(c_ptr.dtype.element_ty), mask=mask)


# The sum's blocks: 32 x 128 float32 values a program (4 warps, 32 a thread), dividing the
# partials' tiles (smaller tiles, as the interpreter tests use, take blocks of their size).
SUM_BM, SUM_BN = 32, 128


def _config(bm, bn, bk, warps, stages, split=False, group=8, split_k=1):
    return {"backend": "hopper", "BM": bm, "BN": bn, "BK": bk, "GROUP_M": group,
            "EPILOGUE_SPLIT": split, "SPLIT_K": split_k, "num_warps": warps,
            "num_stages": stages}


# Likeliest winners first (GENESIS_MATMUL_TUNE_LIMIT keeps the first n): shared memory per
# config is (BM + BN) x BK x itemsize x stages plus the staged result tile (halved by the split).
_HALF_SPACE = [_config(128, 256, 64, 8, 3), _config(128, 128, 64, 8, 4),
               _config(128, 256, 64, 8, 4, split=True), _config(128, 128, 64, 4, 4, split=True),
               _config(256, 128, 64, 8, 3, split=True), _config(128, 64, 64, 4, 5),
               _config(64, 128, 64, 4, 5), _config(128, 128, 128, 8, 3)]
_TF32_SPACE = [_config(128, 256, 32, 8, 3, split=True), _config(128, 128, 32, 8, 4),
               _config(128, 128, 32, 4, 4, split=True), _config(128, 64, 32, 4, 5),
               _config(64, 128, 32, 4, 5)]
# Split-K variants of the 128 x 128 tiles: offered where 128 x 128 tiles fill the SMs less than
# twice over and each K range keeps SPLIT_MIN_STEPS steps of 64 or more.
_HALF_SPLIT_SPACE = [_config(128, 128, 64, 4, 4, split=True, split_k=s) for s in (2, 3, 4)] + [
    _config(128, 128, 64, 8, 4, split_k=s) for s in (2, 3, 4)]
_TF32_SPLIT_SPACE = [_config(128, 128, 32, 4, 4, split=True, split_k=s) for s in (2, 3, 4)]
SPLIT_MIN_STEPS = 8
_HALF = ("float16", "bfloat16")


def config_space(problem):
    """The Hopper configurations worth timing for `problem` (none where `supports` says no)."""
    if not supports(problem):
        return []
    return _HALF_SPACE if problem.dtype.name in _HALF else _TF32_SPACE


def split_k_space(problem):
    """The split-K configurations worth timing for `problem`: where the output's tiles are few
    and K long (none elsewhere, or where `supports` says no)."""
    if not supports(problem) or not _few_tiles(problem):
        return []
    return _HALF_SPLIT_SPACE if problem.dtype.name in _HALF else _TF32_SPLIT_SPACE


def _few_tiles(problem):
    """Whether 128 x 128 tiles of c fill the SMs less than twice and K has room for 4 ranges
    of SPLIT_MIN_STEPS steps of 64."""
    tiles = triton.cdiv(problem.M, 128) * triton.cdiv(problem.N, 128)
    return tiles < 2 * _sm_count(problem.device) and problem.K >= 4 * SPLIT_MIN_STEPS * 64


def supports(problem):
    """Whether the kernel can compute `problem`: an sm_90 GPU (its configs are sized for
    Hopper's shared memory and wgmma), 16-bit or TF32 operands laid out as TMA reads them, and
    no epilogue it lacks: row sums (summing a block of a in registers inside the flattened,
    pipelined loop gave wrong products on an H200) and a gated operand."""
    if not _tma_layout(problem) or problem.arrays.get("row_sum") is not None or problem.gated:
        return False
    if problem.dtype.name not in _HALF and problem.precision != "tf32":
        return False
    return is_hopper(problem.device)


def is_hopper(device):
    """Whether `device` is an sm_90 GPU (H100, H200)."""
    return get_context(device).properties.capability[0] == 9


def _tma_layout(problem):
    """No batch dims; a, b and c (and z) at 16-byte addresses with one unit stride (c along
    its rows) and the other a multiple of 16 bytes, and nonzero sizes."""
    if problem.batch_sizes or not (problem.M and problem.N and problem.K):
        return False
    item = problem.dtype.itemsize
    for role in ("a", "b", "c"):
        rows, cols = problem.strides[role]
        other = rows if cols == 1 else cols if role != "c" and rows == 1 else 0
        if other <= 0 or other * item % 16:
            return False
    return all(problem.arrays[r].ptr % 16 == 0 for r in ("a", "b", "c", "z")
               if problem.arrays.get(r) is not None)


# An H100 SXM's SMs: the program count of compile checks (target given, no GPU to ask).
COMPILE_CHECK_SMS = 132


def _sm_count(device):
    return get_context(device).properties.multi_processor_count


def _transposed(strides):
    """Whether an operand with (row, column) `strides` is stored transposed (unit row
    stride, its column stride not 1)."""
    return strides[1] != 1


class _Sum:
    """The second launch of a split-K product: its workspace's shape and the Launch of
    _sum_partials_kernel."""

    __slots__ = ("rows", "cols", "split_k", "launch", "target")

    def __init__(self, problem, config, target):
        bm, bn, split_k = config["BM"], config["BN"], config["SPLIT_K"]
        self.rows = triton.cdiv(problem.M, bm) * bm
        self.cols = triton.cdiv(problem.N, bn) * bn
        self.split_k, self.target = split_k, target
        sum_bm, sum_bn = min(SUM_BM, bm), min(SUM_BN, bn)
        meta = dict(SPLIT_K=split_k, HAS_BIAS=problem.arrays.get("bias") is not None,
                    ACT=problem.act, BM=sum_bm, BN=sum_bn)
        grid = (self.rows // sum_bm, self.cols // sum_bn)
        self.launch = Launch(_sum_partials_kernel, grid, meta, 4, device=problem.device,
                             target=target)

    def workspace(self, device, stream):
        """The float32 partials, SPLIT_K x rows x cols (a placeholder for compile checks)."""
        shape = (self.split_k * self.rows, self.cols)
        if self.target is not None:
            return placeholder(shape, np.float32)
        return CUDAArray.empty(shape, np.float32, device, stream)


def plan(problem, config, target=None):
    """(the Launch of `problem` with `config`, the sizes and strides `launch` passes, the
    _Sum of a split-K config or None)."""
    st = problem.strides
    a_t, b_t = _transposed(st["a"]), _transposed(st["b"])
    sms = COMPILE_CHECK_SMS if target is not None else _sm_count(problem.device)
    split_k = config.get("SPLIT_K", 1)
    units = triton.cdiv(problem.M, config["BM"]) * triton.cdiv(problem.N, config["BN"]) * split_k
    meta = dict(A_T=a_t, B_T=b_t, HAS_BIAS=problem.arrays.get("bias") is not None,
                ACT=problem.act, PRECISION=problem.precision, BM=config["BM"], BN=config["BN"],
                BK=config["BK"], GROUP_M=config["GROUP_M"],
                EPILOGUE_SPLIT=config["EPILOGUE_SPLIT"], SPLIT_K=split_k, NUM_SMS=sms)
    launch = Launch(_matmul_tma_kernel, (min(sms, units),), meta, config["num_warps"],
                    config["num_stages"], device=problem.device, target=target)
    strides = (st["a"][1 if a_t else 0], st["b"][1 if b_t else 0], st["c"][0],
               stride_arg(st.get("bias", 0)))
    summing = _Sum(problem, config, target) if split_k > 1 else None
    return launch, (problem.M, problem.N, problem.K) + strides, summing


def launch(plan_, stream, arrays):
    """The calls of _matmul_tma_kernel (and of _sum_partials_kernel for a split-K config) on
    the arrays of a Problem; `plan_` as `plan` makes it."""
    launch_, dims, summing = plan_
    c, bias, z = arrays["c"], arrays.get("bias"), arrays.get("z")
    partial = None if summing is None else summing.workspace(c.device, stream)
    launch_(stream,
            # pointers
            arrays["a"], arrays["b"], c, bias, z if summing is None else None, partial,
            # sizes, strides
            *dims)
    if summing is not None:
        M, N, _, _, _, c_stride, bias_stride = dims
        summing.launch(stream,
                       # pointers
                       partial, c, bias, z,
                       # sizes, strides
                       M, N, summing.rows, summing.cols, c_stride, bias_stride)
