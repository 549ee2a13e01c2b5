"""EmbeddingBag and F.embedding_bag against torch: modes, offsets, per-sample weights,
padding_idx, empty bags, gradients and errors."""

import numpy as np
import pytest
import torch
import torch.nn as tnn
import torch.nn.functional as TF
from helpers import TORCH_DTYPES, assert_close, from_torch

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
    with pytest.raises(IndexError, match="index out of range"):
        F.embedding_bag(genesis.tensor([1, 7]), g_w, genesis.tensor([0]))
    assert np.all(F.embedding_bag(genesis.tensor([1]), g_w, genesis.tensor([0])).numpy() == 1)
