"""genesis.utils.data against torch.utils.data: collation, samplers, datasets, DataLoader
(in-process and with worker processes: ordering, errors, iterable datasets, shutdown)."""

import collections
import os
import time
import warnings

import numpy as np
import pytest
import torch
import torch.utils.data as tdata

import genesis
from genesis.utils import data
from genesis.utils.data import _worker

from helpers import assert_close, skip_no_cuda

Point = collections.namedtuple("Point", "x y")


def _assert_same_batch(g, t):
    """A genesis batch equals a torch batch: same containers, tensors, numbers and strings."""
    if isinstance(t, torch.Tensor):
        assert isinstance(g, genesis.Tensor)
        assert_close(g, t, rtol=0, atol=0)
    elif isinstance(t, dict):
        assert type(g) is type(t) and list(g) == list(t)
        for k in t:
            _assert_same_batch(g[k], t[k])
    elif isinstance(t, (list, tuple)):
        assert type(g) is type(t) and len(g) == len(t)
        for a, b in zip(g, t):
            _assert_same_batch(a, b)
    elif isinstance(t, np.ndarray):
        np.testing.assert_array_equal(g, t)
    else:
        assert type(g) is type(t) and g == t


def _samples(rng, kind):
    """Three samples of one kind, as genesis and as torch values."""
    arrays = [rng.standard_normal((2, 3)).astype(np.float32) for _ in range(3)]
    if kind == "tensor":
        return [genesis.tensor(a) for a in arrays], [torch.tensor(a) for a in arrays]
    values = {
        "ndarray": arrays,
        "np_int_scalar": [np.int32(i) for i in range(3)],
        "np_float_scalar": [np.float64(i / 3) for i in range(3)],
        "float": [0.5, 1.5, -2.0],
        "int": [1, 2, 3],
        "bool": [True, False, True],
        "str": ["a", "b", "c"],
        "dict": [{"x": i, "y": float(i), "name": str(i)} for i in range(3)],
        "tuple": [(i, float(i)) for i in range(3)],
        "list": [[i, i + 1] for i in range(3)],
        "namedtuple": [Point(i, [i, i]) for i in range(3)],
        "nested": [{"a": (np.arange(2) + i, {"b": [i]})} for i in range(3)],
    }[kind]
    return values, values


KINDS = ["tensor", "ndarray", "np_int_scalar", "np_float_scalar", "float", "int", "bool", "str",
         "dict", "tuple", "list", "namedtuple", "nested"]


@pytest.mark.parametrize("kind", KINDS)
def test_default_collate_matches_torch(kind, rng):
    g, t = _samples(rng, kind)
    _assert_same_batch(data.default_collate(g), tdata.default_collate(t))


@pytest.mark.parametrize("kind", ["ndarray", "np_float_scalar", "dict", "tuple", "str", "int"])
def test_default_convert_matches_torch(kind, rng):
    g, t = _samples(rng, kind)
    _assert_same_batch(data.default_convert(g[0]), tdata.default_convert(t[0]))


@pytest.mark.parametrize("batch,error,message", [
    ([[1, 2], [3]], RuntimeError, "each element in list of batch should be of equal size"),
    ([object()], TypeError, "default_collate: batch must contain tensors, numpy arrays, numbers"),
    ([np.array(["a"])], TypeError, "default_collate: batch must contain"),
    ([genesis.zeros(2), genesis.zeros(3)], RuntimeError, "stack"),
])
def test_default_collate_errors(batch, error, message):
    with pytest.raises(error, match=message):
        data.default_collate(batch)


class Squares(data.Dataset):
    """i -> (i, i^2 as a float tensor), optionally sleeping a little to scramble worker timing."""

    def __init__(self, n, sleepy=False, fail_at=None):
        self.n, self.sleepy, self.fail_at = n, sleepy, fail_at

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i == self.fail_at:
            raise ValueError(f"bad sample {i}")
        if self.sleepy:
            time.sleep(0.002 * ((i * 7) % 5))
        return i, genesis.tensor([float(i * i)])


