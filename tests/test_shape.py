"""Shape and view ops against PyTorch: values, strides, sharing, gradients and errors."""

import numpy as np
import pytest
import torch

import genesis
from helpers import ALL_DTYPES, FLOAT_DTYPES, TORCH_DTYPES, assert_close, make_pair, raised

LAYOUTS = ("contiguous", "transposed", "stepped", "offset")


def laid_out(shape, layout, dtype=genesis.float32, rng=None, requires_grad=False, device="cpu"):
    """Leaves (genesis on `device`, torch) and the same views of them with `shape` laid out as
    `layout`."""
    if layout == "transposed" and len(shape) >= 2:
        g, t = make_pair(tuple(reversed(shape)), dtype, rng=rng, requires_grad=requires_grad,
                         device=device)
        dims = tuple(reversed(range(len(shape))))
        return (g, t), (g.permute(dims), t.permute(dims))
    if layout == "stepped" and shape:
        g, t = make_pair(shape[:-1] + (2 * shape[-1] + 1,), dtype, rng=rng,
                         requires_grad=requires_grad, device=device)
        return (g, t), (g[..., 1::2], t[..., 1::2])
    if layout == "offset" and shape:
        g, t = make_pair((shape[0] + 2,) + shape[1:], dtype, rng=rng,
                         requires_grad=requires_grad, device=device)
        return (g, t), (g[2:], t[2:])
    g, t = make_pair(shape, dtype, rng=rng, requires_grad=requires_grad, device=device)
    return (g, t), (g, t)


