"""genesis.jit behaves as torch.jit with the JIT disabled: script and trace hand back what they
get, which runs eagerly with the same values; the decorators leave functions as they are."""

import warnings

import numpy as np
import pytest

import genesis
from genesis import jit, nn


def _gelu(x):
    return x * 0.5 * (1.0 + genesis.erf(x / 1.41421))


def test_script_and_trace_return_their_argument():
    x = genesis.randn(3, 4)
    model = nn.Linear(4, 2)
    assert jit.script(_gelu) is _gelu
    assert jit.trace(model, (x,)) is model
    assert jit.script(model) is model
    assert genesis.equal(jit.script(_gelu)(x), _gelu(x))


def test_decorators_leave_functions_as_they_are():
    assert jit.ignore(_gelu) is _gelu
    assert jit.ignore(drop=True)(_gelu) is _gelu
    assert jit.unused(_gelu) is _gelu and jit.export(_gelu) is _gelu
    assert jit.script_if_tracing(_gelu) is _gelu


def test_queries_and_helpers():
    assert jit.is_scripting() is False and jit.is_tracing() is False
    assert jit.annotate(list, [1]) == [1]
    assert jit.Attribute(3, int) == 3
    assert jit.isinstance([1], list)
    assert jit.wait(jit.fork(_gelu, genesis.zeros(2))).tolist() == [0.0, 0.0]


@pytest.mark.parametrize("call", [lambda: jit.save(nn.Linear(1, 1), "m.pt"),
                                  lambda: jit.load("m.pt")])
def test_torchscript_files_raise_clearly(call):
    with pytest.raises(RuntimeError, match="Genesis has no TorchScript"):
        call()


def test_onednn_fusion_switch_as_torch():
    import torch
    for lib in (genesis, torch):
        assert lib.jit.onednn_fusion_enabled() is False
        lib.jit.enable_onednn_fusion(True)
        try:
            assert lib.jit.onednn_fusion_enabled() is True
        finally:
            lib.jit.enable_onednn_fusion(False)


def _script_module_run(lib):
    """RWKV's `MyModule = torch.jit.ScriptModule` and `MyFunction = torch.jit.script_method`:
    the module's output, its parameters' names and the warnings given."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")

        class Mix(lib.jit.ScriptModule):
            def __init__(self):
                super().__init__()
                self.time_mix = lib.nn.Parameter(lib.linspace(0.0, 1.0, 5)[None, None])
                self.time_shift = lib.nn.ZeroPad2d((0, 0, 1, -1))

            @lib.jit.script_method
            def forward(self, x):
                return x * self.time_mix + self.time_shift(x) * (1 - self.time_mix)

        model = Mix()
        out = model(lib.arange(30.0).reshape(2, 3, 5))
        with lib.jit.strict_fusion():
            pass
    messages = [(w.category, str(w.message)) for w in caught]
    return out.detach().numpy(), [n for n, _ in model.named_parameters()], messages


def test_script_module_and_script_method_as_torch():
    import torch
    ours, theirs = _script_module_run(genesis), _script_module_run(torch)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-6)
    assert ours[1] == theirs[1]
    # torch's compiler scripts the submodules too (torch.jit.script's own deprecation warning),
    # which the disabled JIT does not
    assert ours[2] == [w for w in theirs[2] if "`torch.jit.script` is" not in w[1]]
    assert len(ours[2]) == 2
    assert issubclass(genesis.jit.ScriptModule, nn.Module)
    assert isinstance(genesis.jit.Error("x"), Exception)


def test_fusion_strategy_as_torch():
    import torch
    for lib in (genesis, torch):
        with pytest.warns(DeprecationWarning, match="set_fusion_strategy` is deprecated"):
            previous = lib.jit.set_fusion_strategy([("DYNAMIC", 3)])
        with pytest.warns(DeprecationWarning):
            assert lib.jit.set_fusion_strategy(previous) == [("DYNAMIC", 3)]
        with pytest.warns(DeprecationWarning), pytest.raises(
                ValueError, match="FusionBehavior only supported 'STATIC' or 'DYNAMIC', got: X"):
            lib.jit.set_fusion_strategy([("X", 1)])


def _inc(x):
    return x + 1


class _Interface:
    def forward(self, x):
        return x


_DEPRECATED_CALLS = {
    "script": lambda lib: lib.jit.script(_inc),
    "trace": lambda lib: lib.jit.trace(_inc, lib.ones(2)),
    "fork and wait": lambda lib: lib.jit.wait(lib.jit.fork(_inc, lib.ones(2))),
    "freeze": lambda lib: lib.jit.freeze(lib.nn.Linear(2, 2).eval()),
    "optimize_for_inference": lambda lib: lib.jit.optimize_for_inference(lib.nn.Linear(2, 2)),
    "interface": lambda lib: lib.jit.interface(_Interface),
    "save": lambda lib: lib.jit.save(lib.nn.Linear(2, 2), "unwritten.pt"),
    "load": lambda lib: lib.jit.load("missing.pt"),
}


def _deprecations(lib, call):
    """The DeprecationWarnings `call(lib)` gives, whatever it then returns or raises."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            call(lib)
        except Exception:  # torch's JIT refuses some of these calls after warning
            pass
    return {str(w.message) for w in caught if w.category is DeprecationWarning}


@pytest.mark.parametrize("name", list(_DEPRECATED_CALLS))
def test_deprecated_entry_points_warn_as_torch(name, tmp_path, monkeypatch):
    import torch
    monkeypatch.chdir(tmp_path)
    expected = _deprecations(torch, _DEPRECATED_CALLS[name])
    assert expected
    assert _deprecations(genesis, _DEPRECATED_CALLS[name]) == expected
