"""Loss modules and functions against torch: values and gradients of input (and target)."""

import warnings

import numpy as np
import pytest
import torch
from helpers import (MIXED_DTYPES, TORCH_DTYPES, assert_close, assert_refuses_as_torch,
                     check_mixed_dtypes)

import genesis
from genesis import nn

FLOATS = [genesis.float32, genesis.float64]


def _float(rng, shape, dtype, low=-2.0, high=2.0, grad=True, device="cpu"):
    g = genesis.tensor(rng.uniform(low, high, shape), dtype=dtype, device=device)
    t = torch.from_numpy(g.cpu().numpy().copy())
    if grad:
        g.requires_grad_()
        t.requires_grad_()
    return g, t


def _index(rng, shape, classes, ignore=None, device="cpu"):
    values = rng.integers(0, classes, shape)
    if ignore is not None and values.size:
        values.reshape(-1)[:2] = ignore
    return genesis.tensor(values, device=device), torch.from_numpy(values)


def _weight(rng, classes, dtype, device="cpu"):
    w = rng.uniform(0.2, 2.0, classes)
    g = genesis.tensor(w, dtype=dtype, device=device)
    return g, torch.from_numpy(w).to(TORCH_DTYPES[dtype])


def _check(name, args, kwargs, g_inputs, t_inputs, dtype, rng):
    """Run the loss module in both frameworks; compare value and every float input's gradient."""
    g_kwargs, t_kwargs = {}, {}
    for key, value in kwargs.items():
        g_kwargs[key], t_kwargs[key] = value if isinstance(value, tuple) else (value, value)
    g_loss = getattr(nn, name)(*args, **g_kwargs)(*g_inputs)
    t_loss = getattr(torch.nn, name)(*args, **t_kwargs)(*t_inputs)
    assert_close(g_loss, t_loss, dtype)
    grad = rng.standard_normal(tuple(t_loss.shape))
    t_loss.backward(torch.from_numpy(np.asarray(grad)).to(t_loss.dtype))
    g_loss.backward(genesis.tensor(grad, dtype=g_loss.dtype, device=g_loss.device))
    for g, t in zip(g_inputs, t_inputs):
        if t.requires_grad:
            assert_close(g.grad, t.grad, dtype)


REDUCTIONS = ["mean", "sum", "none"]


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.name)
@pytest.mark.parametrize("shape", [(5, 4), (3, 4, 2, 3), (4,)], ids=str)
@pytest.mark.parametrize("options", ["plain", "weight", "ignore", "smooth", "all"])
def test_cross_entropy_class_indices(options, shape, dtype, reduction, rng, device):
    classes = shape[0] if len(shape) == 1 else shape[1]
    target_shape = () if len(shape) == 1 else (shape[0],) + shape[2:]
    x = _float(rng, shape, dtype, device=device)
    ignore = 1 if options in ("ignore", "all") else None
    target = _index(rng, target_shape, classes, ignore if len(shape) > 1 else None, device=device)
    kwargs = {"reduction": reduction}
    if options in ("weight", "all"):
        kwargs["weight"] = _weight(rng, classes, dtype, device=device)
    if ignore is not None:
        kwargs["ignore_index"] = ignore
    if options in ("smooth", "all"):
        kwargs["label_smoothing"] = 0.2
    _check("CrossEntropyLoss", (), kwargs, [x[0], target[0]], [x[1], target[1]], dtype, rng)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.name)
@pytest.mark.parametrize("shape", [(5, 4), (2, 3, 4)], ids=str)
@pytest.mark.parametrize("options", ["plain", "weight_smooth"])
def test_cross_entropy_probabilities(options, shape, dtype, reduction, rng, device):
    x = _float(rng, shape, dtype, device=device)
    p = rng.random(shape)
    p = p / p.sum(1, keepdims=True)
    target = (genesis.tensor(p, dtype=dtype, device=device).requires_grad_(),
              torch.from_numpy(p).to(TORCH_DTYPES[dtype]).requires_grad_())
    kwargs = {"reduction": reduction}
    if options == "weight_smooth":
        kwargs["weight"] = _weight(rng, shape[1], dtype, device=device)
        kwargs["label_smoothing"] = 0.1
    _check("CrossEntropyLoss", (), kwargs, [x[0], target[0]], [x[1], target[1]], dtype, rng)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.name)