def outputs(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def check_forward(fn, x_g, x_t, views=False):
    """fn on both; values match; where PyTorch's result shares x's memory, so does genesis's,
    with the same strides and offset (and `views` asks that such results be views)."""
    out_g, out_t = outputs(fn(x_g)), outputs(fn(x_t))
    assert len(out_g) == len(out_t)
    for a, b in zip(out_g, out_t):
        assert_close(a, b)
        shared = b.untyped_storage().data_ptr() == x_t.untyped_storage().data_ptr()
        assert shared == (a._storage is x_g._storage) or a.numel() == 0
        if shared and views:
            assert a._base is not None
        if shared and a.numel() > 1:
            assert a.stride() == b.stride(), (a.stride(), b.stride())
            assert a.storage_offset() - x_g.storage_offset() == \
                b.storage_offset() - x_t.storage_offset()
    return out_g, out_t


def check_backward(out_g, out_t, leaf_g, leaf_t, rng):
    """Weighted sum of the outputs backward on both sides; leaf gradients match."""
    loss_g, loss_t = 0, 0
    for a, b in zip(out_g, out_t):
        w = rng.standard_normal(tuple(b.shape))
        loss_g = loss_g + (a * genesis.tensor(w, dtype=a.dtype, device=a.device)).sum()
        loss_t = loss_t + (b * torch.tensor(w, dtype=b.dtype)).sum()
    loss_g.backward()
    loss_t.backward()
    assert_close(leaf_g.grad, leaf_t.grad)


VIEW_CASES = {
    "reshape_flat": ((3, 4, 5), lambda x: x.reshape(-1)),
    "reshape_split": ((3, 4, 5), lambda x: x.reshape(3, 2, -1, 5)),
    "reshape_merge": ((3, 4, 5), lambda x: x.reshape((12, 5))),
    "view_as": ((3, 4, 5), lambda x: x.reshape_as(x.new_zeros(4, 15))),
    "permute": ((3, 4, 5), lambda x: x.permute(2, 0, 1)),
    "permute_neg": ((3, 4, 5), lambda x: x.permute((-1, 1, 0))),
    "transpose": ((3, 4, 5), lambda x: x.transpose(0, 2)),
    "swapaxes": ((3, 4, 5), lambda x: x.swapaxes(-1, 1)),
    "t": ((3, 5), lambda x: x.t()),
    "t_1d": ((5,), lambda x: x.t()),
    "T": ((3, 5), lambda x: x.T),
    "mT": ((2, 3, 5), lambda x: x.mT),
    "mH": ((3, 5), lambda x: x.mH),
    "expand": ((3, 1, 5), lambda x: x.expand(2, 3, 4, 5)),
    "expand_keep": ((3, 1, 5), lambda x: x.expand(-1, 4, -1)),
    "broadcast_to": ((1, 5), lambda x: x.broadcast_to((3, 5))),
    "squeeze_all": ((3, 1, 5, 1), lambda x: x.squeeze()),
    "squeeze_dim": ((3, 1, 5, 1), lambda x: x.squeeze(1)),
    "squeeze_dims": ((3, 1, 5, 1), lambda x: x.squeeze((1, -1))),
    "squeeze_noop": ((3, 1, 5), lambda x: x.squeeze(0)),
    "unsqueeze0": ((3, 4), lambda x: x.unsqueeze(0)),
    "unsqueeze_mid": ((3, 4), lambda x: x.unsqueeze(1)),
    "unsqueeze_last": ((3, 4), lambda x: x.unsqueeze(-1)),
    "flatten": ((3, 4, 5), lambda x: x.flatten()),
    "flatten_tail": ((3, 4, 5), lambda x: x.flatten(1)),
    "flatten_head": ((3, 4, 5), lambda x: x.flatten(0, 1)),
    "unflatten": ((3, 4, 5), lambda x: x.unflatten(1, (2, -1))),
    "narrow": ((3, 4, 5), lambda x: x.narrow(1, 1, 2)),
    "narrow_neg": ((3, 4, 5), lambda x: x.narrow(-1, -3, 2)),
    "select": ((3, 4, 5), lambda x: x.select(1, 2)),
    "select_neg": ((3, 4, 5), lambda x: x.select(-1, -1)),
    "diagonal": ((4, 5), lambda x: x.diagonal()),
    "diagonal_offset": ((3, 4, 5), lambda x: x.diagonal(1, 0, 2)),
    "diagonal_neg": ((3, 4, 5), lambda x: x.diagonal(-1, 2, 1)),
    "unbind": ((3, 4, 5), lambda x: x.unbind(1)),
    "split": ((5, 4), lambda x: x.split(2)),
    "split_sizes": ((3, 4), lambda x: x.split([1, 3], 1)),
    "chunk": ((3, 7), lambda x: x.chunk(3, 1)),
    "tensor_split": ((7, 2), lambda x: x.tensor_split(3)),
    "tensor_split_idx": ((3, 7), lambda x: x.tensor_split([1, 5], 1)),
    "movedim": ((3, 4, 5), lambda x: x.movedim(0, 2)),
    "movedim_many": ((3, 4, 5), lambda x: x.movedim((0, 1), (2, 0))),
    "index_int": ((3, 4, 5), lambda x: x[1]),
    "index_neg_step": ((3, 4, 5), lambda x: x[-1, :, ::2]),
    "index_none_ellipsis": ((3, 4, 5), lambda x: x[None, ..., 1:4:2]),
    "index_trailing_none": ((3, 4, 5), lambda x: x[..., None]),
    "index_mixed": ((3, 4, 5), lambda x: x[1:, None, 2]),
    "index_past_end": ((3, 4, 5), lambda x: x[:, 5:]),
    "index_clamped": ((3, 4, 5), lambda x: x[-10:10, 1:-1]),
    "index_true": ((3, 4), lambda x: x[True]),
    "index_false": ((3, 4), lambda x: x[False]),
    "index_step3": ((7, 4), lambda x: x[1::3, ::3]),
    "index_0d_result": ((3, 4), lambda x: x[2, -1]),
}


def test_reshape_copies_when_it_must(rng, device):
    (_, _), (x_g, x_t) = laid_out((3, 4), "transposed", rng=rng, device=device)
    y = x_g.reshape(-1)
    assert_close(y, x_t.reshape(-1))
    assert y._base is None and y.is_contiguous()
    assert y._storage is not x_g._storage


@pytest.mark.parametrize("where", ["cpu", "meta"])
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_expand_to_fewer_dims_names_the_tensor_type_as_torch(dtype, where, rng):
    """expand to fewer sizes than dims: torch's text, naming the tensor by its legacy type
    ('torch.FloatTensor') or its dispatch key's ('CPUBoolType', 'MetaFloatType')."""
    shape = tuple(int(n) for n in rng.integers(1, 4, rng.integers(2, 4)))
    found = [raised(lambda: lib.zeros(shape, dtype=d, device=where).expand(shape[1:]))
             for lib, d in ((genesis, dtype), (torch, TORCH_DTYPES[dtype]))]
    assert found[0] == found[1]


def test_view_errors(device):
    x = genesis.zeros(4, 6, device=device)
    with pytest.raises(RuntimeError, match="view size is not compatible with input tensor's "
                                           "size and stride"):
        x.t().view(-1)
    with pytest.raises(RuntimeError, match=r"shape '\[5, -1\]' is invalid for input of size 24"):
        x.view(5, -1)
    with pytest.raises(RuntimeError, match="only one dimension can be inferred"):
        x.view(-1, -1)
    with pytest.raises(RuntimeError, match="ambiguous"):
        genesis.zeros(0, 3, device=device).view(0, -1)
    with pytest.raises(RuntimeError, match=r"expanded size of the tensor \(4\) must match the "
                                           r"existing size \(6\)"):
        x.expand(3, 4)
    with pytest.raises(RuntimeError, match="leading, non-existing dimension 0"):
        x.expand(-1, 4, 6)
    with pytest.raises(RuntimeError, match="duplicate dims"):
        x.permute(0, 0)
    with pytest.raises(RuntimeError, match="input.dim\\(\\) = 2 is not equal to len\\(dims\\) = 1"):
        x.permute(0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.squeeze(2)
    with pytest.raises(RuntimeError, match="t\\(\\) expects a tensor with <= 2 dimensions"):
        genesis.zeros(2, 3, 4, device=device).t()
    with pytest.raises(RuntimeError, match="mT is only supported on matrices"):
        genesis.zeros(3, device=device).mT
    with pytest.raises(RuntimeError, match="start_dim cannot come after end_dim"):
        x.flatten(1, 0)
    with pytest.raises(RuntimeError, match="don't multiply up to the size of dim 1"):
        x.unflatten(1, (4, 2))


def test_narrow_select_split_errors(device):
    x = genesis.zeros(2, 5, device=device)
    with pytest.raises(RuntimeError, match=r"start \(3\) \+ length \(3\) exceeds dimension size"):
        x.narrow(1, 3, 3)
    with pytest.raises(IndexError, match="start out of range"):
        x.narrow(1, 7, 1)
    with pytest.raises(IndexError, match=r"select\(\): index 7 out of range for tensor of size "
                                         r"\[2, 5\] at dimension 1"):
        x.select(1, 7)
    with pytest.raises(RuntimeError, match="split_sizes to sum exactly to 5"):
        x.split([2, 2], 1)
    with pytest.raises(RuntimeError, match="split_size can only be 0"):
        x.split(0, 1)
    with pytest.raises(RuntimeError, match="chunk expects `chunks` to be greater than 0"):
        x.chunk(0)


def test_split_chunk_edge_cases(device):
    assert len(genesis.zeros(0, device=device).chunk(3)) == len(torch.zeros(0).chunk(3)) == 3
    assert len(genesis.zeros(5, device=device).chunk(4)) == len(torch.zeros(5).chunk(4)) == 3
    assert [p.shape[0] for p in genesis.zeros(0, 2, device=device).split(2)] == [0]


def test_view_shares_version_counter_and_sees_writes(device):
    x = genesis.zeros(3, 4, device=device)
    v = x.t()[1:]
    v.add_(1)
    assert x._version == v._version == 1
    assert x.sum().item() == 9


def test_zero_dim_views(rng, device):
    g, t = make_pair((), genesis.float64, rng=rng, device=device)
    for fn in (lambda x: x.reshape(1, 1), lambda x: x.unsqueeze(0), lambda x: x.view(-1),
               lambda x: x.squeeze(), lambda x: x.flatten(), lambda x: x.t(), lambda x: x.T,
               lambda x: x.expand(2, 3), lambda x: x[None], lambda x: x[...]):
        assert_close(fn(g), fn(t))


def test_empty_views(device):
    g, t = genesis.zeros(0, 3, device=device), torch.zeros(0, 3)
    for fn in (lambda x: x.reshape(3, 0), lambda x: x.t(), lambda x: x[:, 1:],
               lambda x: x.unsqueeze(1), lambda x: x.flatten(), lambda x: x.expand(2, 0, 3)):
        assert_close(fn(g), fn(t))


def test_as_strided(rng, device):
    g, t = make_pair((4, 6), genesis.float64, rng=rng, device=device)
    for args in (((3, 3), (6, 1)), ((2, 2), (1, 6), 2), ((5,), (4,), 1)):
        assert_close(g.as_strided(*args), t.as_strided(*args))
    x = genesis.tensor(rng.standard_normal(12), dtype=genesis.float64, requires_grad=True,
                       device=device)
    assert genesis.autograd.gradcheck(lambda x: x.as_strided((3, 2), (4, 2), 1), (x,))


def test_strides_follow_pytorch(rng, device):
    g, t = make_pair((2, 3, 4), rng=rng, device=device)
    for fn in (lambda x: x.unsqueeze(1), lambda x: x.permute(2, 0, 1).unsqueeze(3),
               lambda x: x[:, None, 1], lambda x: x.transpose(0, 1).reshape(3, 2, 2, 2)):
        assert fn(g).stride() == fn(t).stride()


def test_metadata_inplace_ops(rng, device):
    g, t = make_pair((3, 1, 4), rng=rng, device=device)
    for name, args in (("squeeze_", (1,)), ("unsqueeze_", (0,)), ("transpose_", (0, 2))):
        getattr(g, name)(*args)
        getattr(t, name)(*args)
        assert_close(g, t)
    m_g, m_t = make_pair((2, 3), rng=rng, device=device)
    assert_close(m_g.t_(), m_t.t_())


def cat_inputs(shapes, dtypes_, layout, rng, device):
    pairs = [laid_out(s, layout, d, rng, d.is_floating_point, device)
             for s, d in zip(shapes, dtypes_)]
    return [p[0] for p in pairs], [p[1][0] for p in pairs], [p[1][1] for p in pairs]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cat_and_gradients(dim, layout, rng, device):
    shapes = [(3, 2, 4), (3, 2, 4), (3, 2, 4)]
    shapes = [tuple(s[d] + i if d == dim % 3 else s[d] for d in range(3))
              for i, s in enumerate(shapes)]
    leaves, gs, ts = cat_inputs(shapes, [genesis.float64] * 3, layout, rng, device=device)
    out_g, out_t = genesis.cat(gs, dim), torch.cat(ts, dim)
    assert_close(out_g, out_t)
    w = rng.standard_normal(out_t.shape)
    (out_g * genesis.tensor(w, device=device)).sum().backward()
    (out_t * torch.tensor(w)).sum().backward()
    for g_leaf, t_leaf in leaves:
        assert_close(g_leaf.grad, t_leaf.grad)


@pytest.mark.parametrize("order", [(1, 0, 2, 3), (2, 3, 0, 1), (3, 1, 0, 2)])
def test_cat_and_stack_of_permuted_inputs_are_contiguous(order, rng, device):
    """Inputs laid out in another dim order (einsum's or permute's results, not channels_last)
    join into a contiguous result, as PyTorch's: Transformer-XL's _rel_shift views the cat of a
    zero column and an einsum result; a mix of layouts, 1-d empties and stack too."""
    shape = (3, 4, 2, 5)
    g, t = make_pair(tuple(shape[i] for i in order), rng=rng, device=device)
    inverse = tuple(np.argsort(order))
    g, t = g.permute(inverse), t.permute(inverse)
    zg, zt = make_pair((3, 1, 2, 5), rng=rng, device=device)
    for fn in (lambda lib, x, z: lib.cat([z, x], dim=1), lambda lib, x, z: lib.cat([x, x], 0),
               lambda lib, x, z: lib.cat([lib.empty(0, device=x.device), x, z], -3),
               lambda lib, x, z: lib.stack([x, x], 2)):
        out_g, out_t = fn(genesis, g, zg), fn(torch, t, zt)
        assert_close(out_g, out_t)
        assert out_g.stride() == out_t.stride() and out_g.is_contiguous()
    padded = genesis.cat([zg, g], dim=1).view(5, 3, 2, 5)[1:].view(3, 4, 2, 5)
    assert_close(padded, torch.cat([zt, t], dim=1).view(5, 3, 2, 5)[1:].view(3, 4, 2, 5))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_cat_stack_dtypes(dtype, rng, device):
    pairs = [make_pair((2, 3), dtype, rng=rng, device=device) for _ in range(3)]
    assert_close(genesis.cat([p[0] for p in pairs], 1), torch.cat([p[1] for p in pairs], 1))
    assert_close(genesis.stack([p[0] for p in pairs], -1), torch.stack([p[1] for p in pairs], -1))


@pytest.mark.parametrize("pair_dtypes", [(genesis.int32, genesis.float16),
                                         (genesis.bool, genesis.uint8),
                                         (genesis.int8, genesis.uint8),
                                         (genesis.bfloat16, genesis.float16),
                                         (genesis.float32, genesis.float64)])
def test_cat_promotes(pair_dtypes, rng, device):
    a, b = (make_pair((2, 2), d, rng=rng, device=device) for d in pair_dtypes)
    assert_close(genesis.cat([a[0], b[0]]), torch.cat([a[1], b[1]]))
    assert_close(genesis.concat([a[0], b[0]], 1), torch.concat([a[1], b[1]], 1))
    assert_close(genesis.concatenate([a[0], b[0]], axis=1),
                 torch.concatenate([a[1], b[1]], axis=1))


def test_cat_skips_legacy_empty_and_handles_empty(rng, device):
    a_g, a_t = make_pair((2, 3), rng=rng, device=device)
    legacy, empty = genesis.zeros(0, device=device), genesis.zeros(0, 3, device=device)
    assert_close(genesis.cat([a_g, legacy]), torch.cat([a_t, torch.zeros(0)]))
    assert_close(genesis.cat([empty, a_g]), torch.cat([torch.zeros(0, 3), a_t]))
    assert_close(genesis.cat([legacy, legacy]), torch.cat([torch.zeros(0)] * 2))


def test_cat_stack_errors(device):
    with pytest.raises(RuntimeError, match=r"Sizes of tensors must match except in dimension 0. "
                                           r"Expected size 3 but got size 4 for tensor number 1 "
                                           r"in the list \(shapes \[2, 3\] and \[2, 4\]\)"):
        genesis.cat([genesis.zeros(2, 3, device=device), genesis.zeros(2, 4, device=device)])
    with pytest.raises(RuntimeError, match="Tensors must have same number of dimensions"):
        genesis.cat([genesis.zeros(2, 3, device=device), genesis.zeros(2, 3, 1, device=device)])
    with pytest.raises(RuntimeError, match="zero-dimensional tensor"):
        genesis.cat([genesis.zeros((), device=device), genesis.zeros(2, device=device)])
    with pytest.raises(RuntimeError, match=r"stack expects each tensor to be equal size, but got "
                                           r"\[2, 3\] at entry 0 and \[2, 4\] at entry 1"):
        genesis.stack([genesis.zeros(2, 3, device=device), genesis.zeros(2, 4, device=device)])
    with pytest.raises(IndexError, match="Dimension out of range"):
        genesis.cat([genesis.zeros(2, 3, device=device)], 2)


@pytest.mark.parametrize("name", ["cat", "concat", "concatenate", "hstack", "vstack", "dstack",
                                  "column_stack", "row_stack"])
def test_joining_no_tensors_is_refused_as_torch(name):
    """An empty list to join (a DQN batch whose next states are all final) is refused with
    torch's error: ValueError from cat's argument parser, RuntimeError naming the stack op."""
    errors = []
    for lib in (genesis, torch):
        with pytest.raises((ValueError, RuntimeError)) as caught:
            getattr(lib, name)([])
        errors.append((caught.type, str(caught.value)))
    assert errors[0] == errors[1]


@pytest.mark.parametrize("name", ["hstack", "vstack", "dstack", "column_stack", "row_stack"])
@pytest.mark.parametrize("shapes", [[(3,), (3,)], [(2, 3), (2, 3)], [(), ()]])
def test_stack_family(name, shapes, rng, device):
    if name == "column_stack" and shapes[0] == (2, 3):
        shapes = [(2, 3), (2,)]
    pairs = [make_pair(s, rng=rng, device=device) for s in shapes]
    assert_close(getattr(genesis, name)([p[0] for p in pairs]),
                 getattr(torch, name)([p[1] for p in pairs]))


@pytest.mark.parametrize("name", ["atleast_1d", "atleast_2d", "atleast_3d"])
@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (2, 3, 4)])
def test_atleast(name, shape, rng, device):
    g, t = make_pair(shape, rng=rng, device=device)
    assert_close(getattr(genesis, name)(g), getattr(torch, name)(t))
    outs_g, outs_t = getattr(genesis, name)(g, g), getattr(torch, name)(t, t)
    for a, b in zip(outs_g, outs_t):
        assert_close(a, b)


