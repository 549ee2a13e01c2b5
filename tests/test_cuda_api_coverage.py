"""How much of torch.cuda's public namespace genesis.cuda offers, counted by name.

The population is every public name of `torch.cuda` that is not a module, less the typing
helpers torch.cuda happens to import (NOT_API) and less what genesis.cuda leaves out on purpose
(LEFT_OUT, each with its reason). The test holds the floor reached, so coverage can only grow,
and checks that a left-out name genesis gains leaves the list.
"""

import types

import torch

import genesis

# Names torch.cuda imports for its own annotations: not part of its API.
NOT_API = {"Any", "Callable", "Optional", "cast", "lru_cache", "NewType", "TYPE_CHECKING",
           "classproperty", "Device"}

_STORAGE = "a typed storage: genesis has no storage objects (arrays carry their own memory)"

# Names genesis.cuda leaves out on purpose, and why. Anything else absent is a gap to close.
LEFT_OUT = {
    **{f"{kind}Storage": _STORAGE
       for kind in ("BFloat16", "Bool", "Byte", "Char", "ComplexDouble", "ComplexFloat",
                    "Double", "Float", "Half", "Int", "Long", "Short")},
    "CUDAPluggableAllocator": "loads an allocator from a shared library into PyTorch's C++ "
                              "allocator interface; genesis's caching allocator is Python and "
                              "offers private pools (MemPool) and settings "
                              "(configure_memory_manager) instead",
    "change_current_allocator": "installs a CUDAPluggableAllocator (see there)",
    "PYTORCH_RELEASES_CODE_CC": "the compute capabilities of PyTorch's own release wheels; "
                                "genesis's Triton kernels compile for the device present",
    "DEVICE_REQUIREMENT": "PyTorch's per-release table of supported compute capabilities, for "
                          "its wheels' compatibility warning (see PYTORCH_RELEASES_CODE_CC)",
    "GreenContext": "an experimental API partitioning a device's SMs into green contexts; "
                    "genesis's runtime runs every device in its primary context",
}

# Reached under torch 2.13: 1.000 (all names not left out). The floor sits a little below so
# that another torch release's slightly different list passes too.
FLOOR = 0.97


def _torch_cuda_names():
    return [n for n in dir(torch.cuda) if not n.startswith("_") and n not in NOT_API
            and not isinstance(getattr(torch.cuda, n), types.ModuleType)]


def test_torch_cuda_coverage():
    considered = [n for n in _torch_cuda_names() if n not in LEFT_OUT]
    missing = sorted(n for n in considered if not hasattr(genesis.cuda, n))
    have = len(considered) - len(missing)
    print(f"\ntorch.cuda names: genesis.cuda has {have} of {len(considered)} "
          f"({have / len(considered):.3f}); {len(LEFT_OUT)} left out on purpose")
    print("missing:", " ".join(missing))
    assert have / len(considered) >= FLOOR


def test_left_out_names_are_really_left_out():
    """A name in LEFT_OUT that genesis.cuda gains must leave the list (it would hide coverage);
    every reason is given."""
    gained = [n for n in LEFT_OUT if hasattr(genesis.cuda, n)]
    assert not gained, f"remove from LEFT_OUT: {gained}"
    assert all(LEFT_OUT.values())


def test_exported_names_exist():
    """Every name in genesis.cuda.__all__ is there (without touching the driver)."""
    assert [n for n in genesis.cuda.__all__ if not hasattr(genesis.cuda, n)] == []