@pytest.mark.parametrize("shape", [(6, 3), (2, 3, 5), (3,)], ids=str)
@pytest.mark.parametrize("weighted", [False, True])
def test_nll_loss(weighted, shape, dtype, reduction, rng, device):
    classes = shape[0] if len(shape) == 1 else shape[1]
    target_shape = () if len(shape) == 1 else (shape[0],) + shape[2:]
    x = _float(rng, shape, dtype, device=device)
    target = _index(rng, target_shape, classes, 0 if len(shape) > 1 else None, device=device)
    kwargs = {"reduction": reduction, "ignore_index": 0}
    if weighted:
        kwargs["weight"] = _weight(rng, classes, dtype, device=device)
    _check("NLLLoss", (), kwargs, [x[0], target[0]], [x[1], target[1]], dtype, rng)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.name)
@pytest.mark.parametrize("name, kwargs", [("MSELoss", {}), ("L1Loss", {}),
                                          ("SmoothL1Loss", {}), ("SmoothL1Loss", {"beta": 0.5}),
                                          ("SmoothL1Loss", {"beta": 0.0}),
                                          ("HuberLoss", {"delta": 0.7})], ids=str)
def test_regression_losses(name, kwargs, dtype, reduction, rng, device):
    x, y = _float(rng, (4, 5), dtype, device=device), _float(rng, (4, 5), dtype, device=device)
    _check(name, (), dict(kwargs, reduction=reduction), [x[0], y[0]], [x[1], y[1]], dtype, rng)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name, kwargs", [("mse_loss", {}), ("smooth_l1_loss", {"beta": 0.5}),
                                          ("huber_loss", {"delta": 0.7})], ids=str)
def test_fused_regression_losses_are_one_node(name, kwargs, reduction, rng):
    """mse, smooth L1 and Huber losses are one node with an edge to input and target, as
    torch's fused kernels: the graph walk meets the inputs' producers next, and gradients of the
    gradient (through create_graph) agree with torch's."""
    x, y = _float(rng, (4, 5), genesis.float64), _float(rng, (4, 5), genesis.float64)
    seen = []
    for lib, a, b in ((torch, x[1], y[1]), (genesis, x[0], y[0])):
        loss = getattr(lib.nn.functional, name)(a * 2, b, reduction=reduction, **kwargs)
        grads = lib.autograd.grad(loss.sum(), (a, b), create_graph=True)
        (grads[0] * grads[1]).sum().backward()
        seen.append((loss, [repr(n).split(" object")[0] for n, _ in loss.grad_fn.next_functions],
                     grads, a.grad, b.grad))
    (t_loss, t_names, t_grads, *t_second), (g_loss, g_names, g_grads, *g_second) = seen
    assert g_names == t_names == ["<MulBackward0", "<AccumulateGrad"]
    assert_close(g_loss, t_loss)
    for g, t in zip(g_grads + tuple(g_second), t_grads + tuple(t_second)):
        assert_close(g, t)


@pytest.mark.parametrize("name", ["mse_loss", "smooth_l1_loss", "huber_loss"])
def test_fused_loss_of_a_target_computed_from_the_input(name, rng, device):
    """A fused loss whose target is a function of its input: the gradient of its gradient
    takes the node's partial derivatives (torch's), not the input's share counted again
    through the target."""
    base = rng.uniform(-2.0, 2.0, (3, 4))
    seen = []
    for lib in (torch, genesis):
        x = lib.tensor(base, dtype=lib.float64, device="cpu" if lib is torch else device,
                       requires_grad=True)
        g, = lib.autograd.grad(getattr(lib.nn.functional, name)(x, (x * 3).sin()), x,
                               create_graph=True)
        seen.append((g,) + lib.autograd.grad((g * g).sum(), x))
    for g, t in zip(seen[1], seen[0]):
        assert_close(g, t)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.name)
