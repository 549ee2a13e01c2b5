"""Shared-memory tensors: share_memory_/is_shared against torch, tensors sent through
genesis.multiprocessing (Process arguments under each start method, Queue, Pool) writing the
sender's memory, a small hogwild run beside torch's, and /dev/shm left as it was found."""

import gc
import os
import pathlib
import pickle
import sys
from multiprocessing.reduction import ForkingPickler

import pytest
import torch
import torch.multiprocessing as torch_mp

import genesis
import genesis.multiprocessing as mp
from genesis import nn
import sharing_targets

STRATEGIES = sorted(mp.get_all_sharing_strategies())
SHM = pathlib.Path("/dev/shm")
needs_fork = pytest.mark.skipif(sys.platform != "linux", reason="fork start method")


@pytest.fixture(params=STRATEGIES)
def strategy(request):
    """Each sharing strategy in turn, the default restored afterwards."""
    default = mp.get_sharing_strategy()
    mp.set_sharing_strategy(request.param)
    yield request.param
    mp.set_sharing_strategy(default)


def _segments(pids):
    """The named genesis segments in /dev/shm created by processes `pids`."""
    return {p.name for p in SHM.glob("genesis_*") if int(p.name.split("_")[1]) in pids}


def _sharing_views(lib):
    a = lib.zeros(6)
    b, c = a[2:], a.view(2, 3)
    seen = [a.is_shared(), b.is_shared(), b.share_memory_() is b]
    seen += [a.is_shared(), c.is_shared(), b.data_ptr() - a.data_ptr()]
    ptr = a.data_ptr()
    seen.append(a.share_memory_().data_ptr() == ptr)  # already shared: a no-op
    b.fill_(3)
    c[0, 0] = 1
    return seen, a.tolist()


def test_share_memory_moves_every_view_as_torch(strategy):
    assert _sharing_views(genesis) == _sharing_views(torch)


def _module_sharing(lib):
    model = lib.nn.Sequential(lib.nn.Linear(2, 3), lib.nn.BatchNorm1d(3))
    model[0].weight.grad = lib.ones(3, 2)
    params = list(model.parameters())
    assert model.share_memory() is model
    assert all(p is q for p, q in zip(model.parameters(), params))
    tensors = params + list(model.buffers()) + [model[0].weight.grad]
    return [type(p).__name__ for p in params], [t.is_shared() for t in tensors]


def test_module_share_memory_as_torch():
    assert _module_sharing(genesis) == _module_sharing(torch)


@pytest.mark.skipif(not genesis.cuda.is_available(), reason="needs CUDA")
def test_cuda_tensors_count_as_shared():
    t = genesis.ones(2, device="cuda")
    assert t.share_memory_() is t and t.is_shared()


def test_sending_moves_a_plain_tensor_to_shared_memory_as_torch():
    for lib in (genesis, torch):
        t = lib.arange(4.0)
        received = pickle.loads(ForkingPickler.dumps(t))
        assert t.is_shared() and received.is_shared() and received.tolist() == t.tolist()


def test_plain_pickle_still_copies_values():
    t = genesis.arange(3.0).share_memory_()
    copy = pickle.loads(pickle.dumps(t))
    copy.fill_(9)
    assert not copy.is_shared() and t.tolist() == [0.0, 1.0, 2.0]


def test_a_non_leaf_requiring_grad_is_refused_as_torch():
    for lib in (genesis, torch):
        x = lib.ones(2, requires_grad=True)
        with pytest.raises(RuntimeError, match="Cowardly refusing to serialize non-leaf tensor"):
            ForkingPickler.dumps(x * 2)


START = [("fork", "file_descriptor"), ("fork", "file_system"), ("spawn", "file_descriptor"),
         ("forkserver", "file_system")]


@pytest.mark.parametrize("method,strategy", START, indirect=["strategy"])
def test_a_child_writes_shared_parameters(method, strategy):
    if method not in mp.get_all_start_methods():
        pytest.skip(f"no {method} start method here")
    before = _segments({os.getpid()}) if SHM.is_dir() else set()
    model = nn.Linear(2, 2).share_memory()
    expected = [(p + 1).tolist() for p in model.parameters()]
    child = mp.get_context(method).Process(target=sharing_targets.add_to_parameters,
                                           args=(model, 1.0))
    child.start()
    child.join(60)
    assert child.exitcode == 0
    assert [p.tolist() for p in model.parameters()] == expected
    del model
    gc.collect()
    if SHM.is_dir():
        assert not _segments({os.getpid()}) - before


