"""Memory formats (genesis.contiguous_format, channels_last, channels_last_3d, preserve_format)
against PyTorch's: is_contiguous under each, the strides that contiguous, to, clone, empty and
the *_like factories lay out, their rank errors, gradients through a layout change, and
Module.to(memory_format=...)."""

import pickle

import numpy as np
import pytest
import torch

import genesis
from helpers import assert_close

FORMATS = {"contiguous_format": (genesis.contiguous_format, torch.contiguous_format),
           "channels_last": (genesis.channels_last, torch.channels_last),
           "channels_last_3d": (genesis.channels_last_3d, torch.channels_last_3d),
           "preserve_format": (genesis.preserve_format, torch.preserve_format)}
EXPLICIT = ["contiguous_format", "channels_last", "channels_last_3d"]
SHAPES = [(2, 3, 4, 5), (2, 3, 1, 1), (1, 3, 4, 5), (2, 1, 4, 5), (2, 3, 4, 1), (0, 3, 4, 5),
          (2, 3, 2, 4, 5), (2, 1, 3, 1, 2), (3, 4)]


def _layouts(lib, array, device="cpu"):
    """The same values under several layouts, on `device`: contiguous, channels-last order (dim
    1 innermost), every dim reversed, and every other element of the last dim."""
    def make(a):  # (torch.tensor of an empty array has strides 0)
        return lib.tensor(a, device=device) if a.size else lib.zeros(a.shape, device=device)
    t, wide = make(array), make(np.repeat(array, 2, axis=-1))
    n = t.ndim
    layouts = {"contiguous": t, "reversed": t.permute(*range(n - 1, -1, -1)).contiguous()
               .permute(*range(n - 1, -1, -1))}
    if n >= 3:
        inner = (0, *range(2, n), 1)
        back = (0, n - 1, *range(1, n - 1))
        layouts["channels inner"] = t.permute(*inner).contiguous().permute(*back)
    layouts["sliced"] = wide[..., ::2]
    return layouts


def test_names_repr_and_pickle():
    for name, (fmt, theirs) in FORMATS.items():
        assert isinstance(fmt, genesis.memory_format)
        assert repr(fmt) == str(fmt) == f"genesis.{name}" and str(theirs) == f"torch.{name}"
        assert pickle.loads(pickle.dumps(fmt)) is fmt


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_is_contiguous_as_torch(shape, rng):
    array = rng.standard_normal(shape).astype(np.float32)
    ours, theirs = _layouts(genesis, array), _layouts(torch, array)
    for layout in ours:
        assert ours[layout].stride() == theirs[layout].stride(), layout
        for name, (fmt, tfmt) in FORMATS.items():
            assert (ours[layout].is_contiguous(memory_format=fmt)
                    == theirs[layout].is_contiguous(memory_format=tfmt)), (layout, name)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("name", EXPLICIT)
def test_contiguous_to_and_clone_lay_out_as_torch(shape, name, rng, device):
    fmt, tfmt = FORMATS[name]
    array = rng.standard_normal(shape).astype(np.float32)
    theirs = _layouts(torch, array)
    for layout, t in _layouts(genesis, array, device).items():
        calls = {"contiguous": (lambda x, f: x.contiguous(memory_format=f)),
                 "to": (lambda x, f: x.to(memory_format=f)),
                 "clone": (lambda x, f: x.clone(memory_format=f))}
        for call, fn in calls.items():
            try:
                expected = fn(theirs[layout], tfmt)
            except RuntimeError as error:
                with pytest.raises(RuntimeError, match=str(error)):
                    fn(t, fmt)
                continue
            got = fn(t, fmt)
            assert got.stride() == expected.stride(), (layout, call)
            assert_close(got.cpu(), expected)
            if call != "clone":
                assert (got is t) == (expected is theirs[layout]), (layout, call)


@pytest.mark.parametrize("name", ["channels_last", "channels_last_3d"])
def test_factories_lay_out_as_torch(name, device):
    fmt, tfmt = FORMATS[name]
    shape = (2, 3, 4, 5) if name == "channels_last" else (2, 3, 2, 4, 5)
    like, tlike = genesis.ones(shape, device=device), torch.ones(shape)
    pairs = {"empty": (genesis.empty(*shape, memory_format=fmt, device=device),
                       torch.empty(*shape, memory_format=tfmt))}
    for factory in ("empty_like", "zeros_like", "ones_like", "rand_like"):
        pairs[factory] = (getattr(genesis, factory)(like, memory_format=fmt),
                          getattr(torch, factory)(tlike, memory_format=tfmt))
    pairs["full_like"] = (genesis.full_like(like, 2.5, memory_format=fmt),
                          torch.full_like(tlike, 2.5, memory_format=tfmt))
    pairs["randn_like"] = (genesis.randn_like(like, memory_format=fmt, requires_grad=True),
                           torch.randn_like(tlike, memory_format=tfmt, requires_grad=True))
    for factory, (got, expected) in pairs.items():
        assert got.shape == expected.shape and got.stride() == expected.stride(), factory
        assert got.is_leaf and got.requires_grad == expected.requires_grad, factory
    for factory in ("zeros_like", "ones_like", "full_like"):
        assert_close(pairs[factory][0].cpu(), pairs[factory][1])


