"""genesis.models against transformers: small random-initialised models of each family saved by
transformers load in Genesis with equal logits and equal greedy generations (batched, left
padded), sharded checkpoints load, Genesis-saved models load in transformers, and broken
directories give errors that name the file and tensor."""

import json
import os

import numpy as np
import pytest
import torch

import genesis
from helpers import TOLERANCES, assert_close

transformers = pytest.importorskip("transformers")

VOCAB = 97
FAMILIES = {
    "llama": ("LlamaConfig", "LlamaForCausalLM", dict(
        vocab_size=VOCAB, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
        rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                      "high_freq_factor": 4.0, "original_max_position_embeddings": 16})),
    "mistral": ("MistralConfig", "MistralForCausalLM", dict(
        vocab_size=VOCAB, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=1, sliding_window=None,
        max_position_embeddings=128)),
    "mistral_window": ("MistralConfig", "MistralForCausalLM", dict(
        vocab_size=VOCAB, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=1, sliding_window=5,
        max_position_embeddings=128)),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM", dict(
        vocab_size=VOCAB, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=True,
        max_position_embeddings=128)),
    "qwen2_window": ("Qwen2Config", "Qwen2ForCausalLM", dict(
        vocab_size=VOCAB, hidden_size=32, intermediate_size=48, num_hidden_layers=3,
        num_attention_heads=4, num_key_value_heads=2, use_sliding_window=True,
        sliding_window=6, max_window_layers=1, max_position_embeddings=128)),
    "llama_biased": ("LlamaConfig", "LlamaForCausalLM", dict(
        vocab_size=VOCAB, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, attention_bias=True, mlp_bias=True,
        max_position_embeddings=128)),
    "qwen3": ("Qwen3Config", "Qwen3ForCausalLM", dict(
        vocab_size=VOCAB, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, tie_word_embeddings=True,
        max_position_embeddings=128)),
    "gemma3": ("Gemma3TextConfig", "Gemma3ForCausalLM", dict(
        vocab_size=VOCAB, hidden_size=32, intermediate_size=48, num_hidden_layers=3,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, query_pre_attn_scalar=24,
        sliding_window=5, layer_types=["sliding_attention", "full_attention",
                                       "sliding_attention"],
        rope_scaling={"rope_type": "linear", "factor": 8.0},
        max_position_embeddings=128, pad_token_id=0, eos_token_id=1, bos_token_id=2)),
    "gemma2": ("Gemma2Config", "Gemma2ForCausalLM", dict(
        vocab_size=VOCAB, hidden_size=32, intermediate_size=48, num_hidden_layers=3,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, query_pre_attn_scalar=24,
        sliding_window=5, attn_logit_softcapping=1.5, final_logit_softcapping=2.0,
        max_position_embeddings=128, pad_token_id=0, eos_token_id=1, bos_token_id=2)),
    "phi3": ("Phi3Config", "Phi3ForCausalLM", dict(
        vocab_size=VOCAB, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
        original_max_position_embeddings=16, partial_rotary_factor=0.5, pad_token_id=0,
        bos_token_id=1, eos_token_id=2, sliding_window=None,
        rope_scaling={"type": "longrope", "long_factor": [1.0, 2.5], "short_factor": [1.0, 1.2]})),
    "mixtral": ("MixtralConfig", "MixtralForCausalLM", dict(
        vocab_size=VOCAB, hidden_size=32, intermediate_size=24, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, num_local_experts=4,
        num_experts_per_tok=2, max_position_embeddings=128)),
    "qwen3_moe": ("Qwen3MoeConfig", "Qwen3MoeForCausalLM", dict(
        vocab_size=VOCAB, hidden_size=32, intermediate_size=48, moe_intermediate_size=24,
        num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
        num_experts=8, num_experts_per_tok=2, norm_topk_prob=True, mlp_only_layers=[1],
        max_position_embeddings=128)),
    "qwen2_moe": ("Qwen2MoeConfig", "Qwen2MoeForCausalLM", dict(
        vocab_size=VOCAB, hidden_size=32, intermediate_size=48, moe_intermediate_size=16,
        shared_expert_intermediate_size=40, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, num_experts=6, num_experts_per_tok=3, decoder_sparse_step=2,
        max_position_embeddings=128)),
    "gpt2": ("GPT2Config", "GPT2LMHeadModel", dict(
        vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4, n_positions=128, bos_token_id=0,
        eos_token_id=0)),
}


