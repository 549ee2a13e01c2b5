"""The margin, ranking, embedding, likelihood and CTC losses and the distances against torch:
values and gradients for every reduction, dtypes, layouts, float64 gradcheck and torch's errors."""

import numpy as np
import pytest
import torch
import torch.nn as tnn
import torch.nn.functional as TF
from helpers import (MIXED_DTYPES, TORCH_DTYPES, assert_close, assert_refuses_as_torch,
                     check_mixed_dtypes, from_torch)

import genesis
import genesis.nn as nn
import genesis.nn.functional as F
from genesis.autograd import gradcheck


def _float(rng, shape, low=-2.0, high=2.0):
    return torch.tensor(rng.uniform(low, high, shape))


def _signs(rng, shape):
    return torch.tensor(rng.choice([-1.0, 1.0], shape))


# name -> (function of rng giving the torch inputs, kwargs variants); the first GRADS[name]
# inputs (default 1) are differentiated.
GRADS = {"margin_ranking_loss": 2, "cosine_embedding_loss": 2, "triplet_margin_loss": 3,
         "gaussian_nll_loss": 3, "kl_div": 2}
CASES = {
    "margin_ranking_loss": (lambda r: [_float(r, (7,)), _float(r, (7,)), _signs(r, (7,))],
                            [{}, {"margin": 0.5}]),
    "hinge_embedding_loss": (lambda r: [_float(r, (4, 5)),
                                        torch.tensor(r.choice([-1.0, 1.0, 0.0], (4, 5)))],
                             [{}, {"margin": 0.3}]),
    "soft_margin_loss": (lambda r: [_float(r, (3, 5)), _signs(r, (3, 5))], [{}]),
    "multilabel_soft_margin_loss": (
        lambda r: [_float(r, (4, 5)), torch.tensor(r.integers(0, 2, (4, 5)).astype(float))],
        [{}, {"weight": torch.tensor(np.linspace(0.5, 2, 5))}]),
    "cosine_embedding_loss": (lambda r: [_float(r, (5, 3)), _float(r, (5, 3)), _signs(r, (5,))],
                              [{}, {"margin": 0.2}]),
    "multi_margin_loss": (lambda r: [_float(r, (5, 4)), torch.tensor(r.integers(0, 4, 5))],
                          [{}, {"p": 2, "margin": 0.7},
                           {"weight": torch.tensor([0.5, 1.0, 2.0, 1.5], dtype=torch.float64)}]),
    "multilabel_margin_loss": (
        lambda r: [_float(r, (3, 5)), torch.tensor([[3, 0, -1, 1, 2], [1, 4, 2, 0, 3],
                                                    [-1, 2, 2, 2, 2]])], [{}]),
    "triplet_margin_loss": (lambda r: [_float(r, (4, 6)), _float(r, (4, 6)), _float(r, (4, 6))],
                            [{}, {"p": 1, "swap": True, "margin": 0.5}, {"p": 3}]),
    "poisson_nll_loss": (lambda r: [_float(r, (3, 4)), _float(r, (3, 4), 0, 5).round()],
                         [{}, {"full": True}]),
    "gaussian_nll_loss": (lambda r: [_float(r, (4, 3)), _float(r, (4, 3)),
                                     _float(r, (4, 1), 0.1, 2)], [{}, {"full": True}]),
    "kl_div": (lambda r: [torch.log_softmax(_float(r, (3, 4)), 1),
                          torch.log_softmax(_float(r, (3, 4)), 1)],
               [{"reduction": "batchmean", "log_target": True}]),
}
REDUCTIONS = ["none", "mean", "sum"]


def _run(name, inputs, kwargs, reduction, device):
    g_inputs = [from_torch(t, device=device) for t in inputs]
    for g, t in zip(g_inputs[:GRADS.get(name, 1)], inputs):
        g.requires_grad_(True)
        t.requires_grad_(True)
    g_kwargs = {k: from_torch(v, device=device) if isinstance(v, torch.Tensor) else v
                for k, v in kwargs.items()}
    kwargs = dict(kwargs, reduction=kwargs.get("reduction", reduction))
    g_kwargs["reduction"] = kwargs["reduction"]
    return (getattr(F, name)(*g_inputs, **g_kwargs), getattr(TF, name)(*inputs, **kwargs),
            g_inputs, inputs)


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_loss_matches_torch(name, reduction, rng, device):
    make, variants = CASES[name]
    for kwargs in variants:
        out_g, out_t, g_inputs, t_inputs = _run(name, make(rng), kwargs, reduction, device)
        assert_close(out_g, out_t)
        grad = torch.randn(out_t.shape, dtype=out_t.dtype)
        out_t.backward(grad)
        out_g.backward(from_torch(grad, device=device))
        for g, t in zip(g_inputs, t_inputs):
            if t.requires_grad:
                assert_close(g.grad, t.grad)


