"""Indexing ops against PyTorch: advanced indexing, setitem, gather/scatter, index_*, masked_*,
take, nonzero, sort/topk/unique, repeat_interleave; values, gradients, errors."""

import numpy as np
import pytest
import torch

import genesis
from helpers import ALL_DTYPES, FLOAT_DTYPES, assert_close, make_pair, raised
from test_shape import LAYOUTS, check_backward, check_forward, laid_out


def _mask(rng, shape):
    return np.asarray(rng.random(shape) < 0.5)


def _perm_index(rng, shape, dim):
    """Indices along `dim` that are distinct within every line (safe for scatter)."""
    return np.argsort(rng.random(shape), axis=dim)


# Each case: (input shape, index built from rng with numpy arrays, lists, slices, ints, None).
INDEX_CASES = {
    "list": ((5, 4), lambda r: [0, 2, -1, 2]),
    "tensor_2d": ((5, 4), lambda r: np.array([[0, 1], [4, -5]])),
    "int32": ((5, 4), lambda r: np.array([3, 1], dtype=np.int32)),
    "second_dim": ((3, 5, 4), lambda r: (slice(None), np.array([4, 0, 0]))),
    "adjacent_pair": ((3, 5, 4), lambda r: (slice(None), np.array([1, 2]),
                                             np.array([[0], [3]]))),
    "separated": ((3, 5, 4), lambda r: (np.array([0, 2]), slice(1, 4), np.array([1, 3]))),
    "int_then_adv": ((3, 5, 4), lambda r: (1, slice(None), np.array([0, 2]))),
    "adv_int_adv": ((3, 5, 4), lambda r: (np.array([0, 1]), 2, np.array([1, 3]))),
    "slice_adv_int": ((3, 5, 4), lambda r: (slice(None), np.array([0, 1]), 0)),
    "none_adv": ((3, 5, 4), lambda r: (None, np.array([1]), None, slice(None))),
    "ellipsis_adv": ((3, 5, 4), lambda r: (Ellipsis, np.array([0, 3]))),
    "index_0d": ((3, 5, 4), lambda r: np.array(2)),
    "index_0d_mid": ((3, 5, 4), lambda r: (slice(None), np.array(-1), slice(1, 3))),
    "mask_full": ((3, 4), lambda r: _mask(r, (3, 4))),
    "mask_rows": ((5, 4), lambda r: _mask(r, (5,))),
    "mask_inner": ((3, 5, 4), lambda r: (slice(None), _mask(r, (5, 4)))),
    "mask_and_index": ((3, 5, 4), lambda r: (np.array([0, 2]), np.array([0, 1, 0, 0, 1], bool))),
    "mask_empty": ((3, 4), lambda r: np.zeros((3, 4), bool)),
    "bool_list": ((3, 4), lambda r: [True, False, True]),
    "empty_list": ((5, 4), lambda r: ([],)),
    "nested_list": ((5, 4), lambda r: [[0, 1], [2, 3]]),
    "range_pair": ((4, 5), lambda r: (range(4), np.array([0, 4, 1, 2]))),
    "range_rows": ((5, 4), lambda r: range(1, 5, 2)),
    "range_empty": ((5, 4), lambda r: range(0)),
    "broadcast_three": ((3, 5, 4), lambda r: (np.array([[0], [2]]), np.array([1, 2, 3]),
                                               np.array([0]))),
    "stepped_then_adv": ((6, 5, 4), lambda r: (slice(None, None, 2), np.array([1, 0]))),
    "bool_scalars": ((3, 4), lambda r: (None, True, Ellipsis, False)),
    "true": ((3, 4), lambda r: True),
}
UNIQUE_CASES = ["tensor_2d", "second_dim", "separated", "int_then_adv", "adv_int_adv",
                "ellipsis_adv", "index_0d_mid", "mask_inner", "mask_rows", "broadcast_three",
                "stepped_then_adv", "true"]


def convert(index, lib, device="cpu"):
    """An index built with numpy arrays, as `lib` (genesis on `device`, or torch) tensors."""
    if isinstance(index, tuple):
        return tuple(convert(i, lib, device) for i in index)
    if isinstance(index, np.ndarray):
        return genesis.tensor(index, device=device) if lib is genesis \
            else torch.from_numpy(index.copy())
    return index


def index_pair(case, rng, device="cpu"):
    shape, build = INDEX_CASES[case]
    index = build(rng)
    return shape, convert(index, genesis, device), convert(index, torch)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("case", sorted(INDEX_CASES))
def test_getitem_advanced(case, layout, rng, device):
    shape, idx_g, idx_t = index_pair(case, rng, device=device)
    (leaf_g, leaf_t), (x_g, x_t) = laid_out(shape, layout, genesis.float64, rng, True,
                                            device=device)
    out_g, out_t = check_forward(lambda x: x[idx_g if isinstance(x, genesis.Tensor) else idx_t],
                                 x_g, x_t)
    check_backward(out_g, out_t, leaf_g, leaf_t, rng)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("case", ["separated", "mask_inner", "index_0d_mid"])
def test_getitem_advanced_dtypes(case, dtype, rng, device):
    shape, idx_g, idx_t = index_pair(case, rng, device=device)
    g, t = make_pair(shape, dtype, rng=rng, device=device)
    assert_close(g[idx_g], t[idx_t])


@pytest.mark.parametrize("case", ["list", "separated", "mask_inner", "broadcast_three"])
def test_getitem_gradcheck(case, rng, device):
    shape, idx_g, _ = index_pair(case, rng, device=device)
    x = genesis.tensor(rng.standard_normal(shape), requires_grad=True, dtype=genesis.float64,
                       device=device)
    assert genesis.autograd.gradcheck(lambda x: x[idx_g], (x,))
    assert genesis.autograd.gradgradcheck(lambda x: x[idx_g], (x,))


