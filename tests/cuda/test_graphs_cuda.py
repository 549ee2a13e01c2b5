"""CUDA graphs on the GPU: capture and replay give what eager execution gives, bit for bit;
replays see inputs changed in place; random draws differ per replay and match eager draws; a
failed capture leaves the process working; private pools return their memory."""

import gc
import os
import sys

import numpy as np
import pytest
from helpers import assert_replays_as_eager, skip_no_cuda, warm_up_on_side_stream

import genesis
import genesis.nn.functional as F
from genesis.backends.cuda.runtime.graphs import CaptureError

pytestmark = skip_no_cuda
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))


def test_replay_equals_eager_and_sees_new_inputs(rng):
    x = genesis.tensor(rng.standard_normal((64, 256)).astype(np.float32), device="cuda")
    w = genesis.tensor(rng.standard_normal((256, 128)).astype(np.float32), device="cuda")

    def fn():
        return F.gelu(x @ w).softmax(-1).sum(0)

    assert_replays_as_eager(fn, lambda: x.copy_(genesis.tensor(
        rng.standard_normal((64, 256)).astype(np.float32), device="cuda")))


def test_dropout_differs_per_replay_and_matches_eager(rng):
    x = genesis.ones(4096, device="cuda")

    def fn():
        return F.dropout(x, 0.5, training=True)

    warm_up_on_side_stream(fn)
    g = genesis.cuda.CUDAGraph()
    with genesis.cuda.graph(g):
        out = fn()
    state = genesis.cuda.get_rng_state()
    g.replay()
    first = out.cpu().numpy().copy()
    g.replay()
    second = out.cpu().numpy().copy()
    assert not np.array_equal(first, second)
    genesis.cuda.set_rng_state(state)
    assert np.array_equal(fn().cpu().numpy(), first)
    assert np.array_equal(fn().cpu().numpy(), second)


def test_failed_capture_leaves_the_stream_usable():
    x = genesis.ones(1000, device="cuda")
    (x * 2).sum()
    for bad in (lambda y: y.sum().item(), lambda y: genesis.cuda.synchronize(),
                lambda y: y.cpu(), lambda y: genesis.tensor([1.0], device="cuda")):
        g = genesis.cuda.CUDAGraph()
        with pytest.raises(CaptureError, match="captured"):
            with genesis.cuda.graph(g):
                y = x * 2
                bad(y)
        assert not genesis.cuda.is_current_stream_capturing()
        assert float((x * 3).sum().item()) == 3000.0


def test_compiling_during_capture_is_an_error():
    g = genesis.cuda.CUDAGraph()
    with pytest.raises(CaptureError, match="compiling the Triton kernel"):
        with genesis.cuda.graph(g):
            genesis.arange(5, dtype=genesis.int8, device="cuda")
    assert genesis.arange(5, dtype=genesis.int8, device="cuda").tolist() == [0, 1, 2, 3, 4]


def test_side_stream_joins_the_capture(rng):
    """A captured region forks onto a side stream and joins back through events, PyTorch's
    recipe for concurrent branches: the side stream's kernels and allocations belong to the
    graph, and replays give the eager values."""
    x = genesis.tensor(rng.standard_normal((256, 256)).astype(np.float32), device="cuda")
    side = genesis.cuda.Stream()

    def fn():
        main = genesis.cuda.current_stream()
        side.wait_stream(main)
        with genesis.cuda.stream(side):
            branch = (x @ x).relu()
        trunk = x.exp().sum(0)
        main.wait_stream(side)
        return branch.sum(0) + trunk

    assert_replays_as_eager(fn, lambda: x.copy_(genesis.tensor(
        rng.standard_normal((256, 256)).astype(np.float32), device="cuda")), replays=2)
    assert not genesis.cuda.is_current_stream_capturing()

def test_pool_memory_is_released_with_the_graph():
    """The pool's blocks go back with the graph. Garbage from earlier tests is collected first:
    a collection during the test would free their blocks and lower the reserve below the
    figure taken before."""
    gc.collect()
    genesis.cuda.empty_cache()
    before = genesis.cuda.memory_reserved()
    x = genesis.ones(1 << 20, device="cuda")
    warm_up_on_side_stream(lambda: (x * 2 + 1).exp())
    g = genesis.cuda.CUDAGraph()
    with genesis.cuda.graph(g):
        out = (x * 2 + 1).exp()
    assert genesis.cuda.memory_stats()["graph_pool_reserved"] > 0
    g.replay()
    del out
    g.reset()
    del x
    genesis.cuda.empty_cache()
    assert genesis.cuda.memory_reserved() == before


def test_shared_pool_and_make_graphed_callables(rng):
    model = genesis.nn.Sequential(genesis.nn.Linear(32, 64), genesis.nn.GELU(),
                                  genesis.nn.Linear(64, 8)).cuda()
    reference = genesis.nn.Sequential(genesis.nn.Linear(32, 64), genesis.nn.GELU(),
                                      genesis.nn.Linear(64, 8)).cuda()
    reference.load_state_dict(model.state_dict())
    sample = genesis.randn(16, 32, device="cuda", requires_grad=True)
    graphed = genesis.cuda.make_graphed_callables(model, (sample,))
    for _ in range(3):
        x = genesis.tensor(rng.standard_normal((16, 32)).astype(np.float32), device="cuda",
                           requires_grad=True)
        x_ref = x.detach().requires_grad_(True)
        graphed(x).square().sum().backward()
        reference(x_ref).square().sum().backward()
        np.testing.assert_allclose(x.grad.cpu().numpy(), x_ref.grad.cpu().numpy(), rtol=1e-5,
                                   atol=1e-6)
        for p, q in zip(model.parameters(), reference.parameters()):
            np.testing.assert_allclose(p.grad.cpu().numpy(), q.grad.cpu().numpy(), rtol=1e-5,
                                       atol=1e-6)


def _gpt_step(capturable, dropout):
    """A fresh model and the main job's step on a fixed batch, under bfloat16 autocast."""
    from gpt import GPTConfig, build_gpt
    from train_gpt import make_step
    genesis.manual_seed(0)
    model = build_gpt(GPTConfig(vocab_size=64, block_size=32, n_layer=2, n_head=4, n_embd=64,
                                dropout=dropout), genesis).cuda()
    opt = genesis.optim.AdamW(model.parameters(), lr=1e-3, capturable=capturable)
    x = genesis.randint(0, 64, (4, 32), device="cuda")
    y = genesis.randint(0, 64, (4, 32), device="cuda")
    train_step = make_step(model, opt, genesis.amp.GradScaler("cuda", enabled=False),
                           genesis.autocast("cuda", dtype=genesis.bfloat16))
    return model, lambda: train_step(x, y)


def test_graphed_training_step_equals_eager():
    eager_model, eager_step = _gpt_step(capturable=True, dropout=0.1)
    graph_model, graph_step = _gpt_step(capturable=True, dropout=0.1)
    genesis.manual_seed(1)
    warm_up_on_side_stream(graph_step, 3)
    g = genesis.cuda.CUDAGraph()
    with genesis.cuda.graph(g):
        loss = graph_step()
    genesis.manual_seed(1)
    for _ in range(3):
        eager_step()
    for _ in range(4):
        state = genesis.cuda.get_rng_state()
        g.replay()
        genesis.cuda.set_rng_state(state)
        expected = eager_step()
        assert loss.item() == expected.item()
    for p, q in zip(graph_model.parameters(), eager_model.parameters()):
        assert np.array_equal(p.detach().float().cpu().numpy(), q.detach().float().cpu().numpy())
