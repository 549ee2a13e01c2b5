"""Variable-length sequences: PackedSequence and the pad/pack conversions, as torch.nn.utils.rnn.

A packed sequence stores the rows of a time-major batch sorted by decreasing length, step after
step: `data` holds batch_sizes[0] rows of step 0, then batch_sizes[1] rows of step 1, and so on.
Every conversion here is one gather (`index_select`) of the rows, so gradients flow through it.
"""

from collections import namedtuple

import numpy as np

from ... import dtypes
from ...ops import creation
from ...ops import shape_copies

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence",
           "pad_sequence", "unpad_sequence", "pack_sequence", "unpack_sequence"]

_PackedSequenceBase = namedtuple("PackedSequence",
                                 ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])


def _index_tensor(values):
    """An int64 CPU tensor of `values` (batch sizes and permutations live on the CPU)."""
    return creation.tensor(np.asarray(values, dtype=np.int64), dtype=dtypes.int64)


def invert_permutation(permutation):
    """The permutation that undoes `permutation` (None stays None)."""
    if permutation is None:
        return None
    order = np.asarray(permutation.tolist(), dtype=np.int64)
    inverse = np.empty_like(order)
    inverse[order] = np.arange(order.size)
    return creation.tensor(inverse, dtype=dtypes.int64, device=permutation.device)


class PackedSequence(_PackedSequenceBase):
    """Data and batch sizes of a packed batch of sequences, with the sort permutation (if any)."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:
            data, batch_sizes = data
        if batch_sizes.device.type != "cpu":
            raise ValueError("batch_sizes should always be on CPU. Instances of PackedSequence "
                             "should never be created manually. They should be instantiated by "
                             "functions like pack_sequence and pack_padded_sequences in "
                             "nn.utils.rnn.")
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def _with_data(self, data):
        return type(self)(data, self.batch_sizes, self.sorted_indices, self.unsorted_indices)

    def to(self, *args, **kwargs):
        """The same packing with `data` (and the permutations) moved/cast as Tensor.to."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        move = (lambda t: None if t is None else t.to(data.device))
        return type(self)(data, self.batch_sizes, move(self.sorted_indices),
                          move(self.unsorted_indices))

    def cuda(self, device=None):
        return self.to("cuda" if device is None else device)

    def cpu(self):
        return self.to("cpu")

    def double(self):
        return self.to(dtype=dtypes.float64)

    def float(self):
        return self.to(dtype=dtypes.float32)

    def half(self):
        return self.to(dtype=dtypes.float16)

    def bfloat16(self):
        return self.to(dtype=dtypes.bfloat16)

    @property
    def is_cuda(self):
        return self.data.device.type == "cuda"


def _lengths_list(lengths):
    """Sequence lengths as a list of ints, from a tensor or any sequence of ints."""
    return [int(v) for v in (lengths.tolist() if hasattr(lengths, "tolist") else lengths)]


