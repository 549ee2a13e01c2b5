"""Matrix products on the GPU: matmul (numpy's 1-D, 2-D and batch-broadcast rules) and the fused
linear layer (x @ W^T + bias, then an optional activation, in one kernel).

The kernel, tutorial style
--------------------------
Each program computes one BM x BN tile of one output matrix C = A @ B: it walks K in steps of
BK, loads a BM x BK tile of A and a BK x BN tile of B and accumulates their product in float32
registers (`tl.dot` runs on tensor cores: wgmma on Hopper), then adds the bias, applies the
activation and rounds once to the output dtype (the "epilogue").

- Operands are read where they lie: every operand has a row and a column stride (a transposed
  view is just swapped strides) and batch strides over up to three coalesced batch dims (0 for a
  broadcast batch dim), so `x.mT @ y` or a batch of strided views costs no copy. A unit stride
  is a compile-time 1, so Triton emits 16-byte vector loads along it; strides and sizes that are
  multiples of 16 are declared so (divisibility specialization).
- Block sizes: a tile of BM x BN outputs reuses each loaded element of A BN times and each of B
  BM times, so bigger tiles mean less memory traffic per flop, up to what registers and shared
  memory hold (num_stages tiles of A and B are in flight in shared memory while the tensor cores
  work: (BM + BN) * BK * itemsize * num_stages bytes, 228 KB per SM on Hopper). 128 x 256 x 64
  with 8 warps is the usual winner for large half-precision products; small or skinny problems
  want smaller tiles so that enough programs fill the 132 SMs. The best choice depends on the
  shape, so it is autotuned per shape bucket (backends/cuda/autotune.py) over `tensor_core_space`.
- Program order: programs are grouped GROUP_M tile-rows at a time (consecutive programs sweep a
  GROUP_M-tall band of C column by column), so the tiles of A and B they load are still in L2.
- Batches: one 1-D grid of batch x tiles programs (no 65535 grid-y limit); a batch of matrices
  times one matrix (Linear on 3-D input) is folded into one tall product first.
- float32 is strict IEEE (`input_precision="ieee"`, FMA-based) unless
  `genesis.backends.cuda.matmul.allow_tf32` is set; a caller may decide instead (`allow_tf32`
  of matmul_arrays, matmul_plan and the kernels: the recurrent layers follow
  genesis.backends.cudnn.allow_tf32, as PyTorch's cuDNN RNN does). float64 and integer products
  use a plain broadcast-multiply-sum tile loop (float64 / wrapping integer arithmetic, as
  PyTorch).

Dispatch: for float16, bfloat16 and float32 the dispatcher may also use cuBLASLt
(backends/cuda/libraries.py) and, for skinny products (at most gemv.MAX_ROWS rows, no batch
dims, a weight with a unit stride: a decoding step's projections), the bandwidth-bound kernel
of kernels/gemv.py. Per shape key (sizes rounded up, `_bucket`; dtype, precision,
layouts, GPU) it times the candidates once (the gemv configs, cuBLASLt's algorithms, the
Triton tiles; for skinny products only tiles at most SKINNY_TILE_ROWS tall), keeps the winner
on disk (backends/cuda/autotune.py) and, per exact geometry, the chosen launch in memory.
Whether a product is worth timing: a skinny product's time is the read of b, so it is timed
from TUNE_MIN_BYTES of b; any other from TUNE_MIN_WORK multiply-adds, and from
SMALL_TUNE_MIN_WORK its heuristic Triton tile alone against cuBLASLt's algorithms (no extra
compiles; a graphed small model's step is made of such products). Untimed, the heuristic config
runs: gemv's for skinny products, else the Triton tile's.
On Hopper GPUs the timed candidates also include the persistent TMA kernel of
kernels/matmul_hopper.py, where it can run the product (supports); it is never the untimed pick.
Environment: GENESIS_MATMUL_BACKEND=auto|triton|tile|hopper|cublaslt (triton: the Triton
kernels, gemv and the Hopper kernel included; tile: the same without the Hopper kernel;
hopper: the Hopper kernel alone where it can run, else as triton; cublaslt: used wherever it
can run the product; forced backends tune under keys of their own),
GENESIS_MATMUL_AUTOTUNE=0 (no timing), GENESIS_MATMUL_TUNE_LIMIT=n (time only the heuristic's
pick and the next configs, n in all of the Triton tiles, n of the Hopper kernel's, n of its
split-K ones and n of the gemv configs).
"""

import math
import os
import warnings

import ml_dtypes
import numpy as np
import triton
import triton.language as tl

from ....dispatch import register
from .. import matmul as flags
from ..array_ops import as_strided, contiguous
from ..autotune import AutoTuner
from ..runtime.array import CUDAArray, contiguous_byte_strides
from ..runtime.device import activate
from ..runtime.stream import current_stream_handle
from ..launch import Const, Launch, LaunchCache
from . import gemv, matmul_hopper
from ._math import apply_activation, grouped_tile, swiglu_gate
from ._strided_indexing import cdiv, coalesce, select, stride_arg
from .reduce import reduce

