"""The meta device: tensors with a shape, dtype and strides and no data, compared with torch's
meta tensors (shapes, dtypes, strides and errors), and the ways scripts use them: building a
model without memory and materialising it, and reasoning about shapes."""

import math

import pytest
import torch

import genesis


def meta(lib, *shape, dtype="float32"):
    return lib.empty(*shape, dtype=getattr(lib, dtype), device="meta")


def dtype_name(dtype):
    return repr(dtype).split(".")[-1]


def assert_like(g, t):
    """Genesis's meta result `g` has torch's `t`'s shape, dtype and strides (tuples item by
    item)."""
    if isinstance(t, (tuple, list)):
        assert len(g) == len(t)
        for gi, ti in zip(g, t):
            assert_like(gi, ti)
        return
    assert g.is_meta and g.device == genesis.device("meta")
    assert tuple(g.shape) == tuple(t.shape)
    assert dtype_name(g.dtype) == dtype_name(t.dtype)
    assert g.stride() == t.stride()


def compare(fn):
    """`fn(lib)` run with torch and with genesis gives results alike."""
    assert_like(fn(genesis), fn(torch))


def nn_of(lib):
    return lib.nn


def functional(lib):
    return lib.nn.functional


ELEMENTWISE = {
    "add_broadcast": lambda L: meta(L, 4, 1, 3) + meta(L, 5, 1),
    "mul_promote_int_float": lambda L: meta(L, 2, 3, dtype="int32") * meta(L, 3),
    "div_int": lambda L: meta(L, 2, 3, dtype="int64") / 2,
    "sub_scalar_keeps_half": lambda L: meta(L, 2, 3, dtype="float16") - 1.5,
    "pow_double": lambda L: meta(L, 3, dtype="float64") ** meta(L, 2, 1),
    "compare": lambda L: meta(L, 2, 3) < meta(L, 3, dtype="int64"),
    "logical": lambda L: L.logical_and(meta(L, 2, 3), meta(L, 2, 3, dtype="bool")),
    "bitwise": lambda L: meta(L, 4, dtype="int16") & meta(L, 1, dtype="uint8"),
    "sqrt_int": lambda L: L.sqrt(meta(L, 2, 3, dtype="int32")),
    "isnan": lambda L: L.isnan(meta(L, 5)),
    "exp_transposed": lambda L: L.exp(meta(L, 3, 4).t()),
    "add_transposed_layouts": lambda L: meta(L, 3, 4).t() + meta(L, 4, 3),
    "where": lambda L: L.where(meta(L, 2, 1, dtype="bool"), meta(L, 3), 0.0),
    "clamp": lambda L: meta(L, 2, 3).clamp(min=0),
    "lerp": lambda L: L.lerp(meta(L, 2, 3), meta(L, 3), 0.5),
    "addcmul": lambda L: L.addcmul(meta(L, 2, 3), meta(L, 3), meta(L, 2, 1), value=2),
    "relu": lambda L: functional(L).relu(meta(L, 2, 3)),
    "gelu": lambda L: functional(L).gelu(meta(L, 2, 3, dtype="bfloat16")),
    "leaky_relu": lambda L: functional(L).leaky_relu(meta(L, 2, 3), 0.1),
    "special_bessel": lambda L: L.special.bessel_j0(meta(L, 4)),
    "cast": lambda L: meta(L, 2, 3).to(L.float16),
    "cast_permuted": lambda L: meta(L, 2, 3, 4).permute(2, 0, 1).to(L.float64),
    "inplace": lambda L: meta(L, 2, 3).t().mul_(2),
}

