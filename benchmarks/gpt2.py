"""GPT-2 small training steps on the GPU: Genesis beside PyTorch eager and torch.compile.

The model is examples/gpt.py's at GPT-2 small's size (12 layers, 12 heads, 768 wide, vocabulary
50304, 1024 tokens), batch 8, AdamW and gradient clipping, in three modes:
- "float32/tf32": float32 weights and activations, TF32 matmuls;
- "bf16": bfloat16 weights and activations;
- "autocast bf16": float32 weights, forward under autocast to bfloat16.
Each row gives ms per step, tokens/s and peak memory, with the Genesis/PyTorch eager ratio;
the autocast row also times PyTorch under torch.compile. The "graphed" column is Genesis with
the whole step captured in one CUDA graph (capturable AdamW) and replayed; its ratio to PyTorch
eager is the last column.

A fidelity run copies PyTorch's initial weights into Genesis and trains both 20 steps on the same
batches: float32 without TF32 must give losses equal within 1e-5 relative, autocast bf16 within
2e-2. With --profile, each side's 15 kernels that take the most device time over three steps of
the autocast mode are listed, both from torch.profiler's CUPTI trace (it sees Genesis's kernels
too).

    python benchmarks/gpt2.py [--json PATH] [--steps N] [--warmup N] [--profile] [--no-compile]
                               [--no-fidelity] [--no-graphs]
"""

import argparse
import gc
import json
import pathlib
import sys
import time

import numpy as np
import torch

import genesis

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "examples"))
from gpt import GPTConfig, build_gpt  # noqa: E402
from train_step import captured_step  # noqa: E402

GPT2_SMALL = GPTConfig(vocab_size=50304, block_size=1024, n_layer=12, n_head=12, n_embd=768)
BATCH = 8
MODES = ("float32/tf32", "bf16", "autocast bf16")


def _set_tf32(enabled):
    torch.backends.cuda.matmul.allow_tf32 = enabled
    genesis.backends.cuda.matmul.allow_tf32 = enabled


def _model(lib, mode, config=GPT2_SMALL, weights=None):
    lib.manual_seed(0)
    model = build_gpt(config, lib)
    if weights is not None:
        model.load_state_dict(weights)
    model = model.to("cuda")
    return model.to(dtype=lib.bfloat16) if mode == "bf16" else model


def trainer(lib, model, mode, capturable=False):
    """step(x, y): forward (under autocast in that mode), backward, clip, AdamW; the loss."""
    opt = lib.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1,
                          capturable=capturable)
    region = lib.autocast("cuda", dtype=lib.bfloat16, enabled=mode == "autocast bf16")

    def step(x, y):
        with region:
            _, loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        lib.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss
    return step


def _batch(lib, tokens):
    return (lib.tensor(tokens[:, :-1], device="cuda"), lib.tensor(tokens[:, 1:], device="cuda"))


def time_steps(lib, step, steps, warmup):
    """(ms per step over `steps` steps after `warmup` untimed ones, peak memory in GB)."""
    for _ in range(warmup):
        step()
    lib.cuda.synchronize()
    lib.cuda.reset_peak_memory_stats()
    gc.collect()
    gc.freeze()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    lib.cuda.synchronize()
    ms = (time.perf_counter() - start) / steps * 1e3
    gc.unfreeze()
    return ms, lib.cuda.max_memory_allocated() / 1e9


def _run(lib, mode, tokens, args, compiled=False, graphed=False):
    _set_tf32(mode == "float32/tf32")
    model = _model(lib, mode)
    if compiled:
        model = torch.compile(model)
    x, y = _batch(lib, tokens)
    step = trainer(lib, model, mode, capturable=graphed)
    run = captured_step(lib, lambda: step(x, y)) if graphed else lambda: step(x, y)
    ms, peak = time_steps(lib, run, args.steps, args.warmup)
    del model
    gc.collect()
    if lib is torch:
        torch.cuda.empty_cache()
    else:
        genesis.cuda.empty_cache()
    return {"ms": ms, "tokens_per_s": BATCH * GPT2_SMALL.block_size / ms * 1e3, "peak_gb": peak}