class TorchSquares(tdata.Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return i, torch.tensor([float(i * i)])


@pytest.mark.parametrize("n,batch_size,drop_last", [(10, 3, False), (10, 3, True), (9, 3, True),
                                                    (5, 8, False), (5, 8, True), (1, 1, False)])
def test_sequential_batches_match_torch(n, batch_size, drop_last):
    g = data.DataLoader(Squares(n), batch_size=batch_size, drop_last=drop_last)
    t = tdata.DataLoader(TorchSquares(n), batch_size=batch_size, drop_last=drop_last)
    assert len(g) == len(t)
    batches = list(g)
    expected = list(t)
    assert len(batches) == len(expected)
    for a, b in zip(batches, expected):
        _assert_same_batch(a, b)


def test_no_auto_batching():
    g = list(data.DataLoader(Squares(3), batch_size=None))
    t = list(tdata.DataLoader(TorchSquares(3), batch_size=None))
    for a, b in zip(g, t):
        _assert_same_batch(a, b)


def test_custom_collate_and_batch_sampler():
    loader = data.DataLoader(Squares(6), batch_sampler=[[5, 0], [2]],
                             collate_fn=lambda batch: [i for i, _ in batch])
    assert list(loader) == [[5, 0], [2]] and len(loader) == 2


def _order(loader):
    return [i for batch, _ in loader for i in batch.tolist()]


def test_shuffle_is_a_reproducible_permutation():
    loaders = [data.DataLoader(Squares(50), batch_size=7, shuffle=True,
                               generator=genesis.Generator().manual_seed(s)) for s in (1, 1, 2)]
    first, again, other = (_order(loader) for loader in loaders)
    assert sorted(first) == list(range(50)) and first != list(range(50))
    assert first == again and first != other
    genesis.manual_seed(3)
    a = _order(data.DataLoader(Squares(20), batch_size=4, shuffle=True))
    genesis.manual_seed(3)
    assert a == _order(data.DataLoader(Squares(20), batch_size=4, shuffle=True))


def test_random_sampler_draws_lazily_from_a_generator_of_its_own():
    sampler = data.RandomSampler(range(7), replacement=True, num_samples=int(1e10))
    genesis.manual_seed(5)
    it = iter(sampler)
    first = [next(it) for _ in range(70)]
    genesis.manual_seed(5)
    it = iter(sampler)
    again = [next(it)]
    genesis.rand(3)
    again += [next(it) for _ in range(69)]
    assert first == again and set(first) == set(range(7)) and len(sampler) == int(1e10)
    assert len(list(data.RandomSampler(range(3), replacement=True, num_samples=45))) == 45


def test_samplers():
    gen = genesis.Generator().manual_seed(0)
    draws = list(data.RandomSampler(range(5), replacement=True, num_samples=12, generator=gen))
    assert len(draws) == 12 and set(draws) <= set(range(5))
    more = list(data.RandomSampler(range(4), num_samples=10, generator=gen))
    assert len(more) == 10 and sorted(more[:4]) == [0, 1, 2, 3]
    assert list(data.SequentialSampler(range(3))) == [0, 1, 2]
    assert sorted(data.SubsetRandomSampler([4, 8, 9])) == [4, 8, 9]
    assert list(data.BatchSampler(range(7), 3, False)) == list(tdata.BatchSampler(range(7), 3,
                                                                                   False))
    assert len(data.BatchSampler(range(7), 3, True)) == 2


def test_weighted_random_sampler():
    gen = genesis.Generator().manual_seed(0)
    draws = list(data.WeightedRandomSampler([0.0, 1.0, 3.0, 0.0], 4000, generator=gen))
    counts = np.bincount(draws, minlength=4)
    assert len(draws) == 4000 and counts[0] == counts[3] == 0
    assert abs(counts[2] / 4000 - 0.75) < 0.04
    once = list(data.WeightedRandomSampler([1.0, 2.0, 0.5, 4.0, 1.0], 5, replacement=False))
    assert sorted(once) == [0, 1, 2, 3, 4]
    assert len(data.WeightedRandomSampler([1, 1], 7)) == 7
    loader = data.DataLoader(range(10), batch_size=3,
                             sampler=data.WeightedRandomSampler([1.0] * 10, 8))
    assert [len(b) for b in loader] == [3, 3, 2]


def test_weighted_random_sampler_takes_tensor_weights_quietly():
    """Tensor weights are taken as they are (as_tensor), without tensor()'s copy warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sampler = data.WeightedRandomSampler(genesis.tensor([1.0, 3.0]), 4)
        tdata.WeightedRandomSampler(torch.tensor([1.0, 3.0]), 4)
    assert sampler.weights.dtype is genesis.float64


def test_stack_dataset():
    xs, ys = genesis.arange(5), Squares(5)
    pairs, named = data.StackDataset(xs, ys), data.StackDataset(x=xs, y=ys)
    assert len(pairs) == 5 and pairs[2][0].item() == 2 and pairs[2][1] == ys[2]
    assert set(named[1]) == {"x", "y"} and named[1]["y"] == ys[1]
    batch = next(iter(data.DataLoader(named, batch_size=5)))
    assert batch["x"].tolist() == [0, 1, 2, 3, 4]
    for args, kwargs, message in [((xs,), {"y": ys}, "but both types are given"),
                                  ((), {}, "At least one dataset should be passed"),
                                  ((xs, Squares(4)), {}, "Size mismatch between datasets")]:
        with pytest.raises(ValueError, match=message):
            data.StackDataset(*args, **kwargs)
        with pytest.raises(ValueError, match=message):
            tdata.StackDataset(*[torch.arange(len(a)) for a in args],
                               **{k: torch.arange(len(v)) for k, v in kwargs.items()})


@pytest.mark.parametrize("build,message", [
    (lambda: data.WeightedRandomSampler([1.0], 0), "num_samples should be a positive integer"),
    (lambda: data.WeightedRandomSampler([1.0], 2, replacement=1), "replacement should be a "),
    (lambda: data.WeightedRandomSampler([[1.0, 2.0]], 2), r"weights should be a 1d sequence but "
                                                          r"given weights have shape \(1, 2\)"),
    (lambda: data.BatchSampler(range(3), 0, False), "batch_size should be a positive integer"),
    (lambda: data.BatchSampler(range(3), 2, 1), "drop_last should be a boolean value"),
    (lambda: data.RandomSampler(range(3), num_samples=0), "num_samples should be a positive"),
    (lambda: data.DataLoader(range(3), sampler=[0], shuffle=True), "mutually exclusive with "
                                                                   "shuffle"),
    (lambda: data.DataLoader(range(3), batch_sampler=[[0]], batch_size=2), "batch_sampler option"),
    (lambda: data.DataLoader(range(3), batch_size=None, drop_last=True), "disables auto-batching"),
    (lambda: data.DataLoader(range(3), num_workers=-1), "num_workers option should be"),
    (lambda: data.DataLoader(range(3), prefetch_factor=2), "prefetch_factor option could only"),
    (lambda: data.DataLoader(range(3), persistent_workers=True), "persistent_workers option needs"),
    (lambda: data.DataLoader(Stream(3), shuffle=True), "expected unspecified shuffle option"),
])
def test_bad_loader_options(build, message):
    with pytest.raises((ValueError, TypeError), match=message):
        build()


def test_datasets(rng):
    x, y = genesis.arange(10), genesis.arange(10) * 2
    ds = data.TensorDataset(x, y)
    assert len(ds) == 10 and [v.item() for v in ds[3]] == [3, 6]
    with pytest.raises(ValueError, match="Size mismatch between tensors"):
        data.TensorDataset(x, genesis.arange(3))
    sub = data.Subset(ds, [9, 1])
    assert len(sub) == 2 and sub[0][1].item() == 18
    cat = Squares(3) + Squares(4)
    assert isinstance(cat, data.ConcatDataset) and len(cat) == 7
    assert [cat[i][0] for i in (0, 2, 3, 6, -1)] == [0, 2, 0, 3, 3]
    parts = data.random_split(range(10), [0.5, 0.3, 0.2], generator=genesis.Generator())
    assert [len(p) for p in parts] == [5, 3, 2]
    assert sorted(i for p in parts for i in p) == list(range(10))
    with pytest.raises(ValueError, match="Sum of input lengths"):
        data.random_split(range(10), [3, 3])


def _stream_class(base, get_worker_info):
    """0..n-1 as an IterableDataset of `base`'s library, split between workers by worker id when
    `split` (as PyTorch's docs suggest)."""

    class Stream(base):
        def __init__(self, n, split=False):
            self.n, self.split = n, split

        def __iter__(self):
            info = get_worker_info()
            if not self.split or info is None:
                return iter(range(self.n))
            return iter(range(info.id, self.n, info.num_workers))

        def __len__(self):
            return self.n

    return Stream


Stream = _stream_class(data.IterableDataset, data.get_worker_info)
TorchStream = _stream_class(tdata.IterableDataset, tdata.get_worker_info)


@pytest.mark.parametrize("batch_size,drop_last", [(3, False), (3, True), (None, False)])
def test_iterable_dataset_in_process(batch_size, drop_last):
    g = [b.tolist() if isinstance(b, genesis.Tensor) else b for b in
         data.DataLoader(Stream(10), batch_size=batch_size, drop_last=drop_last)]
    t = [b.tolist() if isinstance(b, torch.Tensor) else b for b in
         tdata.DataLoader(TorchStream(10), batch_size=batch_size, drop_last=drop_last)]
    assert g == t


def test_workers_return_batches_in_order():
    loader = data.DataLoader(Squares(23, sleepy=True), batch_size=2, num_workers=2,
                             prefetch_factor=3)
    batches = list(loader)
    expected = list(data.DataLoader(Squares(23), batch_size=2))
    assert len(batches) == len(expected) == 12
    for (i, sq), (j, sq2) in zip(batches, expected):
        assert i.tolist() == j.tolist() and sq.tolist() == sq2.tolist()
        assert sq.dtype is genesis.float32


def test_shuffle_order_does_not_depend_on_workers():
    orders = [_order(data.DataLoader(Squares(20), batch_size=3, shuffle=True, num_workers=w,
                                     generator=genesis.Generator().manual_seed(11)))
              for w in (0, 2)]
    assert orders[0] == orders[1] and sorted(orders[0]) == list(range(20))


def _record_worker(worker_id):
    info = data.get_worker_info()
    assert info.id == worker_id and info.num_workers == 2
    info.dataset.init_by = worker_id


class WhoAmI(data.Dataset):
    init_by = None

    def __len__(self):
        return 4

    def __getitem__(self, i):
        info = data.get_worker_info()
        return {"worker": info.id, "init_by": self.init_by, "seed": info.seed,
                "draw": float(np.random.random())}


def test_worker_info_and_init_fn():
    assert data.get_worker_info() is None
    batches = list(data.DataLoader(WhoAmI(), batch_size=1, num_workers=2,
                                   worker_init_fn=_record_worker,
                                   generator=genesis.Generator().manual_seed(5)))
    workers = [b["worker"].item() for b in batches]
    assert workers == [0, 1, 0, 1]
    assert [b["init_by"].item() for b in batches] == workers
    seeds = {b["worker"].item(): b["seed"].item() for b in batches}
    assert seeds[1] == seeds[0] + 1
    assert batches[0]["draw"].item() != batches[1]["draw"].item()


def test_worker_error_surfaces_with_traceback():
    loader = data.DataLoader(Squares(8, fail_at=5), batch_size=2, num_workers=2)
    it = iter(loader)
    assert [next(it)[0].tolist() for _ in range(2)] == [[0, 1], [2, 3]]
    with pytest.raises(ValueError) as info:
        next(it)
    message = str(info.value)
    assert message.startswith("Caught ValueError in DataLoader worker process 0 while reading "
                              "sample index 5.")
    assert "Original Traceback (most recent call last):" in message
    assert "bad sample 5" in message and "__getitem__" in message


class KeyErrorData(data.Dataset):
    def __len__(self):
        return 2

    def __getitem__(self, i):
        return {}["missing"]


def test_worker_key_error_keeps_its_type():
    with pytest.raises(KeyError, match="Caught KeyError in DataLoader worker process"):
        list(data.DataLoader(KeyErrorData(), num_workers=2))


class Dies(data.Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        if data.get_worker_info().id == 1:
            os._exit(3)
        return i


def test_worker_that_dies_is_reported(monkeypatch):
    monkeypatch.setattr(_worker, "STATUS_CHECK_INTERVAL", 0.05)
    with pytest.raises(RuntimeError, match=r"DataLoader worker \(pid\(s\) \d+\) exited "
                                           "unexpectedly"):
        list(data.DataLoader(Dies(), num_workers=2))


class SlowFirstWorker(data.IterableDataset):
    """Worker 0 yields two items slowly; worker 1 has nothing and finishes at once."""

    def __iter__(self):
        if data.get_worker_info().id == 1:
            return iter(())
        return (time.sleep(0.2) or i for i in range(2))


def test_finished_iterable_worker_is_not_reported_dead(monkeypatch):
    monkeypatch.setattr(_worker, "STATUS_CHECK_INTERVAL", 0.05)
    assert [b.item() for b in data.DataLoader(SlowFirstWorker(), num_workers=2)] == [0, 1]


@pytest.mark.parametrize("split", [False, True])
def test_iterable_dataset_with_workers_matches_torch(split):
    g = [b.tolist() for b in data.DataLoader(Stream(11, split), batch_size=2, num_workers=2)]
    t = [b.tolist() for b in tdata.DataLoader(TorchStream(11, split), batch_size=2,
                                              num_workers=2)]
    assert g == t


def test_persistent_workers_and_clean_shutdown():
    loader = data.DataLoader(Squares(7), batch_size=3, num_workers=2, persistent_workers=True)
    first = [b[0].tolist() for b in loader]
    workers = list(loader._iterator._workers)
    partial = iter(loader)
    next(partial)
    second = [b[0].tolist() for b in loader]
    assert first == second == [[0, 1, 2], [3, 4, 5], [6]]
    assert loader._iterator._workers == workers and all(w.is_alive() for w in workers)
    loader._iterator._shutdown_workers()
    assert not any(w.is_alive() for w in workers)
    it = iter(data.DataLoader(Squares(4), batch_size=2, num_workers=2))
    procs = list(it._workers)
    assert len(list(it)) == 2
    assert not any(w.is_alive() for w in procs)


def test_pin_memory_without_a_gpu_warns_as_torch(monkeypatch):
    monkeypatch.setattr(genesis.cuda, "is_available", lambda: False)
    loader = data.DataLoader(Squares(4), batch_size=2, pin_memory=True)
    with pytest.warns(UserWarning, match="'pin_memory' argument is set as true but no "
                                         "accelerator is found"):
        batches = list(loader)
    assert not batches[0][0].is_pinned()


@skip_no_cuda
@pytest.mark.parametrize("num_workers", [0, 2])
def test_pin_memory(num_workers):
    loader = data.DataLoader(Squares(4), batch_size=2, num_workers=num_workers, pin_memory=True)
    for i, sq in loader:
        assert i.is_pinned() and sq.is_pinned()
        assert sq.cuda(non_blocking=True).cpu().tolist() == sq.tolist()


def test_more_workers_than_cpus_warns_as_torch(monkeypatch):
    """More workers than usable CPUs: PyTorch's warning, on construction and on iteration."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    with pytest.warns(UserWarning, match="This DataLoader will create 3 worker processes in total. "
                      "Our suggested max number of worker in current system is 2, which is smaller"):
        loader = data.DataLoader(range(4), num_workers=3)
    with pytest.warns(UserWarning, match="excessive worker creation"):
        assert sorted(int(b) for b in loader) == [0, 1, 2, 3]
