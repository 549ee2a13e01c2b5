"""DataLoader: batches from a dataset, in the main process or in worker processes.

With `num_workers > 0`, sampler indices are sent round-robin to worker processes (at most
`prefetch_factor` tasks per worker in flight) and the batches come back in sampler order. A
worker error is raised in the main process with the worker's traceback; a worker that dies is
reported instead of hanging; workers are shut down when the iterator ends or is dropped.
"""

import itertools
import multiprocessing
import os
import pickle
import queue
import warnings

from ...ops.random import randint
from . import _worker
from .collate import default_collate, default_convert
from .dataset import IterableDataset
from .fetch import FetcherFactory
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler


class _InfiniteConstantSampler(Sampler):
    """The sampler of an IterableDataset: the dataset decides what comes next."""

    def __iter__(self):
        return itertools.repeat(None)


class DataLoader:
    """Iterate over `dataset` in batches, optionally shuffled and loaded by worker processes."""

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor=None, persistent_workers=False):
        _check_workers(num_workers, timeout, prefetch_factor, persistent_workers)
        self.dataset, self.num_workers, self.timeout = dataset, num_workers, timeout
        self.prefetch_factor = prefetch_factor if prefetch_factor is not None or \
            num_workers == 0 else 2
        self.pin_memory, self.worker_init_fn = pin_memory, worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.persistent_workers, self.generator = persistent_workers, generator
        self._is_iterable = isinstance(dataset, IterableDataset)
        if self._is_iterable:
            _check_iterable_options(shuffle, sampler, batch_sampler)
        _check_sampling_options(batch_size, shuffle, sampler, batch_sampler, drop_last)
        if self._is_iterable:
            sampler = _InfiniteConstantSampler()
        if batch_sampler is not None:
            batch_size, drop_last = None, False
        if sampler is None:
            sampler = RandomSampler(dataset, generator=generator) if shuffle \
                else SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size, self.drop_last = batch_size, drop_last
        self.sampler, self.batch_sampler = sampler, batch_sampler
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self._iterator = None
        _check_worker_count(num_workers)

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def __iter__(self):
        if self.num_workers == 0:
            return _SingleProcessIter(self)
        _check_worker_count(self.num_workers)
        if not self.persistent_workers:
            return _MultiProcessIter(self)
        if self._iterator is None:
            self._iterator = _MultiProcessIter(self)
        else:
            self._iterator.reset(self)
        return self._iterator

    def __len__(self):
        if self._is_iterable:
            length = len(self.dataset)
            if self.batch_size is not None:
                length = length // self.batch_size if self.drop_last \
                    else -(-length // self.batch_size)
            return length
        return len(self._index_sampler)


def _check_workers(num_workers, timeout, prefetch_factor, persistent_workers):
    if num_workers < 0:
        raise ValueError("num_workers option should be non-negative; use num_workers=0 to "
                         "disable multiprocessing.")
    if timeout < 0:
        raise ValueError("timeout option should be non-negative")
    if num_workers == 0 and prefetch_factor is not None:
        raise ValueError("prefetch_factor option could only be specified in multiprocessing."
                         "let num_workers > 0 to enable multiprocessing, otherwise set "
                         "prefetch_factor to None.")
    if prefetch_factor is not None and prefetch_factor < 0:
        raise ValueError("prefetch_factor option should be non-negative")
    if persistent_workers and num_workers == 0:
        raise ValueError("persistent_workers option needs num_workers > 0")


def _check_worker_count(num_workers):
    """PyTorch's warning when more workers are asked for than this process may use CPUs (on
    construction and on each multi-process iteration, as PyTorch warns)."""
    if num_workers == 0:
        return
    cpuset_checked = hasattr(os, "sched_getaffinity")
    usable = len(os.sched_getaffinity(0)) if cpuset_checked else os.cpu_count()
    if usable is not None and num_workers <= usable:
        return
    suggestion = ("DataLoader is not able to compute a suggested max number of worker in current "
                  "system." if usable is None else
                  f"Our suggested max number of worker in current system is {usable}"
                  f"{'' if cpuset_checked else ' (`cpuset` is not taken into account)'}, which is "
                  "smaller than what this DataLoader is going to create.")
    warnings.warn(f"This DataLoader will create {num_workers} worker processes in total. "
                  f"{suggestion} Please be aware that excessive worker creation might get "
                  "DataLoader running slow or even freeze, lower the worker number to avoid "
                  "potential slowness/freeze if necessary.", stacklevel=2)


def _check_iterable_options(shuffle, sampler, batch_sampler):
    for name, value in (("shuffle", shuffle), ("sampler", sampler),
                        ("batch_sampler", batch_sampler)):
        if value not in (None, False):
            raise ValueError(f"DataLoader with IterableDataset: expected unspecified {name} "
                             f"option, but got {name}={value}")


def _check_sampling_options(batch_size, shuffle, sampler, batch_sampler, drop_last):
    if sampler is not None and shuffle:
        raise ValueError("sampler option is mutually exclusive with shuffle")
    if batch_sampler is not None and (batch_size != 1 or shuffle or drop_last
                                      or sampler is not None):
        raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, "
                         "sampler, and drop_last")
    if batch_size is None and drop_last:
        raise ValueError("batch_size=None option disables auto-batching and is mutually "
                         "exclusive with drop_last")


