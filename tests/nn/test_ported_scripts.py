"""Ported scripts: a tiny U-Net and a tiny 1-D audio CNN, written once against a framework
(`torch` or `genesis`), trained a few steps from the same initial weights in both; the losses
must agree within 2e-4 relative in float32."""

import numpy as np
import pytest
import torch

import genesis
from nn_compare import copy_module

pytestmark = pytest.mark.usefixtures("cudnn_ieee")


def unet(lib):
    """A two-level U-Net: reflect-padded convs, max pool, transposed conv, bilinear resize."""
    nn, F = lib.nn, lib.nn.functional

    class UNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.down1 = nn.Conv2d(3, 8, 3, padding=1, padding_mode="reflect")
            self.pool = nn.MaxPool2d(2)
            self.down2 = nn.Conv2d(8, 16, 3, padding=1, padding_mode="reflect")
            self.up = nn.ConvTranspose2d(16, 8, 2, stride=2)
            self.fuse = nn.Conv2d(16, 8, 3, padding="same")
            self.head = nn.Conv2d(8, 2, 1)

        def forward(self, x):
            skip = F.relu(self.down1(x))
            deep = F.relu(self.down2(self.pool(skip)))
            up = F.interpolate(self.up(deep), size=tuple(skip.shape[-2:]), mode="bilinear",
                               align_corners=False)
            return self.head(F.relu(self.fuse(lib.cat([skip, up], 1))))

    return UNet()


def audio_cnn(lib):
    """A 1-D CNN over raw waveforms: strided conv, max pools, global average, linear head."""
    nn = lib.nn
    return nn.Sequential(
        nn.Conv1d(1, 8, 9, stride=2, padding=4), nn.ReLU(), nn.MaxPool1d(3, stride=2, padding=1),
        nn.Conv1d(8, 16, 5, padding="same", padding_mode="replicate"), nn.ReLU(),
        nn.MaxPool1d(2, ceil_mode=True), nn.AdaptiveAvgPool1d(1), nn.Flatten(),
        nn.Linear(16, 4))


def _train(lib, model, x, y, steps):
    optimizer = lib.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = lib.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(float(loss))
    return losses


@pytest.mark.parametrize("build, x_shape, y_shape, classes", [
    (unet, (2, 3, 15, 13), (2, 15, 13), 2), (audio_cnn, (4, 1, 201), (4,), 4)],
    ids=["unet", "audio_cnn"])
def test_ported_script_trains_as_torch(build, x_shape, y_shape, classes, rng, device):
    torch_model = build(torch)
    model = copy_module(build(genesis), torch_model, device)
    x = rng.standard_normal(x_shape).astype(np.float32)
    y = rng.integers(0, classes, y_shape)
    expected = _train(torch, torch_model, torch.from_numpy(x), torch.from_numpy(y), 5)
    losses = _train(genesis, model, genesis.tensor(x, device=device),
                    genesis.tensor(y, device=device), 5)
    np.testing.assert_allclose(losses, expected, rtol=2e-4)
    assert expected[-1] < expected[0]