def _hf_model(family, dtype=torch.float32):
    config_name, model_name, kwargs = FAMILIES[family]
    torch.manual_seed(0)
    config = getattr(transformers, config_name)(**kwargs)
    model = getattr(transformers, model_name)(config)
    with torch.no_grad():  # biases start at 0 and norm scales at 1: moved, so that they count
        for param in model.parameters():
            if param.dim() == 1:
                param.add_(0.02 * torch.randn_like(param))
    return model.to(dtype).eval()


@pytest.fixture(params=sorted(FAMILIES))
def saved(request, tmp_path):
    """(family, transformers model, its saved directory)."""
    hf = _hf_model(request.param)
    hf.save_pretrained(tmp_path / "model")
    return request.param, hf, str(tmp_path / "model")


def _prompts(rng, batch, length, padded):
    ids = rng.integers(1, VOCAB, (batch, length))
    mask = np.ones((batch, length), dtype=np.int64)
    if padded:
        for row in range(1, batch):
            mask[row, :rng.integers(1, length - 1)] = 0
        ids = np.where(mask == 1, ids, 0)
    return ids, mask


def _hf_logits(hf, ids, mask=None):
    with torch.no_grad():
        kwargs = {} if mask is None else {"attention_mask": torch.tensor(mask)}
        return hf(torch.tensor(ids), **kwargs).logits


# Genesis's logits match transformers' to about 1e-5 a step (test_logits_match_transformers),
# so a greedy step whose two best transformers scores lie closer than this may go either way.
NEAR_TIE = 1e-4


def _hf_greedy(hf, ids, mask, **kwargs):
    """transformers' greedy generation with the scores of each step (after its processors)."""
    return hf.generate(torch.tensor(ids), attention_mask=torch.tensor(mask), do_sample=False,
                       output_scores=True, return_dict_in_generate=True, **kwargs)


def _assert_greedy_tokens(out, expected, prompt_len):
    """Genesis's greedy tokens `out` equal transformers' (`expected`, from _hf_greedy): each
    row up to its first difference, which must be a near-tie of transformers' scores (within
    NEAR_TIE; the row goes its own way after it); with no tie, every token and the length."""
    sequences = expected.sequences.numpy()
    width = min(out.shape[1], sequences.shape[1])
    tied = False
    for row in range(len(sequences)):
        differ = np.flatnonzero(out[row, :width] != sequences[row, :width])
        if not len(differ):
            continue
        col, ours, theirs = differ[0], int(out[row, differ[0]]), int(sequences[row, differ[0]])
        scores = expected.scores[col - prompt_len][row] if col >= prompt_len else None
        gap = float("inf") if scores is None else float(scores[theirs] - scores[ours])
        assert gap <= NEAR_TIE, (f"row {row}, position {col}: genesis chose token {ours}, "
                                 f"transformers {theirs}, ahead by {gap:.3g}\n{out}\n{sequences}")
        tied = True
    if not tied:
        np.testing.assert_array_equal(out, sequences)


def test_logits_match_transformers(saved, rng):
    family, hf, path = saved
    model = genesis.models.from_pretrained(path)
    ids, _ = _prompts(rng, 3, 11, padded=False)
    with genesis.no_grad():
        logits = model(genesis.tensor(ids))
    assert tuple(logits.shape) == (3, 11, VOCAB)
    assert_close(logits, _hf_logits(hf, ids), atol=1e-5, rtol=1e-5)


