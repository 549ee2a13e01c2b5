"""genesis.fx.wrap and genesis._assert, the tracing hooks model files call at import and in
forward, behave as torch's: they check their arguments and leave eager code unchanged."""

import pytest
import torch

import genesis


def _leaf(x):
    return x + 1


def _wrapped_in(lib, name):
    """Run `lib.fx.wrap` at the top level of a module made from source, as model files do."""
    scope = {"lib": lib}
    exec(compile(f"def helper(x):\n    return x\nout = lib.fx.wrap({name})\n", "<model>",
                 "exec"), scope)
    return scope["out"]


@pytest.mark.parametrize("lib", [genesis, torch], ids=["genesis", "torch"])
def test_fx_wrap_at_module_level_returns_its_argument(lib):
    assert _wrapped_in(lib, '"helper"') == "helper"
    assert _wrapped_in(lib, "helper").__name__ == "helper"


def test_fx_wrap_errors_as_torch():
    for call, error in ((lambda lib: lib.fx.wrap(_leaf), NotImplementedError),
                        (lambda lib: _wrapped_in(lib, "3"), RuntimeError)):
        messages = []
        for lib in (genesis, torch):
            with pytest.raises(error) as raised:
                call(lib)
            messages.append(str(raised.value))
        assert messages[0] == messages[1]


def test_assert_as_torch():
    for lib in (genesis, torch):
        lib._assert(lib.tensor(3).item() == 3, "unused")
        with pytest.raises(AssertionError, match="Expected 3 dims got 2"):
            lib._assert(lib.zeros(2, 2).dim() == 3, "Expected 3 dims got 2")