def pin_memory(data):
    """`data` with every tensor in page-locked host memory (when a GPU is there to use it)."""
    from ...tensor import Tensor
    if isinstance(data, Tensor):
        return data.pin_memory()
    if isinstance(data, dict):
        return type(data)({k: pin_memory(v) for k, v in data.items()})
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(pin_memory(v) for v in data))
    if isinstance(data, (list, tuple)):
        return type(data)(pin_memory(v) for v in data)
    return data


def _should_pin(loader):
    """Whether batches go to page-locked memory: asked for and a GPU there; asked for on a
    machine without one, PyTorch's warning (once per iterator)."""
    if not loader.pin_memory:
        return False
    from ... import cuda
    if not cuda.is_available():
        warnings.warn("'pin_memory' argument is set as true but no accelerator is found, then "
                      "device pinned memory won't be used.", stacklevel=4)
        return False
    return True


def _draw_base_seed(loader):
    """The seed workers derive theirs from; drawn by every iterator (as PyTorch does), so a
    seeded generator shuffles the same way with and without workers."""
    return randint(0, 2 ** 62, (), generator=loader.generator).item()


class _SingleProcessIter:
    """Fetches in the main process."""

    def __init__(self, loader):
        _draw_base_seed(loader)
        self._indices = iter(loader._index_sampler)
        self._fetcher = FetcherFactory(loader)()
        self._pin = _should_pin(loader)

    def __iter__(self):
        return self

    def __next__(self):
        data = self._fetcher.fetch(next(self._indices))
        return pin_memory(data) if self._pin else data


