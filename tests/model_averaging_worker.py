"""Checks that tests/test_model_averaging.py runs inside each rank of a two-rank gloo job:
PeriodicModelAverager's schedule, utils.average_parameters, post_localSGD_hook before and after
its start, and PostLocalSGDOptimizer under DDP against a numpy reference; and, in a four-rank
job, HierarchicalModelAverager's schedule. Every rank builds every rank's data from the job's
seed."""

import os
import warnings

import numpy as np
import pytest

import genesis
import genesis.distributed as dist
from genesis import nn
from genesis.distributed.algorithms.ddp_comm_hooks.post_localSGD_hook import (
    PostLocalSGDState, post_localSGD_hook)
from genesis.distributed.algorithms.model_averaging import averagers, utils
from genesis.distributed.algorithms.model_averaging.hierarchical_model_averager import (
    HierarchicalModelAverager)
from genesis.distributed.optim import PostLocalSGDOptimizer
from genesis.nn.parallel import DistributedDataParallel as DDP

LR = 0.1


def start(rank, world, port):
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)


def values(seed, step, rank, shapes):
    rng = np.random.default_rng([seed, step, rank])
    return [rng.standard_normal(shape).astype(np.float32) for shape in shapes]


def batch(seed, step, rank):
    return values(seed, 1000 + step, rank, [(5, 4)])[0]


def set_params(params, arrays):
    for p, a in zip(params, arrays):
        p.data = genesis.tensor(a)
        p.grad = genesis.zeros_like(p)


def check_periodic_averager(rank, seed):
    """With period 3 and 2 warm-up steps, steps 2, 5 and 8 average; the others leave each
    rank's parameters alone. A parameter without a gradient is never averaged."""
    shapes = [(3, 2), (4,)]
    params = [nn.Parameter(genesis.zeros(s)) for s in shapes]
    idle = nn.Parameter(genesis.tensor(float(rank)))
    averager = averagers.PeriodicModelAverager(period=3, warmup_steps=2)
    assert averager.process_group is dist.group.WORLD
    for step in range(9):
        mine = values(seed, step, rank, shapes)
        set_params(params, mine)
        averager.average_parameters([{"params": params + [idle]}])
        assert averager.step == step + 1
        if step in (2, 5, 8):
            other = values(seed, step, 1 - rank, shapes)
            mine = [(a + b) / 2 for a, b in zip(mine, other)]
        for p, want in zip(params, mine):
            np.testing.assert_allclose(p.detach().numpy(), want, rtol=1e-6, atol=1e-7)
        assert idle.item() == rank


def check_average_parameters(rank, seed):
    """utils.average_parameters gives every parameter the ranks' mean, shapes kept."""
    shapes = [(2, 3), (5,), (1, 1, 2)]
    params = [nn.Parameter(genesis.tensor(a)) for a in values(seed, 0, rank, shapes)]
    utils.average_parameters(iter(params), None)
    for p, a, b in zip(params, values(seed, 0, 0, shapes), values(seed, 0, 1, shapes)):
        assert tuple(p.shape) == a.shape
        np.testing.assert_allclose(p.detach().numpy(), (a + b) / 2, rtol=1e-6, atol=1e-7)


def linear(seed):
    genesis.manual_seed(seed)
    return nn.Linear(4, 3)


def numpy_grads(weight, bias, x):
    """Gradients of mean((x W^T + b)^2) with respect to W and b."""
    dy = 2 * (x @ weight.T + bias) / (x.shape[0] * weight.shape[0])
    return dy.T @ x, dy.sum(0)


def local_subgroup():
    subgroup, subgroups = dist.new_subgroups(group_size=1)
    assert len(subgroups) == 2
    return subgroup


def check_hook(rank, seed):
    """Before start_localSGD_iter=2 the gradients are the ranks' mean; after it, with a
    subgroup of one rank each, they stay this rank's own."""
    ddp = DDP(linear(seed))
    state = PostLocalSGDState(None, local_subgroup(), start_localSGD_iter=2)
    ddp.register_comm_hook(state, post_localSGD_hook)
    weight, bias = (p.detach().numpy().copy() for p in ddp.module.parameters())
    for step in range(4):
        ddp.zero_grad()
        ddp(genesis.tensor(batch(seed, step, rank))).pow(2).mean().backward()
        grads = [numpy_grads(weight, bias, batch(seed, step, r)) for r in (0, 1)]
        want = grads[rank] if step >= 2 else [(a + b) / 2 for a, b in zip(*grads)]
        for p, g in zip(ddp.module.parameters(), want):
            np.testing.assert_allclose(p.grad.numpy(), g, rtol=1e-5, atol=1e-6)
        assert state.iter == min(step + 1, 2)


