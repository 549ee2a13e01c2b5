"""EmbeddingBag and F.embedding_bag against torch: modes, offsets, per-sample weights,
padding_idx, empty bags, gradients and errors."""

import numpy as np
import pytest
import torch
import torch.nn as tnn
import torch.nn.functional as TF
from helpers import TORCH_DTYPES, assert_close, assert_refuses_as_torch, from_torch

import genesis
import genesis.nn as nn
import genesis.nn.functional as F
from genesis.autograd import gradcheck

CASES = [  # (input, offsets, kwargs)
    ([1, 2, 4, 5, 4, 3, 2, 9], [0, 3, 3, 6], {}),
    ([[1, 2, 4], [4, 3, 2]], None, {}),
    ([1, 2, 4, 5, 4, 3, 2, 9], [0, 4, 8], {"include_last_offset": True}),
    ([0, 2, 0, 5, 4, 0], [0, 2, 3], {"padding_idx": 0}),
    ([1, 7, 3], [0, 1], {"max_norm": 1.5}),
]


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("case", range(len(CASES)))
@pytest.mark.parametrize("dtype", [genesis.float32, genesis.float64], ids=str)
def test_embedding_bag_matches_torch(mode, case, dtype, rng, device):
    indices, offsets, kwargs = CASES[case]
    weight = torch.tensor(rng.standard_normal((10, 4)), dtype=TORCH_DTYPES[dtype])
    t_w = weight.clone().requires_grad_(True)
    g_w = from_torch(weight, device=device, requires_grad=True)
    t_in = torch.tensor(indices)
    t_off = None if offsets is None else torch.tensor(offsets)
    out_t = TF.embedding_bag(t_in, t_w, t_off, mode=mode, **kwargs)
    out_g = F.embedding_bag(from_torch(t_in, device=device), g_w,
                            None if t_off is None else from_torch(t_off, device=device),
                            mode=mode, **kwargs)
    assert_close(out_g, out_t)
    grad = torch.randn(out_t.shape, dtype=out_t.dtype)
    out_t.backward(grad)
    out_g.backward(from_torch(grad, device=device))
    assert_close(g_w.grad, t_w.grad)
    assert_close(g_w.detach(), t_w.detach())  # max_norm renormalises rows in place


def test_scale_grad_by_freq(rng):
    """Each row's gradient divided by its index's count in the input, as F.embedding's (torch's
    CPU embedding_bag applies another index's count: compared with embedding + sum instead)."""
    weight = torch.tensor(rng.standard_normal((10, 4)))
    t_w = weight.clone().requires_grad_(True)
    g_w = from_torch(weight, requires_grad=True)
    idx = [3, 3, 8, 3]
    rows = TF.embedding(torch.tensor(idx), t_w, scale_grad_by_freq=True)
    out_t = torch.stack([rows[:2].sum(0), rows[2:].sum(0)])
    out_g = F.embedding_bag(genesis.tensor(idx), g_w, genesis.tensor([0, 2]), mode="sum",
                            scale_grad_by_freq=True)
    assert_close(out_g, out_t)
    grad = torch.randn(out_t.shape, dtype=out_t.dtype)
    out_t.backward(grad)
    out_g.backward(from_torch(grad))
    assert_close(g_w.grad, t_w.grad)


def test_per_sample_weights_and_bfloat16(rng):
    weight = torch.tensor(rng.standard_normal((6, 3)))
    samples = torch.tensor(rng.uniform(0.5, 2, 5), requires_grad=True)
    t_w = weight.clone().requires_grad_(True)
    g_w = from_torch(weight, requires_grad=True)
    g_s = from_torch(samples.detach(), requires_grad=True)
    idx, off = torch.tensor([1, 2, 5, 0, 2]), torch.tensor([0, 2])
    out_t = TF.embedding_bag(idx, t_w, off, mode="sum", per_sample_weights=samples)
    out_g = F.embedding_bag(from_torch(idx), g_w, from_torch(off), mode="sum",
                            per_sample_weights=g_s)
    assert_close(out_g, out_t)
    out_t.sum().backward()
    out_g.sum().backward()
    assert_close(g_w.grad, t_w.grad)
    assert_close(g_s.grad, samples.grad)
    half = weight.to(torch.bfloat16)
    for mode in ("sum", "mean", "max"):
        assert_close(F.embedding_bag(from_torch(idx), from_torch(half), from_torch(off), mode=mode),
                     TF.embedding_bag(idx, half.float(), off, mode=mode).to(torch.bfloat16))


