"""Train a character-level GPT on real text with Genesis: the project's main job.

By default the corpus is the Python language reference that ships with every Python
(`pydoc_data.topics`), so nothing is downloaded; `--data FILE` trains on any UTF-8 text. The
script shows a progress bar with loss and tokens/s, reports validation loss against the
corpus's unigram baseline, saves a checkpoint (resumable with `--resume`), plots the loss curves
and prints a sample of generated text.

    python examples/train_gpt.py                 # GPU if available, else CPU (about 3 minutes)
    python examples/train_gpt.py --resume --steps 1200
    python examples/train_gpt.py --no-cuda-graphs  # launch every kernel from Python each step
    python -m genesis.distributed.run --nproc-per-node 2 examples/train_gpt.py   # 2 GPUs
    python -m genesis.distributed.run --nproc-per-node 2 examples/train_gpt.py --device cpu

On one GPU the whole training step (forward, backward, clipping, the optimizer and, in float16,
the loss scaler) is captured once into a CUDA graph and replayed every step: the step then costs
one launch instead of hundreds. Under the launcher each rank samples its own batches (seeded by
its rank) and the model is
wrapped in DistributedDataParallel; only rank 0 prints, saves the checkpoint and plots. A
checkpoint holds the bare model, so a run resumes on any number of processes.
"""

import argparse
import gc
import math
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import genesis  # noqa: E402
from gpt import GPTConfig, build_gpt  # noqa: E402


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", help="UTF-8 text file to train on (default: Python's reference text)")
    p.add_argument("--device", help="cpu or cuda (default: cuda when available)")
    p.add_argument("--dtype", choices=("float32", "bfloat16", "float16"),
                   help="float32, or autocast to bfloat16 or float16 (float16 with GradScaler); "
                        "default: bfloat16 on the GPU, float32 on the CPU")
    p.add_argument("--steps", type=int, default=400, help="total optimizer steps")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--block-size", type=int, default=64)
    p.add_argument("--n-layer", type=int, default=3)
    p.add_argument("--n-head", type=int, default=4)
    p.add_argument("--n-embd", type=int, default=128)
    p.add_argument("--dropout", type=float, default=0.0)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--weight-decay", type=float, default=0.1)
    p.add_argument("--warmup", type=int, default=50)
    p.add_argument("--eval-interval", type=int, default=100)
    p.add_argument("--eval-batches", type=int, default=10)
    p.add_argument("--out-dir", default="out", help="checkpoint and plot go here")
    p.add_argument("--resume", action="store_true", help="continue from OUT_DIR/ckpt.safetensors")
    p.add_argument("--sample-chars", type=int, default=300)
    p.add_argument("--seed", type=int, default=1337)
    p.add_argument("--cuda-graphs", action=argparse.BooleanOptionalAction, default=None,
                   help="capture the training step in a CUDA graph and replay it (default: on "
                        "a single GPU)")
    return p.parse_args(argv)


def load_text(path):
    """The training text; a clear error for a missing, empty or binary file."""
    if path is None:
        from pydoc_data.topics import topics
        return "\n\n".join(topics[k] for k in sorted(topics))
    with open(path, "rb") as f:
        raw = f.read()
    if not raw.strip():
        raise SystemExit(f"train_gpt: --data {path} is empty")
    if b"\0" in raw[:65536]:
        raise SystemExit(f"train_gpt: --data {path} looks binary (it contains NUL bytes)")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise SystemExit(f"train_gpt: --data {path} is not UTF-8 text ({e})") from None


class CharData:
    """The text as integer ids, split 90/10 into train and validation, with random batches."""

    def __init__(self, text, block_size, vocab=None):
        self.chars = vocab or sorted(set(text))
        self.stoi = {c: i for i, c in enumerate(self.chars)}
        unknown = set(text) - set(self.stoi)
        if unknown:
            raise SystemExit(f"train_gpt: the text has characters the checkpoint's vocabulary "
                             f"lacks: {sorted(unknown)[:10]}")
        ids = np.array([self.stoi[c] for c in text], dtype=np.int64)
        split = int(0.9 * len(ids))
        self.train, self.val = ids[:split], ids[split:]
        if len(self.val) <= block_size + 1:
            raise SystemExit(f"train_gpt: the text is too short ({len(ids)} characters) for "
                             f"block size {block_size}")
        self.block_size = block_size

    def batch(self, split, batch_size, rng, device):
        data = self.train if split == "train" else self.val
        starts = rng.integers(0, len(data) - self.block_size - 1, size=batch_size)
        x = np.stack([data[s:s + self.block_size] for s in starts])
        y = np.stack([data[s + 1:s + 1 + self.block_size] for s in starts])
        return genesis.tensor(x, device=device), genesis.tensor(y, device=device)

    def unigram_loss(self):
        """Cross-entropy (nats) of predicting validation chars by training-set frequencies."""
        counts = np.bincount(self.train, minlength=len(self.chars)) + 1.0
        probs = counts / counts.sum()
        return float(-np.log(probs[self.val]).mean())

    def decode(self, ids):
        return "".join(self.chars[i] for i in ids)


def lr_at(step, args):
    """Linear warmup, then cosine decay to a tenth of the peak."""
    if step < args.warmup:
        return args.lr * (step + 1) / args.warmup
    progress = (step - args.warmup) / max(1, args.steps - args.warmup)
    return args.lr * (0.1 + 0.45 * (1 + math.cos(math.pi * min(progress, 1.0))))


def make_optimizer(model, args, capturable=False):
    """AdamW with weight decay on matrices only (not on biases, norms or embeddings' scale).
    `capturable`: its step counts and learning rate live on the device, for a CUDA graph."""
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.ndim < 2]
    lr = genesis.tensor(args.lr, device=decay[0].device) if capturable else args.lr
    return genesis.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                                {"params": no_decay, "weight_decay": 0.0}],
                               lr=lr, betas=(0.9, 0.95), capturable=capturable)