def test_getitem_errors(device):
    x = genesis.zeros(5, 3, device=device)
    with pytest.raises(IndexError, match="index 7 is out of bounds for dimension 0 with size 5"):
        x[genesis.tensor([7], device=device)]
    with pytest.raises(IndexError, match="index -6 is out of bounds for dimension 0 with size 5"):
        x[[-6]]
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 1 with size 3"):
        x[:, 3]
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 5"):
        x[5]
    with pytest.raises(ValueError, match="step must be greater than zero"):
        x[::-1]
    with pytest.raises(ValueError, match="step must be greater than zero"):
        x[:, ::0]
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 2"):
        x[1, 2, 3]
    with pytest.raises(IndexError, match="tensors used as indices must be long, int, byte or bool"):
        x[genesis.tensor([1.0], device=device)]
    with pytest.raises(IndexError, match="tensors used as indices must be long, int, byte or bool"):
        x[genesis.tensor([1], dtype=genesis.int16, device=device)]
    with pytest.raises(IndexError, match="valid indices"):
        x[1.0]
    with pytest.raises(IndexError, match="indexing tensors could not be broadcast together with "
                                         r"shapes \[2\], \[3\]"):
        x[[0, 1], [0, 1, 2]]
    with pytest.raises(IndexError, match=r"The shape of the mask \[2\] at index 0 does not match "
                                         r"the shape of the indexed tensor \[5, 3\] at index 0"):
        x[genesis.tensor([True, False], device=device)]
    with pytest.raises(IndexError, match="single ellipsis"):
        x[..., ...]


def _write(x, index):
    x[index] = 1.0


@pytest.mark.parametrize("index", [0, np.int64(0), 1, -1, slice(None), (0,), [0], (None, 0)],
                         ids=repr)
def test_zero_dim_index_errors_as_torch(index, device):
    """One int or one slice indexing a 0-dim tensor (old scripts' `loss.data[0]`) raises torch's
    errors, read and written; in a tuple or list, too many indices."""
    x, t = genesis.tensor(1.5, device=device), torch.tensor(1.5)
    assert raised(x.__getitem__, index) == raised(t.__getitem__, index)
    assert raised(_write, x, index) == raised(_write, t, index)


def test_getitem_0d_and_empty(rng, device):
    g, t = make_pair((), genesis.float64, rng=rng, device=device)
    for index in ((None,), (Ellipsis,), (True,), (False,), (None, None)):
        assert_close(g[index], t[index])
    g, t = make_pair((0, 3), rng=rng, device=device)
    assert_close(g[[]], t[[]])
    assert_close(g[:, [1, 2]], t[:, [1, 2]])
    mask = genesis.zeros(0, 3, dtype=genesis.bool, device=device)
    assert_close(g[mask], t[torch.zeros(0, 3, dtype=torch.bool)])


SET_BASIC = {
    "int": ((3, 5, 4), (1,)),
    "step": ((3, 5, 4), (slice(None), slice(1, 4, 2))),
    "ellipsis_last": ((3, 5, 4), (Ellipsis, -1)),
    "none": ((3, 5, 4), (None, 0)),
    "mixed": ((3, 5, 4), (1, None, slice(2, None))),
    "element": ((3, 5, 4), (2, 4, 3)),
}


def _set_case(case, rng, device):
    if case in SET_BASIC:
        shape, index = SET_BASIC[case]
        return shape, index, index
    return index_pair(case, rng, device)


@pytest.mark.parametrize("value_kind", ["scalar", "full", "broadcast", "leading_one", "zero_d"])
@pytest.mark.parametrize("case", sorted(SET_BASIC) + UNIQUE_CASES)
def test_setitem(case, value_kind, rng, device):
    shape, idx_g, idx_t = _set_case(case, rng, device=device)
    x_g, x_t = make_pair(shape, genesis.float64, rng=rng, device=device)
    target = tuple(x_t[idx_t].shape)
    if value_kind == "scalar":
        v_g = v_t = float(rng.standard_normal())
    else:
        v_shape = {"full": target, "broadcast": target[-1:], "leading_one": (1, 1) + target,
                   "zero_d": ()}[value_kind]
        v_g, v_t = make_pair(v_shape, genesis.float64, rng=rng, device=device)
    version = x_g._version
    x_g[idx_g] = v_g
    x_t[idx_t] = v_t
    assert_close(x_g, x_t)
    assert x_g._version == version + 1


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("case", ["step", "separated", "mask_full"])
def test_setitem_dtypes(case, dtype, rng, device):
    shape, idx_g, idx_t = _set_case(case, rng, device=device)
    x_g, x_t = make_pair(shape, dtype, rng=rng, device=device)
    v_g, v_t = make_pair(tuple(x_t[idx_t].shape), dtype, rng=rng, device=device)
    x_g[idx_g] = v_g
    x_t[idx_t] = v_t
    assert_close(x_g, x_t)
    x_g[idx_g] = 1
    x_t[idx_t] = 1
    assert_close(x_g, x_t)


def test_setitem_casts_python_scalars_and_basic_tensors(device):
    x_g, x_t = genesis.zeros(3, dtype=genesis.int64, device=device), torch.zeros(3,
                                                                                 dtype=torch.int64)
    x_g[0], x_t[0] = 1.7, 1.7
    x_g[1:], x_t[1:] = genesis.tensor([2.5, -3.5], device=device), torch.tensor([2.5, -3.5])
    assert_close(x_g, x_t)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("case", ["step", "mixed", "separated", "mask_inner", "index_0d_mid",
                                  "broadcast_three"])
def test_setitem_autograd(case, layout, rng, device):
    shape, idx_g, idx_t = _set_case(case, rng, device=device)
    (leaf_g, leaf_t), (x_g, x_t) = laid_out(shape, layout, genesis.float64, rng, True,
                                            device=device)
    target = tuple(x_t[idx_t].shape)
    (v_g, v_t) = make_pair(target[-1:], genesis.float64, rng=rng, requires_grad=True, device=device)
    y_g, y_t = x_g * 2, x_t * 2
    y_g[idx_g] = v_g * 3
    y_t[idx_t] = v_t * 3
    assert_close(y_g, y_t)
    check_backward((y_g,), (y_t,), leaf_g, leaf_t, rng)
    assert_close(v_g.grad, v_t.grad)


