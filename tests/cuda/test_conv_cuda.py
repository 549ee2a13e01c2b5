"""F.conv1d/conv2d/conv_transpose2d on "cuda" through the implicit-GEMM kernels, against torch
on the CPU in float64 on the same values: ResNet-like and U-Net-like shapes (stem, 3x3, 1x1,
stride 2, grouped, depthwise, 2x2 upsampling, an audio conv1d), NCHW, channels-last and sliced
inputs, forward and the input, weight and bias gradients, each dtype; TF32, determinism and
gradients of gradients.

Float32 results may differ from float64 by float32's rounding of the sums (long ones for the
weight gradient: N*OH*OW terms), bounded here by 2**-20 of the sum of the terms' magnitudes
(the same convolution of |x|, |w| and |grad|); half types are within 1 ulp of the float64
result rounded once, or within that bound."""

import ml_dtypes
import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from helpers import from_torch, skip_no_cuda, ulp_distance

import genesis
import genesis.nn.functional as F

pytestmark = [skip_no_cuda]

TORCH = {genesis.float32: torch.float32, genesis.float16: torch.float16,
         genesis.bfloat16: torch.bfloat16}
NUMPY = {genesis.float32: np.float32, genesis.float16: np.float16,
         genesis.bfloat16: ml_dtypes.bfloat16}
DTYPES = list(TORCH)

# (x shape, weight shape, stride, padding, dilation, groups)
CONV2D = {
    "stem 7x7/2": ((2, 3, 64, 64), (64, 3, 7, 7), 2, 3, 1, 1),
    "3x3 64": ((4, 64, 56, 56), (64, 64, 3, 3), 1, 1, 1, 1),
    "1x1 256->64": ((4, 256, 14, 14), (64, 256, 1, 1), 1, 0, 1, 1),
    "3x3/2 128": ((4, 128, 28, 28), (128, 128, 3, 3), 2, 1, 1, 1),
    "1x1/2 downsample": ((4, 64, 28, 28), (128, 64, 1, 1), 2, 0, 1, 1),
    "grouped 32": ((2, 128, 14, 14), (128, 4, 3, 3), 1, 1, 1, 32),
    "depthwise": ((2, 96, 17, 17), (96, 1, 3, 3), 1, 2, 2, 96),
    "7^2 512": ((3, 512, 7, 7), (512, 512, 3, 3), 1, 1, 1, 1),
}


@pytest.fixture(autouse=True)
def _strict(monkeypatch):
    """IEEE float32: convolutions follow cudnn.allow_tf32 (on by default), as torch's do."""
    monkeypatch.setattr(genesis.backends.cudnn, "allow_tf32", False)


def _tensors(shapes, dtype, layout="nchw"):
    """(genesis cuda leaves, float64 torch leaves) of the same values; channels-last, or
    every other element of a twice-as-wide buffer, for the first (the input)."""
    pairs = []
    for i, shape in enumerate(shapes):
        t = torch.randn(shape).to(TORCH[dtype])
        g = from_torch(t, "cuda")
        if i == 0 and layout == "channels_last":
            g = from_torch(t.permute(0, 2, 3, 1).contiguous(), "cuda").permute(0, 3, 1, 2)
        elif i == 0 and layout == "sliced":
            g = from_torch(torch.stack([t, t], -1).flatten(-2), "cuda")[..., ::2]
        pairs.append((g.requires_grad_(), t.double().requires_grad_()))
    return pairs


def _check(actual, expected, bound, dtype, tf32=False):
    """`actual` (genesis) against the float64 `expected`, within float32's rounding of sums
    whose terms' magnitudes add up to `bound` (see the module docstring); with `tf32`, within
    TF32's rounding of each product's operands (2**-9 of `bound`)."""
    got = actual.detach().float().cpu().numpy().astype(np.float64)
    exp, slack = expected.detach().numpy(), 2.0 ** -20 * bound.detach().numpy()
    assert got.shape == exp.shape
    if dtype is genesis.float32 and tf32:
        bad = np.abs(got - exp) > 2.0 ** -9 * bound.detach().numpy()
    elif dtype is genesis.float32:
        bad = np.abs(got - exp) > 1.3e-6 * np.abs(exp) + slack
    else:
        half = NUMPY[dtype]
        ulps = ulp_distance(got.astype(half), exp.astype(half))
        bad = (ulps > 1) & (np.abs(got - exp) > slack)
    assert not bad.any(), f"{bad.sum()} of {bad.size} off, e.g. {got[bad][:4]} vs {exp[bad][:4]}"