ACTIVATIONS = {None: 0, "relu": 1, "gelu": 2, "gelu_tanh": 3, "silu": 4}
MAX_BATCH_DIMS = 3
_HALF = (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16))
_TENSOR_CORE = _HALF + (np.dtype(np.float32),)


@triton.jit
def _batch_offset(batch, size1, size2, s0, s1, s2, BDIM: tl.constexpr):
    """Element offset (int64) of batch entry `batch` over up to three batch dims."""
    rest = batch.to(tl.int64)
    off = rest * 0
    if BDIM >= 3:
        off += (rest % size2) * s2
        rest = rest // size2
    if BDIM >= 2:
        off += (rest % size1) * s1
        rest = rest // size1
    return off + rest * s0


@triton.jit
def _matmul_kernel(
        # pointers: the operands, the result, the bias (or None), the pre-activation result
        # (or None), a summed over k (or None)
        a_ptr, b_ptr, c_ptr, bias_ptr, z_ptr, row_sum_ptr,
        # sizes: c is M x N, the products run over K; the coalesced batch dims (size0 is never
        # read)
        M, N, K, batch_size1, batch_size2,
        # strides, in elements: over the batch dims, then of the rows and columns of each
        # matrix, and along the bias
        a_batch_stride0, a_batch_stride1, a_batch_stride2,
        b_batch_stride0, b_batch_stride1, b_batch_stride2,
        c_batch_stride0, c_batch_stride1, c_batch_stride2,
        a_row_stride, a_col_stride, b_row_stride, b_col_stride, c_row_stride, c_col_stride,
        bias_stride,
        # meta-parameters
        BDIM: tl.constexpr, HAS_BIAS: tl.constexpr, KEEP_Z: tl.constexpr, ACT: tl.constexpr,
        DOT: tl.constexpr, PRECISION: tl.constexpr, ACC: tl.constexpr, GATED: tl.constexpr,
        EVEN_K: tl.constexpr, INDEX64: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
        BK: tl.constexpr, GROUP_M: tl.constexpr):
    """One BM x BN tile of c[batch] = act(a[batch] @ b[batch] + bias) (z: the value before the
    activation, when KEEP_Z). With a row_sum_ptr (no batch), the programs of the first tile
    column also sum the rows of a they load: a bias gradient when a is dY^T. GATED: a's rows
    hold K gate then K up columns, and the product takes silu(gate) * up (SwiGLU's down
    projection), rounded to a's dtype as silu_mul's output is."""
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BM)
    tiles_n = tl.cdiv(N, BN)
    per_batch = tiles_m * tiles_n
    batch = pid // per_batch
    tile = pid % per_batch
    pid_m, pid_n = grouped_tile(tile, tiles_m, tiles_n, GROUP_M)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    if INDEX64:
        rm = rm.to(tl.int64)
        rn = rn.to(tl.int64)
    m_mask = rm < M
    n_mask = rn < N
    a_ptrs = (a_ptr + _batch_offset(batch, batch_size1, batch_size2, a_batch_stride0,
                                    a_batch_stride1, a_batch_stride2, BDIM)
              + rm[:, None] * a_row_stride + rk[None, :] * a_col_stride)
    b_ptrs = (b_ptr + _batch_offset(batch, batch_size1, batch_size2, b_batch_stride0,
                                    b_batch_stride1, b_batch_stride2, BDIM)
              + rk[:, None] * b_row_stride + rn[None, :] * b_col_stride)
    acc = tl.zeros((BM, BN), ACC)
    a_total = tl.zeros((BM,), ACC)
    for k in range(0, tl.cdiv(K, BK)):
        if EVEN_K:
            a_mask = m_mask[:, None]
            bv = tl.load(b_ptrs, mask=n_mask[None, :], other=0)
        else:
            left = K - k * BK
            a_mask = m_mask[:, None] & (rk[None, :] < left)
            bv = tl.load(b_ptrs, mask=(rk[:, None] < left) & n_mask[None, :], other=0)
        av = tl.load(a_ptrs, mask=a_mask, other=0)
        if GATED:
            up = tl.load(a_ptrs + K * a_col_stride, mask=a_mask, other=0)
            av = swiglu_gate(av, up).to(av.dtype)
        if DOT:
            acc = tl.dot(av, bv, acc, input_precision=PRECISION)
        else:
            acc += tl.sum(av.to(ACC)[:, :, None] * bv.to(ACC)[None, :, :], axis=1)
        if row_sum_ptr is not None:
            if pid_n == 0:
                a_total += tl.sum(av.to(ACC), axis=1)
        a_ptrs += BK * a_col_stride
        b_ptrs += BK * b_row_stride
    if row_sum_ptr is not None:
        if pid_n == 0:
            tl.store(row_sum_ptr + rm, a_total.to(row_sum_ptr.dtype.element_ty), mask=m_mask)
    if HAS_BIAS:
        acc += tl.load(bias_ptr + rn * bias_stride, mask=n_mask, other=0).to(ACC)[None, :]
    c_off = (_batch_offset(batch, batch_size1, batch_size2, c_batch_stride0, c_batch_stride1,
                           c_batch_stride2, BDIM)
             + rm[:, None] * c_row_stride + rn[None, :] * c_col_stride)
    mask = m_mask[:, None] & n_mask[None, :]
    if KEEP_Z:
        tl.store(z_ptr + c_off, acc.to(z_ptr.dtype.element_ty), mask=mask)
    acc = apply_activation(acc, ACT)
    tl.store(c_ptr + c_off, acc.to(c_ptr.dtype.element_ty), mask=mask)


