"""In-place ops and autograd against PyTorch: writes through views of non-leaf tensors rebase the
base's history (AsStridedScatter), stale views follow their base, version counters catch
tensors modified after being saved, and gradients of every order match."""

import pytest
import torch

import genesis
from helpers import assert_close, make_pair


def _scenario_slice_mul(x, w):
    y = x * 1
    y[0:2].mul_(3)
    return (y * w).sum()


def _scenario_narrow_add(x, w):
    y = x * w
    y.narrow(1, 1, 2).add_(w[:, 0:2] * x[:, 1:3])
    return (y * y).sum()


def _scenario_stepped_transposed(x, w):
    y = (x * w).t()
    y[::2].mul_(y[1::2][0:1] + 1)
    return (y.sin() * 2).sum()


def _scenario_view_of_view(x, w):
    y = x + w
    v1 = y[1:4]
    v2 = v1[:, 1:3]
    v2.mul_(w[0:3, 0:2])
    return (v1 * v1).sum() + (y * x).sum()


def _scenario_stale_overlapping_view(x, w):
    y = x * 2
    v = y[1:3]
    y[0:2].mul_(w[0:2])
    return (v * v).sum() + y.sum()


def _scenario_base_modified_after_view(x, w):
    y = x * 1
    v = y[2:4]
    y.mul_(w)
    return (v * x[0:2]).sum()


def _scenario_setitem(x, w):
    y = x.exp()
    y = y * 1
    y[1] = w[0] * 5
    y[:, 0] = x[:, 1]
    return (y * y).sum()


def _scenario_buffer_without_grad(x, w):
    buf = (x * 0).detach()
    buf[1:3].copy_(x[0:2] * w[0:2])
    return (buf * buf).sum()


def _scenario_chained_inplace(x, w):
    y = x * 1
    y.add_(w).mul_(x)
    y[0].div_(2)
    return (y * w).sum()


SCENARIOS = {name[len("_scenario_"):]: fn for name, fn in globals().items()
             if name.startswith("_scenario_")}


def _inputs(dtype, rng, device):
    x, tx = make_pair((4, 4), dtype, low=0.5, high=1.5, requires_grad=True, device=device,
                      rng=rng)
    w, tw = make_pair((4, 4), dtype, low=0.5, high=1.5, requires_grad=True, device=device,
                      rng=rng)
    return (x, w), (tx, tw)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_inplace_through_views_matches_torch(name, rng, device):
    fn = SCENARIOS[name]
    (x, w), (tx, tw) = _inputs(genesis.float32, rng, device=device)
    out, tout = fn(x, w), fn(tx, tw)
    assert_close(out, tout)
    out.backward()
    tout.backward()
    assert_close(x.grad, tx.grad)
    assert_close(w.grad, tw.grad)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_inplace_through_views_second_order(name, rng, device):
    fn = SCENARIOS[name]
    (x, w), (tx, tw) = _inputs(genesis.float64, rng, device=device)
    gx, gw = genesis.autograd.grad(fn(x, w), [x, w], create_graph=True)
    tgx, tgw = torch.autograd.grad(fn(tx, tw), [tx, tw], create_graph=True)
    assert_close(gx, tgx)
    assert_close(gw, tgw)
    v, tv = make_pair((4, 4), genesis.float64, rng=rng, device=device)
    if not tgx.requires_grad:
        assert not gx.requires_grad
        return
    hx, hw = genesis.autograd.grad((gx * v).sum(), [x, w], allow_unused=True)
    thx, thw = torch.autograd.grad((tgx * tv).sum(), [tx, tw], allow_unused=True)
    for h, th in ((hx, thx), (hw, thw)):
        if th is None:
            assert h is None or float(h.abs().sum()) == 0.0
        else:
            assert_close(h, th)


@pytest.mark.parametrize("name", ["slice_mul", "narrow_add", "view_of_view", "setitem"])
def test_inplace_through_views_gradcheck(name, rng, device):
    (x, w), _ = _inputs(genesis.float64, rng, device=device)
    assert genesis.autograd.gradcheck(SCENARIOS[name], (x, w))
    assert genesis.autograd.gradgradcheck(SCENARIOS[name], (x, w))


