"""The CUDA matmul dispatcher's host-side decisions, without a GPU: how products become kernel
problems (1-D operands, broadcast batches folded or coalesced), which ones cuBLASLt can take and
in what column-major terms, which configurations are timed or tried, and the tuning key."""

from types import SimpleNamespace

import ml_dtypes
import numpy as np
import pytest

pytest.importorskip("triton")

from genesis.backends.cuda import libraries  # noqa: E402
from genesis.backends.cuda.kernels import gemv  # noqa: E402
from genesis.backends.cuda.kernels import matmul as mm  # noqa: E402
from genesis.backends.cuda.kernels import matmul_hopper as mh  # noqa: E402
from genesis.backends.cuda.kernels._strided_indexing import placeholder  # noqa: E402
from genesis.backends.cuda.runtime.array import CUDAArray  # noqa: E402


def gpu(capability):
    return SimpleNamespace(properties=SimpleNamespace(capability=capability,
                                                      multi_processor_count=132))


@pytest.fixture(autouse=True)
def ampere(monkeypatch):
    """The Hopper kernel asks the device for its capability: an sm_80 GPU unless a test says
    otherwise (`on_hopper`)."""
    monkeypatch.setattr(mh, "get_context", lambda device=None: gpu((8, 0)))


@pytest.fixture
def on_hopper(monkeypatch):
    monkeypatch.setattr(mh, "get_context", lambda device=None: gpu((9, 0)))


def arr(shape, strides=None, dtype=np.float32):
    return placeholder(shape, dtype, strides)


def problems(a, b, bias=None, act=None):
    a2, b2, out_shape = mm._as_batched(a, b)
    c = arr(a2.shape[:-1] + b2.shape[-1:], dtype=a.dtype)
    return mm._problems(a2, b2, c, None, bias, mm.ACTIVATIONS[act]), out_shape


def test_batch_times_matrix_folds_into_one_tall_product():
    (p,), out = problems(arr((4, 5, 6)), arr((6, 7)))
    assert out == (4, 5, 7)
    assert (p.M, p.N, p.K, p.batch_sizes) == (20, 7, 6, ())
    assert p.strides == {"a": (6, 1), "b": (7, 1), "c": (7, 1)}


def test_a_problem_over_other_arrays_keeps_every_other_field():
    (p,), _ = problems(arr((4, 5, 6), (6, 24, 1)), arr((6, 7)), arr((7,)), "relu")
    arrays = {"a": arr((4, 5, 6))}
    q = p.with_arrays(arrays)
    assert q.arrays is arrays
    assert all(getattr(q, name) is getattr(p, name) for name in mm.Problem.__slots__
               if name != "arrays")


def test_unstackable_batch_stays_a_batch_with_the_matrix_broadcast():
    (p,), _ = problems(arr((4, 5, 6), (6, 24, 1)), arr((6, 7)))
    assert (p.M, p.batch_sizes) == (5, (4,))
    assert p.strides["a"] == (6, 24, 1) and p.strides["b"] == (0, 7, 1)


def test_broadcast_batch_dims_coalesce():
    (p,), out = problems(arr((2, 1, 5, 6)), arr((3, 6, 7)))
    assert out == (2, 3, 5, 7)
    assert p.batch_sizes == (2, 3)
    assert p.strides["a"] == (30, 0, 6, 1) and p.strides["b"] == (0, 42, 7, 1)


def test_more_batch_dims_than_the_kernel_takes_split_on_the_leading_one():
    ps, out = problems(arr((2, 3, 2, 3, 5, 7)), arr((2, 1, 2, 1, 7, 6)))
    assert out == (2, 3, 2, 3, 5, 6)
    assert len(ps) == 2 and all(len(p.batch_sizes) == 3 for p in ps)


@pytest.mark.parametrize("shapes,out", [(((7,), (7, 3)), (3,)), (((4, 7), (7,)), (4,)),
                                        (((7,), (7,)), ()), (((2, 4, 7), (7,)), (2, 4))])
