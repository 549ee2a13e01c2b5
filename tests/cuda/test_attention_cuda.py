"""scaled_dot_product_attention on "cuda" through the fused FlashAttention kernels, against
torch on the CPU in float64 rounded once for float32 (attention's gradients subtract nearly
equal sums, so two float32 orders of summation can differ beyond float32 tolerance, as for the
float reductions of test_ops_cuda), and in float32 rounded once for half types (on the same half
values, as the kernels accumulate in float32), within the rounding of P and dS to the half type
that the kernels do as torch's (tests/attention_bounds.py); dQ and dK may also differ by
float32's rounding of the terms that cancel in them (`cancellation_bounds`): long sequences,
head dims 64/128 (and 80, padded), many (batch, head) planes, causal or not, strided operands,
grouped heads, gradients, determinism, the TF32 flag, create_graph and the paths that stay
composed; the one-pass backward and, under use_deterministic_algorithms(True), the
deterministic one."""


import math

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from attention_bounds import cancellation_bounds, half_rounding_bounds
from helpers import TOLERANCES, assert_close, from_torch, skip_no_cuda, warm_up_on_side_stream

import genesis
import genesis.nn.functional as F

pytestmark = [skip_no_cuda]

TORCH = {genesis.float32: torch.float32, genesis.float16: torch.float16,
         genesis.bfloat16: torch.bfloat16}
FUSED = "_FlashAttentionBackward0"


@pytest.fixture(autouse=True)
def _strict(monkeypatch):
    monkeypatch.setattr(genesis.backends.cuda.matmul, "allow_tf32", False)


@pytest.fixture(params=[False, True], ids=["one_pass", "deterministic"])
def backward_form(request):
    """Each fused backward: the one-pass one (dQ summed with float atomics), and under
    use_deterministic_algorithms(True) the deterministic one."""
    genesis.use_deterministic_algorithms(request.param)
    yield request.param
    genesis.use_deterministic_algorithms(False)


def _leaves(shapes, dtype, transposed=False):
    """(genesis cuda leaves, torch reference leaves: float64 for float32, else float32) with the
    same values; transposed: (B, H, T, D) views of (B, T, H, D) buffers."""
    pairs = []
    for shape in shapes:
        t = torch.randn(shape).to(TORCH[dtype])
        g = from_torch(t.transpose(1, 2).contiguous(), "cuda").transpose(1, 2) if transposed \
            else from_torch(t, "cuda")
        wide = t.double() if dtype is genesis.float32 else t.float()
        pairs.append((g.requires_grad_(), wide.requires_grad_()))
    return pairs


def _check(shape_q, shape_k, dtype, causal, transposed=False, scale=None, mask=None):
    """Output and gradients against torch; keys and values with fewer heads than the queries
    are grouped (enable_gqa), their bounds those of the repeated heads summed back. `mask`: a
    torch attn_mask (bool, or additive of the dtype), against torch's math backend with the
    causal mask merged into it."""
    (q, tq), (k, tk), (v, tv) = _leaves((shape_q, shape_k, shape_k), dtype, transposed)
    gqa = len(shape_q) >= 3 and shape_q[-3] != shape_k[-3]
    group = shape_q[-3] // shape_k[-3] if gqa else 1
    g_mask = None if mask is None else from_torch(mask, "cuda")
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=g_mask, is_causal=causal,
                                         scale=scale, enable_gqa=gqa)
    assert out.grad_fn.name() == FUSED
    t_mask = None if mask is None else _merged(mask.to(tq.dtype) if mask.is_floating_point()
                                               else mask, shape_q[-2], shape_k[-2], causal)
    with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.MATH):
        expected = TF.scaled_dot_product_attention(tq, tk, tv, attn_mask=t_mask,
                                                   is_causal=causal and mask is None,
                                                   scale=scale, enable_gqa=gqa)
    grad = torch.randn(expected.shape).to(TORCH[dtype])
    expected.backward(grad.to(expected.dtype))
    out.backward(from_torch(grad, "cuda"))
    rk, rv = (t.detach().repeat_interleave(group, -3) if gqa else t for t in (tk, tv))
    o_half, dq_half, dk_half, dv_half = half_rounding_bounds(tq, rk, rv, grad, causal, scale,
                                                             dtype.name, t_mask)
    _assert_grad_close(out, expected, o_half, dtype)
    dq_bound, dk_bound = cancellation_bounds(tq, rk, rv, grad, causal, scale, t_mask)
    for actual, ref, bound in ((q, tq, dq_bound + dq_half),
                               (k, tk, _sum_groups(dk_bound + dk_half, group)),
                               (v, tv, _sum_groups(dv_half, group))):
        _assert_grad_close(actual.grad, ref.grad, bound, dtype)


