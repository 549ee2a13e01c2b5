"""The main job on the GPU: the GPT of examples/gpt.py trains on "cuda" as it does on the CPU.

Every op of a training step runs on the device: embedding lookup and its backward, matmul,
LayerNorm, softmax/cross-entropy, dropout, AdamW and clip_grad_norm_. A float32 model on cuda
follows the same model on the CPU step by step (same weights, same batches) and learns; a float64
one follows PyTorch as tests/test_train_gpt.py does on the CPU; and examples/train_gpt.py runs end
to end with --device cuda.
"""

import copy
import dataclasses

import numpy as np
import pytest
import torch
from helpers import skip_no_cuda
from test_train_gpt import (GPTConfig, build_gpt, check_trains_saves_resumes_and_samples,
                            float64_models, torch_train_step, train_step)

import genesis

pytestmark = skip_no_cuda

CONFIG = GPTConfig(vocab_size=29, block_size=16, n_layer=2, n_head=2, n_embd=32)


def _batches(rng, n, batch_size=4):
    """`n` (inputs, targets) pairs of token ids as numpy arrays."""
    shape = (n, batch_size, CONFIG.block_size)
    return list(zip(rng.integers(0, CONFIG.vocab_size, shape),
                    rng.integers(0, CONFIG.vocab_size, shape)))


def _cpu_and_cuda_models(dropout=0.0):
    """The same freshly initialised float32 GPT on the CPU and on cuda, with an AdamW each."""
    cpu = build_gpt(dataclasses.replace(CONFIG, dropout=dropout), genesis)
    gpu = copy.deepcopy(cpu).to("cuda")
    assert gpu.head.weight is gpu.tok_emb.weight and gpu.head.weight.device.type == "cuda"
    return [(model, genesis.optim.AdamW(model.parameters(), lr=3e-3, betas=(0.9, 0.95),
                                        weight_decay=0.1)) for model in (cpu, gpu)]


def test_first_gradients_match_the_cpu(rng):
    (cpu, _), (gpu, _) = _cpu_and_cuda_models()
    (x, y), = _batches(rng, 1)
    for model, device in ((cpu, "cpu"), (gpu, "cuda")):
        _, loss = model(genesis.tensor(x, device=device), genesis.tensor(y, device=device))
        loss.backward()
    cpu_grads = dict(cpu.named_parameters())
    for name, p in gpu.named_parameters():
        expected = cpu_grads[name].grad.numpy()
        scale = np.abs(expected).max()
        np.testing.assert_allclose(p.grad.cpu().numpy(), expected, rtol=1e-4, atol=1e-5 * scale,
                                   err_msg=name)


def test_float32_steps_follow_the_cpu_and_learn(rng):
    """Losses agree while the weights still agree (AdamW amplifies rounding differences in
    gradients that should be zero, e.g. the key bias's, so later steps drift apart slowly);
    repeated batches are then learned on cuda."""
    models = _cpu_and_cuda_models()
    for step, (x, y) in enumerate(_batches(rng, 5)):
        losses = [train_step(model, opt, x, y, device)
                  for (model, opt), device in zip(models, ("cpu", "cuda"))]
        assert losses[1] == pytest.approx(losses[0], rel=1e-5), f"step {step}"
    gpu, opt = models[1]
    fixed = _batches(rng, 2)
    first = [train_step(gpu, opt, x, y, "cuda") for x, y in fixed]
    for _ in range(20):
        last = [train_step(gpu, opt, x, y, "cuda") for x, y in fixed]
    assert sum(last) < 0.8 * sum(first), (first, last)


def test_dropout_trains_on_cuda(rng):
    (_, _), (gpu, opt) = _cpu_and_cuda_models(dropout=0.1)
    (x, y), = _batches(rng, 1)
    losses = [train_step(gpu, opt, x, y, "cuda") for _ in range(20)]
    assert all(np.isfinite(losses)) and losses[-1] < 0.8 * losses[0], losses
    gpu.eval()
    logits = [gpu(genesis.tensor(x, device="cuda"))[0].detach().cpu().numpy() for _ in range(2)]
    np.testing.assert_array_equal(logits[0], logits[1])


def test_twenty_steps_match_pytorch_in_float64(rng):
    """As tests/test_train_gpt.py, with the genesis model on cuda (PyTorch on the CPU)."""
    ours, theirs = float64_models(CONFIG)
    ours.to("cuda")
    opt_g = genesis.optim.AdamW(ours.parameters(), lr=3e-3, weight_decay=0.1)
    opt_t = torch.optim.AdamW(theirs.parameters(), lr=3e-3, weight_decay=0.1)
    for step, (x, y) in enumerate(_batches(rng, 20)):
        loss_g = train_step(ours, opt_g, x, y, "cuda")
        assert loss_g == pytest.approx(torch_train_step(theirs, opt_t, x, y), rel=1e-8), \
            f"step {step}"
    for name, p in theirs.named_parameters():
        np.testing.assert_allclose(ours.get_parameter(name).detach().cpu().numpy(),
                                   p.detach().numpy(), rtol=1e-7, atol=1e-9, err_msg=name)


def test_main_job_script_runs_on_cuda(tmp_path):
    check_trains_saves_resumes_and_samples(tmp_path, "cuda")