def test_vectors_become_rows_and_columns(shapes, out):
    (p,), shape = problems(*(arr(s) for s in shapes))
    assert shape == out and p.K == 7


@pytest.mark.parametrize("rows,cols,strides,expected", [
    (4, 6, (6, 1), ("N", 6, 4, 6)), (4, 6, (1, 4), ("T", 4, 6, 4)),
    (4, 6, (8, 1), ("N", 6, 4, 8)), (1, 6, (0, 1), ("N", 6, 1, 6)), (6, 1, (1, 0), ("N", 1, 6, 1)),
    (4, 6, (12, 2), None), (4, 6, (0, 1), None)])
def test_cublaslt_layouts(rows, cols, strides, expected):
    assert libraries._matrix_layout(rows, cols, *strides) == expected


def test_cublaslt_takes_plain_products_only():
    (p,), _ = problems(arr((8, 16)), arr((16, 4)))
    assert libraries.cublaslt_supports(p)
    (p,), _ = problems(arr((8, 16)), arr((16, 4)), act="relu")
    assert not libraries.cublaslt_supports(p)
    (p,), _ = problems(arr((8, 16), dtype=np.float64), arr((16, 4), dtype=np.float64))
    assert not libraries.cublaslt_supports(p)
    (p,), _ = problems(arr((8, 16), (32, 2)), arr((16, 4)))
    assert not libraries.cublaslt_supports(p)
    (p,), _ = problems(arr((2, 3, 5, 6)), arr((2, 3, 6, 7), (0, 42, 7, 1)))
    assert not libraries.cublaslt_supports(p)  # two batch dims


def _column_major_view(buffer, rows, cols, ld):
    """cuBLASLt's (rows x cols) matrix of leading dimension `ld` in a flat numpy buffer."""
    item = buffer.itemsize
    return np.lib.stride_tricks.as_strided(buffer, (rows, cols), (item, ld * item))


def _cublaslt_emulated(problem, buffers):
    """c as cuBLASLt computes it from the column-major terms the plan hands it
    (libraries._lt_operands, _matrix_layout): D = op(A) op(B) written column-major into c's
    buffer; one matrix of the batch."""
    M, N, K, (role_a, st_a), (role_b, st_b), st_c = libraries._lt_operands(problem)
    operands = []
    for (rows, cols), role, strides in (((K, N), role_a, st_a), ((M, K), role_b, st_b)):
        op, lt_rows, lt_cols, ld = libraries._matrix_layout(rows, cols, *strides[-2:])
        matrix = _column_major_view(buffers[role], lt_rows, lt_cols, ld)
        operands.append(matrix if op == "N" else matrix.T)
    op, lt_rows, lt_cols, ld = libraries._matrix_layout(M, N, *st_c[-2:])
    assert op == "N" and (lt_rows, lt_cols) == (N, M)
    _column_major_view(buffers["c"], N, M, ld)[...] = operands[0] @ operands[1]


@pytest.mark.parametrize("m,k,n", [(6, 5, 6), (6, 5, 4)])
@pytest.mark.parametrize("c_layout", ["row", "column"])
@pytest.mark.parametrize("a_layout", ["row", "column"])
def test_cublaslt_terms_give_the_product(m, k, n, c_layout, a_layout, rng):
    """The column-major terms cuBLASLt is given compute c = a @ b for row- and column-major
    a and c, square c among them (an NCHW 1x1 convolution writes a column-major c of pixels x
    channels: transposed terms must not write c transposed)."""
    strides = {"row": lambda rows, cols: (cols, 1), "column": lambda rows, cols: (1, rows)}
    a_values, b_values = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    a_strides, c_strides = strides[a_layout](m, k), strides[c_layout](m, n)
    buffers = {"a": np.zeros(m * k), "b": b_values.ravel().copy(), "c": np.zeros(m * n)}
    np.lib.stride_tricks.as_strided(buffers["a"], (m, k), [8 * s for s in a_strides])[...] = \
        a_values
    (p,), _ = problems(arr((m, k), a_strides), arr((k, n)))
    (p,) = mm._problems(p.arrays["a"], p.arrays["b"], arr((m, n), c_strides), None, None,
                        mm.ACTIVATIONS[None])
    assert libraries.cublaslt_supports(p)
    _cublaslt_emulated(p, buffers)
    c = np.lib.stride_tricks.as_strided(buffers["c"], (m, n), [8 * s for s in c_strides])
    np.testing.assert_allclose(c, a_values @ b_values, rtol=1e-12)