def _merged(mask, length, keys, causal):
    """`mask` with the top-left causal mask merged in (torch's math backend takes one)."""
    if not causal:
        return mask
    keep = torch.ones(length, keys, dtype=torch.bool).tril()
    return mask & keep if mask.dtype == torch.bool else mask.masked_fill(~keep, -math.inf)


def _sum_groups(bound, group):
    """A bound of the repeated heads' gradients as one of the grouped heads': each run of
    `group` heads summed."""
    return bound.unflatten(-3, (-1, group)).sum(-3) if group > 1 else bound


def _assert_grad_close(actual, ref, bound, dtype):
    """|actual - ref| within the dtype's tolerance plus the rounding `bound` (elementwise): for
    the output and the gradients alike."""
    rtol, atol = TOLERANCES[dtype]
    expected = ref.detach().to(TORCH[dtype]).double().numpy()
    got = actual.detach().cpu().to(genesis.float64).numpy()
    allowed = atol + rtol * np.abs(expected) + np.asarray(bound)
    excess = np.abs(got - expected) - allowed
    worst = np.unravel_index(np.argmax(excess), excess.shape)
    assert excess.max() <= 0, (f"gradient off by {got[worst] - expected[worst]:.3g} at {worst} "
                               f"(allowed {allowed[worst]:.3g}): {got[worst]} vs {expected[worst]}")


@pytest.mark.usefixtures("backward_form")
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("head", [64, 128])
@pytest.mark.parametrize("dtype", [genesis.float16, genesis.bfloat16, genesis.float32], ids=str)
def test_long_sequences(dtype, head, causal):
    _check((2, 4, 1024, head), (2, 4, 1024, head), dtype, causal)


@pytest.mark.usefixtures("backward_form")
@pytest.mark.parametrize("dtype", [genesis.float16, genesis.bfloat16], ids=str)
def test_many_planes_odd_length(dtype):
    _check((8, 16, 203, 64), (8, 16, 203, 64), dtype, True)


@pytest.mark.usefixtures("backward_form")
@pytest.mark.parametrize("head", [16, 32, 80, 96])
def test_other_head_dims(head):
    _check((2, 3, 300, head), (2, 3, 300, head), genesis.float16, True)


@pytest.mark.usefixtures("backward_form")
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("lengths", [(1, 700), (700, 1), (129, 515), (515, 129)])
def test_queries_and_keys_of_different_lengths(lengths, causal):
    _check((2, 2, lengths[0], 64), (2, 2, lengths[1], 64), genesis.bfloat16, causal)


@pytest.mark.usefixtures("backward_form")
@pytest.mark.parametrize("dtype", [genesis.float16, genesis.float32], ids=str)
def test_strided_operands_and_scale(dtype):
    """(B, T, H, D) buffers seen as (B, H, T, D), read in place; 3-d operands."""
    _check((2, 6, 257, 64), (2, 6, 257, 64), dtype, True, transposed=True, scale=0.3)
    _check((12, 190, 64), (12, 190, 64), dtype, False)