def set_lr(optimizer, lr):
    """The learning rate of every group, written in place where it is a device tensor (which a
    captured step reads)."""
    for group in optimizer.param_groups:
        if isinstance(group["lr"], genesis.Tensor):
            group["lr"].fill_(lr)
        else:
            group["lr"] = lr


def make_step(model, optimizer, scaler, autocast):
    """step(x, y) -> loss: forward, backward, clipping and the optimizer step."""
    def step(x, y):
        with autocast:
            _, loss = model(x, y)
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        genesis.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
        return loss
    return step


def capture_step(step, x, y, warmup=3):
    """`step` on the static batch (x, y) captured in a CUDA graph, after `warmup` steps on a side
    stream (they compile every kernel and create the optimizer's state; they train, too).
    Returns replay(x, y) -> loss, which copies a batch into the static one and replays."""
    side = genesis.cuda.Stream()
    side.wait_stream(genesis.cuda.current_stream())
    with genesis.cuda.stream(side):
        for _ in range(warmup):
            step(x, y)
    genesis.cuda.current_stream().wait_stream(side)
    graph = genesis.cuda.CUDAGraph()
    with genesis.cuda.graph(graph):
        loss = step(x, y)

    def replay(x_batch, y_batch):
        x.copy_(x_batch)
        y.copy_(y_batch)
        graph.replay()
        return loss
    return replay


def reserve_step_memory(model, device):
    """On a GPU, reserve before the first step the blocks every step takes again: each
    parameter's gradient and AdamW's two moments. The first step then finds them in the
    allocator's cache, carved from a few segments, instead of asking the driver mid-step."""
    if genesis.device(device).type != "cuda":
        return
    sizes = [p.numel() * p.element_size() for p in model.parameters()]
    genesis.cuda.warmup_cache(sizes, [3] * len(sizes))


@genesis.no_grad()
def evaluate(model, data, args, rng, device):
    model.eval()
    losses = [model(*data.batch("val", args.batch_size, rng, device))[1].item()
              for _ in range(args.eval_batches)]
    model.train()
    return float(np.mean(losses))


@genesis.no_grad()
def generate(model, data, prompt, n_chars, device, rng, temperature=0.8, top_k=20):
    model.eval()
    ids = [data.stoi[c] for c in prompt if c in data.stoi] or [0]
    for _ in range(n_chars):
        ctx = genesis.tensor([ids[-data.block_size:]], device=device)
        logits = model(ctx)[0][0, -1].cpu().numpy().astype(np.float64) / temperature
        top = np.argsort(logits)[-top_k:]
        probs = np.exp(logits[top] - logits[top].max())
        ids.append(int(rng.choice(top, p=probs / probs.sum())))
    return data.decode(ids)


def save_checkpoint(path, model, optimizer, step, history, data, config):
    genesis.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                  "step": step, "history": history, "vocab": "".join(data.chars),
                  "config": vars(config)}, path)


def setup_distributed(device):
    """(rank, world size): joins the process group in a world of several processes (WORLD_SIZE
    from the launcher, PMI_SIZE from mpiexec): NCCL on the GPU `cuda:LOCAL_RANK`; on the CPU,
    MPI under mpiexec (or the launcher with --mpi), else Gloo; else (0, 1)."""
    world_size = int(os.environ.get("WORLD_SIZE", os.environ.get("PMI_SIZE", 1)))
    if world_size == 1:
        return 0, 1
    if device == "cuda":
        genesis.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)))
        backend = "nccl"
    else:
        backend = "mpi" if "PMI_SIZE" in os.environ else "gloo"
    genesis.distributed.init_process_group(backend)
    return genesis.distributed.get_rank(), world_size


