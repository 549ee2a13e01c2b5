"""Convolutions, bilinear upsampling and max pooling on the GPU, Genesis beside PyTorch (cuDNN)
in one run.

Conv2d at ResNet-50's layer shapes (batch 32: the 7x7 stride-2 stem, 3x3 and 1x1 layers of each
stage, the stride-2 3x3 and 1x1) and U-Net's (batch 8, 3x3 at 256^2 to 32^2), ConvTranspose2d
at U-Net's 2x2 stride-2 upsamplers, all bf16 without bias (those in FP32_CONV in float32 too),
in NCHW and channels-last inputs (PyTorch's channels_last: the same strides in both
frameworks); F.interpolate bilinear (scale 2, 32x64x128x128) and MaxPool2d 3x3 stride 2 padding
1 at ResNet's stem (32x64x112x112), bf16 and float32, NCHW and channels-last. float32
convolutions run TF32 products in both frameworks, their default (cudnn.allow_tf32; --no-tf32
turns it off in both); the header says which. Each case times the forward and the forward +
backward (input and weight gradients) by CUDA events behind an L2 flush (ops.device_ms) and
reports ms, TFLOP/s for convolutions (2 N OH OW C_out C_in/g R S per pass, 3 passes with
backward) and the torch/Genesis ratio of times (speed relative to PyTorch: 1.0 is parity, above
is faster). The "graphed" columns time Genesis's convolution module made with
genesis.cuda.make_graphed_callables (forward and backward replayed as CUDA graphs): the same
kernels without the host time of the eager call, which small layers' kernels do not cover.

--kernels times each convolution kernel alone (forward, input gradient, weight gradient, on
channels-last operands, so neither side copies a layout; the transposed convolutions' too)
beside cuDNN's, which torch.ops.aten.convolution_backward runs with one output asked for; bf16,
or float32 with --dtype fp32.
--tiles compares block shapes: the Hopper TMA kernels' (each candidate's best of three
interleaved rounds) on the layers they take, and the implicit GEMM's tiles on the rest.

    python benchmarks/conv.py [--json PATH] [--reps N] [--only TEXT ...] [--cudnn-benchmark]
                              [--no-tf32]
    python benchmarks/conv.py --kernels [--json PATH] [--only TEXT ...] [--dtype bf16|fp32]
    python benchmarks/conv.py --tiles [--only TEXT ...] [--dtype bf16|fp32]
"""

import argparse
import itertools
import json

import numpy as np
import ops
import torch
from triton.runtime.errors import OutOfResources

import genesis
from genesis.backends.cuda.kernels import conv as conv_kernels
from genesis.backends.cuda.kernels import conv_hopper

# (name, batch, C_in, H, W, C_out, kernel, stride, padding)
CONV = [
    ("resnet stem 7x7/2", 32, 3, 224, 224, 64, 7, 2, 3),
    ("resnet 56^2 64->64 3x3", 32, 64, 56, 56, 64, 3, 1, 1),
    ("resnet 56^2 256->64 1x1", 32, 256, 56, 56, 64, 1, 1, 0),
    ("resnet 56^2 64->256 1x1", 32, 64, 56, 56, 256, 1, 1, 0),
    ("resnet 56^2 128->128 3x3/2", 32, 128, 56, 56, 128, 3, 2, 1),
    ("resnet 56^2 256->512 1x1/2", 32, 256, 56, 56, 512, 1, 2, 0),
    ("resnet 28^2 128->128 3x3", 32, 128, 28, 28, 128, 3, 1, 1),
    ("resnet 14^2 256->256 3x3", 32, 256, 14, 14, 256, 3, 1, 1),
    ("resnet 7^2 512->512 3x3", 32, 512, 7, 7, 512, 3, 1, 1),
    ("unet 256^2 64->64 3x3", 8, 64, 256, 256, 64, 3, 1, 1),
    ("unet 128^2 128->128 3x3", 8, 128, 128, 128, 128, 3, 1, 1),
    ("unet 32^2 512->512 3x3", 8, 512, 32, 32, 512, 3, 1, 1),
]
# (name, batch, C_in, H, W, C_out): 2x2 stride-2 upsampling
CONV_TRANSPOSE = [
    ("unet up 16^2 1024->512", 8, 1024, 16, 16, 512),
    ("unet up 32^2 512->256", 8, 512, 32, 32, 256),
    ("unet up 128^2 128->64", 8, 128, 128, 128, 64),
]
# Convolutions also timed in float32.
FP32_CONV = ("resnet 28^2 128->128 3x3", "unet up 32^2 512->256")
INTERPOLATE = (32, 64, 128, 128)
MAXPOOL = (32, 64, 112, 112)
DTYPES = {"bf16": (genesis.bfloat16, torch.bfloat16), "fp32": (genesis.float32, torch.float32)}