def test_prompt_in_chunks_over_a_cache_gives_the_whole_prompts_logits(saved, rng):
    """A prompt fed in two multi-token steps over one cache: each step's queries see the
    cached keys and, causally, their own (within the sliding window where there is one)."""
    family, hf, path = saved
    model = genesis.models.from_pretrained(path)
    ids, _ = _prompts(rng, 2, 11, padded=False)
    cache = model.make_cache(2, 16, "cpu")
    with genesis.no_grad():
        first = model(genesis.tensor(ids[:, :4]), cache=cache)
        second = model(genesis.tensor(ids[:, 4:]), cache=cache)
    assert_close(genesis.cat([first, second], 1), _hf_logits(hf, ids), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("batch,padded", [(1, False), (3, False), (3, True)])
def test_greedy_generation_matches_transformers(saved, device, rng, batch, padded):
    """On the GPU the decode steps run captured in a graph (each family's: MoE routing over
    every expert, capped and sliding-window attention)."""
    family, hf, path = saved
    version = tuple(int(part) for part in transformers.__version__.split(".")[:2])
    if family == "phi3" and version < (5, 24):
        pytest.skip(f"transformers {transformers.__version__} (the GPU image's) decodes past "
                    "LongRoPE's original context otherwise than 5.24, the CI oracle, does")
    model = genesis.models.from_pretrained(path, device=device)
    ids, mask = _prompts(rng, batch, 7, padded)
    expected = _hf_greedy(hf, ids, mask, max_new_tokens=32, pad_token_id=0)
    out = model.generate(genesis.tensor(ids, device=device),
                         attention_mask=genesis.tensor(mask, device=device),
                         max_new_tokens=32, pad_token_id=0)
    _assert_greedy_tokens(out.cpu().numpy(), expected, ids.shape[1])


def test_prefill_mlp_in_row_blocks_generates_the_same_tokens(rng, tmp_path, monkeypatch):
    """generate's prefill runs the MLP over blocks of rows (the last one shorter) once the
    whole prompt's intermediates pass PREFILL_MLP_BYTES: same tokens as all rows at once."""
    from genesis.models import llama
    _hf_model("llama").save_pretrained(tmp_path)
    model = genesis.models.from_pretrained(str(tmp_path))
    ids, mask = (genesis.tensor(a) for a in _prompts(rng, 3, 7, True))
    expected = model.generate(ids, attention_mask=mask, max_new_tokens=12, pad_token_id=0)
    blocks = []
    blockwise = llama.MLP.blockwise
    monkeypatch.setattr(llama.MLP, "blockwise",
                        lambda mlp, x, rows: blocks.append(rows) or blockwise(mlp, x, rows))
    row_bytes = model.model.layers[0].mlp.gate_up_proj.out_features * 4
    monkeypatch.setattr(llama, "PREFILL_MLP_BYTES", 5 * row_bytes)
    out = model.generate(ids, attention_mask=mask, max_new_tokens=12, pad_token_id=0)
    np.testing.assert_array_equal(out.numpy(), expected.numpy())
    assert blocks == [5] * len(model.model.layers)  # 21 rows: 5, 5, 5, 5 and 1


def test_decoder_layer_hooks_run(saved, rng):
    """The model runs a layer's halves itself (so that its inputs die before the MLP), but a
    layer with forward hooks is called, and its hooks see its output: the same logits."""
    family, hf, path = saved
    if family in ("gpt2", "gemma2", "gemma3"):
        pytest.skip("GPT-2's and Gemma's layers are always called as modules")
    model = genesis.models.from_pretrained(path)
    ids = genesis.tensor(_prompts(rng, 2, 5, padded=False)[0])
    seen = []
    with genesis.no_grad():
        expected = model(ids)
        layer = model.model.layers[-1]
        handle = layer.register_forward_hook(lambda module, args, out: seen.append(out[0]))
        logits = model(ids)
        handle.remove()
    assert len(seen) == 1 and tuple(seen[0].shape) == (2, 5, hf.config.hidden_size)
    np.testing.assert_array_equal(logits.numpy(), expected.numpy())


def test_repeated_generate_reuses_its_cache_but_not_the_last_prompt(saved, rng):
    """A second call of the same shapes keeps the first's cache (and, on CUDA, its decode graph)
    yet sees only its own prompt; a weight that moved starts a new cache."""
    family, hf, path = saved
    model = genesis.models.from_pretrained(path)
    (first, mask), (second, _) = _prompts(rng, 3, 7, True), _prompts(rng, 3, 7, False)
    second = second * mask
    kwargs = dict(max_new_tokens=12, pad_token_id=0)
    model.generate(genesis.tensor(first), attention_mask=genesis.tensor(mask), **kwargs)
    session = model._last_decode
    out = model.generate(genesis.tensor(second), attention_mask=genesis.tensor(mask), **kwargs)
    _assert_greedy_tokens(out.numpy(), _hf_greedy(hf, second, mask, **kwargs), second.shape[1])
    assert model._last_decode is session
    model.double()
    model.generate(genesis.tensor(second), attention_mask=genesis.tensor(mask), **kwargs)
    assert model._last_decode is not session


def test_eos_stops_each_sequence_as_transformers(saved, rng):
    family, hf, path = saved
    model = genesis.models.from_pretrained(path)
    ids, mask = _prompts(rng, 4, 6, padded=True)
    free = hf.generate(torch.tensor(ids), attention_mask=torch.tensor(mask), max_new_tokens=20,
                       do_sample=False, pad_token_id=0)
    eos = int(free[0, 6 + 3])  # the first sequence's fourth new token ends it early
    expected = _hf_greedy(hf, ids, mask, max_new_tokens=20, pad_token_id=0, eos_token_id=eos)
    out = model.generate(genesis.tensor(ids), attention_mask=genesis.tensor(mask),
                         max_new_tokens=20, eos_token_id=eos, pad_token_id=0)
    _assert_greedy_tokens(out.numpy(), expected, ids.shape[1])


def test_sampling_filters(saved, rng):
    family, hf, path = saved
    model = genesis.models.from_pretrained(path)
    ids = genesis.tensor(_prompts(rng, 2, 5, padded=False)[0])
    greedy = model.generate(ids, max_new_tokens=8)
    for kwargs in (dict(top_k=1), dict(top_p=1e-6)):
        sampled = model.generate(ids, max_new_tokens=8, do_sample=True, **kwargs)
        np.testing.assert_array_equal(sampled.numpy(), greedy.numpy())
    draws = [model.generate(ids, max_new_tokens=8, do_sample=True, top_k=0,
                            generator=genesis.Generator().manual_seed(7)).numpy()
             for _ in range(2)]
    np.testing.assert_array_equal(draws[0], draws[1])


@pytest.mark.parametrize("settings", [dict(repetition_penalty=1.8),
                                      dict(repetition_penalty=0.6, min_new_tokens=5),
                                      dict(min_new_tokens=30)])
def test_processors_match_transformers(saved, rng, settings):
    """Greedy generation under the repetition penalty (prompt padding ignored, as
    transformers does) and min_new_tokens gives transformers' tokens; eos is the token each
    row would stop on first."""
    family, hf, path = saved
    model = genesis.models.from_pretrained(path)
    ids, mask = _prompts(rng, 3, 7, padded=True)
    free = hf.generate(torch.tensor(ids), attention_mask=torch.tensor(mask), max_new_tokens=8,
                       do_sample=False, pad_token_id=0, eos_token_id=VOCAB + 1)
    eos = int(free[-1, 7])
    expected = _hf_greedy(hf, ids, mask, max_new_tokens=32, pad_token_id=0, eos_token_id=eos,
                          **settings)
    out = model.generate(genesis.tensor(ids), attention_mask=genesis.tensor(mask),
                         max_new_tokens=32, pad_token_id=0, eos_token_id=eos, **settings)
    _assert_greedy_tokens(out.numpy(), expected, ids.shape[1])


def test_min_p_filter_matches_transformers(rng):
    from genesis.models.sampling import filter_min_p
    from transformers.generation.logits_process import MinPLogitsWarper
    logits = rng.standard_normal((4, 50)).astype(np.float32) * 3
    expected = MinPLogitsWarper(0.1)(None, torch.tensor(logits))
    np.testing.assert_array_equal(filter_min_p(genesis.tensor(logits), 0.1).numpy(),
                                  expected.numpy())


def test_generation_config_sets_the_sampling_defaults(saved, rng):
    """generation_config.json's do_sample, top_k and repetition_penalty apply where generate
    is not given them; arguments win; invalid settings raise transformers' errors."""
    family, hf, path = saved
    with open(os.path.join(path, "generation_config.json"), "w") as f:
        json.dump({"do_sample": True, "top_k": 1, "repetition_penalty": 1.8,
                   "pad_token_id": 0}, f)
    model = genesis.models.from_pretrained(path)
    ids = _prompts(rng, 2, 5, padded=False)[0]
    configured = model.generate(genesis.tensor(ids), max_new_tokens=8)
    expected = hf.generate(torch.tensor(ids), max_new_tokens=8, do_sample=False,
                           repetition_penalty=1.8, pad_token_id=0)
    np.testing.assert_array_equal(configured.numpy(), expected.numpy())
    plain = model.generate(genesis.tensor(ids), max_new_tokens=8, do_sample=False,
                           repetition_penalty=1.0)
    expected = hf.generate(torch.tensor(ids), max_new_tokens=8, do_sample=False,
                           pad_token_id=0)
    np.testing.assert_array_equal(plain.numpy(), expected.numpy())
    with pytest.raises(ValueError, match="strictly positive"):
        model.generate(genesis.tensor(ids), repetition_penalty=0.0)
    with pytest.raises(ValueError, match="temperature"):
        model.generate(genesis.tensor(ids), temperature=0.0)


def test_temperature_sharpens_and_flattens_the_distribution():
    """A random model's top two logits can tie within a low temperature, so temperature is
    checked on logits of known gaps."""
    from genesis.models.sampling import Sampling, next_tokens
    logits = genesis.tensor([[0.0, 5.0, 1.0]]).expand(400, 3)
    generator = genesis.Generator().manual_seed(3)
    cold = next_tokens(logits, Sampling(True, 0.01, 0), generator=generator)
    hot = next_tokens(logits, Sampling(True, 100.0, 0), generator=generator)
    assert set(cold.tolist()) == {1}
    assert set(hot.tolist()) == {0, 1, 2}


def test_streamer_receives_every_token(saved, rng):
    family, hf, path = saved
    model = genesis.models.from_pretrained(path)

    class Collect:
        def __init__(self):
            self.tokens, self.ended = [], False

        def put(self, tokens):
            self.tokens.append(tokens.tolist())

        def end(self):
            self.ended = True

    streamer = Collect()
    out = model.generate(genesis.tensor(_prompts(rng, 2, 4, False)[0]), max_new_tokens=5,
                         streamer=streamer)
    assert streamer.ended
    assert np.array(streamer.tokens).T.tolist() == out[:, 4:].tolist()


def test_sharded_checkpoints_load(tmp_path, rng):
    hf = _hf_model("llama")
    hf.save_pretrained(tmp_path, max_shard_size="20KB")
    assert os.path.exists(tmp_path / "model.safetensors.index.json")
    model = genesis.models.from_pretrained(str(tmp_path))
    ids, _ = _prompts(rng, 2, 5, False)
    with genesis.no_grad():
        assert_close(model(genesis.tensor(ids)), _hf_logits(hf, ids), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("shard", ["10KB", "5GB"])
def test_genesis_saved_models_load_in_transformers(saved, tmp_path, rng, shard):
    family, hf, path = saved
    model = genesis.models.from_pretrained(path)
    out = tmp_path / "saved"
    model.save_pretrained(str(out), max_shard_size=shard)
    reloaded = getattr(transformers, FAMILIES[family][1]).from_pretrained(out).eval()
    ids, _ = _prompts(rng, 2, 6, False)
    with genesis.no_grad():
        assert_close(model(genesis.tensor(ids)), _hf_logits(reloaded, ids), atol=1e-5,
                     rtol=1e-5)


def test_dtype_and_device_arguments(saved):
    family, hf, path = saved
    model = genesis.models.from_pretrained(path, dtype=genesis.bfloat16)
    assert all(p.dtype is genesis.bfloat16 for p in model.parameters())
    assert model.lm_head.weight.device.type == "cpu"


def test_bf16_logits_match_transformers(device, rng, tmp_path):
    if device == "cuda" and not torch.cuda.is_available():
        pytest.skip("torch has no GPU here")
    hf = _hf_model("llama")
    hf.save_pretrained(tmp_path)
    hf = hf.to(device=device, dtype=torch.bfloat16)
    model = genesis.models.from_pretrained(str(tmp_path), dtype=genesis.bfloat16, device=device)
    ids, _ = _prompts(rng, 2, 16, False)
    with torch.no_grad():
        expected = hf(torch.tensor(ids, device=device)).logits.float().cpu()
    with genesis.no_grad():
        logits = model(genesis.tensor(ids, device=device)).float()
    scale = float(expected.abs().max())
    assert_close(logits, expected, rtol=0, atol=8 * TOLERANCES[genesis.bfloat16][0] * scale)


def _edit_config(path, **changes):
    config_path = os.path.join(path, "config.json")
    with open(config_path) as f:
        config = json.load(f)
    config.update(changes)
    with open(config_path, "w") as f:
        json.dump(config, f)


def _rewrite_weights(path, edit):
    from safetensors.numpy import load_file, save_file
    file = os.path.join(path, "model.safetensors")
    weights = load_file(file)
    edit(weights)
    save_file(weights, file, metadata={"format": "pt"})


def test_broken_directories_are_clear_errors(tmp_path):
    hf = _hf_model("llama")
    good = tmp_path / "good"
    hf.save_pretrained(good)

    def copy(name):
        import shutil
        target = tmp_path / name
        shutil.copytree(good, target)
        return str(target)

    unknown = copy("unknown")
    _edit_config(unknown, model_type="bert")
    with pytest.raises(ValueError, match="unknown model_type 'bert'"):
        genesis.models.from_pretrained(unknown)

    truncated = copy("truncated")
    file = os.path.join(truncated, "model.safetensors")
    with open(file, "r+b") as f:
        f.truncate(os.path.getsize(file) // 2)
    with pytest.raises(RuntimeError, match="model.safetensors"):
        genesis.models.from_pretrained(truncated)

    missing = copy("missing")
    _rewrite_weights(missing, lambda w: w.pop("model.layers.1.mlp.up_proj.weight"))
    with pytest.raises(ValueError, match="lacks 1 weight.*model.layers.1.mlp.up_proj.weight"):
        genesis.models.from_pretrained(missing)

    wrong_dtype = copy("dtype")
    _rewrite_weights(wrong_dtype, lambda w: w.update(
        {"model.norm.weight": w["model.norm.weight"].astype(np.int32)}))
    with pytest.raises(ValueError, match="'model.norm.weight' is int32"):
        genesis.models.from_pretrained(wrong_dtype)

    wrong_shape = copy("shape")
    _rewrite_weights(wrong_shape, lambda w: w.update(
        {"model.norm.weight": np.zeros(7, np.float32)}))
    with pytest.raises(ValueError, match=r"'model.norm.weight' has shape \[7\]"):
        genesis.models.from_pretrained(wrong_shape)

    with pytest.raises(FileNotFoundError, match="no config.json"):
        genesis.models.from_pretrained(str(tmp_path))


def test_tokenizer_round_trip_and_left_padding(tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    vocab = {"[PAD]": 0, "[EOS]": 1, "hello": 2, "world": 3, "genesis": 4}
    backend = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="[PAD]"))
    backend.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    backend.save(str(tmp_path / "tokenizer.json"))
    (tmp_path / "generation_config.json").write_text(json.dumps({"eos_token_id": 1,
                                                                  "pad_token_id": 0}))
    tok = genesis.models.Tokenizer.from_pretrained(str(tmp_path))
    assert tok.encode("hello genesis") == [2, 4]
    assert tok.eos_token_id == 1
    ids, mask = tok(["hello world genesis", "genesis"])
    assert ids.tolist() == [[2, 3, 4], [0, 0, 4]]
    assert mask.tolist() == [[1, 1, 1], [0, 0, 1]]
    assert tok.decode([2, 3]) == "hello world"


def _word_model(tmp_path):
    """A tiny Llama directory with a word-level tokenizer over a small vocabulary."""
    tokenizers = pytest.importorskip("tokenizers")
    words = ["[PAD]", "[EOS]"] + [f"w{i}" for i in range(VOCAB - 2)]
    backend = tokenizers.Tokenizer(tokenizers.models.WordLevel(
        {w: i for i, w in enumerate(words)}, unk_token="[PAD]"))
    backend.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    backend.decoder = tokenizers.decoders.WordPiece()
    path = tmp_path / "words"
    _hf_model("llama").save_pretrained(path)
    backend.save(str(path / "tokenizer.json"))
    return path, words


def test_generate_and_finetune_examples(tmp_path, capsys):
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "examples"))
    import finetune
    import generate
    path, words = _word_model(tmp_path)
    text = generate.main(["--model", str(path), "--prompt", "w1 w2 w3", "--max-new-tokens",
                          "5", "--device", "cpu"])
    assert text.startswith("w1 w2 w3")
    assert "decode:" in capsys.readouterr().out
    data = tmp_path / "data.txt"
    data.write_text(" ".join(words[2:12] * 40))
    out = tmp_path / "tuned"
    losses = finetune.main(["--model", str(path), "--data", str(data), "--out", str(out),
                            "--steps", "30", "--block-size", "16", "--lr", "1e-2", "--device",
                            "cpu"])
    assert np.mean(losses[-5:]) < np.mean(losses[:5])
    reloaded = transformers.LlamaForCausalLM.from_pretrained(out).eval()
    tuned = genesis.models.from_pretrained(str(out))
    ids, _ = _prompts(np.random.default_rng(0), 1, 8, False)
    with genesis.no_grad():
        assert_close(tuned(genesis.tensor(ids)), _hf_logits(reloaded, ids), atol=1e-5,
                     rtol=1e-5)
    assert (out / "tokenizer.json").exists()


