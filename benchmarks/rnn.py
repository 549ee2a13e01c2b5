"""Recurrent layers forward + backward on the GPU, Genesis beside torch (cuDNN), in one run.

Each case builds nn.LSTM or nn.GRU in both frameworks with the same weights (copied through the
state dict), then times one forward and one backward (the gradient of the input and of every
weight) by CUDA events behind an L2 flush (ops.device_ms). It reports ms per step for each and
Genesis's speed as a fraction of torch's (torch ms / Genesis ms; the target for the LSTM case
is 0.5 or more). The "graphed" columns time Genesis's layer made with
genesis.cuda.make_graphed_callables: its forward and backward replayed as two CUDA graphs, so the
per-time-step launches cost no host time. float32 runs as each framework's defaults have it:
TF32 products in both (cudnn.allow_tf32, which PyTorch's cuDNN RNN and Genesis's layers follow);
--no-tf32 turns it off in both. The header names the precision.

With --simulated-cuda nothing runs on a GPU: Genesis's layers run on a simulated device
(benchmarks/simulated_cuda.py, kernel launches are no-ops) and the table gives the host time of
one forward and backward per layer and time step, in microseconds of CPU time, on the
sequence-level path (one autograd Function per layer direction, functional/recurrent_scan.py)
and on the per-step path. On the GPU, eager speed is bound by whichever is larger: this host
time times the steps, or the device time.

    python benchmarks/rnn.py [--json PATH] [--reps N] [--no-tf32] [--simulated-cuda]
"""

import argparse
import json
import time

import numpy as np
import ops
import simulated_cuda
import torch

import genesis
from genesis.nn.functional import recurrent_scan

CASES = [  # (layer, sequence, batch, hidden, layers)
    ("LSTM", 256, 64, 1024, 2),
    ("GRU", 256, 64, 1024, 2),
    ("LSTM", 64, 16, 256, 1),
]
DTYPES = {"fp32": (genesis.float32, torch.float32), "bf16": (genesis.bfloat16, torch.bfloat16)}


def _layers(name, hidden, layers, dtypes):
    """The torch layer on the GPU and the Genesis one holding its weights."""
    t_layer = getattr(torch.nn, name)(hidden, hidden, layers).cuda().to(dtypes[1])
    g_layer = getattr(genesis.nn, name)(hidden, hidden, layers).to("cuda", dtypes[0])
    g_layer.load_state_dict({k: genesis.tensor(v.float().cpu().numpy(), device="cuda")
                             .to(dtypes[0]) for k, v in t_layer.state_dict().items()})
    return {"genesis": g_layer, "torch": t_layer}


def _step(lib, layer, shape, dtype, rng):
    """A closure running the layer's forward and backward on fresh inputs."""
    x, grad = (lib.tensor(rng.standard_normal(shape, dtype=np.float32)).to(dtype)
               for _ in range(2))
    x.requires_grad_(True)

    def step():
        out, _ = layer(x)
        out.backward(grad)
    return step


def run(reps):
    libs = {"genesis": ops.Lib(genesis), "torch": ops.Lib(torch)}
    rng = np.random.default_rng()
    rows = []
    for name, sequence, batch, hidden, layers in CASES:
        for dtype_name, dtypes in DTYPES.items():
            modules = _layers(name, hidden, layers, dtypes)
            shape = (sequence, batch, hidden)
            ms = {lib_name: ops.device_ms(lib, _step(lib, modules[lib_name], shape, dtype, rng),
                                          reps)
                  for (lib_name, lib), dtype in zip(libs.items(), dtypes)}
            sample = genesis.randn(*shape, device="cuda", dtype=dtypes[0], requires_grad=True)
            graphed = genesis.cuda.make_graphed_callables(modules["genesis"], (sample,))
            ms["graphed"] = ops.device_ms(libs["genesis"],
                                          _step(libs["genesis"], graphed, shape, dtypes[0], rng),
                                          reps)
            rows.append({"layer": name, "shape": [sequence, batch, hidden, layers],
                         "dtype": dtype_name, "genesis_ms": ms["genesis"],
                         "torch_ms": ms["torch"], "speed": ms["torch"] / ms["genesis"],
                         "graphed_ms": ms["graphed"],
                         "graphed_speed": ms["torch"] / ms["graphed"]})
    return rows


def _host_us_per_step(layer, shape, dtype, reps):
    """Best CPU time of one forward + backward, in microseconds per time step and layer."""
    step = _step(ops.Lib(genesis), layer, shape, dtype, np.random.default_rng())
    step()
    best = float("inf")
    for _ in range(reps):
        start = time.thread_time()
        step()
        best = min(best, time.thread_time() - start)
    return best * 1e6 / (shape[0] * layer.num_layers)


def run_simulated(reps):
    """One row per case and dtype: host microseconds per layer-step on both paths, simulated
    device."""
    rows = []
    for name, sequence, batch, hidden, layers in CASES:
        for dtype_name, (dtype, _) in DTYPES.items():
            layer = getattr(genesis.nn, name)(hidden, hidden, layers).to("cuda", dtype)
            us = {}
            for path, enabled in (("sequence", True), ("per_step", False)):
                recurrent_scan.ENABLED = enabled
                us[path] = _host_us_per_step(layer, (sequence, batch, hidden), dtype, reps)
            recurrent_scan.ENABLED = True
            rows.append({"layer": name, "shape": [sequence, batch, hidden, layers],
                         "dtype": dtype_name, "sequence_us_per_step": us["sequence"],
                         "per_step_us_per_step": us["per_step"]})
    return rows


def print_simulated(rows):
    print(f"{'layer':<6}{'T,B,H,layers':<18}{'dtype':>6}{'sequence path us':>18}"
          f"{'per-step path us':>18}{'ratio':>7}   (host time per layer-step, forward + "
          "backward, simulated cuda)")
    for r in rows:
        seq, per = r["sequence_us_per_step"], r["per_step_us_per_step"]
        print(f"{r['layer']:<6}{','.join(map(str, r['shape'])):<18}{r['dtype']:>6}"
              f"{seq:>18.1f}{per:>18.1f}{per / seq:>7.2f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the rows here")
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--no-tf32", action="store_true",
                        help="float32 in IEEE float32 in both (cudnn.allow_tf32 off)")
    parser.add_argument("--simulated-cuda", action="store_true",
                        help="host time per step on a simulated device (no GPU needed)")
    args = parser.parse_args()
    if args.simulated_cuda:
        simulated_cuda.install()
        rows = run_simulated(min(args.reps, 3))
        print_simulated(rows)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(rows, f, indent=1)
        return
    precision = ops.cudnn_tf32(not args.no_tf32)
    rows = run(args.reps)
    print(precision)
    print(f"{'layer':<6}{'T,B,H,layers':<18}{'dtype':>6}{'genesis ms':>12}{'torch ms':>10}"
          f"{'speed vs torch':>16}{'graphed ms':>12}{'speed':>7}")
    for r in rows:
        print(f"{r['layer']:<6}{','.join(map(str, r['shape'])):<18}{r['dtype']:>6}"
              f"{r['genesis_ms']:>12.3f}{r['torch_ms']:>10.3f}{r['speed']:>16.2f}"
              f"{r['graphed_ms']:>12.3f}{r['graphed_speed']:>7.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