def test_wrong_rank_errors_as_torch():
    calls = [lambda lib, f: lib.ones(3, 4).contiguous(memory_format=f),
             lambda lib, f: lib.ones(3, 4).to(memory_format=f),
             lambda lib, f: lib.ones(3, 4).clone(memory_format=f),
             lambda lib, f: lib.empty(3, 4, memory_format=f),
             lambda lib, f: lib.zeros_like(lib.ones(3, 4), memory_format=f)]
    for name in ("channels_last", "channels_last_3d"):
        fmt, tfmt = FORMATS[name]
        for call in calls:
            with pytest.raises(RuntimeError) as theirs:
                call(torch, tfmt)
            with pytest.raises(RuntimeError, match=str(theirs.value)):
                call(genesis, fmt)


def test_gradient_flows_through_a_layout_change(rng, device):
    array = rng.standard_normal((2, 3, 4, 5))
    weight = rng.standard_normal((2, 5, 4, 3))
    grads = []
    for lib, where in ((genesis, device), (torch, "cpu")):
        x = lib.tensor(array, device=where, requires_grad=True)
        y = x.to(memory_format=lib.channels_last)
        (y * lib.tensor(weight, device=where).permute(0, 3, 2, 1)).sum().backward()
        grads.append(x.grad)
    assert_close(grads[0].cpu(), grads[1])
    x = genesis.tensor(array, requires_grad=True)
    assert genesis.autograd.gradcheck(lambda t: t.contiguous(memory_format=genesis.channels_last)
                                      * 2, (x,))


