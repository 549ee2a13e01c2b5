"""Print where Genesis's grad_fn names differ from PyTorch's (CPU build) for torch.nn.functional,
the torch.nn modules that run without arguments (or with a size of 3), every loss under each
reduction, and the tensor ops of a table. Run from the repository root:
`PYTHONPATH=$PWD python scripts/grad_fn_names.py [-v]` (-v prints the matching names too)."""

import sys
import warnings

import numpy as np
import torch
import torch.nn as tnn

import genesis

warnings.filterwarnings("ignore")


def functional_cases(lib):
    """{case: fn} calling each torch.nn.functional name (and a few module-only forms) in `lib`."""
    F, nn = lib.nn.functional, lib.nn
    rng = np.random.default_rng(0)

    def t(*s, lo=None):
        a = rng.standard_normal(s).astype(np.float32)
        if lo is not None:
            a = np.abs(a) + lo
        return lib.tensor(a, requires_grad=True)

    def p(*s):
        return lib.tensor(
            1 / (1 + np.exp(-rng.standard_normal(s))).astype(np.float32), requires_grad=True
        )

    def lab(n, k):
        return lib.tensor(np.arange(n) % k)

    x2, x3, x4, x5 = (
        (lambda: t(4, 6)),
        (lambda: t(2, 3, 8)),
        (lambda: t(2, 3, 8, 8)),
        (lambda: t(2, 3, 4, 4, 4)),
    )
    bits = lib.tensor((rng.standard_normal((4, 6)) > 0).astype(np.float32))
    sign = lib.tensor(np.sign(rng.standard_normal(4)).astype(np.float32))
    c = {}
    # activations
    for name in [
        "celu",
        "elu",
        "gelu",
        "hardshrink",
        "hardsigmoid",
        "hardswish",
        "hardtanh",
        "leaky_relu",
        "logsigmoid",
        "mish",
        "relu",
        "relu6",
        "selu",
        "sigmoid",
        "silu",
        "softplus",
        "softshrink",
        "softsign",
        "tanh",
        "tanhshrink",
        "glu",
    ]:
        c[name] = (lambda name: lambda: getattr(F, name)(x2()))(name)
    for name in ["celu_", "elu_", "hardtanh_", "leaky_relu_", "relu_", "selu_", "rrelu_"]:
        c[name] = (lambda name: lambda: getattr(F, name)(x2() * 1))(name)
    c["threshold"] = lambda: F.threshold(x2(), 0.1, 2.0)
    c["threshold_"] = lambda: F.threshold_(x2() * 1, 0.1, 2.0)
    c["rrelu eval"] = lambda: F.rrelu(x2())
    c["rrelu train"] = lambda: F.rrelu(x2(), training=True)
    c["prelu"] = lambda: F.prelu(x2(), t(1))
    c["softmax"] = lambda: F.softmax(x2(), 1)
    c["softmin"] = lambda: F.softmin(x2(), 1)
    c["log_softmax"] = lambda: F.log_softmax(x2(), 1)
    c["gumbel_softmax"] = lambda: F.gumbel_softmax(x2())
    c["gumbel_softmax hard"] = lambda: F.gumbel_softmax(x2(), hard=True)
    c["normalize"] = lambda: F.normalize(x2())
    # linear, conv
    c["linear"] = lambda: F.linear(x2(), t(3, 6), t(3))
    c["bilinear"] = lambda: F.bilinear(x2(), t(4, 5), t(3, 6, 5), t(3))
    c["conv1d"] = lambda: F.conv1d(x3(), t(4, 3, 3))
    c["conv2d"] = lambda: F.conv2d(x4(), t(4, 3, 3, 3), t(4))
    c["conv3d"] = lambda: F.conv3d(x5(), t(4, 3, 3, 3, 3))
    c["conv_transpose1d"] = lambda: F.conv_transpose1d(x3(), t(3, 4, 3))
    c["conv_transpose2d"] = lambda: F.conv_transpose2d(x4(), t(3, 4, 3, 3))
    c["conv_transpose3d"] = lambda: F.conv_transpose3d(x5(), t(3, 4, 3, 3, 3))
    c["conv_tbc"] = lambda: F.conv_tbc(t(5, 2, 3), t(3, 3, 4), t(4))
    c["unfold"] = lambda: F.unfold(x4(), 3)
    c["fold"] = lambda: F.fold(t(2, 12, 9), (4, 4), 2)
    c["embedding"] = lambda: F.embedding(lab(4, 5), t(5, 3))
    c["embedding_bag"] = lambda: F.embedding_bag(lab(8, 5).reshape(2, 4), t(5, 3))
    c["embedding_bag sum"] = lambda: F.embedding_bag(lab(8, 5).reshape(2, 4), t(5, 3), mode="sum")
    c["embedding_bag max"] = lambda: F.embedding_bag(lab(8, 5).reshape(2, 4), t(5, 3), mode="max")
    c["one_hot"] = lambda: F.one_hot(lab(4, 5)).float().requires_grad_()
    # norms
    c["batch_norm"] = lambda: F.batch_norm(
        x4(), lib.zeros(3), lib.ones(3), t(3), t(3), training=True
    )
    c["batch_norm eval"] = lambda: F.batch_norm(x4(), lib.zeros(3), lib.ones(3), t(3), t(3))
    c["instance_norm"] = lambda: F.instance_norm(x4())
    c["instance_norm affine"] = lambda: F.instance_norm(x4(), weight=t(3), bias=t(3))
    c["layer_norm"] = lambda: F.layer_norm(x2(), (6,))
    c["layer_norm affine"] = lambda: F.layer_norm(x2(), (6,), t(6), t(6))
    c["group_norm"] = lambda: F.group_norm(x4(), 3)
    c["rms_norm"] = lambda: F.rms_norm(x2(), (6,))
    c["rms_norm affine"] = lambda: F.rms_norm(x2(), (6,), t(6))
    c["local_response_norm"] = lambda: F.local_response_norm(x4(), 2)
    # pooling
    c["avg_pool1d"] = lambda: F.avg_pool1d(x3(), 2)
    c["avg_pool2d"] = lambda: F.avg_pool2d(x4(), 2)
    c["avg_pool3d"] = lambda: F.avg_pool3d(x5(), 2)
    c["max_pool1d"] = lambda: F.max_pool1d(x3(), 2)
    c["max_pool2d"] = lambda: F.max_pool2d(x4(), 2)
    c["max_pool3d"] = lambda: F.max_pool3d(x5(), 2)
    c["max_pool1d_with_indices"] = lambda: F.max_pool1d_with_indices(x3(), 2)[0]
    c["max_pool2d_with_indices"] = lambda: F.max_pool2d_with_indices(x4(), 2)[0]
    c["max_pool3d_with_indices"] = lambda: F.max_pool3d_with_indices(x5(), 2)[0]
    c["lp_pool1d"] = lambda: F.lp_pool1d(x3(), 2, 2)
    c["lp_pool2d"] = lambda: F.lp_pool2d(x4(), 2, 2)
    c["lp_pool3d"] = lambda: F.lp_pool3d(x5(), 2, 2)
    c["adaptive_max_pool1d_with_indices"] = lambda: F.adaptive_max_pool1d_with_indices(x3(), 3)[0]
    c["adaptive_max_pool2d_with_indices"] = lambda: F.adaptive_max_pool2d_with_indices(x4(), 3)[0]
    c["adaptive_max_pool3d_with_indices"] = lambda: F.adaptive_max_pool3d_with_indices(x5(), 2)[0]
    c["fractional_max_pool2d"] = lambda: F.fractional_max_pool2d(x4(), 2, output_size=3)
    c["fractional_max_pool3d"] = lambda: F.fractional_max_pool3d(x5(), 2, output_size=2)
    c["fractional_max_pool2d_with_indices"] = lambda: F.fractional_max_pool2d_with_indices(
        x4(), 2, output_size=3
    )[0]
    c["max_unpool1d"] = lambda: F.max_unpool1d(*F.max_pool1d(x3(), 2, return_indices=True), 2)
    c["max_unpool2d"] = lambda: F.max_unpool2d(*F.max_pool2d(x4(), 2, return_indices=True), 2)
    c["max_unpool3d"] = lambda: F.max_unpool3d(*F.max_pool3d(x5(), 2, return_indices=True), 2)
    # shapes, vision
    c["pixel_shuffle"] = lambda: F.pixel_shuffle(t(2, 4, 3, 3), 2)
    c["pixel_unshuffle"] = lambda: F.pixel_unshuffle(x4(), 2)
    c["channel_shuffle"] = lambda: F.channel_shuffle(t(2, 4, 3, 3), 2)
    c["native_channel_shuffle"] = lambda: F.native_channel_shuffle(t(2, 4, 3, 3), 2)
    c["affine_grid"] = lambda: F.affine_grid(t(2, 2, 3), (2, 3, 4, 4), align_corners=False)
    c["grid_sample"] = lambda: F.grid_sample(x4(), t(2, 5, 5, 2), align_corners=False)
    c["upsample"] = lambda: F.upsample(x4(), scale_factor=2)
    c["upsample_nearest"] = lambda: F.upsample_nearest(x4(), scale_factor=2)
    c["upsample_bilinear"] = lambda: F.upsample_bilinear(x4(), scale_factor=2)
    # dropout (p=0 and train)
    for name in [
        "dropout",
        "alpha_dropout",
        "feature_alpha_dropout",
        "dropout1d",
        "dropout2d",
        "dropout3d",
    ]:
        shape = {
            "dropout1d": (2, 3, 8),
            "dropout2d": (2, 3, 4, 4),
            "dropout3d": (2, 3, 2, 4, 4),
        }.get(name, (4, 6))
        c[name] = (lambda name, shape: lambda: getattr(F, name)(t(*shape), 0.5, True))(name, shape)
        c[name + " eval"] = (lambda name, shape: lambda: getattr(F, name)(t(*shape), 0.5, False))(
            name, shape
        )
    # distance
    c["cosine_similarity"] = lambda: F.cosine_similarity(x2(), x2())
    c["pairwise_distance"] = lambda: F.pairwise_distance(x2(), x2())
    c["pdist"] = lambda: F.pdist(x2())
    # losses
    c["binary_cross_entropy"] = lambda: F.binary_cross_entropy(p(4, 6), bits)
    c["binary_cross_entropy_with_logits"] = lambda: F.binary_cross_entropy_with_logits(x2(), bits)
    c["cosine_embedding_loss"] = lambda: F.cosine_embedding_loss(x2(), x2(), sign)
    c["cross_entropy probs"] = lambda: F.cross_entropy(x2(), F.softmax(t(4, 6), 1).detach())
    c["ctc_loss"] = lambda: F.ctc_loss(
        F.log_softmax(t(6, 2, 4), 2),
        lib.tensor(np.array([[1, 2], [3, 1]])),
        lib.tensor(np.array([6, 6])),
        lib.tensor(np.array([2, 2])),
    )
    c["gaussian_nll_loss"] = lambda: F.gaussian_nll_loss(x2(), x2(), t(4, 6, lo=0.1))
    c["hinge_embedding_loss"] = lambda: F.hinge_embedding_loss(x2(), bits * 2 - 1)
    c["kl_div"] = lambda: F.kl_div(x2(), p(4, 6), reduction="batchmean")
    c["kl_div mean"] = lambda: F.kl_div(x2(), p(4, 6))
    c["l1_loss none"] = lambda: F.l1_loss(x2(), x2(), reduction="none")
    c["margin_ranking_loss"] = lambda: F.margin_ranking_loss(t(4), t(4), sign)
    c["multi_margin_loss"] = lambda: F.multi_margin_loss(x2(), lab(4, 6))
    c["multilabel_margin_loss"] = lambda: F.multilabel_margin_loss(
        x2(), lib.tensor(np.array([[1, 2, -1, 0, 0, 0]] * 4))
    )
    c["multilabel_soft_margin_loss"] = lambda: F.multilabel_soft_margin_loss(x2(), bits)
    c["poisson_nll_loss"] = lambda: F.poisson_nll_loss(x2(), p(4, 6))
    c["soft_margin_loss"] = lambda: F.soft_margin_loss(x2(), bits * 2 - 1)
    c["triplet_margin_loss"] = lambda: F.triplet_margin_loss(x2(), x2(), x2())
    c["triplet_margin_with_distance_loss"] = lambda: F.triplet_margin_with_distance_loss(
        x2(), x2(), x2()
    )
    c["smooth_l1_loss none"] = lambda: F.smooth_l1_loss(x2(), x2(), reduction="none")
    c["huber_loss none"] = lambda: F.huber_loss(x2(), x2(), reduction="none")
    c["nll_loss sum"] = lambda: F.nll_loss(x2(), lab(4, 6), reduction="sum")
    c["binary_cross_entropy none"] = lambda: F.binary_cross_entropy(p(4, 6), bits, reduction="none")
    # attention
    c["multi_head_attention_forward"] = lambda: nn.MultiheadAttention(6, 2)(
        t(5, 2, 6), t(5, 2, 6), t(5, 2, 6)
    )[0]
    c["multi_head_attention weights"] = lambda: nn.MultiheadAttention(6, 2)(
        t(5, 2, 6), t(5, 2, 6), t(5, 2, 6)
    )[1]
    # modules not covered by their functional
    c["AdaptiveLogSoftmaxWithLoss"] = lambda: (
        nn.AdaptiveLogSoftmaxWithLoss(6, 10, [4])(x2(), lab(4, 10)).output
    )
    c["AdaptiveLogSoftmaxWithLoss loss"] = lambda: (
        nn.AdaptiveLogSoftmaxWithLoss(6, 10, [4])(x2(), lab(4, 10)).loss
    )
    c["Flatten"] = lambda: nn.Flatten()(x4())
    c["Unflatten"] = lambda: nn.Unflatten(1, (2, 3))(x2())
    c["Identity"] = lambda: nn.Identity()(x2() * 1)
    c["Softmax2d"] = lambda: nn.Softmax2d()(x4())
    c["CircularPad2d"] = lambda: nn.CircularPad2d(1)(x4())
    c["ConstantPad1d"] = lambda: nn.ConstantPad1d(1, 2.0)(x3())
    c["ZeroPad3d"] = lambda: nn.ZeroPad3d(1)(x5())
    c["ReplicationPad1d"] = lambda: nn.ReplicationPad1d(1)(x3())
    c["ReflectionPad3d"] = lambda: nn.ReflectionPad3d(1)(x5())
    c["UpsamplingBilinear2d"] = lambda: nn.UpsamplingBilinear2d(scale_factor=2)(x4())
    c["UpsamplingNearest2d"] = lambda: nn.UpsamplingNearest2d(scale_factor=2)(x4())
    c["TransformerEncoderLayer"] = lambda: nn.TransformerEncoderLayer(6, 2, 8, dropout=0.0)(
        t(5, 2, 6)
    )
    c["TransformerDecoderLayer"] = lambda: nn.TransformerDecoderLayer(6, 2, 8, dropout=0.0)(
        t(5, 2, 6), t(4, 2, 6)
    )
    c["Transformer"] = lambda: nn.Transformer(6, 2, 1, 1, 8, dropout=0.0)(t(5, 2, 6), t(4, 2, 6))
    c["TransformerEncoderLayer norm_first"] = lambda: nn.TransformerEncoderLayer(
        6, 2, 8, dropout=0.0, norm_first=True
    )(t(5, 2, 6))
    c["RNN bidirectional"] = lambda: nn.RNN(4, 3, bidirectional=True)(t(5, 2, 4))[0]
    c["RNN batch_first"] = lambda: nn.RNN(4, 3, batch_first=True)(t(2, 5, 4))[0]
    c["LSTM batch_first"] = lambda: nn.LSTM(4, 3, batch_first=True)(t(2, 5, 4))[0]
    c["GRU unbatched"] = lambda: nn.GRU(4, 3)(t(5, 4))[0]
    c["GRU 2 layers h"] = lambda: nn.GRU(4, 3, 2)(t(5, 2, 4))[1]
    c["LSTMCell c"] = lambda: nn.LSTMCell(4, 3)(t(2, 4))[1]
    c["GRUCell unbatched"] = lambda: nn.GRUCell(4, 3)(t(4))
    c["RNNCell relu"] = lambda: nn.RNNCell(4, 3, nonlinearity="relu")(t(2, 4))
    c["CosineSimilarity"] = lambda: nn.CosineSimilarity()(x2(), x2())
    c["BatchNorm1d 2d"] = lambda: nn.BatchNorm1d(6)(x2())
    c["InstanceNorm1d"] = lambda: nn.InstanceNorm1d(3)(x3())
    c["PReLU"] = lambda: nn.PReLU()(x2())
    c["Softmax dim None"] = lambda: nn.Softmax()(x2())
    c["stack"] = lambda: lib.stack([x2(), x2()])
    c["torch.stack 1"] = lambda: lib.stack([x2()], 1)
    return c