def test_module_from_pretrained_and_gradcheck(rng):
    weight = torch.tensor(rng.standard_normal((5, 3)))
    t_bag = tnn.EmbeddingBag.from_pretrained(weight, mode="max", padding_idx=1)
    g_bag = nn.EmbeddingBag.from_pretrained(from_torch(weight), mode="max", padding_idx=1)
    assert repr(g_bag) == repr(t_bag)
    assert not g_bag.weight.requires_grad
    idx = torch.tensor([[1, 2, 0], [4, 1, 1]])
    assert_close(g_bag(from_torch(idx)), t_bag(idx))
    bag = nn.EmbeddingBag(7, 2, mode="sum", padding_idx=3)
    assert repr(bag) == repr(tnn.EmbeddingBag(7, 2, mode="sum", padding_idx=3))
    assert float(bag.weight[3].abs().sum()) == 0
    w = genesis.tensor(rng.standard_normal((5, 3)), requires_grad=True)
    for mode in ("sum", "mean", "max"):
        assert gradcheck(lambda v: F.embedding_bag(genesis.tensor([0, 2, 4, 1]), v,
                                                   genesis.tensor([0, 1]), mode=mode), (w,))


@pytest.mark.parametrize("make", [
    lambda m, idx: m.nn.EmbeddingBag(5, 3, padding_idx=idx),
    lambda m, idx: m.nn.EmbeddingBag.from_pretrained(m.ones(5, 3), padding_idx=idx),
    lambda m, idx: m.nn.Embedding(5, 3, padding_idx=idx),
    lambda m, idx: m.nn.Embedding.from_pretrained(m.ones(5, 3), padding_idx=idx),
])
@pytest.mark.parametrize("padding_idx", [7, 5, -6])
def test_module_padding_idx_out_of_range_as_torch(make, padding_idx):
    """A padding_idx no row has is torch's assertion, spelled as each module spells it
    (EmbeddingBag 'padding_idx', Embedding 'Padding_idx')."""
    assert_refuses_as_torch(lambda m: make(m, padding_idx))


def test_errors_match_torch():
    w, g_w = torch.ones(5, 3), genesis.ones(5, 3)
    for args, kwargs, error in [
        (([1, 2, 3], None), {}, ValueError),
        (([[1, 2], [3, 4]], [0, 1]), {}, ValueError),
        (([1, 2, 3], [0, 1]), {"mode": "avg"}, ValueError),
        (([1, 2, 3], [1, 1]), {}, RuntimeError),
        (([1, 2, 3], [0, 2, 5]), {}, RuntimeError),
        (([1, 2, 3], [0, 1]), {"mode": "mean", "per_sample_weights": [1.0, 1.0, 1.0]},
         NotImplementedError),
    ]:
        t_kwargs = {k: torch.tensor(v) if isinstance(v, list) else v for k, v in kwargs.items()}
        g_kwargs = {k: genesis.tensor(v) if isinstance(v, list) else v for k, v in kwargs.items()}
        inp, off = args
        with pytest.raises(error):
            TF.embedding_bag(torch.tensor(inp), w, None if off is None else torch.tensor(off),
                             **t_kwargs)
        with pytest.raises(error):
            F.embedding_bag(genesis.tensor(inp), g_w, None if off is None else
                            genesis.tensor(off), **g_kwargs)
    assert np.all(F.embedding_bag(genesis.tensor([1]), g_w, genesis.tensor([0])).numpy() == 1)