def _input(lib, rng, shape, dtype, channels_last):
    """A (N, C, H, W) tensor requiring grad, channels-last strides when asked."""
    n, c, h, w = shape
    if channels_last:
        array = rng.standard_normal((n, h, w, c), dtype=np.float32)
        t = lib.tensor(array).to(dtype).permute(0, 3, 1, 2)
    else:
        t = lib.tensor(rng.standard_normal(shape, dtype=np.float32)).to(dtype)
    return t.detach().requires_grad_(True)


def _step(lib, rng, make, x_shape, dtype, channels_last, backward, graphed=False):
    """A closure running `make(module)(x)` (and its backward) on fresh inputs; `graphed`:
    Genesis's module made with make_graphed_callables (its forward and backward replayed as
    CUDA graphs)."""
    x = _input(lib, rng, x_shape, dtype, channels_last)
    fn = make(lib.module)
    if hasattr(fn, "to"):
        fn = fn.to(device="cuda", dtype=dtype)
    if graphed:
        fn = genesis.cuda.make_graphed_callables(fn, (x,))
    out = fn(x)
    grad = lib.tensor(rng.standard_normal(tuple(out.shape), dtype=np.float32)).to(dtype)

    def step():
        y = fn(x)
        if backward:
            y.backward(grad)
    return step


def _conv_dtypes(name):
    return ("bf16", "fp32") if name in FP32_CONV else ("bf16",)


def cases(only):
    """(name, kind, make(module) -> callable, input shape, dtype name, channels_last, flops)."""
    rows = []
    for name, n, c, h, w, k, r, s, p in CONV:
        o = (h + 2 * p - r) // s + 1
        flops = 2 * n * o * o * k * c * r * r
        for cl, dtype in itertools.product((False, True), _conv_dtypes(name)):
            rows.append((name, "conv2d", lambda m, c=c, k=k, r=r, s=s, p=p: m.nn.Conv2d(
                c, k, r, s, p, bias=False), (n, c, h, w), dtype, cl, flops))
    for name, n, c, h, w, k in CONV_TRANSPOSE:
        flops = 2 * n * h * w * k * c * 4
        for cl, dtype in itertools.product((False, True), _conv_dtypes(name)):
            rows.append((name, "conv_transpose2d", lambda m, c=c, k=k: m.nn.ConvTranspose2d(
                c, k, 2, 2, bias=False), (n, c, h, w), dtype, cl, flops))
    for dtype in DTYPES:
        for cl in (False, True):
            rows.append(("bilinear x2", "interpolate", lambda m: lambda x: m.nn.functional.
                         interpolate(x, scale_factor=2, mode="bilinear"), INTERPOLATE, dtype, cl,
                         0))
            rows.append(("maxpool 3x3/2", "max_pool2d", lambda m: m.nn.MaxPool2d(3, 2, 1),
                         MAXPOOL, dtype, cl, 0))
    return [r for r in rows if not only or any(t in f"{r[0]} {r[1]}" for t in only)]