def test_setitem_through_view_of_non_leaf(rng, device):
    (leaf_g, leaf_t), _ = laid_out((4, 5), "contiguous", genesis.float64, rng, True, device=device)
    v_g, v_t = make_pair((5,), genesis.float64, rng=rng, requires_grad=True, device=device)
    y_g, y_t = leaf_g * 1, leaf_t * 1
    z_g, z_t = y_g[1:], y_t[1:]
    z_g[1] = v_g
    z_t[1] = v_t
    z_g[[0, 2], 1:3] = 0.5
    z_t[[0, 2], 1:3] = 0.5
    assert_close(y_g, y_t)
    check_backward((y_g, z_g), (y_t, z_t), leaf_g, leaf_t, rng)
    assert_close(v_g.grad, v_t.grad)


def test_setitem_gradcheck(rng, device):
    x = genesis.tensor(rng.standard_normal((4, 3)), dtype=genesis.float64, requires_grad=True,
                       device=device)
    v = genesis.tensor(rng.standard_normal(3), dtype=genesis.float64, requires_grad=True,
                       device=device)

    def fn(x, v):
        y = x * 1
        y[[0, 2]] = v
        y[1, 1:] = v[:2] * v[1:]
        return y
    assert genesis.autograd.gradcheck(fn, (x, v))
    assert genesis.autograd.gradgradcheck(fn, (x, v))


def test_failed_setitem_leaves_tensor_unchanged(rng, device):
    x, _ = make_pair((5, 3), genesis.float32, rng=rng, device=device)
    before, version = x.cpu().numpy().copy(), x._version
    bad = [((genesis.tensor([0, 7], device=device),), 1.0, IndexError),
           ((0,), genesis.zeros(2, device=device), RuntimeError),
           (([0, 1],), genesis.zeros(2, 3, dtype=genesis.float64, device=device), RuntimeError),
           (([0, 1],), genesis.zeros(3, 3, device=device), RuntimeError),
           ((slice(None, None, -1),), 1.0, ValueError),
           ((0,), "text", TypeError)]
    for index, value, error in bad:
        with pytest.raises(error):
            x[index] = value
        np.testing.assert_array_equal(x.cpu().numpy(), before)
        assert x._version == version


def test_setitem_messages(device):
    with pytest.raises(RuntimeError, match=r"shape mismatch: value tensor of shape \[3, 3\] cannot "
                                           r"be broadcast to indexing result of shape \[2, 3\]"):
        genesis.zeros(2, 3, device=device)[[0, 1]] = genesis.zeros(3, 3, device=device)
    with pytest.raises(RuntimeError, match="Index put requires the source and destination dtypes "
                                           "match, got Long for the destination and Float"):
        genesis.zeros(3, dtype=genesis.int64, device=device)[[0, 1]] = genesis.tensor([1.5, 2.5],
                                                                                      device=device)


@pytest.mark.parametrize("index", [(slice(None), 0), 0, (Ellipsis, slice(1, None))],
                         ids=["slice_int", "int", "ellipsis_slice"])
def test_setitem_basic_index_mismatch_raises_as_torch(index, rng):
    """A value that does not broadcast to a basic index's view raises expand's error, as torch's
    copy_ into the view does (the advanced-index 'shape mismatch' is index_put's)."""
    shape = tuple(int(n) for n in rng.integers(2, 5, 2))
    wider = torch.zeros(shape)[index].shape[-1] + 1
    for value_shape in ((wider,), (1, 2, wider), (3, 2, 2)):
        found = []
        for lib in (genesis, torch):
            x = lib.zeros(shape)
            found.append(raised(x.__setitem__, index, lib.ones(value_shape)))
        assert found[0] == found[1]


def test_setitem_on_leaf_requiring_grad(device):
    x = genesis.zeros(3, requires_grad=True, device=device)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        x[0] = 1.0
    with genesis.no_grad():
        x[0] = 1.0
        x[[1]] = 2.0
    assert x.tolist() == [1.0, 2.0, 0.0] and x.requires_grad


def test_setitem_detects_saved_tensor_modification(rng, device):
    leaf, _ = make_pair((3,), genesis.float64, rng=rng, requires_grad=True, device=device)
    a = leaf * 1
    c = a * a
    a[[0]] = 1.0
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        c.sum().backward()


@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put(accumulate, rng, device):
    x_g, x_t = make_pair((5, 4), genesis.float64, rng=rng, requires_grad=True, device=device)
    v_g, v_t = make_pair((3, 4), genesis.float64, rng=rng, requires_grad=True, device=device)
    rows = np.array([1, 3, 1]) if accumulate else np.array([1, 3, 0])
    out_g = genesis.index_put(x_g, (genesis.tensor(rows, device=device),), v_g, accumulate)
    out_t = torch.index_put(x_t, (torch.from_numpy(rows),), v_t, accumulate)
    check_backward((out_g,), (out_t,), x_g, x_t, rng)
    assert_close(v_g.grad, v_t.grad)
    y_g, y_t = x_g.detach().clone(), x_t.detach().clone()
    y_g.index_put_((genesis.tensor(rows, device=device), genesis.tensor([0, 1, 2], device=device)),
                   genesis.tensor(2.0, dtype=genesis.float64, device=device), accumulate=accumulate)
    y_t.index_put_((torch.from_numpy(rows), torch.tensor([0, 1, 2])), torch.tensor(
        2.0, dtype=torch.float64), accumulate=accumulate)
    assert_close(y_g, y_t)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + [genesis.int32, genesis.uint8])
