"""Names of the torch namespace that are not functions: constants, the version module,
torch.functional and the top-level aliases of classes kept elsewhere."""

import torch

import genesis


def test_constants_as_torch():
    for name in ("e", "pi", "inf", "newaxis"):
        assert getattr(genesis, name) == getattr(torch, name)
    assert genesis.nan != genesis.nan


def test_version_module_as_torch():
    assert genesis.version.__version__ == genesis.__version__
    assert genesis.version.hip is None and genesis.version.debug is False
    assert genesis.version.cuda is None or genesis.version.cuda.count(".") == 1


def test_functional_module_as_torch():
    names = set(torch.functional.__all__) - {"stft", "istft"}  # complex results, out of scope
    assert set(genesis.functional.__all__) == names
    for name in names:
        ours = getattr(genesis, name)
        if hasattr(ours, "__out_variant__"):  # genesis.<name> adds the out= keyword
            ours = ours.__wrapped__
        assert getattr(genesis.functional, name) is ours, name


def test_top_level_aliases_as_torch():
    assert genesis.GradScaler is genesis.amp.GradScaler
    assert genesis.OutOfMemoryError is genesis.cuda.OutOfMemoryError