def loss_cases(lib):
    """{case: fn(reduction)} calling each loss in `lib`."""
    F = lib.nn.functional
    rng = np.random.default_rng(0)

    def t(*s, pos=False):
        a = rng.standard_normal(s).astype(np.float32)
        return lib.tensor(np.abs(a) + 0.1 if pos else a, requires_grad=True)

    p = lib.tensor((1 / (1 + np.exp(-rng.standard_normal((4, 6))))).astype(np.float32))
    bits = lib.tensor((rng.standard_normal((4, 6)) > 0).astype(np.float32))
    sign = lib.tensor(np.sign(rng.standard_normal(4)).astype(np.float32))
    lab = lib.tensor(np.arange(4) % 6)
    lab3 = lib.tensor(np.arange(8).reshape(2, 4) % 6)
    return {
        "l1": lambda r: F.l1_loss(t(4, 6), t(4, 6), reduction=r),
        "mse": lambda r: F.mse_loss(t(4, 6), t(4, 6), reduction=r),
        "smooth_l1": lambda r: F.smooth_l1_loss(t(4, 6), t(4, 6), reduction=r),
        "smooth_l1 beta0": lambda r: F.smooth_l1_loss(t(4, 6), t(4, 6), reduction=r, beta=0.0),
        "huber": lambda r: F.huber_loss(t(4, 6), t(4, 6), reduction=r),
        "bce": lambda r: F.binary_cross_entropy(F.sigmoid(t(4, 6)), p, reduction=r),
        "bce weight": lambda r: F.binary_cross_entropy(
            F.sigmoid(t(4, 6)), p, weight=p, reduction=r
        ),
        "bce logits": lambda r: F.binary_cross_entropy_with_logits(t(4, 6), p, reduction=r),
        "bce logits pos_weight": lambda r: F.binary_cross_entropy_with_logits(
            t(4, 6), p, pos_weight=lib.ones(6), reduction=r
        ),
        "nll": lambda r: F.nll_loss(t(4, 6), lab, reduction=r),
        "nll 3d": lambda r: F.nll_loss(t(2, 6, 4), lab3, reduction=r),
        "ce": lambda r: F.cross_entropy(t(4, 6), lab, reduction=r),
        "ce weight": lambda r: F.cross_entropy(t(4, 6), lab, weight=lib.ones(6), reduction=r),
        "ce smooth": lambda r: F.cross_entropy(t(4, 6), lab, label_smoothing=0.1, reduction=r),
        "ce probs": lambda r: F.cross_entropy(t(4, 6), p, reduction=r),
        "ce 1d": lambda r: F.cross_entropy(t(6), lab[0], reduction=r),
        "kl_div": lambda r: F.kl_div(t(4, 6), p, reduction=r),
        "kl_div log_target": lambda r: F.kl_div(t(4, 6), p.log(), reduction=r, log_target=True),
        "poisson": lambda r: F.poisson_nll_loss(t(4, 6), p, reduction=r),
        "poisson nolog": lambda r: F.poisson_nll_loss(
            t(4, 6, pos=True), p, log_input=False, reduction=r
        ),
        "gaussian": lambda r: F.gaussian_nll_loss(t(4, 6), t(4, 6), t(4, 6, pos=True), reduction=r),
        "hinge": lambda r: F.hinge_embedding_loss(t(4, 6), bits * 2 - 1, reduction=r),
        "soft_margin": lambda r: F.soft_margin_loss(t(4, 6), bits * 2 - 1, reduction=r),
        "multilabel_soft": lambda r: F.multilabel_soft_margin_loss(t(4, 6), bits, reduction=r),
        "multi_margin": lambda r: F.multi_margin_loss(t(4, 6), lab, reduction=r),
        "multilabel_margin": lambda r: F.multilabel_margin_loss(
            t(4, 6), lib.tensor(np.array([[1, 2, -1, 0, 0, 0]] * 4)), reduction=r
        ),
        "margin_ranking": lambda r: F.margin_ranking_loss(t(4), t(4), sign, reduction=r),
        "cosine_embedding": lambda r: F.cosine_embedding_loss(t(4, 6), t(4, 6), sign, reduction=r),
        "triplet": lambda r: F.triplet_margin_loss(t(4, 6), t(4, 6), t(4, 6), reduction=r),
        "triplet swap": lambda r: F.triplet_margin_loss(
            t(4, 6), t(4, 6), t(4, 6), swap=True, reduction=r
        ),
        "triplet distance": lambda r: F.triplet_margin_with_distance_loss(
            t(4, 6), t(4, 6), t(4, 6), reduction=r
        ),
        "ctc": lambda r: F.ctc_loss(
            F.log_softmax(t(6, 2, 4), 2),
            lib.tensor(np.array([[1, 2], [3, 1]])),
            lib.tensor(np.array([6, 6])),
            lib.tensor(np.array([2, 2])),
            reduction=r,
        ),
    }