def _batch_sizes(sorted_lengths):
    """batch_sizes[t]: how many of the (decreasing) lengths exceed t."""
    lengths = np.asarray(sorted_lengths)
    return [int((lengths > t).sum()) for t in range(int(lengths[0]))]


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Pack a padded (T, B, *) batch (or (B, T, *) with batch_first) of sequences of `lengths`."""
    lengths = _lengths_list(lengths)
    batch_dim = 0 if batch_first else 1
    if len(lengths) != input.shape[batch_dim]:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got "
                           f"{len(lengths)} (batch_size={input.shape[batch_dim]})")
    if enforce_sorted:
        if any(a < b for a, b in zip(lengths, lengths[1:])):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when "
                               "`enforce_sorted` is True. You can pass `enforce_sorted=False` "
                               "to pack_padded_sequence and/or pack_sequence to sidestep this "
                               "requirement if you do not need ONNX exportability.")
        order, sorted_indices = np.arange(len(lengths)), None
    else:
        order = np.argsort(-np.asarray(lengths), kind="stable")
        sorted_indices = _index_tensor(order).to(input.device)
    sorted_lengths = [lengths[i] for i in order]
    if not sorted_lengths or sorted_lengths[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element "
                           "in 'lengths' that is <= 0")
    if batch_first:
        input = input.transpose(0, 1)
    steps, batch = input.shape[0], input.shape[1]
    if sorted_lengths[0] > steps:
        raise RuntimeError(f"pack_padded_sequence: a length of {sorted_lengths[0]} exceeds the "
                           f"{steps} steps of the input of shape {list(input.shape)}")
    batch_sizes = _batch_sizes(sorted_lengths)
    rows = [t * batch + int(order[j]) for t, size in enumerate(batch_sizes) for j in range(size)]
    flat = input.reshape(steps * batch, *input.shape[2:])
    data = flat.index_select(0, _index_tensor(rows).to(input.device))
    return PackedSequence(data, _index_tensor(batch_sizes), sorted_indices, None)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """Undo pack_padded_sequence: the padded batch (in the original order) and the lengths."""
    data, batch_sizes, _, unsorted_indices = sequence
    batch_sizes = [int(b) for b in batch_sizes.tolist()]
    steps, batch = len(batch_sizes), batch_sizes[0]
    if total_length is not None:
        if total_length < steps:
            raise ValueError(f"Expected total_length to be at least the length of the longest "
                             f"sequence in input, but got total_length={total_length} and max "
                             f"sequence length being {steps}")
        steps = total_length
    lengths = np.array([sum(b > j for b in batch_sizes) for j in range(batch)], dtype=np.int64)
    order = np.arange(batch) if unsorted_indices is None \
        else np.asarray(unsorted_indices.tolist(), dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(batch_sizes)[:-1]]).astype(np.int64)
    pad_row = data.shape[0]
    rows = [[int(starts[t]) + int(j) if t < lengths[j] else pad_row for j in order]
            for t in range(steps)]
    padded = _gather_rows(data, rows, padding_value)
    if batch_first:
        padded = padded.transpose(0, 1)
    return padded, _index_tensor(lengths[order])


def _gather_rows(data, rows, padding_value):
    """data rows arranged by the nested index list `rows` (its shape leads the result); the
    index len(data) selects a row of `padding_value`."""
    pad = creation.full((1, *data.shape[1:]), padding_value, dtype=data.dtype, device=data.device)
    index = np.asarray(rows, dtype=np.int64)
    source = shape_copies.cat([data, pad], 0)
    picked = source.index_select(0, _index_tensor(index.reshape(-1)).to(data.device))
    return picked.reshape(*index.shape, *data.shape[1:])


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack tensors of shapes (L_i, *) into (max L, B, *) (or (B, max L, *)), padding each."""
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got "
                           f"{padding_side}.")
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    trailing = tuple(sequences[0].shape[1:])
    for seq in sequences:
        if tuple(seq.shape[1:]) != trailing:
            raise RuntimeError(f"pad_sequence: every sequence must have trailing shape "
                               f"{list(trailing)}, got {list(seq.shape)}")
    lengths = [seq.shape[0] for seq in sequences]
    longest, starts = max(lengths), np.cumsum([0] + lengths)
    pad_row = int(starts[-1])
    rows = []
    for j, length in enumerate(lengths):
        first = 0 if padding_side == "right" else longest - length
        rows.append([int(starts[j]) + t - first if first <= t < first + length else pad_row
                     for t in range(longest)])
    data = shape_copies.cat([seq.reshape(seq.shape[0], *trailing) for seq in sequences], 0)
    padded = _gather_rows(data, rows, padding_value)
    return padded if batch_first else padded.transpose(0, 1)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """Split a padded batch back into a list of its sequences, each cut to its length."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [seq[:length] for seq, length in zip(padded_sequences, _lengths_list(lengths))]


def pack_sequence(sequences, enforce_sorted=True):
    """Pack a list of tensors of shapes (L_i, *)."""
    lengths = [seq.shape[0] for seq in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """Unpack a PackedSequence into the list of its sequences."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