def test_inplace_on_view_sets_grad_fns_like_torch(device):
    x = genesis.ones(4, 3, requires_grad=True, device=device)
    y = x * 1
    v = y[0:2]
    v.mul_(3)
    ty = torch.ones(4, 3, requires_grad=True) * 1
    ty[0:2].mul_(3)
    assert y.grad_fn.name() == type(ty.grad_fn).__name__ == "CopySlices"
    assert v.grad_fn.name() == "AsStridedBackward0"
    assert y._version == v._version == 1


def test_view_of_leaf_requiring_grad_cannot_be_written(device):
    x = genesis.ones(4, requires_grad=True, device=device)
    with pytest.raises(RuntimeError, match="view of a leaf Variable that requires grad"):
        x[0:2].mul_(2)
    assert x.tolist() == [1.0] * 4
    with genesis.no_grad():
        x[0:2].mul_(2)
    assert x.tolist() == [2.0, 2.0, 1.0, 1.0]


def test_write_through_view_of_saved_tensor_raises(device):
    x = genesis.ones(4, requires_grad=True, device=device)
    y = x * 1
    z = y * y
    y[0:1].add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


def test_constant_written_into_view_cuts_gradient_of_that_region(rng, device):
    x, tx = make_pair((5,), requires_grad=True, rng=rng, device=device)
    y, ty = x * 2, tx * 2
    y[1:3].copy_(genesis.zeros(2, device=device))
    ty[1:3].copy_(torch.zeros(2))
    (y * x).sum().backward()
    (ty * tx).sum().backward()
    assert_close(x.grad, tx.grad)


def test_view_made_under_no_grad_stays_out_of_the_graph(device):
    x = genesis.ones(4, requires_grad=True, device=device)
    y = x * 1
    with genesis.no_grad():
        v = y[0:2]
    y.mul_(2)
    assert not v.requires_grad
    assert v.tolist() == [2.0, 2.0]


def test_writes_through_data_go_unseen_by_backward_as_torch(rng, device):
    """`.data` has a version counter of its own (a weight update written through it between
    forward and backward raises nothing, as in torch), while detach() shares the tensor's."""
    (x, tx), (w, tw) = (make_pair((3,), requires_grad=True, rng=rng, device=device)
                        for _ in range(2))
    for lib_x, lib_w in ((x, w), (tx, tw)):
        out = (lib_x * lib_w).sum()
        lib_w.data.add_(1)
        out.backward()
        assert lib_w._version == 0 and lib_w.data._version == 0
    assert_close(x.grad, tx.grad)
    y = w * 1
    z = y * y
    y.detach().add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


def test_optimizer_style_update_under_no_grad(rng, device):
    w, tw = make_pair((3, 3), requires_grad=True, rng=rng, device=device)
    for lib_w in (w, tw):
        for _ in range(2):
            loss = (lib_w * lib_w).sum()
            loss.backward()
            with (genesis.no_grad() if lib_w is w else torch.no_grad()):
                lib_w.sub_(lib_w.grad * 0.1)
                lib_w[0].mul_(0.5)
            lib_w.grad = None
    assert w.is_leaf and w.requires_grad and w.grad_fn is None
    assert_close(w, tw)


def _mul_then_write(lib, a, b, op, written):
    """`op(a, b)` of a leaf `a` (needing a gradient) and a non-leaf `b` (needing one or not),
    then operand `written` changed in place; the loss, or the error backward raises."""
    a = a * 1
    out = getattr(lib, op)(a, b)
    with lib.no_grad():
        (a if written == "a" else b).add_(1) if written else None
    try:
        out.sum().backward()
    except RuntimeError as e:
        return str(e).split(":")[0]
    return None