@pytest.mark.usefixtures("backward_form")
@pytest.mark.parametrize("dtype", [genesis.bfloat16, genesis.float32], ids=str)
def test_heads_of_one_projection_transpose_back_without_copies(dtype):
    """Heads cut from one (B, T, 3C) projection (a GPT block): the output and the gradients are
    laid out like their inputs, so transposing them back to (B, T, H, D) gives contiguous
    tensors, as torch's; values and the projection's gradient match torch."""
    B, T, H, D = 2, 70, 3, 32
    qkv, tqkv = _leaves([(B, T, 3 * H * D)], dtype)[0]

    def heads(x):
        return [t.view(B, T, H, D).transpose(1, 2) for t in x.split(H * D, dim=2)]
    q, k, v = heads(qkv)
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    expected = TF.scaled_dot_product_attention(*heads(tqkv), is_causal=True)
    assert out.transpose(1, 2).is_contiguous()
    grads = []
    for view in (q, k, v):
        view.register_hook(grads.append)
    grad = torch.randn(expected.shape).to(TORCH[dtype])
    o_bound, *bounds = half_rounding_bounds(*heads(tqkv), grad, True, None, dtype.name)
    _assert_grad_close(out, expected, o_bound, dtype)
    expected.backward(grad.to(expected.dtype))
    out.backward(from_torch(grad, "cuda"))
    assert len(grads) == 3 and all(g.transpose(1, 2).is_contiguous() for g in grads)
    qkv_bound = torch.cat([b.transpose(1, 2).reshape(B, T, H * D) for b in bounds], 2)
    _assert_grad_close(qkv.grad, tqkv.grad, qkv_bound.numpy(), dtype)


@pytest.mark.usefixtures("backward_form")
@pytest.mark.parametrize("dtype", [genesis.bfloat16, genesis.float32], ids=str)
def test_grouped_query_heads(dtype):
    """Eight query heads over two key/value heads (enable_gqa), read in place forward and
    backward: dK and dV summed over each key/value head's four query heads."""
    _check((2, 8, 300, 64), (2, 2, 300, 64), dtype, True)


def test_tf32_flag(monkeypatch):
    """With allow_tf32 the float32 products round their inputs to TF32 (10-bit mantissa): the
    result stays within TF32's bound of the float32 one (and is not bitwise the strict one)."""
    (q, tq), (k, tk), (v, tv) = _leaves([(2, 4, 512, 64)] * 3, genesis.float32)
    strict = F.scaled_dot_product_attention(q, k, v, is_causal=True).detach().cpu().numpy()
    monkeypatch.setattr(genesis.backends.cuda.matmul, "allow_tf32", True)
    fast = F.scaled_dot_product_attention(q, k, v, is_causal=True).detach().cpu().numpy()
    expected = TF.scaled_dot_product_attention(tq, tk, tv, is_causal=True).detach().numpy()
    assert not np.array_equal(strict, fast)
    np.testing.assert_allclose(fast, expected, rtol=2e-3, atol=2e-3)


def _two_backwards(shape, dtype):
    """The (dQ, dK, dV) of two runs of the same causal attention backward, as float32."""
    (q, _), (k, _), (v, _) = _leaves([shape] * 3, dtype)
    grad = genesis.randn(*shape, dtype=dtype, device="cuda")
    runs = []
    for _ in range(2):
        q.grad = k.grad = v.grad = None
        F.scaled_dot_product_attention(q, k, v, is_causal=True).backward(grad)
        runs.append([t.grad.float().cpu().numpy() for t in (q, k, v)])
    return runs


def test_backward_is_deterministic_under_the_flag(backward_form):
    """Deterministic: every gradient bitwise the same from run to run. One-pass: dK and dV
    still are (each summed by one program); dQ may differ in its last bits."""
    first, second = _two_backwards((4, 8, 777, 64), genesis.bfloat16)
    for i, (a, b) in enumerate(zip(first, second)):
        if i or backward_form:
            np.testing.assert_array_equal(a, b)
        else:
            np.testing.assert_allclose(a, b, rtol=2.0 ** -7, atol=1e-5)


