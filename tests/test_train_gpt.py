"""The main job: a small GPT trains identically in genesis and PyTorch, and the script's edges."""

import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import genesis

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")
sys.path.insert(0, EXAMPLES)

from gpt import GPTConfig, build_gpt  # noqa: E402


def _copy_weights(src, dst):
    """genesis module -> torch module with the same architecture (tied weights stay tied)."""
    with torch.no_grad():
        for name, p in dst.named_parameters():
            p.copy_(torch.from_numpy(src.get_parameter(name).detach().numpy().copy()))


def float64_models(config):
    """The same float64 GPT in genesis and in torch (torch's weights copied from genesis's)."""
    genesis.set_default_dtype(genesis.float64)
    torch.set_default_dtype(torch.float64)
    try:
        ours, theirs = build_gpt(config, genesis), build_gpt(config, torch)
    finally:
        torch.set_default_dtype(torch.float32)
    _copy_weights(ours, theirs)
    return ours, theirs


def train_step(model, optimizer, x, y, device="cpu"):
    """One step of the main job's loop on numpy batches; returns the loss before the update."""
    _, loss = model(genesis.tensor(x, device=device), genesis.tensor(y, device=device))
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    genesis.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    return loss.item()


def torch_train_step(model, optimizer, x, y):
    """train_step for the torch model."""
    _, loss = model(torch.from_numpy(x), torch.from_numpy(y))
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    return loss.item()


def test_fifty_steps_match_pytorch_in_float64(rng):
    config = GPTConfig(vocab_size=23, block_size=16, n_layer=2, n_head=2, n_embd=16)
    ours, theirs = float64_models(config)
    opt_g = genesis.optim.AdamW(ours.parameters(), lr=3e-3, weight_decay=0.1)
    opt_t = torch.optim.AdamW(theirs.parameters(), lr=3e-3, weight_decay=0.1)
    for step in range(50):
        x = rng.integers(0, config.vocab_size, size=(4, config.block_size))
        y = rng.integers(0, config.vocab_size, size=(4, config.block_size))
        loss_g = train_step(ours, opt_g, x, y)
        assert loss_g == pytest.approx(torch_train_step(theirs, opt_t, x, y), rel=1e-8), \
            f"step {step}"


def _run(args, cwd):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(EXAMPLES),
                                                       os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, os.path.join(EXAMPLES, "train_gpt.py"), *args],
                          cwd=cwd, capture_output=True, text=True, timeout=600, env=env)


TINY = ["--device", "cpu", "--batch-size", "4", "--block-size", "16", "--n-layer", "1",
        "--n-head", "2", "--n-embd", "16", "--eval-interval", "5", "--eval-batches", "2",
        "--sample-chars", "20", "--warmup", "2"]


def check_trains_saves_resumes_and_samples(tmp_path, device):
    """train_gpt.py on `device`: 10 steps and a checkpoint, then 5 more resumed from it."""
    data = tmp_path / "text.txt"
    data.write_text("the quick brown fox jumps over the lazy dog. " * 200)
    out = tmp_path / "run"
    args = [device if a == "cpu" else a for a in TINY] + ["--data", str(data), "--out-dir",
                                                          str(out)]
    first = _run(args + ["--steps", "10"], tmp_path)
    assert first.returncode == 0, first.stderr
    assert f"device {device}" in first.stdout
    assert "validation loss" in first.stdout and "unigram baseline" in first.stdout
    assert (out / "ckpt.safetensors").exists()
    resumed = _run(args + ["--steps", "15", "--resume"], tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    state = genesis.load(str(out / "ckpt.safetensors"))
    assert state["step"] == 15 and len(state["history"]["train"]) == 15
    assert all(np.isfinite(loss) for _, loss in state["history"]["train"])


def test_trains_saves_resumes_and_samples(tmp_path):
    check_trains_saves_resumes_and_samples(tmp_path, "cpu")


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_trains_under_autocast(tmp_path, dtype):
    """--dtype bfloat16 trains under autocast; float16 adds GradScaler (CPU autocast here)."""
    data = tmp_path / "text.txt"
    data.write_text("the quick brown fox jumps over the lazy dog. " * 200)
    result = _run(TINY + ["--data", str(data), "--out-dir", str(tmp_path / "run"), "--steps",
                          "30", "--dtype", dtype], tmp_path)
    assert result.returncode == 0, result.stderr
    assert f"precision: autocast {dtype}" in result.stdout
    state = genesis.load(str(tmp_path / "run" / "ckpt.safetensors"))
    losses = [loss for _, loss in state["history"]["train"]]
    assert all(np.isfinite(losses)) and np.mean(losses[-5:]) < np.mean(losses[:5])


@pytest.mark.parametrize("content,message", [(b"", "empty"), (b"\x00\x01\x02binary", "binary")])
def test_bad_data_file_is_a_clear_error_and_overwrites_nothing(tmp_path, content, message):
    data = tmp_path / "bad.bin"
    data.write_bytes(content)
    out = tmp_path / "run"
    out.mkdir()
    (out / "ckpt.safetensors").write_bytes(b"old")
    result = _run(TINY + ["--data", str(data), "--steps", "2", "--out-dir", str(out)], tmp_path)
    assert result.returncode != 0
    assert message in result.stderr
    assert (out / "ckpt.safetensors").read_bytes() == b"old"


def test_unigram_baseline_is_the_cross_entropy_of_character_frequencies():
    from train_gpt import CharData
    data = CharData("abab" * 100 + "c" * 10, block_size=4)
    counts = np.bincount(data.train, minlength=3) + 1.0
    expected = -np.log((counts / counts.sum())[data.val]).mean()
    assert data.unigram_loss() == pytest.approx(expected)