def node_name(lib, fn):
    """The name of the grad_fn of fn()'s result as `lib` prints it, "None", or the error."""
    try:
        node = fn().grad_fn
    except Exception as e:  # noqa: BLE001 - an error is a finding to print
        return f"ERR {type(e).__name__}: {str(e)[:60]}"
    if node is None:
        return "None"
    return type(node).__name__ if lib is torch else node.name()


def report(label, want, got, verbose):
    """One line when the names differ (or always with -v); True when they differ."""
    if want != got or verbose:
        print("XX " if want != got else "   ", label.ljust(40), f"torch={want:40s} genesis={got}")
    return want != got


def compare_functionals(verbose):
    """Each functional case in torch and in genesis, from the same seeds."""
    want_cases, got_cases = functional_cases(torch), functional_cases(genesis)
    differ = 0
    for case in want_cases:
        torch.manual_seed(0)
        genesis.manual_seed(0)
        differ += report(
            case, node_name(torch, want_cases[case]), node_name(genesis, got_cases[case]), verbose
        )
    print(f"functionals: {len(want_cases)} cases, {differ} differ")


def compare_losses(verbose):
    """Each loss under each reduction."""
    want_cases, got_cases = loss_cases(torch), loss_cases(genesis)
    differ = count = 0
    for case in want_cases:
        for reduction in ("none", "sum", "mean", "batchmean")[: 4 if case.startswith("kl") else 3]:
            count += 1
            differ += report(
                f"{case} {reduction}",
                node_name(torch, lambda: want_cases[case](reduction)),
                node_name(genesis, lambda: got_cases[case](reduction)),
                verbose,
            )
    print(f"losses: {count} cases, {differ} differ")


