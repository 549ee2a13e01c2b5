"""How many of torch.nn's module names and torch.nn.functional's names genesis.nn has.

The names come from the installed PyTorch: `torch.nn.modules.__all__` and the public functions
of `torch.nn.functional`. LEFT_OUT is the one list of names deliberately not provided, each with
its reason; coverage counts the present names against all names not in it.
"""

import inspect
import types

import torch
import torch.nn as tnn
import torch.nn.functional as TF

import genesis.nn as nn
import genesis.nn.functional as F

_HELPER = "a typing or __torch_function__ dispatch helper imported into torch.nn.functional, " \
          "not a layer"

LEFT_OUT = {
    "Container": "deprecated base class PyTorch keeps only for old pickles",
    "CrossMapLRN2d": "PyTorch's legacy implementation: its forward never drops channel 0 from "
                     "the window (tests c > pre_pad where c >= pre_pad is meant) and its "
                     "backward does not match that forward; LocalResponseNorm is the supported "
                     "form",
    "Optional": _HELPER,
    "assert_int_or_pair": _HELPER,
    "boolean_dispatch": _HELPER,
    "handle_torch_function": _HELPER,
    "has_torch_function": _HELPER,
    "has_torch_function_unary": _HELPER,
    "has_torch_function_variadic": _HELPER,
    "grouped_mm": "low-precision grouped GEMM primitive for mixture-of-experts kernels, not a "
                  "layer",
    "scaled_mm": "fp8 scaled GEMM primitive, not a layer",
    "scaled_grouped_mm": "fp8 scaled grouped GEMM primitive, not a layer",
    **{name: "PyTorch's newest chunked linear + cross-entropy entry point and its options "
             "dataclass; F.linear followed by F.cross_entropy computes the same loss"
       for name in ("LinearCrossEntropyLoss", "LinearCrossEntropyOptions",
                    "linear_cross_entropy")},
}

# Every name is present against PyTorch 2.13's lists; the floors are the issue's, leaving room
# for other versions' lists.
MODULE_FLOOR = 0.9
FUNCTIONAL_FLOOR = 0.9


def torch_module_names():
    return sorted(tnn.modules.__all__)


def torch_functional_names():
    return sorted(name for name in dir(TF) if not name.startswith("_")
                  and callable(getattr(TF, name)) and not inspect.isclass(getattr(TF, name))
                  and not isinstance(getattr(TF, name), types.ModuleType))


def _coverage(names, namespace):
    counted = [name for name in names if name not in LEFT_OUT]
    present = [name for name in counted if hasattr(namespace, name)]
    missing = [name for name in counted if not hasattr(namespace, name)]
    return present, counted, missing


def test_left_out_names_are_absent_and_explained():
    """Every entry has a reason and genesis does not have it (so the list stays current); most
    are in the installed torch's lists (a few exist only in newer PyTorch versions)."""
    torch_names = set(torch_module_names()) | set(torch_functional_names())
    for name, reason in LEFT_OUT.items():
        assert reason
        assert not hasattr(nn, name) and not hasattr(F, name), name
    assert sum(name in torch_names for name in LEFT_OUT) >= len(LEFT_OUT) // 2


def test_module_coverage():
    present, counted, missing = _coverage(torch_module_names(), nn)
    print(f"\ntorch.nn modules: {len(present)} of {len(counted)} "
          f"({len(present) / len(counted):.2f}); missing: {', '.join(missing)}")
    assert len(present) / len(counted) >= MODULE_FLOOR


def test_functional_coverage():
    present, counted, missing = _coverage(torch_functional_names(), F)
    print(f"\ntorch.nn.functional: {len(present)} of {len(counted)} "
          f"({len(present) / len(counted):.2f}); missing: {', '.join(missing)}")
    assert len(present) / len(counted) >= FUNCTIONAL_FLOOR


def test_present_names_are_the_same_kind_as_torch():
    """Each present module name is a Module subclass and each functional a plain callable."""
    for name in torch_module_names():
        if name not in LEFT_OUT and hasattr(nn, name):
            assert isinstance(getattr(nn, name), type), name
    for name in torch_functional_names():
        if name not in LEFT_OUT and hasattr(F, name):
            assert callable(getattr(F, name)) and not isinstance(getattr(F, name), type), name


def test_installed_torch_lists_are_populated():
    assert len(torch_module_names()) > 100 and len(torch_functional_names()) > 100
    assert torch.__version__
