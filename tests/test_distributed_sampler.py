"""DistributedSampler against torch's index lists."""

from unittest import mock

import pytest
import torch
from torch.utils.data import DistributedSampler as TorchSampler

import genesis
from genesis.utils.data import DistributedSampler


def genesis_permutation(n, seed):
    g = genesis.Generator()
    g.manual_seed(seed)
    return genesis.randperm(n, generator=g)


@pytest.mark.parametrize("n", [0, 1, 2, 7, 10, 12])
@pytest.mark.parametrize("replicas", [1, 3, 4, 16])
@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("shuffle", [False, True])
def test_indices_match_torch(n, replicas, drop_last, shuffle):
    """Same lists as torch's sampler for every rank and epoch; with shuffle, torch is given
    genesis's permutation (their generators differ) so the padding, cut and stride match."""
    data = list(range(n))
    for epoch in (0, 3):
        for rank in range(replicas):
            ours = DistributedSampler(data, replicas, rank, shuffle=shuffle, seed=5,
                                      drop_last=drop_last)
            ours.set_epoch(epoch)
            theirs = TorchSampler(data, replicas, rank, shuffle=shuffle, seed=5,
                                  drop_last=drop_last)
            theirs.set_epoch(epoch)
            perm = torch.tensor(genesis_permutation(n, 5 + epoch).tolist(), dtype=torch.int64)
            with mock.patch("torch.randperm", lambda *a, **k: perm):
                expected = list(theirs)
            assert list(ours) == expected and len(ours) == len(theirs)


def test_epochs_shuffle_differently_and_ranks_partition_the_data():
    data = list(range(20))
    orders = []
    for epoch in (0, 1):
        parts = []
        for rank in range(4):
            s = DistributedSampler(data, num_replicas=4, rank=rank, seed=1)
            s.set_epoch(epoch)
            parts.append(list(s))
        assert sorted(sum(parts, [])) == data
        orders.append(parts)
    assert orders[0] != orders[1]


def test_errors():
    with pytest.raises(ValueError, match=r"Invalid rank 4, rank should be in the interval \[0, 3\]"):
        DistributedSampler(range(4), num_replicas=4, rank=4)
    with pytest.raises(RuntimeError, match="Requires distributed package to be available"):
        DistributedSampler(range(4))