def _config(bm, bn, bk, warps, stages, group=8):
    return {"BM": bm, "BN": bn, "BK": bk, "GROUP_M": group, "num_warps": warps,
            "num_stages": stages}


_HALF_SPACE = [_config(128, 256, 64, 8, 3), _config(256, 128, 64, 8, 3),
               _config(128, 256, 64, 8, 4), _config(128, 128, 64, 8, 4),
               _config(128, 128, 64, 4, 4), _config(128, 128, 128, 8, 3),
               _config(64, 256, 64, 4, 4), _config(128, 64, 64, 4, 4),
               _config(64, 128, 64, 4, 4), _config(64, 64, 64, 4, 5),
               _config(64, 64, 32, 4, 4), _config(32, 64, 64, 4, 4, 1),
               _config(16, 64, 128, 4, 4, 1)]
_TF32_SPACE = [_config(128, 256, 32, 8, 3), _config(256, 128, 32, 8, 3),
               _config(128, 128, 32, 8, 4), _config(128, 128, 32, 4, 4),
               _config(128, 64, 32, 4, 4), _config(64, 128, 32, 4, 4),
               _config(64, 64, 32, 4, 4), _config(32, 64, 32, 4, 4, 1),
               _config(16, 64, 64, 4, 4, 1)]
_IEEE_SPACE = [_config(128, 128, 16, 8, 3), _config(128, 64, 16, 8, 3),
               _config(64, 128, 16, 8, 3), _config(64, 64, 32, 4, 3),
               _config(64, 64, 16, 4, 3), _config(32, 64, 32, 4, 3, 1),
               _config(16, 64, 32, 4, 3, 1)]
_SIMPLE_SPACE = [_config(32, 32, 8, 4, 2), _config(16, 32, 8, 4, 2, 1)]


def config_space(dtype, precision):
    """The Triton configurations worth timing for a dtype (float32: per precision)."""
    if dtype in _HALF:
        return _HALF_SPACE
    if dtype == np.float32:
        return _TF32_SPACE if precision == "tf32" else _IEEE_SPACE
    return _SIMPLE_SPACE


def heuristic_config(problem):
    """A reasonable config without timing: the largest tile that still gives every SM work."""
    space = _tile_space(problem)
    for config in space:
        tiles = cdiv(problem.M, config["BM"]) * cdiv(problem.N, config["BN"]) * problem.batch
        if tiles >= 132 and config["BK"] <= max(problem.K, 16):
            return config
    return space[-1]


# Skinny products (gemv.supports) pad every row tile taller than their rows: only tiles this
# tall are worth timing for them.
SKINNY_TILE_ROWS = 32


def _tile_space(problem):
    """config_space, for skinny products its tiles at most SKINNY_TILE_ROWS tall."""
    space = config_space(problem.dtype, problem.precision)
    if gemv.supports(problem):
        space = [c for c in space if c["BM"] <= SKINNY_TILE_ROWS] or space[-1:]
    return space


class Problem:
    """A product c = act(a @ b + bias) in kernel terms: M, N, K, up to MAX_BATCH_DIMS batch dims
    and each operand's element strides (batch strides, then row and column); arrays by role
    ("a", "b", "c", "bias", "z", and "row_sum": where given, a's rows summed over k, written
    beside c). `gated`: a's rows hold K gate then K up columns and the product takes
    silu(gate) * up for a (a's strides are the gate half's). `allow_tf32`: whether a float32
    product runs TF32 (None: genesis.backends.cuda.matmul.allow_tf32)."""

    __slots__ = ("M", "N", "K", "batch_sizes", "strides", "arrays", "dtype", "act", "gated",
                 "precision", "device")

    def __init__(self, M, N, K, batch_sizes, strides, arrays, act=0, gated=False,
                 allow_tf32=None):
        self.M, self.N, self.K = M, N, K
        self.batch_sizes, self.strides, self.arrays = tuple(batch_sizes), strides, arrays
        self.dtype = arrays["a"].dtype
        self.act, self.gated = act, gated
        self.device = arrays["c"].device
        tf32 = _tf32(allow_tf32) and self.dtype == np.float32
        self.precision = "tf32" if tf32 or self.dtype in _HALF else "ieee"

    def with_arrays(self, arrays):
        """The same problem over other arrays of the same geometry."""
        other = object.__new__(Problem)
        other.M, other.N, other.K, other.batch_sizes = self.M, self.N, self.K, self.batch_sizes
        other.strides, other.dtype, other.act, other.gated = (self.strides, self.dtype,
                                                              self.act, self.gated)
        other.precision, other.device, other.arrays = self.precision, self.device, arrays
        return other

    @property
    def batch(self):
        n = 1
        for s in self.batch_sizes:
            n *= s
        return n

    def geometry(self):
        """Everything a compiled launch depends on (its cache key, with the config)."""
        arrays = self.arrays
        aligned = tuple(None if arrays.get(r) is None else arrays[r].ptr % 16 == 0
                        for r in ("a", "b", "c", "bias", "z", "row_sum"))
        return (self.M, self.N, self.K, self.batch_sizes, tuple(sorted(self.strides.items())),
                self.dtype, self.act, self.gated, self.precision, aligned, self.device)

    def tuning_key(self):
        """The autotuning bucket: sizes rounded up (`_bucket`), the dtype, precision,
        operand layouts (which strides are unit) and the device's name."""
        from ..runtime.device import get_context
        s = self.strides
        layout = "".join("r" if s[x][-1] == 1 else "c" if s[x][-2] == 1 else "s"
                         for x in ("a", "b"))
        key = (get_context(self.device).properties.name, self.dtype.name, self.precision,
               layout, _bucket(self.batch), _bucket(self.M), _bucket(self.N), _bucket(self.K))
        if self.arrays.get("row_sum") is not None:
            key += ("row_sum",)
        if self.gated:
            key += ("gated",)
        if gemv.supports(self):
            return key + ("gemv",)
        return key + ("tma",) if matmul_hopper.supports(self) else key


