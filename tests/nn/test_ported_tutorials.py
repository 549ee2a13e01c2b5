"""Ported PyTorch tutorials (the basics, nn_tutorial, custom Functions, saved-tensor hooks, the
optimizer step in backward, parametrizations, spatial transformers, the char-RNNs), each reduced
to the smallest model that exercises the same API, written once against a framework (`torch` or
`genesis`) and run in both from the same initial weights: losses agree within 2e-4 relative in
float32, gradients and printed graph names match."""

import math

import numpy as np
import pytest
import torch
from helpers import assert_close
from nn_compare import copy_module

import genesis

pytestmark = pytest.mark.usefixtures("cudnn_ieee")

LIBS = {"torch": torch, "genesis": genesis}


def _both(build, *args):
    """(torch result, genesis result) of `build(lib, *args)`."""
    return build(torch, *args), build(genesis, *args)


def _twin(build, device):
    """A torch module and its genesis copy holding the same weights."""
    t_model = build(torch)
    return t_model, copy_module(build(genesis), t_model, device)


def _data(lib, arrays, device):
    return [lib.tensor(a) if lib is torch else lib.tensor(a, device=device) for a in arrays]


# the basics: quickstart and nn_tutorial


def quickstart_net(lib):
    nn = lib.nn

    class NeuralNetwork(nn.Module):
        def __init__(self):
            super().__init__()
            self.flatten = nn.Flatten()
            self.linear_relu_stack = nn.Sequential(nn.Linear(7 * 7, 16), nn.ReLU(),
                                                   nn.Linear(16, 10), nn.ReLU())

        def forward(self, x):
            return self.linear_relu_stack(self.flatten(x))

    return NeuralNetwork()


