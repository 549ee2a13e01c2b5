"""Module state-dict hooks, extra state, set_submodule, to_empty and compile, against torch."""

from collections import OrderedDict

import pytest
import torch
from helpers import assert_close

import genesis


def _both(make):
    return make(genesis), make(torch)


def _with_extra_state(lib):
    class Counted(lib.nn.Linear):
        def __init__(self):
            super().__init__(2, 2)
            self.steps = 0

        def get_extra_state(self):
            return {"steps": self.steps}

        def set_extra_state(self, state):
            self.steps = state["steps"]
    return lib.nn.Sequential(Counted())


def test_extra_state_round_trips_as_torch():
    ours, theirs = _both(_with_extra_state)
    ours[0].steps = theirs[0].steps = 7
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert ours.state_dict()["0._extra_state"] == {"steps": 7}
    fresh, fresh_theirs = _both(_with_extra_state)
    fresh.load_state_dict(ours.state_dict())
    assert fresh[0].steps == 7
    state, state_theirs = fresh.state_dict(), fresh_theirs.state_dict()
    del state["0._extra_state"], state_theirs["0._extra_state"]
    for module, sd in ((_with_extra_state(genesis), state), (fresh_theirs, state_theirs)):
        with pytest.raises(RuntimeError, match=r'Missing key\(s\) in state_dict: '
                                               r'"0._extra_state"'):
            module.load_state_dict(sd)


def test_state_dict_hooks_as_torch():
    logs = []
    for lib in (genesis, torch):
        log = []
        model = lib.nn.Sequential(lib.nn.Linear(2, 2))
        model[0].register_state_dict_pre_hook(lambda m, prefix, keep: log.append(("pre", prefix)))

        def post(module, state, prefix, metadata, log=log):
            log.append(("post", prefix, sorted(state)))
            state[prefix + "added"] = 1
        model[0].register_state_dict_post_hook(post)
        state = model.state_dict()
        log.append(sorted(state))
        logs.append(log)
        model[0].register_state_dict_post_hook(lambda *args: {})
        with pytest.raises(RuntimeError, match="state_dict post-hook must return None"):
            model.state_dict()
    assert logs[0] == logs[1]


def test_load_pre_hook_renames_old_keys_and_post_hook_edits_missing():
    for lib in (genesis, torch):
        model = lib.nn.Sequential(lib.nn.Linear(2, 3))

        def rename(module, state, prefix, *args):
            for old in [k for k in state if k.startswith(prefix + "old_")]:
                state[prefix + old[len(prefix) + 4:]] = state.pop(old)
        model[0].register_load_state_dict_pre_hook(rename)
        state = {"0.old_weight": lib.ones(3, 2), "0.old_bias": lib.zeros(3)}
        model.load_state_dict(state)
        assert list(state) == ["0.old_weight", "0.old_bias"]
        assert float(model[0].weight.detach().sum()) == 6.0

        def forgive_bias(module, keys):
            keys.missing_keys[:] = [k for k in keys.missing_keys if not k.endswith("bias")]
        model[0].register_load_state_dict_post_hook(forgive_bias)
        keys = model.load_state_dict({"0.old_weight": lib.full((3, 2), 2.0)})
        assert keys.missing_keys == [] and float(model[0].weight.detach().sum()) == 12.0


def _legacy_block(lib):
    """A block whose checkpoints before version 2 named its layers `fc_1` and `fc_2`: its
    _load_from_state_dict override renames them, reading the version from the metadata."""
    class Block(lib.nn.Sequential):
        _version = 2

        def __init__(self):
            super().__init__(lib.nn.Linear(2, 3), lib.nn.ReLU(), lib.nn.Linear(3, 2))

        def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict,
                                  missing_keys, unexpected_keys, error_msgs):
            self.seen = local_metadata.get("version")
            if self.seen is None or self.seen < 2:
                for i, name in ((0, "fc_1"), (2, "fc_2")):
                    for kind in ("weight", "bias"):
                        old = f"{prefix}{name}.{kind}"
                        if old in state_dict:
                            state_dict[f"{prefix}{i}.{kind}"] = state_dict.pop(old)
            super()._load_from_state_dict(state_dict, prefix, local_metadata, strict,
                                          missing_keys, unexpected_keys, error_msgs)
    return lib.nn.Sequential(Block())


