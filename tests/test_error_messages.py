"""Errors name what the user wrote: the op as called, with the index, shapes or path involved,
and nothing half-written."""

import errno
import os

import pytest
import torch
from helpers import assert_refuses_as_torch

import genesis
import genesis.nn.functional as F
from genesis import serialization
from genesis.utils.data import DataLoader, Dataset


@pytest.mark.parametrize("ids", [[1, 7], [[0, -1]], [5]])
def test_embedding_out_of_range_names_embedding(ids):
    weight = genesis.randn(5, 3)
    bad = [i for i in genesis.tensor(ids).reshape(-1).tolist() if not 0 <= i < 5][0]
    message = (rf"index out of range in self \(index {bad} of an embedding table of 5 rows, "
               r"weight of shape \[5, 3\]\)")
    with pytest.raises(IndexError, match=message):
        F.embedding(genesis.tensor(ids), weight)
    with pytest.raises(IndexError, match=message):
        layer = genesis.nn.Embedding(5, 3)
        layer.weight.data = weight
        layer(genesis.tensor(ids))


@pytest.mark.parametrize("call,message", [
    (lambda x: x.view(4), r"view\(\): shape '\[4\]' is invalid for input of size 6"),
    (lambda x: x.view(-1, 4), r"view\(\): shape '\[-1, 4\]' is invalid for input of size 6"),
    (lambda x: x.reshape(4, 2), r"reshape\(\): shape '\[4, 2\]' is invalid for input of size 6"),
    (lambda x: genesis.reshape(x, (-1, -1)), r"reshape\(\): only one dimension can be inferred"),
    (lambda x: x.unflatten(1, (2, 2)), r"unflatten: Provided sizes \[2, 2\] don't multiply up "
                                       r"to the size of dim 1 \(3\)"),
    (lambda x: genesis.cat([x, genesis.ones(2, 4)]),
     r"cat\(\): Sizes of tensors must match except in dimension 0. Expected size 3 but got size 4 "
     r"for tensor number 1 in the list \(shapes \[2, 3\] and \[2, 4\]\)"),
    (lambda x: genesis.cat([x, genesis.ones(3)], dim=1),
     r"cat\(\): Tensors must have same number of dimensions: got 2 and 1"),
])
def test_shape_errors_name_the_op(call, message):
    with pytest.raises(RuntimeError, match=message):
        call(genesis.ones(2, 3))


def test_save_into_missing_folder_names_the_given_path(tmp_path):
    path = tmp_path / "no_such_folder" / "model.pt"
    with pytest.raises(FileNotFoundError) as info:
        genesis.save({"w": genesis.ones(2)}, path)
    message = str(info.value)
    assert f"save(): could not write {str(path)!r}" in message
    assert f"the folder {str(path.parent)!r} does not exist" in message
    assert ".tmp" not in message
    assert not path.parent.exists()


def test_save_failing_midway_keeps_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "model.pt"
    genesis.save({"w": genesis.ones(3)}, path)
    before = path.read_bytes()

    def write_then_fail(out, arrays, metadata):
        out.write(b"partial")
        raise OSError(errno.EFBIG, os.strerror(errno.EFBIG))
    monkeypatch.setattr(serialization._safetensors, "write", write_then_fail)
    with pytest.raises(OSError) as info:
        genesis.save({"w": genesis.zeros(3)}, str(path))
    message = str(info.value)
    assert info.value.errno == errno.EFBIG
    assert f"could not write {str(path)!r}: File too large" in message
    assert f"the existing {str(path)!r} is unchanged" in message
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["model.pt"]


class FailsAt(Dataset):
    def __init__(self, bad):
        self.bad = bad

    def __len__(self):
        return 10

    def __getitem__(self, i):
        if i == self.bad:
            raise ValueError(f"cannot decode sample {i}")
        return genesis.tensor([float(i)])


@pytest.mark.parametrize("num_workers", [0, 2])
def test_dataloader_error_names_the_sample_index(num_workers):
    loader = DataLoader(FailsAt(7), batch_size=3, num_workers=num_workers)
    with pytest.raises(ValueError) as info:
        list(loader)
    if num_workers:
        assert str(info.value).startswith("Caught ValueError in DataLoader worker process")
        assert "while reading sample index 7." in str(info.value)
    text = "".join(__import__("traceback").format_exception(info.value))
    assert "raised while reading sample index 7 of the dataset" in text


@pytest.mark.parametrize("call", [
    lambda m: m.tensor([[1, 2], [3]]), lambda m: m.tensor([[[1, 2], [3, 4]], [[1, 2], [3]]]),
    lambda m: m.zeros(2, -3), lambda m: m.ones(3).new_zeros(-1), lambda m: m.eye(2, -1),
    lambda m: m.eye(-1), lambda m: m.randint(5, 2, (3,)),
    lambda m: m.zeros(2, 3).sum(dim=(1, -1)), lambda m: m.zeros(3, 4).mean(dtype=m.long),
    lambda m: m.zeros(3, 4, dtype=m.long).mean(),
    lambda m: m.einsum("ij,jk->ik", m.zeros(3, 4), m.zeros(3, 4)),
    lambda m: m.lerp(m.zeros(2), m.ones(2, dtype=m.float64), 0.5),
    lambda m: m.zeros(2).lerp_(m.ones(2, dtype=m.float16), 0.5),
    lambda m: m.lerp(m.zeros(2), m.ones(2), m.full((2,), 0.5, dtype=m.float64))])
def test_refusals_in_torchs_words(call):
    """Ragged nested lists, negative sizes, randint's empty range, a dim given twice, mean of
    integers, einsum's sizes that do not broadcast and lerp's operands of another dtype are
    refused with torch's exception and text (after the op's name where torch names none)."""
    assert_refuses_as_torch(call)


def test_masked_select_joins_the_mask_first_as_torch():
    """A mask that does not broadcast to the input is named tensor a, as torch names it."""
    with pytest.raises(RuntimeError) as expected:
        torch.zeros(3, 4).masked_select(torch.zeros(2, 2, dtype=torch.bool))
    with pytest.raises(RuntimeError) as got:
        genesis.zeros(3, 4).masked_select(genesis.zeros(2, 2, dtype=genesis.bool))
    assert str(got.value).startswith(f"masked_select: {expected.value} (shapes [2, 2] and")


def test_lerp_takes_a_0d_weight_of_another_dtype_as_torch():
    """A 0-d weight tensor may have another dtype than the ends, as in torch."""
    weight = genesis.tensor(0.25, dtype=genesis.float64)
    got = genesis.lerp(genesis.zeros(2), genesis.ones(2), weight)
    assert got.dtype is genesis.float32 and got.tolist() == [0.25, 0.25]