def reference(seed, steps):
    """Both ranks' (W, b) after `steps` SGD steps: global gradient averaging for two steps,
    then local steps with the parameters averaged at steps 2 and 4."""
    net = linear(seed)
    params = [[p.detach().numpy().copy() for p in net.parameters()] for _ in (0, 1)]
    for step in range(steps):
        grads = [numpy_grads(*params[r], batch(seed, step, r)) for r in (0, 1)]
        if step < 2:
            grads = [[(a + b) / 2 for a, b in zip(*grads)]] * 2
        params = [[p - LR * g for p, g in zip(params[r], grads[r])] for r in (0, 1)]
        if step >= 2 and step % 2 == 0:
            params = [[(a + b) / 2 for a, b in zip(*params)]] * 2
    return params


def post_local_sgd(seed, rank, steps):
    ddp = DDP(linear(seed))
    ddp.register_comm_hook(PostLocalSGDState(None, local_subgroup(), 2), post_localSGD_hook)
    opt = PostLocalSGDOptimizer(genesis.optim.SGD(ddp.parameters(), lr=LR),
                                averagers.PeriodicModelAverager(period=2, warmup_steps=2))
    for step in range(steps):
        opt.zero_grad()
        ddp(genesis.tensor(batch(seed, step, rank))).pow(2).mean().backward()
        opt.step()
    return ddp, opt


def check_optimizer(rank, seed):
    """DDP with the hook and PostLocalSGDOptimizer trains each rank to the reference; after a
    local last step the ranks differ."""
    ddp, opt = post_local_sgd(seed, rank, 6)
    want = reference(seed, 6)
    for p, w in zip(ddp.module.parameters(), want[rank]):
        np.testing.assert_allclose(p.detach().numpy(), w, rtol=1e-5, atol=1e-6)
    assert not np.allclose(want[0][0], want[1][0])
    assert opt.param_groups is opt.optim.param_groups and opt.state is opt.optim.state
    assert repr(opt) == repr(opt.optim)


def check_state_dict(rank, seed):
    """state_dict records the averager's step; a fresh optimizer loads it back, or warns and
    starts from 0 where the dict has none."""
    ddp, opt = post_local_sgd(seed, rank, 3)
    saved = opt.state_dict()
    assert saved["step"] == 3
    fresh = PostLocalSGDOptimizer(genesis.optim.SGD(ddp.parameters(), lr=LR),
                                  averagers.PeriodicModelAverager(period=2, warmup_steps=2))
    fresh.load_state_dict(saved)
    assert fresh.averager.step == 3
    assert fresh.param_groups[0]["lr"] == LR
    del saved["step"]
    with pytest.warns(UserWarning, match="Loaded state dict does not contain a step counter "
                      "for an averager. Setting step counter to 0."):
        fresh.load_state_dict(saved)
    assert fresh.averager.step == 0


def run(rank, world, port, seed):
    start(rank, world, port)
    warnings.simplefilter("error", UserWarning)
    check_periodic_averager(rank, seed)
    check_average_parameters(rank, seed)
    check_hook(rank, seed)
    check_optimizer(rank, seed)
    check_state_dict(rank, seed)
    dist.destroy_process_group()


def run_hierarchical(rank, world, port, seed):
    """{2: 2, 4: 4} after one warm-up step: steps 2 and 6 average within the pairs (0, 1) and
    (2, 3), step 4 over all four ranks, the others not at all."""
    start(rank, world, port)
    shapes = [(2, 3), (4,)]
    params = [nn.Parameter(genesis.zeros(s)) for s in shapes]
    averager = HierarchicalModelAverager({2: 2, 4: 4}, warmup_steps=1)
    for step in range(7):
        set_params(params, values(seed, step, rank, shapes))
        averager.average_parameters(params)
        group = {2: [rank // 2 * 2, rank // 2 * 2 + 1], 6: [rank // 2 * 2, rank // 2 * 2 + 1],
                 4: list(range(world))}.get(step, [rank])
        ranks = [values(seed, step, r, shapes) for r in group]
        for i, p in enumerate(params):
            want = sum(v[i] for v in ranks) / len(ranks)
            np.testing.assert_allclose(p.detach().numpy(), want, rtol=1e-6, atol=1e-7)
    dist.destroy_process_group()
