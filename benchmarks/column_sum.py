"""Column sums (grad.sum(0), a Linear layer's bias gradient) over the sizes of
kernels/column_sum.py, beside PyTorch's sum on the same GPU: what to set its constants to.

Each case is a (rows, cols) array summed over its rows: GPT-2 small's bias gradients in
bfloat16 (x 768, x 2304 for the QKV projection, x 3072) and the x 768 one in float32. For each
setting of the kernel's sizes (programs in all, pipeline stages, the widest row run, the merge
cap) it reports Genesis's device time, TB/s, the fraction of the copy rate (a 256 MB copy
measured in the same run) and PyTorch's time over Genesis's. Times are medians over repetitions,
each behind an L2 flush by reading 256 MB (benchmarks/ops.py: device_ms). The default setting
is marked; the first row of each case is PyTorch.

    python benchmarks/column_sum.py [--json PATH] [--reps N]
"""

import argparse
import itertools
import json
import sys

import numpy as np
import torch

import genesis
from genesis.backends.cuda.kernels import column_sum as cs
from genesis.backends.cuda.kernels import reduce as red
from genesis.backends.cuda.launch import LaunchCache
from ops import FLUSH_BYTES, Lib, device_ms

CASES = [(8192, 768, "bfloat16"), (8192, 2304, "bfloat16"), (8192, 3072, "bfloat16"),
         (8192, 768, "float32")]
ITEMSIZE = {"bfloat16": 2, "float32": 4}
# Each setting: (PROGRAMS, STAGES, ROW_BYTES, MERGE_BYTES): programs in all (1 to 4 an SM on 132
# SMs) x pipeline stages x the widest row run, at the default merge cap; then the default with
# half and twice the cap.
SETTINGS = ([(p, s, r, 32768) for p, s, r in itertools.product((132, 264, 396, 528), (2, 3, 4),
                                                                (256, 512))]
            + [(264, 4, 512, 16384), (264, 4, 512, 65536)])


def defaults():
    return (cs.PROGRAMS, cs.STAGES, cs.ROW_BYTES, cs.MERGE_BYTES)


def apply(setting):
    """Set the kernel's sizes and drop the planned reductions, so the next sum plans afresh."""
    cs.PROGRAMS, cs.STAGES, cs.ROW_BYTES, cs.MERGE_BYTES = setting
    red._reductions = LaunchCache()


def copy_tbps(libs, reps):
    """The better of the two libraries' 256 MB copy rates (read + write bytes per second)."""
    rates = []
    for lib in libs.values():
        x = lib.module.empty(FLUSH_BYTES // 4, dtype=lib.module.float32, device="cuda")
        y = lib.module.empty_like(x)
        rates.append(2 * FLUSH_BYTES / device_ms(lib, lambda: y.copy_(x), reps, "read") / 1e9)
    return max(rates)


def case_rows(libs, rows, cols, dtype, reps, copy_rate):
    data = np.random.default_rng(0).standard_normal((rows, cols), dtype=np.float32)
    nbytes = rows * cols * ITEMSIZE[dtype]
    tx = torch.from_numpy(data).cuda().to(getattr(torch, dtype))
    gx = genesis.tensor(data, device="cuda").to(getattr(genesis, dtype))
    torch_ms = device_ms(libs["torch"], lambda: tx.sum(0), reps, "read")
    name = f"{rows} x {cols} {dtype}"
    out = [{"case": name, "setting": "torch", "ms": torch_ms}]
    default = defaults()
    expected = tx.sum(0, dtype=torch.float32).cpu()
    for setting in SETTINGS:
        apply(setting)
        result = torch.from_numpy(gx.sum(0).float().cpu().numpy())
        assert torch.allclose(result, expected, rtol=1e-2, atol=1e-2), (name, setting)
        ms = device_ms(libs["genesis"], lambda: gx.sum(0), reps, "read")
        out.append({"case": name, "setting": setting, "default": setting == default, "ms": ms})
    apply(default)
    for r in out:
        r["tbps"] = nbytes / r["ms"] / 1e9
        r["of_copy"] = r["tbps"] / copy_rate
        r["torch_over"] = torch_ms / r["ms"]
    return out


def row_line(r):
    """One table row: the setting (PyTorch's or Genesis's sizes) and its figures."""
    setting = r["setting"] if r["setting"] == "torch" else ", ".join(map(str, r["setting"]))
    mark = " (default)" if r.get("default") else ""
    cells = [r["case"], setting + mark, f"{r['ms'] * 1e3:.2f}", f"{r['tbps']:.2f}",
             f"{r['of_copy']:.3f}", f"{r['torch_over']:.2f}"]
    return "| " + " | ".join(cells) + " |"


def markdown(rows, copy_rate):
    header = ["| case | PROGRAMS, STAGES, ROW_BYTES, MERGE_BYTES | us | TB/s | of copy | "
              "torch time / this |", "|---|---|---:|---:|---:|---:|"]
    return "\n".join([f"copy 256 MB: {copy_rate:.2f} TB/s", ""] + header
                     + [row_line(r) for r in rows])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="also write the results as JSON to this path")
    parser.add_argument("--reps", type=int, default=30, help="timed repetitions per setting")
    args = parser.parse_args(argv)
    if not genesis.cuda.is_available():
        sys.exit("benchmarks/column_sum.py needs a CUDA GPU")
    libs = {"genesis": Lib(genesis), "torch": Lib(torch)}
    copy_rate = copy_tbps(libs, args.reps)
    rows = []
    for rows_, cols, dtype in CASES:
        rows += case_rows(libs, rows_, cols, dtype, args.reps, copy_rate)
    if args.json:
        meta = {"device": genesis.cuda.get_device_name(), "torch": torch.__version__,
                "copy_tbps": copy_rate, "reps": args.reps}
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "results": rows}, f, indent=2, default=str)
    print(markdown(rows, copy_rate))


if __name__ == "__main__":
    main()