def test_index_put_accumulate_dtypes(dtype, rng, device):
    x_g, x_t = make_pair((6, 3), dtype, rng=rng, device=device)
    v_g, v_t = make_pair((4, 3), dtype, rng=rng, device=device)
    rows = genesis.tensor([1, 1, 5, 1], device=device), torch.tensor([1, 1, 5, 1])
    out_g = genesis.index_put(x_g, (rows[0],), v_g, True)
    expected = torch.index_put(x_t.double(), (rows[1],), v_t.double(), True).to(x_t.dtype)
    assert_close(out_g, expected)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_gather(dim, layout, rng, device):
    (leaf_g, leaf_t), (x_g, x_t) = laid_out((4, 5, 3), layout, genesis.float64, rng, True,
                                            device=device)
    shape = [3, 4, 2]
    shape[dim] = 6
    idx = rng.integers(0, x_t.shape[dim], shape)
    out_g = x_g.gather(dim, genesis.tensor(idx, device=device))
    out_t = x_t.gather(dim, torch.from_numpy(idx))
    assert_close(out_g, out_t)
    check_backward((out_g,), (out_t,), leaf_g, leaf_t, rng)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_gather_scatter_dtypes(dtype, rng, device):
    g, t = make_pair((4, 5), dtype, rng=rng, device=device)
    idx = _perm_index(rng, (4, 3), 1)
    i_g, i_t = genesis.tensor(idx, device=device), torch.from_numpy(idx)
    assert_close(genesis.gather(g, 1, i_g), torch.gather(t, 1, i_t))
    src_g, src_t = make_pair((4, 3), dtype, rng=rng, device=device)
    assert_close(g.scatter(1, i_g, src_g), t.scatter(1, i_t, src_t))
    if dtype is not genesis.bool:
        dup = rng.integers(0, 4, (6, 5))
        expected = t.double().scatter_add(0, torch.from_numpy(dup),
                                          torch.ones(6, 5, dtype=torch.float64)).to(t.dtype)
        ones = genesis.ones(6, 5, dtype=dtype, device=device)
        assert_close(g.scatter_add(0, genesis.tensor(dup, device=device), ones), expected)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dim", [0, 1])
def test_scatter_and_scatter_add(dim, layout, rng, device):
    """src may be larger than index (only its leading part is read; PyTorch's own backward
    rejects that, so torch gets the part that is read)."""
    (leaf_g, leaf_t), (x_g, x_t) = laid_out((4, 5), layout, genesis.float64, rng, True,
                                            device=device)
    src_g, _ = make_pair((5, 6), genesis.float64, rng=rng, requires_grad=True, device=device)
    add_g, add_t = make_pair((3, 4), genesis.float64, rng=rng, requires_grad=True, device=device)
    src_t = torch.from_numpy(src_g.detach().cpu().numpy()[:3, :4].copy()).requires_grad_()
    idx = _perm_index(rng, (4, 5), dim)[:3, :4]
    i_g, i_t = genesis.tensor(idx, device=device), torch.from_numpy(idx)
    outs_g = (x_g.scatter(dim, i_g, src_g), x_g.scatter(dim, i_g, 1.5),
              x_g.scatter_add(dim, i_g, add_g))
    outs_t = (x_t.scatter(dim, i_t, src_t), x_t.scatter(dim, i_t, 1.5),
              x_t.scatter_add(dim, i_t, add_t))
    for a, b in zip(outs_g, outs_t):
        assert_close(a, b)
    check_backward(outs_g, outs_t, leaf_g, leaf_t, rng)
    assert_close(src_g.grad[:3, :4], src_t.grad)
    unread = src_g.grad.cpu().numpy().copy()
    unread[:3, :4] = 0
    assert not unread.any()
    assert_close(add_g.grad, add_t.grad)
    for reduce in ("add", "multiply"):
        got = x_g.detach().scatter(dim, i_g, src_g.detach(), reduce=reduce)
        assert_close(got, x_t.detach().scatter(dim, i_t, src_t.detach(), reduce=reduce))


def test_gather_scatter_gradcheck(rng, device):
    x = genesis.tensor(rng.standard_normal((4, 5)), dtype=genesis.float64, requires_grad=True,
                       device=device)
    src = genesis.tensor(rng.standard_normal((3, 5)), dtype=genesis.float64, requires_grad=True,
                         device=device)
    dup = genesis.tensor(rng.integers(0, 4, (3, 5)), device=device)
    perm = genesis.tensor(_perm_index(rng, (4, 5), 0)[:3], device=device)
    for fn in (lambda x, s: x.gather(0, dup) * s, lambda x, s: x.scatter(0, perm, s),
               lambda x, s: x.scatter_add(0, dup, s)):
        assert genesis.autograd.gradcheck(fn, (x, src))
        assert genesis.autograd.gradgradcheck(fn, (x, src))


def test_gather_scatter_zero_dim(rng, device):
    g, t = make_pair((), rng=rng, device=device)
    zero = genesis.tensor(0, device=device)
    assert_close(g.gather(0, zero), t.gather(0, torch.tensor(0)))
    assert_close(g.scatter(0, zero, 3.0), t.scatter(0, torch.tensor(0), 3.0))


def test_gather_scatter_errors(device):
    x = genesis.zeros(2, 5, device=device)
    with pytest.raises(RuntimeError, match="index -1 is out of bounds for dimension 1 with size 5"):
        x.gather(1, genesis.tensor([[-1]], device=device))
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        x.gather(1, genesis.tensor([1], device=device))
    with pytest.raises(RuntimeError, match=r"gather\(\): Expected dtype int32/int64 for index"):
        x.gather(1, genesis.tensor([[1]], dtype=genesis.int16, device=device))
    with pytest.raises(RuntimeError, match="index 7 is out of bounds for dimension 1 with size 5"):
        x.scatter(1, genesis.tensor([[7]], device=device), 1.0)
    with pytest.raises(RuntimeError, match="Expected self.dtype to be equal to src.dtype"):
        x.scatter(1, genesis.tensor([[1]], device=device),
                  genesis.ones(1, 1, dtype=genesis.float64, device=device))
    with pytest.raises(RuntimeError, match="Size does not match at dimension 0"):
        x.gather(1, genesis.zeros(3, 1, dtype=genesis.int64, device=device))