def _modules(name):
    """(torch module, genesis module, args) built alike, or None."""
    for args in [(), (3,), (2,), (3, 3)]:
        try:
            return getattr(tnn, name)(*args), getattr(genesis.nn, name)(*args), args
        except Exception:  # noqa: BLE001 - try the next argument list
            continue
    return None


def _module_node(module, params, lib, array):
    """The grad_fn name of module(array) with `params` copied in (genesis only)."""
    if params is not None:
        for want, got in zip(params, module.parameters()):
            got.data = genesis.tensor(want.detach().numpy())
    lib.manual_seed(0)
    return node_name(lib, lambda: module(lib.tensor(array, requires_grad=True)))


def compare_modules(verbose):
    """Each module built without arguments (or with a size), on the first shape torch takes."""
    rng = np.random.default_rng(1)
    shapes = [(2, 3, 8, 8), (2, 3, 8), (4, 6), (2, 3, 4, 4, 4)]
    differ = count = 0
    for name in sorted(tnn.modules.__all__):
        built = None if name.startswith("Lazy") or not hasattr(genesis.nn, name) else _modules(name)
        if built is None:
            continue
        want_module, got_module, args = built
        for shape in shapes:
            array = rng.standard_normal(shape).astype(np.float32)
            want = _module_node(want_module, None, torch, array)
            if want.startswith("ERR"):
                continue
            if want != "None":
                count += 1
                got = _module_node(got_module, list(want_module.parameters()), genesis, array)
                differ += report(f"{name}{args} {shape}", want, got, verbose)
            break
    print(f"modules: {count} cases, {differ} differ")