def _decode_setup(model, ids, mask):
    """(cache, first tokens, positions) after the prompt of `ids` (left padding in `mask`)."""
    from genesis.models.attention_mask import position_ids
    batch, length = ids.shape
    padded = genesis.tensor(mask)
    positions = position_ids(padded)
    cache = model.make_cache(batch, length + 8, None)
    logits = model(genesis.tensor(ids), attention_mask=padded, position_ids=positions,
                   cache=cache)
    return cache, logits[:, -1].argmax(-1), positions


def test_decode_step_equals_the_host_counted_path(saved, rng):
    """DecodeStep's logits, step by step, equal those of the model run on a cache whose
    positions and mask the host computes (fed the same tokens)."""
    from genesis.models.generation import DecodeStep
    family, hf, path = saved
    model = genesis.models.from_pretrained(path)
    ids, mask = _prompts(rng, 3, 7, padded=True)
    with genesis.no_grad():
        host_cache, token, positions = _decode_setup(model, ids, mask)
        device_cache, _, _ = _decode_setup(model, ids, mask)
        device_cache.start_decoding(genesis.tensor(mask))
        step = DecodeStep(model, device_cache, token, positions[:, -1:] + 1,
                          genesis.zeros(3, dtype=genesis.bool), None, 0)
        grown, pos = genesis.tensor(mask), positions[:, -1:]
        for _ in range(6):
            grown = genesis.cat([grown, genesis.ones(3, 1, dtype=grown.dtype)], dim=1)
            pos = pos + 1
            expected = model(step.input_ids.clone(), attention_mask=grown, position_ids=pos,
                             cache=host_cache)[:, -1]
            step()
            assert_close(step.logits, expected, atol=1e-5, rtol=1e-5)
            assert step.input_ids[:, 0].tolist() == expected.argmax(-1).tolist()


