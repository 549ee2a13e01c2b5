"""Ported diffusion models (a DDPM UNet with an EMA shadow, a score model trained by denoising
score matching): for each, the smallest model using the API its reference code uses, written
once against a framework (`torch` or `genesis`) and trained a few steps from the same initial
weights on the same synthetic data and noise in both; the losses must agree within 2e-4
relative in float32, and so must what the case keeps beside them (the EMA shadow, samples)."""

import math

import numpy as np
import pytest

from nn_compare import run_both, run_case

pytestmark = pytest.mark.usefixtures("cudnn_ieee")

STEPS = 10  # diffusion steps of the schedules below


def _time_features(lib, t, dim):
    """Sinusoidal features of integer timesteps, sin then cos."""
    half = dim // 2
    freqs = lib.exp(lib.arange(half, device=t.device) * -(math.log(10000) / (half - 1)))
    angles = t[:, None].float() * freqs[None, :]
    return lib.cat((angles.sin(), angles.cos()), dim=-1)


def _cosine_alphas_cumprod(lib):
    """The cosine schedule's cumulative alphas, built in float64 and kept as float32."""
    x = lib.linspace(0, STEPS, STEPS + 1, dtype=lib.float64)
    f = lib.cos(((x / STEPS) + 0.008) / 1.008 * math.pi * 0.5) ** 2
    betas = lib.clip(1 - f[1:] / f[:-1], 0, 0.999)
    return lib.cumprod(1.0 - betas, dim=0).to(lib.float32)


def ddpm(lib, device):
    """A DDPM UNet: weight-standardized convolutions (var with unbiased=False), GroupNorm
    modulated by a time embedding's scale and shift (chunk), linear attention through einsum
    with softmax over both axes, strided-conv down and nearest upsampling, noise predicted
    under an L1 loss; after each Adam step an EMA shadow is pulled toward the weights by
    torch._foreach_lerp_, as EMA helpers of diffusion trainers do."""
    nn, F = lib.nn, lib.nn.functional

    class StdConv(nn.Conv2d):
        def forward(self, x):
            w = self.weight
            mean = w.mean(dim=(1, 2, 3), keepdim=True)
            var = lib.var(w, dim=(1, 2, 3), unbiased=False, keepdim=True)
            w = (w - mean) * (var + 1e-5).rsqrt()
            return F.conv2d(x, w, self.bias, self.stride, self.padding)

    class Block(nn.Module):
        def __init__(self, cin, cout, tdim):
            super().__init__()
            self.conv, self.norm = StdConv(cin, cout, 3, padding=1), nn.GroupNorm(4, cout)
            self.time = nn.Sequential(nn.SiLU(), nn.Linear(tdim, 2 * cout))
            self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

        def forward(self, x, emb):
            scale, shift = self.time(emb)[:, :, None, None].chunk(2, dim=1)
            h = self.norm(self.conv(x)) * (scale + 1) + shift
            return F.silu(h) + self.skip(x)

    class LinearAttention(nn.Module):
        def __init__(self, dim, heads=2, dim_head=4):
            super().__init__()
            self.heads, self.scale = heads, dim_head ** -0.5
            self.qkv = nn.Conv2d(dim, 3 * heads * dim_head, 1, bias=False)
            self.out = nn.Conv2d(heads * dim_head, dim, 1)

        def forward(self, x):
            b, c, h, w = x.shape
            q, k, v = (t.reshape(b, self.heads, -1, h * w) for t in self.qkv(x).chunk(3, dim=1))
            q, k = q.softmax(dim=-2) * self.scale, k.softmax(dim=-1)
            context = lib.einsum("b h d n, b h e n -> b h d e", k, v / (h * w))
            out = lib.einsum("b h d e, b h d n -> b h e n", context, q)
            return self.out(out.reshape(b, -1, h, w)) + x

    class UNet(nn.Module):
        def __init__(self, dim=8):
            super().__init__()
            self.dim = dim
            self.time = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(),
                                      nn.Linear(4 * dim, 4 * dim))
            self.stem = nn.Conv2d(1, dim, 7, padding=3)
            self.down = Block(dim, dim, 4 * dim)
            self.pool = nn.Conv2d(dim, 2 * dim, 4, 2, 1)
            self.mid = Block(2 * dim, 2 * dim, 4 * dim)
            self.attn = LinearAttention(2 * dim)
            self.up = nn.Sequential(nn.Upsample(scale_factor=2, mode="nearest"),
                                    nn.Conv2d(2 * dim, dim, 3, padding=1))
            self.head = Block(2 * dim, dim, 4 * dim)
            self.out = nn.Conv2d(dim, 1, 1)

        def forward(self, x, t):
            emb = self.time(_time_features(lib, t, self.dim))
            skip = self.down(self.stem(x), emb)
            h = self.up(self.attn(self.mid(self.pool(skip), emb)))
            return self.out(self.head(lib.cat((h, skip), dim=1), emb))

    model = UNet()
    model.register_buffer("alphas_cumprod", _cosine_alphas_cumprod(lib))
    model.optimizer = lambda: lib.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.99))
    return model