@pytest.mark.parametrize("weighted", [False, True])
def test_bce_loss(weighted, dtype, reduction, rng, device):
    x = _float(rng, (4, 3), dtype, 0.02, 0.98, device=device)
    y = _float(rng, (4, 3), dtype, 0.0, 1.0, device=device)
    kwargs = {"reduction": reduction}
    if weighted:
        kwargs["weight"] = _weight(rng, 3, dtype, device=device)
    _check("BCELoss", (), kwargs, [x[0], y[0]], [x[1], y[1]], dtype, rng)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.name)
@pytest.mark.parametrize("options", ["plain", "weight", "pos_weight", "both"])
def test_bce_with_logits_loss(options, dtype, reduction, rng, device):
    x = _float(rng, (4, 3), dtype, -30.0, 30.0, device=device)
    y = _float(rng, (4, 3), dtype, 0.0, 1.0, device=device)
    kwargs = {"reduction": reduction}
    if options in ("weight", "both"):
        kwargs["weight"] = _weight(rng, 3, dtype, device=device)
    if options in ("pos_weight", "both"):
        kwargs["pos_weight"] = _weight(rng, 3, dtype, device=device)
    _check("BCEWithLogitsLoss", (), kwargs, [x[0], y[0]], [x[1], y[1]], dtype, rng)


@pytest.mark.parametrize("dtypes", MIXED_DTYPES + [("float16",) * 2, ("bfloat16",) * 2],
                         ids="-".join)
@pytest.mark.parametrize("reduction", ["none", "mean"])
@pytest.mark.parametrize("options", ["plain", "weight", "pos_weight"])
def test_bce_with_logits_of_mixed_and_half_dtypes_as_torch(options, reduction, dtypes, rng):
    """Input and target of different floating dtypes (or one half dtype): the loss has the
    target's dtype, and it and the gradients are rounded as torch's in-place steps round them
    (a float64 weight, a float16 pos_weight included)."""
    base = rng.uniform(-3.0, 3.0, (4, 3)), rng.uniform(0.0, 1.0, (4, 3))
    def extra(m):
        kwargs = {"reduction": reduction}
        if options == "weight":
            kwargs["weight"] = m.tensor([0.5, 1.5, 2.0], dtype=m.float64)
        if options == "pos_weight":
            kwargs["pos_weight"] = m.tensor([0.5, 1.5, 2.0], dtype=m.float16)
        return kwargs
    check_mixed_dtypes("binary_cross_entropy_with_logits", dtypes, base, extra)


@pytest.mark.parametrize("dtypes", MIXED_DTYPES, ids="-".join)
@pytest.mark.parametrize("reduction", ["none", "mean"])
@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
                                  "binary_cross_entropy"])
def test_losses_of_mixed_dtypes_as_torch(name, reduction, dtypes, rng):
    """Input and target of different floating dtypes: mse, L1 and smooth L1 promote, Huber
    writes its loss in the input's dtype and refuses the gradient, BCE refuses the pair, each
    as torch."""
    base = rng.uniform(0.05, 0.95, (4, 3)), rng.uniform(0.0, 1.0, (4, 3))
    check_mixed_dtypes(name, dtypes, base, lambda m: {"reduction": reduction})