HOST_READS = ("to_numpy", "check_index", "nonzero", "repeat_interleave", "unique")
"""The kernels that read device memory back to the host on CUDA (the values themselves, an
index bounds check, an output size): on the CPU they stand in for those reads."""


@pytest.mark.parametrize("sampling", [dict(), dict(do_sample=True, top_k=5, top_p=0.9,
                                                   temperature=0.7),
                                      dict(do_sample=True, min_p=0.05, repetition_penalty=1.3,
                                           min_new_tokens=3)])
def test_decode_steps_make_no_host_read(saved, rng, monkeypatch, sampling):
    """Every DecodeStep of a batched, left-padded generation with a stop token runs with the
    host-read kernels refusing to run."""
    from genesis import dispatch
    from genesis.models.generation import DecodeStep
    family, hf, path = saved
    model = genesis.models.from_pretrained(path)
    ids, mask = _prompts(rng, 3, 6, padded=True)
    calls, original = [], DecodeStep.__call__

    def refuse(name):
        def kernel(*args, **kwargs):
            raise AssertionError(f"a decode step read the device back to the host ({name})")
        return kernel

    def guarded(self):
        with monkeypatch.context() as m:
            for name in HOST_READS:
                m.setitem(dispatch._KERNELS, (name, "cpu"), refuse(name))
            original(self)
        calls.append(1)

    def generate(**stop):
        return model.generate(genesis.tensor(ids), attention_mask=genesis.tensor(mask),
                              max_new_tokens=12, pad_token_id=0, **stop,
                              generator=genesis.Generator().manual_seed(1), **sampling)

    never = VOCAB + 1
    free = generate(eos_token_id=never).numpy()
    later = set(free[:, 7:].ravel()) - set(free[:, 6])  # stops a row after its first token
    stop_token = min(later, default=never)
    monkeypatch.setattr(DecodeStep, "__call__", guarded)
    out = generate(eos_token_id=[stop_token, never])
    assert len(calls) >= out.shape[1] - 6 - 1 > 0


