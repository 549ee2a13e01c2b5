"""Entry points for tests/test_multiprocessing_sharing.py's children (importable by name, for
spawn and forkserver; no torch import, which would slow their start)."""

import genesis


def add_to_parameters(model, value):
    """Check what arrived (shared Parameters requiring grad) and add `value` to each with an SGD
    step on a gradient of -1."""
    optimizer = genesis.optim.SGD(model.parameters(), lr=value)
    for p in model.parameters():
        assert isinstance(p, genesis.nn.Parameter) and p.requires_grad and p.is_shared()
        p.grad = genesis.full_like(p, -1.0)
    optimizer.step()


def round_trip(inbox, outbox, done):
    """Check the tensors received, write into them, send a view back and a new tensor, and stay
    alive until the parent has them (a descriptor is fetched from its sender)."""
    plain, param, leaf = inbox.get()
    assert plain.is_shared() and param.is_shared() and leaf.is_shared()
    assert type(param) is genesis.nn.Parameter and param.requires_grad and param.grad is None
    assert type(leaf) is genesis.Tensor and leaf.requires_grad and leaf.grad is None
    plain.fill_(7)
    with genesis.no_grad():
        param.mul_(2)
    outbox.put((plain[1:], genesis.full((2,), 5.0)))
    done.wait(30)


def fill(t, value):
    t.fill_(value)


def hogwild_train(rank, lib, model, updates, steps=5, lr=0.05):
    """mnist_hogwild's train, on a linear regression: SGD steps on `model`'s shared parameters,
    seeded by rank; puts (rank, the sum of the steps it applied to each parameter). The steps are
    written out, as torch.optim's first use imports torch._dynamo (seconds in a fresh child)."""
    lib.manual_seed(1 + rank)
    applied = [lib.zeros_like(p, dtype=lib.float64) for p in model.parameters()]
    for _ in range(steps):
        x = lib.randn(8, 4)
        lib.nn.functional.mse_loss(model(x), regression_target(lib, x)).backward()
        with lib.no_grad():
            for total, p in zip(applied, model.parameters()):
                total += lr * p.grad.double()
                p.sub_(lr * p.grad)
                p.grad = None
    updates.put((rank, [total.tolist() for total in applied]))


def regression_target(lib, x):
    return x @ lib.tensor([[1.0], [-2.0], [0.5], [3.0]]) + 1.0