def run(reps, only):
    libs = {"genesis": ops.Lib(genesis), "torch": ops.Lib(torch)}
    rng = np.random.default_rng()
    rows = []
    for name, kind, make, shape, dtype_name, cl, flops in cases(only):
        for backward in (False, True):
            ms = {lib_name: ops.device_ms(lib, _step(lib, rng, make, shape, dtype, cl, backward),
                                          reps)
                  for (lib_name, lib), dtype in zip(libs.items(), DTYPES[dtype_name])}
            if flops:
                ms["graphed"] = ops.device_ms(libs["genesis"], _step(
                    libs["genesis"], rng, make, shape, DTYPES[dtype_name][0], cl, backward,
                    graphed=True), reps)
            total = flops * (3 if backward else 1)
            rows.append({"name": name, "op": kind, "shape": list(shape), "dtype": dtype_name,
                         "layout": "channels_last" if cl else "nchw",
                         "pass": "fwd+bwd" if backward else "fwd",
                         "genesis_ms": ms["genesis"], "torch_ms": ms["torch"],
                         "genesis_tflops": total / ms["genesis"] / 1e9 if flops else None,
                         "torch_tflops": total / ms["torch"] / 1e9 if flops else None,
                         "speed_vs_torch": ms["torch"] / ms["genesis"],
                         "graphed_ms": ms.get("graphed"),
                         "graphed_speed": ms["torch"] / ms["graphed"] if flops else None})
    return rows


def _kernel_operands(rng, shapes, dtype):
    """Channels-last arrays of `shapes` ({name: (N, H, W, C)-ordered shape}) in `dtype` (a key
    of DTYPES), the same values in both frameworks: {name: (genesis array, torch tensor)},
    each (N, C, H, W)."""
    g_dtype, t_dtype = DTYPES[dtype]
    operands = {}
    for name, shape in shapes.items():
        array = rng.standard_normal(shape, dtype=np.float32)
        g = genesis.tensor(array, device="cuda").to(g_dtype).permute(0, 3, 1, 2)
        t = torch.from_numpy(array).cuda().to(t_dtype).permute(0, 3, 1, 2)
        operands[name] = (g._data, t)
    return operands


def _cudnn_gradients(tdy, tx, tw, stride, padding, transposed):
    """cuDNN's input-gradient and weight-gradient calls of a (transposed) convolution:
    torch.ops.aten.convolution_backward with one output asked for."""
    def backward(mask):
        return lambda: torch.ops.aten.convolution_backward(
            tdy, tx, tw, None, [stride] * 2, [padding] * 2, [1, 1], transposed, [0, 0], 1,
            mask)
    return backward([True, False, False]), backward([False, True, False])


def kernel_calls(rng, n, c, h, w, k, r, s, p, dtype="bf16"):
    """{pass: (Genesis's kernel call, cuDNN's)} of a convolution's forward, input gradient and
    weight gradient, each alone on channels-last operands (no layout copies on either side),
    the weight gradient channels-last as the weight is."""
    o = (h + 2 * p - r) // s + 1
    ops_ = _kernel_operands(rng, {"x": (n, h, w, c), "w": (k, r, r, c), "dy": (n, o, o, k)},
                            dtype)
    (x, tx), (wt, tw), (dy, tdy) = ops_["x"], ops_["w"], ops_["dy"]
    geometry = ((s, s), (p, p), (1, 1), 1)
    input_grad, weight_grad = _cudnn_gradients(tdy, tx, tw, s, p, transposed=False)
    return {
        "forward": (lambda: conv_kernels.conv2d_igemm(x, wt, None, *geometry),
                    lambda: torch.nn.functional.conv2d(tx, tw, None, s, p)),
        "input gradient": (lambda: conv_kernels.conv_transpose2d_igemm(
            dy, wt, None, *geometry, (h, w)), input_grad),
        "weight gradient": (lambda: conv_kernels.conv2d_igemm_weight_grad(
            x, dy, (k, c, r, r), *geometry, True), weight_grad)}


