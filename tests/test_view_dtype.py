"""Tensor.view(dtype) against PyTorch: the same bytes read as another dtype, with torch's
shapes, strides, storage offsets and errors, writes seen through both tensors, and no autograd
history. The simulated CUDA device runs tests/view_dtype_worker.py."""

import pathlib

import numpy as np
import pytest
import torch

import genesis
from helpers import (ALL_DTYPES, GENESIS_DTYPES, TORCH_DTYPES, make_pair, raised,
                     run_checks_worker)

INTS = {1: genesis.uint8, 2: genesis.int16, 4: genesis.int32, 8: genesis.int64}  # by size
PAIRS = [(a, b) for a in ALL_DTYPES for b in ALL_DTYPES]
SIZED_PAIRS = [(genesis.float32, genesis.int32), (genesis.bfloat16, genesis.int16),
                (genesis.float16, genesis.uint8), (genesis.float64, genesis.int32),
                (genesis.uint8, genesis.float64), (genesis.int16, genesis.bool),
                (genesis.int8, genesis.float16), (genesis.float32, genesis.float32)]
LAYOUTS = {
    "contiguous": lambda x: x,
    "offset rows": lambda x: x[1:],
    "offset columns": lambda x: x[:, 2:6],
    "odd offset": lambda x: x[:, 1:5],
    "odd width": lambda x: x[:, :3],
    "stepped rows": lambda x: x[::2],
    "stepped columns": lambda x: x[:, ::2],
    "transposed": lambda x: x.t(),
    "expanded": lambda x: x[:1].expand(3, 8),
    "broadcast row": lambda x: x[:, :1].expand(4, 2),
    "one column": lambda x: x[:, 4:5],
    "0-d": lambda x: x[1, 3],
    "empty rows": lambda x: x[:0],
    "empty columns": lambda x: x[:, 8:],
    "3-d": lambda x: x.reshape(2, 2, 8)[:, 1:, 4:],
}


def raw_bytes(t):
    """The bytes of `t`'s elements in row-major order (genesis or torch, on the host). Torch's
    copies first read them as integers: copying a bool tensor would make its bytes 0 or 1."""
    if isinstance(t, torch.Tensor):
        as_ints = t.view(TORCH_DTYPES[INTS[t.element_size()]])
        return as_ints.contiguous().reshape(-1).view(torch.uint8).numpy()
    return np.ascontiguousarray(t.cpu().numpy()).reshape(-1).view(np.uint8)


def check_same_view(g, t, g_base, t_base):
    """`g` reads as `t` does: dtype, shape, strides, offset, address and every byte."""
    assert g.dtype is GENESIS_DTYPES[t.dtype]
    assert tuple(g.shape) == tuple(t.shape)
    assert g.stride() == t.stride()
    if t.numel():  # (an empty slice of Genesis's keeps its base's offset, and torch's no address)
        assert g.storage_offset() == t.storage_offset()
        assert g.data_ptr() - g_base.data_ptr() == t.data_ptr() - t_base.data_ptr()
    np.testing.assert_array_equal(raw_bytes(g), raw_bytes(t))


@pytest.mark.parametrize("src,dst", PAIRS, ids=lambda d: d.name)
def test_every_pair_of_dtypes_reads_torchs_bytes(src, dst, device):
    g, t = make_pair((3, 8), src, device=device)
    check_same_view(g.view(dst), t.view(TORCH_DTYPES[dst]), g, t)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("src,dst", SIZED_PAIRS, ids=lambda d: d.name)
def test_layouts_view_or_fail_as_torch(src, dst, layout):
    """Each layout views where torch's does, with its geometry, else raises torch's error."""
    g_base, t_base = make_pair((4, 8), src)
    g, t = LAYOUTS[layout](g_base), LAYOUTS[layout](t_base)
    try:
        expected = t.view(TORCH_DTYPES[dst])
    except RuntimeError:
        assert raised(g.view, dst) == raised(t.view, TORCH_DTYPES[dst])
        return
    check_same_view(g.view(dst), expected, g_base, t_base)


@pytest.mark.parametrize("make", [
    lambda m: m.randn(4, 6)[:, 1:].view(m.int64),
    lambda m: m.randn(4, 6)[:, 1:5].view(m.int64),
    lambda m: m.randn(4, 6).t().view(m.int16),
    lambda m: m.randn(4, 6).t().view(m.int64),
    lambda m: m.randn(3, 0).t().view(m.int64),
    lambda m: m.randn(4, 1).t().view(m.float64),
    lambda m: m.tensor(1.0).view(m.int16),
    lambda m: m.tensor(1.0).view(m.float64),
    lambda m: m.ones(3, dtype=m.bool).view(m.int16),
    lambda m: m.ones(2, 1).expand(2, 4).view(m.int8),
])
def test_errors_are_torchs(make):
    assert raised(make, genesis) == raised(make, torch)