REDUCTIONS = {
    "sum_all": lambda L: meta(L, 2, 3).sum(),
    "sum_int": lambda L: meta(L, 2, 3, dtype="int32").sum(1),
    "sum_dims_keepdim": lambda L: meta(L, 2, 3, 4).sum((0, 2), keepdim=True),
    "mean_neg_dim": lambda L: meta(L, 2, 3, 4).mean(-1),
    "prod_bool": lambda L: meta(L, 2, 3, dtype="bool").prod(0),
    "amax": lambda L: meta(L, 2, 3).amax(1, keepdim=True),
    "max_dim": lambda L: tuple(meta(L, 2, 3).max(1)),
    "argmax_all": lambda L: meta(L, 2, 3).argmax(),
    "argmin_keepdim": lambda L: meta(L, 2, 3).argmin(0, keepdim=True),
    "any": lambda L: meta(L, 2, 3).any(1),
    "var": lambda L: meta(L, 2, 3).var(1, keepdim=True),
    "std_mean": lambda L: L.std_mean(meta(L, 4, 5), dim=0),
    "norm": lambda L: L.linalg.vector_norm(meta(L, 2, 3), dim=1),
    "logsumexp": lambda L: L.logsumexp(meta(L, 2, 3), 1),
    "count_nonzero": lambda L: L.count_nonzero(meta(L, 2, 3), 0),
    "median": lambda L: meta(L, 2, 3).median(),
    "median_dim": lambda L: tuple(meta(L, 2, 3).median(1)),
    "cumsum_int": lambda L: meta(L, 2, 3, dtype="int32").cumsum(1),
    "softmax": lambda L: functional(L).softmax(meta(L, 2, 3), dim=1),
    "log_softmax_half": lambda L: functional(L).log_softmax(meta(L, 2, 3), 1, dtype=L.float64),
    "sort": lambda L: tuple(meta(L, 4, 5).sort(1)),
    "topk": lambda L: tuple(meta(L, 4, 5).topk(2)),
}

PRODUCTS = {
    "matmul_2d": lambda L: meta(L, 2, 3) @ meta(L, 3, 4),
    "matmul_vector": lambda L: meta(L, 3) @ meta(L, 5, 3, 4),
    "matmul_batch_broadcast": lambda L: meta(L, 7, 1, 2, 3) @ meta(L, 5, 3, 4),
    "matmul_matrix_vector": lambda L: meta(L, 2, 3) @ meta(L, 3),
    "linear": lambda L: functional(L).linear(meta(L, 8, 5, 3), meta(L, 4, 3), meta(L, 4)),
    "bmm": lambda L: L.bmm(meta(L, 2, 3, 4), meta(L, 2, 4, 5)),
    "conv2d": lambda L: functional(L).conv2d(meta(L, 2, 3, 9, 9), meta(L, 8, 3, 3, 3),
                                             stride=2, padding=1),
    "conv2d_groups_dilation": lambda L: functional(L).conv2d(
        meta(L, 1, 4, 10, 12), meta(L, 6, 2, 3, 3), groups=2, dilation=2),
    "conv1d": lambda L: functional(L).conv1d(meta(L, 2, 3, 16), meta(L, 5, 3, 5), padding="same"),
    "conv_transpose2d": lambda L: functional(L).conv_transpose2d(
        meta(L, 2, 4, 5, 5), meta(L, 4, 3, 3, 3), stride=2, output_padding=1),
    "max_pool2d": lambda L: functional(L).max_pool2d(meta(L, 2, 3, 9, 9), 3, 2),
    "avg_pool2d": lambda L: functional(L).avg_pool2d(meta(L, 2, 3, 8, 8), 2),
    "adaptive_avg_pool2d": lambda L: functional(L).adaptive_avg_pool2d(meta(L, 2, 3, 7, 7), 1),
}