@pytest.mark.parametrize("op", ["mul", "div"])
@pytest.mark.parametrize("b_kind", ["scalar", "constant", "trained"])
@pytest.mark.parametrize("written", ["a", "b"])
def test_binary_ops_save_only_what_their_gradient_needs(op, b_kind, written, rng, device):
    """mul and div keep an operand only where another operand's gradient reads it, as PyTorch
    does, so `x * 0.5` or `x / c` leaves `x` free to change in place before backward."""
    if b_kind == "scalar" and written == "b":
        pytest.skip("a Python scalar cannot be written")
    ga, ta = make_pair((3, 4), requires_grad=True, device=device, rng=rng)
    gb, tb = make_pair((3, 4), low=1.0, high=2.0, device=device, rng=rng)
    if b_kind == "scalar":
        gb = tb = 0.5
    elif b_kind == "trained":
        gb, tb = gb.requires_grad_(True) * 1, tb.requires_grad_(True) * 1
    expected = _mul_then_write(torch, ta, tb, op, written)
    assert _mul_then_write(genesis, ga, gb, op, written) == expected
    if expected is None:
        assert_close(ga.grad, ta.grad)


@pytest.mark.parametrize("op", ["relu_", "sigmoid_", "tanh_"])
@pytest.mark.parametrize("dtype", [genesis.float32, genesis.bfloat16], ids=str)
def test_activations_in_place_write_the_tensor(op, dtype, rng, device, monkeypatch):
    """relu_, sigmoid_ and tanh_ in a graph write the tensor itself (one version bump), no
    snapshot or temporary first, their node saving the tensor (their backward reads only the
    output): the gradient, grad_fn and version as torch's."""
    from genesis.ops import inplace
    from genesis.ops.elementwise import inplace_plans
    copies = []
    monkeypatch.setattr(inplace_plans, "snapshot_for_graph",
                        lambda *args: copies.append(args) or args[0])
    monkeypatch.setattr(inplace_plans, "write_result",
                        lambda *args: copies.append(args) or inplace.write_result(*args))
    gx, tx = make_pair((4, 5), dtype, requires_grad=True, device=device, rng=rng)
    gy, ty = gx * 2, tx * 2
    storage = gy.data_ptr()
    assert getattr(gy, op)() is gy
    getattr(ty, op)()
    assert gy.data_ptr() == storage and gy._version == ty._version
    assert gy.grad_fn.name() == ty.grad_fn.name()
    assert_close(gy, ty)
    (gy * 3).sum().backward()
    (ty * 3).sum().backward()
    assert_close(gx.grad, tx.grad)
    assert not copies


@pytest.mark.parametrize("op", ["relu_", "sigmoid_", "tanh_"])
def test_activation_in_place_then_written_again_fails_backward(op):
    """The node of relu_ (sigmoid_, tanh_) saves the tensor it wrote: writing it again before
    backward fails the version check, as in torch."""
    for lib in (genesis, torch):
        x = lib.tensor([[1.0, -2.0], [0.5, 3.0]], requires_grad=True)
        y = x * 1
        getattr(y, op)()
        y.mul_(2)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()


@pytest.mark.parametrize("op", ["relu", "sigmoid", "tanh", "relu_", "sigmoid_", "tanh_"])
def test_output_only_nodes_have_no_saved_self(op):
    """ReluBackward0 (SigmoidBackward0, TanhBackward0), out of place or in place, keeps its
    result alone: grad_fn._saved_result, and no _saved_self, as in torch."""
    for lib in (genesis, torch):
        y = lib.tensor([1.0, -2.0], requires_grad=True) * 1
        y = getattr(y, op)()
        assert not hasattr(y.grad_fn, "_saved_self")
        assert y.grad_fn._saved_result.tolist() == y.tolist()


@pytest.mark.parametrize("op", ["relu_", "tanh_"])
def test_activation_in_place_on_a_view(op, rng, device):
    """relu_ (tanh_) on a view of a tensor in the graph rebases the base's history."""
    gx, tx = make_pair((3, 4), requires_grad=True, device=device, rng=rng)
    gb, tb = gx * 1, tx * 1
    getattr(gb[1:, ::2], op)()
    getattr(tb[1:, ::2], op)()
    assert_close(gb, tb)
    (gb * gb).sum().backward()
    (tb * tb).sum().backward()
    assert_close(gx.grad, tx.grad)
