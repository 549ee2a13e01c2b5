"""Ported GAN scripts (CycleGAN, WGAN with weight clipping, WGAN-GP, MUNIT): for each, the
smallest models that exercise the API the script uses, written once against a framework
(`torch` or `genesis`), trained a few steps from the same initial weights on the same synthetic
data in both; the losses must agree within 2e-4 relative in float32. Each case is
(build(lib, device) -> model, step(lib, model, data) -> loss)."""

import itertools

import numpy as np
import pytest
import torch

import genesis
from nn_compare import copy_module, train_case

pytestmark = [pytest.mark.usefixtures("cudnn_ieee"),
              pytest.mark.filterwarnings("ignore:input's size at dim=1 does not match")]


def _adam(lib, params):
    return lib.optim.Adam(params, lr=2e-3, betas=(0.5, 0.999))


def cyclegan(lib, device):
    """cyclegan/models.py: a ResNet generator (ReflectionPad2d, InstanceNorm2d, strided conv,
    ConvTranspose2d with output_padding) each way and a PatchGAN critic ending in ZeroPad2d;
    Adam over itertools.chain of both generators, LambdaLR's linear decay."""
    nn = lib.nn

    def generator():
        return nn.Sequential(
            nn.ReflectionPad2d(2), nn.Conv2d(3, 4, 5), nn.InstanceNorm2d(4), nn.ReLU(inplace=True),
            nn.Conv2d(4, 8, 3, stride=2, padding=1), nn.InstanceNorm2d(8), nn.ReLU(inplace=True),
            nn.ConvTranspose2d(8, 4, 3, stride=2, padding=1, output_padding=1),
            nn.InstanceNorm2d(4), nn.ReLU(inplace=True), nn.ReflectionPad2d(2),
            nn.Conv2d(4, 3, 5), nn.Tanh())

    model = nn.Module()
    model.G_AB, model.G_BA = generator(), generator()
    model.D_B = nn.Sequential(
        nn.Conv2d(3, 4, 4, stride=2, padding=1), nn.LeakyReLU(0.2, inplace=True),
        nn.Conv2d(4, 8, 4, stride=2, padding=1), nn.InstanceNorm2d(8),
        nn.LeakyReLU(0.2, inplace=True), nn.ZeroPad2d((1, 0, 1, 0)), nn.Conv2d(8, 1, 4, padding=1))
    model = model.to(device)
    model.optimizer = lambda: (
        _adam(lib, itertools.chain(model.G_AB.parameters(), model.G_BA.parameters())),
        _adam(lib, model.D_B.parameters()))
    model.scheduler = lambda opt: lib.optim.lr_scheduler.LambdaLR(
        opt[0], lr_lambda=lambda epoch: 1.0 - max(0, epoch - 1) / 3)
    model.buffer = []
    return model


def _push_and_pop(buffer, data, lib):
    """cyclegan/utils.py's ReplayBuffer while it fills: each sample kept and handed back."""
    out = []
    for element in data.data:
        element = lib.unsqueeze(element, 0)
        buffer.append(element)
        out.append(element)
    return lib.cat(out)


def cyclegan_step(lib, model, data):
    Tensor = lib.cuda.FloatTensor if data["A"].is_cuda else lib.Tensor
    real_A, real_B = data["A"].type(Tensor), data["B"].type(Tensor)
    valid = Tensor(np.ones((real_A.size(0), 1, 2, 2)))
    fake = Tensor(np.zeros((real_A.size(0), 1, 2, 2)))
    mse, l1 = lib.nn.MSELoss(), lib.nn.L1Loss()
    opt_G, opt_D = model.opt
    opt_G.zero_grad()
    loss_identity = (l1(model.G_BA(real_A), real_A) + l1(model.G_AB(real_B), real_B)) / 2
    fake_B = model.G_AB(real_A)
    loss_gan = mse(model.D_B(fake_B), valid)
    loss_cycle = l1(model.G_BA(fake_B), real_A)
    loss_G = loss_gan + 10 * loss_cycle + 5 * loss_identity
    loss_G.backward()
    opt_G.step()
    opt_D.zero_grad()
    fake_B_ = _push_and_pop(model.buffer, fake_B, lib)
    loss_D = (mse(model.D_B(real_B), valid) + mse(model.D_B(fake_B_.detach()), fake)) / 2
    loss_D.backward()
    opt_D.step()
    model.sched.step()
    return loss_G.detach() + loss_D.detach()


def _critic_and_generator(lib):
    """A generator of 1x8x8 images from 6 latents and a strided-conv critic of them."""
    nn = lib.nn
    model = nn.Module()
    model.generator = nn.Sequential(nn.Linear(6, 32), nn.BatchNorm1d(32), nn.LeakyReLU(0.2),
                                    nn.Linear(32, 64), nn.Tanh())
    model.critic = nn.Sequential(nn.Conv2d(1, 4, 3, 2, 1), nn.LeakyReLU(0.2), nn.Flatten(),
                                 nn.Linear(64, 1))
    return model


