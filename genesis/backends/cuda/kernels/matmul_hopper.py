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
- Split-K: a product with few output tiles and a long K leaves SMs idle: a weight gradient of
  768 x 768 outputs summed over 8192 tokens has 36 tiles of 128 x 128 for 132 SMs, and one of
  3072 x 768 has 144, a full wave and 12 tiles. Such products cut the K of their last tiles
  into SPLIT_K ranges: the first `whole_tiles` tiles are computed as usual, then every later
  tile is SPLIT_K work units, one per range, each storing its float32 partial product in a
  workspace, and a second launch, _sum_partials_kernel, adds each tile's partials in order and
  runs the epilogue. A config splits every tile 2, 3 or 4 ways, or (SPLIT_K 0) only
  the tiles past the last full wave, into as many ranges as give each SM one (144 tiles: 132
  whole, then 12 tiles of 11 ranges: two waves, the second short), each of 8 K steps or more.
  The result is the same from run to run (no atomics), its last bits differing from the
  unsplit kernel's.
- Warp specialization (WARP_SPECIALIZE, `tl.range(warp_specialize=True)` on the K loop): a
  producer warpgroup issues the TMA loads while two consumer warpgroups, with the registers it
  gives up (setmaxnreg), run wgmma on the two 64-row halves of the tile. Triton 3.6 builds it
  for sm_90 from num_warps=4 (launched as 12 warps) with an unsplit epilogue and one K loop:
  a branch between a whole tile's and a split unit's epilogues stops it, and a second
  specialized loop for the split units takes stages of shared memory of its own (328 KB at
  four stages). So its split configs finish every unit with both epilogues as masked
  pointer stores (`_finish_unit_masked`): a whole tile's result is masked off the workspace,
  a split unit's partial off c. With the tile loop not flattened, it overlaps a tile's
  epilogue with the next tile's loads less; it wins on products with few N tiles and a long
  K (GPT-2's N = 768 and lm_head's forward, 1 to 5% over the best unspecialized config on an
  H200) and loses on others, so both are timed. Five stages gave wrong products on an H200:
  the specialized configs keep three or four. Otherwise the loop over tiles is
  `flatten=True`, merged with the K loop, so the loads of the next tile are issued while the
  last K steps of the current one still multiply.
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
def _bias_row(bias_ptr, rn, N, bias_stride):
    """The bias of columns `rn` as a float32 row (zeros past N), for a block's epilogue."""
    return tl.load(bias_ptr + rn * bias_stride, mask=rn < N, other=0).to(tl.float32)[None, :]


@triton.jit
def _epilogue(acc, row, col, N, bias_ptr, bias_stride, c_desc, z_desc, ACT: tl.constexpr,
              HAS_BIAS: tl.constexpr, KEEP_Z: tl.constexpr):
    """Finish the float32 block `acc` of c at (row, col): add the bias, store the value before
    the activation (KEEP_Z), apply the activation and store the result, each rounded once."""
    if HAS_BIAS:
        acc += _bias_row(bias_ptr, col + tl.arange(0, acc.shape[1]), N, bias_stride)
    if KEEP_Z:
        z_desc.store([row, col], acc.to(z_desc.dtype))
    c_desc.store([row, col], apply_activation(acc, ACT).to(c_desc.dtype))