def test_one_pass_backward_replays_in_a_cuda_graph():
    """Captured in a CUDA graph (its float32 dQ accumulator from the graph's pool, zeroed on
    the device, no host sync) and replayed on new inputs, the one-pass backward (float32, head
    dim 64) gives eager's dK and dV bit for bit and its dQ to float32's rounding of the atomic
    sums."""
    shape = (2, 4, 300, 64)
    (q, _), (k, _), (v, _) = _leaves([shape] * 3, genesis.float32)
    grad = genesis.randn(*shape, dtype=genesis.float32, device="cuda")

    def fn():
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return genesis.autograd.grad(out, (q, k, v), grad)
    warm_up_on_side_stream(fn)
    graph = genesis.cuda.CUDAGraph()
    with genesis.cuda.graph(graph):
        captured = fn()
    with genesis.no_grad():
        q.copy_(genesis.randn(*shape, dtype=genesis.float32, device="cuda"))
    graph.replay()
    eager = fn()
    for i, (a, b) in enumerate(zip(captured, eager)):
        a, b = a.float().cpu().numpy(), b.float().cpu().numpy()
        if i:
            np.testing.assert_array_equal(a, b)
        else:
            np.testing.assert_allclose(a, b, rtol=2.0 ** -7, atol=1e-5)


def test_double_backward_recomputes():
    """create_graph: the first-order gradients come from genesis ops, differentiable again."""
    (q, tq), (k, tk), (v, tv) = _leaves([(1, 2, 40, 16)] * 3, genesis.float32)
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    (gq,) = genesis.autograd.grad(out.sum(), [q], create_graph=True)
    (gq * gq).sum().backward()
    mask = torch.ones(40, 40, dtype=torch.bool).tril()
    t_scores = (tq @ tk.transpose(-2, -1) / 4.0).masked_fill(~mask, -math.inf)
    t_out = torch.softmax(t_scores, -1) @ tv  # torch's CPU SDPA has no double backward
    (tgq,) = torch.autograd.grad(t_out.sum(), [tq], create_graph=True)
    (tgq * tgq).sum().backward()
    assert_close(gq, tgq.detach().float())
    for actual, ref in ((q, tq), (k, tk), (v, tv)):
        assert_close(actual.grad, ref.grad.float())


def test_no_grad_forward():
    q = genesis.randn(2, 4, 100, 64, dtype=genesis.float16, device="cuda")
    with genesis.no_grad():
        out = F.scaled_dot_product_attention(q, q, q)
    tq = torch.from_numpy(q.cpu().numpy().astype(np.float32))
    expected = TF.scaled_dot_product_attention(tq, tq, tq)
    bound = half_rounding_bounds(tq, tq, tq, torch.zeros_like(tq), False, None, "float16")[0]
    _assert_grad_close(out, expected, bound.numpy(), genesis.float16)


@pytest.mark.parametrize("case", ["float64", "head8", "head256"])
def test_other_cases_stay_composed(case):
    dtype = {"float64": genesis.float64}.get(case, genesis.float32)
    head = {"head8": 8, "head256": 256}.get(case, 32)
    q = genesis.randn(1, 2, 16, head, dtype=dtype, device="cuda", requires_grad=True)
    out = F.scaled_dot_product_attention(q, q, q)
    assert out.grad_fn.name() != FUSED
    tq = torch.from_numpy(q.detach().cpu().numpy())
    assert_close(out, TF.scaled_dot_product_attention(tq, tq, tq))