def transpose_kernel_calls(rng, n, c, h, w, k, dtype="bf16"):
    """kernel_calls of a 2x2 stride-2 ConvTranspose2d of C -> K channels: its forward (by
    output phases), input gradient (a stride-2 convolution) and weight gradient (a stride-2
    convolution's, the roles of input and output gradient swapped)."""
    ops_ = _kernel_operands(rng, {"x": (n, h, w, c), "w": (c, 2, 2, k),
                                  "dy": (n, 2 * h, 2 * w, k)}, dtype)
    (x, tx), (wt, tw), (dy, tdy) = ops_["x"], ops_["w"], ops_["dy"]
    geometry = ((2, 2), (0, 0), (1, 1), 1)
    input_grad, weight_grad = _cudnn_gradients(tdy, tx, tw, 2, 0, transposed=True)
    return {
        "forward": (lambda: conv_kernels.conv_transpose2d_igemm(
            x, wt, None, *geometry, (2 * h, 2 * w)),
                    lambda: torch.nn.functional.conv_transpose2d(tx, tw, None, 2)),
        "input gradient": (lambda: conv_kernels.conv2d_igemm(dy, wt, None, *geometry),
                           input_grad),
        "weight gradient": (lambda: conv_kernels.conv2d_igemm_weight_grad(
            dy, x, (c, k, 2, 2), *geometry, True), weight_grad)}


def run_kernels(reps, only, dtype="bf16"):
    """Each convolution kernel alone beside cuDNN's, channels-last operands of `dtype` (fp32:
    TF32 products on both sides, or IEEE float32 with --no-tf32)."""
    libs, rng = (ops.Lib(genesis), ops.Lib(torch)), np.random.default_rng()
    layers = [(name, kernel_calls, (n, c, h, w, k, r, s, p))
              for name, n, c, h, w, k, r, s, p in CONV]
    layers += [(name, transpose_kernel_calls, (n, c, h, w, k))
               for name, n, c, h, w, k in CONV_TRANSPOSE]
    rows = []
    for name, calls_of, shape in layers:
        if only and not any(t in name for t in only):
            continue
        for pass_, calls in calls_of(rng, *shape, dtype).items():
            g_ms, t_ms = (ops.device_ms(lib, call, reps) for lib, call in zip(libs, calls))
            rows.append({"name": name, "pass": pass_, "genesis_ms": g_ms, "torch_ms": t_ms,
                         "speed_vs_torch": t_ms / g_ms})
            print(f"{name:<28}{pass_:>16}{g_ms:>10.4f}{t_ms:>10.4f}{t_ms / g_ms:>8.2f}",
                  flush=True)
    return rows


def _fastest(candidates, time_one, rounds):
    """(ms, candidate) pairs, fastest first: each candidate's best of `rounds` timings, the
    rounds interleaved so that a busy moment of a shared GPU does not fall on one candidate;
    candidates that do not run (more shared memory than the GPU has) are left out."""
    best = {}
    for _ in range(rounds):
        for i, candidate in enumerate(candidates):
            if best.get(i, 0.0) is None:
                continue
            try:
                ms = time_one(candidate)
            except OutOfResources as e:  # more shared memory than the GPU has
                print(f"  {candidate}: does not run: {str(e).splitlines()[0][:80]}")
                best[i] = None
                continue
            best[i] = min(best.get(i, ms), ms)
    return sorted(((ms, candidates[i]) for i, ms in best.items() if ms is not None),
                  key=lambda pair: pair[0])


