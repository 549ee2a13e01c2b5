"""Ported PyTorch recipes (changing the default device, loading a module from a checkpoint,
swapping tensors) and the 60-minute blitz's network, each reduced to the API it exercises,
written once against a framework and run in both: printed results, graph walks and values
agree with torch's."""

import numpy as np
import torch

import genesis
from helpers import assert_close
from nn_compare import copy_module


def _device_blocks(lib):
    """A layer made inside `with lib.device("cpu")`, used on a tensor made there too, then
    after set_default_device: the devices printed along the way."""
    shown = []
    with lib.device("cpu"):
        layer = lib.nn.Linear(4, 3)
        shown += [str(layer.weight.device), str(layer(lib.randn(2, 4)).device)]
    lib.set_default_device("cpu")
    try:
        shown += [str(lib.nn.Linear(4, 3).weight.device), str(lib.get_default_device())]
    finally:
        lib.set_default_device(None)
    return shown


def test_changing_default_device_recipe_as_torch():
    assert _device_blocks(genesis) == _device_blocks(torch)


def _load_tips(lib, folder, state):
    """Save a state dict, load it memory-mapped, assign it to a fresh module (parameters become
    the loaded tensors, still Parameters), and train one step from it."""
    model = lib.nn.Sequential(*[lib.nn.Linear(3, 3) for _ in range(4)])
    model.load_state_dict({k: lib.tensor(v) for k, v in state.items()})
    lib.save(model.state_dict(), folder / "checkpoint.pth")
    loaded = lib.load(folder / "checkpoint.pth", mmap=True)
    fresh = lib.nn.Sequential(*[lib.nn.Linear(3, 3) for _ in range(4)])
    keys = fresh.load_state_dict(loaded, assign=True)
    weight = fresh[0].weight
    kinds = (type(weight).__name__, weight.requires_grad)
    optimizer = lib.optim.SGD(fresh.parameters(), lr=0.1)
    fresh(lib.ones(2, 3)).square().sum().backward()
    optimizer.step()
    return repr(keys), kinds, fresh[2].bias.detach().numpy().copy()


def test_module_load_state_dict_tips_as_torch(rng, tmp_path):
    shapes = torch.nn.Sequential(*[torch.nn.Linear(3, 3) for _ in range(4)]).state_dict()
    state = {k: rng.standard_normal(tuple(v.shape)).astype(np.float32) for k, v in shapes.items()}
    results = []
    for lib in (torch, genesis):
        (tmp_path / lib.__name__).mkdir()
        results.append(_load_tips(lib, tmp_path / lib.__name__, state))
    assert results[1][:2] == results[0][:2]
    np.testing.assert_allclose(results[1][2], results[0][2], rtol=1.3e-6, atol=1e-5)


def _swap_recipe(lib):
    """swap_tensors on two tensors; a Parameter replaced behind an optimizer's back; a module
    conversion under each __future__ switch."""
    t1, t2 = lib.arange(2), lib.arange(3)
    lib.utils.swap_tensors(t1, t2)
    shown = [f"t1: {t1}, t2: {t2}"]
    mod = lib.nn.Linear(1, 2, bias=False)
    optimizer = lib.optim.SGD(mod.parameters())
    mod.weight = lib.nn.Parameter(2 * mod.weight)
    shown.append(optimizer.param_groups[0]["params"][0] is mod.weight)
    for switch in ("swap", "overwrite"):
        getattr(lib.__future__, f"set_{switch}_module_params_on_conversion")(True)
        try:
            m = lib.nn.Linear(3, 5)
            weight = m.weight
            m.bfloat16()
            shown.append((switch, weight is m.weight, str(weight.dtype)[-8:]))
        finally:
            getattr(lib.__future__, f"set_{switch}_module_params_on_conversion")(False)
    return shown


def test_swap_tensors_recipe_as_torch():
    assert _swap_recipe(genesis) == _swap_recipe(torch)


def lenet(lib):
    nn, F = lib.nn, lib.nn.functional

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1, self.conv2 = nn.Conv2d(1, 2, 3), nn.Conv2d(2, 4, 3)
            self.fc1, self.fc2 = nn.Linear(4 * 2 * 2, 6), nn.Linear(6, 3)

        def forward(self, x):
            x = F.max_pool2d(F.relu(self.conv1(x)), (2, 2))
            x = lib.flatten(F.max_pool2d(F.relu(self.conv2(x)), 2), 1)
            return self.fc2(F.relu(self.fc1(x)))

    return Net()


def _blitz(lib, net, x, target):
    """The blitz's steps: an MSE loss, the graph walked back from it one node, the bias
    gradient before and after backward, an SGD step and a manual update through `.data`."""
    criterion = lib.nn.MSELoss()
    loss = criterion(net(x), target)
    walk = [repr(loss.grad_fn).split(" object")[0],
            [repr(n).split(" object")[0] if n else n for n, _ in loss.grad_fn.next_functions]]
    net.zero_grad()
    before = net.conv1.bias.grad
    loss.backward()
    after = net.conv1.bias.grad.clone()
    optimizer = lib.optim.SGD(net.parameters(), lr=0.01)
    optimizer.zero_grad()
    criterion(net(x), target).backward()
    optimizer.step()
    for f in net.parameters():
        f.data.sub_(f.grad.data * 0.01)
    return walk, before, after, net(x)


def test_blitz_neural_network_as_torch(rng):
    x = rng.standard_normal((2, 1, 14, 14)).astype(np.float32)
    target = rng.standard_normal((2, 3)).astype(np.float32)
    t_net = lenet(torch)
    net = copy_module(lenet(genesis), t_net)
    t_walk, t_before, t_after, t_out = _blitz(torch, t_net, torch.tensor(x), torch.tensor(target))
    walk, before, after, out = _blitz(genesis, net, genesis.tensor(x), genesis.tensor(target))
    assert walk == t_walk == ["<MseLossBackward0", ["<AddmmBackward0", None]]
    assert before is t_before is None
    assert_close(after, t_after, rtol=2e-4)
    assert_close(out, t_out, rtol=2e-4)