def _q_sample(model, x0, t, noise):
    a = model.alphas_cumprod.gather(-1, t).reshape(-1, 1, 1, 1)
    return a.sqrt() * x0 + (1 - a).sqrt() * noise


def ddpm_step(lib, model, data):
    if not hasattr(model, "ema"):
        model.ema = [p.detach().clone() for p in model.parameters()]
    x0 = data["images"] * 2 - 1
    pred = model(_q_sample(model, x0, data["t"], data["noise"]), data["t"])
    loss = lib.nn.functional.l1_loss(pred, data["noise"])
    model.opt.zero_grad()
    loss.backward()
    model.opt.step()
    with lib.no_grad():
        lib._foreach_lerp_(list(model.ema), list(model.parameters()), 1 - 0.9)
    return loss


def ddim_sample(lib, model, noise, steps=(7, 5, 3, 0)):
    """Deterministic DDIM (eta 0) from `noise` over `steps`, x0 clipped to [-1, 1]; the steps
    start below the last, whose alpha near 0 would magnify float32 rounding 200-fold."""
    x = noise
    with lib.no_grad():
        for t, t_next in zip(steps, steps[1:] + (-1,)):
            a = model.alphas_cumprod[t]
            eps = model(x, lib.full((x.shape[0],), t, dtype=lib.long, device=x.device))
            x0 = ((x - (1 - a).sqrt() * eps) / a.sqrt()).clamp(-1.0, 1.0)
            if t_next < 0:
                return x0
            a_next = model.alphas_cumprod[t_next]
            x = x0 * a_next.sqrt() + (1 - a_next).sqrt() * eps
    return x


SIGMA = 25.0


def _marginal_std(lib, t):
    """The VE SDE's marginal std at t, from a copy of the time tensor (lib.tensor(t), which
    warns as the reference's call does)."""
    t = lib.tensor(t)
    return lib.sqrt((SIGMA ** (2 * t) - 1.0) / 2.0 / np.log(SIGMA))