def test_module_to_lays_out_4d_parameters_as_torch(rng, device, cudnn_ieee):
    torch.manual_seed(int(rng.integers(1 << 31)))
    theirs = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4),
                                 torch.nn.Flatten(), torch.nn.Linear(4 * 6 * 6, 5))
    ours = genesis.nn.Sequential(genesis.nn.Conv2d(3, 4, 3), genesis.nn.BatchNorm2d(4),
                                 genesis.nn.Flatten(), genesis.nn.Linear(4 * 6 * 6, 5))
    ours.load_state_dict({k: genesis.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    ours.to(device, memory_format=genesis.channels_last)
    theirs.to(memory_format=torch.channels_last)
    for (name, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        assert p.stride() == q.stride() and isinstance(p, genesis.nn.Parameter), name
    x = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
    out = ours(genesis.tensor(x, device=device).to(memory_format=genesis.channels_last))
    assert_close(out.cpu(), theirs(torch.tensor(x).to(memory_format=torch.channels_last)))


def _views(lib, rng, device="cpu"):
    """Views under which preserve_format differs from contiguous_format, by name: dense ones
    (transposes, permutes, channels-last, odd strides on a dim of size 1, empty ones) keep
    their strides; overlapping (expanded) and non-dense (sliced) ones take dense strides in
    their dims' order."""
    def t(*shape):
        return lib.tensor(rng.standard_normal(shape).astype(np.float32), device=device)
    return {"transpose": t(3, 4).t(),
            "permute": t(2, 3, 4).permute(2, 0, 1),
            "channels_last": t(2, 3, 4, 5).contiguous(memory_format=lib.channels_last),
            "channels_last_3d": t(2, 3, 2, 4, 5).contiguous(memory_format=lib.channels_last_3d),
            "size 1 permuted": t(3, 1, 4).permute(1, 2, 0),
            "size 1 odd stride": t(2, 1, 3).as_strided((2, 1, 3), (3, 7, 1)),
            "0-d": t(),
            "empty": lib.zeros(0, 3, device=device),
            "empty transposed": lib.zeros(3, 0, device=device).t(),
            "expanded": t(3, 1).expand(3, 4),
            "expanded transposed": t(4, 1).expand(4, 3).t(),
            "expanded channels": t(2, 3, 1, 1).contiguous(memory_format=lib.channels_last)
            .expand(2, 3, 4, 5),
            "sliced": t(3, 8)[:, ::2],
            "sliced transposed": t(8, 3).t()[:, ::2],
            "sliced permute": t(2, 3, 8).permute(2, 0, 1)[::2],
            "sliced channels_last": t(2, 3, 4, 10).contiguous(memory_format=lib.channels_last)
            [..., ::2]}


PRESERVING = {
    "clone": lambda lib, x: x.clone(),
    "clone(preserve_format)": lambda lib, x: x.clone(memory_format=lib.preserve_format),
    "to(float64)": lambda lib, x: x.to(lib.float64),
    "to(float32, copy=True)": lambda lib, x: x.to(lib.float32, copy=True),
    "to(int32, preserve_format)": lambda lib, x: x.to(lib.int32,
                                                       memory_format=lib.preserve_format),
    "double": lambda lib, x: x.double(),
    "empty_like": lambda lib, x: lib.empty_like(x),
    "zeros_like": lambda lib, x: lib.zeros_like(x),
    "ones_like": lambda lib, x: lib.ones_like(x, dtype=lib.float16),
    "full_like": lambda lib, x: lib.full_like(x, 2.5),
    "rand_like": lambda lib, x: lib.rand_like(x),
    "randn_like": lambda lib, x: lib.randn_like(x, requires_grad=True),
    "randint_like": lambda lib, x: lib.randint_like(x, 3, 9),
}
RANDOM = ("empty_like", "rand_like", "randn_like", "randint_like")


@pytest.mark.parametrize("call", PRESERVING)
def test_preserve_format_lays_out_as_torch(call, rng, device):
    seed = int(rng.integers(1 << 31))
    ours = _views(genesis, np.random.default_rng(seed), device)
    theirs = _views(torch, np.random.default_rng(seed))
    fn = PRESERVING[call]
    for name, x in ours.items():
        assert x.stride() == theirs[name].stride(), name
        got, expected = fn(genesis, x), fn(torch, theirs[name])
        assert got.shape == expected.shape and got.dtype.name == str(expected.dtype)[6:], name
        assert got.stride() == expected.stride(), name
        assert got.requires_grad == expected.requires_grad and got._base is None, name
        if call not in RANDOM:
            assert_close(got.cpu(), expected)


def test_preserve_format_values_of_random_likes(device):
    x = genesis.ones(4, 50, 60, device=device).permute(2, 0, 1)
    for values, low, high in ((genesis.rand_like(x), 0, 1),
                              (genesis.randint_like(x, 3, 9), 3, 8)):
        assert values.stride() == x.stride()
        host = values.cpu().numpy()
        assert host.min() >= low and host.max() <= high and len(np.unique(host)) > 5
    normal = genesis.randn_like(x).cpu().numpy()
    assert abs(normal.mean()) < 0.05 and abs(normal.std() - 1) < 0.05


def test_moves_between_devices_preserve_format(rng, device):
    array = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    for tfmt, fmt in ((torch.channels_last, genesis.channels_last), (None, None)):
        expected = torch.tensor(array).permute(0, 3, 1, 2)
        x = genesis.tensor(array).permute(0, 3, 1, 2)
        if fmt is not None:
            expected = expected.contiguous(memory_format=tfmt)[..., ::2]
            x = x.contiguous(memory_format=fmt)[..., ::2]
        there = x.to(device, genesis.float64)
        back = there.cpu()
        assert there.stride() == back.stride() == expected.double().stride()
        assert_close(back, expected.double())


def test_preserve_format_gradient_keeps_the_layout(rng, device):
    x = genesis.tensor(rng.standard_normal((3, 4, 5)), device=device).permute(2, 0, 1)
    x.requires_grad_(True)
    assert genesis.autograd.gradcheck(lambda t: t.clone() * 2, (x,))
    assert genesis.autograd.gradcheck(lambda t: t.to(genesis.float64, copy=True) * 2, (x,))
    y = x.to(genesis.float32)
    y.backward(genesis.ones_like(y))
    assert y.stride() == x.stride() and x.grad.stride() == x.stride()


def test_to_another_dtype_and_format_copies_once(monkeypatch, rng):
    copies = []
    for name in ("cast", "contiguous", "copy_"):
        fn = genesis.dispatch.kernel(name, "cpu")
        monkeypatch.setitem(genesis.dispatch._KERNELS, (name, "cpu"),
                            lambda *a, fn=fn, name=name: copies.append(name) or fn(*a))
    array = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    x = genesis.tensor(array)
    y = x.to(genesis.float64, memory_format=genesis.channels_last)
    assert copies == ["copy_"]
    expected = torch.tensor(array).to(torch.float64, memory_format=torch.channels_last)
    assert y.stride() == expected.stride()
    assert_close(y, expected)


@pytest.mark.parametrize("make", [
    lambda lib, dev: lib.randn(3, 4, 5, 2, device=dev).to(memory_format=lib.channels_last),
    lambda lib, dev: lib.randn(3, 4, device=dev).t(),
    lambda lib, dev: lib.randn(3, 4, device=dev)[:, ::2],
    lambda lib, dev: lib.randn(2, 3, 1, 4, 4, device=dev).to(memory_format=lib.channels_last_3d)],
    ids=["channels_last", "transposed", "strided", "channels_last_3d"])
def test_leaf_grad_obeys_the_layout_contract_as_torch(make, device):
    """A leaf's .grad takes the leaf's strides where the leaf is dense and non-overlapping (a
    channels_last weight, a transposed matrix), else row-major: PyTorch's layout contract. The
    leaf is made on its device (a copy of a strided view to another device is row-major)."""
    strides = []
    for lib in (torch, genesis):
        lib.manual_seed(0)
        leaf = make(lib, device if lib is genesis else "cpu").requires_grad_()
        (leaf.sum(0, keepdim=True) * leaf * 2).sum().backward()
        strides.append((leaf.stride(), leaf.grad.stride()))
    assert strides[0] == strides[1]


@pytest.mark.parametrize("shapes, formats", [
    ([(2, 8, 4, 4), (2, 3, 4, 4)], ["channels_last", "channels_last"]),
    ([(2, 8, 4, 4), (2, 8, 4, 4)], ["channels_last", "contiguous_format"]),
    ([(1, 2, 3, 2, 2), (1, 2, 3, 2, 2)], ["channels_last_3d", "channels_last_3d"]),
    ([(2, 1, 4, 4), (2, 1, 4, 4)], ["channels_last", "channels_last"])],
    ids=["channels_last", "mixed", "channels_last_3d", "one_channel"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cat_lays_out_its_result_as_torch(shapes, formats, dim, rng, device):
    """cat's result takes the memory format its inputs all suggest, else row-major; its values
    and the gradients' strides as PyTorch's."""
    results = []
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    if dim != 1:
        arrays = [arrays[0], arrays[0].copy()]
    for lib in (torch, genesis):
        parts = [lib.tensor(a, device=device if lib is genesis else "cpu")
                 .to(memory_format=getattr(lib, f)).requires_grad_()
                 for a, f in zip(arrays, formats)]
        out = lib.cat(parts, dim)
        (out * out).sum().backward()
        results.append((out, [out.stride()] + [p.grad.stride() for p in parts]))
    assert results[1][1] == results[0][1]
    assert_close(results[1][0], results[0][0])


_RESAMPLERS = {
    "max_pool2d": lambda F, x: F.max_pool2d(x, 2),
    "max_pool2d indices": lambda F, x: F.max_pool2d(x, 3, 2, 1, return_indices=True)[1],
    "avg_pool2d": lambda F, x: F.avg_pool2d(x, 3, 2, 1),
    "lp_pool2d": lambda F, x: F.lp_pool2d(x, 2, 2),
    "adaptive_avg_pool2d": lambda F, x: F.adaptive_avg_pool2d(x, 3),
    "adaptive_avg_pool2d to 1": lambda F, x: F.adaptive_avg_pool2d(x, 1),
    "adaptive_max_pool2d": lambda F, x: F.adaptive_max_pool2d(x, (3, 2)),
    "nearest": lambda F, x: F.interpolate(x, scale_factor=2),
    "nearest-exact": lambda F, x: F.interpolate(x, size=(5, 7), mode="nearest-exact"),
    "bilinear": lambda F, x: F.interpolate(x, scale_factor=2, mode="bilinear"),
    "bicubic": lambda F, x: F.interpolate(x, size=(5, 9), mode="bicubic", align_corners=True),
    "area": lambda F, x: F.interpolate(x, size=(3, 5), mode="area"),
    "pad constant": lambda F, x: F.pad(x, (1, 2, 0, 1), value=0.5),
    "pad reflect": lambda F, x: F.pad(x, (1, 2, 2, 1), mode="reflect"),
    "pad replicate": lambda F, x: F.pad(x, (1, 2, 2, 1), mode="replicate"),
    "pad circular": lambda F, x: F.pad(x, (1, 2, 2, 1), mode="circular"),
    "pixel_shuffle": lambda F, x: F.pixel_shuffle(x[:, :4], 2),
    "pixel_unshuffle": lambda F, x: F.pixel_unshuffle(x, 2),
}


def _dense_strides(t):
    """Strides of the dims longer than 1 (the others' strides are arbitrary)."""
    return tuple(s for s, n in zip(t.stride(), t.shape) if n > 1)


@pytest.mark.parametrize("op", list(_RESAMPLERS))
@pytest.mark.parametrize("layout", ["channels_last", "contiguous_format"])
def test_pooling_padding_and_resampling_keep_the_layout_as_torch(op, layout, rng, device):
    """Channels-last in, channels-last out (circular padding aside, contiguous as PyTorch's),
    values and the input gradient's layout as PyTorch's."""
    x = rng.standard_normal((2, 6, 6, 8)).astype(np.float32)
    results = []
    for lib in (torch, genesis):
        t = lib.tensor(x, device=device if lib is genesis else "cpu")
        t = t.to(memory_format=getattr(lib, layout)).requires_grad_()
        out = _RESAMPLERS[op](lib.nn.functional, t)
        if out.dtype.is_floating_point:
            (out * out).sum().backward()
        results.append((out, _dense_strides(out),
                        None if t.grad is None else _dense_strides(t.grad)))
    assert results[1][1:] == results[0][1:]
    assert_close(results[1][0], results[0][0])


def test_3d_pooling_and_resampling_layouts_as_torch(rng, device):
    """channels_last_3d in: max pooling, interpolation and padding keep it, the average and
    adaptive pools return contiguous results, as PyTorch's."""
    x = rng.standard_normal((2, 3, 4, 6, 6)).astype(np.float32)
    strides = []
    for lib in (torch, genesis):
        F = lib.nn.functional
        t = lib.tensor(x, device=device if lib is genesis else "cpu")
        t = t.to(memory_format=lib.channels_last_3d)
        results = [F.max_pool3d(t, 2), F.max_pool3d(t, 2, return_indices=True)[1],
                   F.avg_pool3d(t, 2), F.lp_pool3d(t, 2, 2), F.adaptive_avg_pool3d(t, 2),
                   F.adaptive_max_pool3d(t, 2), F.interpolate(t, scale_factor=2),
                   F.interpolate(t, scale_factor=2, mode="trilinear"),
                   F.interpolate(t, size=(2, 3, 3), mode="area"),
                   F.pad(t, (1, 1, 1, 1, 1, 1)), F.pad(t, (1, 1, 1, 1, 1, 1), mode="reflect")]
        strides.append([_dense_strides(r) for r in results])
    assert strides[1] == strides[0]


_MIXED = {
    "cl * row-major": lambda lib, cl, c, b: cl * c,
    "row-major * cl": lambda lib, cl, c, b: c * cl,
    "cl + bias": lambda lib, cl, c, b: cl + b,
    "bias - cl": lambda lib, cl, c, b: b - cl,
    "cl + scalar": lambda lib, cl, c, b: cl + 2,
    "cl > row-major": lambda lib, cl, c, b: cl > c,
    "cl * row-major half": lambda lib, cl, c, b: cl * c.half(),
    "where(cl cond)": lambda lib, cl, c, b: lib.where(cl > 0, c, cl),
    "where(row-major cond)": lambda lib, cl, c, b: lib.where(c > 0, cl, b),
    "lerp": lambda lib, cl, c, b: lib.lerp(cl, c, 0.3),
    "addcmul": lambda lib, cl, c, b: lib.addcmul(cl, c, b),
    "transposed + row-major": lambda lib, cl, c, b: c.transpose(1, 3) + c.transpose(1, 3) * 0,
    "transposed cl + transposed": lambda lib, cl, c, b: cl.transpose(2, 3) + c.transpose(2, 3),
}


@pytest.mark.parametrize("case", list(_MIXED))
def test_elementwise_results_of_mixed_layouts_as_torch(case, rng, device):
    """Operands of different layouts: the result is dense in the order the first operand that
    tells two dims apart gives them (a channels-last x plus a row-major y is channels-last, a
    row-major y plus x row-major), broadcast operands and scalars having no say; as PyTorch's
    TensorIterator lays it out."""
    x = rng.standard_normal((2, 3, 4, 4)).astype(np.float32)
    bias = rng.standard_normal((1, 3, 1, 1)).astype(np.float32)
    results = []
    for lib in (torch, genesis):
        dev = device if lib is genesis else "cpu"
        c = lib.tensor(x, device=dev)
        cl = c.contiguous(memory_format=lib.channels_last)
        out = _MIXED[case](lib, cl, c, lib.tensor(bias, device=dev))
        results.append((out, _dense_strides(out)))
    assert results[1][1] == results[0][1]
    assert_close(results[1][0], results[0][0])