def _graph_names(out, depth=2):
    """The Functions ("_ImplicitConvBackward0") of the backward nodes within `depth` steps of
    `out`, whatever PyTorch name they show."""
    names, nodes = [], [out.grad_fn]
    for _ in range(depth):
        names += [n._function.__name__ + "Backward0" for n in nodes if hasattr(n, "_function")]
        nodes = [edge[0] for node in nodes for edge in node.next_functions
                 if edge is not None and edge[0] is not None]
    return names


def _compare(fn, torch_fn, shapes, dtype, layout="nchw", path="_ImplicitConvBackward0",
             tf32=False):
    """Forward and every gradient of `fn` against `torch_fn`, and the sums of magnitudes
    (float32 `tf32`: TF32 products)."""
    pairs = _tensors(shapes, dtype, layout)
    out = fn(*(g for g, _ in pairs))
    assert path in _graph_names(out)
    expected = torch_fn(*(t for _, t in pairs))
    grad = torch.randn(expected.shape).to(TORCH[dtype])
    out.backward(from_torch(grad, "cuda"))
    expected.backward(grad.double())
    magnitudes = [t.detach().abs().requires_grad_() for _, t in pairs]
    bound = torch_fn(*magnitudes)
    bound.backward(grad.double().abs())
    _check(out, expected, bound, dtype, tf32)
    for (g, t), m in zip(pairs, magnitudes):
        _check(g.grad, t.grad, m.grad, dtype, tf32)


@pytest.mark.parametrize("layout", ["nchw", "channels_last", "sliced"])
@pytest.mark.parametrize("name", CONV2D)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_conv2d(dtype, name, layout):
    x_shape, w_shape, stride, padding, dilation, groups = CONV2D[name]
    args = (stride, padding, dilation, groups)
    _compare(lambda x, w, b: F.conv2d(x, w, b, *args),
             lambda x, w, b: TF.conv2d(x, w, b, *args),
             (x_shape, w_shape, (w_shape[0],)), dtype, layout)


@pytest.mark.parametrize("case", [((3, 48, 19, 21), (64, 48, 3, 3), 1, 1),
                                  ((2, 128, 16, 24), (128, 128, 3, 3), 1, 1),
                                  ((2, 64, 9, 10), (96, 64, 1, 1), 0, 1),
                                  ((2, 32, 12, 16), (64, 32, 5, 5), 2, 1),
                                  ((3, 64, 14, 30), (128, 64, 3, 3), 1, 2),
                                  ((2, 128, 16, 32), (64, 128, 1, 1), 0, 2)], ids=str)
@pytest.mark.parametrize("layout", ["nchw", "channels_last"])
@pytest.mark.parametrize("dtype", [genesis.bfloat16, genesis.float16, genesis.float32], ids=str)
def test_hopper_tma_kernels(monkeypatch, dtype, layout, case):
    """On an sm_90 GPU, stride-1 and stride-2 half-type and TF32 convolutions run
    kernels/conv_hopper.py's TMA kernels (forward, input gradient: the flipped kernel at
    stride 1, by output phases at stride 2; weight gradient) with the results of the others:
    ragged pixel blocks, channel tails, NCHW outputs where their rows are 16-byte multiples."""
    from genesis.backends.cuda.kernels import conv, conv_hopper
    if not conv_hopper.is_hopper(0):
        pytest.skip("the TMA kernels run on sm_90")
    tf32 = dtype is genesis.float32  # the TMA kernels run float32 as TF32 products only
    monkeypatch.setattr(genesis.backends.cudnn, "allow_tf32", tf32)
    ran = []
    for cls in (conv_hopper.ForwardPlan, conv_hopper.PhasePlan, conv_hopper.WeightGradPlan):
        monkeypatch.setattr(cls, "run", lambda self, *a, run=cls.run: ran.append(self) or run(
            self, *a))
    monkeypatch.setattr(conv, "_conv_plans", conv.LaunchCache())
    monkeypatch.setattr(conv, "_wgrad_plans", conv.LaunchCache())
    x_shape, w_shape, padding, stride = case
    _compare(lambda x, w, b: F.conv2d(x, w, b, stride, padding),
             lambda x, w, b: TF.conv2d(x, w, b, stride, padding),
             (x_shape, w_shape, (w_shape[0],)), dtype, layout, tf32=tf32)
    # outputs are laid out as x: NCHW ones take TMA where their rows are 16-byte multiples (a
    # stride-2 input gradient is written channels-last and copied); the input gradient's out
    # channels (x's) must be 64 or more, by phases a multiple of 64
    out_w = (x_shape[3] + 2 * padding - w_shape[3]) // stride + 1
    forward = layout == "channels_last" or out_w * dtype.itemsize % 16 == 0
    if stride == 1:
        input_grad = ((layout == "channels_last" or x_shape[3] * dtype.itemsize % 16 == 0)
                      and x_shape[1] >= conv_hopper.MIN_OUT_CHANNELS)
    else:
        input_grad = x_shape[1] % conv_hopper.MIN_OUT_CHANNELS == 0
    assert len(ran) == forward + input_grad + 1