def _round_trip():
    """Send a plain tensor, a Parameter with a gradient and a leaf requiring grad to a forked
    child; returns its pid, those three and what it sent back."""
    ctx = mp.get_context("fork")
    inbox, outbox, done = ctx.Queue(), ctx.Queue(), ctx.Event()
    child = ctx.Process(target=sharing_targets.round_trip, args=(inbox, outbox, done))
    child.start()
    param, leaf = nn.Parameter(genesis.ones(2)), genesis.zeros(2, requires_grad=True)
    param.grad = leaf.grad = genesis.ones(2)
    sent = (genesis.zeros(3), param, leaf)
    inbox.put(sent)
    received = outbox.get(timeout=60)
    done.set()
    child.join(60)
    assert child.exitcode == 0
    return child.pid, sent + received


@needs_fork
def test_queue_round_trip(strategy):
    _, (plain, param, _, view, made) = _round_trip()
    assert plain.is_shared() and plain.tolist() == [7.0] * 3 and param.tolist() == [2.0] * 2
    view[0] = 9
    assert plain.tolist() == [7.0, 9.0, 7.0]
    assert made.is_shared() and made.tolist() == [5.0] * 2


@needs_fork
def test_pool_workers_write_the_callers_tensor():
    t = genesis.zeros(3)
    with mp.get_context("fork").Pool(1) as pool:
        pool.apply(sharing_targets.fill, (t, 4.0))
        pool.close()
        pool.join()
    assert t.is_shared() and t.tolist() == [4.0] * 3


@needs_fork
@pytest.mark.skipif(not SHM.is_dir(), reason="no /dev/shm")
def test_named_segments_go_with_their_last_tensor():
    default = mp.get_sharing_strategy()
    mp.set_sharing_strategy("file_system")
    try:
        before = _segments({os.getpid()})
        child, tensors = _round_trip()
    finally:
        mp.set_sharing_strategy(default)
    pids = {os.getpid(), child}
    made = _segments(pids) - before
    assert len(made) == 4 and _segments({child})  # plain, param, leaf and the child's tensor
    del tensors
    gc.collect()
    assert not _segments(pids) - before


def _hogwild(lib, lib_mp):
    """mnist_hogwild's shape: a shared model trained by 2 processes at once, then tested."""
    lib.manual_seed(0)
    model = lib.nn.Linear(4, 1)
    model.share_memory()
    x = lib.randn(64, 4)
    y = sharing_targets.regression_target(lib, x)
    loss = lib.nn.functional.mse_loss(model(x), y).item()
    initial = [p.detach().double().clone() for p in model.parameters()]
    ctx = lib_mp.get_context("fork")
    updates = ctx.Queue()
    children = [ctx.Process(target=sharing_targets.hogwild_train, args=(rank, lib, model, updates))
                for rank in range(2)]
    for child in children:
        child.start()
    applied = dict(updates.get(timeout=60) for _ in children)
    for child in children:
        child.join(60)
        assert child.exitcode == 0
    final = [p.detach().double() for p in model.parameters()]
    return loss, lib.nn.functional.mse_loss(model(x), y).item(), initial, final, applied


@needs_fork
@pytest.mark.parametrize("lib,lib_mp", [(genesis, mp), (torch, torch_mp)], ids=["genesis", "torch"])
def test_hogwild_both_processes_train_the_shared_model(lib, lib_mp):
    """The parent's parameters carry both children's steps (a racy lost update may shift them a
    little, never by a whole child's share) and the loss went down."""
    loss_before, loss_after, initial, final, applied = _hogwild(lib, lib_mp)
    flat = [lib.cat([lib.tensor(s, dtype=lib.float64).flatten() for s in applied[rank]])
            for rank in range(2)]
    change = lib.cat([(f - i).flatten() for f, i in zip(final, initial)])
    assert (change + flat[0] + flat[1]).norm() < 0.25 * min(flat[0].norm(), flat[1].norm())
    assert loss_after < 0.7 * loss_before