@pytest.mark.parametrize("name", list(CASES))
def test_loss_gradcheck(name, rng, device):
    make, variants = CASES[name]
    inputs = [from_torch(t, device=device) for t in make(rng)]
    floats = list(range(GRADS.get(name, 1)))
    kwargs = {k: from_torch(v, device=device) if isinstance(v, torch.Tensor) else v
              for k, v in variants[-1].items()}

    def fn(*leaves):
        args = list(inputs)
        for i, leaf in zip(floats, leaves):
            args[i] = leaf
        return getattr(F, name)(*args, **kwargs)
    leaves = [inputs[i].detach().requires_grad_(True) for i in floats]
    assert gradcheck(fn, tuple(leaves))


@pytest.mark.parametrize("dtype", [genesis.float32, genesis.bfloat16], ids=str)
def test_losses_in_lower_precision_and_strided(dtype, rng):
    """Transposed views and float32/bfloat16 inputs, each loss against torch in that dtype."""
    x1, x2 = _float(rng, (6, 5)).t(), _float(rng, (6, 5)).t()
    y = _signs(rng, (6, 5)).t()
    torch_dtype = TORCH_DTYPES[dtype]
    pairs = [("soft_margin_loss", (x1, y)), ("hinge_embedding_loss", (x1, y)),
             ("margin_ranking_loss", (x1, x2, y)), ("triplet_margin_loss", (x1, x2, -x1)),
             ("multilabel_soft_margin_loss", (x1, (y > 0).double())),
             ("poisson_nll_loss", (x1, x2.abs()))]
    for name, args in pairs:
        t_args = [a.to(torch_dtype) for a in args]
        g_args = [from_torch(a) for a in t_args]
        assert_close(getattr(F, name)(*g_args), getattr(TF, name)(*t_args))


def test_soft_margin_target_broadcasts_to_the_input_only(rng):
    """A target broadcasts to the input's shape but not past it: an (N, 1) input against an
    (N,) target is torch's RuntimeError, not an (N, N) loss."""
    x = _float(rng, (3, 1))
    for target in (_signs(rng, (3,)), _signs(rng, (1, 4))):
        with pytest.raises(RuntimeError) as expected:
            TF.soft_margin_loss(x, target)
        with pytest.raises(RuntimeError, match=f"^{expected.value}".replace("[", r"\[")):
            F.soft_margin_loss(from_torch(x), from_torch(target))
    target = _signs(rng, (1,))
    assert_close(F.soft_margin_loss(from_torch(x), from_torch(target)),
                 TF.soft_margin_loss(x, target))


@pytest.mark.parametrize("dtypes", MIXED_DTYPES + [("float16",) * 2, ("bfloat16",) * 2],
                         ids="-".join)
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_soft_margin_of_mixed_and_half_dtypes_as_torch(reduction, dtypes, rng):
    """Input and target of different floating dtypes (or one half dtype): the loss has the
    input's dtype, its margins rounded to it as torch's kernel writes them, and the input's
    gradient follows torch's formula."""
    base = rng.uniform(-2.0, 2.0, (4, 3)), rng.choice([-1.0, 1.0, 0.5], (4, 3))
    check_mixed_dtypes("soft_margin_loss", dtypes, base, lambda m: {"reduction": reduction},
                       target_grad=False)