@pytest.mark.parametrize("op", ["gather", "scatter", "scatter_add", "scatter_reduce"])
def test_gather_scatter_take_int32_index(op, rng, device):
    """As torch, the gather/scatter family takes an int32 index as it does an int64 one;
    take_along_dim keeps to int64 (with torch's message)."""
    x_g, x_t = make_pair((3, 4), genesis.float64, rng=rng, requires_grad=True, device=device)
    src_g, src_t = make_pair((2, 4), genesis.float64, rng=rng, device=device)
    idx = _perm_index(rng, (3, 4), 0)[:2]
    i_g = genesis.tensor(idx, dtype=genesis.int32, device=device)
    i_t = torch.from_numpy(idx).int()
    extra = {"gather": (), "scatter": (1.5,), "scatter_add": (None,),
             "scatter_reduce": (None, "amax")}[op]
    args_g = tuple(src_g if a is None else a for a in extra)
    args_t = tuple(src_t if a is None else a for a in extra)
    out_g, out_t = getattr(x_g, op)(0, i_g, *args_g), getattr(x_t, op)(0, i_t, *args_t)
    assert_close(out_g, out_t)
    check_backward((out_g,), (out_t,), x_g, x_t, rng)
    with pytest.raises(RuntimeError, match=r"take_along_dim\(\): dtype of indices should be "
                                           r"Long but got Int"):
        genesis.take_along_dim(x_g, i_g, 0)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_index_select_add_copy_fill(dim, layout, rng, device):
    (leaf_g, leaf_t), (x_g, x_t) = laid_out((4, 5, 3), layout, genesis.float64, rng, True,
                                            device=device)
    n = x_t.shape[dim]
    dup = rng.integers(-n if dim == 1 else 0, n, 6) if dim != 1 else rng.integers(0, n, 6)
    distinct = rng.permutation(n)[:3]
    src_shape = list(x_t.shape)
    src_shape[dim] = 6
    src_g, src_t = make_pair(tuple(src_shape), genesis.float64, rng=rng, requires_grad=True,
                             device=device)
    src_shape[dim] = 3
    cp_g, cp_t = make_pair(tuple(src_shape), genesis.float64, rng=rng, requires_grad=True,
                           device=device)
    d_g, d_t = genesis.tensor(np.abs(dup) % n, device=device), torch.from_numpy(np.abs(dup) % n)
    u_g, u_t = genesis.tensor(distinct, device=device), torch.from_numpy(distinct)
    outs_g = (x_g.index_select(dim, d_g), x_g.index_add(dim, d_g, src_g, alpha=2),
              x_g.index_copy(dim, u_g, cp_g), x_g.index_fill(dim, u_g - n, -1.5))
    outs_t = (x_t.index_select(dim, d_t), x_t.index_add(dim, d_t, src_t, alpha=2),
              x_t.index_copy(dim, u_t, cp_t), x_t.index_fill(dim, u_t - n, -1.5))
    for a, b in zip(outs_g, outs_t):
        assert_close(a, b)
    check_backward(outs_g, outs_t, leaf_g, leaf_t, rng)
    assert_close(src_g.grad, src_t.grad)
    assert_close(cp_g.grad, cp_t.grad)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_index_ops_dtypes(dtype, rng, device):
    g, t = make_pair((4, 3), dtype, rng=rng, device=device)
    idx = rng.integers(0, 4, 5).astype(np.int32)
    assert_close(g.index_select(0, genesis.tensor(idx, device=device)),
                 t.index_select(0, torch.from_numpy(idx)))
    src_g, src_t = make_pair((2, 3), dtype, rng=rng, device=device)
    rows = genesis.tensor([3, 0], device=device), torch.tensor([3, 0])
    assert_close(g.index_copy(0, rows[0], src_g), t.index_copy(0, rows[1], src_t))
    assert_close(g.index_fill(1, genesis.tensor([2], device=device), 1),
                 t.index_fill(1, torch.tensor([2]), 1))
    if dtype is not genesis.bool:
        expected = t.double().index_add(0, rows[1], src_t.double()).to(t.dtype)
        assert_close(g.index_add(0, rows[0], src_g), expected)


def test_index_fill_tensor_value_grad(rng, device):
    x_g, x_t = make_pair((3, 4), genesis.float64, rng=rng, requires_grad=True, device=device)
    v_g, v_t = make_pair((), genesis.float64, rng=rng, requires_grad=True, device=device)
    out_g = x_g.index_fill(1, genesis.tensor([0, 2], device=device), v_g)
    out_t = x_t.index_fill(1, torch.tensor([0, 2]), v_t)
    check_backward((out_g,), (out_t,), x_g, x_t, rng)
    assert_close(v_g.grad, v_t.grad)


def test_index_ops_gradcheck(rng, device):
    x = genesis.tensor(rng.standard_normal((4, 3)), dtype=genesis.float64, requires_grad=True,
                       device=device)
    s = genesis.tensor(rng.standard_normal((5, 3)), dtype=genesis.float64, requires_grad=True,
                       device=device)
    idx = genesis.tensor([0, 3, 0, 1, 3], device=device)
    for fn in (lambda x, s: x.index_select(0, idx) * s, lambda x, s: x.index_add(0, idx, s),
               lambda x, s: x.index_copy(0, genesis.tensor([2, 0, 3, 1, 2], device=device)[:4],
                                         s[:4])):
        assert genesis.autograd.gradcheck(fn, (x, s))
        assert genesis.autograd.gradgradcheck(fn, (x, s))


def test_index_ops_errors(device):
    x = genesis.zeros(2, 5, device=device)
    with pytest.raises(IndexError, match="Index is supposed to be a vector"):
        x.index_select(1, genesis.tensor([[1]], device=device))
    with pytest.raises(IndexError, match="index 7 is out of bounds for dimension 1 with size 5"):
        x.index_select(1, genesis.tensor([7], device=device))
    with pytest.raises(IndexError, match="out of bounds"):
        x.index_select(1, genesis.tensor([-1], device=device))
    with pytest.raises(RuntimeError, match=r"Number of indices \(1\) should be equal to "
                                           r"source.size\(dim\): \(2\), for dim: 1"):
        x.index_add(1, genesis.tensor([1], device=device), genesis.ones(2, 2, device=device))
    with pytest.raises(RuntimeError, match="index 7 is out of bounds"):
        x.index_add(1, genesis.tensor([1, 7], device=device), genesis.ones(2, 2, device=device))
    with pytest.raises(RuntimeError, match="source tensor shape must match self tensor shape"):
        x.index_add(1, genesis.tensor([1], device=device), genesis.ones(3, 1, device=device))
    with pytest.raises(RuntimeError, match=r"index_add_\(\): self \(Float\) and source "
                                           r"\(Double\) must have the same scalar type"):
        x.index_add(1, genesis.tensor([1], device=device),
                    genesis.ones(2, 1, dtype=genesis.float64, device=device))
    with pytest.raises(IndexError, match="index -1 is out of bounds"):
        x.index_copy(1, genesis.tensor([1, -1], device=device), genesis.ones(2, 2, device=device))
    with pytest.raises(RuntimeError, match="Expected dtype int32 or int64 for index"):
        x.index_select(0, genesis.tensor([0.0], device=device))


