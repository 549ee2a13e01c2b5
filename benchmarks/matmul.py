"""Matrix multiply TFLOP/s, Genesis beside PyTorch on the same GPU in one run.

Cases: squares 1024..8192 (A @ B, both row-major) and Linear layer shapes (x @ W^T, W stored
out x in as nn.Linear keeps it): GPT-2 small's MLP (8192 tokens, 768 -> 3072 and 3072 -> 768)
and LLaMA-7B's (4096 tokens, 4096 -> 11008 and 11008 -> 4096); each in bf16, fp16, tf32
(float32 with allow_tf32 on in both frameworks) and strict fp32.

Time per call: the median of event-timed calls, each queued behind a 512 MB zeroing (so the events
time the kernel, not the host's launch, and L2 starts cold), after a warm-up call. Genesis's
warm-up includes its autotuning (Triton configs and cuBLASLt timed once per shape key, winners kept
under GENESIS_KERNEL_CACHE_DIR); to keep the run short the Triton space is cut to the heuristic's
pick plus the next configs, --tune-limit in all (default 4; 0 times the whole space); cuBLASLt's
best heuristic algorithms are all timed. The "path" column is what Genesis ran, as its profiler saw
it: cuBLASLt or the Triton kernel (tile BM x BN x BK, warps).

Decode (--decode): the projections of a 1.1B Llama's decoding step (bf16, hidden 2048, 8 KV
heads of 32, intermediate 8192, vocabulary 32000; gate and up fused), x @ W^T at 1 and 16 rows,
through F.linear in both frameworks. These read the weight once and do little else, so the
figure is bandwidth: bytes of x, W and the result per second, and its fraction of the
device-to-device copy rate measured in the same run (bytes read plus written per second of a
1 GB copy), the most a kernel streaming memory can reach; "genesis / torch" is PyTorch's time
over Genesis's (above 1: Genesis is faster). Genesis times every candidate by default here
(--tune-limit 0): the gemv configs, cuBLASLt and the short Triton tiles.

Weight gradients (--weight-grad): the backward of a GPT-2 small Linear layer (8192 tokens) for
its weight and bias, in bf16: autograd.grad of F.linear(x, W, b) with respect to (W, b) over a
kept graph, so each timed call is dW = g^T x and db = g summed over the tokens. Genesis computes
db in dW's kernel (cuBLASLt's BGRADB epilogue, or the Triton tile's row sums); PyTorch runs a
product and a column sum.

GPT-2 kernels (--gpt2): GPT-2 small's products in bf16 (8192 tokens; weights 2304 x 768,
768 x 768, 3072 x 768, 768 x 3072 and the 50304 x 768 lm_head): for each weight W the forward
x @ W^T, dX = dY @ W and dW = dY^T @ X, the transposed operands read through strides. Genesis
runs each with every matmul backend in turn (GENESIS_MATMUL_BACKEND: auto, tile: the
pointer-load Triton kernel, hopper: the persistent TMA kernel, cublaslt), each tuned on its
own, beside PyTorch; the ratios are each Genesis kernel's speed over cuBLASLt's through Genesis.

    python benchmarks/matmul.py [--json PATH] [--only TEXT ...] [--tune-limit N]
                                [--decode | --weight-grad | --gpt2]
"""

import argparse
import json
import os
import re
import statistics
import sys
import time

import numpy as np
import torch

import genesis

SQUARES = [1024, 2048, 4096, 8192]
LAYERS = [("GPT-2 fc", 8192, 768, 3072), ("GPT-2 proj", 8192, 3072, 768),
          ("LLaMA-7B up", 4096, 4096, 11008), ("LLaMA-7B down", 4096, 11008, 4096)]
# (name, N, K) of the decode step's products; rows of x per product.
DECODE = [("qkv", 3072, 2048), ("o_proj", 2048, 2048), ("gate_up", 16384, 2048),
          ("down", 2048, 8192), ("lm_head", 32000, 2048)]
DECODE_ROWS = [1, 16]
COPY_BYTES = 1 << 30
MODES = {"bf16": ("bfloat16", False), "fp16": ("float16", False), "tf32": ("float32", True),
         "fp32": ("float32", False)}