def score(lib, device):
    """A score network: fixed Gaussian Fourier time features (a parameter without grad),
    features broadcast by [..., None, None], convolutions without bias, GroupNorm, a
    transposed convolution with output_padding, the output divided by the marginal std."""
    nn = lib.nn

    class ScoreNet(nn.Module):
        def __init__(self, ch=8, embed=16):
            super().__init__()
            self.w = nn.Parameter(lib.randn(embed // 2) * 30.0, requires_grad=False)
            self.embed = nn.Linear(embed, embed)
            self.conv1, self.dense1 = nn.Conv2d(1, ch, 3, bias=False), nn.Linear(embed, ch)
            self.conv2 = nn.Conv2d(ch, 2 * ch, 3, stride=2, bias=False)
            self.norm1, self.norm2 = nn.GroupNorm(4, ch), nn.GroupNorm(8, 2 * ch)
            self.tconv2 = nn.ConvTranspose2d(2 * ch, ch, 3, stride=2, bias=False,
                                             output_padding=1)
            self.tnorm2 = nn.GroupNorm(4, ch)
            self.tconv1 = nn.ConvTranspose2d(2 * ch, 1, 3)

        def forward(self, x, t):
            proj = t[:, None] * self.w[None, :] * 2 * np.pi
            emb = nn.functional.silu(self.embed(lib.cat([proj.sin(), proj.cos()], dim=-1)))
            h1 = nn.functional.silu(self.norm1(self.conv1(x) + self.dense1(emb)[..., None, None]))
            h2 = nn.functional.silu(self.norm2(self.conv2(h1)))
            h = nn.functional.silu(self.tnorm2(self.tconv2(h2)))
            h = self.tconv1(lib.cat([h, h1], dim=1))
            return h / _marginal_std(lib, t)[:, None, None, None]

    model = ScoreNet()
    model.optimizer = lambda: lib.optim.Adam(model.parameters(), lr=1e-3)
    return model


def score_step(lib, model, data):
    x = data["images"][:, :1]
    t = data["u"] * (1.0 - 1e-5) + 1e-5
    std = _marginal_std(lib, t)[:, None, None, None]
    out = model(x + data["noise"][:, :1] * std, t)
    loss = lib.mean(lib.sum((out * std + data["noise"][:, :1]) ** 2, dim=(1, 2, 3)))
    model.opt.zero_grad()
    loss.backward()
    model.opt.step()
    return loss


def euler_maruyama(lib, model, noise, steps=4, eps=1e-3):
    """Reverse-time VE SDE sampling from `noise`; the same noise feeds every step."""
    b = noise.shape[0]
    times = lib.linspace(1.0, eps, steps, device=noise.device)
    dt = times[0] - times[1]
    x = noise * _marginal_std(lib, lib.ones(b, device=noise.device))[:, None, None, None]
    with lib.no_grad():
        for time in times:
            t = lib.ones(b, device=noise.device) * time
            g = lib.tensor(SIGMA ** t)
            mean = x + (g ** 2)[:, None, None, None] * model(x, t) * dt
            x = mean + lib.sqrt(dt) * g[:, None, None, None] * noise
    return mean


CASES = {
    "ddpm": (ddpm, ddpm_step, lambda lib, model, d: [ddim_sample(lib, model, d["noise"])]
             + list(model.ema)),
    "score": (score, score_step, lambda lib, model, d: [euler_maruyama(lib, model,
                                                                       d["noise"][:, :1])]),
}


def _data(rng):
    """The synthetic inputs and noise every case reads from, as numpy arrays: grayscale
    images (as DDPM on MNIST), so that the L1 loss's gradient, sign / 256, is a power of two
    and the output bias's gradient sums it exactly in any order. With RGB's 768 = 3 x 256
    elements, a channel whose signs tie summed to 0 or to 1e-9 by the order of the sum, and
    Adam's first step moved that bias by 0.12 lr on the rounding alone, which DDIM's
    sampling then magnified past the comparison's bound."""
    return {"images": rng.random((4, 1, 8, 8)).astype(np.float32),
            "noise": rng.standard_normal((4, 1, 8, 8)).astype(np.float32),
            "t": rng.integers(0, STEPS, 4), "u": rng.random(4).astype(np.float32)}


@pytest.mark.parametrize("name", list(CASES))
def test_ported_diffusion_model_trains_as_torch(name, rng, device):
    build, step, keeps = CASES[name]
    expected, got = run_both(build, _data(rng), device, lambda lib, model, data: run_case(
        lib, model, data, step, keeps, steps=4))
    np.testing.assert_allclose(got[0], expected[0], rtol=2e-4)
    assert all(math.isfinite(v) for v in expected[0])
    for g, t in zip(got[1], expected[1], strict=True):
        np.testing.assert_allclose(g, t, rtol=2e-4, atol=2e-4 * np.abs(t).max())
    assert got[2] == expected[2]