@pytest.mark.parametrize("shapes", [((3, 4), (3, 4)), ((3, 4), (4,)), ((4,), (3, 4)),
                                    ((3, 1), (1, 4)), ((), ()), ((0, 2), (2,))])
def test_masked_ops(shapes, rng, device):
    x_g, x_t = make_pair(shapes[0], genesis.float64, rng=rng, requires_grad=True, device=device)
    m = _mask(rng, shapes[1])
    m_g, m_t = genesis.tensor(m, device=device), torch.from_numpy(m)
    src_g, src_t = make_pair((20,), genesis.float64, rng=rng, requires_grad=True, device=device)
    v_g, v_t = make_pair((), genesis.float64, rng=rng, requires_grad=True, device=device)
    outs_g = (x_g.masked_fill(m_g, 2.5), x_g.masked_fill(m_g, v_g), x_g.masked_select(m_g),
              x_g.masked_scatter(m_g, src_g))
    outs_t = (x_t.masked_fill(m_t, 2.5), x_t.masked_fill(m_t, v_t), x_t.masked_select(m_t),
              x_t.masked_scatter(m_t, src_t))
    for a, b in zip(outs_g, outs_t):
        assert_close(a, b)
    check_backward(outs_g, outs_t, x_g, x_t, rng)
    for a, b in ((v_g, v_t), (src_g, src_t)):
        assert_close(a.grad, b.grad)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_masked_ops_dtypes(dtype, rng, device):
    g, t = make_pair((3, 4), dtype, rng=rng, device=device)
    m = _mask(rng, (3, 4))
    m_g, m_t = genesis.tensor(m, device=device), torch.from_numpy(m)
    assert_close(g.masked_fill(m_g, 1), t.masked_fill(m_t, 1))
    assert_close(g.clone().masked_fill_(m_g[0], 0), t.clone().masked_fill_(m_t[0], 0))
    assert_close(g.masked_select(m_g), t.masked_select(m_t))
    s_g, s_t = make_pair((12,), dtype, rng=rng, device=device)
    assert_close(g.masked_scatter(m_g, s_g), t.masked_scatter(m_t, s_t))


def test_masked_ops_errors(device):
    x = genesis.zeros(2, 5, device=device)
    assert raised(x.masked_fill, genesis.tensor([1, 0, 1, 0, 1], dtype=genesis.uint8,
                                                device=device), 3.0) == \
        raised(torch.zeros(2, 5).masked_fill, torch.tensor([1, 0, 1, 0, 1]).byte(), 3.0)
    with pytest.raises(RuntimeError, match="masked_fill_ only supports boolean masks"):
        x.masked_fill(genesis.tensor([1, 0, 1, 0, 1], device=device), 3.0)
    with pytest.raises(RuntimeError, match="only supports a 0-dimensional value tensor"):
        x.masked_fill(genesis.ones(5, dtype=genesis.bool, device=device),
                      genesis.tensor([3.0, 4.0], device=device))
    half = genesis.zeros(2, 5, dtype=genesis.float16, device=device)
    mask = genesis.ones(5, dtype=genesis.bool, device=device)
    for fill in (half.masked_fill, half.masked_fill_):
        with pytest.raises(RuntimeError, match="value cannot be converted to type c10::Half "
                                               "without overflow"):
            fill(mask, 70000.0)
    assert half.tolist() == [[0.0] * 5] * 2 and half._version == 0
    assert half.masked_fill_(mask, -float("inf"))[0, 0].item() == -float("inf")
    with pytest.raises(RuntimeError, match="only supports boolean masks"):
        x.masked_select(genesis.tensor([1, 0, 1, 0, 1], device=device))
    with pytest.raises(RuntimeError, match="Number of elements of source < number of ones"):
        x.masked_scatter(genesis.ones(2, 5, dtype=genesis.bool, device=device),
                         genesis.ones(3, device=device))


def test_take_and_take_along_dim(rng, device):
    x_g, x_t = make_pair((3, 4), genesis.float64, rng=rng, requires_grad=True, device=device)
    idx = rng.integers(-12, 12, (2, 5))
    sorted_idx = np.argsort(rng.random((3, 4)), axis=1)[:, :2]
    outs_g = (x_g.take(genesis.tensor(idx, device=device)),
              x_g.take_along_dim(genesis.tensor(sorted_idx, device=device), 1),
              genesis.take_along_dim(x_g, genesis.tensor(sorted_idx[:1], device=device), 1),
              x_g.take_along_dim(genesis.tensor(np.array([5, 0, 11]), device=device)))
    outs_t = (x_t.take(torch.from_numpy(idx)), x_t.take_along_dim(torch.from_numpy(sorted_idx), 1),
              torch.take_along_dim(x_t, torch.from_numpy(sorted_idx[:1]), 1),
              x_t.take_along_dim(torch.tensor([5, 0, 11])))
    for a, b in zip(outs_g, outs_t):
        assert_close(a, b)
    check_backward(outs_g, outs_t, x_g, x_t, rng)
    with pytest.raises(IndexError, match="tried to access index 12 on a tensor of 12"):
        x_g.take(genesis.tensor([12], device=device))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape", [(3, 4), (5,), (), (0, 3), (2, 3, 2)])
def test_nonzero(shape, dtype, rng, device):
    g, t = make_pair(shape, dtype, rng=rng, device=device)
    assert_close(g.nonzero(), t.nonzero())
    assert_close(genesis.argwhere(g), torch.argwhere(t))
    for a, b in zip(g.nonzero(as_tuple=True), t.nonzero(as_tuple=True)):
        assert_close(a, b)
    if dtype is genesis.bool:
        for a, b in zip(genesis.where(g), torch.where(t)):
            assert_close(a, b)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("descending", [False, True])