# Tensor ops, each an expression of the (4, 6) float32 leaf `x` and the library `L`.
OP_EXPRESSIONS = [
    "x.sum(1)", "x.sum()", "L.sum(x, dim=None)", "x.mean(-1)", "x.nansum(1)", "x.prod(1)",
    "x.std(1)", "x.var(1)", "x.amax(1)", "x.amin()", "x.logsumexp(1)", "x.cumsum(1)",
    "x.cumprod(1)", "x.logcumsumexp(1)", "x.cummax(1)[0]", "x.median()", "x.median(1)[0]",
    "x.mode(1)[0]", "x.kthvalue(2)[0]", "x.aminmax(dim=1)[0]", "x.max()", "x.max(1)[0]",
    "x.sort(1)[0]", "x.topk(2)[0]", "x.norm()", "x.norm(3, 1)", "L.norm(x, 2, 1)",
    "L.linalg.vector_norm(x, 3)", "L.linalg.matrix_norm(x)", "L.dist(x, x * 2)", "L.cdist(x, x)",
    "x.transpose(0, 1)", "x.swapaxes(0, 1)", "x.mT", "x.T", "x.t()", "x.permute(1, 0)",
    "x.movedim(0, 1)", "L.stack([x, x])", "L.hstack([x, x])", "L.cat([x, x])",
    "x.unbind(0)[0]", "x.split(2)[0]", "x.chunk(2)[0]", "x.flatten()", "x.view(24)",
    "x.reshape(6, 4)", "x.unsqueeze(0)", "x.expand(2, 4, 6)", "x.repeat(2, 1)", "x.flip(0)",
    "x.roll(1, 0)", "x.tril()", "x.diag()", "x.trace()", "x.narrow(0, 1, 2)", "x.select(0, 1)",
    "x.diagonal()", "x.unfold(0, 2, 1)", "x[0]", "x[:, 1:3]", "x[[0, 1]]", "x[x > 0]",
    "x.index_select(0, L.tensor([0, 2]))", "x.take(L.tensor([0, 2]))",
    "x.masked_select(x > 0)", "x.gather(1, L.zeros(4, 1, dtype=L.int64))",
    "x.masked_fill(x > 0, 0.0)", "L.where(x > 0, x, 0.0)", "x.clamp(min=0)", "x.clone()",
    "x.to(L.float64)", "x @ x.t()", "L.einsum('ij,kj->ik', x, x)", "x.inner(x)", "x.kron(x)",
    "L.outer(x[0], x[1])", "x.pow(x)", "2 ** x", "x ** 0.5", "x.square()", "1 / x",
    "x.div(2, rounding_mode='floor')", "x.atan2(x)", "x.hypot(x)", "x.maximum(x * 2)",
    "x.fmax(x)", "x.fmod(2)", "x.remainder(2)", "x.addcmul(x, x)", "x.addcdiv(x, x)",
    "x.renorm(2, 0, 1)", "x.lerp(x * 2, 0.5)", "x.sinc()", "x.xlogy(x)", "x.logit()",
    "x.log1p()", "x.lgamma()", "x.digamma()", "x.erfinv()", "x.logaddexp(x)", "x.cov()",
    "x.diff()", "x.tensordot(x, dims=([1], [1]))", "L.broadcast_to(x, (2, 4, 6))",
]


def compare_ops(verbose):
    """Each tensor op of OP_EXPRESSIONS on the same leaf in torch and in genesis."""
    array = np.random.default_rng(2).standard_normal((4, 6)).astype(np.float32)

    def run(lib, expression):
        x = lib.tensor(array, requires_grad=True)  # noqa: F841 - read by the expression
        return node_name(lib, lambda: eval(expression, {"L": lib, "x": x}))
    differ = sum(report(e, run(torch, e), run(genesis, e), verbose) for e in OP_EXPRESSIONS)
    print(f"tensor ops: {len(OP_EXPRESSIONS)} cases, {differ} differ")


if __name__ == "__main__":
    verbose = "-v" in sys.argv
    compare_functionals(verbose)
    compare_losses(verbose)
    compare_modules(verbose)
    compare_ops(verbose)