COPY_CASES = {
    "flip": ((3, 4, 5), lambda x: x.flip(0, 2)),
    "flip_fn": ((3, 4, 5), lambda x: (genesis if isinstance(x, genesis.Tensor) else torch)
                .flip(x, (-1,))),
    "fliplr": ((3, 4), lambda x: x.fliplr()),
    "flipud": ((3, 4), lambda x: x.flipud()),
    "roll_flat": ((3, 4, 5), lambda x: x.roll(7)),
    "roll_dims": ((3, 4, 5), lambda x: x.roll((1, -2), (0, 2))),
    "roll_big": ((3, 4), lambda x: x.roll(-9, 1)),
    "tril": ((4, 5), lambda x: x.tril()),
    "tril_k": ((2, 4, 5), lambda x: x.tril(1)),
    "triu": ((5, 4), lambda x: x.triu(-1)),
    "triu_far": ((3, 4), lambda x: x.triu(7)),
    "repeat": ((3, 4), lambda x: x.repeat(2, 1, 3)),
    "repeat_ones": ((3, 4), lambda x: x.repeat(1, 1)),
    "tile": ((3, 4), lambda x: x.tile((2,))),
    "tile_more": ((3, 4), lambda x: x.tile((2, 1, 2))),
    "repeat_interleave": ((3, 4), lambda x: x.repeat_interleave(2, dim=1)),
    "repeat_interleave_flat": ((3, 4), lambda x: x.repeat_interleave(3)),
    "diag_matrix": ((4, 5), lambda x: x.diag(1)),
    "diag_vector": ((4,), lambda x: x.diag(-1)),
    "diag_embed": ((2, 3), lambda x: x.diag_embed(1, 0, 2)),
}


