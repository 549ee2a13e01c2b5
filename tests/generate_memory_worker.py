"""generate's device memory on the simulated CUDA device (benchmarks/simulated_cuda.py), run by
test_generate_memory_sim.py in a process of its own (the simulation replaces the driver layer).

The caching allocator there is the real one, so memory_allocated and its peak are what a GPU
would show. A Llama generating at batch 8 must hold, at its peak, its weights, its key/value
cache and the prefill's MLP intermediates of one layer, and little else; and timing kernels
(the autotuner's first calls of each shape) must leave nothing allocated. Prints the figures,
then "all checks passed".
"""

import os
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

import simulated_cuda  # noqa: E402

os.environ["GENESIS_MATMUL_AUTOTUNE"] = "0"  # the tuner's timing buffers are not generate's

simulated_cuda.install()

import genesis  # noqa: E402
from genesis.models import LlamaConfig, LlamaForCausalLM  # noqa: E402

SHAPE = dict(vocab_size=512, hidden_size=256, intermediate_size=1024, num_hidden_layers=4,
             num_attention_heads=8, num_key_value_heads=2, model_type="llama")
BATCH, PROMPT, NEW = 8, 64, 16


def nbytes(tensors):
    return sum(t.numel() * t.element_size() for t in tensors)


def check_timing_leaves_nothing_allocated():
    from genesis.backends.cuda.timing import time_calls
    before = genesis.cuda.memory_allocated()
    time_calls(lambda: None, 3)
    assert genesis.cuda.memory_allocated() == before, genesis.cuda.memory_allocated() - before
    print("timing leaves nothing allocated")


def check_generate_peak():
    genesis.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(SHAPE), device="cuda", dtype=genesis.bfloat16).eval()
    ids = genesis.randint(0, SHAPE["vocab_size"], (BATCH, PROMPT), device="cuda")
    weights = nbytes(model.parameters())
    rows, width, inner = BATCH * PROMPT, SHAPE["hidden_size"], SHAPE["intermediate_size"]
    # the residual stream, its norm, the fused gate/up output and silu(gate) * up
    prefill_mlp = rows * (2 * width + 3 * inner) * 2
    peaks = []
    for _ in range(2):
        genesis.cuda.reset_peak_memory_stats()
        model.generate(ids, max_new_tokens=NEW, eos_token_id=[])
        peaks.append(genesis.cuda.max_memory_allocated())
    cache = model._last_decode.cache
    kv = nbytes(cache.keys + cache.values)
    excess = [peak - weights - kv for peak in peaks]
    print(f"weights {weights}, cache {kv}, prefill MLP {prefill_mlp}, peaks {peaks}, "
          f"beyond weights and cache {excess}")
    for extra in excess:  # the first call, and a repeated one replaying the decode graph
        assert extra <= prefill_mlp * 1.1, (extra, prefill_mlp)


def main():
    check_timing_leaves_nothing_allocated()
    check_generate_peak()
    print("all checks passed")


if __name__ == "__main__":
    main()