class _MultiProcessIter:
    """Feeds worker processes with sampler indices and hands back their batches in order."""

    def __init__(self, loader):
        ctx = loader.multiprocessing_context or multiprocessing.get_context()
        if isinstance(ctx, str):
            ctx = multiprocessing.get_context(ctx)
        self._num_workers, self._timeout = loader.num_workers, loader.timeout
        self._prefetch = loader.prefetch_factor
        self._persistent, self._pin = loader.persistent_workers, _should_pin(loader)
        self._is_iterable = loader._is_iterable
        self._results = ctx.Queue()
        self._done = ctx.Event()
        self._index_queues, self._workers = [], []
        self._shutdown = False
        base_seed = _draw_base_seed(loader)
        factory = FetcherFactory(loader)
        for worker_id in range(self._num_workers):
            index_queue = ctx.Queue()
            index_queue.cancel_join_thread()
            worker = ctx.Process(target=_worker.worker_loop, daemon=True, args=(
                factory, self._is_iterable, index_queue, self._results, self._done, base_seed,
                loader.worker_init_fn, worker_id, self._num_workers))
            worker.start()
            self._index_queues.append(index_queue)
            self._workers.append(worker)
        self._start_epoch(loader)

    def _start_epoch(self, loader):
        self._indices = iter(loader._index_sampler)
        self._send_idx = self._rcvd_idx = self._outstanding = 0
        self._tasks = {}
        self._active = [True] * self._num_workers
        self._cycle = itertools.cycle(range(self._num_workers))
        for _ in range(self._prefetch * self._num_workers):
            self._put_task()

    def reset(self, loader):
        """Start a new epoch on the same (persistent) workers."""
        for index_queue in self._index_queues:
            index_queue.put(_worker.ResumeIteration())
        waiting = self._num_workers
        while waiting:
            idx, _ = self._get()
            waiting -= isinstance(idx, _worker.ResumeIteration)
        self._start_epoch(loader)

    def __iter__(self):
        return self

    def _put_task(self):
        """Send the next sampler indices to the next active worker, if there is room and work."""
        if self._outstanding >= self._prefetch * self._num_workers:
            return
        try:
            indices = next(self._indices)
        except StopIteration:
            return
        for _ in range(self._num_workers):
            worker_id = next(self._cycle)
            if self._active[worker_id]:
                break
        else:
            return
        self._index_queues[worker_id].put((self._send_idx, indices))
        self._tasks[self._send_idx] = [worker_id]
        self._outstanding += 1
        self._send_idx += 1

    def __next__(self):
        while True:
            if not self._skip_to_live_task():
                if not self._persistent:
                    self._shutdown_workers()
                raise StopIteration
            task = self._tasks[self._rcvd_idx]
            if len(task) == 2:
                del self._tasks[self._rcvd_idx]
                return self._deliver(task[1])
            idx, payload = self._get()
            self._outstanding -= 1
            data = pickle.loads(payload)
            if isinstance(data, _worker.IterableDatasetStopIteration):
                self._retire(data.worker_id)
                self._put_task()
                continue
            if idx != self._rcvd_idx:
                self._tasks[idx].append(data)
                continue
            del self._tasks[idx]
            return self._deliver(data)

    def _skip_to_live_task(self):
        """Move past tasks dropped with their retired worker; False when no task is left."""
        while self._rcvd_idx < self._send_idx:
            if self._rcvd_idx in self._tasks:
                return True
            self._rcvd_idx += 1
        return False

    def _retire(self, worker_id):
        """A worker's IterableDataset copy is exhausted: drop its unanswered tasks (it skips
        them) and send it no more work."""
        self._active[worker_id] = False
        unanswered = [i for i, task in self._tasks.items()
                      if task[0] == worker_id and len(task) == 1]
        for i in unanswered:
            del self._tasks[i]
        self._outstanding -= len(unanswered) - 1
        if not self._persistent:
            self._index_queues[worker_id].put(None)

    def _deliver(self, data):
        self._rcvd_idx += 1
        self._put_task()
        if isinstance(data, _worker.ExceptionWrapper):
            data.reraise()
        return pin_memory(data) if self._pin else data

    def _get(self):
        """The next result, checking that the workers are alive while waiting."""
        waited = 0.0
        while True:
            try:
                return self._results.get(timeout=_worker.STATUS_CHECK_INTERVAL)
            except queue.Empty:
                waited += _worker.STATUS_CHECK_INTERVAL
            dead = [w.pid for w, active in zip(self._workers, self._active)
                    if active and not w.is_alive()]
            if dead:
                self._shutdown_workers()
                raise RuntimeError(f"DataLoader worker (pid(s) {', '.join(map(str, dead))}) "
                                   "exited unexpectedly")
            if self._timeout and waited >= self._timeout:
                raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")

    def _shutdown_workers(self):
        if self._shutdown:
            return
        self._shutdown = True
        self._done.set()
        for index_queue in self._index_queues:
            index_queue.put(None)
        for worker in self._workers:
            worker.join(timeout=_worker.STATUS_CHECK_INTERVAL)
        for worker in self._workers:
            if worker.is_alive():
                worker.terminate()
        for index_queue in self._index_queues:
            index_queue.close()
        self._results.cancel_join_thread()
        self._results.close()

    def __del__(self):
        if getattr(self, "_workers", None) is not None:
            self._shutdown_workers()
