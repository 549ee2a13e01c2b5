"""genesis.jit behaves as torch.jit with the JIT disabled: script and trace hand back what they
get, which runs eagerly with the same values; the decorators leave functions as they are."""

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