CASES = {**VIEW_CASES, **COPY_CASES}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_forward_and_backward(case, layout, rng, device):
    shape, fn = CASES[case]
    (leaf_g, leaf_t), (x_g, x_t) = laid_out(shape, layout, genesis.float64, rng, True, device)
    out_g, out_t = check_forward(fn, x_g, x_t, views=case in VIEW_CASES)
    check_backward(out_g, out_t, leaf_g, leaf_t, rng)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("case", ["permute", "expand", "index_neg_step", "unbind", "diagonal",
                                  "reshape_split", "squeeze_all", "flip", "roll_dims", "tril_k",
                                  "triu", "repeat", "repeat_interleave", "diag_vector"])
def test_forward_dtypes(case, dtype, rng, device):
    shape, fn = CASES[case]
    _, (x_g, x_t) = laid_out(shape, "stepped", dtype, rng, device=device)
    check_forward(fn, x_g, x_t, views=case in VIEW_CASES)


@pytest.mark.parametrize("case", ["permute", "expand", "squeeze_dims", "unsqueeze_mid", "narrow",
                                  "select", "diagonal_offset", "unbind", "split_sizes",
                                  "index_none_ellipsis", "index_step3", "reshape_split",
                                  "movedim_many", "flip", "roll_dims", "tril_k", "repeat",
                                  "diag_embed", "repeat_interleave"])