@pytest.mark.parametrize("dtypes", MIXED_DTYPES, ids="-".join)
@pytest.mark.parametrize("reduction", ["none", "batchmean"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div_of_mixed_dtypes_as_torch(log_target, reduction, dtypes, rng):
    """Input and target of different floating dtypes: kl_div promotes, as torch's (xlogy of a
    half target rounded as torch's CPU kernel rounds it). The values keep the terms and the
    target's gradient, log(t) + 1 - x, away from cancellation, which would leave only the
    summation order's rounding to compare."""
    base = rng.uniform(-3.0, -2.0, (4, 3)), rng.uniform(-1.0 if log_target else 0.4, 1.0, (4, 3))
    check_mixed_dtypes("kl_div", dtypes, base,
                       lambda m: {"reduction": reduction, "log_target": log_target})


@pytest.mark.parametrize("dtypes", [("float32", "float64"), ("float16", "float32")],
                         ids="-".join)
def test_huber_loss_refuses_a_target_gradient_of_another_dtype_as_torch(dtypes):
    """Where only the target requires grad, torch's refusal names the dtypes the other way
    round (its backward kernel takes the target first)."""
    def call(m):
        x = m.ones(2, 3, dtype=getattr(m, dtypes[0]))
        y = m.zeros(2, 3, dtype=getattr(m, dtypes[1]), requires_grad=True)
        m.nn.functional.huber_loss(x, y).backward()
    assert_refuses_as_torch(call)


@pytest.mark.filterwarnings("ignore:Using a target size")
@pytest.mark.parametrize("call", [
    lambda m: m.nn.functional.huber_loss(m.ones(2, 3), m.zeros(2, 3), delta=0.0),
    lambda m: m.nn.HuberLoss(delta=-1.0)(m.ones(2, 3), m.zeros(2, 3)),
    lambda m: m.nn.functional.huber_loss(m.ones(2, 3), m.zeros(2, 3), delta=-1.0,
                                         weight=m.ones(3)),
    lambda m: m.nn.functional.huber_loss(m.ones(2, 3), m.zeros(3), weight=m.ones(3)),
    lambda m: m.nn.functional.mse_loss(m.ones(2, 3), m.zeros(2, 3), weight=m.ones(3)),
    lambda m: m.nn.functional.l1_loss(m.ones(2, 3), m.zeros(2, 3), weight=m.ones(2, 1)),
])
def test_huber_delta_and_loss_weights_refused_as_torch(call):
    """A Huber delta that is not positive, and a weight of another size than the input's,
    refused in torch's words, the weight first."""
    assert_refuses_as_torch(call)


@pytest.mark.parametrize("names", [("weight",), ("pos_weight",), ("weight", "pos_weight")])
def test_bce_with_logits_weights_take_no_gradient_as_torch(names):
    """A weight or pos_weight that requires grad is refused as torch refuses it (weight
    first); under no_grad it is taken."""
    def call(m):
        weights = {name: m.ones(3, requires_grad=True) for name in names}
        return m.nn.functional.binary_cross_entropy_with_logits(m.zeros(2, 3),
                                                                m.ones(2, 3), **weights)
    assert_refuses_as_torch(call)
    with genesis.no_grad():
        assert not call(genesis).requires_grad


def test_bce_with_logits_node_has_edges_to_input_and_target_only():
    """The node's edges are the input's and the target's, none to the weights, as torch's."""
    names = []
    for lib in (torch, genesis):
        x, y = lib.zeros(2, 3, requires_grad=True), lib.ones(2, 3, requires_grad=True)
        loss = lib.nn.functional.binary_cross_entropy_with_logits(
            x * 2, y, weight=lib.ones(3), pos_weight=lib.ones(3))
        names.append([n.name().split("::")[-1] for n, _ in loss.grad_fn.next_functions])
    assert names[1] == names[0]


@pytest.mark.filterwarnings("ignore:reduction")
@pytest.mark.parametrize("reduction", REDUCTIONS + ["batchmean"])
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.name)
@pytest.mark.parametrize("target_kind", ["log", "probabilities", "with_zeros"])
def test_kl_div_loss(target_kind, dtype, reduction, rng, device):
    x = _float(rng, (4, 5), dtype, -3.0, 0.0, device=device)
    if target_kind == "log":
        y = _float(rng, (4, 5), dtype, -3.0, 0.0, device=device)
    elif target_kind == "probabilities":
        y = _float(rng, (4, 5), dtype, 0.05, 1.0, device=device)
    else:
        values = rng.uniform(0.0, 1.0, (4, 5))
        values[0, :2] = 0.0
        y = (genesis.tensor(values, dtype=dtype, device=device),
             torch.from_numpy(values).to(TORCH_DTYPES[dtype]))
    _check("KLDivLoss", (), {"reduction": reduction, "log_target": target_kind == "log"},
           [x[0], y[0]], [x[1], y[1]], dtype, rng)


@pytest.mark.parametrize("label_smoothing", [0.0, 0.3])
def test_cross_entropy_all_ignored_is_nan_with_zero_gradient(label_smoothing, device):
    x = genesis.randn(2, 3, requires_grad=True, device=device)
    loss = nn.functional.cross_entropy(x, genesis.tensor([-100, -100], device=device),
                                       label_smoothing=label_smoothing)
    assert np.isnan(loss.item())
    loss.backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), 0)


