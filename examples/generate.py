"""Continue a prompt with a Hugging Face language model (Llama, Mistral, Qwen2, Qwen3, Gemma 2,
Gemma 3, Phi-3, GPT-2, Mixtral, Qwen2-MoE, Qwen3-MoE) in Genesis.

    python examples/generate.py --model DIR --prompt "Once upon a time" [--max-new-tokens 64]
                                [--sample --temperature 0.8 --top-k 50 --top-p 0.95]

DIR holds config.json, the safetensors weights and tokenizer.json. The continuation is printed
as it is generated, then the prefill and decode speeds.
"""

import argparse
import time

import genesis
from genesis.models import TextStreamer, Tokenizer, from_pretrained


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True, help="a Hugging Face model directory")
    p.add_argument("--prompt", required=True)
    p.add_argument("--max-new-tokens", type=int, default=64)
    p.add_argument("--device", help="cpu or cuda (default: cuda when available)")
    p.add_argument("--dtype", choices=("float32", "bfloat16", "float16"),
                   help="default: bfloat16 on the GPU, float32 on the CPU")
    p.add_argument("--sample", action="store_true", default=None,
                   help="sample instead of greedy decoding")
    for name, kind in (("temperature", float), ("top-k", int), ("top-p", float),
                       ("min-p", float), ("repetition-penalty", float)):
        p.add_argument(f"--{name}", type=kind, help="default: the model's generation config")
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args(argv)


def _synchronize(device):
    if device == "cuda":
        genesis.cuda.synchronize()


def main(argv=None):
    args = parse_args(argv)
    device = args.device or ("cuda" if genesis.cuda.is_available() else "cpu")
    dtype = args.dtype or ("bfloat16" if device == "cuda" else "float32")
    model = from_pretrained(args.model, dtype=getattr(genesis, dtype), device=device)
    tokenizer = Tokenizer.from_pretrained(args.model)
    ids, mask = tokenizer([args.prompt], device=device)
    kwargs = dict(do_sample=args.sample, temperature=args.temperature, top_k=args.top_k,
                  top_p=args.top_p, min_p=args.min_p, repetition_penalty=args.repetition_penalty,
                  generator=genesis.Generator(device).manual_seed(args.seed),
                  eos_token_id=tokenizer.eos_token_id, attention_mask=mask)
    start = time.perf_counter()
    with genesis.no_grad():
        model(ids)
    _synchronize(device)
    prefill = time.perf_counter() - start
    print(args.prompt, end="", flush=True)
    start = time.perf_counter()
    out = model.generate(ids, max_new_tokens=args.max_new_tokens,
                         streamer=TextStreamer(tokenizer), **kwargs)
    _synchronize(device)
    total = time.perf_counter() - start
    new = out.shape[1] - ids.shape[1]
    print(f"prefill: {ids.shape[1] / prefill:,.0f} tokens/s ({ids.shape[1]} tokens) | "
          f"decode: {new / max(total - prefill, 1e-9):,.1f} tokens/s ({new} tokens, "
          f"{device}, {dtype})")
    return tokenizer.decode(out[0])


if __name__ == "__main__":
    main()