@pytest.mark.parametrize("call", [
    lambda m: m.nn.functional.soft_margin_loss(m.ones(2, 3), m.ones(2, 3, requires_grad=True)),
    lambda m: m.nn.functional.soft_margin_loss(m.ones(2, 3), m.ones(3, requires_grad=True)),
    lambda m: m.nn.functional.soft_margin_loss(m.ones(2, 3, dtype=m.bool), m.ones(2, 3)),
    lambda m: m.nn.functional.soft_margin_loss(m.ones(2, 3, dtype=m.int32),
                                               m.ones(2, 3, dtype=m.float64)),
    lambda m: m.nn.functional.soft_margin_loss(m.ones(2, 3, dtype=m.int32),
                                               m.ones(2, 3, dtype=m.bool)),
    lambda m: m.nn.functional.soft_margin_loss(m.ones(2, 3, dtype=m.uint8),
                                               m.ones(2, 3, dtype=m.int64)),
])
def test_soft_margin_refusals_as_torch(call):
    """A target that requires grad (checked first), a bool input, and an integer input, which
    cannot hold the product or its exp, refused in torch's words."""
    assert_refuses_as_torch(call)


def test_soft_margin_node_has_an_edge_to_the_input_only():
    """The node's one edge is the input's, as torch's: the target takes no gradient."""
    names = []
    for lib in (torch, genesis):
        loss = lib.nn.functional.soft_margin_loss(lib.ones(3, requires_grad=True) * 2,
                                                  lib.ones(3))
        names.append([n.name().split("::")[-1] for n, _ in loss.grad_fn.next_functions])
    assert names[1] == names[0]


def test_empty_batch_matches_torch():
    for name, args in [("soft_margin_loss", (torch.ones(0, 3), torch.ones(0, 3))),
                       ("margin_ranking_loss", (torch.ones(0), torch.ones(0), torch.ones(0))),
                       ("multi_margin_loss", (torch.ones(0, 3), torch.ones(0).long()))]:
        # torch's multi_margin_loss "mean" and "sum" of nothing read uninitialised memory
        for reduction in ("none",) + (() if name == "multi_margin_loss" else ("sum", "mean")):
            out_t = getattr(TF, name)(*args, reduction=reduction)
            out_g = getattr(F, name)(*[from_torch(a) for a in args], reduction=reduction)
            assert_close(out_g, out_t)


def test_unbatched_and_broadcast_forms(rng):
    x = _float(rng, (4,))
    t = torch.tensor(2)
    assert_close(F.multi_margin_loss(from_torch(x), from_torch(t)), TF.multi_margin_loss(x, t))
    labels = torch.tensor([1, 3, -1, 0])
    assert_close(F.multilabel_margin_loss(from_torch(x), from_torch(labels), reduction="none"),
                 TF.multilabel_margin_loss(x, labels, reduction="none"))
    a, b = _float(rng, (4,)), _float(rng, (4,))
    assert_close(F.cosine_embedding_loss(from_torch(a), from_torch(b), from_torch(torch.tensor(-1.))),
                 TF.cosine_embedding_loss(a, b, torch.tensor(-1.)))
    var = _float(rng, (3,), 0.5, 1)
    x3, y3 = _float(rng, (3, 2)), _float(rng, (3, 2))
    assert_close(F.gaussian_nll_loss(*map(from_torch, (x3, y3, var))),
                 TF.gaussian_nll_loss(x3, y3, var))
    assert_close(F.gaussian_nll_loss(from_torch(x3), from_torch(y3), 0.5),
                 TF.gaussian_nll_loss(x3, y3, 0.5))


def test_gaussian_nll_clamp_passes_gradient():
    x = torch.tensor([2.0, 3.0])
    var = torch.tensor([1e-9, 1.0], requires_grad=True)
    TF.gaussian_nll_loss(x, torch.zeros(2), var).backward()
    g_var = genesis.tensor([1e-9, 1.0], requires_grad=True)
    F.gaussian_nll_loss(from_torch(x), genesis.zeros(2), g_var).backward()
    assert_close(g_var.grad, var.grad)


def test_triplet_with_distance_function(rng):
    a, p, n = (_float(rng, (5, 3)) for _ in range(3))
    cos = lambda u, v: 1 - TF.cosine_similarity(u, v)  # noqa: E731
    g_cos = lambda u, v: 1 - F.cosine_similarity(u, v)  # noqa: E731
    for kwargs in ({}, {"margin": 0.3, "swap": True}):
        assert_close(F.triplet_margin_with_distance_loss(*map(from_torch, (a, p, n)),
                                                         distance_function=g_cos, **kwargs),
                     TF.triplet_margin_with_distance_loss(a, p, n, distance_function=cos,
                                                          **kwargs))
    module = nn.TripletMarginWithDistanceLoss(margin=0.5)
    assert_close(module(*map(from_torch, (a, p, n))),
                 tnn.TripletMarginWithDistanceLoss(margin=0.5)(a, p, n))