@pytest.mark.parametrize("case", [((3, 3, 64, 60), (64, 3, 7, 7), 3, 2),
                                  ((2, 3, 33, 40), (64, 3, 3, 3), 1, 1),
                                  ((2, 1, 1, 4003), (128, 1, 1, 10), 0, (1, 5))], ids=str)
@pytest.mark.parametrize("layout", ["nchw", "channels_last"])
@pytest.mark.parametrize("dtype", [genesis.bfloat16, genesis.float16, genesis.float32], ids=str)
def test_few_channel_weight_gradient(monkeypatch, dtype, layout, case):
    """On an sm_90 GPU, the weight gradient of an RGB stem (7x7/2), a 3x3 RGB layer and a
    1-channel strided front end runs kernels/conv_few_channels.py's unfolded TMA kernel, with
    the others' results."""
    from genesis.backends.cuda.kernels import conv, conv_few_channels, conv_hopper
    if not conv_hopper.is_hopper(0):
        pytest.skip("the TMA kernels run on sm_90")
    tf32 = dtype is genesis.float32
    monkeypatch.setattr(genesis.backends.cudnn, "allow_tf32", tf32)
    ran = []
    cls = conv_few_channels.WeightGradPlan
    monkeypatch.setattr(cls, "run", lambda self, *a, run=cls.run: ran.append(self) or run(
        self, *a))
    monkeypatch.setattr(conv, "_wgrad_plans", conv.LaunchCache())
    x_shape, w_shape, padding, stride = case
    _compare(lambda x, w, b: F.conv2d(x, w, b, stride, padding),
             lambda x, w, b: TF.conv2d(x, w, b, stride, padding),
             (x_shape, w_shape, (w_shape[0],)), dtype, layout, tf32=tf32)
    assert len(ran) == 1


@pytest.mark.parametrize("case", [((3, 256, 14, 15), (64, 256, 1, 1)),
                                  ((2, 64, 9, 8), (96, 64, 1, 1)),
                                  ((2, 64, 8, 8), (64, 64, 1, 1))], ids=str)
