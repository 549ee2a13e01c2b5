"""genesis.nn.utils.rnn against torch.nn.utils.rnn: packing, padding, their gradients, errors."""

import numpy as np
import pytest
import torch
import torch.nn.utils.rnn as T

import genesis
from genesis.nn.utils import rnn as G
from helpers import assert_close


def sequences(lengths, trailing, rng, device):
    """Random sequences of `lengths` (leaves requiring grad) in genesis and torch."""
    g, t = [], []
    for length in lengths:
        arr = rng.standard_normal((length, *trailing)).astype(np.float32)
        t.append(torch.from_numpy(arr).requires_grad_(True))
        g.append(genesis.tensor(arr, device=device, requires_grad=True))
    return g, t


def backward_both(g_out, t_out, rng):
    weight = rng.standard_normal(tuple(t_out.shape)).astype(np.float32)
    (t_out * torch.from_numpy(weight)).sum().backward()
    (g_out * genesis.tensor(weight, device=g_out.device)).sum().backward()


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("padding_side", ["right", "left"])
@pytest.mark.parametrize("trailing", [(), (3,), (2, 2)])
def test_pad_sequence(batch_first, padding_side, trailing, rng, device):
    g_seqs, t_seqs = sequences([3, 5, 1, 5], trailing, rng, device)
    g_out = G.pad_sequence(g_seqs, batch_first=batch_first, padding_value=-2.5,
                           padding_side=padding_side)
    t_out = T.pad_sequence(t_seqs, batch_first=batch_first, padding_value=-2.5,
                           padding_side=padding_side)
    assert_close(g_out, t_out)
    backward_both(g_out, t_out, rng)
    for g, t in zip(g_seqs, t_seqs):
        assert_close(g.grad, t.grad)


@pytest.mark.parametrize("enforce_sorted, lengths", [(True, [5, 3, 3, 1]),
                                                     (False, [2, 5, 1, 4]),
                                                     (False, [3, 3, 3, 3])])
@pytest.mark.parametrize("batch_first", [False, True])
def test_pack_padded_and_pad_packed_round_trip(enforce_sorted, lengths, batch_first, rng,
                                               device):
    shape = (len(lengths), 5, 3) if batch_first else (5, len(lengths), 3)
    arr = rng.standard_normal(shape).astype(np.float32)
    tx = torch.from_numpy(arr).requires_grad_(True)
    gx = genesis.tensor(arr, device=device, requires_grad=True)
    t_packed = T.pack_padded_sequence(tx, torch.tensor(lengths), batch_first, enforce_sorted)
    g_packed = G.pack_padded_sequence(gx, genesis.tensor(lengths), batch_first, enforce_sorted)
    assert isinstance(g_packed, G.PackedSequence)
    assert_close(g_packed.data, t_packed.data)
    assert g_packed.batch_sizes.tolist() == t_packed.batch_sizes.tolist()
    assert g_packed.batch_sizes.dtype is genesis.int64 and g_packed.batch_sizes.device.type == "cpu"
    for g, t in ((g_packed.sorted_indices, t_packed.sorted_indices),
                 (g_packed.unsorted_indices, t_packed.unsorted_indices)):
        assert (g is None) == (t is None) and (g is None or g.tolist() == t.tolist())
    g_pad, g_len = G.pad_packed_sequence(g_packed, batch_first, 7.0, total_length=6)
    t_pad, t_len = T.pad_packed_sequence(t_packed, batch_first, 7.0, total_length=6)
    assert_close(g_pad, t_pad)
    assert g_len.tolist() == t_len.tolist() and g_len.dtype is genesis.int64
    backward_both(g_pad, t_pad, rng)
    assert_close(gx.grad, tx.grad)


@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_pack_sequence_unpack_and_unpad(enforce_sorted, rng, device):
    lengths = [4, 2, 2, 1] if enforce_sorted else [1, 4, 2, 3]
    g_seqs, t_seqs = sequences(lengths, (2,), rng, device)
    g_packed = G.pack_sequence(g_seqs, enforce_sorted=enforce_sorted)
    t_packed = T.pack_sequence(t_seqs, enforce_sorted=enforce_sorted)
    assert_close(g_packed.data, t_packed.data)
    g_back, t_back = G.unpack_sequence(g_packed), T.unpack_sequence(t_packed)
    assert len(g_back) == len(t_back)
    for g, t, src in zip(g_back, t_back, g_seqs):
        assert_close(g, t)
        assert_close(g, src.detach().cpu().numpy())
    g_pad = G.pad_sequence(g_seqs, batch_first=True)
    g_unpadded = G.unpad_sequence(g_pad, genesis.tensor(lengths), batch_first=True)
    for g, src in zip(g_unpadded, g_seqs):
        assert_close(g, src.detach().cpu().numpy())
    g_unpadded = G.unpad_sequence(G.pad_sequence(g_seqs), lengths)
    assert [tuple(g.shape) for g in g_unpadded] == [(n, 2) for n in lengths]


def test_packed_sequence_is_a_namedtuple_and_moves():
    packed = G.pack_sequence([genesis.ones(2, 3), genesis.ones(1, 3)])
    data, batch_sizes, sorted_indices, unsorted_indices = packed
    assert batch_sizes.tolist() == [2, 1] and sorted_indices is None and unsorted_indices is None
    assert packed.double().data.dtype is genesis.float64
    assert packed.to(genesis.bfloat16).data.dtype is genesis.bfloat16
    assert packed.to("cpu") is packed and not packed.is_cuda
    unsorted = G.pack_sequence([genesis.ones(1, 3), genesis.ones(2, 3)], enforce_sorted=False)
    rebuilt = G.PackedSequence(unsorted.data, unsorted.batch_sizes, unsorted.sorted_indices)
    assert rebuilt.unsorted_indices.tolist() == [1, 0]


def test_invert_permutation():
    perm = genesis.tensor([2, 0, 3, 1])
    assert G.invert_permutation(perm).tolist() == T.invert_permutation(torch.tensor([2, 0, 3, 1])) \
        .tolist()
    assert G.invert_permutation(None) is None


def test_errors_match_torch():
    x_t, x_g = torch.zeros(4, 3, 2), genesis.zeros(4, 3, 2)
    cases = [
        (lambda lib, mod, x: mod.pack_padded_sequence(x, [1, 3, 2])),
        (lambda lib, mod, x: mod.pack_padded_sequence(x, [3, 2, 0])),
        (lambda lib, mod, x: mod.pack_padded_sequence(x, [3, 2])),
        (lambda lib, mod, x: mod.pad_packed_sequence(mod.pack_padded_sequence(x, [4, 2, 1]),
                                                     total_length=3)),
        (lambda lib, mod, x: mod.pad_sequence([x[0]], padding_side="middle")),
    ]
    for case in cases:
        with pytest.raises(Exception) as t_err:
            case(torch, T, x_t)
        with pytest.raises(type(t_err.value)) as g_err:
            case(genesis, G, x_g)
        assert str(g_err.value) == str(t_err.value)