@triton.jit
def _halves(acc):
    """The left and right BM x BN/2 halves of the block `acc`."""
    halves = tl.permute(tl.reshape(acc, (acc.shape[0], 2, acc.shape[1] // 2)), (0, 2, 1))
    return tl.split(halves)


@triton.jit
def _finish_tile(acc, row, col, N, bias_ptr, bias_stride, c_desc, z_desc, ACT: tl.constexpr,
                 HAS_BIAS: tl.constexpr, KEEP_Z: tl.constexpr, EPILOGUE_SPLIT: tl.constexpr):
    """The epilogue of the tile at (row, col), whole or (EPILOGUE_SPLIT) in two halves."""
    if EPILOGUE_SPLIT:
        left, right = _halves(acc)
        _epilogue(left, row, col, N, bias_ptr, bias_stride, c_desc, z_desc, ACT, HAS_BIAS,
                  KEEP_Z)
        _epilogue(right, row, col + acc.shape[1] // 2, N, bias_ptr, bias_stride, c_desc, z_desc,
                  ACT, HAS_BIAS, KEEP_Z)
    else:
        _epilogue(acc, row, col, N, bias_ptr, bias_stride, c_desc, z_desc, ACT, HAS_BIAS, KEEP_Z)


@triton.jit
def _store_partial(partial_desc, acc, row, EPILOGUE_SPLIT: tl.constexpr):
    """The float32 partial product `acc` as the block at `row` of the workspace."""
    if EPILOGUE_SPLIT:
        left, right = _halves(acc)
        partial_desc.store([row, 0], left)
        partial_desc.store([row, acc.shape[1] // 2], right)
    else:
        partial_desc.store([row, 0], acc)


@triton.jit
def _store_by_pointers(acc, rm, rn, mask, N, c_ptr, c_stride, bias_ptr, bias_stride, z_ptr,
                       ACT: tl.constexpr, HAS_BIAS: tl.constexpr):
    """The epilogue by pointer stores, where `mask`: the float32 block `acc` of c's rows `rm`
    and columns `rn` plus the bias, stored before the activation (into z, when given) and
    after it (into c), each rounded once."""
    if HAS_BIAS:
        acc += _bias_row(bias_ptr, rn, N, bias_stride)
    out = rm[:, None] * c_stride + rn[None, :]
    if z_ptr is not None:
        tl.store(z_ptr + out, acc.to(z_ptr.dtype.element_ty), mask=mask)
    tl.store(c_ptr + out, apply_activation(acc, ACT).to(c_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _finish_unit_masked(acc, whole, row, col, partial_row, M, N, c_ptr, c_stride, bias_ptr,
                        bias_stride, z_ptr, partial_ptr, ACT: tl.constexpr,
                        HAS_BIAS: tl.constexpr):
    """A split config's two epilogues in one, for the warp-specialized kernel (a branch
    between them keeps Triton from specializing the K loop): a whole tile is finished into c
    (and z) by stores masked off for a split unit, whose float32 product goes to the
    workspace's rows partial_row.. by a store masked off for a whole tile."""
    rm = row + tl.arange(0, acc.shape[0])
    rn = col + tl.arange(0, acc.shape[1])
    _store_by_pointers(acc, rm, rn, whole & (rm < M)[:, None] & (rn < N)[None, :], N, c_ptr,
                       c_stride, bias_ptr, bias_stride, z_ptr, ACT, HAS_BIAS)
    pr = partial_row + tl.arange(0, acc.shape[0])
    tl.store(partial_ptr + pr[:, None] * acc.shape[1] + tl.arange(0, acc.shape[1])[None, :], acc,
             mask=(pr >= 0)[:, None] & (not whole))


@triton.jit
def _unit_work(unit, whole_tiles, k_steps, range_steps, SPLIT_K: tl.constexpr):
    """(tile, first K step, end K step) of work unit `unit`: a whole tile below whole_tiles,
    past it one of SPLIT_K K ranges of a split tile."""
    if SPLIT_K == 1:
        return unit, 0, k_steps
    split_unit = tl.maximum(unit - whole_tiles, 0)
    k_first = (split_unit % SPLIT_K) * range_steps
    whole = unit < whole_tiles
    return (tl.where(whole, unit, whole_tiles + split_unit // SPLIT_K),
            tl.where(whole, 0, k_first),
            tl.where(whole, k_steps, tl.minimum(k_first + range_steps, k_steps)))


@triton.jit
def _matmul_tma_kernel(
        # pointers: the operands, the result, the bias (or None), the pre-activation result
        # (or None, else laid out as c), the float32 partial products (SPLIT_K > 1)
        a_ptr, b_ptr, c_ptr, bias_ptr, z_ptr, partial_ptr,
        # sizes: c is M x N, the products run over K; the tiles computed whole come first
        M, N, K, whole_tiles,
        # strides, in elements: each matrix's non-unit stride, and along the bias
        a_stride, b_stride, c_stride, bias_stride,
        # meta-parameters
        A_T: tl.constexpr, B_T: tl.constexpr, HAS_BIAS: tl.constexpr, ACT: tl.constexpr,
        PRECISION: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
        GROUP_M: tl.constexpr, EPILOGUE_SPLIT: tl.constexpr, SPLIT_K: tl.constexpr,
        WARP_SPECIALIZE: tl.constexpr, NUM_SMS: tl.constexpr):
    """c = act(a @ b + bias) (z: the value before the activation), tile after tile, by
    NUM_SMS persistent programs. A_T / B_T: the operand is stored transposed (unit stride
    between its rows). SPLIT_K > 1: each tile from whole_tiles on is SPLIT_K units (tile, K
    range) that store their float32 products in the partial workspace, BM x BN blocks one
    after another, for _sum_partials_kernel to finish."""
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
    units = whole_tiles + (tiles - whole_tiles) * SPLIT_K
    if SPLIT_K > 1 and not WARP_SPECIALIZE:
        partial_desc = tl.make_tensor_descriptor(partial_ptr, [(units - whole_tiles) * BM, BN],
                                                 [BN, 1], [BM, store_cols])
    # The epilogue counts its own units: the flattened loop's pipeliner then carries no value
    # from a unit's first K step to its last.
    unit_done = tl.program_id(0) - NUM_SMS
    for unit in tl.range(tl.program_id(0), units, NUM_SMS, flatten=not WARP_SPECIALIZE):
        tile, k_first, k_end = _unit_work(unit, whole_tiles, k_steps, range_steps, SPLIT_K)
        pid_m, pid_n = grouped_tile(tile, tiles_m, tiles_n, GROUP_M)
        acc = tl.zeros((BM, BN), tl.float32)
        for k in tl.range(k_first, k_end, warp_specialize=WARP_SPECIALIZE):
            a = _operand_block(a_desc, pid_m * BM, k * BK, A_T)
            b = _operand_block(b_desc, k * BK, pid_n * BN, B_T)
            acc = tl.dot(a, b, acc, input_precision=PRECISION)
        unit_done += NUM_SMS
        tile, _, _ = _unit_work(unit_done, whole_tiles, k_steps, range_steps, SPLIT_K)
        pid_m, pid_n = grouped_tile(tile, tiles_m, tiles_n, GROUP_M)
        if SPLIT_K > 1 and WARP_SPECIALIZE:
            _finish_unit_masked(acc, unit_done < whole_tiles, pid_m * BM, pid_n * BN,
                                (unit_done - whole_tiles) * BM, M, N, c_ptr, c_stride, bias_ptr,
                                bias_stride, z_ptr, partial_ptr, ACT, HAS_BIAS)
        elif SPLIT_K > 1:
            if unit_done >= whole_tiles:
                _store_partial(partial_desc, acc, (unit_done - whole_tiles) * BM, EPILOGUE_SPLIT)
            else:
                _finish_tile(acc, pid_m * BM, pid_n * BN, N, bias_ptr, bias_stride, c_desc,
                             z_desc, ACT, HAS_BIAS, z_ptr is not None, EPILOGUE_SPLIT)
        else:
            _finish_tile(acc, pid_m * BM, pid_n * BN, N, bias_ptr, bias_stride, c_desc, z_desc,
                         ACT, HAS_BIAS, z_ptr is not None, EPILOGUE_SPLIT)


@triton.jit
def _sum_partials_kernel(
        # pointers: the partial products, the result, the bias (or None), the pre-activation
        # result (or None, else laid out as c)
        partial_ptr, c_ptr, bias_ptr, z_ptr,
        # sizes: c is M x N; the tiles before whole_tiles were not split
        M, N, whole_tiles,
        # strides, in elements
        c_stride, bias_stride,
        # meta-parameters: the product's tiles and their order, the sum's blocks
        SPLIT_K: tl.constexpr, HAS_BIAS: tl.constexpr, ACT: tl.constexpr,
        TILE_M: tl.constexpr, TILE_N: tl.constexpr, GROUP_M: tl.constexpr, BM: tl.constexpr,
        BN: tl.constexpr):
    """Block pid1 (BM x BN) of split tile whole_tiles + pid0 of c: act(partial_0 + ... +
    partial_{SPLIT_K-1} + bias) (z: the value before the activation), summed in order. The
    partials of split tile t are the TILE_M x TILE_N blocks t * SPLIT_K .. of the workspace."""
    pid_m, pid_n = grouped_tile(whole_tiles + tl.program_id(0), tl.cdiv(M, TILE_M),
                                tl.cdiv(N, TILE_N), GROUP_M)
    blocks_n: tl.constexpr = TILE_N // BN
    r = (tl.program_id(1) // blocks_n) * BM + tl.arange(0, BM)
    col = (tl.program_id(1) % blocks_n) * BN + tl.arange(0, BN)
    at = (tl.program_id(0) * SPLIT_K * TILE_M + r[:, None]) * TILE_N + col[None, :]
    acc = tl.load(partial_ptr + at)
    for s in range(1, SPLIT_K):
        acc += tl.load(partial_ptr + s * TILE_M * TILE_N + at)
    rm, rn = pid_m * TILE_M + r, pid_n * TILE_N + col
    _store_by_pointers(acc, rm, rn, (rm < M)[:, None] & (rn < N)[None, :], N, c_ptr, c_stride,
                       bias_ptr, bias_stride, z_ptr, ACT, HAS_BIAS)


# The sum's blocks: 32 x 128 float32 values a program (4 warps, 32 a thread), dividing the
# product's tiles (smaller tiles, as the interpreter tests use, take blocks of their size).
SUM_BM, SUM_BN = 32, 128


def _config(bm, bn, bk, warps, stages, split=False, group=8, split_k=1, ws=False):
    return {"backend": "hopper", "BM": bm, "BN": bn, "BK": bk, "GROUP_M": group,
            "EPILOGUE_SPLIT": split, "SPLIT_K": split_k, "WARP_SPECIALIZE": ws,
            "num_warps": warps, "num_stages": stages}


# Likeliest winners first (GENESIS_MATMUL_TUNE_LIMIT keeps the first n): shared memory per
# config is (BM + BN) x BK x itemsize x stages plus the staged result tile (halved by the split).
_HALF_SPACE = [_config(128, 256, 64, 8, 3), _config(128, 128, 64, 4, 4, group=4, ws=True),
               _config(128, 128, 64, 8, 4), _config(128, 256, 64, 4, 3, ws=True),
               _config(128, 256, 64, 8, 4, split=True), _config(128, 128, 64, 4, 4, split=True),
               _config(256, 128, 64, 8, 3, split=True), _config(128, 128, 64, 4, 4, ws=True),
               _config(128, 64, 64, 4, 5), _config(64, 128, 64, 4, 5),
               _config(128, 128, 128, 8, 3)]
_TF32_SPACE = [_config(128, 256, 32, 8, 3, split=True), _config(128, 128, 32, 8, 4),
               _config(128, 128, 32, 4, 4, split=True), _config(128, 64, 32, 4, 5),
               _config(64, 128, 32, 4, 5)]
# Split-K variants of the 128 x 128 tiles (split_k 0: the tiles past the last full wave, see
# the module docstring): offered where 128 x 128 tiles fill the SMs less than twice over and K
# is long.
_HALF_SPLIT_SPACE = [_config(128, 128, 64, 4, 4, split=True, split_k=s) for s in (0, 2, 3, 4)] + [
    _config(128, 128, 64, 8, 4, split_k=s) for s in (0, 2, 3, 4)] + [
    _config(128, 128, 64, 4, 4, group=4, split_k=s, ws=True) for s in (0, 2, 3, 4)]
_TF32_SPLIT_SPACE = [_config(128, 128, 32, 4, 4, split=True, split_k=s) for s in (0, 2, 3, 4)]
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
    return tiles < 2 * sm_count(problem.device) and problem.K >= 4 * SPLIT_MIN_STEPS * 64


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


def sm_count(device):
    """The SM count of `device`."""
    return get_context(device).properties.multi_processor_count


def grid_sms(device, target=None):
    """The SMs a persistent kernel's grid covers: `device`'s, or with a compile `target` (no GPU
    to ask) an H100's."""
    return COMPILE_CHECK_SMS if target is not None else sm_count(device)


def _transposed(strides):
    """Whether an operand with (row, column) `strides` is stored transposed (unit row
    stride, its column stride not 1)."""
    return strides[1] != 1


def _split(tiles, sms, split_k, k_steps):
    """(whole tiles, SPLIT_K of the rest) for a config's split_k: every tile cut split_k ways,
    or with 0 the tiles past the last full wave of `sms` programs cut into as many ranges as
    give each program one, each of SPLIT_MIN_STEPS of the `k_steps` or more (none where that
    makes fewer than 2)."""
    if split_k:
        return (0, split_k) if split_k > 1 else (tiles, 1)
    tail = tiles % sms if tiles > sms else tiles
    ranges = min(sms // tail, k_steps // SPLIT_MIN_STEPS) if tail else 1
    return (tiles - tail, ranges) if ranges > 1 else (tiles, 1)


class _Sum:
    """The second launch of a split product: its workspace's shape and the Launch of
    _sum_partials_kernel over the split tiles."""

    __slots__ = ("partials", "tile_m", "tile_n", "launch", "target")

    def __init__(self, problem, config, whole_tiles, split_tiles, split_k, target):
        self.tile_m, self.tile_n = config["BM"], config["BN"]
        self.partials, self.target = split_tiles * split_k, target
        sum_bm, sum_bn = min(SUM_BM, self.tile_m), min(SUM_BN, self.tile_n)
        meta = dict(SPLIT_K=split_k, HAS_BIAS=problem.arrays.get("bias") is not None,
                    ACT=problem.act, TILE_M=self.tile_m, TILE_N=self.tile_n,
                    GROUP_M=config["GROUP_M"], BM=sum_bm, BN=sum_bn)
        grid = (split_tiles, (self.tile_m // sum_bm) * (self.tile_n // sum_bn))
        self.launch = Launch(_sum_partials_kernel, grid, meta, 4, device=problem.device,
                             target=target)

    def workspace(self, device, stream):
        """The float32 partials, tile after tile (a placeholder for compile checks)."""
        shape = (self.partials * self.tile_m, self.tile_n)
        if self.target is not None:
            return placeholder(shape, np.float32)
        return CUDAArray.empty(shape, np.float32, device, stream)


def plan(problem, config, target=None):
    """(the Launch of `problem` with `config`, the sizes and strides `launch` passes, the
    _Sum of a split config or None)."""
    st = problem.strides
    a_t, b_t = _transposed(st["a"]), _transposed(st["b"])
    sms = grid_sms(problem.device, target)
    tiles = triton.cdiv(problem.M, config["BM"]) * triton.cdiv(problem.N, config["BN"])
    whole, split_k = _split(tiles, sms, config.get("SPLIT_K", 1),
                            triton.cdiv(problem.K, config["BK"]))
    units = whole + (tiles - whole) * split_k
    meta = dict(A_T=a_t, B_T=b_t, HAS_BIAS=problem.arrays.get("bias") is not None,
                ACT=problem.act, PRECISION=problem.precision, BM=config["BM"], BN=config["BN"],
                BK=config["BK"], GROUP_M=config["GROUP_M"],
                EPILOGUE_SPLIT=config["EPILOGUE_SPLIT"], SPLIT_K=split_k,
                WARP_SPECIALIZE=config.get("WARP_SPECIALIZE", False), NUM_SMS=sms)
    launch = Launch(_matmul_tma_kernel, (min(sms, units),), meta, config["num_warps"],
                    config["num_stages"], device=problem.device, target=target)
    strides = (st["a"][1 if a_t else 0], st["b"][1 if b_t else 0], st["c"][0],
               stride_arg(st.get("bias", 0)))
    summing = (_Sum(problem, config, whole, tiles - whole, split_k, target) if split_k > 1
               else None)
    return launch, (problem.M, problem.N, problem.K, whole) + strides, summing


def launch(plan_, stream, arrays):
    """The calls of _matmul_tma_kernel (and of _sum_partials_kernel for a split-K config) on
    the arrays of a Problem; `plan_` as `plan` makes it."""
    launch_, dims, summing = plan_
    c, bias, z = arrays["c"], arrays.get("bias"), arrays.get("z")
    partial = None if summing is None else summing.workspace(c.device, stream)
    launch_(stream,
            # pointers
            arrays["a"], arrays["b"], c, bias, z, partial,
            # sizes, strides
            *dims)
    if summing is not None:
        M, N, _, whole_tiles, _, _, c_stride, bias_stride = dims
        summing.launch(stream,
                       # pointers
                       partial, c, bias, z,
                       # sizes, strides
                       M, N, whole_tiles, c_stride, bias_stride)