def _load_legacy(lib):
    """Load the block's checkpoint with its layers renamed as before version 2: without
    metadata, with version 1 and with version 2 (where the old names are unexpected)."""
    model = _legacy_block(lib)
    state = model.state_dict()
    old = OrderedDict((k.replace("0.0.", "0.fc_1.").replace("0.2.", "0.fc_2."),
                       lib.full_like(v, 2.0)) for k, v in state.items())
    seen = [repr(model.load_state_dict(dict(old))), model[0].seen]
    old._metadata = OrderedDict((k, dict(v)) for k, v in state._metadata.items())
    old._metadata["0"]["version"] = 1
    model.load_state_dict(old, assign=True)
    seen += [model[0].seen, model[0][2].bias.detach().tolist()]
    old._metadata["0"]["version"] = 2
    with pytest.raises(RuntimeError) as error:
        model.load_state_dict(old)
    return seen + [str(error.value), list(state._metadata.items())]


def test_load_from_state_dict_override_with_torch_arguments():
    assert _load_legacy(genesis) == _load_legacy(torch)


def test_load_from_state_dict_called_directly_writes_as_torch():
    for lib in (genesis, torch):
        layer = lib.nn.Linear(2, 2)
        missing, unexpected, errors = [], [], []
        layer._load_from_state_dict({"weight": lib.ones(2, 2), "bias": lib.ones(3), "x": 1}, "",
                                    {}, True, missing, unexpected, errors)
        assert float(layer.weight.detach().sum()) == 4.0
        assert (missing, unexpected) == ([], ["x"]) and errors[0].startswith("size mismatch")


@pytest.mark.parametrize("norm", ["BatchNorm1d", "InstanceNorm1d"])
def test_norm_checkpoint_without_batch_count_as_torch(norm):
    for lib in (genesis, torch):
        layer = getattr(lib.nn, norm)(3, track_running_stats=True)
        layer.num_batches_tracked.fill_(5)
        state = layer.state_dict()
        del state["num_batches_tracked"]
        layer.load_state_dict(dict(state))
        assert int(layer.num_batches_tracked) == 5
        with pytest.raises(RuntimeError, match=r'Missing key\(s\) in state_dict: '
                                               r'"num_batches_tracked"'):
            layer.load_state_dict(state)


def test_set_submodule_as_torch():
    for lib in (genesis, torch):
        model = lib.nn.Sequential(lib.nn.Sequential(lib.nn.Linear(2, 2)))
        model.set_submodule("0.0", lib.nn.Identity())
        model.set_submodule("0.extra", lib.nn.ReLU())
        assert type(model[0][0]).__name__ == "Identity" and type(model[0].extra).__name__ == "ReLU"
        with pytest.raises(AttributeError, match="Sequential has no attribute `missing`"):
            model.set_submodule("0.missing", lib.nn.ReLU(), strict=True)
        with pytest.raises(ValueError, match="Cannot set the submodule without a target name!"):
            model.set_submodule("", lib.nn.ReLU())


def test_to_empty_keeps_shapes_and_dtypes():
    model = genesis.nn.Sequential(genesis.nn.Linear(2, 3), genesis.nn.BatchNorm1d(3)).double()
    params = list(model.parameters())
    assert model.to_empty(device="cpu") is model
    assert list(model.parameters())[0] is params[0]
    assert [(p.shape, p.dtype) for p in model.state_dict().values()] == \
        [(t.shape, t.dtype) for t in genesis.nn.Sequential(
            genesis.nn.Linear(2, 3), genesis.nn.BatchNorm1d(3)).double().state_dict().values()]


def test_module_compile_keeps_its_values(rng):
    model = genesis.nn.Linear(3, 2)
    x = genesis.randn(4, 3)
    expected = model(x)
    model.compile()
    assert_close(model(x), expected)


def test_compiled_module_attributes_are_the_original_modules():
    """As torch's OptimizedModule: attributes set or deleted on the compiled wrapper (a flag the
    forward reads, a new submodule) land on the original module; train/eval reach both."""
    states = []
    for lib in (torch, genesis):
        model = lib.nn.Sequential(lib.nn.Linear(2, 2))
        compiled = lib.compile(model)
        compiled.flag = 3
        compiled.extra = lib.nn.Linear(1, 1)
        seen = model.flag, "flag" in vars(compiled)
        del compiled.flag
        compiled.eval()
        states.append((seen, hasattr(model, "flag"), list(model.state_dict()),
                       list(compiled.state_dict()), compiled.training, model.training))
    assert states[1] == states[0]