def test_sort_stable_with_ties(descending, dtype, rng, device):
    g, t = make_pair((4, 9), dtype, rng=rng, low=-0.4, high=0.6, device=device)
    for dim in (0, 1, -1):
        values, indices = g.sort(dim=dim, descending=descending, stable=True)
        expected = t.sort(dim=dim, descending=descending, stable=True)
        assert_close(values, expected.values)
        assert_close(indices, expected.indices)
        assert_close(g.argsort(dim, descending, stable=True),
                     t.argsort(dim=dim, descending=descending, stable=True))


def test_sort_nan_and_layouts(rng, device):
    for layout in LAYOUTS:
        _, (g, t) = laid_out((5, 6), layout, genesis.float32, rng, device=device)
        g[1, 2], t[1, 2] = float("nan"), float("nan")
        for descending in (False, True):
            got, want = g.sort(1, descending), t.sort(1, descending)
            assert_close(got.values, want.values)
            assert_close(got.indices, want.indices)
    assert_close(genesis.msort(g), torch.msort(t))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_sort_topk_kthvalue_gradients(layout, rng, device):
    (leaf_g, leaf_t), (x_g, x_t) = laid_out((4, 7), layout, genesis.float64, rng, True,
                                            device=device)
    outs_g = (x_g.sort(1).values, x_g.sort(0, descending=True)[0], x_g.topk(3).values,
              x_g.topk(2, 0, largest=False)[0], x_g.kthvalue(3).values,
              x_g.kthvalue(2, 0, keepdim=True).values)
    outs_t = (x_t.sort(1).values, x_t.sort(0, descending=True)[0], x_t.topk(3).values,
              x_t.topk(2, 0, largest=False)[0], x_t.kthvalue(3).values,
              x_t.kthvalue(2, 0, keepdim=True).values)
    for a, b in zip(outs_g, outs_t):
        assert_close(a, b)
    assert_close(x_g.topk(3).indices, x_t.topk(3).indices)
    assert_close(x_g.kthvalue(2, 0).indices, x_t.kthvalue(2, 0).indices)
    check_backward(outs_g, outs_t, leaf_g, leaf_t, rng)


@pytest.mark.parametrize("dtype", [d for d in ALL_DTYPES if d is not genesis.bool])
def test_topk_dtypes(dtype, rng, device):
    g, t = make_pair((3, 20), dtype, rng=rng, device=device)
    for largest in (True, False):
        got, want = g.topk(5, largest=largest), t.topk(5, largest=largest)
        assert_close(got.values, want.values)
        assert_close(g.gather(1, got.indices), want.values)


def test_sort_topk_gradcheck_and_edges(rng, device):
    x = genesis.tensor(rng.standard_normal((3, 5)), dtype=genesis.float64, requires_grad=True,
                       device=device)
    for fn in (lambda x: x.sort(1).values, lambda x: x.topk(2, 0).values,
               lambda x: x.kthvalue(2, 1).values):
        assert genesis.autograd.gradcheck(fn, (x,))
        assert genesis.autograd.gradgradcheck(fn, (x,))
    g, t = make_pair((), rng=rng, device=device)
    assert_close(g.sort().values, t.sort().values)
    assert_close(g.topk(1).indices, t.topk(1).indices)
    g, t = make_pair((0, 3), rng=rng, device=device)
    assert_close(g.sort(0).values, t.sort(0).values)
    assert_close(g.topk(0).values, t.topk(0).values)
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        genesis.zeros(2, 5, device=device).topk(6)
    with pytest.raises(RuntimeError, match="kthvalue\\(\\): selected number k out of range"):
        genesis.zeros(3, 2, device=device).kthvalue(4)
    with pytest.raises(IndexError, match="Dimension out of range"):
        genesis.zeros(3, 2, device=device).sort(5)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("dim", [None, 0, 1])
def test_unique(dim, dtype, rng, device):
    g, t = make_pair((6, 3), dtype, rng=rng, low=-0.2, high=0.4, device=device)
    if dtype.is_floating_point:
        g, t = g.round(), t.round()
    got = genesis.unique(g, return_inverse=True, return_counts=True, dim=dim)
    want = torch.unique(t, return_inverse=True, return_counts=True, dim=dim)
    for a, b in zip(got, want):
        assert_close(a, b)
    assert_close(g.unique(), t.unique())


def test_unique_keeps_each_nan(device):
    """Every NaN is a distinct value (torch's rule; numpy's unique would merge them)."""
    x = [1.0, float("nan"), 2.0, float("nan"), 1.0]
    got = genesis.unique(genesis.tensor(x, device=device), return_counts=True)
    want = torch.unique(torch.tensor(x), return_counts=True)
    for a, b in zip(got, want):
        assert_close(a, b)


@pytest.mark.parametrize("dim", [None, 0, 1])
def test_repeat_interleave_tensor_repeats(dim, rng, device):
    x_g, x_t = make_pair((3, 4), genesis.float64, rng=rng, requires_grad=True, device=device)
    n = 12 if dim is None else x_t.shape[dim]
    reps = rng.integers(0, 4, n)
    out_g = x_g.repeat_interleave(genesis.tensor(reps, device=device), dim)
    out_t = x_t.repeat_interleave(torch.from_numpy(reps), dim)
    assert_close(out_g, out_t)
    check_backward((out_g,), (out_t,), x_g, x_t, rng)
    assert_close(genesis.repeat_interleave(genesis.tensor(reps, device=device)),
                 torch.repeat_interleave(torch.from_numpy(reps)))
    assert_close(x_g.repeat_interleave(genesis.tensor([2], device=device)),
                 x_t.repeat_interleave(torch.tensor([2])))


def test_repeat_interleave_errors(device):
    with pytest.raises(RuntimeError, match=r"repeats must have the same size as input along dim, "
                                           r"but got repeats.size\(0\) = 2"):
        genesis.zeros(3, device=device).repeat_interleave(genesis.tensor([1, 2], device=device))
    with pytest.raises(RuntimeError, match="repeats can not be negative"):
        genesis.zeros(3, device=device).repeat_interleave(genesis.tensor([1, -2, 0], device=device))
    with pytest.raises(RuntimeError, match="repeats can not be negative"):
        genesis.zeros(3, device=device).repeat_interleave(-1)