SHAPES = {
    "view": lambda L: meta(L, 2, 3, 4).view(6, 4),
    "reshape_copy": lambda L: meta(L, 2, 3, 4).transpose(0, 1).reshape(-1),
    "permute": lambda L: meta(L, 2, 3, 4).permute(2, 0, 1),
    "expand": lambda L: meta(L, 3, 1).expand(2, 3, 5),
    "slice_step": lambda L: meta(L, 10, 6)[2:9:3, 1:],
    "select": lambda L: meta(L, 4, 5, 6)[:, 2],
    "unsqueeze_flatten": lambda L: meta(L, 2, 3).unsqueeze(1).flatten(1),
    "contiguous": lambda L: meta(L, 2, 3, 4).permute(2, 0, 1).contiguous(),
    "chunk": lambda L: meta(L, 7, 2).chunk(3),
    "split": lambda L: meta(L, 7, 2).split([3, 4]),
    "cat": lambda L: L.cat([meta(L, 2, 3), meta(L, 4, 3)]),
    "cat_promotes": lambda L: L.cat([meta(L, 2, 3, dtype="int32"), meta(L, 2, 3)], dim=1),
    "stack": lambda L: L.stack([meta(L, 2, 3), meta(L, 2, 3)], dim=1),
    "flip": lambda L: meta(L, 2, 3).flip(0),
    "tril": lambda L: meta(L, 3, 3).tril(),
    "repeat": lambda L: meta(L, 2, 3).repeat(2, 1, 2),
    "pad": lambda L: functional(L).pad(meta(L, 2, 3), (1, 2)),
    "index_tensor": lambda L: meta(L, 5, 6)[meta(L, 2, 3, dtype="int64")],
    "index_two_tensors": lambda L: meta(L, 5, 6, 7)[meta(L, 4, dtype="int64"),
                                                      meta(L, 4, dtype="int64")],
    "index_select": lambda L: meta(L, 5, 6).index_select(0, meta(L, 3, dtype="int64")),
    "gather": lambda L: meta(L, 5, 6).gather(1, meta(L, 5, 2, dtype="int64")),
    "embedding": lambda L: functional(L).embedding(meta(L, 2, 7, dtype="int64"),
                                                   meta(L, 10, 4)),
    "one_hot_free_take": lambda L: L.take_along_dim(meta(L, 4, 5), meta(L, 4, 1, dtype="int64"),
                                                    dim=1),
    "scatter_": lambda L: meta(L, 5, 6).scatter_(1, meta(L, 5, 2, dtype="int64"), 1.0),
    "index_put_": lambda L: meta(L, 5, 6).index_put_((meta(L, 3, dtype="int64"),),
                                                    meta(L, 6)),
}

LAYERS = {
    "layer_norm": lambda L: functional(L).layer_norm(meta(L, 2, 5, 8), (8,)),
    "batch_norm": lambda L: functional(L).batch_norm(meta(L, 4, 3, 5, 5), meta(L, 3), meta(L, 3),
                                                     training=False),
    "group_norm": lambda L: functional(L).group_norm(meta(L, 2, 4, 5), 2),
    "attention": lambda L: functional(L).scaled_dot_product_attention(
        meta(L, 2, 4, 6, 8), meta(L, 2, 4, 10, 8), meta(L, 2, 4, 10, 16)),
    "attention_causal": lambda L: functional(L).scaled_dot_product_attention(
        meta(L, 2, 4, 6, 8), meta(L, 2, 4, 6, 8), meta(L, 2, 4, 6, 8), is_causal=True),
    "cross_entropy": lambda L: functional(L).cross_entropy(meta(L, 4, 10),
                                                           meta(L, 4, dtype="int64")),
    "cross_entropy_none": lambda L: functional(L).cross_entropy(
        meta(L, 4, 10), meta(L, 4, dtype="int64"), reduction="none"),
    "mse_loss": lambda L: functional(L).mse_loss(meta(L, 4, 3), meta(L, 4, 3)),
    "nll_loss": lambda L: functional(L).nll_loss(meta(L, 4, 10), meta(L, 4, dtype="int64")),
    "bce_with_logits": lambda L: functional(L).binary_cross_entropy_with_logits(
        meta(L, 4, 3), meta(L, 4, 3)),
    "dropout": lambda L: functional(L).dropout(meta(L, 4, 3), 0.5),
}


def linalg(lib):
    return lib.linalg


def _factored(lib, n=4, batch=(2,)):
    """ldl_factor's (LD, pivots) of a meta (batch, n, n) matrix."""
    return linalg(lib).ldl_factor(meta(lib, *batch, n, n))