def cases():
    """(name, M, K, N, weight_layout) for every shape."""
    out = [(f"square {n}", n, n, n, False) for n in SQUARES]
    out += [(f"{name} {tokens}x{k}->{n}", tokens, k, n, True) for name, tokens, k, n in LAYERS]
    return out


# 512 MB takes about 130 us to zero on an H100/H200: longer than either library's host time per
# matmul call, so no host gap lands between the events (64 MB, 16 us, was shorter than Genesis's
# host path and charged it to products of a few tens of us).
FLUSH_BYTES = 512 << 20


class Lib:
    def __init__(self, module):
        self.module = module
        self.is_torch = module is torch
        self._flush = module.empty(FLUSH_BYTES // 4, dtype=module.int32, device="cuda")

    def upload(self, array):
        if self.is_torch:
            return torch.from_numpy(array).cuda()
        return genesis.tensor(array, device="cuda")

    def cast(self, t, dtype):
        return t.to(getattr(self.module, dtype))

    def set_tf32(self, on):
        if self.is_torch:
            torch.backends.cuda.matmul.allow_tf32 = on
        else:
            genesis.backends.cuda.matmul.allow_tf32 = on

    def synchronize(self):
        self.module.cuda.synchronize()

    def event(self):
        return self.module.cuda.Event(enable_timing=True)

    def flush(self):
        self._flush.zero_()


def ms_per_call(lib, fn, budget_ms=150.0):
    """Median device time of one call (ms): each call queued behind a FLUSH_BYTES zeroing (the
    GPU stays busy while the host enqueues it, so events time the kernel, and L2 starts cold), as
    many calls as fit in about `budget_ms` (5 to 100), after a warm-up call."""
    fn()
    lib.synchronize()

    def timed(reps):
        pairs = [(lib.event(), lib.event()) for _ in range(reps)]
        for start, end in pairs:
            lib.flush()
            start.record()
            fn()
            end.record()
        lib.synchronize()
        return statistics.median(start.elapsed_time(end) for start, end in pairs)

    first = timed(1)
    return timed(max(5, min(100, int(budget_ms / max(first, 1e-3)))))


def genesis_path(fn):
    """What Genesis ran for `fn`: "cublaslt", gemv's kernel ("gemv fma|dot BKxBN[ split]
    wN") or the Triton tile's label."""
    from genesis.cuda.profiler import GPUProfiler
    with GPUProfiler() as prof:
        fn()
    names = list(prof.get_stats())
    if "cublaslt.matmul" in names:
        return "cublaslt"
    gemv = next((n for n in names if "_gemv_kernel" in n), None)
    if gemv is not None:
        meta = dict(re.findall(r"\b(BN|BK|DOT|SPLIT)=(\w+)", gemv))
        warps = re.search(r"\bw(\d+)\]", gemv)
        return (f"gemv {'dot' if meta.get('DOT') == 'True' else 'fma'} {meta.get('BK')}x"
                f"{meta.get('BN')}{' split' if meta.get('SPLIT') == 'True' else ''}"
                f" w{warps.group(1) if warps else '?'}")
    label = next((n for n in names if "matmul" in n), None)
    if label is None:
        return ",".join(names) or "?"
    tile = dict(re.findall(r"\b(BM|BN|BK|SPLIT_K)=(\d+)", label))
    warps = re.search(r"\bw(\d+)\]", label)
    kind = "hopper" if "_matmul_tma_kernel" in label else "triton"
    split_k = f" split-k {tile['SPLIT_K']}" if tile.get("SPLIT_K", "1") != "1" else ""
    return (f"{kind} {tile.get('BM')}x{tile.get('BN')}x{tile.get('BK')}"
            f" w{warps.group(1) if warps else '?'}{split_k}")


def time_case(lib, fn, row):
    """ms per call of `fn` (ms_per_call); for Genesis, what it ran and the seconds its calls
    took, tuning included, go into `row`."""
    started = time.perf_counter()
    ms = ms_per_call(lib, fn)
    if lib.module is genesis:
        row["genesis_path"] = genesis_path(fn)
        row["genesis_seconds"] = round(time.perf_counter() - started, 2)
    return ms


def run(only):
    libs = {"genesis": Lib(genesis), "torch": Lib(torch)}
    rng = np.random.default_rng(0)
    rows = []
    for name, M, K, N, weight in cases():
        if only and not any(o in name for o in only):
            continue
        a = rng.standard_normal((M, K), dtype=np.float32)
        b = rng.standard_normal((N, K) if weight else (K, N), dtype=np.float32) / np.sqrt(K)
        host = {label: (lib.upload(a), lib.upload(b)) for label, lib in libs.items()}
        for mode, (dtype, tf32) in MODES.items():
            if only and not any(o in name or o == mode for o in only):
                continue
            row = {"case": name, "mode": mode, "M": M, "N": N, "K": K}
            for label, lib in libs.items():
                lib.set_tf32(tf32)
                x, w = (lib.cast(t, dtype) for t in host[label])
                fn = (lambda x=x, w=w: x @ w.t()) if weight else (lambda x=x, w=w: x @ w)
                ms = time_case(lib, fn, row)
                row[f"{label}_tflops"] = round(2 * M * N * K / ms / 1e9, 1)
                del x, w, fn
            row["ratio"] = round(row["genesis_tflops"] / row["torch_tflops"], 3)
            rows.append(row)
            print(f"{name:<28} {mode:<5} genesis {row['genesis_tflops']:>7.1f}  torch "
                  f"{row['torch_tflops']:>7.1f}  ratio {row['ratio']:.3f}  "
                  f"({row['genesis_path']}, {row['genesis_seconds']} s with tuning)", flush=True)
        del host
    for lib in libs.values():
        lib.set_tf32(False)
    return rows


def copy_rate(lib):
    """GB/s of a COPY_BYTES device-to-device copy, bytes read plus written."""
    src = lib.module.empty(COPY_BYTES // 4, dtype=lib.module.int32, device="cuda")
    dst = lib.module.empty_like(src)
    ms = ms_per_call(lib, lambda: dst.copy_(src))
    return 2 * COPY_BYTES / ms / 1e6


def run_decode(only):
    """The decode products beside PyTorch: microseconds, GB/s and its fraction of the copy
    rate per framework, and Genesis's speed relative to PyTorch's."""
    libs = {"genesis": Lib(genesis), "torch": Lib(torch)}
    rate = copy_rate(libs["torch"])
    print(f"device-to-device copy: {rate:.0f} GB/s (read + write)", flush=True)
    rng = np.random.default_rng(0)
    rows = []
    for name, N, K in DECODE:
        for M in DECODE_ROWS:
            case = f"decode {name} {M}x{K}->{N}"
            if only and not any(o in case for o in only):
                continue
            x = rng.standard_normal((M, K), dtype=np.float32)
            w = rng.standard_normal((N, K), dtype=np.float32) / np.sqrt(K)
            nbytes = (N * K + M * K + M * N) * 2
            row = {"case": case, "mode": "bf16", "M": M, "N": N, "K": K, "bytes": nbytes}
            for label, lib in libs.items():
                xd, wd = (lib.cast(lib.upload(t), "bfloat16") for t in (x, w))
                linear = lib.module.nn.functional.linear
                fn = lambda xd=xd, wd=wd, linear=linear: linear(xd, wd)  # noqa: E731
                ms = time_case(lib, fn, row)
                row[f"{label}_us"] = round(ms * 1e3, 2)
                row[f"{label}_gbs"] = round(nbytes / ms / 1e6, 1)
                row[f"{label}_of_copy"] = round(nbytes / ms / 1e6 / rate, 3)
                del xd, wd, fn
            row["ratio"] = round(row["torch_us"] / row["genesis_us"], 3)
            rows.append(row)
            print(f"{case:<30} genesis {row['genesis_us']:>8.2f} us {row['genesis_gbs']:>7.1f} "
                  f"GB/s ({row['genesis_of_copy']:.2f} of copy)  torch {row['torch_us']:>8.2f} "
                  f"us {row['torch_gbs']:>7.1f} GB/s ({row['torch_of_copy']:.2f})  genesis/torch "
                  f"{row['ratio']:.3f}  ({row['genesis_path']}, {row['genesis_seconds']} s with "
                  "tuning)", flush=True)
    return rows, rate


def run_weight_grad(only):
    """dW and db of GPT-2 small's Linear layers beside PyTorch: microseconds per backward and
    Genesis's speed relative to PyTorch's."""
    libs = {"genesis": Lib(genesis), "torch": Lib(torch)}
    rng = np.random.default_rng(0)
    rows = []
    for name, tokens, k, n in LAYERS[:2]:
        case = f"weight grad {name} {tokens}x{k}->{n}"
        if only and not any(o in case for o in only):
            continue
        arrays = [rng.standard_normal(shape, dtype=np.float32)
                  for shape in ((tokens, k), (n, k), (n,), (tokens, n))]
        row = {"case": case, "mode": "bf16", "M": tokens, "N": n, "K": k}
        for label, lib in libs.items():
            x, w, b, g = (lib.cast(lib.upload(a), "bfloat16") for a in arrays)
            w.requires_grad_(True)
            b.requires_grad_(True)
            y = lib.module.nn.functional.linear(x, w, b)
            grad = lib.module.autograd.grad
            fn = lambda y=y, w=w, b=b, g=g, grad=grad: grad(y, (w, b), g, retain_graph=True)  # noqa: E731
            row[f"{label}_us"] = round(time_case(lib, fn, row) * 1e3, 2)
            del x, w, b, g, y, fn
        row["ratio"] = round(row["torch_us"] / row["genesis_us"], 3)
        rows.append(row)
        print(f"{case:<36} genesis {row['genesis_us']:>8.2f} us  torch {row['torch_us']:>8.2f} us"
              f"  genesis/torch {row['ratio']:.3f}  ({row['genesis_path']})", flush=True)
    return rows


# (name, out features, in features) of GPT-2 small's weights; its products run over TOKENS rows.
GPT2_WEIGHTS = [("qkv", 2304, 768), ("attn proj", 768, 768), ("fc", 3072, 768),
                ("mlp proj", 768, 3072), ("lm_head", 50304, 768)]
GPT2_TOKENS = 8192
GPT2_BACKENDS = ("auto", "tile", "hopper", "cublaslt")


def gpt2_products(x, w, dy):
    """(label, M, N, K, product) of a Linear layer's forward and backward products."""
    tokens, k = x.shape
    n = w.shape[0]
    return [("x@W^T", tokens, n, k, lambda: x @ w.t()),
            ("dY@W", tokens, k, n, lambda: dy @ w),
            ("dY^T@X", n, k, tokens, lambda: dy.t() @ x)]


def run_gpt2(only):
    """GPT-2 small's bf16 products: TFLOP/s of Genesis under each matmul backend and of
    PyTorch, and each Genesis kernel's speed over cuBLASLt's."""
    libs = {"genesis": Lib(genesis), "torch": Lib(torch)}
    rng = np.random.default_rng(0)
    rows = []
    saved = os.environ.get("GENESIS_MATMUL_BACKEND")
    for name, n, k in GPT2_WEIGHTS:
        arrays = [rng.standard_normal(shape, dtype=np.float32) / np.sqrt(shape[-1])
                  for shape in ((GPT2_TOKENS, k), (n, k), (GPT2_TOKENS, n))]
        products = {label: gpt2_products(*(lib.cast(lib.upload(a), "bfloat16") for a in arrays))
                    for label, lib in libs.items()}
        for (product, M, N, K, torch_fn), genesis_product in zip(products["torch"],
                                                                 products["genesis"]):
            case = f"gpt2 {name} {product} {M}x{K}->{N}"
            if only and not any(o in case for o in only):
                continue
            row = {"case": case, "mode": "bf16", "M": M, "N": N, "K": K}
            flops = 2 * M * N * K
            row["torch_tflops"] = round(flops / ms_per_call(libs["torch"], torch_fn) / 1e9, 1)
            ms = {}
            for backend in GPT2_BACKENDS:
                os.environ["GENESIS_MATMUL_BACKEND"] = backend
                timing = {}
                ms[backend] = time_case(libs["genesis"], genesis_product[-1], timing)
                row[f"{backend}_tflops"] = round(flops / ms[backend] / 1e9, 1)
                row[f"{backend}_path"] = timing["genesis_path"]
            for backend in ("auto", "tile", "hopper"):
                row[f"{backend}_of_cublaslt"] = round(ms["cublaslt"] / ms[backend], 3)
            rows.append(row)
            print(f"{case:<36} auto {row['auto_tflops']:>6.1f} ({row['auto_path']})  tile "
                  f"{row['tile_tflops']:>6.1f} ({row['tile_of_cublaslt']:.2f})  hopper "
                  f"{row['hopper_tflops']:>6.1f} ({row['hopper_of_cublaslt']:.2f}, "
                  f"{row['hopper_path']})  cublaslt {row['cublaslt_tflops']:>6.1f}  torch "
                  f"{row['torch_tflops']:>6.1f}", flush=True)
        del products
    if saved is None:
        os.environ.pop("GENESIS_MATMUL_BACKEND", None)
    else:
        os.environ["GENESIS_MATMUL_BACKEND"] = saved
    return rows


def gpt2_markdown(rows):
    lines = ["| case | auto TFLOP/s | tile | hopper | cuBLASLt | torch | tile / cuBLASLt "
             "| hopper / cuBLASLt | auto path | hopper path |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---|---|"]
    lines += [f"| {r['case']} | {r['auto_tflops']} | {r['tile_tflops']} | {r['hopper_tflops']} "
              f"| {r['cublaslt_tflops']} | {r['torch_tflops']} | {r['tile_of_cublaslt']} | "
              f"{r['hopper_of_cublaslt']} | {r['auto_path']} | {r['hopper_path']} |"
              for r in rows]
    return "\n".join(lines)


def weight_grad_markdown(rows):
    lines = ["| case | genesis us | torch us | genesis / torch | genesis path |",
             "|---|---:|---:|---:|---|"]
    lines += [f"| {r['case']} | {r['genesis_us']} | {r['torch_us']} | {r['ratio']} | "
              f"{r['genesis_path']} |" for r in rows]
    return "\n".join(lines)


def decode_markdown(rows):
    lines = ["| case | genesis us | genesis GB/s | of copy | torch us | torch GB/s | of copy "
             "| genesis / torch | genesis path |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        lines.append(f"| {r['case']} | {r['genesis_us']} | {r['genesis_gbs']} | "
                     f"{r['genesis_of_copy']} | {r['torch_us']} | {r['torch_gbs']} | "
                     f"{r['torch_of_copy']} | {r['ratio']} | {r['genesis_path']} |")
    return "\n".join(lines)


def markdown(rows):
    lines = ["| case | mode | genesis TFLOP/s | torch TFLOP/s | genesis / torch | genesis path |",
             "|---|---|---:|---:|---:|---|"]
    for r in rows:
        lines.append(f"| {r['case']} | {r['mode']} | {r['genesis_tflops']} | {r['torch_tflops']} "
                     f"| {r['ratio']} | {r['genesis_path']} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the rows here")
    parser.add_argument("--only", nargs="*", default=[], help="cases or modes containing these")
    parser.add_argument("--tune-limit", type=int, default=None,
                        help="Triton configs timed per shape key (0: the whole space; default 4, "
                             "with --decode 0)")
    modes = parser.add_mutually_exclusive_group()
    modes.add_argument("--decode", action="store_true",
                       help="the decode step's products (1 and 16 rows, bf16) instead")
    modes.add_argument("--weight-grad", action="store_true",
                       help="GPT-2 small's Linear weight and bias gradients (bf16) instead")
    modes.add_argument("--gpt2", action="store_true",
                       help="GPT-2 small's forward and backward products (bf16) under each "
                            "Genesis matmul backend instead")
    args = parser.parse_args(argv)
    tune_limit = args.tune_limit if args.tune_limit is not None else 0 if args.decode else 4
    os.environ["GENESIS_MATMUL_TUNE_LIMIT"] = str(tune_limit)
    started = time.perf_counter()
    rate = None
    if args.decode:
        rows, rate = run_decode(args.only)
        table = decode_markdown
    elif args.weight_grad:
        rows, table = run_weight_grad(args.only), weight_grad_markdown
    elif args.gpt2:
        rows, table = run_gpt2(args.only), gpt2_markdown
    else:
        rows, table = run(args.only), markdown
    total = time.perf_counter() - started
    device = genesis.cuda.get_device_name()
    backend = os.environ.get("GENESIS_MATMUL_BACKEND", "auto")
    print(f"\n{device}, torch {torch.__version__}, {total:.0f} s in all; Triton configs timed per "
          f"shape key: {tune_limit or 'all'}; backend {backend}\n")
    print(table(rows))
    if args.json:
        result = {"device": device, "torch": torch.__version__, "seconds": round(total, 1),
                  "tune_limit": tune_limit, "rows": rows}
        if rate is not None:
            result["copy_gbs"] = round(rate, 1)
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