@pytest.mark.parametrize("dtype", [genesis.float32, genesis.float64, genesis.bfloat16], ids=str)
def test_distances_match_torch(dtype, rng, device):
    """Gradients summed over a broadcast dim cancel; in bfloat16 they are held to an ulp of the
    largest (torch sums in float32 in another order)."""
    torch_dtype = TORCH_DTYPES[dtype]

    def grad_close(actual, expected):
        scale = float(expected.abs().max()) * 2.0 ** -8 if dtype is genesis.bfloat16 else 0
        assert_close(actual, expected, atol=scale or None)
    cases = [((4, 5), (4, 5)), ((3, 1, 5), (4, 5)), ((5,), (5,)), ((0, 5), (1, 5))]
    for s1, s2 in cases:
        a, b = _float(rng, s1).to(torch_dtype), _float(rng, s2).to(torch_dtype)
        for p in (2.0, 1.0, 3.0):
            ga = from_torch(a, device=device, requires_grad=True)
            gb = from_torch(b, device=device, requires_grad=True)
            ta, tb = a.clone().requires_grad_(True), b.clone().requires_grad_(True)
            out_g, out_t = F.pairwise_distance(ga, gb, p), TF.pairwise_distance(ta, tb, p)
            assert_close(out_g, out_t)
            if out_t.numel():
                out_g.sum().backward()
                out_t.sum().backward()
                grad_close(ga.grad, ta.grad)
        # cosine_similarity of half types computes in float32, rounding once.
        ga = from_torch(a, device=device, requires_grad=True)
        gb = from_torch(b, device=device, requires_grad=True)
        wide = torch.float32 if dtype is genesis.bfloat16 else torch_dtype
        ta, tb = a.to(wide).requires_grad_(True), b.to(wide).requires_grad_(True)
        out_g, out_t = F.cosine_similarity(ga, gb, -1), TF.cosine_similarity(ta, tb, -1)
        assert_close(out_g, out_t.to(torch_dtype))
        if out_t.numel():
            out_g.sum().backward()
            out_t.sum().backward()
            assert_close(gb.grad, tb.grad.to(torch_dtype))
    zero = torch.zeros(2, 3, dtype=torch_dtype)
    assert_close(nn.CosineSimilarity()(from_torch(zero), from_torch(zero)),
                 tnn.CosineSimilarity()(zero, zero))
    a = _float(rng, (5, 3)).to(torch_dtype)
    if dtype is not genesis.bfloat16:  # torch's CPU pdist has no bfloat16
        assert_close(F.pdist(from_torch(a)), TF.pdist(a))
    assert_close(nn.PairwiseDistance(keepdim=True)(from_torch(a), from_torch(a.flip(0))),
                 tnn.PairwiseDistance(keepdim=True)(a, a.flip(0)))


def test_distance_gradcheck(rng):
    a = genesis.tensor(rng.uniform(-1, 1, (3, 4)), requires_grad=True, dtype=genesis.float64)
    b = genesis.tensor(rng.uniform(-1, 1, (3, 4)), requires_grad=True, dtype=genesis.float64)
    assert gradcheck(lambda u, v: F.cosine_similarity(u, v), (a, b))
    assert gradcheck(lambda u, v: F.pairwise_distance(u, v, 3.0), (a, b))
    assert gradcheck(lambda u: F.pdist(u), (a,))