def test_gradcheck(case, rng, device):
    shape, fn = CASES[case]
    x = genesis.tensor(rng.standard_normal(shape), dtype=genesis.float64, requires_grad=True,
                       device=device)
    assert genesis.autograd.gradcheck(fn, (x,))
    assert genesis.autograd.gradgradcheck(fn, (x,))


def test_cat_stack_gradcheck(rng, device):
    a, b = (genesis.tensor(rng.standard_normal((2, 3)), dtype=genesis.float64,
                           requires_grad=True, device=device) for _ in range(2))
    assert genesis.autograd.gradcheck(lambda a, b: genesis.cat([a, b], 1), (a, b))
    assert genesis.autograd.gradgradcheck(lambda a, b: genesis.stack([a, b], 1), (a, b))


def test_copy_ops_zero_dim_and_empty(rng, device):
    for g, t in (make_pair((), rng=rng, device=device), make_pair((0, 3), rng=rng, device=device)):
        for fn in (lambda x: x.flip(0) if x.ndim else x.flip(()), lambda x: x.roll(1),
                   lambda x: x.repeat(2, 2) if x.ndim == 2 else x.repeat(3),
                   lambda x: x.repeat_interleave(2)):
            assert_close(fn(g), fn(t))
    g, t = make_pair((0, 3), rng=rng, device=device)
    assert_close(g.tril(), t.tril())