def _quickstart(lib, model, x, y, path):
    """Train through a DataLoader, evaluate under no_grad, save and reload the state_dict,
    classify one image by indexing a list with a 0-d tensor."""
    loader = lib.utils.data.DataLoader(lib.utils.data.TensorDataset(x, y), batch_size=8)
    loss_fn, optimizer = lib.nn.CrossEntropyLoss(), lib.optim.SGD(model.parameters(), lr=0.5)
    losses = []
    for X, Y in loader:
        loss = loss_fn(model(X), Y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    with lib.no_grad():
        correct = (model(x).argmax(1) == y).type(lib.float).sum().item()
    lib.save(model.state_dict(), path)
    model.load_state_dict(lib.load(path))
    classes = [str(i) for i in range(10)]
    return losses, correct, classes[model(x[:1])[0].argmax(0)]


def test_quickstart_as_torch(rng, device, tmp_path):
    x = rng.random((24, 1, 7, 7)).astype(np.float32)
    y = rng.integers(0, 10, 24)
    t_model, model = _twin(quickstart_net, device)
    expected = _quickstart(torch, t_model, *_data(torch, (x, y), device), tmp_path / "t.pth")
    got = _quickstart(genesis, model, *_data(genesis, (x, y), device), tmp_path / "g.pth")
    np.testing.assert_allclose(got[0], expected[0], rtol=2e-4)
    assert got[1:] == expected[1:]


def _nn_tutorial(lib, x, y, w0):
    """Logistic regression by hand (`input[range(n), target]`, updates under no_grad), then a
    CNN with a Lambda view, avg pooling, momentum SGD and a summed validation loss."""
    F, nn = lib.nn.functional, lib.nn
    weights = lib.tensor(w0, device=x.device).requires_grad_()
    bias = lib.zeros(10, requires_grad=True, device=x.device)

    def nll(input, target):
        return -input[range(target.shape[0]), target].mean()

    def model(xb):
        z = xb @ weights + bias
        return z - z.exp().sum(-1).log().unsqueeze(-1)
    losses = []
    for i in range(0, 16, 8):
        loss = nll(model(x[i:i + 8]), y[i:i + 8])
        loss.backward()
        with lib.no_grad():
            weights -= weights.grad * 0.5
            bias -= bias.grad * 0.5
            weights.grad.zero_()
            bias.grad.zero_()
        losses.append(loss.item())

    class Lambda(nn.Module):
        def __init__(self, func):
            super().__init__()
            self.func = func

        def forward(self, x):
            return self.func(x)
    lib.manual_seed(0)
    cnn = nn.Sequential(Lambda(lambda t: t.view(-1, 1, 8, 8)),
                        nn.Conv2d(1, 4, kernel_size=3, stride=2, padding=1), nn.ReLU(),
                        nn.Conv2d(4, 10, kernel_size=3, stride=2, padding=1), nn.ReLU(),
                        nn.AvgPool2d(2), Lambda(lambda t: t.view(t.size(0), -1)))
    return losses, nll, cnn


def test_nn_tutorial_as_torch(rng, device):
    x, y = rng.random((16, 64)).astype(np.float32), rng.integers(0, 10, 16)
    w0 = (rng.standard_normal((64, 10)) / 8).astype(np.float32)
    (t_losses, _, t_cnn), (losses, _, cnn) = (_nn_tutorial(lib, *_data(lib, (x, y), device), w0)
                                              for lib in (torch, genesis))
    np.testing.assert_allclose(losses, t_losses, rtol=2e-4)
    cnn = copy_module(cnn, t_cnn, device)
    results = []
    for lib, model in ((torch, t_cnn), (genesis, cnn)):
        xs, ys = _data(lib, (x, y), device)
        opt = lib.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        for _ in range(3):
            lib.nn.functional.cross_entropy(model(xs), ys).backward()
            opt.step()
            opt.zero_grad()
        with lib.no_grad():
            valid = sum(lib.nn.functional.cross_entropy(model(xb), yb)
                        for xb, yb in ((xs[:8], ys[:8]), (xs[8:], ys[8:])))
        results.append(float(valid / 2))
    np.testing.assert_allclose(results[1], results[0], rtol=2e-4)


# custom autograd Functions: conv + batch norm fused by hand, double backward


def conv_bn_functions(lib):
    F = lib.nn.functional

    def unsqueeze_all(t):
        return t[None, :, None, None]

    class FusedConvBN(lib.autograd.Function):
        """Conv then batch norm, saving only the conv's input; the conv reruns in backward."""

        @staticmethod
        def forward(ctx, X, weight, eps=1e-3):
            ctx.save_for_backward(X, weight)
            X = F.conv2d(X, weight)
            ctx.sum, ctx.N, ctx.eps = X.sum(dim=(0, 2, 3)), X.numel() / X.size(1), eps
            ctx.sqrt_var = lib.sqrt(X.var(unbiased=True, dim=(0, 2, 3)))
            out = X - unsqueeze_all(ctx.sum / ctx.N)
            out /= unsqueeze_all(ctx.sqrt_var + eps)
            return out

        @staticmethod
        @lib.autograd.function.once_differentiable
        def backward(ctx, grad_out):
            X, weight = ctx.saved_tensors
            Y, N, s, d = F.conv2d(X, weight), ctx.N, ctx.sum, ctx.sqrt_var + ctx.eps
            d_var = -((Y - unsqueeze_all(s) / N) * grad_out).sum(dim=(0, 2, 3)) / d ** 2 / (
                2 * ctx.sqrt_var)
            grad = Y * unsqueeze_all(d_var * N)
            grad += unsqueeze_all(-d_var * s)
            grad *= 2 / ((N - 1) * N)
            grad += unsqueeze_all(-(grad_out / unsqueeze_all(d)).sum(dim=(0, 2, 3)) / N)
            grad *= unsqueeze_all(d)
            grad += grad_out
            grad /= unsqueeze_all(d)
            grad_X = F.conv_transpose2d(grad, weight)
            grad_w = F.conv2d(X.transpose(0, 1), grad.transpose(0, 1)).transpose(0, 1)
            return grad_X, grad_w, None

    return FusedConvBN


def test_fused_conv_bn_function_as_torch(rng):
    X = rng.random((2, 2, 4, 4))
    W = rng.random((3, 2, 3, 3))
    outs = {}
    for name, lib in LIBS.items():
        x, w = (lib.tensor(a, requires_grad=True) for a in (X, W))
        fn = conv_bn_functions(lib)
        assert lib is torch or lib.autograd.gradcheck(fn.apply, (x, w))
        out = fn.apply(x, w)
        (out * lib.tensor(X[:, :1, 1:3, 1:3])).sum().backward()
        outs[name] = (out, x.grad, w.grad, out.grad_fn.name())
    for got, expected in zip(outs["genesis"][:3], outs["torch"][:3]):
        assert_close(got, expected.detach())
    assert outs["genesis"][3] == outs["torch"][3] == "FusedConvBNBackward"


def double_backward_functions(lib):
    class Sinh(lib.autograd.Function):
        """Intermediates returned as outputs, so the backward graph includes them."""

        @staticmethod
        def forward(ctx, x):
            expx, expnegx = lib.exp(x), lib.exp(-x)
            ctx.save_for_backward(expx, expnegx)
            return (expx - expnegx) / 2, expx, expnegx

        @staticmethod
        def backward(ctx, grad_out, grad_exp, grad_negexp):
            expx, expnegx = ctx.saved_tensors
            grad_input = grad_out * (expx + expnegx) / 2
            grad_input += grad_exp * expx
            grad_input -= grad_negexp * expnegx
            return grad_input

    class Cube(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, grad_out):
            x, = ctx.saved_tensors
            return CubeBackward.apply(grad_out, x)

    class CubeBackward(lib.autograd.Function):
        @staticmethod
        def forward(ctx, grad_out, x):
            ctx.save_for_backward(x, grad_out)
            return grad_out * 3 * x ** 2

        @staticmethod
        def backward(ctx, grad_out):
            x, saved_grad_out = ctx.saved_tensors
            return grad_out * 3 * x ** 2, grad_out * saved_grad_out * 6 * x

    return (lambda x: Sinh.apply(x)[0]), Cube.apply


def _graph(node, seen=None):
    """The names of a backward graph, depth first, as torchviz walks it."""
    seen = set() if seen is None else seen
    if node is None or id(node) in seen:
        return []
    seen.add(id(node))
    name = type(node).__name__ if hasattr(node, "variable") else node.name()
    return [name] + [n for child, _ in node.next_functions for n in _graph(child, seen)]


def test_double_backward_functions_as_torch(rng):
    a = rng.random((3, 3))
    graphs, grads = {}, {}
    for name, lib in LIBS.items():
        sinh, cube = double_backward_functions(lib)
        x = lib.tensor(a, requires_grad=True)
        if lib is genesis:
            assert lib.autograd.gradcheck(sinh, x) and lib.autograd.gradgradcheck(sinh, x)
            assert lib.autograd.gradcheck(cube, x) and lib.autograd.gradgradcheck(cube, x)
        g_sinh, = lib.autograd.grad(sinh(x).sum(), x, create_graph=True)
        g_cube, = lib.autograd.grad(cube(x).sum(), x, create_graph=True)
        graphs[name] = (_graph(g_sinh.grad_fn), _graph(g_cube.grad_fn))
        grads[name] = lib.autograd.grad((g_sinh * g_cube).sum(), x)[0]
    assert graphs["genesis"] == graphs["torch"]
    assert_close(grads["genesis"], grads["torch"])


# saved-tensor hooks and the optimizer step in backward


def test_saved_tensors_hooks_tutorial_as_torch(rng, tmp_path):
    """grad_fn._saved_*, hooks that print what they pack, and hooks that keep saved tensors in
    files (each file read back on every access, deleted when the graph frees it)."""
    a = rng.standard_normal(5)
    logs = {}
    for name, lib in LIBS.items():
        log = logs[name] = []
        x, w = lib.tensor(a, requires_grad=True), lib.ones(5, requires_grad=True) * 2
        y = x * w
        log.append((y.grad_fn._saved_self is x, y.grad_fn._saved_other is w))
        e = lib.exp(x)
        log.append((bool(e.grad_fn._saved_result.equal(e)), e.grad_fn._saved_result is e))
        with lib.autograd.graph.saved_tensors_hooks(lambda t: log.append(("pack", t.tolist()))
                                                    or t, lambda t: log.append("unpack") or t):
            z = x * w
        z.sum().backward()
        folder = tmp_path / name
        folder.mkdir()

        def pack(t, lib=lib, folder=folder):
            path = folder / str(len(list(folder.iterdir())))
            lib.save(t, path)
            return path

        with lib.autograd.graph.saved_tensors_hooks(pack, lambda path, lib=lib: lib.load(path)):
            p = x.pow(2)
        log.append((p.grad_fn._saved_self.tolist(), p.grad_fn._saved_exponent))
        p.sum().backward()
        log.append(x.grad.tolist())
    assert logs["genesis"] == logs["torch"]


def test_optimizer_step_in_backward_as_torch(rng, device):
    """One Adam per parameter, stepped by a post-accumulate-grad hook: the gradients are gone
    after backward and the weights move as a plain Adam loop moves them."""
    x = rng.random((2, 12)).astype(np.float32)

    def build(lib):
        return lib.nn.Sequential(lib.nn.Linear(12, 8), lib.nn.LayerNorm(8), lib.nn.GELU(),
                                 lib.nn.Linear(8, 3))
    t_model, model = _twin(build, device)
    for lib, net in ((torch, t_model), (genesis, model)):
        optimizers = {p: lib.optim.Adam([p], foreach=False) for p in net.parameters()}

        def hook(p, optimizers=optimizers):
            optimizers[p].step()
            optimizers[p].zero_grad()
        for p in net.parameters():
            p.register_post_accumulate_grad_hook(hook)
        for _ in range(3):
            net(_data(lib, (x,), device)[0]).sum().backward()
        assert all(p.grad is None for p in net.parameters())
    for (name, p), t in zip(model.named_parameters(), t_model.parameters()):
        assert_close(p, t.detach(), rtol=2e-4, atol=1e-6)


# parametrizations


def parametrized(lib):
    nn, P = lib.nn, lib.nn.utils.parametrize

    class Skew(nn.Module):
        def forward(self, X):
            A = X.triu(1)
            return A - A.transpose(-1, -2)

        def right_inverse(self, A):
            return A.triu(1)

    class CayleyMap(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.register_buffer("Id", lib.eye(n))

        def forward(self, X):
            return lib.linalg.solve(self.Id - X, self.Id + X)

    class MatrixExponential(nn.Module):
        def forward(self, X):
            return lib.matrix_exp(X)

    cayley, expm = nn.Linear(3, 3), nn.Linear(3, 3)
    for layer, second in ((cayley, CayleyMap(3)), (expm, MatrixExponential())):
        P.register_parametrization(layer, "weight", Skew())
        P.register_parametrization(layer, "weight", second)
    return nn.Sequential(cayley, nn.Tanh(), expm)


def test_parametrizations_tutorial_as_torch(rng, device):
    """Orthogonal weights by Skew then Cayley / matrix exponential: same weights, printing,
    parameter names, training steps and removal as PyTorch."""
    t_model, model = _twin(parametrized, device)
    assert repr(model) == repr(t_model)
    assert [n for n, _ in model.named_parameters()] == [n for n, _ in t_model.named_parameters()]
    x = rng.standard_normal((4, 3)).astype(np.float32)
    losses = []
    for lib, net in ((torch, t_model), (genesis, model)):
        xs = _data(lib, (x,), device)[0]
        opt, run = lib.optim.SGD(net.parameters(), lr=0.1), []
        for _ in range(3):
            with lib.nn.utils.parametrize.cached():
                loss = (net(xs) ** 2).mean()
            loss.backward()
            opt.step()
            opt.zero_grad()
            run.append(loss.item())
        w = net[0].weight
        assert lib.dist(w.T @ w, lib.eye(3, device=w.device)).item() < 1e-5
        assert lib.dist(w, w).grad_fn.name() == "DistBackward0"
        lib.nn.utils.parametrize.remove_parametrizations(net[2], "weight")
        losses.append(run)
    np.testing.assert_allclose(losses[1], losses[0], rtol=2e-4)
    assert repr(model) == repr(t_model)
    assert_close(model[2].weight, t_model[2].weight.detach(), rtol=2e-4, atol=1e-6)


# spatial transformer


def stn(lib):
    nn, F = lib.nn, lib.nn.functional

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.localization = nn.Sequential(nn.Conv2d(1, 4, kernel_size=5),
                                              nn.MaxPool2d(2, stride=2), nn.ReLU(True))
            self.fc_loc = nn.Sequential(nn.Linear(4 * 4 * 4, 8), nn.ReLU(True), nn.Linear(8, 6))
            self.conv = nn.Conv2d(1, 3, kernel_size=5)
            self.fc = nn.Linear(3 * 4 * 4, 10)
            self.fc_loc[2].weight.data.zero_()
            # near the tutorial's identity: at it every sample falls on a pixel centre, a kink
            # of bilinear sampling whose one-sided gradient turns on the grid's last ulp
            self.fc_loc[2].bias.data = lib.FloatTensor([0.9, 0.05, 0.03, -0.02, 0.95, 0.01])

        def forward(self, x):
            theta = self.fc_loc(self.localization(x).view(-1, 4 * 4 * 4)).view(-1, 2, 3)
            x = F.grid_sample(x, F.affine_grid(theta, x.size(), align_corners=False),
                              align_corners=False)
            x = F.relu(F.max_pool2d(self.conv(x), 2))
            return F.log_softmax(self.fc(x.view(-1, 3 * 4 * 4)), dim=1)

    return Net()


def test_spatial_transformer_trains_as_torch(rng, device):
    x = rng.standard_normal((4, 1, 12, 12)).astype(np.float32)
    y = rng.integers(0, 10, 4)
    t_model, model = _twin(stn, device)
    losses = []
    for lib, net in ((torch, t_model), (genesis, model)):
        xs, ys = _data(lib, (x, y), device)
        xs, ys = lib.autograd.Variable(xs), lib.autograd.Variable(ys)
        opt, run = lib.optim.SGD(net.parameters(), lr=0.05), []
        for _ in range(4):
            opt.zero_grad()
            loss = lib.nn.functional.nll_loss(net(xs), ys)
            loss.backward()
            opt.step()
            run.append(loss.item())
        losses.append(run)
    np.testing.assert_allclose(losses[1], losses[0], rtol=2e-4)
    assert losses[0][-1] != losses[0][0]


# channels last


def test_memory_format_tutorial_as_torch(rng, device):
    """The tutorial's CPU part: strides of conversions, factories, clones, pointwise results and
    a channels_last conv (its output, and its weight's gradient) as PyTorch gives them."""
    x = rng.standard_normal((2, 8, 4, 4)).astype(np.float32)
    seen = []
    for lib, conv in zip((torch, genesis), _twin(lambda lib: lib.nn.Conv2d(8, 4, 3), device)):
        cl = lib.channels_last
        t = _data(lib, (x,), device)[0]
        u = t.to(memory_format=cl)
        conv = conv.to(memory_format=cl)
        out = conv(u)
        out.sum().backward()
        special = lib.empty(4, 1, 4, 4)
        seen.append([u.stride(), u.to(memory_format=lib.contiguous_format).stride(),
                     t.contiguous(memory_format=cl).stride(),
                     lib.empty(2, 3, 4, 4, memory_format=cl).stride(), u.clone().stride(),
                     lib.empty_like(u).stride(), (u + u).stride(), (u * 2).stride(),
                     special.is_contiguous(memory_format=cl),
                     special.to(memory_format=cl).stride(),
                     special.contiguous(memory_format=cl).stride(),
                     out.is_contiguous(memory_format=cl), conv.weight.grad.stride(),
                     lib.cat([u, u], 1).is_contiguous(memory_format=cl)])
        seen[-1].append(out.detach().cpu().numpy())
    assert seen[1][:-1] == seen[0][:-1]
    np.testing.assert_allclose(seen[1][-1], seen[0][-1], rtol=2e-4, atol=1e-5)


# the char-RNNs


def _one_hot_names(names, n_letters):
    """Each name as (length, 1, n_letters) one-hot letters, letters 'a'.. as 0.."""
    out = []
    for name in names:
        a = np.zeros((len(name), 1, n_letters), np.float32)
        a[np.arange(len(name)), 0, [ord(c) - 97 for c in name]] = 1
        out.append(a)
    return out


def char_rnn_classifier(lib):
    nn = lib.nn

    class CharRNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.RNN(8, 16)
            self.h2o = nn.Linear(16, 3)
            self.softmax = nn.LogSoftmax(dim=1)

        def forward(self, line_tensor):
            _, hidden = self.rnn(line_tensor)
            return self.softmax(self.h2o(hidden[0]))

    return CharRNN()


def _train_classifier(lib, rnn, lines, labels):
    """A batch's loss summed from 0 over its names, gradients clipped, SGD; then the top guess
    of each name (a list indexed by `top_i[0].item()`)."""
    optimizer, criterion, losses = lib.optim.SGD(rnn.parameters(), lr=0.2), lib.nn.NLLLoss(), []
    for _ in range(3):
        batch_loss = 0
        for line, label in zip(lines, labels):
            batch_loss += criterion(rnn(line), label)
        batch_loss.backward()
        lib.nn.utils.clip_grad_norm_(rnn.parameters(), 3)
        optimizer.step()
        optimizer.zero_grad()
        losses.append(batch_loss.item() / len(lines))
    classes = ["a", "b", "c"]
    with lib.no_grad():
        guesses = [classes[rnn(line).topk(1)[1][0].item()] for line in lines]
    return losses, guesses


def test_char_rnn_classifier_trains_as_torch(device):
    names = ["abc", "hgfe", "dd", "bad", "cafe"]
    lines = _one_hot_names(names, 8)
    labels = [np.array([i % 3]) for i in range(len(names))]
    t_model, model = _twin(char_rnn_classifier, device)
    expected = _train_classifier(torch, t_model, *(_data(torch, a, device) for a in (lines, labels)))
    got = _train_classifier(genesis, model, *(_data(genesis, a, device) for a in (lines, labels)))
    np.testing.assert_allclose(got[0], expected[0], rtol=2e-4)
    assert got[1] == expected[1]


def char_rnn_generator(lib):
    nn = lib.nn

    class RNN(nn.Module):
        def __init__(self, n_categories=2, size=9, hidden=12):
            super().__init__()
            self.hidden_size = hidden
            self.i2h = nn.Linear(n_categories + size + hidden, hidden)
            self.i2o = nn.Linear(n_categories + size + hidden, size)
            self.o2o = nn.Linear(hidden + size, size)
            self.softmax = nn.LogSoftmax(dim=1)

        def forward(self, category, input, hidden):
            combined = lib.cat((category, input, hidden), 1)
            hidden = self.i2h(combined)
            output = self.o2o(lib.cat((hidden, self.i2o(combined)), 1))
            return self.softmax(output), hidden

    return RNN()


def _train_generator(lib, rnn, category, line, targets):
    """The legacy loop: `loss = Tensor([0])` accumulated in place, targets unsqueezed in place,
    hidden state from a Variable, weights updated through `.data` with the deprecated
    `add_(alpha, other)` and today's `add_(other, alpha=)`."""
    losses = []
    for step in range(3):
        target = targets.clone()
        target.unsqueeze_(-1)
        hidden = lib.autograd.Variable(lib.zeros(1, rnn.hidden_size, device=line.device))
        rnn.zero_grad()
        loss = lib.Tensor([0]).to(line.device)
        for i in range(line.size(0)):
            output, hidden = rnn(category, line[i], hidden)
            loss += lib.nn.NLLLoss()(output, target[i])
        loss.backward()
        for p in rnn.parameters():
            if step % 2:
                p.data.add_(-0.05, p.grad.data)
            else:
                p.data.add_(p.grad.data, alpha=-0.05)
        losses.append(loss.item() / line.size(0))
    return losses


@pytest.mark.filterwarnings("ignore:This overload of add")
def test_char_rnn_generator_trains_as_torch(device):
    line = _one_hot_names(["abcfe"], 9)[0]
    category = np.array([[0.0, 1.0]], np.float32)
    targets = np.array([1, 2, 5, 4, 8])
    t_model, model = _twin(char_rnn_generator, device)
    expected = _train_generator(torch, t_model, *_data(torch, (category, line, targets), device))
    got = _train_generator(genesis, model, *_data(genesis, (category, line, targets), device))
    np.testing.assert_allclose(got, expected, rtol=2e-4)
    assert math.isfinite(got[-1]) and got[-1] < got[0]


# recipes: checkpoints, warm starts, a Dropout2d after a Linear; the imbalanced-data tutorial


def recipe_net(lib):
    nn, F = lib.nn, lib.nn.functional

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 4, 3)
            self.pool = nn.MaxPool2d(2, 2)
            self.fc1 = nn.Linear(4 * 3 * 3, 12)
            self.dropout = nn.Dropout2d(0.0)
            self.fc3 = nn.Linear(12, 3)

        def forward(self, x):
            x = self.pool(F.relu(self.conv1(x))).flatten(1)
            return F.log_softmax(self.fc3(self.dropout(F.relu(self.fc1(x)))), dim=1)

    return Net()


def _recipes(lib, net, x, y, weights, folder):
    """A step, a general checkpoint (model, optimizer with momentum state, numbers) saved and
    loaded into fresh objects, a step from each; a warm start with strict=False; a weighted
    NLLLoss over a WeightedRandomSampler's batches, counted into a confusion matrix indexed by
    0-d tensors."""
    nn = lib.nn
    optimizer = lib.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    criterion = nn.NLLLoss(weight=lib.from_numpy(weights).float().to(x.device))
    criterion(net(x), y).backward()
    optimizer.step()
    path = folder / "checkpoint.pt"
    lib.save({"epoch": 5, "model_state_dict": net.state_dict(),
              "optimizer_state_dict": optimizer.state_dict(), "loss": 0.4}, path)
    model, checkpoint = recipe_net(lib).to(x.device), lib.load(path, weights_only=True)
    model.load_state_dict(checkpoint["model_state_dict"])
    resumed = lib.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    resumed.load_state_dict(checkpoint["optimizer_state_dict"])
    losses = [checkpoint["epoch"], checkpoint["loss"]]
    for m, opt in ((net, optimizer), (model, resumed)):
        opt.zero_grad()
        loss = criterion(m(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    head = nn.Linear(12, 3)
    warm = nn.Module()
    warm.fc1, warm.head = nn.Linear(4 * 3 * 3, 12), head
    keys = warm.load_state_dict(net.state_dict(), strict=False)
    sampler = lib.utils.data.WeightedRandomSampler(lib.from_numpy(weights[y.cpu().numpy()]),
                                                   num_samples=len(y), replacement=True)
    assert set(sampler) <= set(range(len(y)))
    confusion = lib.zeros(3, 3)
    with lib.no_grad():
        _, preds = lib.max(model(x), 1)
        for t, p in zip(y, preds):
            confusion[t, p] += 1
    return losses, repr(keys), confusion.diag().sum().item() / len(y)


@pytest.mark.filterwarnings("ignore:dropout2d. Received a 2-D input")
def test_recipes_and_imbalanced_data_as_torch(rng, device, tmp_path):
    x = rng.standard_normal((6, 3, 8, 8)).astype(np.float32)
    y = np.array([0, 0, 0, 0, 1, 2])
    weights = 1.0 / np.bincount(y)
    t_model, model = _twin(recipe_net, device)
    results = []
    for lib, net in ((torch, t_model), (genesis, model)):
        folder = tmp_path / lib.__name__
        folder.mkdir()
        results.append(_recipes(lib, net, *_data(lib, (x, y), device), weights, folder))
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=2e-4)
    assert results[1][1:] == results[0][1:]
    with pytest.warns(UserWarning, match="dropout2d: Received a 2-D input to dropout2d"):
        model.train()(genesis.ones(2, 3, 8, 8, device=device))
