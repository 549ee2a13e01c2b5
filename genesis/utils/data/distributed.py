"""DistributedSampler: each rank's share of a dataset's indices (PyTorch's algorithm)."""

import math

from ...ops.random import randperm
from ...random import Generator
from .sampler import Sampler


def _world(num_replicas, rank):
    """The world size and rank: given, or those of the default process group."""
    if num_replicas is None or rank is None:
        from ... import distributed as dist
        if not dist.is_initialized():
            raise RuntimeError("Requires distributed package to be available")
        num_replicas = dist.get_world_size() if num_replicas is None else num_replicas
        rank = dist.get_rank() if rank is None else rank
    if rank >= num_replicas or rank < 0:
        raise ValueError(f"Invalid rank {rank}, rank should be in the interval "
                         f"[0, {num_replicas - 1}]")
    return num_replicas, rank


class DistributedSampler(Sampler):
    """Indices `rank, rank + num_replicas, ...` of a (shuffled per epoch) index list.

    The list is padded by repeating its start to a multiple of `num_replicas`, or cut to one
    with `drop_last`, so that every rank gets the same number of samples. Shuffling uses
    `seed + epoch`: call `set_epoch` each epoch for a new order that all ranks agree on.
    """

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0,
                 drop_last=False):
        self.num_replicas, self.rank = _world(num_replicas, rank)
        self.dataset, self.shuffle, self.seed, self.drop_last = dataset, shuffle, seed, drop_last
        self.epoch = 0
        n = len(dataset)
        if drop_last and n % self.num_replicas != 0:
            self.num_samples = math.ceil((n - self.num_replicas) / self.num_replicas)
        else:
            self.num_samples = math.ceil(n / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas

    def _order(self):
        n = len(self.dataset)
        if not self.shuffle:
            return list(range(n))
        g = Generator()
        g.manual_seed(self.seed + self.epoch)
        return randperm(n, generator=g).tolist()

    def __iter__(self):
        indices = self._order()
        if self.drop_last:
            indices = indices[:self.total_size]
        else:
            padding = self.total_size - len(indices)
            if padding <= len(indices):
                indices += indices[:padding]
            else:
                indices += (indices * math.ceil(padding / len(indices)))[:padding]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        """Use `epoch` in the shuffle's seed (all ranks must pass the same epoch)."""
        self.epoch = epoch