def test_copy_op_errors(device):
    with pytest.raises(RuntimeError, match="tril: input tensor must have at least 2 dimensions"):
        genesis.zeros(3, device=device).tril()
    with pytest.raises(RuntimeError, match="shifts and dimensions must align"):
        genesis.zeros(3, 2, device=device).roll((1, 2), (0,))
    with pytest.raises(RuntimeError, match="appears multiple times"):
        genesis.zeros(3, 2, device=device).flip((0, 0))
    with pytest.raises(RuntimeError, match="Number of dimensions of repeat dims can not be"):
        genesis.zeros(3, 2, device=device).repeat(2)
    with pytest.raises(RuntimeError, match="Input must be >= 2-d"):
        genesis.zeros(3, device=device).fliplr()


def test_tril_triu_inplace(rng, device):
    for name in ("tril_", "triu_"):
        g, t = make_pair((4, 5), rng=rng, device=device)
        getattr(g, name)(1)
        getattr(t, name)(1)
        assert_close(g, t)


@pytest.mark.parametrize("indexing", ["ij", "xy"])
@pytest.mark.parametrize("sizes", [(3, 4), (2, 3, 4), (5,)])
def test_meshgrid(indexing, sizes, rng, device):
    pairs = [make_pair((n,), genesis.float64, rng=rng, requires_grad=True, device=device)
             for n in sizes]
    out_g = genesis.meshgrid(*[p[0] for p in pairs], indexing=indexing)
    out_t = torch.meshgrid(*[p[1] for p in pairs], indexing=indexing)
    for a, b in zip(out_g, out_t):
        assert_close(a, b)
    check_backward(out_g, out_t, pairs[0][0], pairs[0][1], np.random.default_rng())