def test_value_errors_checked_on_the_cpu():
    """Errors that depend on the values are raised on the CPU only (GPU kernels check nothing
    that would need a synchronization, as torch's)."""
    with pytest.raises(IndexError, match="Target 7 is out of bounds"):
        nn.functional.cross_entropy(genesis.randn(2, 3), genesis.tensor([0, 7]))
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        nn.functional.binary_cross_entropy(genesis.tensor([1.5]), genesis.tensor([1.0]))


def test_loss_errors(device):
    F = nn.functional

    def randn(*shape):
        return genesis.randn(*shape, device=device)

    def tensor(data):
        return genesis.tensor(data, device=device)

    with pytest.raises(ValueError, match=r"Expected input batch_size \(2\) to match target "
                                         r"batch_size \(3\)"):
        F.nll_loss(randn(2, 3), tensor([0, 1, 2]))
    with pytest.raises(ValueError, match="is not a valid value for reduction"):
        F.mse_loss(randn(2), randn(2), reduction="avg")
    with pytest.raises(ValueError, match="must be the same as input size"):
        F.binary_cross_entropy_with_logits(randn(2), randn(3))
    with pytest.raises(ValueError, match="label_smoothing must be between"):
        F.cross_entropy(randn(2, 3), tensor([0, 1]), label_smoothing=1.5)
    with pytest.warns(UserWarning, match="different to the input size"):
        F.mse_loss(randn(2, 3), randn(3))


