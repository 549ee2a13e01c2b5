"""The fused training-mode batch norm kernels (kernels/batch_norm.py) against torch's batch norm,
on the CPU, through Triton's interpreter.

Run explicitly: `TRITON_INTERPRET=1 python -m pytest tests/interpret/test_batch_norm_interpret.py`.
The `kernels` fixture registers them as the CPU backend's kernels for the test's duration, so
genesis's F.batch_norm on CPU tensors takes the path the GPU takes, in 16 x 16 tiles and about
eight statistics programs: several channel blocks, splits of the positions merged two at a time
in order, ragged tiles. Values, running statistics and every gradient against torch; a float32 channel
far from zero keeps its variance (no E[x^2] - E[x]^2 cancellation).
"""

import pytest
import torch
import torch.nn.functional as TF
import triton_interpret as ti
from helpers import assert_close, lay_out, make_pair
from nn_compare import compare

import genesis
import genesis.nn.functional as F
from genesis.autograd import gradgradcheck
from genesis.backends.cuda import array_ops
from genesis.backends.cuda.kernels import batch_norm
from genesis.backends.cuda.launch import LaunchCache

DTYPES = [genesis.float32, genesis.float64, genesis.bfloat16, genesis.float16]
# (N, C, *spatial): channel blocks with a ragged last one, splits with ragged tiles, 2-D and 3-D
SHAPES = [(6, 20, 5, 7), (40, 3), (3, 5, 11), (2, 17, 3, 2, 3)]


@pytest.fixture
def kernels(monkeypatch):
    if not ti.ENABLED:
        pytest.skip("set TRITON_INTERPRET=1 to run")
    monkeypatch.setattr(batch_norm, "BM", 16)
    monkeypatch.setattr(batch_norm, "BC", 16)
    monkeypatch.setattr(batch_norm, "SPLIT_PROGRAMS", 8)
    monkeypatch.setattr(batch_norm, "_FINISH_SPLITS", 2)
    monkeypatch.setattr(batch_norm, "_plans", LaunchCache())
    ti.on_cpu(monkeypatch, batch_norm, "batch_norm_train_fwd", "batch_norm_train_bwd")
    with ti.device(batch_norm, array_ops):
        yield


def _batch_norm(lib, affine):
    functional = F if lib is genesis else TF

    def fn(x, *params):
        weight, bias = params if affine else (None, None)
        return functional.batch_norm(x, None, None, weight, bias, training=True)
    return fn


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("affine", [True, False])
def test_matches_torch(kernels, shape, dtype, affine, rng):
    """Values and the input, weight and bias gradients."""
    shapes = [shape] + ([(shape[1],), (shape[1],)] if affine else [])
    compare(_batch_norm(genesis, affine), _batch_norm(torch, affine), shapes, dtype, "cpu", rng)


@pytest.mark.parametrize("layout", ["channels_last", "transposed", "stepped"])
@pytest.mark.parametrize("dtype", [genesis.float32, genesis.bfloat16], ids=str)
def test_layouts(kernels, layout, dtype, rng):
    """Inputs read where they lie (channels-last) or copied first, outputs and gradients laid
    out as the input where it is channels-last."""
    shape = SHAPES[0]
    compare(_batch_norm(genesis, False), _batch_norm(torch, False), [shape], dtype, "cpu", rng,
            layout=layout)
    x = lay_out(make_pair(shape, dtype, rng=rng)[0], layout).requires_grad_()
    y = F.batch_norm(x, None, None, training=True)
    y.backward(genesis.ones(shape, dtype=dtype))
    if layout == "channels_last":
        assert y.stride() == x.stride() and x.grad.stride() == x.stride()


def test_running_statistics(kernels, rng):
    """The module's running mean and unbiased running variance move as torch's."""
    g, t = make_pair((8, 6, 4, 5), rng=rng)
    g_bn, t_bn = genesis.nn.BatchNorm2d(6), torch.nn.BatchNorm2d(6)
    for _ in range(2):
        assert_close(g_bn(g), t_bn(t))
    assert_close(g_bn.running_mean, t_bn.running_mean)
    assert_close(g_bn.running_var, t_bn.running_var)


def test_far_from_zero(kernels, rng):
    """A float32 channel near 1000 with unit spread: the tiles' two-pass deviations and Chan's
    merge keep the variance to float32's precision."""
    values = 1000 + rng.standard_normal((64, 2, 9))
    g, t = genesis.tensor(values, dtype=genesis.float32), torch.tensor(values, dtype=torch.float32)
    assert_close(F.batch_norm(g, None, None, training=True),
                 TF.batch_norm(t.double(), None, None, training=True).float())


def test_gradients_of_gradients(kernels, rng):
    """A backward that builds a graph runs the composed form: second derivatives as torch's."""
    inputs = [genesis.tensor(rng.uniform(-1, 1, s), dtype=genesis.float64, requires_grad=True)
              for s in ((4, 3, 2), (3,), (3,))]
    assert gradgradcheck(lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
                         inputs)


def test_parameter_gradients_only_where_asked(kernels, rng):
    """A weight that needs no gradient gets none; the bias's comes in its own dtype."""
    (x, tx), (w, tw) = (make_pair(s, rng=rng, requires_grad=True) for s in ((5, 4, 3), (4,)))
    b, tb = make_pair((4,), genesis.float64, rng=rng, requires_grad=True)
    w.requires_grad_(False)
    tw.requires_grad_(False)
    F.batch_norm(x, None, None, w, b, training=True).sum().backward()
    TF.batch_norm(tx, None, None, tw, tb.float(), training=True).sum().backward()
    assert w.grad is None and b.grad.dtype is genesis.float64
    assert_close(x.grad, tx.grad)
    assert_close(b.grad, tb.grad)
