"""nn.Module and containers: registration, enumeration, modes, dtypes, state dicts, hooks, repr."""

import copy
import pickle

import numpy as np
import pytest
import torch

import genesis
from genesis import nn


class Scale(nn.Module):
    """A tiny module with a parameter, a buffer and a non-persistent buffer."""

    def __init__(self, n=3):
        super().__init__()
        self.weight = nn.Parameter(genesis.randn(n))
        self.register_buffer("count", genesis.zeros(n))
        self.register_buffer("scratch", genesis.ones(n), persistent=False)

    def forward(self, x, shift=0.0):
        return x * self.weight + shift


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = Scale()
        self.b = nn.Sequential(Scale(), Scale())
        self.shared = self.a


def test_attribute_registration_and_enumeration():
    net = Net()
    assert [n for n, _ in net.named_parameters()] == ["a.weight", "b.0.weight", "b.1.weight"]
    assert [n for n, _ in net.named_parameters(remove_duplicate=False)] == [
        "a.weight", "b.0.weight", "b.1.weight", "shared.weight"]
    assert next(n for n, _ in net.named_parameters(prefix="m")) == "m.a.weight"
    assert next(n for n, _ in net.a.named_parameters(recurse=False)) == "weight"
    assert list(net.named_parameters(recurse=False)) == []
    assert [n for n, _ in net.named_buffers()] == ["a.count", "a.scratch", "b.0.count",
                                                   "b.0.scratch", "b.1.count", "b.1.scratch"]
    assert [n for n, _ in net.named_children()] == ["a", "b"]
    assert [n for n, _ in net.named_modules()] == ["", "a", "b", "b.0", "b.1"]
    assert len(list(net.modules())) == 5
    assert net.get_submodule("b.1") is net.b[1]
    assert net.get_parameter("b.0.weight") is net.b[0].weight
    assert net.get_buffer("a.count") is net.a.count
    assert "weight" in dir(net.a) and "count" in dir(net.a)


def test_state_dict_skips_non_persistent_buffers_and_detaches():
    net = Net()
    sd = net.state_dict()
    assert list(sd) == ["a.weight", "a.count", "b.0.weight", "b.0.count", "b.1.weight",
                        "b.1.count", "shared.weight", "shared.count"]
    assert not sd["a.weight"].requires_grad
    assert net.state_dict(keep_vars=True)["a.weight"] is net.a.weight


def test_reassignment_moves_between_registries():
    m = Scale()
    m.count = None
    assert m.count is None and "count" in m._buffers
    m.extra = nn.Parameter(genesis.zeros(2))
    assert "extra" in m._parameters
    del m.extra
    assert "extra" not in m._parameters and not hasattr(m, "extra")
    m.sub = Scale()
    m.sub = None
    assert m._modules["sub"] is None
    with pytest.raises(TypeError, match="cannot assign 'genesis.Tensor' as parameter 'weight'"):
        m.weight = genesis.zeros(3)
    with pytest.raises(TypeError, match="cannot assign 'int' as buffer 'count'"):
        m.count = 3


@pytest.mark.parametrize("call, error, match", [
    (lambda m: m.register_parameter("a.b", None), KeyError, "contain"),
    (lambda m: m.register_parameter("", None), KeyError, "empty string"),
    (lambda m: m.register_parameter("forward", None), KeyError, "already exists"),
    (lambda m: m.register_parameter("p", genesis.zeros(2)), TypeError, "genesis.nn.Parameter"),
    (lambda m: m.register_buffer("b", 3), TypeError, "cannot assign 'int' object to buffer"),
    (lambda m: m.add_module("m", 3), TypeError, "is not a Module subclass"),
    (lambda m: m.register_parameter(1, None), TypeError, "should be a string"),
])
def test_registration_errors(call, error, match):
    with pytest.raises(error, match=match):
        call(Scale())