def top_kernels(step, top):
    """(ms of kernels per step, the `top` kernels as (name, calls, ms) per step) over three
    steps, from torch.profiler's CUPTI trace: it records every kernel of the process, Genesis's
    Triton and cuBLASLt launches too, without the per-kernel events that inflate Genesis's own
    profiler's figures for short kernels."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(3):
            step()
        torch.cuda.synchronize()
        genesis.cuda.synchronize()
    events = [e for e in prof.key_averages() if e.device_time_total > 0]
    events.sort(key=lambda e: -e.device_time_total)
    total = sum(e.device_time_total for e in events) / 1e3 / 3
    return total, [(e.key, e.count // 3, e.device_time_total / 1e3 / 3) for e in events[:top]]


def print_kernels(title, kernels):
    """`title`, then a line per kernel of top_kernels' list: ms per step, calls, name."""
    print(title)
    for name, calls, ms in kernels:
        print(f"  {ms:8.3f} ms  {calls:4d} calls  {name[:100]}")


def _profile(tokens, top=15):
    out = {}
    for lib in (genesis, torch):
        model = _model(lib, "autocast bf16")
        step, batch = trainer(lib, model, "autocast bf16"), _batch(lib, tokens)
        for _ in range(3):
            step(*batch)
        out[lib.__name__] = top_kernels(lambda: step(*batch), top)
    return out


def _fidelity(rng, steps=20, batch=4):
    """Max relative loss difference over `steps` steps from PyTorch's weights, per mode."""
    config = GPTConfig(vocab_size=50304, block_size=256, n_layer=12, n_head=12, n_embd=768)
    batches = [rng.integers(0, config.vocab_size, (batch, config.block_size + 1))
               for _ in range(steps)]
    theirs = build_gpt(config, torch)
    weights = {k: genesis.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()}
    result = {}
    for mode, bound in (("float32", 1e-5), ("autocast bf16", 2e-2)):
        _set_tf32(False)
        losses = {}
        for lib in (genesis, torch):
            if lib is genesis:
                model = _model(genesis, mode, config, weights)
            else:
                model = build_gpt(config, torch).to("cuda")
                model.load_state_dict(theirs.state_dict())
            step = trainer(lib, model, mode)
            losses[lib.__name__] = [float(step(*_batch(lib, tokens)).detach())
                                    for tokens in batches]
        g, t = np.array(losses["genesis"]), np.array(losses["torch"])
        worst = float(np.max(np.abs(g - t) / np.abs(t)))
        result[mode] = {"max_rel_diff": worst, "bound": bound, "ok": worst <= bound,
                        "genesis": g.tolist(), "torch": t.tolist()}
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the figures here")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    parser.add_argument("--no-fidelity", action="store_true")
    parser.add_argument("--no-graphs", action="store_true", help="skip Genesis's graphed step")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    tokens = rng.integers(0, GPT2_SMALL.vocab_size, (BATCH, GPT2_SMALL.block_size + 1))
    report = {"config": vars(GPT2_SMALL), "batch": BATCH, "modes": {}}
    print(f"{'mode':<14} {'genesis ms':>11} {'torch ms':>9} {'compile ms':>11} {'ratio':>6} "
          f"{'genesis tok/s':>14} {'torch tok/s':>12} {'peak GB g/t':>12} {'graphed ms':>11} "
          f"{'ratio':>6}")
    for mode in MODES:
        row = {"genesis": _run(genesis, mode, tokens, args), "torch": _run(torch, mode, tokens,
                                                                           args)}
        if not args.no_compile and mode == "autocast bf16":
            row["torch.compile"] = _run(torch, mode, tokens, args, compiled=True)
        if not args.no_graphs:
            row["genesis graphed"] = _run(genesis, mode, tokens, args, graphed=True)
        g, t = row["genesis"], row["torch"]
        row["ratio"] = g["ms"] / t["ms"]
        compiled = row.get("torch.compile", {}).get("ms", float("nan"))
        graphed = row.get("genesis graphed", {}).get("ms", float("nan"))
        report["modes"][mode] = row
        print(f"{mode:<14} {g['ms']:>11.2f} {t['ms']:>9.2f} {compiled:>11.2f} "
              f"{row['ratio']:>6.2f} {g['tokens_per_s']:>14,.0f} {t['tokens_per_s']:>12,.0f} "
              f"{g['peak_gb']:>5.1f}/{t['peak_gb']:<5.1f} {graphed:>11.2f} "
              f"{graphed / t['ms']:>6.2f}")
    if not args.no_fidelity:
        report["fidelity"] = _fidelity(rng)
        for mode, f in report["fidelity"].items():
            print(f"fidelity {mode}: max relative loss difference {f['max_rel_diff']:.2e} "
                  f"(bound {f['bound']:.0e}) {'ok' if f['ok'] else 'FAILED'}")
    if args.profile:
        report["profile"] = _profile(tokens)
        for side, (total, kernels) in report["profile"].items():
            print_kernels(f"\n{side}: {total:.2f} ms of kernels per autocast bf16 step; the top "
                          "ones (ms per step)", kernels)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
