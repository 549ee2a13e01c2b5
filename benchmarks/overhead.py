"""Host time per small op, Genesis beside PyTorch CPU in one run.

Each case times many calls by the CPU time of the calling thread (time.thread_time, which other
processes on a busy machine disturb little) and reports the best of several repeats, in
microseconds per call, with the Genesis/PyTorch ratio. The tensors are tiny (1K elements) so
the figure is the framework's host overhead, not arithmetic.

With --simulated-cuda the Genesis cases run on "cuda" over a simulated device
(benchmarks/simulated_cuda.py: no GPU, kernel launches are no-ops), so the figures are the host
time of the CUDA path alone: benchmarks/ops.py's small ops (add 1M, softmax 10K, sum 1M), an
autograd step, and allocate+free pairs at the tensor level. There is no PyTorch column (its CUDA
host path needs a GPU); compare with the GPU runs of ops.py and allocator.py.

With --prefill the cases are a 2048-token prefill of a 1.1B-shaped Llama (bfloat16, no
gradients) on "cuda": the whole forward, then the parts of one of its layers. Add
--simulated-cuda to run them without a GPU; on a GPU they give the host time beside
benchmarks/generate.py's prefill figures (kernels run asynchronously, so the thread's CPU time is
the host's share). With --gpt2-step the case is benchmarks/gpt2.py's eager training step of
GPT-2 small (batch 8, 1024 tokens, AdamW, clipping) under autocast bf16 and in bf16, the host's
share of the eager rows there.

    python benchmarks/overhead.py [--json PATH] [--iters N] [--repeats R] [--profile CASE]
                                  [--simulated-cuda] [--prefill | --gpt2-step]
"""

import argparse
import contextlib
import cProfile
import gc
import json
import pstats
import sys
import time

import numpy as np
import torch

import genesis
import simulated_cuda

SIZE = 1024


def _inputs(lib, requires_grad):
    rng = np.random.default_rng()
    arrays = [rng.standard_normal(SIZE).astype(np.float32) for _ in range(2)]
    return [lib.tensor(a, requires_grad=requires_grad) for a in arrays]


def _add(lib, requires_grad):
    a, b = _inputs(lib, requires_grad)
    return lambda: a + b


def _mul_sum_backward(lib):
    a, b = _inputs(lib, True)

    def step():
        (a * b).sum().backward()
    return step


def _empty(lib):
    return lambda: lib.empty(SIZE)


CASES = {
    "add 1K": lambda lib: _add(lib, False),
    "add 1K, requires_grad": lambda lib: _add(lib, True),
    "mul+sum+backward 1K": _mul_sum_backward,
    "empty(1024)": _empty,
}


def _cuda_cases():
    """The --simulated-cuda cases: ops.py's small ops on its own inputs, plus the rest."""
    import ops
    lib = ops.Lib(genesis)
    cases = {name: (lambda make=make: make(lib, np.random.default_rng()))
             for name, (make, _) in ops.LATENCY.items()}
    cases.update({
        "add 1M, requires_grad": lambda: _cuda_add_grad(1 << 20),
        "mul+sum+backward 1K": lambda: _mul_sum_backward(_CudaLib),
        "empty 4 KB pair": lambda: _cuda_empty(4096),
        "empty 4 MB pair": lambda: _cuda_empty(4 << 20),
    })
    return cases


class _CudaLib:
    """`genesis` with tensors made on "cuda" (for the CPU cases' makers)."""

    @staticmethod
    def tensor(array, requires_grad=False):
        return genesis.tensor(array, device="cuda", requires_grad=requires_grad)


def _cuda_add_grad(n):
    rng = np.random.default_rng()
    a, b = (genesis.tensor(rng.standard_normal(n, dtype=np.float32), device="cuda",
                           requires_grad=True) for _ in range(2))
    return lambda: a + b


def _cuda_empty(nbytes):
    return lambda: genesis.empty(nbytes, dtype=genesis.uint8, device="cuda")


PREFILL_CONFIG = dict(vocab_size=512, hidden_size=2048, intermediate_size=512,
                      num_hidden_layers=16, num_attention_heads=32, num_key_value_heads=8,
                      max_position_embeddings=4096, rms_norm_eps=1e-5, rope_theta=500000.0,
                      tie_word_embeddings=False, model_type="llama")