def test_cublaslt_refuses_epilogues_into_a_column_major_c():
    (p,) = mm._problems(arr((6, 5)), arr((5, 4)), arr((6, 4), (1, 6)), None, arr((4,)),
                        mm.ACTIVATIONS[None])
    assert not libraries.cublaslt_supports(p)
    p.arrays["bias"] = None
    assert libraries.cublaslt_supports(p)


def test_plan_times_large_products_and_falls_back_in_order(monkeypatch):
    monkeypatch.setattr(libraries, "cublaslt_usable", lambda: True)
    monkeypatch.setattr(libraries, "cublaslt_algorithm_count", lambda problem: 2)
    (big,), _ = problems(arr((1024, 1024), dtype=np.float16), arr((1024, 1024), dtype=np.float16))
    (small,), _ = problems(arr((8, 16), dtype=np.float16), arr((16, 4), dtype=np.float16))
    lt = [{"backend": "cublaslt", "algo": 0}, {"backend": "cublaslt", "algo": 1}]
    timed, fallback = mm._plan(big, "auto")
    assert timed[:2] == lt and len(timed) == 2 + len(mm._HALF_SPACE)
    assert fallback[-1] == lt[0] and fallback[0] == mm.heuristic_config(big)
    assert mm._plan(small, "auto") == ([], [gemv.heuristic_config(small)]
                                       + mm._triton_space(small) + lt[:1])
    (mid,), _ = problems(arr((1024, 128), dtype=np.float32), arr((128, 384), dtype=np.float32))
    timed, fallback = mm._plan(mid, "auto")
    assert timed == lt + [mm.heuristic_config(mid)]
    assert fallback == mm._triton_space(mid) + lt[:1]
    assert mm._plan(big, "cublaslt") == ([], lt[:1] + mm._triton_space(big))
    assert not any("backend" in c for c in mm._plan(big, "triton")[0] + mm._plan(big, "triton")[1])
    monkeypatch.setenv("GENESIS_MATMUL_TUNE_LIMIT", "3")
    assert len(mm._plan(big, "auto")[0]) == 5
    monkeypatch.setenv("GENESIS_MATMUL_AUTOTUNE", "0")
    assert mm._plan(big, "auto")[0] == []


def test_backend_choice_is_checked(monkeypatch):
    monkeypatch.setenv("GENESIS_MATMUL_BACKEND", "cuBLASLt")
    assert mm.backend_choice() == "cublaslt"
    monkeypatch.setenv("GENESIS_MATMUL_BACKEND", "cutlass")
    with pytest.raises(ValueError, match="auto, triton, tile, hopper or cublaslt"):
        mm.backend_choice()


def test_precision_follows_the_tf32_flag(monkeypatch):
    (p,), _ = problems(arr((8, 16)), arr((16, 4)))
    assert p.precision == "ieee"
    monkeypatch.setattr(mm.flags, "allow_tf32", True)
    (p,), _ = problems(arr((8, 16)), arr((16, 4)))
    assert p.precision == "tf32"
    (p,), _ = problems(arr((8, 16), dtype=np.float64), arr((16, 4), dtype=np.float64))
    assert p.precision == "ieee"


@pytest.mark.parametrize("size, bucket", [(0, 1), (3, 4), (768, 1024), (1024, 1024),
                                          (1025, 1280), (2048, 2048), (2049, 2560), (2304, 2560),
                                          (3072, 3072), (8192, 8192), (50257, 57344)])