def test_non_leaf_parameter_and_uninitialised_module():
    with pytest.raises(ValueError, match="Cannot assign non-leaf Tensor"):
        Scale().register_parameter("p", _non_leaf_parameter())

    class Early(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(genesis.zeros(1))
    with pytest.raises(AttributeError, match="before Module.__init__"):
        Early()


def _non_leaf_parameter():
    p = nn.Parameter(genesis.zeros(2))
    p.grad_fn = (p * 2).grad_fn
    return p


def test_parameter_basics():
    t = genesis.randn(2, 3)
    p = nn.Parameter(t)
    assert isinstance(p, genesis.Tensor) and p.requires_grad and p.is_leaf
    assert p.data_ptr() == t.data_ptr()
    assert repr(p).startswith("Parameter containing:\ntensor(")
    assert not nn.Parameter(t, requires_grad=False).requires_grad
    assert nn.Parameter().shape == (0,)
    q = copy.deepcopy(p)
    assert type(q) is nn.Parameter and q.data_ptr() != p.data_ptr()
    np.testing.assert_array_equal(q.detach().numpy(), p.detach().numpy())


def test_train_eval_apply_requires_grad():
    net = Net()
    assert net.training and net.b[1].training
    assert net.eval() is net and not net.b[1].training
    net.train()
    assert net.b[0].training
    with pytest.raises(ValueError, match="boolean"):
        net.train("yes")
    seen = []
    net.apply(lambda m: seen.append(type(m).__name__))
    assert seen == ["Scale", "Scale", "Scale", "Sequential", "Net"]
    net.requires_grad_(False)
    assert not any(p.requires_grad for p in net.parameters())


@pytest.mark.parametrize("set_to_none", [True, False])
def test_zero_grad(set_to_none):
    m = Scale()
    m(genesis.ones(3)).sum().backward()
    grad = m.weight.grad
    m.zero_grad(set_to_none=set_to_none)
    if set_to_none:
        assert m.weight.grad is None
    else:
        assert m.weight.grad is grad
        np.testing.assert_array_equal(grad.numpy(), np.zeros(3, np.float32))


@pytest.mark.parametrize("method, dtype", [("double", genesis.float64), ("half", genesis.float16),
                                           ("bfloat16", genesis.bfloat16),
                                           ("float", genesis.float32)])
def test_dtype_conversion_keeps_parameter_objects(method, dtype):
    m = nn.BatchNorm1d(3)
    weight = m.weight
    m(genesis.randn(4, 3)).sum().backward()
    assert getattr(m, method)() is m
    assert m.weight is weight and isinstance(m.weight, nn.Parameter) and m.weight.requires_grad
    assert m.weight.dtype is dtype and m.weight.grad.dtype is dtype
    assert m.running_mean.dtype is dtype
    assert m.num_batches_tracked.dtype is genesis.int64


def test_to_device_and_dtype_arguments():
    m = Scale()
    assert m.to(genesis.float64).weight.dtype is genesis.float64
    assert m.to("cpu", genesis.float32).weight.dtype is genesis.float32
    assert m.to(genesis.zeros(1, dtype=genesis.float64)).weight.dtype is genesis.float64
    assert m.cpu().weight.device.type == "cpu"
    with pytest.raises(TypeError, match="only accepts floating point"):
        m.to(genesis.int64)


def _copy_state(src, dst):
    """A state dict of one framework loaded into the other, through numpy."""
    if isinstance(dst, torch.nn.Module):
        return dst.load_state_dict({k: torch.from_numpy(np.array(v.numpy())) for k, v in
                                    src.state_dict().items()})
    return dst.load_state_dict({k: genesis.tensor(v.numpy()) for k, v in
                                src.state_dict().items()})


def _pair_of_models():
    def build(lib):
        nn_ = lib.nn
        return nn_.Sequential(nn_.Linear(4, 6), nn_.BatchNorm1d(6), nn_.ReLU(),
                              nn_.ModuleList([nn_.Linear(6, 6), nn_.LayerNorm(6)]),
                              nn_.Embedding(5, 6, padding_idx=0))
    return build(genesis), build(torch)


@pytest.mark.parametrize("direction", ["torch_to_genesis", "genesis_to_torch"])
def test_state_dict_round_trip_with_torch(direction):
    g, t = _pair_of_models()
    assert list(g.state_dict()) == list(t.state_dict())
    src, dst = (t, g) if direction == "torch_to_genesis" else (g, t)
    result = _copy_state(src, dst)
    assert not result.missing_keys and not result.unexpected_keys
    for key, value in dst.state_dict().items():
        np.testing.assert_array_equal(np.asarray(value.numpy()), src.state_dict()[key].numpy())


def test_load_state_dict_reports_and_leaves_model_unchanged():
    g, _ = _pair_of_models()
    sd = {k: v.clone() for k, v in g.state_dict().items()}
    before = {k: v.numpy().copy() for k, v in sd.items()}
    bad = dict(sd)
    bad["0.weight"] = genesis.zeros(6, 5)
    del bad["1.running_var"]
    bad["extra.weight"] = genesis.zeros(1)
    bad["0.weight.x"] = genesis.zeros(1)
    for key in ("0.bias", "3.0.weight"):
        bad[key] = bad[key] + 1
    with pytest.raises(RuntimeError) as info:
        g.load_state_dict(bad)
    message = str(info.value)
    assert message.startswith("Error(s) in loading state_dict for Sequential:\n\t"
                              "Missing key(s) in state_dict: \"1.running_var\". \n\t"
                              "Unexpected key(s) in state_dict: \"extra.weight\", "
                              "\"0.weight.x\". \n\t")
    assert ("size mismatch for 0.weight: copying a param with shape genesis.Size([6, 5]) from "
            "checkpoint, the shape in current model is genesis.Size([6, 4]).") in message
    for key, value in g.state_dict().items():
        np.testing.assert_array_equal(value.numpy(), before[key])
    del bad["0.weight"]
    result = g.load_state_dict(bad, strict=False)
    assert result.missing_keys == ["0.weight", "1.running_var"]
    assert result.unexpected_keys == ["extra.weight", "0.weight.x"]
    np.testing.assert_array_equal(g.state_dict()["0.bias"].numpy(), before["0.bias"] + 1)
    assert repr(g.load_state_dict(g.state_dict())) == "<All keys matched successfully>"


def test_load_state_dict_casts_and_assigns():
    m = Scale()
    weight = m.weight
    m.load_state_dict({"weight": genesis.tensor([1.0, 2.0, 3.0], dtype=genesis.float64),
                       "count": genesis.zeros(3)})
    assert m.weight is weight and m.weight.dtype is genesis.float32
    np.testing.assert_array_equal(m.weight.detach().numpy(), [1, 2, 3])
    new = genesis.tensor([4.0, 5.0, 6.0], dtype=genesis.float64)
    m.load_state_dict({"weight": new, "count": genesis.zeros(3)}, assign=True)
    assert isinstance(m.weight, nn.Parameter) and m.weight.dtype is genesis.float64
    with pytest.raises(TypeError, match="dict-like"):
        m.load_state_dict([("weight", new)])


def test_swap_tensors_as_torch():
    """swap_tensors trades classes, data and attributes; a weak reference forbids it."""
    import weakref
    seen = []
    for lib in (torch, genesis):
        a, b = lib.nn.Parameter(lib.ones(2)), lib.arange(3)
        b.note = "b"
        lib.utils.swap_tensors(a, b)
        seen.append((type(a).__name__, type(b).__name__, a.tolist(), b.tolist(), a.note,
                     b.requires_grad, a.requires_grad))
        ref = weakref.ref(a)
        with pytest.raises(RuntimeError) as info:
            lib.utils.swap_tensors(b, a)
        seen.append(str(info.value))
        del ref
    assert seen[2:] == seen[:2]


@pytest.fixture
def future_switches():
    """Restore both frameworks' __future__ conversion switches after the test."""
    yield
    for lib in (torch, genesis):
        lib.__future__.set_swap_module_params_on_conversion(False)
        lib.__future__.set_overwrite_module_params_on_conversion(False)


@pytest.mark.parametrize("switch", [None, "swap", "overwrite"])
def test_conversion_switches_as_torch(switch, future_switches):
    """Under each of genesis.__future__'s switches a dtype conversion keeps or replaces the
    Parameter objects and converts their gradients, as torch's do."""
    seen = []
    for lib in (torch, genesis):
        if switch:
            getattr(lib.__future__, f"set_{switch}_module_params_on_conversion")(True)
        m = lib.nn.Linear(2, 3)
        m(lib.ones(1, 2)).sum().backward()
        weight, grad = m.weight, m.weight.grad
        m.double()
        seen.append((m.weight is weight, m.weight.grad is grad, weight.dtype is lib.float64,
                     str(m.weight.grad.dtype)[-7:], str(m.bias.dtype)[-7:], type(m.weight).__name__,
                     m.weight.requires_grad, m.weight.grad.tolist()))
    assert seen[1] == seen[0]


@pytest.mark.parametrize("assign", [False, True])
def test_load_state_dict_swaps_through_module_load(assign, future_switches):
    """With the swap switch on, load_state_dict keeps the Parameter objects and gives them
    module_load's result: the state dict's dtype with assign, the module's without."""
    seen = []
    for lib in (torch, genesis):
        lib.__future__.set_swap_module_params_on_conversion(True)
        m = lib.nn.Linear(2, 3)
        weight = m.weight
        state = {"weight": lib.ones(3, 2, dtype=lib.float64), "bias": lib.zeros(3)}
        m.load_state_dict(state, assign=assign)
        seen.append((m.weight is weight, str(m.weight.dtype)[-7:], type(m.weight).__name__,
                     m.weight.requires_grad, m.weight.tolist(), state["weight"] is m.weight))
    assert seen[1] == seen[0]


def test_module_load_returning_an_input_is_refused(future_switches):
    class Same(nn.Parameter):
        def module_load(self, other, assign=False):
            return other

    genesis.__future__.set_swap_module_params_on_conversion(True)
    m = nn.Linear(2, 3)
    m.weight = Same(m.weight.detach())
    with pytest.raises(RuntimeError, match="module_load returned one of self or other"):
        m.load_state_dict({"weight": genesis.ones(3, 2), "bias": genesis.zeros(3)})


def test_forward_hooks():
    m = Scale()
    x = genesis.ones(3)
    calls = []
    h1 = m.register_forward_pre_hook(lambda mod, args: (args[0] * 2,))
    h2 = m.register_forward_hook(lambda mod, args, out: out + 1)
    h3 = m.register_forward_hook(lambda mod, args, out: calls.append("first"), prepend=True)
    h4 = m.register_forward_pre_hook(lambda mod, args, kwargs: (args, {"shift": 10.0}),
                                     with_kwargs=True)
    h5 = m.register_forward_hook(lambda mod, args, kwargs, out: calls.append(kwargs),
                                 with_kwargs=True)
    out = m(x)
    expected = 2 * m.weight.detach().numpy() + 10 + 1
    np.testing.assert_allclose(out.detach().numpy(), expected)
    assert calls == ["first", {"shift": 10.0}]
    for h in (h1, h2, h3, h4, h5):
        h.remove()
    np.testing.assert_allclose(m(x).detach().numpy(), m.weight.detach().numpy())


def test_missing_forward():
    with pytest.raises(NotImplementedError, match='missing the required "forward"'):
        nn.Module()(genesis.ones(1))


def test_repr_matches_torch():
    def build(lib):
        nn_ = lib.nn
        return nn_.Sequential(
            nn_.Conv2d(3, 8, 3, padding=1, bias=False), nn_.BatchNorm2d(8), nn_.ReLU(inplace=True),
            nn_.MaxPool2d(2), nn_.Conv1d(2, 4, 3, stride=2, padding=1, groups=2),
            nn_.Conv2d(2, 4, (3, 5), padding="same", dilation=2),
            nn_.AvgPool2d(2), nn_.AdaptiveAvgPool2d((1, 1)), nn_.Flatten(), nn_.Dropout(0.1),
            nn_.ModuleList([nn_.Linear(8, 8)] * 3 + [nn_.GELU(approximate="tanh")]),
            nn_.ModuleDict({"ln": nn_.LayerNorm(8), "gn": nn_.GroupNorm(2, 8)}),
            nn_.Embedding(10, 4, padding_idx=0), nn_.MultiheadAttention(8, 2),
            nn_.LeakyReLU(0.2), nn_.Softmax(dim=-1), nn_.LogSoftmax(1), nn_.Identity(),
            nn_.CrossEntropyLoss(), nn_.Bilinear(2, 3, 4), nn_.RMSNorm(4), nn_.SiLU(),
            nn_.Unflatten(1, (2, 4)), nn_.Tanh(), nn_.Sigmoid(), nn_.ELU(), nn_.Dropout2d())
    assert repr(build(genesis)) == repr(build(torch))


def test_sequential():
    layers = [Scale(), Scale(), Scale()]
    seq = nn.Sequential(*layers)
    assert len(seq) == 3 and seq[-1] is layers[2] and list(seq) == layers
    assert isinstance(seq[1:], nn.Sequential) and list(seq[1:]) == layers[1:]
    with pytest.raises(IndexError):
        seq[3]
    extra = Scale()
    seq.append(extra)
    assert seq[3] is extra
    del seq[0]
    assert list(seq._modules) == ["0", "1", "2"] and seq[0] is layers[1]
    seq.insert(0, layers[0])
    assert seq[0] is layers[0] and len(seq) == 4
    assert seq.pop(1) is layers[1]
    seq[0] = extra
    assert seq[0] is extra
    named = nn.Sequential(__import__("collections").OrderedDict(first=Scale(), second=Scale()))
    assert [n for n, _ in named.named_children()] == ["first", "second"]
    x = genesis.randn(3)
    expected = x.numpy() * named.first.weight.detach().numpy() * \
        named.second.weight.detach().numpy()
    np.testing.assert_allclose(named(x).detach().numpy(), expected, rtol=1e-6)
    assert len(seq + named) == 5


def test_module_list_and_dict():
    items = [Scale(), Scale()]
    ml = nn.ModuleList(items)
    ml.append(Scale())
    ml.extend([Scale()])
    ml += [Scale()]
    assert len(ml) == 5 and ml[0] is items[0] and ml[-4] is items[1]
    assert len(list(ml.parameters())) == 5
    del ml[1]
    assert list(ml._modules) == ["0", "1", "2", "3"]
    ml.insert(1, items[1])
    assert ml[1] is items[1]
    assert isinstance(ml[1:3], nn.ModuleList) and len(ml[1:3]) == 2
    with pytest.raises(TypeError, match="iterable"):
        ml.extend(Scale())
    md = nn.ModuleDict({"a": items[0]})
    md["b"] = items[1]
    md.update([("c", Scale())])
    assert list(md) == ["a", "b", "c"] and "b" in md and len(md) == 3
    assert md.pop("a") is items[0] and list(md.keys()) == ["b", "c"]
    assert [n for n, _ in md.named_parameters()] == ["b.weight", "c.weight"]


def test_parameter_list_and_dict():
    pl = nn.ParameterList([nn.Parameter(genesis.zeros(2)), genesis.ones(3)])
    assert isinstance(pl[1], nn.Parameter) and pl[1].requires_grad
    pl.append(genesis.zeros(1))
    assert len(pl) == 3 and [n for n, _ in pl.named_parameters()] == ["0", "1", "2"]
    tl = torch.nn.ParameterList([torch.nn.Parameter(torch.zeros(2)), torch.ones(3),
                                 torch.zeros(1)])
    assert repr(pl) == repr(tl).replace("torch.", "genesis.")
    pd = nn.ParameterDict({"w": genesis.zeros(2)})
    pd["v"] = nn.Parameter(genesis.ones(1))
    assert list(pd) == ["w", "v"] and isinstance(pd["w"], nn.Parameter)
    assert [n for n, _ in pd.named_parameters()] == ["w", "v"]
    del pd["w"]
    assert list(pd.keys()) == ["v"]
    assert repr(pd) == "ParameterDict(  (v): Parameter containing: [genesis.float32 of size 1])"


def test_deepcopy_module_keeps_sharing():
    net = Net()
    clone = copy.deepcopy(net)
    assert clone.shared is clone.a and clone.a.weight is not net.a.weight
    np.testing.assert_array_equal(clone.a.weight.detach().numpy(), net.a.weight.detach().numpy())


def test_pickle_round_trip():
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    clone = pickle.loads(pickle.dumps(model))
    assert type(clone[0].weight) is nn.Parameter and clone[0].weight.requires_grad
    x = genesis.randn(5, 3)
    np.testing.assert_array_equal(clone(x).detach().numpy(), model(x).detach().numpy())


def test_buffer_assignment_registers_as_torch():
    states = []
    for lib in (genesis, torch):
        class Counter(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.count = lib.nn.Buffer(lib.zeros(2))
                self.scratch = lib.nn.Buffer(lib.ones(1), persistent=False)

        module = Counter()
        assert isinstance(module.count, lib.nn.Buffer)
        assert not isinstance(lib.zeros(1), lib.nn.Buffer)
        assert type(module.count) is lib.Tensor
        states.append((list(module.state_dict()), [n for n, _ in module.named_buffers()]))
        module.count = lib.nn.Buffer(lib.ones(3))
        assert tuple(module.count.shape) == (3,)
    assert states[0] == states[1] == (["count"], ["count", "scratch"])
