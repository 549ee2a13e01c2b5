"""Captures on the simulated CUDA device (benchmarks/simulated_cuda.py), run by
test_cuda_graphs_sim.py in a process of its own (the simulation replaces the driver layer).

Nothing is computed there; what runs is everything Genesis does on the host, so a capture
fails exactly where a real one would: a host copy, a synchronization, a compilation, an
allocation outside the pool, an event query. Prints one line per check, then "all checks passed".
"""

import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks"), str(ROOT / "examples"), str(ROOT / "tests")]

import simulated_cuda  # noqa: E402

simulated_cuda.install()

import genesis  # noqa: E402
from genesis.backends.cuda.runtime.graphs import CaptureError  # noqa: E402
from gpt import GPTConfig, build_gpt  # noqa: E402
from helpers import warm_up_on_side_stream  # noqa: E402
from train_gpt import make_step  # noqa: E402


def check_training_step_captures():
    """The main job's step (train_gpt.make_step) under float16 autocast and GradScaler, with
    dropout, clipping and a capturable AdamW."""
    config = GPTConfig(vocab_size=65, block_size=32, n_layer=2, n_head=4, n_embd=64, dropout=0.1)
    model = build_gpt(config, genesis).cuda()
    opt = genesis.optim.AdamW(model.parameters(), lr=genesis.tensor(1e-3, device="cuda"),
                              capturable=True)
    x = genesis.randint(0, 65, (4, 32), device="cuda")
    y = genesis.randint(0, 65, (4, 32), device="cuda")
    train_step = make_step(model, opt, genesis.amp.GradScaler("cuda"),
                           genesis.autocast("cuda", dtype=genesis.float16))
    step = lambda: train_step(x, y)  # noqa: E731

    warm_up_on_side_stream(step)
    graph = genesis.cuda.CUDAGraph()
    with genesis.cuda.graph(graph):
        step()
    graph.replay()
    stats = genesis.cuda.memory_stats()
    assert stats["graph_pools"] == 1 and stats["graph_pool_reserved"] > 0, stats
    print("training step captured")


def check_cnn_step_captures():
    """A channels-last CNN's autocast step with batch norm, max pooling, global average and
    max pooling (adaptive, to windows that tile the input) and SGD with momentum."""
    nn = genesis.nn
    model = nn.Sequential(
        nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU(inplace=True),
        nn.MaxPool2d(3, 2, 1), nn.Conv2d(16, 32, 3, 1, 1), nn.BatchNorm2d(32), nn.ReLU(),
        nn.AdaptiveMaxPool2d(2), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))
    model = model.cuda().to(memory_format=genesis.channels_last)
    opt = genesis.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    x = genesis.randn(4, 3, 32, 32, device="cuda").contiguous(memory_format=genesis.channels_last)
    y = genesis.randint(0, 10, (4,), device="cuda")

    def step():
        with genesis.autocast("cuda", dtype=genesis.bfloat16):
            loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    warm_up_on_side_stream(step)
    with genesis.cuda.graph(genesis.cuda.CUDAGraph()):
        step()
    print("CNN training step captured")


def check_attention_backward_captures():
    """Fused attention's forward and each backward: the one-pass one (its float32 dQ
    accumulator from the pool, zeroed on the device) and the deterministic one."""
    q = genesis.randn(2, 4, 100, 64, device="cuda", requires_grad=True)  # float32: one-pass
    grad = genesis.randn(2, 4, 100, 64, device="cuda")
    step = lambda: genesis.autograd.grad(  # noqa: E731
        genesis.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True), q, grad)
    from genesis.backends.cuda.kernels import attention_launch
    attention_launch._plans.clear()  # the training steps' attention before (dropout) has plans too
    for deterministic in (False, True):
        genesis.use_deterministic_algorithms(deterministic)
        warm_up_on_side_stream(step)
        with genesis.cuda.graph(genesis.cuda.CUDAGraph()):
            step()
    genesis.use_deterministic_algorithms(False)
    forms = sorted(key[4] for key in attention_launch._plans if key[0] == "bwd")
    assert forms == [False, True], forms
    print("attention forward and both backwards captured")