@pytest.fixture
def one_torch_thread():
    """torch on one thread: on several, its fast kernel reports a bad index in a bag that
    another thread sums as 'Expected i < index_size to be true' (it reads the thread's
    offsets as the whole input's); on one, it names the index as for the first bag."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.parametrize("call", [
    lambda m, w: m.nn.functional.embedding_bag(m.tensor([1, 7, 2]), w, m.tensor([0, 2])),
    lambda m, w: m.nn.functional.embedding_bag(m.tensor([1, 2, -1, 9]), w, m.tensor([0, 2])),
    lambda m, w: m.nn.functional.embedding_bag(m.tensor([[1, 2], [9, 0]]), w.half(),
                                               mode="sum"),
    lambda m, w: m.nn.functional.embedding_bag(m.tensor([1, 3, 9, 8]), w.double(),
                                               m.tensor([0, 2])),
    lambda m, w: m.nn.functional.embedding_bag(m.tensor([1, -3, 9]), w, m.tensor([0, 2]),
                                               mode="max"),
    lambda m, w: m.nn.functional.embedding_bag(m.tensor([1, 3, 9]), w, m.tensor([0, 2]),
                                               padding_idx=0),
    lambda m, w: m.nn.functional.embedding_bag(m.tensor([1, 3, 9]), w, m.tensor([0, 2, 3]),
                                               include_last_offset=True, padding_idx=0),
    lambda m, w: m.nn.functional.embedding_bag(m.tensor([1, 9]), w, m.tensor([1]),
                                               padding_idx=7),
    lambda m, w: m.nn.functional.embedding_bag(m.tensor([1, 9]), w, m.tensor([1])),
    lambda m, w: m.nn.functional.embedding_bag(m.tensor([1, 9], dtype=m.int32), w,
                                               m.tensor([1], dtype=m.int32)),
    lambda m, w: m.nn.functional.embedding_bag(m.tensor([1, 9, -7]), w, m.tensor([0]),
                                               max_norm=1.0),
    lambda m, w: m.nn.functional.embedding_bag(m.tensor([1, 9]), w[0], m.tensor([0])),
    lambda m, w: m.nn.functional.embedding_bag(m.tensor([1, 9]), w, m.tensor([0]),
                                               mode="sum", per_sample_weights=m.ones(3)),
])
def test_out_of_range_indices_refused_as_torch(call, one_torch_thread):
    """An index outside the weight's rows is refused in the words of torch's CPU kernel that
    runs: the fast one (sum and mean of float32 and half weights) names its position, the
    others its value; the checks torch makes first (shapes, max_norm's renorm, padding_idx,
    offsets) come first."""
    assert_refuses_as_torch(lambda m: call(m, m.ones(5, 3)))


def _bag(m, inp, weight, offsets=None, **kwargs):
    """m's embedding_bag of the index list `inp`, with offsets given as a list."""
    return m.nn.functional.embedding_bag(m.tensor(inp), weight,
                                         None if offsets is None else m.tensor(offsets), **kwargs)


@pytest.mark.parametrize("call", [
    lambda m: _bag(m, [1, 2], m.ones(5, 3, dtype=m.int64), [0]),
    lambda m: _bag(m, [[1, 2]], m.ones(5, 3, dtype=m.bool)),
    lambda m: _bag(m, [[1, 2]], m.ones(5, 3, dtype=m.uint8), mode="max"),
    lambda m: _bag(m, [1, 2], m.ones(5, 3, dtype=m.int32), [1]),
    lambda m: _bag(m, [1, 9], m.ones(5, 3, dtype=m.int16), [0]),
    lambda m: _bag(m, [1, 2], m.ones(5, 3, dtype=m.int64), [0], padding_idx=9),
    lambda m: _bag(m, [1, 2], m.ones(5, 3, dtype=m.int64), [0.0]),
    lambda m: _bag(m, [1, 2], m.ones(5, 3, dtype=m.int8), m.tensor([0], dtype=m.int32)),
    lambda m: m.nn.functional.embedding_bag(m.zeros(0, dtype=m.int64),
                                            m.ones(5, 3, dtype=m.int64), m.tensor([0])),
    lambda m: _bag(m, [1, 2], m.ones(5, 3).half(), [0], mode="sum",
                   per_sample_weights=m.ones(2)),
    lambda m: _bag(m, [1, 2], m.ones(5, 3).bfloat16(), [0], mode="sum",
                   per_sample_weights=m.ones(2).half()),
    lambda m: _bag(m, [1, 2], m.ones(5, 3), [0], mode="sum",
                   per_sample_weights=m.ones(2, dtype=m.int32)),
    lambda m: _bag(m, [1, 2], m.ones(5, 3, dtype=m.int64), [0], mode="sum",
                   per_sample_weights=m.ones(2, dtype=m.int64)),
    lambda m: _bag(m, [1, 9], m.ones(5, 3), [0], mode="sum",
                   per_sample_weights=m.ones(2, dtype=m.float64)),
    lambda m: _bag(m, [1, 2], m.ones(5, 3), [1], mode="sum",
                   per_sample_weights=m.ones(2, dtype=m.float64)),
    lambda m: _bag(m, [1, 2], m.ones(5, 3), [0], mode="sum",
                   per_sample_weights=m.ones(2, dtype=m.float64), padding_idx=9),
    lambda m: _bag(m, [1.0, 2.0], m.ones(5, 3), [0], mode="sum",
                   per_sample_weights=m.ones(2, dtype=m.float64)),
])
def test_weight_and_sample_weight_dtypes_refused_as_torch(call):
    """A weight of a type torch's kernel does not take (not floating) and per_sample_weights of
    another type than the weight's are refused in its words, in its order: after padding_idx
    and the indices' type (promoted with the offsets'), the weight's type, then the offsets,
    then per_sample_weights' type, before the indices' range."""
    assert_refuses_as_torch(call)