KEYWORD_SIZES = [("reshape", {"shape": (3, 2)}), ("view", {"size": (3, -1)}),
                 ("permute", {"dims": (1, 0)}), ("expand", {"size": (2, 2, 3)}),
                 ("repeat", {"repeats": [2, 1]}), ("tile", {"dims": (2,)}),
                 ("flip", {"dims": (0, 1)}), ("split", {"split_size": 2, "dim": 1})]


@pytest.mark.parametrize("name,kwargs", KEYWORD_SIZES, ids=[k[0] for k in KEYWORD_SIZES])
def test_sizes_by_keyword_as_torch(name, kwargs, rng, device):
    """`x.reshape(shape=...)` and the like, as model code (MAE's patchify) writes them."""
    g, t = make_pair((2, 3), rng=rng, device=device)
    out_g, out_t = getattr(g, name)(**kwargs), getattr(t, name)(**kwargs)
    if name != "split":
        out_g, out_t = (out_g,), (out_t,)
    for a, b in zip(out_g, out_t, strict=True):
        assert_close(a, b)


def test_resize_by_keyword_as_torch():
    for lib in (genesis, torch):
        assert tuple(lib.zeros(2, 3).resize_(size=(3, 1)).shape) == (3, 1)
        with pytest.raises(TypeError, match="got multiple values for argument 'shape'"):
            lib.zeros(2, 3).reshape(2, shape=(3, 2))