def check_dropout_counters():
    """Each replay moves the generator past the counters the graph draws, as eager would."""
    x = genesis.ones(1000, device="cuda")
    fn = lambda: genesis.nn.functional.dropout(x, 0.5)  # noqa: E731
    warm_up_on_side_stream(fn)
    generator = genesis.random.cuda_generator(0)
    graph = genesis.cuda.CUDAGraph()
    with genesis.cuda.graph(graph):
        fn()
    before = generator.get_offset()
    graph.replay()
    graph.replay()
    assert generator.get_offset() - before == 2 * 1000, generator.get_offset() - before
    print("dropout counters advance per replay")


def check_capture_scratch_is_shared():
    """The launches of a capture share one scratch buffer, as eager launches share their
    stream's workspace; one that needs more gets a larger one, and the graph keeps both."""
    from genesis.backends.cuda.launch import stream_workspace
    MiB = 1 << 20
    before = genesis.cuda.memory_allocated()
    graph = genesis.cuda.CUDAGraph()
    with genesis.cuda.graph(graph):
        stream = genesis.cuda.current_stream().cuda_stream
        buffers = [stream_workspace(0, stream, n) for n in (MiB, MiB // 2, MiB, 2 * MiB, MiB)]
    assert [len({id(b) for b in buffers[:i]}) for i in range(1, 6)] == [1, 1, 1, 2, 2]
    del buffers
    held = genesis.cuda.memory_allocated() - before
    assert 3 * MiB <= held < 3 * MiB + 64 * 1024, held
    graph.reset()
    assert genesis.cuda.memory_allocated() - before < 64 * 1024
    print("capture scratch shared")


def check_workspace_views_follow_the_workspace():
    """Views kept by workspace_views live as long as the stream's workspace: one that grows
    drops the views of the old, which goes back to the allocator; a capture's views are made
    on its scratch, not kept."""
    from genesis.backends.cuda.launch import workspace_views
    MiB = 1 << 20
    stream = genesis.cuda.current_stream().cuda_stream
    made = []

    def make(workspace):
        made.append(workspace)
        return workspace.ptr

    first = workspace_views(0, stream, MiB, "a", make)
    assert workspace_views(0, stream, MiB, "a", make) == first and len(made) == 1
    held = genesis.cuda.memory_allocated()
    workspace_views(0, stream, 64 * MiB, "b", make)
    del made[:]
    grown = genesis.cuda.memory_allocated() - held
    assert 63 * MiB <= grown <= 64 * MiB, grown  # the 1 MiB workspace went back
    graph = genesis.cuda.CUDAGraph()
    with genesis.cuda.graph(graph):
        capturing = genesis.cuda.current_stream().cuda_stream
        workspace_views(0, capturing, MiB, "b", make)
        workspace_views(0, capturing, MiB, "b", make)
    assert len(made) == 2
    print("workspace views follow the workspace")


def check_refused(name, fn):
    x = genesis.ones(100, device="cuda")
    (x * 2).sum()
    graph = genesis.cuda.CUDAGraph()
    try:
        with genesis.cuda.graph(graph):
            fn(x * 2)
    except CaptureError as e:
        assert "captured" in str(e), e
    else:
        raise AssertionError(f"{name} was captured")
    assert not genesis.cuda.is_current_stream_capturing()
    allocator = genesis.backends.cuda.runtime.device.get_context(0).allocator
    assert not allocator._capture_pools
    (x * 3).sum()
    print(f"{name} refused, stream usable")


def check_relaxed_capture_allows_other_streams():
    """In "relaxed" mode an allocation on a stream outside the capture comes from the device's
    own memory instead of raising."""
    graph = genesis.cuda.CUDAGraph()
    with genesis.cuda.graph(graph, capture_error_mode="relaxed"):
        _other_stream()
    print("relaxed capture allows other streams")


def main():
    check_training_step_captures()
    check_cnn_step_captures()
    check_attention_backward_captures()
    check_dropout_counters()
    check_capture_scratch_is_shared()
    check_workspace_views_follow_the_workspace()
    check_refused("item", lambda y: y.sum().item())
    check_refused("synchronize", lambda y: genesis.cuda.synchronize())
    check_refused("host copy", lambda y: y.cpu())
    check_refused("copy from host", lambda y: y + genesis.tensor([1.0], device="cuda"))
    check_refused("compilation", lambda y: genesis.arange(3, dtype=genesis.int16, device="cuda"))
    check_refused("allocation on another stream", lambda y: _other_stream())
    check_relaxed_capture_allows_other_streams()
    print("all checks passed")


def _other_stream():
    with genesis.cuda.stream(genesis.cuda.Stream()):
        genesis.empty(16, device="cuda")


if __name__ == "__main__":
    main()