@pytest.mark.parametrize("call", [
    lambda m: _bag(m, [1.0, 2.0], m.ones(5, 3, dtype=m.int32), [0], max_norm=1.0),
    lambda m: _bag(m, [1, 2], m.ones(5, 3, dtype=m.int32), [0], max_norm=1.0),
    lambda m: _bag(m, [9, 2], m.ones(5, 3, dtype=m.int32), [0], max_norm=1.0),
    lambda m: _bag(m, [9], m.ones(5, 3, dtype=m.int32), [0], max_norm=1.0),
    lambda m: m.nn.functional.embedding_bag(m.zeros(0, dtype=m.int64),
                                            m.ones(5, 3, dtype=m.int32), m.tensor([0]),
                                            max_norm=1.0),
])
def test_max_norm_refusals_as_torch(call):
    """max_norm's renorm checks first as torch's embedding_renorm_: the indices' type (its
    argument #2), a row it cannot select, a weight of no floating type in norm()'s words; with
    no rows to renorm, the kernel refuses the weight's type."""
    assert_refuses_as_torch(call)


def test_weight_and_input_in_the_old_order_are_swapped_as_torch(rng):
    """embedding_bag(weight, input) with an int64 input and a floating weight still runs,
    with torch's deprecation warning."""
    base = rng.standard_normal((5, 3))
    outs = []
    for lib in (torch, genesis):
        with pytest.warns(UserWarning, match="Argument order of nn.functional.embedding_bag"):
            outs.append(lib.nn.functional.embedding_bag(lib.tensor(base),
                                                        lib.tensor([[1, 2], [4, 0]])))
    assert_close(outs[1], outs[0])


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("offsets", [[0], [0, 0]])
def test_bags_all_empty_as_torch(mode, offsets, rng, device):
    """An empty input makes empty bags: zeros, a node, and a zero gradient, as torch's."""
    base = rng.standard_normal((5, 3))
    seen = []
    for lib in (torch, genesis):
        w = lib.tensor(base, device="cpu" if lib is torch else device, requires_grad=True)
        out = lib.nn.functional.embedding_bag(lib.zeros(0, dtype=lib.int64, device=w.device), w,
                                              lib.tensor(offsets, device=w.device), mode=mode)
        out.sum().backward()
        seen.append((out, out.grad_fn.name(), w.grad))
    assert seen[1][1] == seen[0][1]
    assert_close(seen[1][0], seen[0][0])
    assert_close(seen[1][2], seen[0][2])


def test_two_dim_input_of_empty_bags_refused_as_torch():
    """A 2-D input of no columns is refused by torch's arange of its offsets."""
    assert_refuses_as_torch(lambda m: m.nn.functional.embedding_bag(
        m.zeros(2, 0, dtype=m.int64), m.ones(5, 3)))


def test_indices_outside_every_bag_are_not_read_as_torch():
    """With include_last_offset, indices after the last offset are in no bag: torch's fast
    kernel never reads them, so a bad one there is no error."""
    outs = [lib.nn.functional.embedding_bag(lib.tensor([1, 2, 3, 9]), lib.ones(5, 3),
                                            lib.tensor([0, 2, 3]), mode="sum",
                                            include_last_offset=True)
            for lib in (torch, genesis)]
    assert_close(outs[1], outs[0])


def test_max_norm_renorms_rows_before_a_bad_index_as_torch(rng):
    """max_norm rescales the rows in ascending index order and refuses the first index it
    cannot select, so rows below it are already rescaled, as torch's."""
    base = rng.standard_normal((5, 3)) * 3
    weights = []
    for lib in (torch, genesis):
        w = lib.tensor(base)
        with pytest.raises(IndexError, match=r"select\(\): index 9 out of range"):
            lib.nn.functional.embedding_bag(lib.tensor([1, 9, -2]), w, lib.tensor([0]),
                                            max_norm=1.0)
        weights.append(w)
    assert_close(weights[1], weights[0])
