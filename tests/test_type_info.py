"""genesis.finfo and genesis.iinfo against torch.finfo and torch.iinfo: every attribute, the
repr, the default dtype and the errors."""

import pytest
import torch

import genesis

FLOATS = ["float16", "bfloat16", "float32", "float64"]
INTS = ["uint8", "int8", "int16", "int32", "int64"]


def _check_same(ours, theirs, names):
    for name in names:
        assert getattr(ours, name) == getattr(theirs, name), name
        assert type(getattr(ours, name)) is type(getattr(theirs, name)), name
    assert repr(ours) == repr(theirs)


@pytest.mark.parametrize("name", FLOATS)
def test_finfo_matches_torch(name):
    _check_same(genesis.finfo(getattr(genesis, name)), torch.finfo(getattr(torch, name)),
                ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"))


@pytest.mark.parametrize("name", INTS)
def test_iinfo_matches_torch(name):
    _check_same(genesis.iinfo(getattr(genesis, name)), torch.iinfo(getattr(torch, name)),
                ("bits", "max", "min", "dtype"))


def test_finfo_defaults_to_the_default_dtype():
    assert genesis.finfo() == genesis.finfo(genesis.float32)
    genesis.set_default_dtype(genesis.float64)
    try:
        assert genesis.finfo().dtype == "float64"
    finally:
        genesis.set_default_dtype(genesis.float32)


@pytest.mark.parametrize("info, name", [("finfo", "int32"), ("iinfo", "float32"),
                                        ("iinfo", "bool")])
def test_wrong_kind_raises_as_torch(info, name):
    with pytest.raises(TypeError) as theirs:
        getattr(torch, info)(getattr(torch, name))
    with pytest.raises(TypeError) as ours:
        getattr(genesis, info)(getattr(genesis, name))
    assert str(ours.value) == str(theirs.value)