LINALG = {
    "det": lambda L: linalg(L).det(meta(L, 4, 4)),
    "det_batched": lambda L: linalg(L).det(meta(L, 2, 3, 4, 4, dtype="float64")),
    "slogdet": lambda L: tuple(linalg(L).slogdet(meta(L, 2, 4, 4))),
    "inv": lambda L: linalg(L).inv(meta(L, 4, 4)),
    "inv_ex_batched": lambda L: tuple(linalg(L).inv_ex(meta(L, 2, 3, 4, 4))),
    "solve": lambda L: linalg(L).solve(meta(L, 4, 4), meta(L, 4, 2)),
    "solve_vector": lambda L: linalg(L).solve(meta(L, 4, 4), meta(L, 4)),
    "solve_broadcast": lambda L: linalg(L).solve(meta(L, 3, 4, 4), meta(L, 4, 3)),
    "solve_right": lambda L: linalg(L).solve(meta(L, 2, 4, 4), meta(L, 2, 3, 4), left=False),
    "solve_ex": lambda L: tuple(linalg(L).solve_ex(meta(L, 2, 4, 4), meta(L, 2, 4, 2))),
    "solve_triangular": lambda L: linalg(L).solve_triangular(
        meta(L, 2, 4, 4), meta(L, 2, 4, 3), upper=True),
    "solve_triangular_unit": lambda L: linalg(L).solve_triangular(
        meta(L, 4, 4), meta(L, 4, 3), upper=False, unitriangular=True),
    "cholesky": lambda L: linalg(L).cholesky(meta(L, 4, 4)),
    "cholesky_upper": lambda L: linalg(L).cholesky(meta(L, 2, 4, 4), upper=True),
    "cholesky_ex": lambda L: tuple(linalg(L).cholesky_ex(meta(L, 2, 4, 4, dtype="float64"))),
    "qr_tall": lambda L: tuple(linalg(L).qr(meta(L, 5, 3))),
    "qr_wide_batched": lambda L: tuple(linalg(L).qr(meta(L, 2, 3, 5))),
    "qr_complete": lambda L: tuple(linalg(L).qr(meta(L, 2, 5, 3), mode="complete")),
    "qr_r": lambda L: tuple(linalg(L).qr(meta(L, 2, 5, 3), mode="r")),
    "svd": lambda L: tuple(linalg(L).svd(meta(L, 2, 5, 3))),
    "svd_wide": lambda L: tuple(linalg(L).svd(meta(L, 3, 5))),
    "svd_reduced": lambda L: tuple(linalg(L).svd(meta(L, 2, 5, 3), full_matrices=False)),
    "svdvals": lambda L: linalg(L).svdvals(meta(L, 2, 3, 5, dtype="float64")),
    "eigh": lambda L: tuple(linalg(L).eigh(meta(L, 2, 4, 4))),
    "eigh_upper": lambda L: tuple(linalg(L).eigh(meta(L, 4, 4), UPLO="U")),
    "eigvalsh": lambda L: linalg(L).eigvalsh(meta(L, 2, 4, 4)),
    "lu": lambda L: tuple(linalg(L).lu(meta(L, 2, 5, 3))),
    "lu_square": lambda L: tuple(linalg(L).lu(meta(L, 4, 4, dtype="float64"))),
    "lu_solve": lambda L: linalg(L).lu_solve(*linalg(L).lu_factor(meta(L, 2, 4, 4)),
                                             meta(L, 2, 4, 3)),
    "lu_unpack": lambda L: tuple(L.lu_unpack(*linalg(L).lu_factor(meta(L, 5, 3)))),
    "ldl_factor": lambda L: tuple(_factored(L)),
    "ldl_factor_ex": lambda L: tuple(linalg(L).ldl_factor_ex(meta(L, 4, 4))),
    "ldl_solve": lambda L: linalg(L).ldl_solve(*_factored(L), meta(L, 2, 4, 2)),
}


def _params(table):
    return pytest.mark.parametrize("name", sorted(table))


@_params(ELEMENTWISE)
def test_elementwise(name):
    compare(ELEMENTWISE[name])


@_params(REDUCTIONS)
def test_reduction(name):
    compare(REDUCTIONS[name])


@_params(PRODUCTS)
def test_products_convolutions_pooling(name):
    compare(PRODUCTS[name])


@_params(SHAPES)
def test_views_shapes_indexing(name):
    compare(SHAPES[name])


@_params(LAYERS)
def test_normalization_attention_losses(name):
    compare(LAYERS[name])


@_params(LINALG)
def test_linalg(name):
    compare(LINALG[name])


def test_conv_keeps_a_channels_last_layout_as_on_the_cpu():
    """A channels-last input gives a channels-last output, as torch's CPU kernel lays it out
    (torch's meta kernel, unlike its CPU one, lays it out row-major)."""
    def run(lib, device):
        x = lib.empty(2, 3, 8, 8, device=device).to(memory_format=lib.channels_last)
        return lib.nn.functional.conv2d(x, lib.empty(4, 3, 3, 3, device=device))
    out = run(genesis, "meta")
    assert out.is_meta and out.shape == (2, 4, 6, 6)
    assert out.stride() == run(torch, "cpu").stride()