def _generator_step(lib, model, data):
    """The WGAN generator's update: minus the critic's mean score of its images; the loss."""
    opt_G = model.opt[0]
    opt_G.zero_grad()
    loss_G = -lib.mean(model.critic(model.generator(data["z"]).view(-1, 1, 8, 8)))
    loss_G.backward()
    opt_G.step()
    return loss_G.detach()


def wgan(lib, device):
    """wgan/wgan.py: RMSprop on both nets, the critic's weights clipped through p.data after its
    step, a generator step every second critic step."""
    model = _critic_and_generator(lib).to(device)
    model.optimizer = lambda: (lib.optim.RMSprop(model.generator.parameters(), lr=5e-3),
                               lib.optim.RMSprop(model.critic.parameters(), lr=5e-3))
    model.steps = 0
    return model


def wgan_step(lib, model, data):
    opt_D = model.opt[1]
    opt_D.zero_grad()
    fake_imgs = model.generator(data["z"]).view(-1, 1, 8, 8).detach()
    loss_D = -lib.mean(model.critic(data["images"])) + lib.mean(model.critic(fake_imgs))
    loss_D.backward()
    opt_D.step()
    for p in model.critic.parameters():
        p.data.clamp_(-0.05, 0.05)
    model.steps += 1
    if model.steps % 2:
        return loss_D.detach()
    return loss_D.detach() + _generator_step(lib, model, data)


def wgan_gp(lib, device):
    """wgan_gp/wgan_gp.py: the critic's gradient penalty, autograd.grad of its output on random
    interpolates (create_graph, retain_graph, only_inputs), viewed (N, -1) for the norm."""
    model = _critic_and_generator(lib).to(device)
    model.optimizer = lambda: (_adam(lib, model.generator.parameters()),
                               _adam(lib, model.critic.parameters()))
    return model


def _gradient_penalty(lib, critic, real, fake, alpha):
    interpolates = (alpha * real + ((1 - alpha) * fake)).requires_grad_(True)
    d_interpolates = critic(interpolates)
    ones = lib.ones(real.shape[0], 1, device=real.device)
    gradients = lib.autograd.grad(outputs=d_interpolates, inputs=interpolates,
                                  grad_outputs=ones, create_graph=True, retain_graph=True,
                                  only_inputs=True)[0]
    gradients = gradients.view(gradients.size(0), -1)
    return ((gradients.norm(2, dim=1) - 1) ** 2).mean()


def wgan_gp_step(lib, model, data):
    opt_D = model.opt[1]
    opt_D.zero_grad()
    fake_imgs = model.generator(data["z"]).view(-1, 1, 8, 8)
    penalty = _gradient_penalty(lib, model.critic, data["images"].data, fake_imgs.data,
                                data["alpha"])
    loss_D = (-lib.mean(model.critic(data["images"])) + lib.mean(model.critic(fake_imgs))
              + 10 * penalty)
    loss_D.backward()
    opt_D.step()
    return loss_D.detach() + _generator_step(lib, model, data)


