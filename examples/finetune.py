"""Fine-tune a Hugging Face language model on a text file with Genesis, and save it back in
Hugging Face's format (transformers loads the result).

    python examples/finetune.py --model DIR --data FILE --out OUT_DIR [--steps 100]

The text is tokenized with DIR's tokenizer.json and cut into blocks; each step trains on a batch
of random blocks with AdamW, next-token cross-entropy and gradient clipping, under autocast to
bfloat16 (float16 with GradScaler; float32 with --dtype float32).
"""

import argparse
import os
import shutil

import numpy as np

import genesis
import genesis.nn.functional as F
from genesis.models import Tokenizer, from_pretrained

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                   "generation_config.json")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True, help="a Hugging Face model directory")
    p.add_argument("--data", required=True, help="a UTF-8 text file")
    p.add_argument("--out", required=True, help="where the fine-tuned model is saved")
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--batch-size", type=int, default=4)
    p.add_argument("--block-size", type=int, default=128)
    p.add_argument("--lr", type=float, default=3e-5)
    p.add_argument("--device", help="cpu or cuda (default: cuda when available)")
    p.add_argument("--dtype", choices=("float32", "bfloat16", "float16"),
                   help="autocast dtype (default: bfloat16)")
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args(argv)


def batches(tokens, block, batch, rng, device):
    """Endless (inputs, next-token targets) batches of random blocks of `tokens`."""
    if len(tokens) <= block:
        raise ValueError(f"finetune: the text has {len(tokens)} tokens, fewer than a block of "
                         f"{block} + 1")
    while True:
        starts = rng.integers(0, len(tokens) - block, batch)
        rows = np.stack([tokens[s:s + block + 1] for s in starts])
        yield (genesis.tensor(rows[:, :-1], device=device),
               genesis.tensor(rows[:, 1:], device=device))


def main(argv=None):
    args = parse_args(argv)
    device = args.device or ("cuda" if genesis.cuda.is_available() else "cpu")
    dtype = args.dtype or "bfloat16"
    genesis.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    model = from_pretrained(args.model, dtype=genesis.float32, device=device).train()
    tokenizer = Tokenizer.from_pretrained(args.model)
    with open(args.data, encoding="utf-8") as f:
        tokens = np.array(tokenizer.encode(f.read()), dtype=np.int64)
    optimizer = genesis.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.0)
    autocast = genesis.autocast(device, dtype=getattr(genesis, dtype),
                                enabled=dtype != "float32")
    scaler = genesis.amp.GradScaler(device, enabled=dtype == "float16")
    data = batches(tokens, args.block_size, args.batch_size, rng, device)
    losses = []
    for step in range(args.steps):
        x, y = next(data)
        with autocast:
            logits = model(x)
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        genesis.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
        losses.append(loss.item())
        if step % 10 == 0 or step + 1 == args.steps:
            print(f"step {step + 1}/{args.steps}: loss {losses[-1]:.4f}", flush=True)
    model.eval().save_pretrained(args.out)
    for name in TOKENIZER_FILES:
        if os.path.isfile(os.path.join(args.model, name)):
            shutil.copy(os.path.join(args.model, name), os.path.join(args.out, name))
    print(f"saved to {args.out}")
    return losses


if __name__ == "__main__":
    main()
