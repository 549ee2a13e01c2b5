"""Which precision float32 products take on the GPU, on the simulated CUDA device
(benchmarks/simulated_cuda.py), run by test_tf32_precision_sim.py in a process of its own (the
simulation replaces the driver layer).

Every launch of a kernel with a PRECISION meta-parameter (matmul, gemv, the convolutions) is
recorded. As in PyTorch: convolutions and the recurrent layers (forward and backward: input
projection, hidden products, LSTM projection, weight gradients) run TF32 exactly when
genesis.backends.cudnn.allow_tf32 is set, whatever genesis.backends.cuda.matmul.allow_tf32
says; a recurrent layer's backward keeps the precision of its forward; F.linear and the cells
follow the matmul flag alone. Prints "all checks passed" at the end.
"""

import os
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

import simulated_cuda  # noqa: E402

os.environ["GENESIS_MATMUL_AUTOTUNE"] = "0"
os.environ["GENESIS_MATMUL_BACKEND"] = "triton"  # products are launches of Genesis's kernels

simulated_cuda.install()

import genesis  # noqa: E402
import genesis.nn as nn  # noqa: E402
import genesis.nn.functional as F  # noqa: E402
from genesis.backends.cuda import launch  # noqa: E402
from genesis.nn.functional import recurrent_scan  # noqa: E402

PRECISIONS = []
_launch = launch.Launch.__call__


def _recording_launch(self, stream, *args):
    if "PRECISION" in self.meta:
        PRECISIONS.append(self.meta["PRECISION"])
    return _launch(self, stream, *args)


launch.Launch.__call__ = _recording_launch


def precisions(fn, cudnn_tf32, matmul_tf32):
    """The set of precisions `fn`'s launches took under the two flags."""
    genesis.backends.cuda.matmul.allow_tf32 = matmul_tf32
    genesis.backends.cudnn.allow_tf32 = cudnn_tf32
    PRECISIONS.clear()
    fn()
    assert PRECISIONS, "no product was launched"
    return set(PRECISIONS)


def check(name, fn, follows):
    """`fn` runs TF32 exactly when the flag `follows` ("cudnn" or "matmul") is set, the other
    flag set the opposite way."""
    for on in (True, False):
        flags = (on, not on) if follows == "cudnn" else (not on, on)
        got = precisions(fn, *flags)
        want = {"tf32" if on else "ieee"}
        assert got == want, f"{name}: cudnn.allow_tf32={flags[0]}, matmul.allow_tf32=" \
                            f"{flags[1]}: {sorted(got)}, expected {sorted(want)}"
    print(f"{name}: follows {follows}.allow_tf32")


def forward_backward(module, *shapes):
    inputs = [genesis.randn(*s, device="cuda", requires_grad=True) for s in shapes]
    out = module(*inputs)
    out = out[0] if isinstance(out, tuple) else out
    out.sum().backward()


def recurrent_layers():
    """(name, module, input shape) of each layer kind. With the sequence path off (and RNN
    always) a layer runs its steps as autograd ops."""
    return [("RNN", nn.RNN(8, 16, 2, bidirectional=True), (5, 3, 8)),
            ("LSTM", nn.LSTM(8, 16, 2, proj_size=4), (5, 3, 8)),
            ("LSTM", nn.LSTM(8, 16, 1, bidirectional=True), (5, 3, 8)),
            ("GRU", nn.GRU(8, 16, 2), (5, 3, 8))]


def check_recurrent_layers():
    for enabled in (True, False):
        recurrent_scan.ENABLED = enabled
        for name, layer, shape in recurrent_layers():
            layer = layer.to("cuda")
            label = f"{name}, sequence path {'on' if enabled else 'off'}"
            check(label, lambda: forward_backward(layer, shape), "cudnn")
    recurrent_scan.ENABLED = True


def check_backward_keeps_the_forward_precision():
    """The flag changed between forward and backward does not change the backward's products
    (as PyTorch's cuDNN RNN, which fixes them when it runs forward)."""
    for path in ("sequence", "per_step"):
        recurrent_scan.ENABLED = path == "sequence"
        layer = nn.LSTM(8, 16, 2).to("cuda")
        x = genesis.randn(5, 3, 8, device="cuda", requires_grad=True)
        for on in (True, False):
            genesis.backends.cudnn.allow_tf32 = on
            out, _ = layer(x)
            genesis.backends.cudnn.allow_tf32 = not on
            PRECISIONS.clear()
            out.sum().backward()
            assert set(PRECISIONS) == {"tf32" if on else "ieee"}, (path, on, PRECISIONS)
    recurrent_scan.ENABLED = True
    print("recurrent backward: the forward's precision")


def check_convolutions():
    convs = [("Conv2d", nn.Conv2d(4, 8, 3, padding=1), (2, 4, 6, 6)),
             ("ConvTranspose2d", nn.ConvTranspose2d(4, 8, 2, stride=2), (2, 4, 5, 5)),
             ("Conv1d", nn.Conv1d(4, 8, 3, stride=2), (2, 4, 9))]
    for name, layer, shape in convs:
        layer = layer.to("cuda")
        check(name, lambda: forward_backward(layer, shape), "cudnn")


def check_cudnn_flags_context():
    layer = nn.Conv2d(4, 8, 3).to("cuda")
    genesis.backends.cudnn.allow_tf32 = True
    with genesis.backends.cudnn.flags(allow_tf32=False):
        assert precisions(lambda: forward_backward(layer, (2, 4, 6, 6)), False, False) \
            == {"ieee"}
    assert genesis.backends.cudnn.allow_tf32 is True
    print("cudnn.flags(allow_tf32=False) holds within its block, and restores")


def check_matmul_followers():
    linear = nn.Linear(8, 16).to("cuda")
    check("Linear", lambda: forward_backward(linear, (3, 8)), "matmul")
    check("F.linear", lambda: F.linear(genesis.randn(64, 8, device="cuda"),
                                       genesis.randn(32, 8, device="cuda")), "matmul")
    for name, cell in (("LSTMCell", nn.LSTMCell(8, 16)), ("GRUCell", nn.GRUCell(8, 16)),
                       ("RNNCell", nn.RNNCell(8, 16))):
        cell = cell.to("cuda")
        check(name, lambda: forward_backward(cell, (3, 8)), "matmul")


def main():
    check_recurrent_layers()
    check_backward_keeps_the_forward_precision()
    check_convolutions()
    check_cudnn_flags_context()
    check_matmul_followers()
    print("all checks passed")


if __name__ == "__main__":
    main()