def _mask(kind, shape, dtype):
    """A bool (True: may attend) or additive attn_mask of `shape` hiding about a quarter of
    the positions, and every key of its first row (zeros there, as torch's math backend)."""
    hidden = torch.rand(shape) < 0.25
    hidden[..., 0, :] = True
    if kind == "bool":
        return ~hidden
    return (torch.randn(shape) * 2).masked_fill(hidden, -math.inf).to(TORCH[dtype])


@pytest.mark.usefixtures("backward_form")
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape", [(2, 1, 1, 333), (300, 333), (2, 4, 300, 333)], ids=str)
@pytest.mark.parametrize("kind", ["bool", "additive"])
@pytest.mark.parametrize("dtype", [genesis.float16, genesis.bfloat16, genesis.float32], ids=str)
def test_attn_masks(dtype, kind, shape, causal):
    """Bool and additive masks (key padding, one (L, S) mask, one per head) through the fused
    kernels, beside is_causal or alone."""
    _check((2, 4, 300, 64), (2, 4, 333, 64), dtype, causal, mask=_mask(kind, shape, dtype))


@pytest.mark.usefixtures("backward_form")
def test_attn_mask_with_grouped_heads_at_head_dim_128():
    _check((2, 8, 256, 128), (2, 2, 256, 128), genesis.bfloat16, False,
           mask=_mask("bool", (2, 1, 1, 256), genesis.bfloat16))


def _flags(shape, draw):
    """The flags fused attention keeps for the generator's draw (p, seed, offset), from the
    device kernel, checked against the host's Philox bit for bit."""
    from genesis import dispatch
    from genesis.backends.cuda.array_ops import to_numpy
    got = dispatch.kernel("attention_dropout_mask", "cuda")(shape, *draw, 0)
    expected = dispatch.kernel("attention_dropout_mask", "cpu")(shape, *draw, None)
    np.testing.assert_array_equal(to_numpy(got), expected)
    return torch.from_numpy(expected)


@pytest.mark.usefixtures("backward_form")
@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("dtype", [genesis.bfloat16, genesis.float32], ids=str)
def test_dropout(dtype, masked):
    """dropout_p runs fused: the probabilities dropped are the flags the CUDA generator's draw
    names (the same in the backward), against torch's math on those flags; a key-padding
    mask beside it; the generator's offset advances past the draw."""
    (q, tq), (k, tk), (v, tv) = _leaves([(2, 4, 200, 64), (2, 4, 230, 64), (2, 4, 230, 64)],
                                        dtype)
    mask = torch.rand(2, 1, 1, 230) > 0.2 if masked else None
    generator = genesis.cuda.default_generators[0]
    seed, offset = generator.initial_seed(), generator.get_offset()
    out = F.scaled_dot_product_attention(
        q, k, v, attn_mask=None if mask is None else from_torch(mask, "cuda"), dropout_p=0.2)
    assert out.grad_fn.name() == FUSED
    assert generator.get_offset() == offset + 2 * 4 * 200 * 29  # ceil(230 / 8) counters a row
    scores = (tq @ tk.mT / 8.0)
    if mask is not None:
        scores = scores.masked_fill(~mask, -math.inf)
    keep = _flags((2, 4, 200, 230), (0.2, seed, offset))
    expected = (scores.softmax(-1) * keep / 0.8) @ tv
    grad = torch.randn(expected.shape).to(TORCH[dtype])
    expected.backward(grad.to(expected.dtype))
    out.backward(from_torch(grad, "cuda"))
    bounds = half_rounding_bounds(tq, tk, tv, grad, False, 1 / 8.0, dtype.name, mask)
    cancel_q, cancel_k = cancellation_bounds(tq, tk, tv, grad, False, 1 / 8.0, mask)
    bounds = [bounds[0], bounds[1] + cancel_q, bounds[2] + cancel_k, bounds[3]]
    for actual, ref, bound in zip((out, q.grad, k.grad, v.grad),
                                  (expected, tq.grad, tk.grad, tv.grad), bounds):
        _assert_grad_close(actual, ref, bound / 0.8, dtype)