def _forward_blocks(n, h, w, c, k, itemsize):
    """The TMA forward's configs to compare (also the output-phase kernel's, over the phases'
    half-size pixels): 64-, 128- and 256-pixel blocks (the least padded shape of each), 64 or
    128 output channels, 128-byte channel steps, 3 to 5 stages."""
    for area, bn, stages in itertools.product((64, 128, 256), (64, 128), (3, 4, 5)):
        if bn <= max(64, k):
            bi, bh, bw = conv_hopper.pixel_block(n, h, w, area)
            yield {"BI": bi, "BH": bh, "BW": bw, "BN": bn, "BK": min(128 // itemsize, c),
                   "num_warps": 8 if bn == 128 else 4, "num_stages": stages}


def _weight_grad_blocks(n, h, w, c, k, itemsize):
    """(config, splits) of the TMA weight gradient to compare: 128- and 256-byte pixel steps
    (64 and 128 pixels of a 16-bit type), 64 or 128 rows and columns, one tap a unit or (64 x
    64 tiles) three, 1 to 8 splits of the pixel steps."""
    for area, bm, bn, row_taps, splits in itertools.product(
            (128 // itemsize, 256 // itemsize), (64, 128), (64, 128), (1, 3), (1, 2, 3, 4, 6, 8)):
        if bm <= max(64, k) and bn <= max(64, c) and (row_taps == 1 or bm * bn <= 64 * 64):
            bi, bh, bw = conv_hopper.pixel_block(n, h, w, area)
            stages = conv_hopper.pipeline_stages(area * (bm + row_taps * bn) * itemsize)
            yield ({"BI": bi, "BH": bh, "BW": bw, "BM": bm, "BN": bn, "ROW_TAPS": row_taps,
                    "num_warps": 8 if bm == 128 else 4, "num_stages": stages}, splits)


def _tma_sweeps(rng, only, dtype):
    """(layer, pass, Genesis's and cuDNN's calls, "forward" or "weight gradient" blocks, the
    blocks' pixel grid (n, h, w, c, k)) of every TMA kernel on the benchmark's layers: the
    forward, the weight gradient, and the stride-2 input gradients and transposed forwards,
    which go by output phases (half-size pixel grids)."""
    for name, n, c, h, w, k, r, s, p in CONV:
        if c < conv_hopper.MIN_IN_CHANNELS or (only and not any(t in name for t in only)):
            continue
        calls = kernel_calls(rng, n, c, h, w, k, r, s, p, dtype)
        o = (h + 2 * p - r) // s + 1
        yield name, "forward", calls["forward"], "forward", (n, o, o, c, k)
        yield name, "weight gradient", calls["weight gradient"], "weight gradient", (n, o, o, c, k)
        if s == 2:
            yield (name, "input gradient", calls["input gradient"], "forward",
                   (n, h // 2, w // 2, k, c))
    for name, n, c, h, w, k in CONV_TRANSPOSE:
        if not only or any(t in name for t in only):
            calls = transpose_kernel_calls(rng, n, c, h, w, k, dtype)
            yield name, "forward", calls["forward"], "forward", (n, h, w, c, k)


def sweep_tma_blocks(reps, only, dtype="bf16", rounds=3, shown=6):
    """The Hopper TMA kernels' blocks on the layers they take (all but the stem; see
    _tma_sweeps), fastest first beside the default choice and cuDNN, in `dtype` (fp32: TF32)."""
    rng, lib, torch_lib = np.random.default_rng(), ops.Lib(genesis), ops.Lib(torch)
    itemsize = DTYPES[dtype][0].itemsize
    defaults = conv_hopper.forward_config, conv_hopper.weight_grad_config, conv_hopper._splits

    def restore():
        conv_hopper.forward_config, conv_hopper.weight_grad_config, conv_hopper._splits = \
            defaults
        conv_kernels._conv_plans.clear()
        conv_kernels._wgrad_plans.clear()

    for name, pass_, (call, cudnn_call), kind, grid in _tma_sweeps(rng, only, dtype):
        def timed(choice, call=call, kind=kind):
            if kind == "forward":
                conv_hopper.forward_config = lambda *args, **kwargs: choice
            else:
                conv_hopper.weight_grad_config = lambda *args: choice[0]
                conv_hopper._splits = lambda *args: choice[1]
            conv_kernels._conv_plans.clear()
            conv_kernels._wgrad_plans.clear()
            return ops.device_ms(lib, call, reps)

        blocks = _forward_blocks if kind == "forward" else _weight_grad_blocks
        cudnn = ops.device_ms(torch_lib, cudnn_call, reps)
        restore()
        chosen = ops.device_ms(lib, call, reps)
        print(f"{name} {pass_}: cuDNN {cudnn:.4f} ms, default {chosen:.4f} "
              f"({cudnn / chosen:.2f})", flush=True)
        for ms, candidate in _fastest(list(blocks(*grid, itemsize)), timed, rounds)[:shown]:
            print(f"  {ms:.4f} ({cudnn / ms:.2f}) {candidate}", flush=True)
    restore()


# The implicit GEMM's forward/transposed tiles to compare: (BM, BN, BK, warps, stages).
TILES = [(128, 128, 64, 8, 3), (128, 128, 64, 8, 4), (128, 64, 64, 4, 3), (128, 64, 64, 4, 4),
         (64, 64, 64, 4, 4), (128, 256, 64, 8, 3), (256, 128, 64, 8, 3), (64, 128, 64, 4, 3),
         (128, 128, 32, 8, 4)]


def sweep_tiles(reps, only):
    """Forward and forward+backward ms of Genesis's bf16 convolutions that the implicit GEMM
    runs (transposed, the stem) under each tile (the weight gradient's as chosen)."""
    chosen, rng, lib = conv_kernels._tiles, np.random.default_rng(), ops.Lib(genesis)
    for name, kind, make, shape, dtype_name, cl, _ in cases(only):
        takes_tma = kind == "conv2d" and shape[1] >= conv_hopper.MIN_IN_CHANNELS
        if not kind.startswith("conv") or dtype_name != "bf16" or takes_tma:
            continue
        dtype = DTYPES[dtype_name][0]
        for tile in TILES:
            conv_kernels._tiles = lambda *args, tile=tile: tile
            conv_kernels._conv_plans.clear()
            label = f"{name:<28}{'cl' if cl else 'nchw':<6}{str(tile):<24}"
            try:
                f_ms, s_ms = (ops.device_ms(lib, _step(lib, rng, make, shape, dtype, cl, b), reps)
                              for b in (False, True))
            except Exception as e:  # e.g. more shared memory than the GPU has (OutOfResources)
                print(f"{label}does not run: {str(e).splitlines()[0][:80]}")
                continue
            print(f"{label}forward {f_ms:.3f} ms, both {s_ms:.3f} ms")
    conv_kernels._tiles = chosen
    conv_kernels._conv_plans.clear()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the rows here")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--only", nargs="*", default=[], help="cases whose name contains one")
    parser.add_argument("--cudnn-benchmark", action="store_true",
                        help="let cuDNN time its algorithms (torch.backends.cudnn.benchmark)")
    parser.add_argument("--tiles", action="store_true",
                        help="sweep the TMA kernels' blocks and the implicit GEMM's tiles")
    parser.add_argument("--kernels", action="store_true",
                        help="each convolution kernel alone beside cuDNN's")
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="bf16",
                        help="the operands' dtype with --kernels and --tiles")
    parser.add_argument("--no-tf32", action="store_true",
                        help="float32 convolutions in IEEE float32 in both (cudnn.allow_tf32 off)")
    args = parser.parse_args()
    torch.backends.cudnn.benchmark = args.cudnn_benchmark
    precision = ops.cudnn_tf32(not args.no_tf32)
    if args.tiles:
        sweep_tma_blocks(args.reps, args.only, args.dtype)
        sweep_tiles(args.reps, args.only)
        return
    if args.kernels:
        print(precision)
        rows = run_kernels(args.reps, args.only, args.dtype)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(rows, f, indent=1)
        return
    rows = run(args.reps, args.only)
    print(precision)
    print(f"{'case':<28}{'layout':>14}{'dtype':>6}{'pass':>9}{'genesis ms':>12}{'torch ms':>10}"
          f"{'genesis TF/s':>14}{'torch TF/s':>12}{'speed vs torch':>16}{'graphed ms':>12}"
          f"{'speed':>7}")
    for r in rows:
        tf = (f"{r['genesis_tflops']:>14.1f}{r['torch_tflops']:>12.1f}"
              if r["genesis_tflops"] else f"{'':>14}{'':>12}")
        graphed = (f"{r['graphed_ms']:>12.3f}{r['graphed_speed']:>7.2f}"
                   if r["graphed_ms"] else "")
        print(f"{r['name']:<28}{r['layout']:>14}{r['dtype']:>6}{r['pass']:>9}"
              f"{r['genesis_ms']:>12.3f}{r['torch_ms']:>10.3f}{tf}{r['speed_vs_torch']:>16.2f}"
              f"{graphed}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