def test_fused_projections_keep_hugging_face_names_and_train(saved, rng):
    """The fused QKV and gate/up weights, and the stacked experts, appear in state dicts under
    the checkpoint's names (as save_pretrained renames them), load back from them, and get
    gradients."""
    family, hf, path = saved
    if family == "gpt2":
        pytest.skip("GPT-2's checkpoints fuse QKV themselves (c_attn)")
    from safetensors.numpy import load_file
    model = genesis.models.from_pretrained(path)
    state = model.state_dict()
    expected = load_file(os.path.join(path, "model.safetensors"))
    saved = {model.saved_name(k): k for k in state if k not in model.tied_weights()}
    assert set(saved) == set(expected)
    for name, key in saved.items():
        np.testing.assert_array_equal(state[key].numpy(), expected[name])
    fresh = type(model)(model.config)
    fresh.load_state_dict(state)
    ids = genesis.tensor(_prompts(rng, 2, 5, False)[0])
    with genesis.no_grad():
        assert_close(fresh(ids), model(ids), atol=0, rtol=0)
    fresh(ids).sum().backward()
    attn = fresh.model.layers[0].self_attn.qkv_proj.weight
    assert attn.grad is not None and float(attn.grad.abs().sum()) > 0
    for layer in fresh.model.layers:
        mlp = layer.mlp
        weight = mlp.experts.gate_up_proj if hasattr(mlp, "experts") else mlp.gate_up_proj.weight
        assert weight.grad is not None and float(weight.grad.abs().sum()) > 0


