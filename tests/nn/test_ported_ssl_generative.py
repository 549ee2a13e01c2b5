"""Ported self-supervised, generative, segmentation, detection and recurrent-memory scripts
(StyleGAN2's pure PyTorch paths, SimCLR, BYOL, DINO, a segmentation U-Net, a YOLO-style loss
with NMS, Transformer-XL's segment recurrence): for each, the smallest model using the API its
reference code uses, written once against a framework (`torch` or `genesis`) and trained a few
steps from the same initial weights on the same synthetic data and random draws in both; every
loss a step reports must agree within 2e-4 relative in float32, and the warnings must be the
same. Each case is (build(lib, device) -> model, step(lib, model, data) -> a tensor of the
step's losses)."""

import copy
import math
import warnings

import numpy as np
import pytest
import torch

import genesis
from nn_compare import assert_trajectory_close

pytestmark = pytest.mark.usefixtures("cudnn_ieee")


# StyleGAN2 (rosinality's stylegan2-pytorch, its native upfirdn2d and fused_leaky_relu)

def _make_kernel(lib, k):
    k = lib.tensor(k, dtype=lib.float32)
    if k.ndim == 1:
        k = k[None, :] * k[:, None]
    k /= k.sum()
    return k


def _upfirdn2d(lib, x, kernel, up=1, down=1, pad=(0, 0)):
    """upfirdn2d_native: zero-insert upsampling by pad and view, padding (cropping where
    negative), a depthwise FIR filter as conv2d with the flipped kernel, then striding."""
    F = lib.nn.functional
    pad_x0, pad_x1, pad_y0, pad_y1 = pad[0], pad[1], pad[0], pad[1]
    _, channel, in_h, in_w = x.shape
    x = x.reshape(-1, in_h, in_w, 1)
    _, in_h, in_w, minor = x.shape
    kernel_h, kernel_w = kernel.shape
    out = x.view(-1, in_h, 1, in_w, 1, minor)
    out = F.pad(out, [0, 0, 0, up - 1, 0, 0, 0, up - 1])
    out = out.view(-1, in_h * up, in_w * up, minor)
    out = F.pad(out, [0, 0, max(pad_x0, 0), max(pad_x1, 0), max(pad_y0, 0), max(pad_y1, 0)])
    out = out[:, max(-pad_y0, 0): out.shape[1] - max(-pad_y1, 0),
              max(-pad_x0, 0): out.shape[2] - max(-pad_x1, 0), :]
    out = out.permute(0, 3, 1, 2)
    out = out.reshape([-1, 1, in_h * up + pad_y0 + pad_y1, in_w * up + pad_x0 + pad_x1])
    w = lib.flip(kernel, [0, 1]).view(1, 1, kernel_h, kernel_w)
    out = F.conv2d(out, w)
    out = out.reshape(-1, minor, in_h * up + pad_y0 + pad_y1 - kernel_h + 1,
                      in_w * up + pad_x0 + pad_x1 - kernel_w + 1)
    out = out.permute(0, 2, 3, 1)
    out = out[:, ::down, ::down, :]
    out_h = (in_h * up + pad_y0 + pad_y1 - kernel_h) // down + 1
    out_w = (in_w * up + pad_x0 + pad_x1 - kernel_w) // down + 1
    return out.view(-1, channel, out_h, out_w)


def _fused_leaky_relu(lib, x, bias, negative_slope=0.2, scale=2 ** 0.5):
    rest_dim = [1] * (x.ndim - bias.ndim - 1)
    if x.ndim == 3:  # (batch, n, features): the bias on the last axis
        return lib.nn.functional.leaky_relu(x + bias.view(1, *rest_dim, bias.shape[0]),
                                            negative_slope=negative_slope) * scale
    return lib.nn.functional.leaky_relu(x + bias.view(1, bias.shape[0], *rest_dim),
                                        negative_slope=negative_slope) * scale