@pytest.mark.parametrize("backend", ["auto", "cublaslt"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_pointwise_nchw_runs_as_a_matmul(monkeypatch, dtype, backend, case):
    """A 1x1 convolution of an NCHW input, forward and input gradient, is one batched matmul
    over its NCHW views (no copy to channels-last), with the others' results; the weight
    gradient keeps its kernel. Its result, pixels x channels, is column-major: cuBLASLt (the
    input gradient's, which has no bias) computes its transpose, square ones too."""
    from genesis.backends.cuda.kernels import conv
    from genesis.backends.cuda.kernels.matmul import matmul_arrays
    monkeypatch.setenv("GENESIS_MATMUL_BACKEND", backend)
    products = []
    monkeypatch.setattr(conv, "matmul_arrays", lambda *a, **k: products.append(a) or
                        matmul_arrays(*a, **k))
    x_shape, w_shape = case
    _compare(lambda x, w, b: F.conv2d(x, w, b), lambda x, w, b: TF.conv2d(x, w, b),
             (x_shape, w_shape, (w_shape[0],)), dtype)
    assert len(products) == 2


def test_channels_last_in_channels_last_out():
    (x, _), (w, _) = _tensors(((2, 32, 9, 9), (16, 32, 3, 3)), genesis.bfloat16,
                              "channels_last")
    out = F.conv2d(x, w, padding=1)
    assert out.stride() == (81 * 16, 1, 9 * 16, 16)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_conv1d_audio(dtype):
    _compare(lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=2),
             lambda x, w, b: TF.conv1d(x, w, b, stride=2, padding=2),
             ((4, 80, 1001), (128, 80, 5), (128,)), dtype)


@pytest.mark.parametrize("case", [((4, 256, 16, 16), (256, 128, 2, 2), 2, 0, 0, 1),
                                  ((2, 64, 15, 15), (64, 32, 3, 3), 2, 1, 1, 1),
                                  ((2, 64, 12, 12), (64, 16, 4, 4), 2, 1, 0, 2)], ids=str)
@pytest.mark.parametrize("layout", ["nchw", "channels_last"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_conv_transpose2d(dtype, layout, case):
    x_shape, w_shape, stride, padding, output_padding, groups = case
    args = (stride, padding, output_padding, groups)
    _compare(lambda x, w, b: F.conv_transpose2d(x, w, b, *args),
             lambda x, w, b: TF.conv_transpose2d(x, w, b, *args),
             (x_shape, w_shape, (w_shape[1] * groups,)), dtype, layout,
             "_ImplicitConvTransposeBackward0")


@pytest.mark.parametrize("case", [((4, 256, 16, 16), (256, 128, 2, 2), 0),
                                  ((2, 128, 9, 12), (128, 64, 4, 4), 1)], ids=str)
@pytest.mark.parametrize("layout", ["nchw", "channels_last"])
@pytest.mark.parametrize("dtype", [genesis.bfloat16, genesis.float16], ids=str)
def test_conv_transpose2d_by_phases(monkeypatch, dtype, layout, case):
    """On an sm_90 GPU, a stride-2 ConvTranspose2d with an even kernel runs
    kernels/conv_hopper.py's phase kernel with the results of the others."""
    from genesis.backends.cuda.kernels import conv, conv_hopper
    if not conv_hopper.is_hopper(0):
        pytest.skip("the TMA kernels run on sm_90")
    ran, run = [], conv_hopper.PhasePlan.run
    monkeypatch.setattr(conv_hopper.PhasePlan, "run",
                        lambda self, *a: ran.append(self) or run(self, *a))
    monkeypatch.setattr(conv, "_conv_plans", conv.LaunchCache())
    x_shape, w_shape, padding = case
    _compare(lambda x, w, b: F.conv_transpose2d(x, w, b, 2, padding),
             lambda x, w, b: TF.conv_transpose2d(x, w, b, 2, padding),
             (x_shape, w_shape, (w_shape[1],)), dtype, layout, "_ImplicitConvTransposeBackward0")
    assert len(ran) == 1


def test_tf32():
    """With cudnn.allow_tf32, float32 runs TF32 products: within TF32's rounding (2**-11
    relative per operand) of the float64 result."""
    genesis.backends.cudnn.allow_tf32 = True
    (x, tx), (w, tw) = _tensors(((4, 64, 28, 28), (64, 64, 3, 3)), genesis.float32)
    out = F.conv2d(x, w, padding=1).detach().cpu().numpy()
    expected = TF.conv2d(tx, tw, padding=1).detach().numpy()
    bound = TF.conv2d(tx.abs(), tw.abs(), padding=1).detach().numpy()
    assert (np.abs(out - expected) <= 2.0 ** -9 * bound).all()


def test_weight_gradient_is_deterministic():
    (x, _), (w, _) = _tensors(((8, 64, 56, 56), (64, 64, 3, 3)), genesis.bfloat16)
    grad = genesis.randn(8, 64, 56, 56, device="cuda").to(genesis.bfloat16)
    grads = []
    for _ in range(2):
        w.grad = None
        F.conv2d(x, w, padding=1).backward(grad)
        grads.append(w.grad.float().cpu().numpy())
    np.testing.assert_array_equal(*grads)


def test_gradients_of_gradients():
    (x, tx), (w, tw) = _tensors(((2, 8, 11, 10), (12, 4, 3, 3)), genesis.float32)
    results = []
    for lib, fn, a, b in ((genesis, F.conv2d, x, w), (torch, TF.conv2d, tx, tw)):
        out = fn(a, b, None, 2, 1, 1, 2)
        dx, dw = lib.autograd.grad(out.square().sum(), (a, b), create_graph=True)
        x.grad = w.grad = tx.grad = tw.grad = None
        (dx.square().sum() + dw.square().sum()).backward()
        results.append([t.grad.detach().float().cpu().numpy() for t in (a, b)])
    for actual, expected in zip(*results):
        np.testing.assert_allclose(actual, expected, rtol=1e-4,
                                   atol=1e-5 * np.abs(expected).max())