def _ctc_inputs(rng, steps, batch, classes, width):
    logits = torch.tensor(rng.standard_normal((steps, batch, classes)))
    targets = torch.tensor(rng.integers(1, classes, (batch, width)))
    return logits, targets


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("concatenated", [False, True])
def test_ctc_loss_matches_torch(reduction, concatenated, rng, device):
    logits, targets = _ctc_inputs(rng, 13, 4, 5, 5)
    input_lengths, target_lengths = [13, 10, 6, 8], [5, 3, 0, 4]
    targets[1, 1] = targets[1, 0]  # a repeated label needs a blank between
    if concatenated:
        targets = torch.cat([targets[n, :k] for n, k in enumerate(target_lengths)])
    ta = logits.clone().requires_grad_(True)
    out_t = TF.ctc_loss(ta.log_softmax(-1), targets, torch.tensor(input_lengths),
                        torch.tensor(target_lengths), reduction=reduction)
    ga = from_torch(logits, device=device, requires_grad=True)
    out_g = F.ctc_loss(ga.log_softmax(-1), from_torch(targets, device=device), from_torch(
        torch.tensor(input_lengths), device=device), target_lengths, reduction=reduction)
    assert_close(out_g, out_t)
    grad = torch.rand(out_t.shape, dtype=out_t.dtype)
    out_t.backward(grad)
    out_g.backward(from_torch(grad, device=device))
    assert_close(ga.grad, ta.grad)
    # The gradient with respect to log_probs themselves, with torch's convention.
    lp = logits.log_softmax(-1).float().requires_grad_(True)
    TF.ctc_loss(lp, targets, input_lengths, target_lengths, blank=0).backward()
    g_lp = from_torch(lp.detach(), device=device, requires_grad=True)
    F.ctc_loss(g_lp, from_torch(targets, device=device), input_lengths,
               target_lengths).backward()
    assert_close(g_lp.grad, lp.grad)


def test_ctc_blank_zero_infinity_and_module(rng):
    logits, targets = _ctc_inputs(rng, 4, 3, 6, 3)
    targets[:, :] = torch.tensor([1, 1, 1])  # needs 5 frames: infinite loss for 4 frames
    targets[2] = torch.tensor([2, 3, 4])
    input_lengths, target_lengths = [4, 4, 4], [3, 2, 3]
    for zero_infinity in (False, True):
        for blank in (0, 5):
            ta = logits.clone().requires_grad_(True)
            module_t = tnn.CTCLoss(blank=blank, reduction="sum", zero_infinity=zero_infinity)
            module_g = nn.CTCLoss(blank=blank, reduction="sum", zero_infinity=zero_infinity)
            tgt = targets if blank == 0 else targets - 1
            out_t = module_t(ta.log_softmax(2), tgt, input_lengths, target_lengths)
            ga = from_torch(logits, requires_grad=True)
            out_g = module_g(ga.log_softmax(2), from_torch(tgt), input_lengths, target_lengths)
            assert_close(out_g, out_t)
            if zero_infinity:
                out_t.backward()
                out_g.backward()
                assert_close(ga.grad, ta.grad)
    unbatched = logits[:, 0]
    assert_close(F.ctc_loss(from_torch(unbatched).log_softmax(1), genesis.tensor([2, 3]), [4],
                            [2], reduction="none"),
                 TF.ctc_loss(unbatched.log_softmax(1), torch.tensor([2, 3]), [4], [2],
                             reduction="none"))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_ctc_infinite_loss_gradient_is_nan_as_torch(reduction, rng, device):
    """Without zero_infinity, a sample too short for its target (an infinite loss) gets torch's
    nan gradient on its frames (zero past its length); the other samples' gradients stay."""
    logits, targets = _ctc_inputs(rng, 6, 3, 5, 4)
    targets[0] = torch.tensor([1, 1, 1, 1])  # 6 frames: the repeats need 7
    input_lengths, target_lengths = [6, 5, 3], [4, 3, 2]
    lp = logits.log_softmax(-1).float().requires_grad_(True)
    out_t = TF.ctc_loss(lp, targets, input_lengths, target_lengths, reduction=reduction)
    g_lp = from_torch(lp.detach(), device=device, requires_grad=True)
    out_g = F.ctc_loss(g_lp, from_torch(targets, device=device), input_lengths, target_lengths,
                       reduction=reduction)
    grad = torch.rand(out_t.shape)
    out_t.backward(grad)
    out_g.backward(from_torch(grad, device=device))
    assert torch.isnan(lp.grad[:, 0]).all() and not torch.isnan(lp.grad[:, 1:]).any()
    np.testing.assert_allclose(out_g.detach().cpu().numpy(), out_t.detach().numpy(), rtol=1e-5)
    np.testing.assert_allclose(g_lp.grad.cpu().numpy(), lp.grad.numpy(), rtol=1e-4, atol=1e-6)