def stylegan2(lib, device):
    """A StyleGAN2 generator (mapping MLP of EqualLinear layers with lr_mul, a constant input,
    modulated convolutions with demodulation as one grouped conv2d / conv_transpose2d, blur by
    upfirdn2d, noise injection from buffers, skip ToRGB upsampling) and a residual
    discriminator (blurred strided EqualConv2d, minibatch stddev with keepdims=True, fused
    leaky ReLU), plus the g_ema copy the trainer accumulates into."""
    nn, F = lib.nn, lib.nn.functional

    class PixelNorm(nn.Module):
        def forward(self, x):
            return x * lib.rsqrt(lib.mean(x ** 2, dim=1, keepdim=True) + 1e-8)

    class FusedLeakyReLU(nn.Module):
        def __init__(self, channel):
            super().__init__()
            self.bias = nn.Parameter(lib.zeros(channel))

        def forward(self, x):
            return _fused_leaky_relu(lib, x, self.bias)

    class Blur(nn.Module):
        def __init__(self, kernel, pad, upsample_factor=1):
            super().__init__()
            kernel = _make_kernel(lib, kernel)
            if upsample_factor > 1:
                kernel = kernel * (upsample_factor ** 2)
            self.register_buffer("kernel", kernel)
            self.pad = pad

        def forward(self, x):
            return _upfirdn2d(lib, x, self.kernel, pad=self.pad)

    class Upsample(nn.Module):
        def __init__(self, kernel, factor=2):
            super().__init__()
            self.factor = factor
            self.register_buffer("kernel", _make_kernel(lib, kernel) * (factor ** 2))
            p = self.kernel.shape[0] - factor
            self.pad = ((p + 1) // 2 + factor - 1, p // 2)

        def forward(self, x):
            return _upfirdn2d(lib, x, self.kernel, up=self.factor, pad=self.pad)

    class EqualConv2d(nn.Module):
        def __init__(self, cin, cout, k, stride=1, padding=0, bias=True):
            super().__init__()
            self.weight = nn.Parameter(lib.randn(cout, cin, k, k))
            self.scale = 1 / math.sqrt(cin * k ** 2)
            self.stride, self.padding = stride, padding
            self.bias = nn.Parameter(lib.zeros(cout)) if bias else None

        def forward(self, x):
            return F.conv2d(x, self.weight * self.scale, bias=self.bias, stride=self.stride,
                            padding=self.padding)

    class EqualLinear(nn.Module):
        def __init__(self, cin, cout, bias=True, bias_init=0, lr_mul=1, activation=None):
            super().__init__()
            self.weight = nn.Parameter(lib.randn(cout, cin).div_(lr_mul))
            self.bias = nn.Parameter(lib.zeros(cout).fill_(bias_init)) if bias else None
            self.activation = activation
            self.scale = (1 / math.sqrt(cin)) * lr_mul
            self.lr_mul = lr_mul

        def forward(self, x):
            if self.activation:
                out = F.linear(x, self.weight * self.scale)
                return _fused_leaky_relu(lib, out, self.bias * self.lr_mul)
            return F.linear(x, self.weight * self.scale, bias=self.bias * self.lr_mul)

    class ModulatedConv2d(nn.Module):
        def __init__(self, cin, cout, k, style_dim, demodulate=True, upsample=False,
                     blur_kernel=(1, 3, 3, 1)):
            super().__init__()
            self.eps, self.k, self.cin, self.cout = 1e-8, k, cin, cout
            self.upsample, self.demodulate = upsample, demodulate
            if upsample:
                factor = 2
                p = (len(blur_kernel) - factor) - (k - 1)
                self.blur = Blur(blur_kernel, pad=((p + 1) // 2 + factor - 1, p // 2 + 1),
                                 upsample_factor=factor)
            self.scale = 1 / math.sqrt(cin * k ** 2)
            self.padding = k // 2
            self.weight = nn.Parameter(lib.randn(1, cout, cin, k, k))
            self.modulation = EqualLinear(style_dim, cin, bias_init=1)

        def forward(self, x, style):
            batch, cin, height, width = x.shape
            style = self.modulation(style).view(batch, 1, cin, 1, 1)
            weight = self.scale * self.weight * style
            if self.demodulate:
                demod = lib.rsqrt(weight.pow(2).sum([2, 3, 4]) + 1e-8)
                weight = weight * demod.view(batch, self.cout, 1, 1, 1)
            weight = weight.view(batch * self.cout, cin, self.k, self.k)
            if self.upsample:
                x = x.view(1, batch * cin, height, width)
                weight = weight.view(batch, self.cout, cin, self.k, self.k)
                weight = weight.transpose(1, 2).reshape(batch * cin, self.cout, self.k, self.k)
                out = F.conv_transpose2d(x, weight, padding=0, stride=2, groups=batch)
                _, _, height, width = out.shape
                return self.blur(out.view(batch, self.cout, height, width))
            x = x.view(1, batch * cin, height, width)
            out = F.conv2d(x, weight, padding=self.padding, groups=batch)
            _, _, height, width = out.shape
            return out.view(batch, self.cout, height, width)

    class NoiseInjection(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(lib.zeros(1))

        def forward(self, image, noise=None):
            if noise is None:
                batch, _, height, width = image.shape
                noise = image.new_empty(batch, 1, height, width).normal_()
            return image + self.weight * noise

    class StyledConv(nn.Module):
        def __init__(self, cin, cout, k, style_dim, upsample=False):
            super().__init__()
            self.conv = ModulatedConv2d(cin, cout, k, style_dim, upsample=upsample)
            self.noise = NoiseInjection()
            self.activate = FusedLeakyReLU(cout)

        def forward(self, x, style, noise=None):
            return self.activate(self.noise(self.conv(x, style), noise=noise))

    class ToRGB(nn.Module):
        def __init__(self, cin, style_dim, upsample=True):
            super().__init__()
            if upsample:
                self.upsample = Upsample((1, 3, 3, 1))
            self.conv = ModulatedConv2d(cin, 3, 1, style_dim, demodulate=False)
            self.bias = nn.Parameter(lib.zeros(1, 3, 1, 1))

        def forward(self, x, style, skip=None):
            out = self.conv(x, style) + self.bias
            if skip is not None:
                out = out + self.upsample(skip)
            return out

    class Generator(nn.Module):
        def __init__(self, style_dim=8, ch=8):
            super().__init__()
            self.style_dim = style_dim
            self.style = nn.Sequential(PixelNorm(), *[
                EqualLinear(style_dim, style_dim, lr_mul=0.01, activation="fused_lrelu")
                for _ in range(2)])
            self.input = nn.Parameter(lib.randn(1, ch, 4, 4))
            self.conv1 = StyledConv(ch, ch, 3, style_dim)
            self.to_rgb1 = ToRGB(ch, style_dim, upsample=False)
            self.convs = nn.ModuleList([StyledConv(ch, ch, 3, style_dim, upsample=True),
                                        StyledConv(ch, ch, 3, style_dim)])
            self.to_rgbs = nn.ModuleList([ToRGB(ch, style_dim)])
            self.n_latent = 4
            self.noises = nn.Module()
            for i, size in enumerate((4, 8, 8)):
                self.noises.register_buffer(f"noise_{i}", lib.randn(1, 1, size, size))

        def forward(self, styles, return_latents=False):
            styles = [self.style(s) for s in styles]
            latent = styles[0].unsqueeze(1).repeat(1, self.n_latent, 1)
            noise = [getattr(self.noises, f"noise_{i}") for i in range(3)]
            out = self.input.repeat(latent.shape[0], 1, 1, 1)
            out = self.conv1(out, latent[:, 0], noise=noise[0])
            skip = self.to_rgb1(out, latent[:, 1])
            out = self.convs[0](out, latent[:, 1], noise=noise[1])
            out = self.convs[1](out, latent[:, 2], noise=noise[2])
            image = self.to_rgbs[0](out, latent[:, 3], skip)
            return (image, latent) if return_latents else (image, None)

    class ConvLayer(nn.Sequential):
        def __init__(self, cin, cout, k, downsample=False, bias=True, activate=True):
            layers = []
            stride, padding = 1, k // 2
            if downsample:
                p = (4 - 2) + (k - 1)
                layers.append(Blur((1, 3, 3, 1), pad=((p + 1) // 2, p // 2)))
                stride, padding = 2, 0
            layers.append(EqualConv2d(cin, cout, k, padding=padding, stride=stride,
                                      bias=bias and not activate))
            if activate:
                layers.append(FusedLeakyReLU(cout))
            super().__init__(*layers)

    class ResBlock(nn.Module):
        def __init__(self, cin, cout):
            super().__init__()
            self.conv1 = ConvLayer(cin, cin, 3)
            self.conv2 = ConvLayer(cin, cout, 3, downsample=True)
            self.skip = ConvLayer(cin, cout, 1, downsample=True, activate=False, bias=False)

        def forward(self, x):
            return (self.conv2(self.conv1(x)) + self.skip(x)) / math.sqrt(2)

    class Discriminator(nn.Module):
        def __init__(self, ch=8):
            super().__init__()
            self.convs = nn.Sequential(ConvLayer(3, ch, 1), ResBlock(ch, ch))
            self.stddev_group, self.stddev_feat = 2, 1
            self.final_conv = ConvLayer(ch + 1, ch, 3)
            self.final_linear = nn.Sequential(
                EqualLinear(ch * 4 * 4, ch, activation="fused_lrelu"), EqualLinear(ch, 1))

        def forward(self, x):
            out = self.convs(x)
            batch, channel, height, width = out.shape
            group = min(batch, self.stddev_group)
            stddev = out.view(group, -1, self.stddev_feat, channel // self.stddev_feat,
                              height, width)
            stddev = lib.sqrt(stddev.var(0, unbiased=False) + 1e-8)
            stddev = stddev.mean([2, 3, 4], keepdims=True).squeeze(2)
            stddev = stddev.repeat(group, 1, height, width)
            out = self.final_conv(lib.cat([out, stddev], 1))
            return self.final_linear(out.view(batch, -1))

    model = nn.Module()
    model.generator, model.discriminator, model.g_ema = Generator(), Discriminator(), Generator()
    model.g_ema.eval()
    _accumulate(lib, model.g_ema, model.generator, 0)
    g_ratio, d_ratio = 4 / 5, 16 / 17  # lazy regularization's ratios, as train.py's
    model.optimizer = lambda: (
        lib.optim.Adam(model.generator.parameters(), lr=2e-3 * g_ratio,
                       betas=(0 ** g_ratio, 0.99 ** g_ratio)),
        lib.optim.Adam(model.discriminator.parameters(), lr=2e-3 * d_ratio,
                       betas=(0 ** d_ratio, 0.99 ** d_ratio)))
    return model


def _accumulate(lib, model1, model2, decay=0.999):
    par1, par2 = dict(model1.named_parameters()), dict(model2.named_parameters())
    for k in par1:
        par1[k].data.mul_(decay).add_(par2[k].data, alpha=1 - decay)


def _requires_grad(model, flag=True):
    for p in model.parameters():
        p.requires_grad = flag


def stylegan2_step(lib, model, data):
    """train.py's iteration with every regularization due: the discriminator's logistic loss,
    its R1 penalty (autograd.grad of the real scores with create_graph), the generator's
    non-saturating loss and path-length penalty, then g_ema accumulated."""
    F = lib.nn.functional
    g_optim, d_optim = model.opt
    generator, discriminator = model.generator, model.discriminator
    real_img = data["images"] * 2 - 1

    _requires_grad(generator, False)
    _requires_grad(discriminator, True)
    fake_img, _ = generator([data["z"]])
    fake_pred, real_pred = discriminator(fake_img), discriminator(real_img)
    d_loss = F.softplus(-real_pred).mean() + F.softplus(fake_pred).mean()
    discriminator.zero_grad()
    d_loss.backward()
    d_optim.step()

    real_img.requires_grad = True
    real_pred = discriminator(real_img)
    grad_real, = lib.autograd.grad(outputs=real_pred.sum(), inputs=real_img, create_graph=True)
    r1_loss = grad_real.pow(2).reshape(grad_real.shape[0], -1).sum(1).mean()
    discriminator.zero_grad()
    (10 / 2 * r1_loss * 16 + 0 * real_pred[0]).backward()
    d_optim.step()

    _requires_grad(generator, True)
    _requires_grad(discriminator, False)
    fake_img, _ = generator([data["z"]])
    g_loss = F.softplus(-discriminator(fake_img)).mean()
    generator.zero_grad()
    g_loss.backward()
    g_optim.step()

    fake_img, latents = generator([data["z"][:2]], return_latents=True)
    noise = data["path_noise"][:2] / math.sqrt(fake_img.shape[2] * fake_img.shape[3])
    grad, = lib.autograd.grad(outputs=(fake_img * noise).sum(), inputs=latents,
                              create_graph=True)
    path_lengths = lib.sqrt(grad.pow(2).sum(2).mean(1))
    mean_path_length = getattr(model, "mean_path_length", 0)
    path_mean = mean_path_length + 0.01 * (path_lengths.mean() - mean_path_length)
    path_loss = (path_lengths - path_mean).pow(2).mean()
    model.mean_path_length = path_mean.detach()
    generator.zero_grad()
    weighted_path_loss = 2 * 4 * path_loss
    weighted_path_loss += 0 * fake_img[0, 0, 0, 0]
    weighted_path_loss.backward()
    g_optim.step()

    _accumulate(lib, model.g_ema, generator, 0.5 ** (32 / 10))
    with lib.no_grad():
        sample, _ = model.g_ema([data["z"]])
    return lib.stack([d_loss, r1_loss, g_loss, path_loss, path_lengths.mean(),
                      sample.square().mean()]).detach()



# SimCLR and BYOL, with augmentations written in torch

def augment_params(lib, g, batch, size, crop, device):
    """One view's random draws from generator `g`: crop offsets, horizontal flips, and
    brightness / contrast / saturation factors in [0.6, 1.4)."""
    top = lib.randint(0, size - crop + 1, (batch,), generator=g, device=device)
    left = lib.randint(0, size - crop + 1, (batch,), generator=g, device=device)
    flip = lib.rand(batch, generator=g, device=device) < 0.5
    jitter = 1 + (lib.rand(batch, 3, generator=g, device=device) - 0.5) * 0.8
    return top, left, flip, jitter


def augment(lib, x, top, left, flip, jitter, crop):
    """Crops by slicing, flips by torch.flip under a mask, color jitter by arithmetic."""
    views = lib.stack([x[i, :, t:t + crop, u:u + crop]
                       for i, (t, u) in enumerate(zip(top.tolist(), left.tolist()))])
    views = lib.where(flip[:, None, None, None], lib.flip(views, dims=[3]), views)
    views = views * jitter[:, 0, None, None, None]
    mean = views.mean(dim=(1, 2, 3), keepdim=True)
    views = (views - mean) * jitter[:, 1, None, None, None] + mean
    weights = lib.tensor([0.299, 0.587, 0.114], device=x.device)
    gray = (views * weights[:, None, None]).sum(1, keepdim=True)
    views = (views - gray) * jitter[:, 2, None, None, None] + gray
    return views.clamp(0, 1)


def _two_views(lib, data, crop=6):
    x = data["images"]
    return [augment(lib, x, data["top"][v], data["left"][v], data["flip"][v], data["jitter"][v],
                    crop) for v in range(2)]


def _encoder(lib):
    nn = lib.nn
    """A ResNet-like stem: convolutions without bias before BatchNorm2d, pooled, flattened."""
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8),
                         nn.ReLU(inplace=True), nn.Conv2d(8, 16, 3, 2, 1, bias=False),
                         nn.BatchNorm2d(16), nn.ReLU(inplace=True), nn.AdaptiveAvgPool2d(1),
                         nn.Flatten())


def simclr(lib, device):
    """SimCLR: a conv encoder and a projection MLP, Adam with weight decay under
    CosineAnnealingLR, as sthalles' SimCLR trains."""
    nn = lib.nn
    model = nn.Module()
    model.backbone = _encoder(lib)
    model.projector = nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 8))
    model.optimizer = lambda: lib.optim.Adam(model.parameters(), 3e-3, weight_decay=1e-4)
    model.scheduler = lambda opt: lib.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=4,
                                                                           eta_min=0)
    return model


def nt_xent(lib, z1, z2, temperature=0.5):
    """NT-Xent: cosine similarities of all 2N views, the diagonal masked by eye(...).bool()
    and masked_fill, cross-entropy toward each view's partner."""
    F = lib.nn.functional
    z = F.normalize(lib.cat([z1, z2]), dim=1)
    n = z.shape[0]
    sim = z @ z.T / temperature
    sim = sim.masked_fill(lib.eye(n, device=z.device).bool(), -9e15)
    targets = (lib.arange(n, device=z.device) + n // 2) % n
    return F.cross_entropy(sim, targets)


def info_nce_logits(lib, features, batch, temperature=0.5):
    """sthalles' info_nce_loss: labels from comparing indices, the diagonal dropped by boolean
    indexing with ~mask, positives first, then the negatives."""
    labels = lib.cat([lib.arange(batch) for _ in range(2)], dim=0)
    labels = (labels.unsqueeze(0) == labels.unsqueeze(1)).float().to(features.device)
    features = lib.nn.functional.normalize(features, dim=1)
    similarity = lib.matmul(features, features.T)
    mask = lib.eye(labels.shape[0], dtype=lib.bool).to(features.device)
    labels = labels[~mask].view(labels.shape[0], -1)
    similarity = similarity[~mask].view(similarity.shape[0], -1)
    positives = similarity[labels.bool()].view(labels.shape[0], -1)
    negatives = similarity[~labels.bool()].view(similarity.shape[0], -1)
    logits = lib.cat([positives, negatives], dim=1) / temperature
    return logits, lib.zeros(logits.shape[0], dtype=lib.long).to(features.device)


def simclr_step(lib, model, data):
    v1, v2 = _two_views(lib, data)
    z = model.projector(model.backbone(lib.cat([v1, v2])))
    z1, z2 = z.chunk(2)
    loss = nt_xent(lib, z1, z2)
    logits, labels = info_nce_logits(lib, z.detach(), z1.shape[0])
    info_nce = lib.nn.CrossEntropyLoss()(logits, labels)
    model.opt.zero_grad()
    loss.backward()
    model.opt.step()
    model.sched.step()
    top1 = (logits.argmax(1) == labels).float().mean() * 100
    lr = lib.tensor(model.sched.get_last_lr()[0], device=top1.device)
    return lib.stack([loss.detach(), info_nce, top1, lr])


def byol(lib, device):
    """BYOL: an online encoder, projector and predictor (MLPs with BatchNorm1d, their last
    layer without bias as DeepMind's); the target network is a deepcopy made on the first step,
    frozen by requires_grad False."""
    nn = lib.nn

    def mlp(dim, hidden, out):
        return nn.Sequential(nn.Linear(dim, hidden), nn.BatchNorm1d(hidden), nn.ReLU(inplace=True),
                             nn.Linear(hidden, out, bias=False))

    model = nn.Module()
    model.online = nn.Sequential(_encoder(lib), mlp(16, 32, 8))
    model.predictor = mlp(8, 32, 8)
    model.optimizer = lambda: lib.optim.Adam(model.parameters(), lr=3e-3)
    return model


def _byol_loss(lib, p, z):
    F = lib.nn.functional
    return 2 - 2 * (F.normalize(p, dim=-1) * F.normalize(z, dim=-1)).sum(dim=-1)


def byol_step(lib, model, data, total_steps=3):
    if not hasattr(model, "target"):
        model.__dict__["target"] = copy.deepcopy(model.online)
        for p in model.target.parameters():
            p.requires_grad = False
        model.k = 0
    v1, v2 = _two_views(lib, data)
    p1, p2 = model.predictor(model.online(v1)), model.predictor(model.online(v2))
    with lib.no_grad():
        t1, t2 = model.target(v1), model.target(v2)
    loss = (_byol_loss(lib, p1, t2.detach()) + _byol_loss(lib, p2, t1.detach())).mean()
    model.opt.zero_grad()
    loss.backward()
    model.opt.step()
    tau = 1 - (1 - 0.9) * (math.cos(math.pi * model.k / total_steps) + 1) / 2
    model.k += 1
    with lib.no_grad():
        for online, target in zip(model.online.parameters(), model.target.parameters()):
            target.mul_(tau).add_(online, alpha=1 - tau)
        for online, target in zip(model.online.buffers(), model.target.buffers()):
            target.copy_(online)
    return lib.stack([loss.detach(), t1.square().mean()])



# DINO (facebookresearch/dino: vision_transformer.py, main_dino.py, utils.py)

def cosine_scheduler(base_value, final_value, epochs, niter_per_ep, warmup_epochs=0,
                     start_warmup_value=0):
    warmup_schedule = np.array([])
    warmup_iters = warmup_epochs * niter_per_ep
    if warmup_epochs > 0:
        warmup_schedule = np.linspace(start_warmup_value, base_value, warmup_iters)
    iters = np.arange(epochs * niter_per_ep - warmup_iters)
    schedule = final_value + 0.5 * (base_value - final_value) * (
        1 + np.cos(np.pi * iters / len(iters)))
    return np.concatenate((warmup_schedule, schedule))


def dino(lib, device):
    """DINO: a tiny ViT whose position embedding is resized by bicubic interpolate (by
    scale_factor) for local crops, a projection head ending in a weight-normed layer whose
    weight_g is frozen, a MultiCropWrapper batching crops of equal size (unique_consecutive
    with return_counts, cumsum, slicing a list by tensors, cat onto an empty tensor), a teacher
    loaded from the student's state and frozen, and the loss's center buffer."""
    nn, F = lib.nn, lib.nn.functional
    dim, heads, patch, out_dim = 16, 2, 4, 32

    def init_weights(m):
        if isinstance(m, nn.Linear):
            nn.init.trunc_normal_(m.weight, std=0.02)
            if m.bias is not None:
                nn.init.constant_(m.bias, 0)
        elif isinstance(m, nn.LayerNorm):
            nn.init.constant_(m.bias, 0)
            nn.init.constant_(m.weight, 1.0)

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = (dim // heads) ** -0.5
            self.qkv, self.proj = nn.Linear(dim, dim * 3, bias=True), nn.Linear(dim, dim)

        def forward(self, x):
            B, N, C = x.shape
            qkv = self.qkv(x).reshape(B, N, 3, heads, C // heads).permute(2, 0, 3, 1, 4)
            q, k, v = qkv[0], qkv[1], qkv[2]
            attn = ((q @ k.transpose(-2, -1)) * self.scale).softmax(dim=-1)
            return self.proj((attn @ v).transpose(1, 2).reshape(B, N, C)), attn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm1, self.norm2 = nn.LayerNorm(dim, eps=1e-6), nn.LayerNorm(dim, eps=1e-6)
            self.attn = Attention()
            self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

        def forward(self, x):
            y, attn = self.attn(self.norm1(x))
            x = x + y
            return x + self.mlp(self.norm2(x))

    class VisionTransformer(nn.Module):
        def __init__(self, img_size=8):
            super().__init__()
            self.patch_embed = nn.Conv2d(3, dim, kernel_size=patch, stride=patch)
            num_patches = (img_size // patch) ** 2
            self.cls_token = nn.Parameter(lib.zeros(1, 1, dim))
            self.pos_embed = nn.Parameter(lib.zeros(1, num_patches + 1, dim))
            self.blocks = nn.ModuleList([Block() for _ in range(2)])
            self.norm = nn.LayerNorm(dim, eps=1e-6)
            nn.init.trunc_normal_(self.pos_embed, std=0.02)
            nn.init.trunc_normal_(self.cls_token, std=0.02)
            self.apply(init_weights)

        def interpolate_pos_encoding(self, x, w, h):
            npatch = x.shape[1] - 1
            N = self.pos_embed.shape[1] - 1
            if npatch == N and w == h:
                return self.pos_embed
            class_pos_embed = self.pos_embed[:, 0]
            patch_pos_embed = self.pos_embed[:, 1:]
            w0, h0 = w // patch + 0.1, h // patch + 0.1
            patch_pos_embed = F.interpolate(
                patch_pos_embed.reshape(1, int(math.sqrt(N)), int(math.sqrt(N)), dim)
                .permute(0, 3, 1, 2),
                scale_factor=(w0 / math.sqrt(N), h0 / math.sqrt(N)), mode="bicubic")
            assert int(w0) == patch_pos_embed.shape[-2] and int(h0) == patch_pos_embed.shape[-1]
            patch_pos_embed = patch_pos_embed.permute(0, 2, 3, 1).view(1, -1, dim)
            return lib.cat((class_pos_embed.unsqueeze(0), patch_pos_embed), dim=1)

        def forward(self, x):
            B, nc, w, h = x.shape
            x = self.patch_embed(x).flatten(2).transpose(1, 2)
            x = lib.cat((self.cls_token.expand(B, -1, -1), x), dim=1)
            x = x + self.interpolate_pos_encoding(x, w, h)
            for blk in self.blocks:
                x = blk(x)
            return self.norm(x)[:, 0]

    class DINOHead(nn.Module):
        def __init__(self, hidden_dim=32, bottleneck_dim=8):
            super().__init__()
            self.mlp = nn.Sequential(nn.Linear(dim, hidden_dim), nn.GELU(),
                                     nn.Linear(hidden_dim, hidden_dim), nn.GELU(),
                                     nn.Linear(hidden_dim, bottleneck_dim))
            self.apply(init_weights)
            self.last_layer = nn.utils.weight_norm(nn.Linear(bottleneck_dim, out_dim, bias=False))
            self.last_layer.weight_g.data.fill_(1)
            self.last_layer.weight_g.requires_grad = False

        def forward(self, x):
            return self.last_layer(F.normalize(self.mlp(x), dim=-1, p=2))

    class MultiCropWrapper(nn.Module):
        def __init__(self):
            super().__init__()
            self.backbone, self.head = VisionTransformer(), DINOHead()

        def forward(self, x):
            if not isinstance(x, list):
                x = [x]
            idx_crops = lib.cumsum(lib.unique_consecutive(
                lib.tensor([inp.shape[-1] for inp in x]), return_counts=True)[1], 0)
            start_idx, output = 0, lib.empty(0).to(x[0].device)
            for end_idx in idx_crops:
                _out = self.backbone(lib.cat(x[start_idx: end_idx]))
                if isinstance(_out, tuple):
                    _out = _out[0]
                output = lib.cat((output, _out))
                start_idx = end_idx
            return self.head(output)

    model = nn.Module()
    model.student, model.teacher = MultiCropWrapper(), MultiCropWrapper()
    model.teacher.load_state_dict(model.student.state_dict())
    for p in model.teacher.parameters():
        p.requires_grad = False
    model.register_buffer("center", lib.zeros(1, out_dim))
    model.optimizer = lambda: lib.optim.AdamW(_params_groups(model.student))
    return model


def _params_groups(model):
    regularized, not_regularized = [], []
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        if name.endswith(".bias") or len(param.shape) == 1:
            not_regularized.append(param)
        else:
            regularized.append(param)
    return [{"params": regularized}, {"params": not_regularized, "weight_decay": 0.0}]


def _multi_crop(lib, data):
    """Two global crops resized to 8x8 and two local ones to 4x4 by bicubic interpolate."""
    x, crops = data["large"], []
    for v, (size, out) in enumerate(((10, 8), (10, 8), (6, 4), (6, 4))):
        t, u = int(data["top"][v % 2][v]), int(data["left"][v % 2][v])
        crops.append(lib.nn.functional.interpolate(
            x[:, :, t:t + size, u:u + size], size=(out, out), mode="bicubic",
            align_corners=False, antialias=False))
    return crops


def _dino_loss(lib, model, student_output, teacher_output, temp, ncrops=4, student_temp=0.1,
               center_momentum=0.9):
    F = lib.nn.functional
    student_out = (student_output / student_temp).chunk(ncrops)
    teacher_out = F.softmax((teacher_output - model.center) / temp, dim=-1).detach().chunk(2)
    total_loss, n_loss_terms = 0, 0
    for iq, q in enumerate(teacher_out):
        for v in range(len(student_out)):
            if v == iq:
                continue
            loss = lib.sum(-q * F.log_softmax(student_out[v], dim=-1), dim=-1)
            total_loss += loss.mean()
            n_loss_terms += 1
    total_loss /= n_loss_terms
    _update_center(lib, model, teacher_output, center_momentum)
    return total_loss


def _update_center(lib, model, teacher_output, momentum):
    @lib.no_grad()
    def update():
        batch_center = lib.sum(teacher_output, dim=0, keepdim=True) / len(teacher_output)
        model.center = model.center * momentum + batch_center * (1 - momentum)
    update()


def dino_step(lib, model, data, steps=3):
    """main_dino.py's train_one_epoch: lr and weight decay set per iteration from numpy cosine
    schedules, the teacher on the global crops, the loss over crop pairs, gradients clipped
    and the last layer's cancelled while frozen, then the teacher's EMA with the momentum
    schedule's numpy float."""
    if not hasattr(model, "it"):
        model.it = 0
        model.lr_schedule = cosine_scheduler(5e-3, 1e-4, steps, 1, warmup_epochs=1)
        model.wd_schedule = cosine_scheduler(0.04, 0.4, steps, 1)
        model.momentum_schedule = cosine_scheduler(0.9, 1, steps, 1)
        model.temp_schedule = np.concatenate((np.linspace(0.04, 0.07, 2),
                                              np.ones(steps - 2) * 0.07))
    it = model.it
    for i, param_group in enumerate(model.opt.param_groups):
        param_group["lr"] = model.lr_schedule[it]
        if i == 0:
            param_group["weight_decay"] = model.wd_schedule[it]
    images = _multi_crop(lib, data)
    teacher_output = model.teacher(images[:2])
    student_output = model.student(images)
    loss = _dino_loss(lib, model, student_output, teacher_output, model.temp_schedule[it])
    model.opt.zero_grad()
    loss.backward()
    norm = lib.nn.utils.clip_grad_norm_(model.student.parameters(), 3.0)
    if it < 1:
        for n, p in model.student.named_parameters():
            if "last_layer" in n:
                p.grad = None
    model.opt.step()
    with lib.no_grad():
        m = model.momentum_schedule[it]
        for param_q, param_k in zip(model.student.parameters(), model.teacher.parameters()):
            param_k.data.mul_(m).add_((1 - m) * param_q.detach().data)
    model.it += 1
    return lib.stack([loss.detach(), norm, model.center.square().sum(),
                      teacher_output.square().mean()])



# U-Net for segmentation (milesial's Pytorch-UNet: unet_parts.py, train.py, dice_score.py)

def unet(lib, device, bilinear=False, n_classes=3):
    """DoubleConv (conv, BatchNorm, ReLU twice, mid_channels), Down by MaxPool2d, Up by a
    ConvTranspose2d or a bilinear Upsample (align_corners=True) whose output is padded by F.pad
    to its skip's odd size, OutConv; RMSprop (momentum, foreach) under ReduceLROnPlateau, at
    train.py's learning rate, 1e-5: at 1e-3 its step moved weights whose gradients sit near
    RMSprop's eps by 5 lr times their float32 rounding, and the bilinear U-Net's gradient norm
    at the third step parted from torch's by 2e-3 (seed 1529268853), while the first
    gradients of both lay within float32's reach of float64's (1.3e-6 and 8.1e-7 of the
    largest)."""
    nn, F = lib.nn, lib.nn.functional

    class DoubleConv(nn.Module):
        def __init__(self, in_channels, out_channels, mid_channels=None):
            super().__init__()
            if not mid_channels:
                mid_channels = out_channels
            self.double_conv = nn.Sequential(
                nn.Conv2d(in_channels, mid_channels, kernel_size=3, padding=1, bias=False),
                nn.BatchNorm2d(mid_channels), nn.ReLU(inplace=True),
                nn.Conv2d(mid_channels, out_channels, kernel_size=3, padding=1, bias=False),
                nn.BatchNorm2d(out_channels), nn.ReLU(inplace=True))

        def forward(self, x):
            return self.double_conv(x)

    class Down(nn.Module):
        def __init__(self, in_channels, out_channels):
            super().__init__()
            self.maxpool_conv = nn.Sequential(nn.MaxPool2d(2),
                                              DoubleConv(in_channels, out_channels))

        def forward(self, x):
            return self.maxpool_conv(x)

    class Up(nn.Module):
        def __init__(self, in_channels, out_channels, bilinear=True):
            super().__init__()
            if bilinear:
                self.up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)
                self.conv = DoubleConv(in_channels, out_channels, in_channels // 2)
            else:
                self.up = nn.ConvTranspose2d(in_channels, in_channels // 2, kernel_size=2,
                                             stride=2)
                self.conv = DoubleConv(in_channels, out_channels)

        def forward(self, x1, x2):
            x1 = self.up(x1)
            diffY = x2.size()[2] - x1.size()[2]
            diffX = x2.size()[3] - x1.size()[3]
            x1 = F.pad(x1, [diffX // 2, diffX - diffX // 2, diffY // 2, diffY - diffY // 2])
            return self.conv(lib.cat([x2, x1], dim=1))

    class UNet(nn.Module):
        def __init__(self, n_channels=3):
            super().__init__()
            self.n_channels, self.n_classes, self.bilinear = n_channels, n_classes, bilinear
            factor = 2 if bilinear else 1
            self.inc = DoubleConv(n_channels, 4)
            self.down1, self.down2 = Down(4, 8), Down(8, 16 // factor)
            self.up1 = Up(16, 8 // factor, bilinear)
            self.up2 = Up(8, 4, bilinear)
            self.outc = nn.Conv2d(4, n_classes, kernel_size=1)

        def forward(self, x):
            x1 = self.inc(x)
            x2 = self.down1(x1)
            x3 = self.down2(x2)
            x = self.up1(x3, x2)
            return self.outc(self.up2(x, x1))

    model = UNet()
    model.optimizer = lambda: lib.optim.RMSprop(model.parameters(), lr=1e-5, weight_decay=1e-8,
                                                momentum=0.999, foreach=True)
    model.scheduler = lambda opt: lib.optim.lr_scheduler.ReduceLROnPlateau(opt, "max",
                                                                           patience=0)
    return model


def dice_coeff(lib, input, target, reduce_batch_first=False, epsilon=1e-6):
    assert input.size() == target.size()
    assert input.dim() == 3 or not reduce_batch_first
    sum_dim = (-1, -2) if input.dim() == 2 or not reduce_batch_first else (-1, -2, -3)
    inter = 2 * (input * target).sum(dim=sum_dim)
    sets_sum = input.sum(dim=sum_dim) + target.sum(dim=sum_dim)
    sets_sum = lib.where(sets_sum == 0, inter, sets_sum)
    return ((inter + epsilon) / (sets_sum + epsilon)).mean()


def multiclass_dice_coeff(lib, input, target, reduce_batch_first=False, epsilon=1e-6):
    return dice_coeff(lib, input.flatten(0, 1), target.flatten(0, 1), reduce_batch_first,
                      epsilon)


def unet_step(lib, model, data, amp=False):
    """train.py's iteration (autocast disabled, the loss CrossEntropyLoss plus the multiclass
    dice loss of softmax against one_hot(...).permute(0, 3, 1, 2), the GradScaler of the
    device made disabled, clip_grad_norm_), then evaluate.py's dice score on argmax masks under
    eval and no_grad, which steps the plateau scheduler."""
    nn, F = lib.nn, lib.nn.functional
    images, true_masks = data["seg_images"], data["masks"]
    device = images.device
    if not hasattr(model, "grad_scaler"):
        if model.bilinear:
            model.grad_scaler = lib.cuda.amp.GradScaler(enabled=amp)
        else:
            model.grad_scaler = lib.amp.GradScaler(device.type, enabled=amp)
    model.train()
    with lib.autocast(device.type if device.type != "mps" else "cpu", enabled=amp):
        masks_pred = model(images)
        loss = nn.CrossEntropyLoss()(masks_pred, true_masks)
        loss += 1 - multiclass_dice_coeff(
            lib, F.softmax(masks_pred, dim=1).float(),
            F.one_hot(true_masks, model.n_classes).permute(0, 3, 1, 2).float(),
            reduce_batch_first=True)
    model.opt.zero_grad(set_to_none=True)
    model.grad_scaler.scale(loss).backward()
    model.grad_scaler.unscale_(model.opt)
    norm = lib.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    model.grad_scaler.step(model.opt)
    model.grad_scaler.update()

    model.eval()
    with lib.no_grad():
        mask_pred = model(images).argmax(dim=1)
        mask_true = F.one_hot(true_masks, model.n_classes).permute(0, 3, 1, 2).float()
        mask_pred = F.one_hot(mask_pred, model.n_classes).permute(0, 3, 1, 2).float()
        val_score = multiclass_dice_coeff(lib, mask_pred[:, 1:], mask_true[:, 1:],
                                          reduce_batch_first=False)
    model.sched.step(val_score)
    return lib.stack([loss.detach(), norm, val_score,
                      lib.tensor(model.opt.param_groups[0]["lr"], device=device)])



# A YOLO-style detector's loss in pure torch (DETR's box_ops, YOLOv5's build_targets, NMS)

def box_cxcywh_to_xyxy(lib, x):
    x_c, y_c, w, h = x.unbind(-1)
    return lib.stack([(x_c - 0.5 * w), (y_c - 0.5 * h), (x_c + 0.5 * w), (y_c + 0.5 * h)],
                     dim=-1)


def box_xyxy_to_cxcywh(lib, x):
    x0, y0, x1, y1 = x.unbind(-1)
    return lib.stack([(x0 + x1) / 2, (y0 + y1) / 2, (x1 - x0), (y1 - y0)], dim=-1)


def box_area(boxes):
    return (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])


def box_iou(lib, boxes1, boxes2):
    area1, area2 = box_area(boxes1), box_area(boxes2)
    lt = lib.max(boxes1[:, None, :2], boxes2[:, :2])
    rb = lib.min(boxes1[:, None, 2:], boxes2[:, 2:])
    wh = (rb - lt).clamp(min=0)
    inter = wh[:, :, 0] * wh[:, :, 1]
    union = area1[:, None] + area2 - inter
    return inter / union, union


def generalized_box_iou(lib, boxes1, boxes2):
    assert (boxes1[:, 2:] >= boxes1[:, :2]).all()
    iou, union = box_iou(lib, boxes1, boxes2)
    lt = lib.min(boxes1[:, None, :2], boxes2[:, :2])
    rb = lib.max(boxes1[:, None, 2:], boxes2[:, 2:])
    wh = (rb - lt).clamp(min=0)
    area = wh[:, :, 0] * wh[:, :, 1]
    return iou - (area - union) / area


def nms(lib, boxes, scores, iou_threshold):
    """Greedy NMS: the best remaining box kept, those overlapping it past the threshold
    dropped."""
    order = scores.argsort(descending=True)
    keep = []
    while order.numel() > 0:
        i = order[0]
        keep.append(i)
        if order.numel() == 1:
            break
        iou = box_iou(lib, boxes[i].unsqueeze(0), boxes[order[1:]])[0].squeeze(0)
        order = order[1:][iou <= iou_threshold]
    return lib.stack(keep) if keep else lib.empty(0, dtype=lib.long, device=boxes.device)


YOLO_ANCHORS = [[0.8, 1.2], [1.6, 1.0]]  # in grid cells


def yolo(lib, device, na=2, nc=3):
    """A small backbone and a YOLOv5 Detect conv whose biases are set from priors through a
    view of bias.data and put back as a new Parameter; SGD with nesterov over YOLOv5's three
    parameter groups (BatchNorm weights, decayed weights, biases) under a one-cycle LambdaLR."""
    nn = lib.nn
    model = nn.Module()
    model.backbone = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1, bias=False), nn.BatchNorm2d(8),
                                   nn.SiLU(), nn.Conv2d(8, 8, 3, 1, 1, bias=False),
                                   nn.BatchNorm2d(8), nn.SiLU())
    model.detect = nn.Conv2d(8, na * (5 + nc), 1)
    b = model.detect.bias.view(na, -1)
    b.data[:, 4] += math.log(8 / (640 / 2) ** 2)
    b.data[:, 5:] += math.log(0.6 / (nc - 0.99999))
    model.detect.bias = nn.Parameter(b.view(-1), requires_grad=True)
    model.register_buffer("anchors", lib.tensor(YOLO_ANCHORS))
    model.na, model.nc = na, nc

    def optimizer():
        g0, g1, g2 = [], [], []
        for v in model.modules():
            if hasattr(v, "bias") and isinstance(v.bias, nn.Parameter):
                g2.append(v.bias)
            if isinstance(v, nn.BatchNorm2d):
                g0.append(v.weight)
            elif hasattr(v, "weight") and isinstance(v.weight, nn.Parameter):
                g1.append(v.weight)
        opt = lib.optim.SGD(g0, lr=0.01, momentum=0.937, nesterov=True)
        opt.add_param_group({"params": g1, "weight_decay": 5e-4})
        opt.add_param_group({"params": g2})
        return opt

    model.optimizer = optimizer
    lf = lambda x: ((1 - math.cos(x * math.pi / 3)) / 2) * (0.1 - 1) + 1  # noqa: E731
    model.scheduler = lambda opt: lib.optim.lr_scheduler.LambdaLR(opt, lr_lambda=lf)
    return model


def _yolo_forward(lib, model, images):
    """Predictions (B, A, S, S, 5 + C) and their decoded boxes (cx, cy, w, h) in grid cells."""
    out = model.detect(model.backbone(images))
    B, _, S, _ = out.shape
    p = out.view(B, model.na, 5 + model.nc, S, S).permute(0, 1, 3, 4, 2).contiguous()
    grid_y, grid_x = lib.meshgrid(lib.arange(S, device=images.device),
                                  lib.arange(S, device=images.device), indexing="ij")
    pxy = p[..., :2].sigmoid() + lib.stack((grid_x, grid_y), -1)
    pwh = p[..., 2:4].exp() * model.anchors.view(1, model.na, 1, 1, 2)
    return p, lib.cat((pxy, pwh), -1)


def build_targets(lib, model, targets, shape):
    """Each target to the anchor of best width/height IoU (argmax) in the cell of its centre."""
    B, A, S = shape[0], shape[1], shape[2]
    device = targets.device
    obj_mask = lib.zeros(B, A, S, S, dtype=lib.bool, device=device)
    tbox = lib.zeros(B, A, S, S, 4, device=device)
    tcls = lib.zeros(B, A, S, S, model.nc, device=device)
    b, labels = targets[:, 0].long(), targets[:, 1].long()
    gxy, gwh = targets[:, 2:4] * S, targets[:, 4:6] * S
    inter = lib.min(gwh[:, None, :], model.anchors[None]).prod(2)
    ious = inter / (gwh.prod(1)[:, None] + model.anchors.prod(1)[None] - inter)
    best_n = ious.argmax(1)
    gi, gj = gxy.long().t()
    gi, gj = gi.clamp_(0, S - 1), gj.clamp_(0, S - 1)
    obj_mask[b, best_n, gj, gi] = True
    tbox[b, best_n, gj, gi] = lib.cat([gxy, gwh], 1)
    tcls[b, best_n, gj, gi, labels] = 1.0
    return obj_mask, tbox, tcls


def yolo_step(lib, model, data):
    """The loss (1 - GIoU of the matched boxes, objectness and class BCEWithLogitsLoss with
    pos_weight), an SGD step and the scheduler's; then NMS of one image's detections."""
    nn = lib.nn
    images, targets = data["images"], data["targets"]
    device = images.device
    model.train()
    p, pbox = _yolo_forward(lib, model, images)
    obj_mask, tbox, tcls = build_targets(lib, model, targets, p.shape)
    tbox_xyxy = box_cxcywh_to_xyxy(lib, tbox[obj_mask])
    assert lib.allclose(box_xyxy_to_cxcywh(lib, tbox_xyxy), tbox[obj_mask], atol=1e-6)
    giou = lib.diag(generalized_box_iou(lib, box_cxcywh_to_xyxy(lib, pbox[obj_mask]), tbox_xyxy))
    lbox = (1.0 - giou).mean()
    bce_obj = nn.BCEWithLogitsLoss(pos_weight=lib.tensor([2.0], device=device))
    bce_cls = nn.BCEWithLogitsLoss(pos_weight=lib.tensor([1.0, 1.5, 0.5], device=device))
    lobj = bce_obj(p[..., 4], obj_mask.float())
    lcls = bce_cls(p[..., 5:][obj_mask], tcls[obj_mask])
    loss = 0.05 * lbox + lobj + 0.5 * lcls
    model.opt.zero_grad()
    loss.backward()
    model.opt.step()
    model.sched.step()

    model.eval()
    with lib.no_grad():
        p, pbox = _yolo_forward(lib, model, images)
        scores = (p[0, ..., 4].sigmoid() * p[0, ..., 5:].sigmoid().max(-1).values).flatten()
        boxes = box_cxcywh_to_xyxy(lib, pbox[0].reshape(-1, 4))
        keep = nms(lib, boxes, scores, 0.3)
    return lib.stack([loss.detach(), lbox.detach(), lobj.detach(), lcls.detach(),
                      lib.tensor(float(keep.numel()), device=device), scores[keep].sum(),
                      keep.float().sum()])



# Transformer-XL (kimiyoung/transformer-xl's mem_transformer.py): segment recurrence with
# memories and relative positional attention

def transformer_xl(lib, device, n_token=12, d_model=16, n_head=2, d_head=8, n_layer=2,
                   mem_len=4):
    """Relative multi-head attention (r_w_bias / r_r_bias, einsum with its operands in a tuple,
    the pad-and-view _rel_shift, a triu mask over query and memory keys), sinusoid positions
    from torch.ger of a descending arange, memories concatenated, cut and detached under
    no_grad."""
    nn, F = lib.nn, lib.nn.functional

    class PositionalEmbedding(nn.Module):
        def __init__(self, demb):
            super().__init__()
            inv_freq = 1 / (10000 ** (lib.arange(0.0, demb, 2.0) / demb))
            self.register_buffer("inv_freq", inv_freq)

        def forward(self, pos_seq, bsz=None):
            sinusoid_inp = lib.ger(pos_seq, self.inv_freq)
            pos_emb = lib.cat([sinusoid_inp.sin(), sinusoid_inp.cos()], dim=-1)
            if bsz is not None:
                return pos_emb[:, None, :].expand(-1, bsz, -1)
            return pos_emb[:, None, :]

    class RelPartialLearnableMultiHeadAttn(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv_net = nn.Linear(d_model, 3 * n_head * d_head, bias=False)
            self.r_net = nn.Linear(d_model, n_head * d_head, bias=False)
            self.o_net = nn.Linear(n_head * d_head, d_model, bias=False)
            self.layer_norm = nn.LayerNorm(d_model)
            self.scale = 1 / (d_head ** 0.5)

        def _rel_shift(self, x, zero_triu=False):
            zero_pad = lib.zeros((x.size(0), 1, *x.size()[2:]), device=x.device, dtype=x.dtype)
            x_padded = lib.cat([zero_pad, x], dim=1)
            x_padded = x_padded.view(x.size(1) + 1, x.size(0), *x.size()[2:])
            return x_padded[1:].view_as(x)

        def forward(self, w, r, r_w_bias, r_r_bias, attn_mask=None, mems=None):
            qlen, rlen, bsz = w.size(0), r.size(0), w.size(1)
            cat = lib.cat([mems, w], 0) if mems is not None else w
            w_heads, r_head_k = self.qkv_net(cat), self.r_net(r)
            w_head_q, w_head_k, w_head_v = lib.chunk(w_heads, 3, dim=-1)
            w_head_q = w_head_q[-qlen:]
            klen = w_head_k.size(0)
            w_head_q = w_head_q.view(qlen, bsz, n_head, d_head)
            w_head_k = w_head_k.view(klen, bsz, n_head, d_head)
            w_head_v = w_head_v.view(klen, bsz, n_head, d_head)
            r_head_k = r_head_k.view(rlen, n_head, d_head)
            rw_head_q = w_head_q + r_w_bias
            AC = lib.einsum("ibnd,jbnd->ijbn", (rw_head_q, w_head_k))
            rr_head_q = w_head_q + r_r_bias
            BD = self._rel_shift(lib.einsum("ibnd,jnd->ijbn", (rr_head_q, r_head_k)))
            attn_score = (AC + BD) * self.scale
            attn_score = attn_score.float().masked_fill(
                attn_mask[:, :, :, None], -float("inf")).type_as(attn_score)
            attn_prob = F.softmax(attn_score, dim=1)
            attn_vec = lib.einsum("ijbn,jbnd->ibnd", (attn_prob, w_head_v))
            attn_vec = attn_vec.contiguous().view(attn_vec.size(0), attn_vec.size(1),
                                                  n_head * d_head)
            return self.layer_norm(w + self.o_net(attn_vec))

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.dec_attn = RelPartialLearnableMultiHeadAttn()
            self.pos_ff = nn.Sequential(nn.Linear(d_model, 32), nn.ReLU(inplace=True),
                                        nn.Linear(32, d_model))
            self.ff_norm = nn.LayerNorm(d_model)

        def forward(self, dec_inp, r, r_w_bias, r_r_bias, dec_attn_mask=None, mems=None):
            out = self.dec_attn(dec_inp, r, r_w_bias, r_r_bias, attn_mask=dec_attn_mask,
                                mems=mems)
            return self.ff_norm(out + self.pos_ff(out))

    class MemTransformerLM(nn.Module):
        def __init__(self):
            super().__init__()
            self.word_emb = nn.Embedding(n_token, d_model)
            self.layers = nn.ModuleList([Layer() for _ in range(n_layer)])
            self.pos_emb = PositionalEmbedding(d_model)
            self.r_w_bias = nn.Parameter(lib.Tensor(n_head, d_head).normal_(0.0, 0.02))
            self.r_r_bias = nn.Parameter(lib.Tensor(n_head, d_head).normal_(0.0, 0.02))
            self.out = nn.Linear(d_model, n_token)

        def init_mems(self):
            param = next(self.parameters())
            return [lib.empty(0, dtype=param.dtype, device=param.device)
                    for _ in range(n_layer + 1)]

        def _update_mems(self, hids, mems, qlen, mlen):
            with lib.no_grad():
                new_mems = []
                end_idx = mlen + max(0, qlen)
                beg_idx = max(0, end_idx - mem_len)
                for i in range(len(hids)):
                    cat = lib.cat([mems[i], hids[i]], dim=0)
                    new_mems.append(cat[beg_idx:end_idx].detach())
            return new_mems

        def forward(self, data, target, *mems):
            if not mems:
                mems = self.init_mems()
            qlen, bsz = data.size()
            word_emb = self.word_emb(data)
            mlen = mems[0].size(0) if mems is not None else 0
            klen = mlen + qlen
            dec_attn_mask = lib.triu(word_emb.new_ones(qlen, klen),
                                     diagonal=1 + mlen).bool()[:, :, None]
            pos_seq = lib.arange(klen - 1, -1, -1.0, device=word_emb.device,
                                 dtype=word_emb.dtype)
            pos_emb = self.pos_emb(pos_seq)
            core_out, hids = word_emb, [word_emb]
            for i, layer in enumerate(self.layers):
                mems_i = None if mems is None else mems[i]
                core_out = layer(core_out, pos_emb, self.r_w_bias, self.r_r_bias,
                                 dec_attn_mask=dec_attn_mask, mems=mems_i)
                hids.append(core_out)
            new_mems = self._update_mems(hids, mems, mlen, qlen)
            logit = self.out(core_out)
            loss = F.cross_entropy(logit.view(-1, n_token), target.reshape(-1),
                                   reduction="none").view(qlen, bsz)
            return [loss] + new_mems

    model = MemTransformerLM()
    model.optimizer = lambda: lib.optim.Adam(model.parameters(), lr=2e-3)
    model.scheduler = lambda opt: lib.optim.lr_scheduler.CosineAnnealingLR(opt, 6, eta_min=0)
    return model


def transformer_xl_step(lib, model, data, tgt_len=3):
    """train.py's loop over one pass of the corpus in segments of tgt_len tokens, the
    memories carried from segment to segment (mems = ret[1:])."""
    tokens = data["tokens"].t().contiguous()  # (length, batch): sequence first
    mems, losses = tuple(), []
    for i in range(0, tokens.size(0) - 1, tgt_len):
        seq_len = min(tgt_len, tokens.size(0) - 1 - i)
        inp, target = tokens[i:i + seq_len], tokens[i + 1:i + 1 + seq_len]
        ret = model(inp, target, *mems)
        loss, mems = ret[0], ret[1:]
        loss = loss.float().mean().type_as(loss)
        model.opt.zero_grad()
        loss.backward()
        lib.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        model.opt.step()
        model.sched.step()
        losses.append(loss.detach())
    return lib.stack(losses + [mems[-1].square().mean()])


def _data(rng):
    """The synthetic inputs and random draws every case reads from, as numpy arrays."""
    return {"images": rng.random((4, 3, 8, 8)).astype(np.float32),
            "large": rng.random((4, 3, 12, 12)).astype(np.float32),
            "seg_images": rng.random((2, 3, 10, 11)).astype(np.float32),
            "masks": rng.integers(0, 3, (2, 10, 11)),
            "targets": _yolo_targets(rng),
            "tokens": rng.integers(0, 12, (2, 10)),
            "z": rng.standard_normal((4, 8)).astype(np.float32),
            "path_noise": rng.standard_normal((4, 3, 8, 8)).astype(np.float32),
            **_augment_arrays(rng)}


def _yolo_targets(rng, batch=4):
    """Two boxes per image, (image, class, cx, cy, w, h) normalized, their centres in the left
    and right halves so that no two share a grid cell."""
    rows = [[b, rng.integers(0, 3), k * 0.5 + rng.uniform(0.05, 0.45), rng.uniform(0.05, 0.95),
             rng.uniform(0.1, 0.5), rng.uniform(0.1, 0.5)] for b in range(batch) for k in range(2)]
    return np.array(rows, dtype=np.float32)


def _augment_arrays(rng, batch=4):
    """Two views' augmentation draws, made by the script's code from a torch Generator seeded
    from `rng` (genesis's generator draws other numbers: test_augment_params_draw_as_torch)."""
    g = torch.Generator().manual_seed(int(rng.integers(2 ** 31)))
    views = [augment_params(torch, g, batch, 8, 6, "cpu") for _ in range(2)]
    return {name: np.stack([v[i].numpy() for v in views])
            for i, name in enumerate(("top", "left", "flip", "jitter"))}


CASES = {
    "stylegan2": (stylegan2, stylegan2_step),
    "simclr": (simclr, simclr_step),
    "byol": (byol, byol_step),
    "dino": (dino, dino_step),
    "unet": (unet, unet_step),
    "unet_bilinear": (lambda lib, device: unet(lib, device, bilinear=True), unet_step),
    "yolo": (yolo, yolo_step),
    "transformer_xl": (transformer_xl, transformer_xl_step),
}


def _train(lib, build, data, step, initial=None, steps=3):
    """The case built with `lib` (given torch's `initial` state dict: loaded into it), its
    initial state, the losses of `steps` steps after making its optimizer (and scheduler), and
    the warnings that building and training gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        device = data["images"].device
        model = build(lib, device).to(device)  # the scripts' model.to(device)
        if initial is None:
            initial = {k: v.clone() for k, v in model.state_dict().items()}
        else:
            model.load_state_dict({k: lib.tensor(v.numpy(), device=device)
                                   for k, v in initial.items()})
        model.opt = model.optimizer()
        if hasattr(model, "scheduler"):
            model.sched = model.scheduler(model.opt)
        losses = np.stack([step(lib, model, data).detach().cpu().numpy() for _ in range(steps)])
    return initial, losses, [(w.category, str(w.message)) for w in caught]


def _float64_losses(build, step, initial, arrays, steps=3):
    """torch's losses from the same initial weights and data in float64 (the model, its
    buffers and, as the default dtype, the tensors the scripts make): a run apart from torch's
    float32 one by rounding alone."""
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = build(torch, "cpu")
            model.load_state_dict(initial)
            model.double()
            data = {k: torch.tensor(v.astype(np.float64) if v.dtype == np.float32 else v)
                    for k, v in arrays.items()}
            model.opt = model.optimizer()
            if hasattr(model, "scheduler"):
                model.sched = model.scheduler(model.opt)
            return np.stack([step(torch, model, data).detach().numpy() for _ in range(steps)])
    finally:
        torch.set_default_dtype(default)


@pytest.mark.parametrize("name", list(CASES))
def test_ported_ssl_generative_trains_as_torch(name, rng, device):
    """The case's losses in genesis, from torch's initial weights, within 2e-4 of torch's
    (widened by torch's own distance from its float64 run, from its run from weights one ulp
    above and from its run on data one ulp above: a GAN's or U-Net's few steps can amplify
    rounding, nn_compare.assert_trajectory_close; StyleGAN2's R1 penalty through the
    minibatch standard deviation of two nearly equal activations lands on one of two values
    by the rounding of their sum), with the same warnings."""
    build, step = CASES[name]
    arrays = _data(rng)
    initial, expected, torch_warnings = _train(torch, build, {k: torch.tensor(v)
                                                               for k, v in arrays.items()}, step)
    _, losses, got_warnings = _train(genesis, build, {k: genesis.tensor(v, device=device)
                                                      for k, v in arrays.items()}, step, initial)
    assert np.isfinite(expected).all()
    exact = _float64_losses(build, step, initial, arrays)
    nudged = {k: torch.from_numpy(np.nextafter(v.numpy(), np.inf)) if v.is_floating_point()
              else v for k, v in initial.items()}
    _, nudged_losses, _ = _train(torch, build, {k: torch.tensor(v) for k, v in arrays.items()},
                                 step, nudged)
    nudged_data = {k: torch.tensor(np.nextafter(v, np.inf) if v.dtype == np.float32 else v)
                   for k, v in arrays.items()}
    _, data_nudged_losses, _ = _train(torch, build, nudged_data, step, initial)
    assert_trajectory_close(losses.T, expected.T,
                            [exact.T, nudged_losses.T, data_nudged_losses.T])
    assert got_warnings == torch_warnings

def test_augment_params_draw_as_torch(rng, device):
    """The augmentations' draws from a seeded Generator on the input's device: the same seed
    replays them, the generator's state moves on, and they have torch's dtypes, shapes and
    ranges (genesis's generator draws other numbers than torch's, so the training cases take
    torch's draws)."""
    seed = int(rng.integers(2 ** 31))
    draws = [augment_params(genesis, genesis.Generator(device=device).manual_seed(seed), 64, 8,
                            6, device) for _ in range(2)]
    g = genesis.Generator(device=device).manual_seed(seed)
    augment_params(genesis, g, 64, 8, 6, device)
    later = augment_params(genesis, g, 64, 8, 6, device)
    expected = augment_params(torch, torch.Generator().manual_seed(seed), 64, 8, 6, "cpu")
    for a, b, c, t in zip(*draws, later, expected):
        assert genesis.equal(a, b) and not genesis.equal(a, c)
        assert str(a.dtype) == str(t.dtype).replace("torch", "genesis") and a.shape == t.shape
        assert a.device.type == genesis.device(device).type
    top, _, flip, jitter = draws[0]
    assert 0 <= top.min() and top.max() <= 2 and flip.any() and not flip.all()
    assert 0.6 <= jitter.min() and jitter.max() < 1.4


@pytest.mark.parametrize("n, threshold", [(1, 0.5), (37, 0.3), (200, 0.5), (64, 0.0)])
def test_nms_keeps_what_torch_keeps(n, threshold, rng, device):
    """The script's NMS on fresh overlapping boxes (from cx, cy, w, h): the same indices in the
    same order as torch's run of it, and its GIoU matrix within float32 rounding."""
    centres = rng.uniform(0, 10, (n, 2))
    sizes = rng.uniform(0.5, 4, (n, 2))
    cxcywh = np.concatenate([centres, sizes], 1).astype(np.float32)
    scores = rng.permutation(n).astype(np.float32) / n + 0.01 * rng.random(n, dtype=np.float32)
    kept, gious = [], []
    for lib, dev in ((torch, "cpu"), (genesis, device)):
        boxes = box_cxcywh_to_xyxy(lib, lib.tensor(cxcywh, device=dev))
        kept.append(nms(lib, boxes, lib.tensor(scores, device=dev), threshold).cpu().numpy())
        gious.append(generalized_box_iou(lib, boxes, boxes[: n // 2 + 1]).cpu().numpy())
    np.testing.assert_array_equal(kept[1], kept[0])
    assert kept[1].dtype == np.int64 and 0 < len(kept[0]) <= n
    np.testing.assert_allclose(gious[1], gious[0], rtol=1e-5, atol=1e-6)