def munit(lib, device):
    """munit/models.py: AdaIN layers whose weight and bias are plain attributes assigned from an
    MLP's output and normalized by F.batch_norm over (1, N*C, H, W) with repeated running
    stats; a LayerNorm of per-sample std; an InstanceNorm2d(64) after a narrower conv (it warns);
    a multi-scale critic built by ModuleList.add_module, downsampled by an AvgPool2d with a
    padding list and count_include_pad=False."""
    nn, F = lib.nn, lib.nn.functional

    class AdaptiveInstanceNorm2d(nn.Module):
        def __init__(self, num_features):
            super().__init__()
            self.num_features = num_features
            self.weight = None
            self.bias = None
            self.register_buffer("running_mean", lib.zeros(num_features))
            self.register_buffer("running_var", lib.ones(num_features))

        def forward(self, x):
            b, c, h, w = x.size()
            out = F.batch_norm(x.contiguous().view(1, b * c, h, w),
                               self.running_mean.repeat(b), self.running_var.repeat(b),
                               self.weight, self.bias, True, 0.1, 1e-5)
            return out.view(b, c, h, w)

    class LayerNorm(nn.Module):
        def __init__(self, num_features, eps=1e-5):
            super().__init__()
            self.eps = eps
            self.gamma = nn.Parameter(lib.Tensor(num_features).uniform_())
            self.beta = nn.Parameter(lib.zeros(num_features))

        def forward(self, x):
            shape = [-1] + [1] * (x.dim() - 1)
            mean = x.view(x.size(0), -1).mean(1).view(*shape)
            std = x.view(x.size(0), -1).std(1).view(*shape)
            x = (x - mean) / (std + self.eps)
            shape = [1, -1] + [1] * (x.dim() - 2)
            return x * self.gamma.view(*shape) + self.beta.view(*shape)

    class Decoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.model = nn.Sequential(
                nn.ReflectionPad2d(1), nn.Conv2d(8, 8, 3), AdaptiveInstanceNorm2d(8),
                nn.ReLU(inplace=True), nn.Upsample(scale_factor=2),
                nn.Conv2d(8, 4, 5, stride=1, padding=2), LayerNorm(4),
                nn.LeakyReLU(0.2, inplace=True), nn.Conv2d(4, 3, 3, padding=1), nn.Tanh())
            self.mlp = nn.Sequential(nn.Linear(4, 16), nn.ReLU(inplace=True), nn.Linear(16, 16))

        def forward(self, content, style):
            params = self.mlp(style.view(style.size(0), -1))
            for m in self.modules():
                if m.__class__.__name__ == "AdaptiveInstanceNorm2d":
                    m.bias = params[:, :m.num_features].contiguous().view(-1)
                    m.weight = params[:, m.num_features:2 * m.num_features].contiguous().view(-1)
            return self.model(content)

    class MultiDiscriminator(nn.Module):
        def __init__(self):
            super().__init__()
            self.models = nn.ModuleList()
            for i in range(2):
                self.models.add_module("disc_%d" % i, nn.Sequential(
                    nn.Conv2d(3, 4, 4, stride=2, padding=1), nn.LeakyReLU(0.2, inplace=True),
                    nn.Conv2d(4, 1, 3, padding=1)))
            self.downsample = nn.AvgPool2d(3, stride=2, padding=[1, 1], count_include_pad=False)

        def compute_loss(self, x, gt):
            loss = 0
            for m in self.models:
                loss += lib.mean((m(x) - gt) ** 2)
                x = self.downsample(x)
            return loss

    model = nn.Module()
    model.content = nn.Sequential(nn.ReflectionPad2d(1), nn.Conv2d(3, 4, 3), nn.InstanceNorm2d(64),
                                  nn.ReLU(inplace=True), nn.Conv2d(4, 8, 4, stride=2, padding=1),
                                  nn.InstanceNorm2d(8), nn.ReLU(inplace=True))
    model.style = nn.Sequential(nn.Conv2d(3, 4, 4, stride=2, padding=1), nn.ReLU(inplace=True),
                                nn.AdaptiveAvgPool2d(1), nn.Conv2d(4, 4, 1, 1, 0))
    model.decoder, model.critic = Decoder(), MultiDiscriminator()
    model = model.to(device)
    model.optimizer = lambda: (
        _adam(lib, itertools.chain(model.content.parameters(), model.style.parameters(),
                                   model.decoder.parameters())),
        _adam(lib, model.critic.parameters()))
    return model


def munit_step(lib, model, data):
    opt_G, opt_D = model.opt
    l1 = lib.nn.L1Loss()
    x = data["images"]
    opt_G.zero_grad()
    content, style = model.content(x), model.style(x)
    recon = model.decoder(content, style)
    translated = model.decoder(content, data["style"])
    loss_G = (model.critic.compute_loss(translated, 1) + 10 * l1(recon, x)
              + l1(model.style(translated), data["style"]))
    loss_G.backward()
    opt_G.step()
    opt_D.zero_grad()
    loss_D = model.critic.compute_loss(x, 1) + model.critic.compute_loss(translated.detach(), 0)
    loss_D.backward()
    opt_D.step()
    return loss_G.detach() + loss_D.detach()


def _data(rng, name):
    """The synthetic inputs of case `name` as numpy arrays (CycleGAN's in float64, as a loader
    may hand them, for the script's `.type(Tensor)`)."""
    if name == "cyclegan":
        return {"A": rng.uniform(-1, 1, (2, 3, 8, 8)), "B": rng.uniform(-1, 1, (2, 3, 8, 8))}
    if name == "munit":
        return {"images": rng.uniform(-1, 1, (2, 3, 8, 8)).astype(np.float32),
                "style": rng.standard_normal((2, 4, 1, 1)).astype(np.float32)}
    return {"images": rng.uniform(-1, 1, (6, 1, 8, 8)).astype(np.float32),
            "z": rng.standard_normal((6, 6)).astype(np.float32),
            "alpha": rng.random((6, 1, 1, 1)).astype(np.float32)}


CASES = {
    "cyclegan": (cyclegan, cyclegan_step),
    "wgan": (wgan, wgan_step),
    "wgan_gp": (wgan_gp, wgan_gp_step),
    "munit": (munit, munit_step),
}


@pytest.mark.parametrize("name", list(CASES))
def test_ported_model_trains_as_torch(name, rng, device):
    build, step = CASES[name]
    arrays = _data(rng, name)
    torch_model = build(torch, "cpu")
    model = copy_module(build(genesis, device), torch_model, device)
    expected = train_case(torch, torch_model, {k: torch.tensor(v) for k, v in arrays.items()},
                          step, 4)
    losses = train_case(genesis, model, {k: genesis.tensor(v, device=device)
                                         for k, v in arrays.items()}, step, 4)
    np.testing.assert_allclose(losses, expected, rtol=2e-4, atol=2e-4 * np.abs(expected).max())
    assert np.isfinite(expected).all()