def test_factories_views_and_moves_make_meta_tensors():
    for lib in (torch, genesis):
        x = lib.empty(2, 3, device="meta")
        assert x.is_meta and not lib.empty(2).is_meta
        assert x.device == lib.device("meta") and str(x.device) == "meta"
        assert x.data_ptr() == 0 and x.get_device() == -1
    compare(lambda L: L.zeros(2, 3, device="meta", dtype=L.int16))
    compare(lambda L: L.arange(5, device="meta"))
    compare(lambda L: L.randn(4, 5, device="meta"))
    compare(lambda L: L.tensor([[1, 2, 3]], device="meta"))
    compare(lambda L: L.empty(3, 4).t().to("meta"))
    compare(lambda L: L.empty(2, 3, device="meta").new_empty((4,)))
    compare(lambda L: L.empty(2, 3, 4, 5, device="meta", memory_format=L.channels_last))
    compare(lambda L: L.empty_like(meta(L, 2, 3).t()))
    compare(lambda L: meta(L, 2, 3).normal_().uniform_().bernoulli_(0.5))


def test_a_huge_meta_tensor_allocates_nothing():
    n = 10 ** 12
    x = genesis.empty(n, device="meta")
    assert x.shape == (n,) and x.nbytes == 4 * n
    y = (x.view(10 ** 6, 10 ** 6) @ genesis.randn(10 ** 6, 10 ** 6, device="meta")).exp()
    assert y.shape == (10 ** 6, 10 ** 6)
    assert (y + 1).sum(0).shape == (10 ** 6,)
    conv = genesis.nn.Conv2d(3, 5, 2, device="meta")
    assert conv(genesis.rand(2 ** 10, 3, 2 ** 16, 2 ** 16, device="meta")).shape == \
        (2 ** 10, 5, 2 ** 16 - 1, 2 ** 16 - 1)


@pytest.mark.parametrize("make", [
    lambda L: L.empty(2, 3, device="meta"),
    lambda L: L.empty((), device="meta"),
    lambda L: L.empty(0, device="meta"),
    lambda L: L.empty(2, dtype=L.int64, device="meta"),
    lambda L: L.empty(2, dtype=L.bool, device="meta"),
    lambda L: L.empty(2, 3, device="meta", requires_grad=True),
    lambda L: L.empty(2, 3, device="meta", requires_grad=True) * 2,
])
def test_printing(make):
    assert repr(make(genesis)) == repr(make(torch)).replace("torch.", "genesis.")


ERRORS = {
    "item": lambda L: L.empty(1, device="meta").item(),
    "bool": lambda L: bool(L.empty((), device="meta")),
    "item_many": lambda L: L.empty(2, device="meta").item(),
    "tolist": lambda L: L.empty(2, device="meta").tolist(),
    "numpy": lambda L: L.empty(2, device="meta").numpy(),
    "to_cpu": lambda L: L.empty(2, device="meta").to("cpu"),
    "cpu": lambda L: L.empty(2, device="meta").cpu(),
    "copy_out": lambda L: L.empty(2).copy_(L.empty(2, device="meta")),
    "nonzero": lambda L: L.empty(2, 3, device="meta").nonzero(),
    "mask_index": lambda L: L.empty(2, 3, device="meta")[L.empty(2, 3, device="meta") > 0],
    "masked_select": lambda L: L.empty(4, device="meta").masked_select(
        L.empty(4, dtype=L.bool, device="meta")),
    "unique": lambda L: L.unique(L.empty(4, device="meta")),
    "repeat_interleave": lambda L: L.repeat_interleave(L.empty(3, dtype=L.int64,
                                                               device="meta")),
    "solve_incompatible": lambda L: linalg(L).solve(meta(L, 4, 4), meta(L, 3, 2)),
}


def _error(fn):
    with pytest.raises(Exception) as info:
        fn()
    return info.value


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors(name):
    """Torch's error types; its messages where they do not name its internals."""
    expected, got = _error(lambda: ERRORS[name](torch)), _error(lambda: ERRORS[name](genesis))
    assert type(got) is type(expected)
    if name not in ("masked_select", "repeat_interleave"):
        assert str(got).split(" This implementation")[0] in str(expected)