_CTC_BAD_CALLS = [  # (log_probs shape, dtype, targets, input_lengths, target_lengths, blank)
    ((4, 2, 5), "float32", [[1, 2], [1, 2]], (4, 3, 2), (2, 1), 0),
    ((4, 2, 5), "float32", [[1, 2], [1, 2]], (4, 3), (2, 1, 1), 0),
    ((4, 2, 5), "float32", [[1, 2], [1, 2]], (4, -1), (2, 1), 0),
    ((4, 2, 5), "float32", [[1, 2], [1, 2]], (4, 5), (2, 1), 0),
    ((4, 2, 5), "float32", [[1, 2], [1, 2]], (4, 3), (2, -1), 0),
    ((4, 2, 5), "float32", [[1, 2], [1, 2]], (4, 3), (3, 1), 0),
    ((4, 2, 5), "float32", [[1, 2], [1, 2], [1, 2]], (4, 3), (2, 1), 0),
    ((4, 2, 5), "float32", [[[1, 2], [1, 2]]], (4, 3), (2, 1), 0),
    ((4, 2, 5), "float32", [1, 2], (4, 3), (2, 1), 0),
    ((4, 2, 5), "float32", [1, 2, 2, 1], (4, 3), (2, 1), 0),
    ((4, 2, 5), "float32", [[1, 2], [1, 2]], (4, 3), (2, 1), 5),
    ((4, 2, 5), "float32", [[1, 2], [1, 2]], (4, 3), (2, 1), -1),
    ((1, 4, 2, 5), "float32", [[1, 2], [1, 2]], (4, 3), (2, 1), 0),
    ((4, 2, 5), "int64", [[1, 2], [1, 2]], (4, 3), (2, 1), 0),
]


@pytest.mark.parametrize("shape, dtype, targets, input_lengths, target_lengths, blank",
                         _CTC_BAD_CALLS)
def test_ctc_argument_errors_match_torch(shape, dtype, targets, input_lengths, target_lengths,
                                         blank):
    """ctc_loss's argument checks raise torch's errors, in its order and words."""
    log_probs = np.zeros(shape, dtype=dtype)
    errors = []
    for lib in (torch, genesis):
        with pytest.raises((RuntimeError, NotImplementedError)) as caught:
            lib.nn.functional.ctc_loss(lib.tensor(log_probs), lib.tensor(targets),
                                       input_lengths, target_lengths, blank=blank)
        errors.append((caught.type, str(caught.value)))
    assert errors[1] == errors[0]


def test_ctc_gradcheck(rng):
    logits, targets = _ctc_inputs(rng, 5, 2, 4, 2)
    x = from_torch(logits, requires_grad=True)
    assert gradcheck(lambda v: F.ctc_loss(v.log_softmax(-1), from_torch(targets), [5, 4], [2, 1]),
                     (x,))


def _raises_like_torch(g_call, t_call, error):
    with pytest.raises(error) as torch_error:
        t_call()
    with pytest.raises(error) as genesis_error:
        g_call()
    return str(torch_error.value), str(genesis_error.value)