def test_tuning_buckets_are_powers_of_two_then_quarters(size, bucket):
    """Up to 1024 a power of two; above, a quarter of one: GPT-2's 2304- and 3072-wide
    layers, whose tile counts put them on either side of a full wave, tune apart."""
    assert mm._bucket(size) == bucket


def test_heuristic_prefers_big_tiles_that_fill_the_gpu():
    (big,), _ = problems(arr((8192, 8192), dtype=np.float16), arr((8192, 8192), dtype=np.float16))
    assert mm.heuristic_config(big) == mm._HALF_SPACE[0]
    (small,), _ = problems(arr((8, 16), dtype=np.float16), arr((16, 4), dtype=np.float16))
    assert mm.heuristic_config(small) == mm._HALF_SPACE[-1]


def test_skinny_products_go_to_gemv():
    """At most MAX_ROWS rows, no batch dims (a folded batch is fine), b with a unit stride,
    float16/bfloat16/float32."""
    f16 = np.float16
    for a, b, b_strides in [((1, 64), (64, 32), None), ((16, 64), (64, 32), None),
                            ((2, 4, 64), (64, 32), None), ((64,), (64, 32), None),
                            ((3, 64), (64, 32), (1, 64))]:
        (p,), _ = problems(arr(a, dtype=f16), arr(b, b_strides, dtype=f16))
        assert gemv.supports(p), (a, b, b_strides)
    for a, b, dtype, b_strides in [((17, 64), (64, 32), f16, None),
                                   ((4, 64), (64, 32), np.float64, None),
                                   ((4, 64), (64, 32), np.int32, None),
                                   ((4, 64), (64, 32), f16, (64, 2)),
                                   ((2, 4, 64), (2, 64, 32), f16, None)]:
        (p,), _ = problems(arr(a, dtype=dtype), arr(b, b_strides, dtype=dtype))
        assert not gemv.supports(p), (a, b, dtype, b_strides)


def skinny_plan_setup(monkeypatch):
    monkeypatch.setattr(libraries, "cublaslt_usable", lambda: True)
    monkeypatch.setattr(libraries, "cublaslt_algorithm_count", lambda problem: 2)
    return [{"backend": "cublaslt", "algo": 0}, {"backend": "cublaslt", "algo": 1}]


def test_skinny_products_are_timed_by_the_bytes_of_b(monkeypatch):
    """A 2 MB weight is timed (gemv configs, cuBLASLt, the short Triton tiles) even at one row;
    a smaller one runs gemv's heuristic untimed, the tiles and cuBLASLt behind it."""
    lt = skinny_plan_setup(monkeypatch)
    bf16 = ml_dtypes.bfloat16
    (big,), _ = problems(arr((1, 1024), dtype=bf16), arr((1024, 1024), (1, 1024), dtype=bf16))
    (small,), _ = problems(arr((1, 512), dtype=bf16), arr((512, 1024), (1, 512), dtype=bf16))
    assert big.N * big.K * big.dtype.itemsize == mm.TUNE_MIN_BYTES
    assert big.M * big.N * big.K < mm.TUNE_MIN_WORK
    tiles = mm._triton_space(big)
    assert tiles and all(c["BM"] <= mm.SKINNY_TILE_ROWS for c in tiles)
    space = gemv.config_space(big)
    assert mm._plan(big, "auto") == (space + lt + tiles, space[:1] + tiles + lt[:1])
    assert mm._plan(small, "auto") == ([], [gemv.heuristic_config(small)]
                                       + mm._triton_space(small) + lt[:1])
    assert mm._plan(big, "triton") == (space + tiles, space[:1] + tiles)
    assert mm._plan(big, "cublaslt") == ([], lt[:1] + space[:1] + tiles)
    monkeypatch.setenv("GENESIS_MATMUL_TUNE_LIMIT", "2")
    assert mm._plan(big, "auto")[0] == space[:2] + lt + tiles[:2]
    monkeypatch.setenv("GENESIS_MATMUL_AUTOTUNE", "0")
    assert mm._plan(big, "auto") == ([], space[:1] + tiles[:2] + lt[:1])