"""A 1.1B Llama's shape (16 layers, 2048 wide, 32 query and 8 key/value heads of 64) with the
vocabulary and the MLP width shrunk: they change the kernels' time, not the host's."""
PREFILL_TOKENS = 2048


def _prefill_cases():
    """{name: (fn, calls a timing)}: the prefill forward and the parts of its first layer, on
    inputs of its shapes (to be run under no_grad)."""
    from genesis.models import LlamaConfig, LlamaForCausalLM
    from genesis.models.attention_mask import attend
    from genesis.models.fused import add_norm
    from genesis.models.rotary import apply_rotary
    config = LlamaConfig(PREFILL_CONFIG)
    model = LlamaForCausalLM(config, device="cuda", dtype=genesis.bfloat16).eval()
    tokens, width, head = PREFILL_TOKENS, config.hidden_size, config.head_size
    heads = [config.num_attention_heads, config.kv_heads, config.kv_heads]
    ids = genesis.tensor(np.random.default_rng(0).integers(0, config.vocab_size, (1, tokens)),
                         device="cuda")
    layer = model.model.layers[0]
    att = layer.self_attn
    mask = (None, True, None)
    with genesis.no_grad():
        x = genesis.randn(1, tokens, width, device="cuda", dtype=genesis.bfloat16)
        cos, sin = model.model.rotary(genesis.arange(tokens, device="cuda")[None], x.dtype)
        qkv = att.qkv_proj.fused(x)
        q, k, v = qkv.view(1, tokens, -1, head).transpose(1, 2).split(heads, dim=1)
        q, k = apply_rotary(q, k, cos, sin)
        y = attend(q, k, v, mask)
    return {
        "prefill forward": (lambda: model(ids), 20),
        "layer": (lambda: (layer.attention_block(x, x, cos, sin, mask, None),
                           layer.mlp_block(x, x, layer.input_layernorm, None)), 100),
        "attention module": (lambda: att(x, cos, sin, mask, None), 300),
        "qkv projection": (lambda: att.qkv_proj.fused(x), 300),
        "view+transpose+split": (lambda: qkv.view(1, tokens, -1, head).transpose(1, 2)
                                 .split(heads, dim=1), 300),
        "rotary": (lambda: apply_rotary(q, k, cos, sin), 300),
        "attend (flash, causal GQA)": (lambda: attend(q, k, v, mask), 300),
        "transpose+reshape": (lambda: y.transpose(1, 2).reshape(1, tokens, width), 300),
        "o_proj module": (lambda: att.o_proj(x), 300),
        "add_norm": (lambda: add_norm(x, x, layer.post_attention_layernorm), 300),
        "mlp": (lambda: layer.mlp(x), 300),
    }


def _gpt2_step_cases():
    """{name: (fn, calls a timing)}: one eager GPT-2 small training step per call, as
    benchmarks/gpt2.py times it, in its autocast bf16 and bf16 modes."""
    import gpt2
    tokens = np.random.default_rng(0).integers(0, gpt2.GPT2_SMALL.vocab_size,
                                               (gpt2.BATCH, gpt2.GPT2_SMALL.block_size + 1))
    x, y = gpt2._batch(genesis, tokens)
    cases = {}
    for mode in ("autocast bf16", "bf16"):
        step = gpt2.trainer(genesis, gpt2._model(genesis, mode), mode)
        cases[f"GPT-2 small step, {mode}"] = (lambda step=step: step(x, y), 5)
    return cases


MODEL_CASES = {"prefill": _prefill_cases, "gpt2_step": _gpt2_step_cases}


def run_model_cases(kind, repeats):
    """One row per case of MODEL_CASES[kind]: genesis microseconds per call; the prefill's
    under no_grad. The models' objects are frozen out of the garbage collector's way first, as
    gpt2.py times its steps: a full collection over them would land in some repeats only."""
    cases = MODEL_CASES[kind]()
    gc.collect()
    gc.freeze()
    try:
        with genesis.no_grad() if kind == "prefill" else contextlib.nullcontext():
            return [{"case": name, "genesis_us": round(_time_per_call(fn, iters, repeats), 2)}
                    for name, (fn, iters) in cases.items()]
    finally:
        gc.unfreeze()


