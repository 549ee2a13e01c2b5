"""The Mixture-of-Experts blocks of genesis.models (models/moe.py) against transformers: the
router's chosen experts and weights, the three ways of computing the experts (gathered,
dense, grouped) against transformers' block, which way runs when, the dense and sparse layers
Qwen's configs choose, and the checkpoints' per-expert names. test_models.py runs the families'
logits, generation, cache, save/load and decode-step tests."""

import json
import os

import numpy as np
import pytest
import torch

import genesis
from genesis.models import moe
from helpers import TOLERANCES, assert_close
from test_models import FAMILIES, _hf_model, _prompts

transformers = pytest.importorskip("transformers")

MOE_FAMILIES = ["mixtral", "qwen3_moe", "qwen2_moe"]


@pytest.fixture(params=MOE_FAMILIES)
def moe_saved(request, tmp_path):
    hf = _hf_model(request.param)
    hf.save_pretrained(tmp_path / "model")
    return request.param, hf, str(tmp_path / "model")


def _sparse_layers(model):
    return [i for i, layer in enumerate(model.model.layers)
            if isinstance(layer.mlp, moe.SparseMoeBlock)]


def _hidden(rng, rows, width):
    return rng.standard_normal((rows, width)).astype(np.float32)


def test_router_matches_transformers(moe_saved, rng):
    """Each token's chosen experts, in order, and their weights (renormalised where the config
    says; float32 for Mixtral, the model's dtype for Qwen) are transformers' router's."""
    family, hf, path = moe_saved
    model = genesis.models.from_pretrained(path)
    x = _hidden(rng, 40, hf.config.hidden_size)
    for i in _sparse_layers(model):
        with torch.no_grad():
            _, scores, indices = hf.model.layers[i].mlp.gate(torch.tensor(x))
        with genesis.no_grad():
            weights, experts = model.model.layers[i].mlp.route(genesis.tensor(x))
        np.testing.assert_array_equal(experts.numpy(), indices.numpy())
        assert weights.dtype is genesis.float32
        assert_close(weights, scores, atol=1e-6, rtol=1e-6)


def test_router_weights_dtype_in_bfloat16(tmp_path, rng):
    """Mixtral's routing weights stay float32 in a bfloat16 model, Qwen's are rounded."""
    for family, dtype in (("mixtral", genesis.float32), ("qwen3_moe", genesis.bfloat16)):
        _hf_model(family).save_pretrained(tmp_path / family)
        model = genesis.models.from_pretrained(str(tmp_path / family), dtype=genesis.bfloat16)
        block = model.model.layers[_sparse_layers(model)[0]].mlp
        x = genesis.tensor(_hidden(rng, 4, 32)).bfloat16()
        with genesis.no_grad():
            weights, _ = block.route(x)
        assert weights.dtype is dtype


@pytest.mark.parametrize("rows", [1, 2, 7, 30])
def test_expert_paths_match_transformers_block(moe_saved, rng, rows):
    """The gathered, dense and grouped computations of the experts give transformers' sparse
    block's output (the shared expert included) for few and many rows."""
    family, hf, path = moe_saved
    model = genesis.models.from_pretrained(path)
    x = _hidden(rng, rows, hf.config.hidden_size)
    for i in _sparse_layers(model):
        block = model.model.layers[i].mlp
        with torch.no_grad():
            expected = hf.model.layers[i].mlp(torch.tensor(x)[None])[0]
        for way in ("gathered", "dense", "grouped"):
            compute = getattr(block.experts, way)
            block.experts.forward = lambda x, weights, experts, decoding: compute(x, weights,
                                                                                  experts)
            with genesis.no_grad():
                out = block(genesis.tensor(x))
            assert_close(out, expected, atol=1e-6, rtol=1e-5)


def test_the_rows_and_the_step_choose_the_computation(moe_saved, rng, monkeypatch):
    """Few (row, expert) pairs gather their experts; more run every expert in a decode step
    and group the rows by expert elsewhere."""
    family, hf, path = moe_saved
    model = genesis.models.from_pretrained(path)
    block = model.model.layers[_sparse_layers(model)[0]].mlp
    calls = []
    for way in ("gathered", "dense", "grouped"):
        original = getattr(moe.Experts, way)
        monkeypatch.setattr(moe.Experts, way, lambda self, *a, _way=way, _f=original:
                            calls.append(_way) or _f(self, *a))
    few = block.experts.count // block.top_k
    cases = [(few, False, "gathered"), (few, True, "gathered"), (few + 1, True, "dense"),
             (few + 1, False, "grouped")]
    for rows, decoding, way in cases:
        with genesis.no_grad():
            block(genesis.tensor(_hidden(rng, rows, hf.config.hidden_size)), decoding)
        assert calls.pop() == way