@pytest.mark.parametrize("dtype", [genesis.float32, genesis.bfloat16])
def test_rotary_table_gives_the_computed_angles(dtype):
    """Positions under a bound are looked up in a table made by the same ops: the same bits;
    a larger bound grows the table, and the outgrown one stays alive for graphs reading it."""
    rotary = genesis.models.RotaryEmbedding(64, {"rope_type": "default", "rope_theta": 5e5})
    positions = genesis.tensor([[0], [37], [299]])
    computed = rotary(positions, dtype)
    for bound in (300, 301, 1000):
        looked_up = rotary(positions, dtype, bound)
        for a, b in zip(looked_up, computed):
            assert tuple(a.shape) == (3, 1, 64) and a.dtype is dtype
            np.testing.assert_array_equal(a.float().numpy(), b.float().numpy())
    assert len(rotary._outgrown) == 2  # grown for 301 and for 1000


def test_gemma3_configs_of_the_older_format():
    """Gemma 3 configs written before `layer_types` and per-layer `rope_parameters`: every
    sliding_window_pattern-th layer is global, with rope_theta and rope_scaling; the others
    are local, with rope_local_base_freq."""
    from genesis.models.gemma3 import FULL, SLIDING
    config = genesis.models.Gemma3TextConfig(dict(
        num_hidden_layers=7, sliding_window=512, sliding_window_pattern=3, rope_theta=1e6,
        rope_local_base_freq=1e4, rope_scaling={"rope_type": "linear", "factor": 8.0}))
    assert config.layer_kinds == [SLIDING, SLIDING, FULL] * 2 + [SLIDING]
    assert config.layer_windows == [512, 512, None] * 2 + [512]
    assert config.rope_of(FULL) == {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6}
    assert config.rope_of(SLIDING) == {"rope_type": "default", "rope_theta": 1e4}


def test_gemma3_image_text_checkpoints_load_their_language_model(tmp_path, rng):
    """A Gemma 3 image-text checkpoint (model_type gemma3) loads as its language model, with
    transformers' logits for text; saved, it is a text-only checkpoint transformers loads."""
    text = dict(FAMILIES["gemma3"][2])
    vision = dict(hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                  num_attention_heads=2, image_size=28, patch_size=14)
    torch.manual_seed(0)
    hf = transformers.Gemma3ForConditionalGeneration(transformers.Gemma3Config(
        text_config=text, vision_config=vision, mm_tokens_per_image=4)).eval()
    hf.save_pretrained(tmp_path / "image_text")
    model = genesis.models.from_pretrained(str(tmp_path / "image_text"))
    ids, _ = _prompts(rng, 2, 9, padded=False)
    with genesis.no_grad():
        logits = model(genesis.tensor(ids))
    assert_close(logits, _hf_logits(hf, ids), atol=1e-5, rtol=1e-5)
    model.save_pretrained(str(tmp_path / "text"))
    reloaded = transformers.Gemma3ForCausalLM.from_pretrained(str(tmp_path / "text")).eval()
    assert_close(logits, _hf_logits(reloaded, ids), atol=1e-5, rtol=1e-5)