INPLACE = {
    "scatter_": lambda x, i, s, m: x.scatter_(1, i, s),
    "scatter_value_": lambda x, i, s, m: x.scatter_(1, i, 2.0),
    "scatter_add_": lambda x, i, s, m: x.scatter_add_(1, i, s),
    "index_add_": lambda x, i, s, m: x.index_add_(1, i[0], s, alpha=-1),
    "index_copy_": lambda x, i, s, m: x.index_copy_(1, i[0], s),
    "index_fill_": lambda x, i, s, m: x.index_fill_(1, i[0], 3.0),
    "masked_fill_": lambda x, i, s, m: x.masked_fill_(m, -1.0),
    "masked_fill_row_": lambda x, i, s, m: x.masked_fill_(m[1], 2),
    "masked_fill_tensor_": lambda x, i, s, m: x.masked_fill_(m, s[1, 2]),
    "masked_scatter_": lambda x, i, s, m: x.masked_scatter_(m, s.reshape(-1).repeat(2)),
    "index_put_": lambda x, i, s, m: x.index_put_((i.new_tensor([0, 3, 0]),),
                                                   s[0, 0] * s[:3, :1], accumulate=True),
}


@pytest.mark.parametrize("name", sorted(INPLACE))
def test_inplace_variants(name, rng, device):
    x_g, x_t = make_pair((4, 5), genesis.float64, rng=rng, device=device)
    s_g, s_t = make_pair((4, 3), genesis.float64, rng=rng, device=device)
    idx = _perm_index(rng, (4, 5), 1)[:, :3]
    m = _mask(rng, (4, 5))
    fn = INPLACE[name]
    base_g, base_t = x_g, x_t
    out_g = fn(x_g, genesis.tensor(idx, device=device), s_g, genesis.tensor(m, device=device))
    out_t = fn(x_t, torch.from_numpy(idx), s_t, torch.from_numpy(m))
    assert out_g is base_g and out_t is base_t
    assert_close(x_g, x_t)
    assert x_g._version == 1


@pytest.mark.parametrize("name", sorted(INPLACE))
def test_inplace_variants_autograd(name, rng, device):
    leaf_g, leaf_t = make_pair((4, 5), genesis.float64, rng=rng, requires_grad=True, device=device)
    s_g, s_t = make_pair((4, 3), genesis.float64, rng=rng, requires_grad=True, device=device)
    idx = _perm_index(rng, (4, 5), 1)[:, :3]
    m = _mask(rng, (4, 5))
    y_g, y_t = leaf_g * 1, leaf_t * 1
    INPLACE[name](y_g, genesis.tensor(idx, device=device), s_g, genesis.tensor(m, device=device))
    INPLACE[name](y_t, torch.from_numpy(idx), s_t, torch.from_numpy(m))
    assert_close(y_g, y_t)
    check_backward((y_g,), (y_t,), leaf_g, leaf_t, rng)
    if s_t.grad is not None:
        assert_close(s_g.grad, s_t.grad)


def test_failed_inplace_leaves_tensor_unchanged(rng, device):
    x, _ = make_pair((4, 5), rng=rng, device=device)
    before = x.cpu().numpy().copy()
    for fn in (lambda: x.scatter_(1, genesis.tensor([[7]], device=device), 1.0),
               lambda: x.index_add_(0, genesis.tensor([9], device=device),
                                    genesis.ones(1, 5, device=device)),
               lambda: x.masked_fill_(genesis.ones(2, 4, 5, dtype=genesis.bool, device=device),
                                      1.0),
               lambda: x.index_fill_(0, genesis.tensor([0], device=device),
                                     genesis.ones(2, device=device))):
        with pytest.raises((RuntimeError, IndexError)):
            fn()
        np.testing.assert_array_equal(x.cpu().numpy(), before)
    assert x._version == 0


@pytest.mark.parametrize("index", [
    (0,), (slice(None), 1), (0, slice(1, 3)), (slice(1, 3), 0), (slice(None),), (None, 0),
    (0, None), (Ellipsis, 1), (slice(0, 2),), (0, 1, 2), (slice(None, None, 2),)],
    ids=str)
def test_basic_index_node_names_match_torch(index):
    """x[0] prints grad_fn=<SelectBackward0>, x[1:3] <SliceBackward0>, as in PyTorch."""
    g = genesis.ones(3, 4, 5, requires_grad=True)[index]
    t = torch.ones(3, 4, 5, requires_grad=True)[index]
    assert g.grad_fn.name() == type(t.grad_fn).__name__


_OUT_OF_BOUNDS_CALLS = {
    "gather": lambda lib, x, i: x.gather(1, i.view(-1, 1)[:3]),
    "scatter_": lambda lib, x, i: x.scatter_(1, i.view(-1, 1)[:3], 1.0),
    "scatter_add_": lambda lib, x, i: x.scatter_add_(1, i.view(-1, 1)[:3], x[:, :1]),
    "scatter_reduce": lambda lib, x, i: x.scatter_reduce(1, i.view(-1, 1)[:3], x[:, :1], "sum"),
    "index_add_": lambda lib, x, i: x.index_add_(0, i, x[:1].expand(i.numel(), -1)),
    "index_fill_": lambda lib, x, i: x.index_fill_(0, i, 1.0),
    "index_copy_": lambda lib, x, i: x.index_copy_(0, i, x[:1].expand(i.numel(), -1)),
    "take": lambda lib, x, i: x.take(i * 3),
    "put_": lambda lib, x, i: x.put_(i * 3, x[0, :1].expand(i.numel())),
    "getitem": lambda lib, x, i: x[i],
}


@pytest.mark.parametrize("name", list(_OUT_OF_BOUNDS_CALLS))
def test_index_out_of_bounds_errors_are_torchs(name, rng, device):
    """An index past its dimension (a GCN's edge list naming a node that is not there, a
    DQN's action past the Q-values) is refused with torch's error type and words, which name
    no op where torch's name none."""
    x = rng.standard_normal((3, 2)).astype(np.float32)
    index = np.array([0, int(rng.integers(3, 9))])
    call = _OUT_OF_BOUNDS_CALLS[name]
    assert (raised(call, genesis, genesis.tensor(x, device=device), genesis.tensor(index,
                                                                                  device=device))
            == raised(call, torch, torch.from_numpy(x), torch.from_numpy(index)))
