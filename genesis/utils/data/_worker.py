"""What runs inside a DataLoader worker process, and what it sends back.

A worker reads `(task index, sampler indices)` from its index queue, fetches and collates the
batch, and puts `(task index, pickled batch)` on the shared result queue. It stops on a None
task, or once the done event is set and its queue is drained: a DataLoader iterator collected as
cyclic garbage may have lost its queues' feeder threads before it can send the None. Tensors pickle as
host numpy arrays (`Tensor.__reduce_ex__`) and are re-wrapped in the main process. Errors travel
as `ExceptionWrapper`s carrying the worker's formatted traceback; the end of an
IterableDataset's stream travels as `IterableDatasetStopIteration`.
"""

import os
import pickle
import queue
import random
import sys
import traceback

import numpy as np

STATUS_CHECK_INTERVAL = 1.0
POLL_INTERVAL = 0.1

_worker_info = None


class WorkerInfo:
    """`get_worker_info()` inside a worker: its id, the worker count, its seed, its dataset copy."""

    def __init__(self, id, num_workers, seed, dataset):
        self.id, self.num_workers, self.seed, self.dataset = id, num_workers, seed, dataset

    def __repr__(self):
        return (f"WorkerInfo(id={self.id}, num_workers={self.num_workers}, seed={self.seed}, "
                f"dataset={self.dataset!r})")


def get_worker_info():
    """This worker's WorkerInfo, or None in the main process."""
    return _worker_info


class ExceptionWrapper:
    """An exception caught in a worker, re-raised in the main process with its traceback."""

    def __init__(self, exc_info=None, where="in background"):
        exc_type, exc_value, tb = exc_info or sys.exc_info()
        self.exc_type = exc_type if _picklable(exc_type) else RuntimeError
        self.exc_msg = "".join(traceback.format_exception(exc_type, exc_value, tb))
        index = getattr(exc_value, "dataset_index", None)
        self.where = where if index is None else f"{where} while reading sample index {index}"

    def reraise(self):
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = _KeyErrorMessage(msg)
        try:
            exception = self.exc_type(msg)
        except Exception:
            raise RuntimeError(msg) from None
        raise exception


class _KeyErrorMessage(str):
    """KeyError's str() is the repr of its argument; this keeps the traceback readable."""

    def __repr__(self):
        return self


class IterableDatasetStopIteration:
    """Sent by a worker whose copy of an IterableDataset is exhausted."""

    def __init__(self, worker_id):
        self.worker_id = worker_id


class ResumeIteration:
    """Sent to persistent workers at the start of each epoch (and echoed back)."""


def _picklable(obj):
    try:
        pickle.dumps(obj)
        return True
    except Exception:
        return False


def dumps(data, worker_id):
    """`data` pickled; an unpicklable batch becomes a pickled error instead of a lost result."""
    try:
        return pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:
        return pickle.dumps(ExceptionWrapper(where=f"in DataLoader worker process {worker_id}"))


def _seed_everything(seed, worker_id):
    """Seed Python's, numpy's and genesis's generators for this worker, as PyTorch does."""
    from ...random import manual_seed
    random.seed(seed)
    manual_seed(seed)
    np.random.seed(np.random.SeedSequence([worker_id, seed]).generate_state(4))


def worker_loop(make_fetcher, is_iterable, index_queue, result_queue, done_event, base_seed,
                init_fn, worker_id, num_workers):
    """The body of a worker process (see the module docstring)."""
    global _worker_info
    seed = base_seed + worker_id
    _seed_everything(seed, worker_id)
    where = f"in DataLoader worker process {worker_id}"
    init_error, fetcher = None, None
    try:
        dataset = make_fetcher.dataset
        _worker_info = WorkerInfo(worker_id, num_workers, seed, dataset)
        if init_fn is not None:
            init_fn(worker_id)
        fetcher = make_fetcher()
    except Exception:
        init_error = ExceptionWrapper(where=where)
    parent, ended = os.getppid(), False
    while os.getppid() == parent:
        try:
            task = index_queue.get(timeout=POLL_INTERVAL)
        except queue.Empty:
            if done_event.is_set():
                break
            continue
        if task is None:
            break
        if isinstance(task, ResumeIteration):
            result_queue.put((task, None))
            ended, fetcher = False, make_fetcher() if init_error is None else None
            continue
        if done_event.is_set() or ended:
            continue
        idx, indices = task
        if init_error is not None:
            data, init_error = init_error, None
        else:
            try:
                data = fetcher.fetch(indices)
            except StopIteration:
                if not is_iterable:
                    data = ExceptionWrapper(where=where)
                else:
                    data, ended = IterableDatasetStopIteration(worker_id), True
            except Exception:
                data = ExceptionWrapper(where=where)
        result_queue.put((idx, dumps(data, worker_id)))
        del data, task
    if done_event.is_set():
        result_queue.cancel_join_thread()
        result_queue.close()