def test_gemv_heuristic_takes_fma_for_one_row_and_dot_for_more():
    f16 = np.float16
    for rows, dot in [(1, False), (2, True), (16, True)]:
        (p,), _ = problems(arr((rows, 2048), dtype=f16), arr((2048, 2048), (1, 2048), dtype=f16))
        config = gemv.heuristic_config(p)
        assert config["DOT"] == dot and config["backend"] == "gemv"
        assert config["BK"] > config["BN"]  # long along K, b's contiguous axis


def test_row_sums_and_gates_choose_their_kernels(monkeypatch):
    """A weight gradient's row sums (a = dY^T, unit row stride) go to cuBLASLt's BGRADB epilogue
    or the tiles, never to gemv; a gated operand (SwiGLU's down projection) to gemv or the
    tiles, never to cuBLASLt; each tunes under a key of its own."""
    from genesis.backends.cuda.runtime import device
    gpu = SimpleNamespace(properties=SimpleNamespace(name="NVIDIA H100"))
    monkeypatch.setattr(device, "get_context", lambda index=None: gpu)
    bf16 = ml_dtypes.bfloat16
    (grad,), _ = problems(arr((8, 1024), (1, 8), dtype=bf16), arr((1024, 64), dtype=bf16))
    plain_key = grad.tuning_key()
    grad.arrays["row_sum"] = arr((8,), dtype=bf16)
    assert libraries.cublaslt_supports(grad) and not gemv.supports(grad)
    assert plain_key[-1] == "gemv" and grad.tuning_key() == plain_key[:-1] + ("row_sum",)
    (rows,), _ = problems(arr((8, 1024), dtype=bf16), arr((1024, 64), dtype=bf16))
    rows.arrays["row_sum"] = arr((8,), dtype=bf16)
    assert not libraries.cublaslt_supports(rows)  # BGRADB is offered for dY^T's layout only
    a, b = arr((1, 2 * 512), dtype=bf16), arr((512, 1024), (1, 512), dtype=bf16)
    (gated,), _ = problems(mm._gate_half(a), b)
    gated.gated = True
    assert gemv.supports(gated) and not libraries.cublaslt_supports(gated)
    assert gated.tuning_key()[-2:] == ("gated", "gemv")
    assert gated.strides["a"] == (1024, 1) and gated.K == 512


def test_cublaslt_launcher_finds_its_plan_once_and_rechecks_alignment(monkeypatch):
    """The kept launcher runs with the plan found at its creation; addresses less aligned than
    that problem's look the plan up again (its algorithm may need the alignment)."""
    from types import SimpleNamespace
    looked_up, ran = [], []
    monkeypatch.setattr(libraries, "_handle_and_plan",
                        lambda p: looked_up.append(p) or ("handle", "plan"))
    monkeypatch.setattr(libraries, "_run", lambda h, plan, p, stream, algo: ran.append(algo))

    def at(address):
        return {role: SimpleNamespace(ptr=address) for role in ("a", "b", "c")}

    launch = libraries.cublaslt_launcher(SimpleNamespace(arrays=at(1 << 12)), algo=2)
    assert len(looked_up) == 1
    launch(SimpleNamespace(arrays=at(3 << 12)), 0)
    assert len(looked_up) == 1 and ran == [2]
    launch(SimpleNamespace(arrays=at(16 * 5)), 0)
    assert len(looked_up) == 2 and ran == [2, 2]


BF16 = ml_dtypes.bfloat16
GPT2 = 8192, 768, 3072  # tokens, model width, MLP width


def gpt2_problem(a_t=False, b_t=True, dtype=BF16, **arrays):
    """x @ W^T of GPT-2's MLP (8192 x 768 times a 3072 x 768 weight; a_t / b_t: operands
    stored transposed), with extra arrays ("bias", "row_sum") set on the Problem."""
    m, k, n = GPT2
    a = arr((m, k), (1, m) if a_t else None, dtype)
    b = arr((k, n), (1, k) if b_t else None, dtype)
    (p,), _ = problems(a, b)
    p.arrays.update(arrays)
    return p