def _raised_or_warned(lib, fn, args):
    """What `fn(*args)` of `lib` raises or warns: (category, text), or None."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            fn(*args)
        except (ValueError, RuntimeError) as e:
            return type(e), str(e)
    return (caught[0].category, str(caught[0].message)) if caught else None


@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
                                  "binary_cross_entropy", "binary_cross_entropy_with_logits"])
def test_mismatched_target_size_messages_print_sizes_as_torch(name, rng, device):
    """A target of another shape than the input (a DQN's Q-values (N, 1) against targets (N),
    a classifier's (N, 1) logits against labels (N)) is warned of or refused in torch's words,
    its sizes printed as torch.Size([...])."""
    shapes = [(3, 1), (3,)] if rng.random() < 0.5 else [(2, 4), (4,)]
    x, y = (rng.uniform(0.1, 0.9, shape).astype(np.float32) for shape in shapes)
    got = _raised_or_warned(genesis, getattr(nn.functional, name),
                            (genesis.tensor(x, device=device), genesis.tensor(y, device=device)))
    expected = _raised_or_warned(torch, getattr(torch.nn.functional, name),
                                 (torch.from_numpy(x), torch.from_numpy(y)))
    assert got == expected


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_bce_gradient_at_probabilities_zero_and_one(reduction, rng, device):
    """A saturated sigmoid gives probabilities of exactly 0 and 1; BCE's gradient there is
    PyTorch's finite g (x - y) / max(x (1 - x), 1e-12), not the nan of the clamped logs."""
    x = np.concatenate([[0.0, 1.0, 0.0, 1.0, 1e-30], rng.uniform(0.05, 0.95, 6)])
    y = np.concatenate([[0.0, 1.0, 1.0, 0.0, 1.0], rng.uniform(0, 1, 6)])
    w = rng.uniform(0.5, 2.0, 11)
    gx, tx = genesis.tensor(x, device=device), torch.tensor(x)
    gy, ty = genesis.tensor(y, device=device), torch.tensor(y)
    for t in (gx, tx, gy, ty):
        t.requires_grad_()
    got = nn.functional.binary_cross_entropy(gx, gy, genesis.tensor(w, device=device),
                                             reduction=reduction)
    want = torch.nn.functional.binary_cross_entropy(tx, ty, torch.tensor(w), reduction=reduction)
    assert_close(got, want)
    got.sum().backward()
    want.sum().backward()
    assert_close(gx.grad, tx.grad)
    assert_close(gy.grad, ty.grad)


@pytest.mark.parametrize("call", [
    lambda m: m.nn.functional.binary_cross_entropy(m.full((2,), 0.5), m.zeros(2, dtype=m.long)),
    lambda m: m.nn.functional.binary_cross_entropy(m.full((2,), 0.5),
                                                   m.zeros(2, dtype=m.float64)),
    lambda m: m.nn.BCELoss()(m.full((2,), 0.5, dtype=m.float64), m.zeros(2)),
    lambda m: m.nn.functional.binary_cross_entropy_with_logits(m.zeros(2),
                                                               m.zeros(2, dtype=m.long)),
    lambda m: m.nn.functional.binary_cross_entropy_with_logits(m.zeros(2),
                                                               m.zeros(2, dtype=m.bool)),
    lambda m: m.nn.functional.binary_cross_entropy_with_logits(
        m.zeros(2), m.zeros(2, dtype=m.bool), weight=m.ones(2), pos_weight=m.ones(2),
        reduction="none"),
    lambda m: m.nn.BCEWithLogitsLoss()(m.zeros(2, 3), m.ones(2, 3, dtype=m.bool))])
def test_binary_cross_entropy_target_dtype_refused_as_torch(call):
    """A target of another dtype than the probabilities ('Found dtype Long but expected
    Float'), an integer target of the logits' loss, which torch's kernel cannot write its
    result into, and a bool one, which its `1 - target` refuses, in torch's words."""
    assert_refuses_as_torch(call)


@pytest.mark.parametrize("dtypes", [("float32", "float64"), ("bfloat16", "float32"),
                                    ("float64", "float32")], ids=str)
@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_cross_entropy_probability_target_promotes_as_torch(dtypes, reduction, rng, device):
    """Class probabilities of another floating dtype than the logits give the promoted dtype's
    loss, as torch's, with torch's values (bf16 logits: their log_softmax rounds to bf16 in
    both, an ulp apart here and there, so only the dtype is compared)."""
    logits, probs = rng.standard_normal((4, 3)), rng.dirichlet(np.ones(3), 4)
    results = []
    for lib in (torch, genesis):
        kw = {} if lib is torch else {"device": device}
        x = lib.tensor(logits, dtype=getattr(lib, dtypes[0]), **kw)
        t = lib.tensor(probs, dtype=getattr(lib, dtypes[1]), **kw)
        results.append(lib.nn.functional.cross_entropy(x, t, reduction=reduction,
                                                       label_smoothing=0.1))
    assert str(results[1].dtype).split(".")[1] == str(results[0].dtype).split(".")[1]
    if "bfloat16" not in dtypes:
        assert_close(results[1], results[0])