def test_dtype_by_keyword_and_bad_combinations():
    x = genesis.randn(2, 4)
    assert x.view(dtype=genesis.int16).shape == (2, 8)
    with pytest.raises(TypeError):
        x.view(8, dtype=genesis.int32)
    with pytest.raises(TypeError):
        x.view(genesis.int32, 8)


@pytest.mark.parametrize("src,dst", SIZED_PAIRS, ids=lambda d: d.name)
def test_writes_show_through_both_tensors(src, dst):
    """A write through the view changes the base's bytes and the base's write the view's, as
    in torch; both count it on one version counter."""
    g_base, t_base = make_pair((4, 16), src)
    g, t = g_base[1:, 8:], t_base[1:, 8:]
    g_view, t_view = g.view(dst), t.view(TORCH_DTYPES[dst])
    g_view.zero_()
    t_view.zero_()
    np.testing.assert_array_equal(raw_bytes(g_base), raw_bytes(t_base))
    assert g_base._version == g_view._version == t_view._version == 1
    g.fill_(3)
    t.fill_(3)
    np.testing.assert_array_equal(raw_bytes(g_view), raw_bytes(t_view))
    assert g_view._version == t_view._version == 2


@pytest.mark.parametrize("dst", [genesis.float32, genesis.int32, genesis.float16],
                         ids=lambda d: d.name)
@pytest.mark.parametrize("source", ["leaf", "non-leaf", "parameter"])
def test_views_have_no_history_as_in_torch(source, dst):
    """The result of view(dtype) is a leaf that does not require grad, and a plain tensor,
    whatever the input (even viewed as its own dtype); an in-place write through it leaves
    the input's graph usable."""
    def build(m, data):
        w = m.tensor(data, requires_grad=True)
        x = {"leaf": w, "non-leaf": w * 2, "parameter": m.nn.Parameter(w.detach())}[source]
        return w, x, x.view(getattr(m, dst.name))

    data = np.random.default_rng().standard_normal((3, 4)).astype(np.float32)
    w_g, x_g, v_g = build(genesis, data)
    w_t, x_t, v_t = build(torch, data)
    assert (type(v_g) is genesis.Tensor) == (type(v_t) is torch.Tensor)
    assert (v_g.requires_grad, v_g.is_leaf, v_g.grad_fn) == (v_t.requires_grad, v_t.is_leaf, None)
    assert (v_g._base is None) == (v_t._base is None)
    v_g.mul_(1)
    v_t.mul_(1)
    assert x_g._version == x_t._version
    if source == "non-leaf":
        x_g.sum().backward()
        x_t.sum().backward()
        np.testing.assert_array_equal(w_g.grad.numpy(), w_t.grad.numpy())


def test_printing_matches_torch():
    bits = np.array([[16256, -16384, 16544, 0]], dtype=np.int16)
    cases = [(genesis.tensor([1.0, 2.5]), genesis.int32, torch.tensor([1.0, 2.5])),
             (genesis.tensor(bits), genesis.bfloat16, torch.tensor(bits)),
             (genesis.tensor([1, 2, 0, 3], dtype=genesis.uint8), genesis.bool,
              torch.tensor([1, 2, 0, 3], dtype=torch.uint8))]
    for g, dst, t in cases:
        assert repr(g.view(dst)) == repr(t.view(TORCH_DTYPES[dst])).replace("torch.", "genesis.")


@pytest.mark.parametrize("layout", ["contiguous", "offset columns", "transposed", "empty rows"])
def test_meta_views_match_torchs_meta_tensors(layout):
    g = LAYOUTS[layout](genesis.empty(4, 8, device="meta"))
    t = LAYOUTS[layout](torch.empty(4, 8, device="meta"))
    for dst in (genesis.int32, genesis.float64, genesis.uint8):
        try:
            expected = t.view(TORCH_DTYPES[dst])
        except RuntimeError:
            assert raised(g.view, dst) == raised(t.view, TORCH_DTYPES[dst])
            continue
        out = g.view(dst)
        assert out.is_meta and out.dtype is dst and tuple(out.shape) == tuple(expected.shape)
        assert (out.stride(), out.storage_offset()) == (expected.stride(),
                                                        expected.storage_offset())


def test_simulated_cuda_views_share_the_allocation():
    run_checks_worker(pathlib.Path(__file__).with_name("view_dtype_worker.py"))