def plot(history, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(matplotlib not installed: no plot; pip install 'genesis[examples]')")
        return
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(*zip(*history["train"]), label="train", alpha=0.6)
    if history["val"]:
        ax.plot(*zip(*history["val"]), "o-", label="validation")
    ax.axhline(history["unigram"], color="gray", ls="--", label="unigram baseline")
    ax.set_xlabel("step")
    ax.set_ylabel("loss (nats/char)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print(f"loss curves: {path}")


def progress(iterable, total, initial):
    try:
        from tqdm import tqdm
        return tqdm(iterable, total=total, initial=initial, dynamic_ncols=True)
    except ImportError:
        return iterable


def main(argv=None):
    args = parse_args(argv)
    device = args.device or ("cuda" if genesis.cuda.is_available() else "cpu")
    rank, world_size = setup_distributed(device)
    genesis.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed + rank)
    ckpt_path = os.path.join(args.out_dir, "ckpt.safetensors")
    state = genesis.load(ckpt_path, map_location=device) if args.resume else None
    if state is not None:
        config = GPTConfig(**state["config"])
        data = CharData(load_text(args.data), config.block_size, list(state["vocab"]))
    else:
        data = CharData(load_text(args.data), args.block_size)
        config = GPTConfig(vocab_size=len(data.chars), block_size=args.block_size,
                           n_layer=args.n_layer, n_head=args.n_head, n_embd=args.n_embd,
                           dropout=args.dropout)
    model = build_gpt(config, genesis).to(device)
    graphs = args.cuda_graphs if args.cuda_graphs is not None else \
        device == "cuda" and world_size == 1
    if graphs and (device != "cuda" or world_size > 1):
        raise SystemExit("train_gpt: --cuda-graphs needs a single GPU")
    if not graphs:
        reserve_step_memory(model, device)
    optimizer = make_optimizer(model, args, capturable=graphs)
    history = {"train": [], "val": [], "unigram": data.unigram_loss()}
    start = 0
    if state is not None:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        start, history = int(state["step"]), state["history"]
    ddp_model = model if world_size == 1 else \
        genesis.nn.parallel.DistributedDataParallel(model)
    n_params = sum(p.numel() for p in model.parameters())
    say = print if rank == 0 else (lambda *a, **k: None)
    say(f"{world_size} processes | " if world_size > 1 else "", end="")
    say(f"device {device} | {n_params / 1e6:.2f}M parameters | vocab {len(data.chars)} | "
          f"{len(data.train):,} train / {len(data.val):,} val chars | "
          f"unigram baseline {history['unigram']:.3f} nats")

    # Python's cyclic collector now and then walks every long-lived object (modules, the model,
    # compiled kernels): tens of ms a pass. Frozen, they are left out of those passes.
    gc.freeze()
    dtype = args.dtype or ("bfloat16" if device == "cuda" else "float32")
    say(f"precision: {dtype if dtype == 'float32' else 'autocast ' + dtype}")
    autocast = genesis.autocast(device, dtype=getattr(genesis, dtype) if dtype != "float32"
                                else None, enabled=dtype != "float32")
    scaler = genesis.amp.GradScaler(device, enabled=dtype == "float16")
    step_fn = make_step(ddp_model, optimizer, scaler, autocast)
    if graphs:
        say("cuda graphs: the training step is captured once and replayed")
        set_lr(optimizer, lr_at(start, args))
        step_fn = capture_step(step_fn, *data.batch("train", args.batch_size, rng, device))
    bar = progress(range(start, args.steps), args.steps, start) if rank == 0 else \
        range(start, args.steps)
    tokens_per_step = args.batch_size * config.block_size
    step_times = []
    t0 = time.perf_counter()
    for step in bar:
        begin = time.perf_counter()
        set_lr(optimizer, lr_at(step, args))
        loss = step_fn(*data.batch("train", args.batch_size, rng, device))
        loss_value = loss.item()
        step_times.append(time.perf_counter() - begin)
        history["train"].append((step + 1, loss_value))
        rate = world_size * tokens_per_step * (step + 1 - start) / (time.perf_counter() - t0)
        if hasattr(bar, "set_postfix"):
            bar.set_postfix(loss=f"{loss_value:.3f}", tok_s=f"{rate:,.0f}")
        if (step + 1) % args.eval_interval == 0 or step + 1 == args.steps:
            with autocast:
                val = evaluate(model, data, args, rng, device)
            history["val"].append((step + 1, val))
            message = f"step {step + 1}: train {loss_value:.3f}, val {val:.3f}"
            (bar.write if hasattr(bar, "write") else say)(message)

    final_val = history["val"][-1][1] if history["val"] else float("nan")
    if len(step_times) > 10:
        say(f"steady-state step: {1e3 * float(np.median(step_times[len(step_times) // 2:])):.2f} "
            f"ms ({'cuda graphs' if graphs else 'eager'})")
    if world_size > 1:
        genesis.distributed.destroy_process_group()
    if rank != 0:
        return final_val, history["unigram"]
    os.makedirs(args.out_dir, exist_ok=True)
    save_checkpoint(ckpt_path, model, optimizer, args.steps, history, data, config)
    print(f"validation loss {final_val:.3f} nats vs unigram baseline {history['unigram']:.3f} "
          f"nats | checkpoint: {ckpt_path}")
    plot(history, os.path.join(args.out_dir, "loss.png"))
    print("--- sample ---")
    print(generate(model, data, "def ", args.sample_chars, device, rng))
    return final_val, history["unigram"]


if __name__ == "__main__":
    main()