def _tf32(allow_tf32):
    """Whether float32 products run TF32: `allow_tf32`, or where None the matmul flag."""
    return flags.allow_tf32 if allow_tf32 is None else bool(allow_tf32)


def _bucket(n):
    """n rounded up to a power of two up to 1024 and above to a quarter of one (1280, 1536,
    1792, 2048, 2560, ...): products whose tile counts differ much, as GPT-2's 2304- and
    3072-wide layers (108 and 144 tiles of 128 x 128 on 132 SMs), tune apart."""
    if n <= 1024:
        return 1 << max(n - 1, 0).bit_length()
    quarter = 1 << (n - 1).bit_length() - 3
    return -(-n // quarter) * quarter


def _index_type(problem):
    limit = 2 ** 31 - 1
    a_cols = problem.K * (2 if problem.gated else 1)
    for role, (rows, cols) in (("a", (problem.M, a_cols)), ("b", (problem.K, problem.N)),
                               ("c", (problem.M, problem.N))):
        st = problem.strides[role]
        if abs(st[-2]) * rows + abs(st[-1]) * cols > limit:
            return "i64"
    return "i32"


def _matmul_plan(problem, config, target=None):
    """(launch of `problem` with `config`, the sizes and strides _matmul_launch passes)."""
    ity = _index_type(problem)
    dot = problem.dtype in _TENSOR_CORE
    arrays, st = problem.arrays, problem.strides
    bdim = len(problem.batch_sizes)
    sizes = list(problem.batch_sizes) + [1] * (MAX_BATCH_DIMS - bdim)
    batch_sizes = tuple(sizes[d] if d < bdim else Const(1) for d in (1, 2))
    batch_strides = tuple(stride_arg(s) for role in ("a", "b", "c")
                          for s in list(st[role][:-2]) + [0] * (MAX_BATCH_DIMS - bdim))
    strides = tuple(stride_arg(s) for s in (st["a"][-2], st["a"][-1], st["b"][-2], st["b"][-1],
                                            st["c"][-2], st["c"][-1], st.get("bias", 0)))
    acc = {np.dtype(np.float64): tl.float64, np.dtype(np.int64): tl.int64}.get(
        problem.dtype, tl.float32 if problem.dtype.kind == "f" or dot else tl.int32)
    meta = dict(BDIM=bdim, HAS_BIAS=arrays.get("bias") is not None,
                KEEP_Z=arrays.get("z") is not None, ACT=problem.act, DOT=dot,
                PRECISION=problem.precision, ACC=acc, GATED=problem.gated,
                EVEN_K=problem.K % config["BK"] == 0,
                INDEX64=ity == "i64", BM=config["BM"], BN=config["BN"], BK=config["BK"],
                GROUP_M=config["GROUP_M"])
    grid = (problem.batch * cdiv(problem.M, config["BM"]) * cdiv(problem.N, config["BN"]),)
    launch = Launch(_matmul_kernel, grid, meta, config["num_warps"], config["num_stages"],
                    int_type=ity, types=_BATCH_TYPES, device=problem.device, target=target)
    return launch, ((problem.M, problem.N, problem.K) + batch_sizes, batch_strides + strides)


# Batch sizes and strides are int64 (a batch may span more than 2^31 elements).
_BATCH_TYPES = {"batch_size1": "i64", "batch_size2": "i64",
                **{f"{x}_batch_stride{d}": "i64" for x in "abc" for d in range(MAX_BATCH_DIMS)}}


def _matmul_launch(launch, dims, stream, arrays):
    """The call of _matmul_kernel on the arrays of a Problem; `dims` as _matmul_plan makes
    them."""
    sizes, strides = dims
    launch(stream,
           # pointers
           arrays["a"], arrays["b"], arrays["c"], arrays.get("bias"), arrays.get("z"),
           arrays.get("row_sum"),
           # sizes
           *sizes,
           # strides
           *strides)


_plans = LaunchCache()


_tuner = AutoTuner("matmul")
_chosen = {}
TUNE_MIN_WORK = 1 << 27
SMALL_TUNE_MIN_WORK = 1 << 20
# 2 MB of b, 0.6 us of an H100's HBM time: below it a product's time is mostly the launch's and
# any config does. GPT-2 small's decode projections (bf16) are timed from 768 x 2304 (3.5 MB).
TUNE_MIN_BYTES = 1 << 21


def backend_choice():
    """GENESIS_MATMUL_BACKEND: "auto" (default), "triton", "tile", "hopper" or "cublaslt"."""
    choice = os.environ.get("GENESIS_MATMUL_BACKEND", "auto").lower()
    if choice not in _BACKENDS:
        raise ValueError("GENESIS_MATMUL_BACKEND must be auto, triton, tile, hopper or cublaslt, "
                         f"not {choice!r}")
    return choice


_BACKENDS = ("auto", "triton", "tile", "hopper", "cublaslt")


def _limited(space):
    """The first GENESIS_MATMUL_TUNE_LIMIT configs of `space` (all when unset or 0)."""
    limit = int(os.environ.get("GENESIS_MATMUL_TUNE_LIMIT", "0"))
    return space[:limit] if limit > 0 else space


def _triton_space(problem):
    """The Triton tiles to time, the heuristic's pick first; GENESIS_MATMUL_TUNE_LIMIT=n keeps
    the first n (benchmarks use it to bound tuning time)."""
    first = heuristic_config(problem)
    return _limited([first] + [c for c in _tile_space(problem) if c != first])


def _hopper_space(problem, choice):
    """The Hopper kernel's configs to time (none where it cannot run, for skinny products, or
    where `choice` leaves it out), then its split-K ones; each list limited as _triton_space."""
    if choice in ("tile", "cublaslt") or gemv.supports(problem):
        return []
    return (_limited(matmul_hopper.config_space(problem))
            + _limited(matmul_hopper.split_k_space(problem)))


def _gemv_space(problem):
    """gemv's configs to time for a skinny product, its heuristic's pick first (none for other
    products); limited as _triton_space."""
    return _limited(gemv.config_space(problem)) if gemv.supports(problem) else []


def _timing(problem, lt):
    """What of the space a product is worth timing: "all"; "tile" (the heuristic Triton tile
    against cuBLASLt's algorithms, `lt`: they need no compiling); or None. Skinny products from
    TUNE_MIN_BYTES of b, others from TUNE_MIN_WORK multiply-adds ("tile" from
    SMALL_TUNE_MIN_WORK); nothing with GENESIS_MATMUL_AUTOTUNE=0."""
    if os.environ.get("GENESIS_MATMUL_AUTOTUNE", "1") == "0":
        return None
    if gemv.supports(problem):
        return "all" if problem.N * problem.K * problem.dtype.itemsize >= TUNE_MIN_BYTES else None
    work = problem.M * problem.N * problem.K * problem.batch
    if work >= TUNE_MIN_WORK:
        return "all"
    return "tile" if lt and work >= SMALL_TUNE_MIN_WORK else None


def _plan(problem, choice):
    """(configs to time, configs to fall back on, in order). gemv's configs lead for skinny
    products; cuBLASLt joins when it can run the problem and is not excluded, each of the
    heuristic's best algorithms (libraries.ALGORITHMS) timed; forced, its first algorithm runs
    untimed (gemv and Triton only where it fails). The Hopper kernel's configs are timed after
    the tiles where it can run (forced, alone). What is timed follows `_timing`; products not
    worth timing run the first config that works, the heuristic's."""
    from .. import libraries
    gemv_configs, triton_configs = _gemv_space(problem), _triton_space(problem)
    hopper_configs = _hopper_space(problem, choice)
    if choice == "hopper" and hopper_configs:
        return hopper_configs if _timing(problem, False) else [], hopper_configs + triton_configs
    kernels = gemv_configs[:1] + triton_configs
    lt = (choice in ("auto", "cublaslt") and libraries.cublaslt_usable()
          and libraries.cublaslt_supports(problem))
    lt_first = [{"backend": "cublaslt", "algo": 0}] if lt else []
    if choice == "cublaslt" and lt:
        return [], lt_first + kernels
    timing = _timing(problem, lt)
    if timing is None:
        return [], kernels + lt_first
    count = libraries.cublaslt_algorithm_count(problem) if lt else 0
    lt_timed = [{"backend": "cublaslt", "algo": i} for i in range(count)]
    tiles = triton_configs + hopper_configs if timing == "all" else triton_configs[:1]
    return gemv_configs + lt_timed + tiles, kernels + lt_timed[:1]


def _launcher(problem, backend="triton", **config):
    """A callable(problem, stream) running problems of this geometry with `config` (a Triton
    launch, compiled on first use: the tiled kernel, the Hopper kernel or gemv's; or
    cuBLASLt)."""
    if backend == "cublaslt":
        from .. import libraries
        return libraries.cublaslt_launcher(problem, config.get("algo", 0))
    key = (problem.geometry(), backend, tuple(sorted(config.items())))
    if backend == "gemv":
        plan = _plans.get_or_build(key, lambda: gemv.Plan(problem, config))
        return lambda p, stream: gemv.gemv_launch(plan, stream, p.arrays)
    if backend == "hopper":
        plan = _plans.get_or_build(key, lambda: matmul_hopper.plan(problem, config))
        return lambda p, stream: matmul_hopper.launch(plan, stream, p.arrays)
    launch, dims = _plans.get_or_build(key, lambda: _matmul_plan(problem, config))
    return lambda p, stream: _matmul_launch(launch, dims, stream, p.arrays)


def _launch(problem, stream, **config):
    _launcher(problem, **config)(problem, stream)


def run(problem):
    """Compute `problem` with its tuned (or first workable) configuration and return that
    launcher. The choice is kept per geometry; a configuration that fails to compile or launch
    is skipped with a warning and the next one runs (a failure is never a result)."""
    stream = current_stream_handle(problem.device)
    choice = backend_choice()
    geometry = (problem.geometry(), choice)
    launcher = _chosen.get(geometry)
    if launcher is not None:
        launcher(problem, stream)
        return launcher
    timed, fallback = _plan(problem, choice)
    config = None
    if timed:
        key = problem.tuning_key() + (() if choice == "auto" else (choice,))
        try:
            config = _tuner.tune_kernel(_launch, (problem, stream), timed, key)
            _launch(problem, stream, **config)
        except Exception as e:  # every config failed, or a stored winner no longer launches
            warnings.warn(f"matmul: tuning for {key} failed ({type(e).__name__}: {e}); "
                          "trying the configurations in order", RuntimeWarning, stacklevel=2)
            _tuner.forget(key)
            config = None
    if config is None:
        config = _run_first_working(problem, stream, fallback)
    if len(_chosen) > 4096:
        _chosen.clear()
    launcher = _chosen[geometry] = _launcher(problem, **config)
    return launcher


def _run_first_working(problem, stream, candidates):
    """Launch the first config of `candidates` that works and return it."""
    error = None
    for config in candidates:
        try:
            _launch(problem, stream, **config)
            return config
        except Exception as e:
            warnings.warn(f"matmul: config {config} failed ({type(e).__name__}: {e}); "
                          "trying the next", RuntimeWarning, stacklevel=3)
            error = e
    raise RuntimeError(f"matmul: no configuration could run {problem.M}x{problem.K} @ "
                       f"{problem.K}x{problem.N} ({problem.dtype})") from error


def _as_batched(a, b):
    """(a, b) as matrices over one broadcast batch shape (1-D operands become a row / a column,
    broadcast batch dims get stride 0) and the numpy result shape."""
    out_tail = []
    if a.ndim == 1:
        a = as_strided(a, (1,) + a.shape, (0,) + a.element_strides(), 0)
    else:
        out_tail.append(a.shape[-2])
    if b.ndim == 1:
        b = as_strided(b, b.shape + (1,), b.element_strides() + (0,), 0)
    else:
        out_tail.append(b.shape[-1])
    batch = tuple(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
    a, b = (as_strided(x, batch + x.shape[-2:],
                       _batch_strides(x, batch) + x.element_strides()[-2:], 0)
            for x in (a, b))
    return a, b, batch + tuple(out_tail)


def _batch_strides(arr, batch):
    """`arr`'s element strides over the broadcast `batch` dims (0 where broadcast)."""
    st = arr.element_strides()[:-2]
    lead = len(batch) - len(st)
    return tuple(0 if i < lead or arr.shape[i - lead] == 1 else st[i - lead]
                 for i in range(len(batch)))


_fast = {}


def matmul_arrays(a, b, bias=None, activation=None, keep_z=False, out=None, row_sum=None,
                  gated=False, allow_tf32=None):
    """act(a @ b + bias) for CUDA arrays (numpy matmul rules; bias along the last dim), and the
    pre-activation value too when `keep_z`; written into `out` when given (an array of the
    result's shape and dtype, any strides: a recurrent layer's step writes into its slice of a
    sequence buffer). `row_sum`, for matrices a and b: a contiguous array of a's rows that
    receives a summed over its columns, by the same kernel (a linear layer's bias gradient
    beside its weight gradient). `gated`: a (..., 2 * K) holds gate then up columns and the
    product takes silu(gate) * up for a, as the operand is loaded (SwiGLU's down projection
    without its separate gate kernel). `allow_tf32`: whether a float32 product runs TF32 (None:
    genesis.backends.cuda.matmul.allow_tf32).

    After the first call with a geometry (shapes, strides, dtype, alignment, flags), later ones
    skip the shape logic: the product's Problem is kept with its launcher, and only the
    addresses change."""
    device = a.device
    activate(device)
    stream = current_stream_handle(device)
    if gated:
        a = _gate_half(a)
    tf32 = _tf32(allow_tf32)
    key = (a.shape, a.strides, b.shape, b.strides, a.dtype, a.ptr % 16 == 0, b.ptr % 16 == 0,
           None if bias is None else (bias.shape, bias.strides, bias.ptr % 16 == 0),
           activation, keep_z, tf32, os.environ.get("GENESIS_MATMUL_BACKEND"),
           device, None if out is None else (out.shape, out.strides, out.ptr % 16 == 0),
           None if row_sum is None else (row_sum.shape, row_sum.ptr % 16 == 0), gated)
    fast = _fast.get(key)
    if fast is not None:
        c_shape, out_shape, problem, launcher = fast
        c = CUDAArray.empty(c_shape, a.dtype, device, stream) if out is None else out
        z = CUDAArray.empty(c_shape, a.dtype, device, stream) if keep_z else None
        launcher(problem.with_arrays({"a": a, "b": b, "c": c, "bias": bias, "z": z,
                                      "row_sum": row_sum}), stream)
    else:
        a2, b2, out_shape = _as_batched(a, b)
        c_shape = a2.shape[:-1] + b2.shape[-1:]
        if out is not None:
            _check_out(out, c_shape, a.dtype)
        c = CUDAArray.empty(c_shape, a.dtype, device, stream) if out is None else out
        z = CUDAArray.empty(c_shape, a.dtype, device, stream) if keep_z else None
        if row_sum is not None:
            _check_row_sum(a, b, row_sum)
        problems = (_problems(a2, b2, c, z, bias, ACTIVATIONS[activation], gated, row_sum, tf32)
                    if c.size else [])
        launchers = [run(problem) for problem in problems]
        if len(problems) == 1:
            if len(_fast) > 4096:
                _fast.clear()
            _fast[key] = (c_shape, out_shape, problems[0].with_arrays(None), launchers[0])
    if out_shape == c_shape:  # the usual case: the product's own shape
        return [c, z] if keep_z else c
    shaped = [x if x is None else
              CUDAArray(x.storage, out_shape, contiguous_byte_strides(out_shape, x.itemsize), 0,
                        x.dtype) for x in (c, z)]
    return shaped if keep_z else shaped[0]


def _gate_half(a):
    """The gate half, (..., K), of a (..., 2 * K) gate/up array (its up half lies K columns
    on)."""
    if a.ndim == 0 or a.shape[-1] % 2:
        raise ValueError(f"matmul: a gated operand is (..., 2 * K), got {a.shape}")
    return as_strided(a, a.shape[:-1] + (a.shape[-1] // 2,), a.element_strides(), 0)


def _check_out(out, c_shape, dtype):
    if out.shape != c_shape or out.dtype != dtype:
        raise ValueError(f"matmul: out of shape {out.shape} ({out.dtype}) cannot hold the "
                         f"{c_shape} ({dtype}) product")


def _check_row_sum(a, b, row_sum):
    if (a.ndim != 2 or b.ndim != 2 or row_sum.shape != a.shape[:1] or row_sum.dtype != a.dtype
            or row_sum.strides != (a.itemsize,) or not a.size or not b.shape[1]):
        raise ValueError(f"matmul: row_sum {row_sum.shape} ({row_sum.dtype}) must be a contiguous "
                         f"array of the {a.shape[:1]} rows of a nonempty matrix a ({a.dtype}) "
                         f"times a matrix b {b.shape}")


class _Address:
    """An operand given by its address alone: a planned product's launchers read only `ptr`."""

    __slots__ = ("ptr",)


def matmul_plan(a, b, out, bias=None, allow_tf32=None):
    """Compute out = a @ b (+ bias) now and return again(a_ptr, b_ptr, c_ptr), which computes
    it over other arrays of the same geometry (shapes, strides, dtype, 16-byte alignment) given
    by their addresses, on this call's stream: a loop launching one product per step (a
    recurrent layer's) skips matmul_arrays's per-call key and views. None, computing nothing,
    where the product is empty or not one launch. `allow_tf32` as matmul_arrays's, fixed for
    the plan's life."""
    a2, b2, _ = _as_batched(a, b)
    _check_out(out, a2.shape[:-1] + b2.shape[-1:], a.dtype)
    activate(a.device)
    problems = _problems(a2, b2, out, None, bias, 0, allow_tf32=allow_tf32) if out.size else []
    if len(problems) != 1:
        return None
    launcher = run(problems[0])
    a_at, b_at, c_at = _Address(), _Address(), _Address()
    problem = problems[0].with_arrays({"a": a_at, "b": b_at, "c": c_at, "bias": bias, "z": None})
    stream = current_stream_handle(a.device)

    def again(a_ptr, b_ptr, c_ptr):
        a_at.ptr, b_at.ptr, c_at.ptr = a_ptr, b_ptr, c_ptr
        launcher(problem, stream)
    return again


def _problems(a, b, c, z, bias, act, gated=False, row_sum=None, allow_tf32=None):
    """The Problems computing act(a @ b + bias) into `c` (and `z`, and a's row sums into
    `row_sum`: matrices only), float32 in TF32 per `allow_tf32` (as Problem's), for matrices
    over one batch shape: the batch is folded into M when b is shared by every entry and a
    and c stack into one tall matrix, then coalesced; beyond MAX_BATCH_DIMS batch dims, one
    per leading index. Operand roles keep the arrays' addresses (views here never move
    them)."""
    batch = a.shape[:-2]
    M, K, N = a.shape[-2], a.shape[-1], b.shape[-1]
    (*ba, am, ak), (*bb, bk, bn), (*bc, cm, cn) = (x.element_strides() for x in (a, b, c))
    if batch and not any(bb):
        sizes, (fa, fc) = coalesce(batch + (M,), (*ba, am), (*bc, cm))
        if len(sizes) == 1:
            M, batch, ba, bb, bc, am, cm = sizes[0], (), [], [], [], fa[0], fc[0]
    sizes, (ba, bb, bc) = coalesce(batch, ba, bb, bc)
    if sizes == [1]:
        sizes, ba, bb, bc = [], (), (), ()
    if len(sizes) > MAX_BATCH_DIMS:
        return [p for i in range(batch[0])
                for p in _problems(select(a, 0, i), select(b, 0, i), select(c, 0, i),
                                   None if z is None else select(z, 0, i), bias, act, gated,
                                   allow_tf32=allow_tf32)]
    arrays = {"a": a, "b": b, "c": c, "bias": bias, "z": z, "row_sum": row_sum}
    strides = {"a": (*ba, am, ak), "b": (*bb, bk, bn), "c": (*bc, cm, cn)}
    if bias is not None:
        strides["bias"] = bias.element_strides()[-1] if bias.ndim else 0
    return [Problem(M, N, K, sizes, strides, arrays, act, gated, allow_tf32)]


@register("matmul", "cuda")
def matmul(a, b, bias=None, out=None, allow_tf32=None):
    """numpy's matmul (1-D operands, batch broadcasting) on the GPU; plus `bias` along the last
    dim, and into `out`, when given; float32 in TF32 per `allow_tf32` (as matmul_arrays's)."""
    return matmul_arrays(a, b, bias, out=out, allow_tf32=allow_tf32)


@register("linear_act", "cuda")
def linear_act(x, weight, bias, activation, keep_preactivation, allow_tf32=None):
    """(act(x @ weight^T + bias), x @ weight^T + bias or None) in one kernel; `activation` is
    None, "relu", "gelu", "gelu_tanh" or "silu"; `allow_tf32` as matmul_arrays's."""
    keep = keep_preactivation and activation is not None
    out = matmul_arrays(x, _transposed(weight), bias, activation, keep, allow_tf32=allow_tf32)
    return tuple(out) if keep else (out, None)


@register("linear_silu_gate", "cuda")
def linear_silu_gate(gate_up, weight, bias):
    """silu(gate) * up @ weight^T + bias of a (..., 2 * K) gate/up array, the gate computed as
    the product loads its operand: SwiGLU's down projection and its gate in one kernel."""
    return matmul_arrays(gate_up, _transposed(weight), bias, gated=True)


@register("linear_act_backward", "cuda")
def linear_act_backward(g, x, weight, need_x, need_weight, need_bias, allow_tf32=None):
    """(dx, dW, db) of y = x @ W^T + b given dy = `g` (already through the activation's
    derivative), each None where not needed: dx = g @ W, dW = g^T x with the batch folded into
    the product's inner dimension, db = g summed over its rows, by dW's kernel when both are
    needed (its row sums of g^T). The same kernels as the composed ops, called on arrays: a
    backward that records no graph skips six tensor-level ops. `allow_tf32` as
    matmul_arrays's."""
    g_rows = _as_matrix(g) if need_weight or need_bias else None
    dx = matmul_arrays(g, weight, allow_tf32=allow_tf32) if need_x else None
    dw = db = None
    if need_weight:
        fused = need_bias and g_rows.size and x.shape[-1]
        if fused:
            db = CUDAArray.empty(g_rows.shape[1:], g.dtype, g.device,
                                 current_stream_handle(g.device))
        dw = matmul_arrays(_transposed(g_rows), _as_matrix(x), row_sum=db if fused else None,
                           allow_tf32=allow_tf32)
    if need_bias and db is None:
        db = reduce("sum", g_rows, (0,), g_rows.shape[1:], g.dtype)[0]
    return dx, dw, db


def _as_matrix(arr):
    """`arr` (..., m) as a (rows, m) matrix: a view when its leading dims merge into one
    (always for contiguous arrays), else a contiguous copy."""
    if arr.ndim == 2:
        return arr
    if arr.ndim == 1:
        return as_strided(arr, (1,) + arr.shape, (0,) + arr.element_strides(), 0)
    m = arr.shape[-1]
    sizes, (strides,) = coalesce(arr.shape[:-1], arr.element_strides()[:-1])
    if len(sizes) != 1:
        arr = contiguous(arr)
        sizes, strides = [math.prod(arr.shape[:-1])], [m]
    return as_strided(arr, (sizes[0], m), (strides[0],) + arr.element_strides()[-1:], 0)


def _transposed(arr):
    return CUDAArray(arr.storage, arr.shape[::-1], arr.strides[::-1], arr.offset, arr.dtype)