def test_errors_match_torch():
    ones, g_ones = torch.ones, genesis.ones
    expected = _raises_like_torch(
        lambda: F.margin_ranking_loss(g_ones(3), g_ones(3, 1), g_ones(3)),
        lambda: TF.margin_ranking_loss(ones(3), ones(3, 1), ones(3)), RuntimeError)
    assert expected[0] == expected[1]
    for g_call, t_call, error in [
        (lambda: F.multi_margin_loss(g_ones(3, 4), genesis.tensor([0, 1, 2]), p=3),
         lambda: TF.multi_margin_loss(ones(3, 4), torch.tensor([0, 1, 2]), p=3), ValueError),
        (lambda: F.multi_margin_loss(g_ones(3, 4), genesis.tensor([0, 1, 5])),
         lambda: TF.multi_margin_loss(ones(3, 4), torch.tensor([0, 1, 5])), RuntimeError),
        (lambda: F.multi_margin_loss(g_ones(3, 4), genesis.tensor([0, 1])),
         lambda: TF.multi_margin_loss(ones(3, 4), torch.tensor([0, 1])), RuntimeError),
        (lambda: F.triplet_margin_loss(g_ones(3, 4), g_ones(3, 4), g_ones(4)),
         lambda: TF.triplet_margin_loss(ones(3, 4), ones(3, 4), ones(4)), RuntimeError),
        (lambda: F.gaussian_nll_loss(g_ones(3, 4), g_ones(3, 4), -g_ones(3, 4)),
         lambda: TF.gaussian_nll_loss(ones(3, 4), ones(3, 4), -ones(3, 4)), ValueError),
        (lambda: F.gaussian_nll_loss(g_ones(3, 4), g_ones(3, 4), g_ones(2, 4)),
         lambda: TF.gaussian_nll_loss(ones(3, 4), ones(3, 4), ones(2, 4)), ValueError),
        (lambda: F.soft_margin_loss(g_ones(3), g_ones(3), reduction="avg"),
         lambda: TF.soft_margin_loss(ones(3), ones(3), reduction="avg"), ValueError),
        (lambda: F.triplet_margin_with_distance_loss(g_ones(2), g_ones(2), g_ones(2), margin=0),
         lambda: TF.triplet_margin_with_distance_loss(ones(2), ones(2), ones(2), margin=0),
         ValueError),
        (lambda: F.multilabel_margin_loss(g_ones(3, 4), genesis.full((3, 4), 7)),
         lambda: TF.multilabel_margin_loss(ones(3, 4), torch.full((3, 4), 7)), RuntimeError),
        (lambda: F.ctc_loss(g_ones(3, 2, 4), genesis.ones(2, 2).long(), [3, 4], [2, 2]),
         lambda: TF.ctc_loss(ones(3, 2, 4), torch.ones(2, 2).long(), [3, 4], [2, 2]),
         RuntimeError),
        (lambda: F.pairwise_distance(g_ones(3, 4), g_ones(3, 5)),
         lambda: TF.pairwise_distance(ones(3, 4), ones(3, 5)), RuntimeError),
    ]:
        _raises_like_torch(g_call, t_call, error)
    with pytest.raises(ValueError, match="only p == 1 and p == 2"):
        nn.MultiMarginLoss(p=3)


@pytest.mark.parametrize("name", ["multi_margin_loss", "multilabel_margin_loss"])
def test_margin_losses_take_int64_targets_only(name):
    """torch's margin-loss kernels read int64 class indices only (no int32, unlike gather)."""
    shape = (3,) if name == "multi_margin_loss" else (3, 4)
    expected, got = _raises_like_torch(
        lambda: getattr(F, name)(genesis.ones(3, 4), genesis.zeros(shape, dtype=genesis.int32)),
        lambda: getattr(TF, name)(torch.ones(3, 4), torch.zeros(shape, dtype=torch.int32)),
        RuntimeError)
    assert got == f"{name}: {expected}"


def test_module_reprs_and_defaults():
    for name in ["PoissonNLLLoss", "GaussianNLLLoss", "MarginRankingLoss", "HingeEmbeddingLoss",
                 "CosineEmbeddingLoss", "SoftMarginLoss", "MultiLabelMarginLoss",
                 "MultiLabelSoftMarginLoss", "MultiMarginLoss", "TripletMarginLoss",
                 "CTCLoss", "TripletMarginWithDistanceLoss"]:
        g_module, t_module = getattr(nn, name)(), getattr(tnn, name)()
        assert repr(g_module) == repr(t_module)
        assert g_module.reduction == t_module.reduction
        for attr in ("margin", "p", "eps", "swap", "full", "log_input", "blank",
                     "zero_infinity"):
            assert getattr(g_module, attr, None) == getattr(t_module, attr, None), (name, attr)


@pytest.mark.parametrize("call", [
    lambda m: m.nn.functional.cosine_embedding_loss(m.ones(2, 3, 4), m.ones(2, 3, 4), m.ones(2)),
    lambda m: m.nn.CosineEmbeddingLoss()(m.ones(2, 3), m.ones(2, 3, 4), m.ones(2)),
    lambda m: m.nn.functional.cosine_embedding_loss(m.ones(3), m.ones(3), m.ones(1)),
    lambda m: m.nn.functional.cosine_embedding_loss(m.ones(2, 3), m.ones(2, 3), m.tensor(1.0)),
    lambda m: m.nn.functional.cosine_embedding_loss(m.ones(2, 3, 4), m.ones(2, 3, 4),
                                                    m.ones(2, 3))])
def test_cosine_embedding_dims_refused_as_torch(call):
    """A target of more than one dim, and inputs of another number of dims than the target's
    plus one, are refused in torch's kernel's words."""
    assert_refuses_as_torch(call)