def _time_per_call(fn, iters, repeats):
    """Best over `repeats` of the mean CPU time of one call, in microseconds."""
    for _ in range(max(iters // 10, 1)):
        fn()
    samples = []
    for _ in range(repeats):
        start = time.thread_time()
        for _ in range(iters):
            fn()
        samples.append((time.thread_time() - start) / iters * 1e6)
    return min(samples)


def run_simulated_cuda(iters, repeats):
    """One row per case: genesis microseconds per call on the simulated device."""
    return [{"case": name, "genesis_us": round(_time_per_call(make(), iters, repeats), 2)}
            for name, make in _cuda_cases().items()]


def run(iters, repeats):
    """One row per case: genesis and torch microseconds per call and their ratio."""
    torch.set_num_threads(1)
    rows = []
    for name, make in CASES.items():
        g = _time_per_call(make(genesis), iters, repeats)
        t = _time_per_call(make(torch), iters, repeats)
        rows.append({"case": name, "genesis_us": round(g, 2), "torch_us": round(t, 2),
                     "ratio": round(g / t, 2)})
    return rows


def print_table(rows, title="case (simulated cuda, host only)"):
    if "torch_us" not in rows[0]:
        print(f"{title:<34}{'genesis us':>12}")
        for r in rows:
            print(f"{r['case']:<34}{r['genesis_us']:>12.2f}")
        return
    print(f"{'case':<24}{'genesis us':>12}{'torch us':>10}{'ratio':>8}")
    for r in rows:
        print(f"{r['case']:<24}{r['genesis_us']:>12.2f}{r['torch_us']:>10.2f}{r['ratio']:>8.2f}")


def profile(case, iters, cuda, kind=None):
    """cProfile the Genesis side of one case (of MODEL_CASES[kind] when `kind` is given, each
    run its own number of calls); prints the 25 most expensive functions."""
    if kind:
        fn, iters = MODEL_CASES[kind]()[case]
    else:
        fn = _cuda_cases()[case]() if cuda else CASES[case](genesis)
    fn()
    profiler = cProfile.Profile()
    with genesis.no_grad() if kind == "prefill" else contextlib.nullcontext():
        profiler.enable()
        for _ in range(iters):
            fn()
        profiler.disable()
    pstats.Stats(profiler, stream=sys.stdout).sort_stats("tottime").print_stats(25)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="also write the results as JSON to this path")
    parser.add_argument("--iters", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--profile", metavar="CASE", help="cProfile this Genesis case")
    parser.add_argument("--simulated-cuda", action="store_true",
                        help="run the CUDA cases on a simulated device (host time only)")
    models = parser.add_mutually_exclusive_group()
    models.add_argument("--prefill", action="store_true",
                        help="time a 1.1B-shaped Llama's prefill and its parts on cuda instead")
    models.add_argument("--gpt2-step", action="store_true",
                        help="time GPT-2 small's eager training step on cuda instead")
    args = parser.parse_args(argv)
    kind = "prefill" if args.prefill else "gpt2_step" if args.gpt2_step else None
    if args.simulated_cuda:
        simulated_cuda.install()
    if args.profile:
        profile(args.profile, args.iters, args.simulated_cuda, kind)
        return
    if kind:
        rows = run_model_cases(kind, args.repeats)
        print_table(rows, "case (simulated cuda)" if args.simulated_cuda
                    else f"case ({genesis.cuda.get_device_name()})")
    else:
        rows = (run_simulated_cuda if args.simulated_cuda else run)(args.iters, args.repeats)
        print_table(rows)
    if args.json:
        meta = {"numpy": np.__version__, "torch": torch.__version__,
                "python": sys.version.split()[0], "size": SIZE, "iters": args.iters,
                "repeats": args.repeats, "simulated_cuda": args.simulated_cuda,
                "model_cases": kind}
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "results": rows}, f, indent=2)


if __name__ == "__main__":
    main()