def test_an_op_without_a_meta_rule_names_itself():
    from genesis.dispatch import kernel
    with pytest.raises(NotImplementedError, match="'amp_unscale_' is not implemented for device "
                                                  "'meta'"):
        kernel("amp_unscale_", "meta")([], None, 1.0)


@pytest.mark.parametrize("norm_type", [2.0, float("inf")])
def test_gradient_clipping_on_meta(norm_type):
    """clip_grad_norm_ over meta gradients gives torch's 0-d meta norm and leaves them meta."""
    norms = []
    for lib in (genesis, torch):
        layer = lib.nn.Linear(3, 2, device="meta")
        layer(lib.empty(4, 3, device="meta")).sum().backward()
        norm = lib.nn.utils.clip_grad_norm_(layer.parameters(), 1.0, norm_type)
        norms.append((tuple(norm.shape), str(norm.dtype).split(".")[-1], norm.is_meta,
                      [p.grad.is_meta for p in layer.parameters()]))
    assert norms[0] == norms[1]


class _Net:
    """A small CNN, built from `lib`'s nn."""

    def __new__(cls, lib):
        nn = lib.nn
        return nn.Sequential(nn.Conv2d(3, 6, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5),
                             nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                             nn.Linear(16 * 5 * 5, 32), nn.ReLU(), nn.Linear(32, 10))


def _shapes_through(lib, model, x):
    """The output shape of every module of `model` on input `x`."""
    shapes = []
    for module in model:
        x = module(x)
        shapes.append((type(module).__name__, tuple(x.shape), dtype_name(x.dtype)))
    return shapes


def test_a_cnn_forward_on_meta_gives_torch_shapes():
    def run(lib):
        with lib.device("meta"):
            model, x = _Net(lib), lib.randn(1024, 3, 32, 32)
        assert all(p.is_meta for p in model.parameters())
        return _shapes_through(lib, model, x)
    assert run(genesis) == run(torch)


def test_a_transformer_layer_forward_on_meta():
    def run(lib):
        with lib.device("meta"):
            layer = lib.nn.TransformerEncoderLayer(64, 4, 128, batch_first=True)
            src = lib.randn(8, 20, 64)
            mask = lib.nn.Transformer.generate_square_subsequent_mask(20)
        out = layer(src, src_mask=mask, is_causal=True)
        out.sum().backward()
        return out, layer.linear1.weight.grad
    compare(run)


def test_an_lstm_forward_on_meta():
    def run(lib):
        lstm = lib.nn.LSTM(10, 20, num_layers=2, batch_first=True, device="meta")
        out, (h, c) = lstm(lib.empty(3, 5, 10, device="meta"))
        return out.contiguous(), h, c
    compare(run)


def test_materialise_with_to_empty_and_init():
    """Built on meta, then given memory on the CPU and initialised: the values torch gives."""
    def run(lib):
        lib.manual_seed(0)
        with lib.device("meta"):
            model = _Net(lib)
        model.to_empty(device="cpu")
        for module in model.modules():
            if hasattr(module, "reset_parameters"):
                module.reset_parameters()
        lib.nn.init.zeros_(model[-1].bias)
        return model
    model, expected = run(genesis), run(torch)
    for (name, value), (_, want) in zip(model.state_dict().items(),
                                        expected.state_dict().items()):
        assert not value.is_meta and tuple(value.shape) == tuple(want.shape), name
    assert model[-1].bias.tolist() == [0.0] * 10
    out = model(genesis.randn(2, 3, 32, 32))
    assert out.shape == (2, 10) and math.isfinite(out.sum().item())


def test_materialise_with_load_state_dict_assign():
    with genesis.device("meta"):
        model = _Net(genesis)
    state = _Net(genesis).state_dict()
    model.load_state_dict(state, assign=True)
    for name, value in model.state_dict().items():
        assert not value.is_meta and value.data_ptr() == state[name].data_ptr(), name
    assert isinstance(model[0].weight, genesis.nn.Parameter) and model[0].weight.requires_grad
    assert model(genesis.randn(2, 3, 32, 32)).shape == (2, 10)