def test_hopper_kernel_runs_what_tma_reads(on_hopper, monkeypatch):
    """Either unit stride for a and b (x @ W^T, dY @ W, dY^T @ X), 16-byte-aligned addresses
    and strides, 16-bit or TF32 operands, no batch dims, row sums or gate; on sm_90 only."""
    for a_t, b_t in [(False, True), (False, False), (True, False), (True, True)]:
        assert mh.supports(gpt2_problem(a_t, b_t))
    assert mh.supports(gpt2_problem(dtype=np.float16))
    assert not mh.supports(gpt2_problem(dtype=np.float32))  # strict float32: FMA, not TMA
    monkeypatch.setattr(mm.flags, "allow_tf32", True)
    assert mh.supports(gpt2_problem(dtype=np.float32))
    assert not mh.supports(gpt2_problem(dtype=np.float64))
    assert not mh.supports(gpt2_problem(row_sum=arr((8192,), dtype=BF16)))
    (batched,), _ = problems(arr((2, 64, 32), (32, 64, 1), dtype=BF16), arr((32, 64), dtype=BF16))
    assert batched.batch_sizes and not mh.supports(batched)
    for a, b in [(arr((64, 40), (40, 1), dtype=BF16), arr((40, 64), dtype=BF16)),  # 80 bytes
                 (arr((64, 36), dtype=BF16), arr((36, 64), dtype=BF16)),  # rows 72 bytes apart
                 (arr((64, 32), (64, 2), dtype=BF16), arr((32, 64), dtype=BF16))]:  # no unit
        (p,), _ = problems(a, b)
        assert mh.supports(p) == (a.shape[1] == 40)
    x = arr((64, 32), dtype=BF16)
    (p,), _ = problems(CUDAArray(x.storage, x.shape, x.strides, 2, x.dtype),
                       arr((32, 64), dtype=BF16))
    assert not mh.supports(p)  # an address 2 bytes off
    p = gpt2_problem()
    p.gated = True
    assert not mh.supports(p)
    for capability in ((8, 0), (10, 0)):
        monkeypatch.setattr(mh, "get_context", lambda device=None, c=capability: gpu(c))
        assert not mh.supports(gpt2_problem())


def test_hopper_configs_are_timed_after_the_tiles(on_hopper, monkeypatch):
    """Timed with the rest (never the untimed pick); left out by GENESIS_MATMUL_BACKEND=tile,
    alone by =hopper; not for products timed by their heuristic tile alone, nor skinny ones."""
    lt = skinny_plan_setup(monkeypatch)
    p = gpt2_problem()
    tiles, hopper = mm._triton_space(p), mh._HALF_SPACE
    timed, fallback = mm._plan(p, "auto")
    assert timed == lt + tiles + hopper and fallback == tiles + lt[:1]
    assert mm._plan(p, "triton") == (tiles + hopper, tiles)
    assert mm._plan(p, "tile") == (tiles, tiles)
    assert mm._plan(p, "hopper") == (hopper, hopper + tiles)
    (mid,), _ = problems(arr((1024, 128), dtype=BF16), arr((128, 384), dtype=BF16))
    assert mh.supports(mid) and mm._plan(mid, "auto")[0] == lt + mm._triton_space(mid)[:1]
    (skinny,), _ = problems(arr((4, 1024), dtype=BF16), arr((1024, 1024), (1, 1024), dtype=BF16))
    assert mh.supports(skinny) and not any(c.get("backend") == "hopper"
                                           for c in sum(mm._plan(skinny, "auto"), []))
    monkeypatch.setenv("GENESIS_MATMUL_TUNE_LIMIT", "3")
    assert mm._plan(p, "auto")[0] == lt + tiles[:3] + hopper[:3]
    monkeypatch.setenv("GENESIS_MATMUL_AUTOTUNE", "0")
    assert mm._plan(p, "auto") == ([], tiles[:3] + lt[:1])
    assert mm._plan(p, "hopper") == ([], hopper[:3] + tiles[:3])


