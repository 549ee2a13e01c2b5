"""Llama generation on the GPU: Genesis beside transformers in one run.

The model is Llama-shaped, about 1.1B parameters (16 layers, 2048 wide, 32 heads, 8 KV heads,
intermediate 8192, vocabulary 32000), random-initialised, bfloat16. Reported: prefill tokens/s
for a 2048-token prompt; greedy decode tokens/s at batch 1 and 16 (prompt 128, 256 new tokens);
peak memory; and the batch-1 bandwidth bound, the weights' bytes over the measured
device-to-device copy rate (one decode step reads every weight once). transformers runs with
its dynamic cache and with `cache_implementation="static"`.

    python benchmarks/generate.py [--json PATH] [--new-tokens N] [--layers N]
"""

import argparse
import json
import pathlib
import time

import numpy as np
import torch
import transformers

import genesis
from genesis.models import LlamaConfig, LlamaForCausalLM

SHAPE = dict(vocab_size=32000, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
             num_attention_heads=32, num_key_value_heads=8, max_position_embeddings=4096,
             rms_norm_eps=1e-5, rope_theta=500000.0, tie_word_embeddings=False)


def _copy_rate():
    """Device-to-device copy bytes/s (read plus write) of 1 GiB through Genesis."""
    src = genesis.empty(1 << 29, dtype=genesis.bfloat16, device="cuda")
    dst = genesis.empty_like(src)
    for _ in range(3):
        dst.copy_(src)
    genesis.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(10):
        dst.copy_(src)
    genesis.cuda.synchronize()
    return 2 * src.numel() * 2 * 10 / (time.perf_counter() - start)


def _sync(lib):
    lib.cuda.synchronize()


def _timed(lib, fn, repeats=1):
    fn()
    _sync(lib)
    start = time.perf_counter()
    for _ in range(repeats):
        out = fn()
    _sync(lib)
    return (time.perf_counter() - start) / repeats, out


def _genesis_model(layers):
    genesis.manual_seed(0)
    config = LlamaConfig(dict(SHAPE, num_hidden_layers=layers, model_type="llama"))
    return LlamaForCausalLM(config, device="cuda", dtype=genesis.bfloat16).eval()


def _hf_model(layers):
    torch.manual_seed(0)
    config = transformers.LlamaConfig(**dict(SHAPE, num_hidden_layers=layers))
    return transformers.LlamaForCausalLM(config).to("cuda", torch.bfloat16).eval()


def _measure(lib, model, rng, new_tokens, generate):
    """{prefill, decode b1, decode b16} tokens/s and peak GB."""
    result = {}
    prompt = rng.integers(0, SHAPE["vocab_size"], (1, 2048))
    ids = lib.tensor(prompt, device="cuda")
    with lib.no_grad():
        seconds = _timed(lib, lambda: model(ids), repeats=3)[0]  # its logits not kept
    result["prefill_tok_s"] = 2048 / seconds
    for batch in (1, 16):
        ids = lib.tensor(rng.integers(0, SHAPE["vocab_size"], (batch, 128)), device="cuda")
        lib.cuda.reset_peak_memory_stats()
        prefill, _ = _timed(lib, lambda: generate(ids, 1))
        total, out = _timed(lib, lambda: generate(ids, new_tokens))
        made = out.shape[1] - 128
        result[f"decode_b{batch}_tok_s"] = batch * (made - 1) / (total - prefill)
        result[f"peak_gb_b{batch}"] = lib.cuda.max_memory_allocated() / 1e9
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json")
    parser.add_argument("--new-tokens", type=int, default=256)
    parser.add_argument("--layers", type=int, default=SHAPE["num_hidden_layers"])
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    rows = {}
    model = _genesis_model(args.layers)
    weight_bytes = sum(p.numel() * 2 for p in model.parameters())
    rows["genesis"] = _measure(genesis, model, rng, args.new_tokens,
                               lambda ids, n: model.generate(ids, max_new_tokens=n,
                                                             eos_token_id=[]))
    del model
    genesis.cuda.empty_cache()
    hf = _hf_model(args.layers)
    for name, cache in (("transformers dynamic", None), ("transformers static", "static")):
        def generate(ids, n, cache=cache):
            return hf.generate(ids, max_new_tokens=n, min_new_tokens=n, do_sample=False,
                               cache_implementation=cache, pad_token_id=0)
        rows[name] = _measure(torch, hf, rng, args.new_tokens, generate)
    bound = _copy_rate() / weight_bytes
    print(f"weights {weight_bytes / 1e9:.2f} GB, batch-1 bandwidth bound {bound:,.0f} tok/s")
    print(f"{'':<22} {'prefill tok/s':>14} {'decode b1':>10} {'decode b16':>11} "
          f"{'peak GB b1/b16':>15}")
    for name, r in rows.items():
        print(f"{name:<22} {r['prefill_tok_s']:>14,.0f} {r['decode_b1_tok_s']:>10,.1f} "
              f"{r['decode_b16_tok_s']:>11,.1f} {r['peak_gb_b1']:>7.2f}/{r['peak_gb_b16']:<7.2f}")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(
            {"shape": SHAPE, "weight_gb": weight_bytes / 1e9, "bandwidth_bound_tok_s": bound,
             "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