def test_sparse_and_dense_layers_follow_the_config():
    """Every decoder_sparse_step-th layer has experts, but those in mlp_only_layers; the others
    have the dense MLP of intermediate_size, as transformers builds them."""
    kwargs = dict(FAMILIES["qwen3_moe"][2], num_hidden_layers=6, decoder_sparse_step=2,
                  mlp_only_layers=[3])
    hf = transformers.Qwen3MoeForCausalLM(transformers.Qwen3MoeConfig(**kwargs))
    model = genesis.models.Qwen3MoeForCausalLM(genesis.models.Qwen3MoeConfig(
        hf.config.to_dict()))
    expected = [i for i, layer in enumerate(hf.model.layers)
                if type(layer.mlp).__name__ == "Qwen3MoeSparseMoeBlock"]
    assert _sparse_layers(model) == expected == [1, 5]
    assert model.model.layers[0].mlp.down_proj.in_features == 48


def test_checkpoints_name_each_expert(moe_saved, tmp_path):
    """Genesis writes each expert's matrices under the published names (Mixtral's under
    block_sparse_moe), and reads configs that count the experts as num_experts or as
    num_local_experts."""
    family, hf, path = moe_saved
    from safetensors.numpy import load_file
    model = genesis.models.from_pretrained(path)
    model.save_pretrained(str(tmp_path / "saved"))
    names = set(load_file(str(tmp_path / "saved" / "model.safetensors")))
    layer = _sparse_layers(model)[0]
    expert = {"mixtral": f"model.layers.{layer}.block_sparse_moe.experts.3.w2.weight"}.get(
        family, f"model.layers.{layer}.mlp.experts.3.down_proj.weight")
    assert expert in names and not any("gate_up_proj" in n for n in names)
    with open(os.path.join(path, "config.json")) as f:
        config = json.load(f)
    count = config.pop("num_local_experts", None) or config.pop("num_experts")
    for key in ("num_experts", "num_local_experts"):
        assert genesis.models.MODEL_TYPES[family].config_class(
            {**config, key: count}).expert_count == count


def test_prefill_in_row_blocks_generates_the_same_tokens(rng, tmp_path, monkeypatch):
    """generate's prefill runs a sparse block over blocks of rows once its routed
    intermediates pass PREFILL_MLP_BYTES: the same tokens."""
    from genesis.models import llama
    _hf_model("qwen2_moe").save_pretrained(tmp_path)
    model = genesis.models.from_pretrained(str(tmp_path))
    ids, mask = (genesis.tensor(a) for a in _prompts(rng, 3, 7, True))
    expected = model.generate(ids, attention_mask=mask, max_new_tokens=12, pad_token_id=0)
    block = model.model.layers[0].mlp
    monkeypatch.setattr(llama, "PREFILL_MLP_BYTES", 4 * block.row_features() * 4)
    blocks = []
    blockwise = llama.RowBlocks.blockwise
    monkeypatch.setattr(llama.RowBlocks, "blockwise",
                        lambda mlp, x, rows: blocks.append(type(mlp)) or blockwise(mlp, x, rows))
    out = model.generate(ids, attention_mask=mask, max_new_tokens=12, pad_token_id=0)
    np.testing.assert_array_equal(out.numpy(), expected.numpy())
    assert blocks == [llama.MLP, moe.SparseMoeBlock]


@pytest.mark.parametrize("family", MOE_FAMILIES)
def test_bf16_logits_match_transformers(family, rng, tmp_path):
    hf = _hf_model(family)
    hf.save_pretrained(tmp_path)
    hf = hf.to(torch.bfloat16)
    model = genesis.models.from_pretrained(str(tmp_path), dtype=genesis.bfloat16)
    ids, _ = _prompts(rng, 2, 16, False)
    with torch.no_grad():
        expected = hf(torch.tensor(ids)).logits.float()
    with genesis.no_grad():
        logits = model(genesis.tensor(ids)).float()
    scale = float(expected.abs().max())
    assert_close(logits, expected, rtol=0, atol=8 * TOLERANCES[genesis.bfloat16][0] * scale)
