"""genesis.return_types against torch.return_types: each op's named tuple prints field by field
as torch's does, is an attribute of the module (isinstance, pickling) and unpacks by name."""

import pickle

import pytest
import torch

import genesis

CASES = {
    "max": lambda lib, x: lib.max(x, 1),
    "sort": lambda lib, x: lib.sort(x, 0, descending=True),
    "topk": lambda lib, x: lib.topk(x, 1),
    "aminmax": lambda lib, x: lib.aminmax(x),
    "cummax": lambda lib, x: lib.cummax(x, 0),
    "svd": lambda lib, x: lib.svd(lib.diag(lib.tensor([3.0, 2.0]))),
    "qr": lambda lib, x: lib.qr(lib.eye(2)),
    "slogdet": lambda lib, x: lib.slogdet(lib.diag(lib.tensor([3.0, -2.0]))),
    "linalg_slogdet": lambda lib, x: lib.linalg.slogdet(lib.diag(lib.tensor([3.0, -2.0]))),
    "linalg_eigh": lambda lib, x: lib.linalg.eigh(lib.diag(lib.tensor([1.0, 4.0]))),
    "linalg_inv_ex": lambda lib, x: lib.linalg.inv_ex(lib.diag(lib.tensor([2.0, 4.0]))),
    "linalg_cholesky_ex": lambda lib, x: lib.linalg.cholesky_ex(lib.diag(lib.tensor([4.0, 9.0]))),
    "histogram": lambda lib, x: lib.histogram(x.flatten(), bins=3),
    "frexp": lambda lib, x: lib.frexp(x),
}


def _input(lib):
    return lib.tensor([[1.5, -3.0], [8.0, 0.25]])


@pytest.mark.filterwarnings("ignore:torch.qr is deprecated")
@pytest.mark.parametrize("name", sorted(CASES))
def test_return_type_as_torch(name):
    ours, theirs = (CASES[name](lib, _input(lib)) for lib in (genesis, torch))
    assert repr(ours) == repr(theirs).replace("torch.", "genesis.")
    assert type(ours) is getattr(genesis.return_types, name)
    again = pickle.loads(pickle.dumps(ours))
    assert type(again) is type(ours) and repr(again) == repr(ours)
