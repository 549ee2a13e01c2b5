"""ResNet-50 training steps on the GPU: Genesis beside PyTorch eager, channels-last.

The model is torchvision's ResNet-50 (v1.5: the stride in each stage's first 3x3), written once
here against either framework's `nn`, at batch 32 on 224 x 224 images, with cross-entropy over
1000 classes and SGD (momentum 0.9, weight decay 1e-4), inputs and weights channels-last, in
two modes:
- "bf16": bfloat16 weights and activations;
- "autocast bf16": float32 weights, forward under autocast to bfloat16 (convolutions and the
  classifier in bf16, batch norm on bf16 activations with float32 statistics).
Each row gives ms per step, images/s and peak memory, with the Genesis/PyTorch eager ratio of
times. The "graphed" column is Genesis with the whole step captured in one CUDA graph and
replayed (train_step.captured_step; SGD keeps no step count, so it is capturable as it is).
With --profile, each side's 15 kernels that take the most device time in an eager step of each
mode, from torch.profiler's CUPTI trace (gpt2.top_kernels).

    python benchmarks/resnet.py [--json PATH] [--batch N] [--size N] [--steps N] [--warmup N]
                                [--no-graphs] [--profile]
"""

import argparse
import gc
import json

import numpy as np
import torch
from gpt2 import print_kernels, time_steps, top_kernels
from train_step import captured_step

import genesis

MODES = ("bf16", "autocast bf16")
# (blocks, width) of ResNet-50's four stages; a bottleneck expands its width 4x.
STAGES = ((3, 64), (4, 128), (6, 256), (3, 512))


def _bottleneck(nn, c_in, width, stride):
    """The 1x1 -> 3x3 (stride) -> 1x1 bottleneck with its shortcut (a strided 1x1 projection
    where the shape changes)."""
    c_out = 4 * width

    class Bottleneck(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(c_in, width, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(width)
            self.conv2 = nn.Conv2d(width, width, 3, stride, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(width)
            self.conv3 = nn.Conv2d(width, c_out, 1, bias=False)
            self.bn3 = nn.BatchNorm2d(c_out)
            self.relu = nn.ReLU(inplace=True)
            self.downsample = None
            if stride != 1 or c_in != c_out:
                self.downsample = nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride, bias=False),
                                                nn.BatchNorm2d(c_out))

        def forward(self, x):
            shortcut = x if self.downsample is None else self.downsample(x)
            y = self.relu(self.bn1(self.conv1(x)))
            y = self.relu(self.bn2(self.conv2(y)))
            return self.relu(self.bn3(self.conv3(y)) + shortcut)

    return Bottleneck()


def resnet50(lib, classes=1000):
    """ResNet-50 in `lib` (genesis or torch)."""
    nn = lib.nn
    layers = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True),
              nn.MaxPool2d(3, 2, 1)]
    c_in = 64
    for i, (blocks, width) in enumerate(STAGES):
        for b in range(blocks):
            layers.append(_bottleneck(nn, c_in, width, 2 if b == 0 and i > 0 else 1))
            c_in = 4 * width
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c_in, classes)]
    return nn.Sequential(*layers)


def trainer(lib, model, mode):
    """step(x, y): forward (under autocast in that mode), cross-entropy, backward, SGD; the
    loss."""
    opt = lib.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    region = lib.autocast("cuda", dtype=lib.bfloat16, enabled=mode == "autocast bf16")

    def step(x, y):
        with region:
            loss = lib.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss
    return step


def _step(lib, mode, images, labels):
    """A closure running one training step of a fresh model on the batch, in `mode`."""
    lib.manual_seed(0)
    fmt = lib.channels_last
    model = resnet50(lib).to(device="cuda", memory_format=fmt)
    if mode == "bf16":
        model = model.to(dtype=lib.bfloat16)
    dtype = lib.bfloat16 if mode == "bf16" else lib.float32
    x = lib.tensor(images, device="cuda").to(dtype).contiguous(memory_format=fmt)
    y = lib.tensor(labels, device="cuda")
    step = trainer(lib, model, mode)
    return lambda: step(x, y)


def _run(lib, mode, images, labels, args, graphed=False):
    step = _step(lib, mode, images, labels)
    run = captured_step(lib, step) if graphed else step
    ms, peak = time_steps(lib, run, args.steps, args.warmup)
    del step, run
    gc.collect()
    lib.cuda.empty_cache()
    return {"ms": ms, "images_per_s": args.batch / ms * 1e3, "peak_gb": peak}


def _profile(images, labels, top=15):
    """Each side's kernel time per eager step and its `top` kernels, in each mode."""
    for mode in MODES:
        for lib in (genesis, torch):
            step = _step(lib, mode, images, labels)
            for _ in range(3):
                step()
            total, kernels = top_kernels(step, top)
            print_kernels(f"{lib.__name__} {mode}: {total:.2f} ms of kernels per step", kernels)
            del step
            gc.collect()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", help="write the figures here")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--size", type=int, default=224, help="image height and width")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--no-graphs", action="store_true", help="skip the graphed Genesis step")
    p.add_argument("--profile", action="store_true",
                   help="list each side's kernels that take the most time instead")
    args = p.parse_args()
    rng = np.random.default_rng(0)
    images = rng.standard_normal((args.batch, 3, args.size, args.size), dtype=np.float32)
    labels = rng.integers(0, 1000, args.batch)
    if args.profile:
        _profile(images, labels)
        return
    rows = []
    print(f"ResNet-50, batch {args.batch}, {args.size}^2, channels-last, SGD")
    print(f"{'mode':<16}{'genesis ms':>12}{'torch ms':>10}{'ratio':>8}{'graphed ms':>12}"
          f"{'ratio':>8}{'images/s G / T / graphed':>30}{'peak GB G / T':>16}")
    for mode in MODES:
        row = {"mode": mode, "genesis": _run(genesis, mode, images, labels, args),
               "torch": _run(torch, mode, images, labels, args)}
        if not args.no_graphs:
            row["genesis_graphed"] = _run(genesis, mode, images, labels, args, graphed=True)
        rows.append(row)
        g, t = row["genesis"], row["torch"]
        gr = row.get("genesis_graphed")
        graphed_text = f"{gr['ms']:>12.2f}{gr['ms'] / t['ms']:>8.2f}" if gr else f"{'':>20}"
        speeds = (f"{g['images_per_s']:,.0f} / {t['images_per_s']:,.0f}"
                  + (f" / {gr['images_per_s']:,.0f}" if gr else ""))
        print(f"{mode:<16}{g['ms']:>12.2f}{t['ms']:>10.2f}{g['ms'] / t['ms']:>8.2f}"
              f"{graphed_text}{speeds:>30}{g['peak_gb']:>8.2f} / {t['peak_gb']:.2f}",
              flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