def test_hopper_products_tune_under_a_key_of_their_own(monkeypatch):
    """A shape key tuned before the Hopper kernel existed (or on another GPU) is timed again
    with it."""
    from genesis.backends.cuda.runtime import device
    monkeypatch.setattr(device, "get_context", lambda index=None: SimpleNamespace(
        properties=SimpleNamespace(name="NVIDIA H100")))
    p = gpt2_problem()
    ampere_key = p.tuning_key()
    monkeypatch.setattr(mh, "get_context", lambda device=None: gpu((9, 0)))
    assert p.tuning_key() == ampere_key + ("tma",)


def test_hopper_plan_passes_each_operand_its_row_stride(on_hopper):
    for a_t, b_t, strides in [(False, True, (768, 768, 3072)), (True, False, (8192, 3072, 3072))]:
        p = gpt2_problem(a_t, b_t)
        launch, dims, summing = mh.plan(p, mh._HALF_SPACE[0])
        tiles = (8192 // 128) * (3072 // 256)  # all of them whole
        assert dims[:7] == (8192, 3072, 768, tiles) + strides
        assert (launch.meta["A_T"], launch.meta["B_T"]) == (a_t, b_t)
        assert launch.grid == (132,) and launch.meta["NUM_SMS"] == 132 and summing is None


def test_hopper_split_k_for_few_tiles_and_a_long_k(on_hopper):
    """Split-K configs are timed after the others where 128 x 128 tiles fill the 132 SMs less
    than twice (a 768 x 768 weight gradient over 8192 tokens), not for GPT-2's forward
    products or a short K; a split plan's workspace holds SPLIT_K partials of each split tile,
    summed by a grid of 32 x 128 blocks of them."""
    def weight_gradient(M, N, K):
        return mm.Problem(M, N, K, (), {"a": (1, M), "b": (N, 1), "c": (N, 1), "bias": 1},
                          {"a": arr((M, K), dtype=BF16), "b": arr((K, N), dtype=BF16),
                           "c": arr((M, N), dtype=BF16), "bias": None, "z": None,
                           "row_sum": None})
    assert mh.split_k_space(weight_gradient(768, 768, 8192)) == mh._HALF_SPLIT_SPACE
    assert mh.split_k_space(gpt2_problem()) == []
    assert mh.split_k_space(weight_gradient(768, 768, 1024)) == []
    assert mm._hopper_space(weight_gradient(768, 768, 8192), "auto") == (
        mh._HALF_SPACE + mh._HALF_SPLIT_SPACE)
    four_ways = mh._config(128, 128, 64, 4, 4, split=True, split_k=4)
    launch, dims, summing = mh.plan(weight_gradient(700, 760, 8192), four_ways)
    assert launch.meta["SPLIT_K"] == 4 and launch.grid == (132,) and dims[3] == 0
    assert summing.partials == 36 * 4 and summing.launch.grid == (36, 128 // 32)
    tail = mh._config(128, 128, 64, 4, 4, split=True, split_k=0)
    launch, dims, summing = mh.plan(weight_gradient(3072, 768, 8192), tail)
    assert launch.meta["SPLIT_K"] == 11 and dims[3] == 132 and summing.partials == 12 * 11


def test_split_tiles_past_the_last_full_wave():
    """(whole tiles, ranges of the rest): split_k n cuts every tile n ways; 0 cuts the tiles
    past the last full wave into as many ranges as give each SM one, where that is 2 or more,
    each of 8 K steps or more."""
    assert mh._split(144, 132, 0, 128) == (132, 11)
    assert mh._split(144, 132, 0, 40) == (132, 5)
    assert mh._split(36, 132, 0, 128) == (0, 3)
    assert mh._split(100, 132, 0, 128) == (100, 1)
    assert mh._split(264, 132, 0, 128) == (264, 1)
    assert mh._split(300, 132, 0, 128) == (264, 3)
    assert mh._split(144, 132, 0, 15) == (144, 1)
    assert mh._split(36, 132, 4, 8) == (0, 4) and mh._split(36, 132, 1, 128) == (36, 1)