def test_meshgrid_without_indexing_warns_as_torch():
    for lib in (genesis, torch):
        lib.set_warn_always(True)
        try:
            with pytest.warns(UserWarning, match="torch.meshgrid: in an upcoming release, it "
                                                 "will be required to pass the indexing"):
                grids = lib.meshgrid([lib.arange(2), lib.arange(3)])
        finally:
            lib.set_warn_always(False)
        assert [tuple(g.shape) for g in grids] == [(2, 3), (2, 3)]
        assert grids[0].tolist() == [[0, 0, 0], [1, 1, 1]]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_float_views_keep_dtype_and_grad(dtype, rng, device):
    (leaf_g, leaf_t), (x_g, x_t) = laid_out((3, 4), "transposed", dtype, rng, True, device=device)
    out_g, out_t = x_g.T[1:].unsqueeze(0), x_t.T[1:].unsqueeze(0)
    assert out_g.dtype is dtype and out_g.grad_fn is not None
    out_g.sum().backward()
    out_t.sum().backward()
    assert_close(leaf_g.grad, leaf_t.grad)



_SIZE_CALLS = ["x.view(2.0, 3)", "x.view((2.0, 3))", "x.view(-1.0)", "x.view(np.int64(3), 2)",
               "x.view(lib.tensor(3), 2)", "x.view([3, 2.5])", "x.view('a')",
               "x.reshape(2.0, 3)", "x.reshape((2.0, 3))", "x.reshape(3, 2.0)",
               "x.reshape((3, 2.0))", "x.reshape(np.int32(3), -1)", "x.reshape(True, 6)",
               "x.reshape(None)", "lib.reshape(x, (2.0, 3))", "lib.reshape(x, (3, 2.0))",
               "lib.reshape(x, 6.0)", "x.expand(2.0, 3)", "x.expand((2, 3.0))",
               "x.expand(2, 2, 3)", "x.permute(0.0, 1)", "x.permute((1, 0.0))",
               "x.permute(1, True)", "lib.permute(x, (0.0, 1))", "lib.permute(x, 1.0)",
               "x.repeat(2.0, 1)", "x.repeat((2, 1.5))", "x.repeat(2, None)", "x.flip(0.0)",
               "x.flip((0, 1.0))", "lib.flip(x, (0.0,))", "x.tile((2.0,))", "x.tile(2, 1.0)",
               "lib.tile(x, (2.0, 1))", "x.unflatten(1, (3.0, 1))", "x.split([1.0, 1.0])",
               "lib.broadcast_to(x, (2.0, 3))"]


def _size_outcomes(lib):
    out = []
    for call in _SIZE_CALLS:
        try:
            out.append(tuple(eval(call, {"lib": lib, "np": np, "x": lib.ones(2, 3)}).shape))
        except (TypeError, RuntimeError) as e:
            out.append(f"{type(e).__name__}: {e}")
    return out


def test_sizes_and_dims_of_other_types_as_torch():
    """view, reshape, expand, permute, repeat, flip, tile, unflatten, split and broadcast_to
    take integers (numpy's, one-element integer tensors and bools past the first too); others
    get PyTorch's TypeErrors, naming the argument and its position (view's: its overloads)."""
    assert _size_outcomes(genesis) == _size_outcomes(torch)


def test_cat_takes_a_list_or_tuple_only():
    """As torch's parser: a deque, a generator or a tensor (which would be joined by its rows)
    is refused with torch's TypeError."""
    import collections
    for lib in (torch, genesis):
        parts = [lib.ones(2), lib.ones(2)]
        for tensors in (collections.deque(parts), (p for p in parts), lib.ones(2, 2)):
            with pytest.raises(TypeError, match=r"^cat\(\): argument 'tensors' \(position 1\) "
                               "must be tuple of Tensors, not "):
                lib.cat(tensors)
