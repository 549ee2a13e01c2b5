"""Ported research scripts (NeRF, RealNVP and Glow flows, Mamba, KAN, PPO, RWKV): for each, the
smallest model using the API its reference code uses, written once against a framework
(`torch` or `genesis`) and trained a few steps from the same initial weights on the same
synthetic data in both; the losses must agree within 2e-4 relative in float32, and so must
what the case keeps beside them (rendered maps, inverse passes, generated tokens). Random
draws of the references (stratified and importance samples, prior samples, action choices,
minibatch orders) come with the data."""

import math
from collections import OrderedDict

import numpy as np
import pytest
import torch

import genesis
from nn_compare import (assert_kept_close, assert_trajectory_close, copy_module, kept_drifts,
                        neighbour_twins, run_case)

pytestmark = pytest.mark.usefixtures("cudnn_ieee")


# NeRF (nerf-pytorch): positional encoding, an MLP with a skip connection and view directions,
# volume rendering and hierarchical sampling by inverse transform of the coarse weights.

def _embedder(lib, multires):
    """sin/cos of 2^k x for k below `multires`, the input first."""
    freq_bands = 2.0 ** lib.linspace(0.0, multires - 1, steps=multires)
    fns = [lambda x: x]
    for freq in freq_bands:
        for p_fn in (lib.sin, lib.cos):
            fns.append(lambda x, p_fn=p_fn, freq=freq: p_fn(x * freq))
    return lambda x: lib.cat([fn(x) for fn in fns], -1), 3 + 3 * 2 * multires


def nerf(lib, device):
    """Coarse and fine NeRF MLPs (D=4, W=32, a skip after layer 2) over embedded points and
    view directions."""
    nn, F = lib.nn, lib.nn.functional

    class NeRF(nn.Module):
        def __init__(self, D=4, W=32, input_ch=27, input_ch_views=15, skips=(2,)):
            super().__init__()
            self.input_ch, self.input_ch_views, self.skips = input_ch, input_ch_views, skips
            self.pts_linears = nn.ModuleList(
                [nn.Linear(input_ch, W)] + [nn.Linear(W, W) if i not in skips
                                            else nn.Linear(W + input_ch, W)
                                            for i in range(D - 1)])
            self.views_linears = nn.ModuleList([nn.Linear(input_ch_views + W, W // 2)])
            self.feature_linear = nn.Linear(W, W)
            self.alpha_linear = nn.Linear(W, 1)
            self.rgb_linear = nn.Linear(W // 2, 3)

        def forward(self, x):
            input_pts, input_views = lib.split(x, [self.input_ch, self.input_ch_views], dim=-1)
            h = input_pts
            for i, _ in enumerate(self.pts_linears):
                h = F.relu(self.pts_linears[i](h))
                if i in self.skips:
                    h = lib.cat([input_pts, h], -1)
            alpha = self.alpha_linear(h)
            h = lib.cat([self.feature_linear(h), input_views], -1)
            for layer in self.views_linears:
                h = F.relu(layer(h))
            return lib.cat([self.rgb_linear(h), alpha], -1)

    class Renderer(nn.Module):
        def __init__(self):
            super().__init__()
            self.coarse, self.fine = NeRF(), NeRF()

    model = Renderer()
    model.embed_fn, _ = _embedder(lib, 4)
    model.embeddirs_fn, _ = _embedder(lib, 2)
    model.optimizer = lambda: lib.optim.Adam(model.parameters(), lr=5e-3, betas=(0.9, 0.999))
    return model


def _batchify(lib, fn, chunk):
    return lambda inputs: lib.cat([fn(inputs[i:i + chunk])
                                   for i in range(0, inputs.shape[0], chunk)], 0)


def _run_network(lib, inputs, viewdirs, fn, embed_fn, embeddirs_fn, netchunk=48):
    inputs_flat = lib.reshape(inputs, [-1, inputs.shape[-1]])
    embedded = embed_fn(inputs_flat)
    input_dirs = viewdirs[:, None].expand(inputs.shape)
    input_dirs_flat = lib.reshape(input_dirs, [-1, input_dirs.shape[-1]])
    embedded = lib.cat([embedded, embeddirs_fn(input_dirs_flat)], -1)
    outputs_flat = _batchify(lib, fn, netchunk)(embedded)
    return lib.reshape(outputs_flat, list(inputs.shape[:-1]) + [outputs_flat.shape[-1]])


def _raw2outputs(lib, raw, z_vals, rays_d, white_bkgd=True):
    """rgb, disparity, accumulated opacity, weights and depth along each ray."""
    F = lib.nn.functional
    raw2alpha = lambda raw, dists, act_fn=F.relu: 1. - lib.exp(-act_fn(raw) * dists)  # noqa
    dists = z_vals[..., 1:] - z_vals[..., :-1]
    dists = lib.cat([dists, lib.tensor([1e10], device=dists.device)
                     .expand(dists[..., :1].shape)], -1)
    dists = dists * lib.norm(rays_d[..., None, :], dim=-1)
    rgb = lib.sigmoid(raw[..., :3])
    alpha = raw2alpha(raw[..., 3], dists)
    weights = alpha * lib.cumprod(lib.cat([lib.ones((alpha.shape[0], 1), device=alpha.device),
                                           1. - alpha + 1e-10], -1), -1)[:, :-1]
    rgb_map = lib.sum(weights[..., None] * rgb, -2)
    depth_map = lib.sum(weights * z_vals, -1)
    disp_map = 1. / lib.max(1e-10 * lib.ones_like(depth_map), depth_map / lib.sum(weights, -1))
    acc_map = lib.sum(weights, -1)
    if white_bkgd:
        rgb_map = rgb_map + (1. - acc_map[..., None])
    return rgb_map, disp_map, acc_map, weights, depth_map


def _sample_pdf(lib, bins, weights, u):
    """Inverse-transform samples of the piecewise-constant pdf `weights` over `bins` at the
    uniforms `u` (the reference's torch.rand of the same shape)."""
    weights = weights + 1e-5
    pdf = weights / lib.sum(weights, -1, keepdim=True)
    cdf = lib.cumsum(pdf, -1)
    cdf = lib.cat([lib.zeros_like(cdf[..., :1]), cdf], -1)
    u = u.contiguous()
    inds = lib.searchsorted(cdf, u, right=True)
    below = lib.max(lib.zeros_like(inds - 1), inds - 1)
    above = lib.min((cdf.shape[-1] - 1) * lib.ones_like(inds), inds)
    inds_g = lib.stack([below, above], -1)
    matched_shape = [inds_g.shape[0], inds_g.shape[1], cdf.shape[-1]]
    cdf_g = lib.gather(cdf.unsqueeze(1).expand(matched_shape), 2, inds_g)
    bins_g = lib.gather(bins.unsqueeze(1).expand(matched_shape), 2, inds_g)
    denom = cdf_g[..., 1] - cdf_g[..., 0]
    denom = lib.where(denom < 1e-5, lib.ones_like(denom), denom)
    t = (u - cdf_g[..., 0]) / denom
    return bins_g[..., 0] + t * (bins_g[..., 1] - bins_g[..., 0])


def _render_rays(lib, model, rays_o, rays_d, t_rand, u, near=2.0, far=6.0):
    n_rays, n_samples = rays_o.shape[0], t_rand.shape[-1]
    viewdirs = rays_d / lib.norm(rays_d, dim=-1, keepdim=True)
    t_vals = lib.linspace(0., 1., steps=n_samples, device=rays_o.device)
    z_vals = (near * (1. - t_vals) + far * t_vals).expand([n_rays, n_samples])
    mids = .5 * (z_vals[..., 1:] + z_vals[..., :-1])
    upper = lib.cat([mids, z_vals[..., -1:]], -1)
    lower = lib.cat([z_vals[..., :1], mids], -1)
    z_vals = lower + (upper - lower) * t_rand
    pts = rays_o[..., None, :] + rays_d[..., None, :] * z_vals[..., :, None]
    raw = _run_network(lib, pts, viewdirs, model.coarse, model.embed_fn, model.embeddirs_fn)
    rgb_map_0, disp_map_0, acc_map_0, weights, _ = _raw2outputs(lib, raw, z_vals, rays_d)
    z_vals_mid = .5 * (z_vals[..., 1:] + z_vals[..., :-1])
    z_samples = _sample_pdf(lib, z_vals_mid, weights[..., 1:-1].detach(), u).detach()
    z_vals, _ = lib.sort(lib.cat([z_vals, z_samples], -1), -1)
    pts = rays_o[..., None, :] + rays_d[..., None, :] * z_vals[..., :, None]
    raw = _run_network(lib, pts, viewdirs, model.fine, model.embed_fn, model.embeddirs_fn)
    rgb_map, disp_map, acc_map, _, depth_map = _raw2outputs(lib, raw, z_vals, rays_d)
    return {"rgb_map": rgb_map, "disp_map": disp_map, "acc_map": acc_map, "rgb0": rgb_map_0,
            "depth_map": depth_map, "z_samples": z_samples}


def nerf_step(lib, model, data):
    img2mse = lambda x, y: lib.mean((x - y) ** 2)  # noqa: E731
    mse2psnr = lambda x: -10. * lib.log(x) / lib.log(lib.Tensor([10.]).to(x.device))  # noqa
    step = getattr(model, "global_step", 0)
    out = _render_rays(lib, model, data["rays_o"], data["rays_d"], data["t_rand"][step],
                       data["u"][step])
    img_loss = img2mse(out["rgb_map"], data["target"])
    loss = img_loss + img2mse(out["rgb0"], data["target"])
    model.psnr = mse2psnr(img_loss)
    model.opt.zero_grad()
    loss.backward()
    model.opt.step()
    new_lrate = 5e-3 * (0.1 ** ((step + 1) / 250))
    for param_group in model.opt.param_groups:
        param_group["lr"] = new_lrate
    model.global_step = step + 1
    return loss


def nerf_keeps(lib, model, data):
    with lib.no_grad():
        out = _render_rays(lib, model, data["rays_o"], data["rays_d"], data["t_rand"][-1],
                           data["u"][-1])
    return [out[k] for k in ("rgb_map", "disp_map", "acc_map", "depth_map", "z_samples")] + [
        model.psnr]


# RealNVP on two-dimensional data: alternating masks, scale and translation networks, a
# MultivariateNormal prior; the forward pass g maps prior samples to data.

def realnvp(lib, device):
    nn = lib.nn

    class RealNVP(nn.Module):
        def __init__(self, nets, nett, mask, prior):
            super().__init__()
            self.prior = prior
            self.mask = nn.Parameter(mask, requires_grad=False)
            self.t = nn.ModuleList([nett() for _ in range(len(mask))])
            self.s = nn.ModuleList([nets() for _ in range(len(mask))])

        def g(self, z):
            x = z
            for i in range(len(self.t)):
                x_ = x * self.mask[i]
                s = self.s[i](x_) * (1 - self.mask[i])
                t = self.t[i](x_) * (1 - self.mask[i])
                x = x_ + (1 - self.mask[i]) * (x * lib.exp(s) + t)
            return x

        def f(self, x):
            log_det_J, z = x.new_zeros(x.shape[0]), x
            for i in reversed(range(len(self.t))):
                z_ = self.mask[i] * z
                s = self.s[i](z_) * (1 - self.mask[i])
                t = self.t[i](z_) * (1 - self.mask[i])
                z = (1 - self.mask[i]) * (z - t) * lib.exp(-s) + z_
                log_det_J -= s.sum(dim=1)
            return z, log_det_J

        def log_prob(self, x):
            z, logp = self.f(x)
            return self.prior.log_prob(z) + logp

    nets = lambda: nn.Sequential(nn.Linear(2, 32), nn.LeakyReLU(), nn.Linear(32, 32),  # noqa
                                 nn.LeakyReLU(), nn.Linear(32, 2), nn.Tanh())
    nett = lambda: nn.Sequential(nn.Linear(2, 32), nn.LeakyReLU(), nn.Linear(32, 32),  # noqa
                                 nn.LeakyReLU(), nn.Linear(32, 2))
    masks = lib.from_numpy(np.array([[0, 1], [1, 0]] * 3).astype(np.float32))
    prior = lib.distributions.MultivariateNormal(lib.zeros(2, device=device),
                                                 lib.eye(2, device=device))
    model = RealNVP(nets, nett, masks, prior)
    model.optimizer = lambda: lib.optim.Adam(
        [p for p in model.parameters() if p.requires_grad == True], lr=1e-3)  # noqa: E712
    return model


def realnvp_step(lib, model, data):
    loss = -model.log_prob(data["moons"]).mean()
    model.opt.zero_grad()
    loss.backward(retain_graph=True)
    model.opt.step()
    return loss


def realnvp_keeps(lib, model, data):
    with lib.no_grad():
        z = data["moons"].new_tensor(data["z2"])
        x = model.g(z)
        back, logdet = model.f(x)
    return [x, back, logdet, model.prior.log_prob(z)]


# Glow: ActNorm with data-dependent initialization, an invertible 1x1 convolution
# parametrized by its LU factors (and one by its full matrix through slogdet), affine coupling
# with zero-initialized output convolutions, a squeeze, a learned prior; reverse() samples.

def _logabs(lib, x):
    return lib.log(lib.abs(x))


def _gaussian_log_p(x, mean, log_sd):
    return -0.5 * math.log(2 * math.pi) - log_sd - 0.5 * (x - mean) ** 2 / (2 * log_sd).exp()


def glow(lib, device):
    nn, F = lib.nn, lib.nn.functional

    class ActNorm(nn.Module):
        def __init__(self, in_channel):
            super().__init__()
            self.loc = nn.Parameter(lib.zeros(1, in_channel, 1, 1))
            self.scale = nn.Parameter(lib.ones(1, in_channel, 1, 1))
            self.register_buffer("initialized", lib.tensor(0, dtype=lib.uint8))

        def initialize(self, input):
            with lib.no_grad():
                flatten = input.permute(1, 0, 2, 3).contiguous().view(input.shape[1], -1)
                mean = flatten.mean(1).unsqueeze(1).unsqueeze(2).unsqueeze(3).permute(1, 0, 2, 3)
                std = flatten.std(1).unsqueeze(1).unsqueeze(2).unsqueeze(3).permute(1, 0, 2, 3)
                self.loc.data.copy_(-mean)
                self.scale.data.copy_(1 / (std + 1e-6))

        def forward(self, input):
            _, _, height, width = input.shape
            if self.initialized.item() == 0:
                self.initialize(input)
                self.initialized.fill_(1)
            logdet = height * width * lib.sum(_logabs(lib, self.scale))
            return self.scale * (input + self.loc), logdet

        def reverse(self, output):
            return output / self.scale - self.loc

    class InvConv2d(nn.Module):
        def __init__(self, in_channel):
            super().__init__()
            weight = lib.randn(in_channel, in_channel)
            q, _ = lib.linalg.qr(weight)
            self.weight = nn.Parameter(q.unsqueeze(2).unsqueeze(3))

        def forward(self, input):
            _, _, height, width = input.shape
            out = F.conv2d(input, self.weight)
            logdet = height * width * lib.slogdet(self.weight.squeeze().double())[1].float()
            return out, logdet

        def reverse(self, output):
            return F.conv2d(output, self.weight.squeeze().inverse().unsqueeze(2).unsqueeze(3))

    class InvConv2dLU(nn.Module):
        def __init__(self, in_channel):
            super().__init__()
            q, _ = lib.linalg.qr(lib.randn(in_channel, in_channel))
            w_p, w_l, w_u = lib.linalg.lu(q)
            w_s = lib.diag(w_u)
            w_u = lib.triu(w_u, 1)
            u_mask = lib.triu(lib.ones_like(w_u), 1)
            l_mask = u_mask.T
            self.register_buffer("w_p", w_p)
            self.register_buffer("u_mask", u_mask)
            self.register_buffer("l_mask", l_mask)
            self.register_buffer("s_sign", lib.sign(w_s))
            self.register_buffer("l_eye", lib.eye(l_mask.shape[0]))
            self.w_l = nn.Parameter(w_l)
            self.w_s = nn.Parameter(_logabs(lib, w_s))
            self.w_u = nn.Parameter(w_u)

        def calc_weight(self):
            weight = (self.w_p @ (self.w_l * self.l_mask + self.l_eye)
                      @ ((self.w_u * self.u_mask) + lib.diag(self.s_sign * lib.exp(self.w_s))))
            return weight.unsqueeze(2).unsqueeze(3)

        def forward(self, input):
            _, _, height, width = input.shape
            out = F.conv2d(input, self.calc_weight())
            return out, height * width * lib.sum(self.w_s)

        def reverse(self, output):
            weight = self.calc_weight()
            return F.conv2d(output, weight.squeeze().inverse().unsqueeze(2).unsqueeze(3))

    class ZeroConv2d(nn.Module):
        def __init__(self, in_channel, out_channel):
            super().__init__()
            self.conv = nn.Conv2d(in_channel, out_channel, 3, padding=0)
            self.conv.weight.data.zero_()
            self.conv.bias.data.zero_()
            self.scale = nn.Parameter(lib.zeros(1, out_channel, 1, 1))

        def forward(self, input):
            out = F.pad(input, [1, 1, 1, 1], value=1)
            return self.conv(out) * lib.exp(self.scale * 3)

    class AffineCoupling(nn.Module):
        def __init__(self, in_channel, filter_size=16):
            super().__init__()
            self.net = nn.Sequential(nn.Conv2d(in_channel // 2, filter_size, 3, padding=1),
                                     nn.ReLU(inplace=True), nn.Conv2d(filter_size, filter_size, 1),
                                     nn.ReLU(inplace=True), ZeroConv2d(filter_size, in_channel))
            self.net[0].weight.data.normal_(0, 0.05)
            self.net[0].bias.data.zero_()
            self.net[2].weight.data.normal_(0, 0.05)
            self.net[2].bias.data.zero_()

        def forward(self, input):
            in_a, in_b = input.chunk(2, 1)
            log_s, t = self.net(in_a).chunk(2, 1)
            s = F.sigmoid(log_s + 2)
            out_b = (in_b + t) * s
            logdet = lib.sum(lib.log(s).view(input.shape[0], -1), 1)
            return lib.cat([in_a, out_b], 1), logdet

        def reverse(self, output):
            out_a, out_b = output.chunk(2, 1)
            log_s, t = self.net(out_a).chunk(2, 1)
            s = F.sigmoid(log_s + 2)
            return lib.cat([out_a, out_b / s - t], 1)

    class Flow(nn.Module):
        def __init__(self, in_channel, conv_lu):
            super().__init__()
            self.actnorm = ActNorm(in_channel)
            self.invconv = InvConv2dLU(in_channel) if conv_lu else InvConv2d(in_channel)
            self.coupling = AffineCoupling(in_channel)

        def forward(self, input):
            out, logdet = self.actnorm(input)
            out, det1 = self.invconv(out)
            out, det2 = self.coupling(out)
            logdet = logdet + det1
            if det2 is not None:
                logdet = logdet + det2
            return out, logdet

        def reverse(self, output):
            return self.actnorm.reverse(self.invconv.reverse(self.coupling.reverse(output)))

    class Glow(nn.Module):
        def __init__(self, in_channel=3):
            super().__init__()
            squeeze_dim = in_channel * 4
            self.flows = nn.ModuleList([Flow(squeeze_dim, conv_lu=True),
                                        Flow(squeeze_dim, conv_lu=False)])
            self.prior = ZeroConv2d(squeeze_dim, squeeze_dim * 2)

        def forward(self, input):
            b_size, n_channel, height, width = input.shape
            squeezed = input.view(b_size, n_channel, height // 2, 2, width // 2, 2)
            squeezed = squeezed.permute(0, 1, 3, 5, 2, 4)
            out = squeezed.contiguous().view(b_size, n_channel * 4, height // 2, width // 2)
            logdet = 0
            for flow in self.flows:
                out, det = flow(out)
                logdet = logdet + det
            mean, log_sd = self.prior(lib.zeros_like(out)).chunk(2, 1)
            log_p = _gaussian_log_p(out, mean, log_sd).view(b_size, -1).sum(1)
            return log_p, logdet, out

        def reverse(self, eps):
            mean, log_sd = self.prior(lib.zeros_like(eps)).chunk(2, 1)
            input = mean + lib.exp(log_sd) * eps
            for flow in self.flows[::-1]:
                input = flow.reverse(input)
            b_size, n_channel, height, width = input.shape
            unsqueezed = input.view(b_size, n_channel // 4, 2, 2, height, width)
            unsqueezed = unsqueezed.permute(0, 1, 4, 2, 5, 3)
            return unsqueezed.contiguous().view(b_size, n_channel // 4, height * 2, width * 2)

    model = Glow()
    model.optimizer = lambda: lib.optim.Adam(model.parameters(), lr=1e-3)
    return model


def glow_step(lib, model, data, n_bins=32.0):
    image = data["images"]
    image = lib.floor(image * 255 / 2 ** 3) / n_bins - 0.5
    log_p, logdet, _ = model(image + data["dequant"] / n_bins)
    n_pixel = image.shape[1] * image.shape[2] * image.shape[3]
    loss = -math.log(n_bins) * n_pixel
    loss = loss + logdet.mean() + log_p
    loss = (-loss / (math.log(2) * n_pixel)).mean()
    model.opt.zero_grad()
    loss.backward()
    model.opt.step()
    return loss


def glow_keeps(lib, model, data):
    with lib.no_grad():
        sample = model.reverse(data["noise"][:, :, ::2, ::2].repeat(1, 4, 1, 1) * 0.7)
        _, _, z = model(sample)
    # the scales, data-initialized; not the offsets, which Adam walks by the signs of gradients
    # that are zero but for rounding (the data-initialized offsets center the batch)
    return [sample, z] + [model.flows[i].actnorm.scale for i in range(2)]


# Mamba in pure PyTorch (mamba-minimal): a selective state space scan by a Python loop over
# time, a depthwise causal convolution, RMSNorm, a tied embedding head.

# mamba.py's parallel scan (Blelloch's up and down sweeps, in place on strided views of the
# coefficients, padded to a power of two), as a custom autograd.Function with its reverse
# scan for the gradient.

def _npo2(length):
    return 2 ** math.ceil(math.log2(length))


def _pad_npo2(lib, X):
    return lib.nn.functional.pad(X, (0, 0, 0, 0, 0, _npo2(X.size(1)) - X.size(1)), "constant", 0)


def _sweep_up(Aa, Xa, steps, into, source):
    """The up-sweep both directions share: in each pair of the current level, element `into`
    takes in element `source`; the next level is the `into` elements."""
    B, D = Aa.shape[:2]
    for _ in range(steps):
        T = Xa.size(2)
        Aa = Aa.view(B, D, T // 2, 2, -1)
        Xa = Xa.view(B, D, T // 2, 2, -1)
        Xa[:, :, :, into].add_(Aa[:, :, :, into].mul(Xa[:, :, :, source]))
        Aa[:, :, :, into].mul_(Aa[:, :, :, source])
        Aa, Xa = Aa[:, :, :, into], Xa[:, :, :, into]
    return Aa, Xa


def _pscan(A, X):
    """h[t] = A[t] h[t-1] + X[t] along dim 2 of (B, D, L, N), in place in X (A is clobbered)."""
    B, D, L, _ = A.size()
    num_steps = int(math.log2(L))
    Aa, Xa = _sweep_up(A, X, num_steps - 2, 1, 0)
    if Xa.size(2) == 4:
        Xa[:, :, 1].add_(Aa[:, :, 1].mul(Xa[:, :, 0]))
        Aa[:, :, 1].mul_(Aa[:, :, 0])
        Xa[:, :, 3].add_(Aa[:, :, 3].mul(Xa[:, :, 2] + Aa[:, :, 2].mul(Xa[:, :, 1])))
    elif Xa.size(2) == 2:
        Xa[:, :, 1].add_(Aa[:, :, 1].mul(Xa[:, :, 0]))
        return
    else:
        return
    Aa = A[:, :, 2 ** (num_steps - 2) - 1:L:2 ** (num_steps - 2)]
    Xa = X[:, :, 2 ** (num_steps - 2) - 1:L:2 ** (num_steps - 2)]
    Xa[:, :, 2].add_(Aa[:, :, 2].mul(Xa[:, :, 1]))
    Aa[:, :, 2].mul_(Aa[:, :, 1])
    for k in range(num_steps - 3, -1, -1):
        Aa = A[:, :, 2 ** k - 1:L:2 ** k]
        Xa = X[:, :, 2 ** k - 1:L:2 ** k]
        T = Xa.size(2)
        Aa = Aa.view(B, D, T // 2, 2, -1)
        Xa = Xa.view(B, D, T // 2, 2, -1)
        Xa[:, :, 1:, 0].add_(Aa[:, :, 1:, 0].mul(Xa[:, :, :-1, 1]))
        Aa[:, :, 1:, 0].mul_(Aa[:, :, :-1, 1])


def _pscan_rev(A, X):
    """The scan from the end: h[t] = A[t] h[t+1] + X[t], in place in X."""
    B, D, L, _ = A.size()
    num_steps = int(math.log2(L))
    Aa, Xa = _sweep_up(A, X, num_steps - 2, 0, 1)
    if Xa.size(2) == 4:
        Xa[:, :, 2].add_(Aa[:, :, 2].mul(Xa[:, :, 3]))
        Aa[:, :, 2].mul_(Aa[:, :, 3])
        Xa[:, :, 0].add_(Aa[:, :, 0].mul(Xa[:, :, 1].add(Aa[:, :, 1].mul(Xa[:, :, 2]))))
    elif Xa.size(2) == 2:
        Xa[:, :, 0].add_(Aa[:, :, 0].mul(Xa[:, :, 1]))
        return
    else:
        return
    Aa = A[:, :, 0:L:2 ** (num_steps - 2)]
    Xa = X[:, :, 0:L:2 ** (num_steps - 2)]
    Xa[:, :, 1].add_(Aa[:, :, 1].mul(Xa[:, :, 2]))
    Aa[:, :, 1].mul_(Aa[:, :, 2])
    for k in range(num_steps - 3, -1, -1):
        Aa = A[:, :, 0:L:2 ** k]
        Xa = X[:, :, 0:L:2 ** k]
        T = Xa.size(2)
        Aa = Aa.view(B, D, T // 2, 2, -1)
        Xa = Xa.view(B, D, T // 2, 2, -1)
        Xa[:, :, :-1, 1].add_(Aa[:, :, :-1, 1].mul(Xa[:, :, 1:, 0]))
        Aa[:, :, :-1, 1].mul_(Aa[:, :, 1:, 0])


def _pscan_function(lib):
    class PScan(lib.autograd.Function):
        @staticmethod
        def forward(ctx, A_in, X_in):
            L = X_in.size(1)
            if L == _npo2(L):
                A, X = A_in.clone(), X_in.clone()
            else:
                A, X = _pad_npo2(lib, A_in), _pad_npo2(lib, X_in)
            A, X = A.transpose(2, 1), X.transpose(2, 1)
            _pscan(A, X)
            ctx.save_for_backward(A_in, X)
            return X.transpose(2, 1)[:, :L]

        @staticmethod
        def backward(ctx, grad_output_in):
            A_in, X = ctx.saved_tensors
            L = grad_output_in.size(1)
            if L == _npo2(L):
                grad_output = grad_output_in.clone()
            else:
                grad_output = _pad_npo2(lib, grad_output_in)
                A_in = _pad_npo2(lib, A_in)
            grad_output = grad_output.transpose(2, 1)
            A_in = A_in.transpose(2, 1)
            A = lib.nn.functional.pad(A_in[:, :, 1:], (0, 0, 0, 1))
            _pscan_rev(A, grad_output)
            Q = lib.zeros_like(X)
            Q[:, :, 1:].add_(X[:, :, :-1] * grad_output[:, :, 1:])
            return Q.transpose(2, 1)[:, :L], grad_output.transpose(2, 1)[:, :L]

    return PScan.apply


def mamba(lib, device, d_model=16, n_layer=2, vocab=11, d_state=4, expand=2, d_conv=4,
          pscan=False):
    nn, F = lib.nn, lib.nn.functional
    d_inner = expand * d_model
    dt_rank = math.ceil(d_model / 16)

    class RMSNorm(nn.Module):
        def __init__(self, d_model, eps=1e-5):
            super().__init__()
            self.eps = eps
            self.weight = nn.Parameter(lib.ones(d_model))

        def forward(self, x):
            return x * lib.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight

    class MambaBlock(nn.Module):
        def __init__(self):
            super().__init__()
            self.in_proj = nn.Linear(d_model, d_inner * 2, bias=False)
            self.conv1d = nn.Conv1d(in_channels=d_inner, out_channels=d_inner, bias=True,
                                    kernel_size=d_conv, groups=d_inner, padding=d_conv - 1)
            self.x_proj = nn.Linear(d_inner, dt_rank + d_state * 2, bias=False)
            self.dt_proj = nn.Linear(dt_rank, d_inner, bias=True)
            dt_init_std = dt_rank ** -0.5
            nn.init.uniform_(self.dt_proj.weight, -dt_init_std, dt_init_std)
            dt = lib.exp(lib.rand(d_inner) * (math.log(0.1) - math.log(0.001))
                         + math.log(0.001)).clamp(min=1e-4)
            inv_dt = dt + lib.log(-lib.expm1(-dt))
            with lib.no_grad():
                self.dt_proj.bias.copy_(inv_dt)
            A = lib.arange(1, d_state + 1).unsqueeze(0).repeat(d_inner, 1)
            self.A_log = nn.Parameter(lib.log(A))
            self.D = nn.Parameter(lib.ones(d_inner))
            self.out_proj = nn.Linear(d_inner, d_model, bias=False)

        def forward(self, x):
            (b, l, d) = x.shape
            x_and_res = self.in_proj(x)
            (x, res) = x_and_res.split(split_size=[d_inner, d_inner], dim=-1)
            x = x.transpose(1, 2)
            x = self.conv1d(x)[:, :, :l]
            x = x.transpose(1, 2)
            x = F.silu(x)
            y = self.ssm(x)
            y = y * F.silu(res)
            return self.out_proj(y)

        def ssm(self, x):
            (d_in, n) = self.A_log.shape
            A = -lib.exp(self.A_log.float())
            D = self.D.float()
            x_dbl = self.x_proj(x)
            (delta, B, C) = x_dbl.split(split_size=[dt_rank, n, n], dim=-1)
            delta = F.softplus(self.dt_proj(delta))
            return self.selective_scan(x, delta, A, B, C, D)

        def selective_scan(self, u, delta, A, B, C, D):
            if pscan:  # mamba.py's form
                deltaA = lib.exp(delta.unsqueeze(-1) * A)
                BX = delta.unsqueeze(-1) * B.unsqueeze(2) * u.unsqueeze(-1)
                hs = _pscan_function(lib)(deltaA, BX)
                return (hs @ C.unsqueeze(-1)).squeeze(3) + D * u
            (b, l, d_in) = u.shape
            n = A.shape[1]
            deltaA = lib.exp(lib.einsum("bld,dn->bldn", delta, A))
            deltaB_u = lib.einsum("bld,bln,bld->bldn", delta, B, u)
            x = lib.zeros((b, d_in, n), device=deltaA.device)
            ys = []
            for i in range(l):
                x = deltaA[:, i] * x + deltaB_u[:, i]
                y = lib.einsum("bdn,bn->bd", x, C[:, i, :])
                ys.append(y)
            y = lib.stack(ys, dim=1)
            return y + u * D

    class ResidualBlock(nn.Module):
        def __init__(self):
            super().__init__()
            self.mixer = MambaBlock()
            self.norm = RMSNorm(d_model)

        def forward(self, x):
            return self.mixer(self.norm(x)) + x

    class Mamba(nn.Module):
        def __init__(self):
            super().__init__()
            self.embedding = nn.Embedding(vocab, d_model)
            self.layers = nn.ModuleList([ResidualBlock() for _ in range(n_layer)])
            self.norm_f = RMSNorm(d_model)
            self.lm_head = nn.Linear(d_model, vocab, bias=False)
            self.lm_head.weight = self.embedding.weight

        def forward(self, input_ids):
            x = self.embedding(input_ids)
            for layer in self.layers:
                x = layer(x)
            return self.lm_head(self.norm_f(x))

    model = Mamba()
    model.optimizer = lambda: lib.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.1)
    return model


def mamba_step(lib, model, data):
    tokens = data["tokens"]
    logits = model(tokens[:, :-1])
    loss = lib.nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)),
                                           tokens[:, 1:].reshape(-1))
    model.opt.zero_grad()
    loss.backward()
    model.opt.step()
    return loss


def pscan_keeps(lib, model, data):
    """mamba-minimal's generation, and the parallel scan of an odd length (padded) against the
    loop, values and gradients."""
    kept = mamba_keeps(lib, model, data)
    A = data["images"][:2, :, :5, :4].transpose(1, 2).detach().requires_grad_()
    X = data["noise"][:2, :, 1:6, 2:6].transpose(1, 2).detach().requires_grad_()
    hs = _pscan_function(lib)(A, X)
    h, loop = lib.zeros_like(X[:, 0]), []
    for t in range(X.size(1)):
        h = A[:, t] * h + X[:, t]
        loop.append(h)
    loop = lib.stack(loop, 1)
    assert lib.allclose(hs, loop, atol=1e-6)
    weights = lib.linspace(-1, 1, hs.numel(), device=hs.device).reshape(hs.shape)
    grads = lib.autograd.grad((hs * weights).sum(), (A, X))
    for a, b in zip(grads, lib.autograd.grad((loop * weights).sum(), (A, X))):
        assert lib.allclose(a, b, atol=1e-5)
    return kept + [hs.detach(), *grads]


def mamba_keeps(lib, model, data, top_k=3, n_tokens=3):
    """mamba-minimal's generate, the top-k filtered distribution's argmax in place of a draw."""
    input_ids = data["tokens"][:, :4]
    kept = []
    with lib.no_grad():
        for _ in range(n_tokens):
            next_token_logits = model(input_ids)[:, -1]
            probs = lib.nn.functional.softmax(next_token_logits, dim=-1)
            (values, indices) = lib.topk(probs, k=top_k)
            probs[probs < values[:, -1, None]] = 0
            probs = probs / probs.sum(axis=1, keepdims=True)
            next_indices = probs.argmax(dim=-1, keepdim=True)
            input_ids = lib.cat([input_ids, next_indices], dim=1)
            kept.append(probs)
    return kept + [input_ids]


# KAN (efficient-kan): B-spline bases by the Cox-de Boor recursion, base and spline weights,
# coefficients fitted by least squares, grid updates from data, a regularization loss.

def kan(lib, device):
    nn, F = lib.nn, lib.nn.functional

    class KANLinear(nn.Module):
        def __init__(self, in_features, out_features, grid_size=5, spline_order=3,
                     scale_noise=0.1, scale_base=1.0, scale_spline=1.0,
                     base_activation=nn.SiLU, grid_eps=0.02, grid_range=(-1, 1)):
            super().__init__()
            self.in_features, self.out_features = in_features, out_features
            self.grid_size, self.spline_order = grid_size, spline_order
            h = (grid_range[1] - grid_range[0]) / grid_size
            grid = ((lib.arange(-spline_order, grid_size + spline_order + 1) * h
                     + grid_range[0]).expand(in_features, -1).contiguous())
            self.register_buffer("grid", grid)
            self.base_weight = nn.Parameter(lib.Tensor(out_features, in_features))
            self.spline_weight = nn.Parameter(
                lib.Tensor(out_features, in_features, grid_size + spline_order))
            self.spline_scaler = nn.Parameter(lib.Tensor(out_features, in_features))
            self.scale_noise, self.scale_base = scale_noise, scale_base
            self.scale_spline = scale_spline
            self.base_activation = base_activation()
            self.grid_eps = grid_eps
            self.reset_parameters()

        def reset_parameters(self):
            nn.init.kaiming_uniform_(self.base_weight, a=math.sqrt(5) * self.scale_base)
            with lib.no_grad():
                noise = ((lib.rand(self.grid_size + 1, self.in_features, self.out_features)
                          - 1 / 2) * self.scale_noise / self.grid_size)
                self.spline_weight.data.copy_(self.curve2coeff(
                    self.grid.T[self.spline_order:-self.spline_order], noise))
                nn.init.kaiming_uniform_(self.spline_scaler, a=math.sqrt(5) * self.scale_spline)

        def b_splines(self, x):
            assert x.dim() == 2 and x.size(1) == self.in_features
            grid = self.grid
            x = x.unsqueeze(-1)
            bases = ((x >= grid[:, :-1]) & (x < grid[:, 1:])).to(x.dtype)
            for k in range(1, self.spline_order + 1):
                bases = (((x - grid[:, : -(k + 1)]) / (grid[:, k:-1] - grid[:, : -(k + 1)])
                          * bases[:, :, :-1])
                         + ((grid[:, k + 1:] - x) / (grid[:, k + 1:] - grid[:, 1:(-k)])
                            * bases[:, :, 1:]))
            assert bases.size() == (x.size(0), self.in_features,
                                    self.grid_size + self.spline_order)
            return bases.contiguous()

        def curve2coeff(self, x, y):
            A = self.b_splines(x).transpose(0, 1)
            B = y.transpose(0, 1)
            solution = lib.linalg.lstsq(A, B).solution
            return solution.permute(2, 0, 1).contiguous()

        @property
        def scaled_spline_weight(self):
            return self.spline_weight * self.spline_scaler.unsqueeze(-1)

        def forward(self, x):
            original_shape = x.shape
            x = x.reshape(-1, self.in_features)
            base_output = F.linear(self.base_activation(x), self.base_weight)
            spline_output = F.linear(self.b_splines(x).view(x.size(0), -1),
                                     self.scaled_spline_weight.view(self.out_features, -1))
            output = base_output + spline_output
            return output.reshape(*original_shape[:-1], self.out_features)

        @lib.no_grad()
        def update_grid(self, x, margin=0.01):
            batch = x.size(0)
            splines = self.b_splines(x).permute(1, 0, 2)
            orig_coeff = self.scaled_spline_weight.permute(1, 2, 0)
            unreduced_spline_output = lib.bmm(splines, orig_coeff).permute(1, 0, 2)
            x_sorted = lib.sort(x, dim=0)[0]
            grid_adaptive = x_sorted[lib.linspace(0, batch - 1, self.grid_size + 1,
                                                  dtype=lib.int64, device=x.device)]
            uniform_step = (x_sorted[-1] - x_sorted[0] + 2 * margin) / self.grid_size
            grid_uniform = (lib.arange(self.grid_size + 1, dtype=lib.float32, device=x.device)
                            .unsqueeze(1) * uniform_step + x_sorted[0] - margin)
            grid = self.grid_eps * grid_uniform + (1 - self.grid_eps) * grid_adaptive
            grid = lib.concatenate([
                grid[:1] - uniform_step * lib.arange(self.spline_order, 0, -1,
                                                     device=x.device).unsqueeze(1),
                grid,
                grid[-1:] + uniform_step * lib.arange(1, self.spline_order + 1,
                                                      device=x.device).unsqueeze(1)], dim=0)
            self.grid.copy_(grid.T)
            self.spline_weight.data.copy_(self.curve2coeff(x, unreduced_spline_output))

        def regularization_loss(self, regularize_activation=1.0, regularize_entropy=1.0):
            l1_fake = self.spline_weight.abs().mean(-1)
            regularization_loss_activation = l1_fake.sum()
            p = l1_fake / regularization_loss_activation
            regularization_loss_entropy = -lib.sum(p * p.log())
            return (regularize_activation * regularization_loss_activation
                    + regularize_entropy * regularization_loss_entropy)

    class KAN(nn.Module):
        def __init__(self, layers_hidden):
            super().__init__()
            self.layers = nn.ModuleList([KANLinear(i, o) for i, o in
                                         zip(layers_hidden, layers_hidden[1:])])

        def forward(self, x, update_grid=False):
            for layer in self.layers:
                if update_grid:
                    layer.update_grid(x)
                x = layer(x)
            return x

        def regularization_loss(self, regularize_activation=1.0, regularize_entropy=1.0):
            return sum(layer.regularization_loss(regularize_activation, regularize_entropy)
                       for layer in self.layers)

    model = KAN([4, 6, 3])
    model.optimizer = lambda: lib.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=1e-4)
    model.scheduler = lambda opt: lib.optim.lr_scheduler.ExponentialLR(opt, gamma=0.8)
    return model


def kan_step(lib, model, data):
    step = getattr(model, "global_step", 0)
    x = data["features"] * 0.9
    output = model(x, update_grid=step == 2)
    loss = (lib.nn.functional.cross_entropy(output, data["classes"])
            + 1e-3 * model.regularization_loss())
    model.opt.zero_grad()
    loss.backward()
    model.opt.step()
    model.sched.step()
    model.global_step = step + 1
    return loss


def kan_keeps(lib, model, data):
    with lib.no_grad():
        out = model(data["features"] * 0.9)
    return [out] + [layer.grid for layer in model.layers] + [model.layers[0].spline_weight]


# PPO (CleanRL style) on a small chain environment written here: an actor-critic with
# orthogonal initialization, Categorical log_prob and entropy, GAE computed backwards, the
# clipped surrogate and value losses over minibatches, gradient clipping, lr annealing.

class ChainEnv:
    """Walkers on a chain of `size` cells: actions 0 (left), 1 (stay), 2 (right); reaching
    the last cell pays 1 and restarts the walker at 0, every other step costs 0.01."""

    def __init__(self, lib, num_envs, device, size=5):
        self.lib, self.size = lib, size
        self.pos = lib.zeros(num_envs, dtype=lib.long, device=device)

    def obs(self):
        return self.lib.nn.functional.one_hot(self.pos, self.size).float()

    def step(self, action):
        lib = self.lib
        self.pos = (self.pos + action - 1).clamp(0, self.size - 1)
        done = self.pos == self.size - 1
        reward = lib.where(done, 1.0, -0.01)
        self.pos = lib.where(done, lib.zeros_like(self.pos), self.pos)
        return self.obs(), reward, done.float()


def ppo(lib, device, obs_size=5, n_actions=3):
    nn = lib.nn

    def layer_init(layer, std=np.sqrt(2), bias_const=0.0):
        lib.nn.init.orthogonal_(layer.weight, std)
        lib.nn.init.constant_(layer.bias, bias_const)
        return layer

    class Agent(nn.Module):
        def __init__(self):
            super().__init__()
            self.critic = nn.Sequential(layer_init(nn.Linear(obs_size, 16)), nn.Tanh(),
                                        layer_init(nn.Linear(16, 16)), nn.Tanh(),
                                        layer_init(nn.Linear(16, 1), std=1.0))
            self.actor = nn.Sequential(layer_init(nn.Linear(obs_size, 16)), nn.Tanh(),
                                       layer_init(nn.Linear(16, 16)), nn.Tanh(),
                                       layer_init(nn.Linear(16, n_actions), std=0.01))

        def get_value(self, x):
            return self.critic(x)

        def get_action_and_value(self, x, action=None, u=None):
            logits = self.actor(x)
            probs = lib.distributions.Categorical(logits=logits)
            if action is None:  # inverse transform of `u`, probs.sample()'s draw
                cdf = probs.probs.cumsum(-1)
                action = lib.searchsorted(cdf, u[:, None]).squeeze(-1).clamp(max=n_actions - 1)
            return action, probs.log_prob(action), probs.entropy(), self.critic(x)

    model = Agent()
    model.optimizer = lambda: lib.optim.Adam(model.parameters(), lr=2.5e-3, eps=1e-5)
    return model


def ppo_step(lib, model, data, num_steps=8, gamma=0.99, gae_lambda=0.95, update_epochs=2,
             minibatch_size=8, clip_coef=0.2, ent_coef=0.01, vf_coef=0.5, max_grad_norm=0.5):
    update = getattr(model, "update", 0)
    uniforms = data["u"][update]
    num_envs = uniforms.shape[1]
    device = uniforms.device
    if not hasattr(model, "env"):
        model.env = ChainEnv(lib, num_envs, device)
        model.next_obs = model.env.obs()
        model.next_done = lib.zeros(num_envs, device=device)
    frac = 1.0 - update / 8
    model.opt.param_groups[0]["lr"] = frac * 2.5e-3
    obs = lib.zeros((num_steps, num_envs, 5), device=device)
    actions = lib.zeros((num_steps, num_envs), device=device)
    logprobs, rewards, dones, values = (lib.zeros((num_steps, num_envs), device=device)
                                        for _ in range(4))
    for step in range(num_steps):
        obs[step] = model.next_obs
        dones[step] = model.next_done
        with lib.no_grad():
            action, logprob, _, value = model.get_action_and_value(model.next_obs,
                                                                   u=uniforms[step])
            values[step] = value.flatten()
        actions[step] = action
        logprobs[step] = logprob
        model.next_obs, reward, model.next_done = model.env.step(action)
        rewards[step] = reward.view(-1)
    with lib.no_grad():
        next_value = model.get_value(model.next_obs).reshape(1, -1)
        advantages = lib.zeros_like(rewards).to(device)
        lastgaelam = 0
        for t in reversed(range(num_steps)):
            if t == num_steps - 1:
                nextnonterminal = 1.0 - model.next_done
                nextvalues = next_value
            else:
                nextnonterminal = 1.0 - dones[t + 1]
                nextvalues = values[t + 1]
            delta = rewards[t] + gamma * nextvalues * nextnonterminal - values[t]
            advantages[t] = lastgaelam = delta + gamma * gae_lambda * nextnonterminal * lastgaelam
        returns = advantages + values
    b_obs = obs.reshape((-1, 5))
    b_logprobs, b_actions = logprobs.reshape(-1), actions.reshape(-1)
    b_advantages, b_returns, b_values = advantages.reshape(-1), returns.reshape(-1), \
        values.reshape(-1)
    batch_size = b_obs.shape[0]
    losses, clipfracs = [], []
    for epoch in range(update_epochs):
        b_inds = data["perms"][update, epoch]
        for start in range(0, batch_size, minibatch_size):
            mb_inds = b_inds[start:start + minibatch_size]
            _, newlogprob, entropy, newvalue = model.get_action_and_value(
                b_obs[mb_inds], b_actions.long()[mb_inds])
            logratio = newlogprob - b_logprobs[mb_inds]
            ratio = logratio.exp()
            with lib.no_grad():
                approx_kl = ((ratio - 1) - logratio).mean()
                clipfracs += [((ratio - 1.0).abs() > clip_coef).float().mean().item()]
            mb_advantages = b_advantages[mb_inds]
            mb_advantages = (mb_advantages - mb_advantages.mean()) / (mb_advantages.std() + 1e-8)
            pg_loss1 = -mb_advantages * ratio
            pg_loss2 = -mb_advantages * lib.clamp(ratio, 1 - clip_coef, 1 + clip_coef)
            pg_loss = lib.max(pg_loss1, pg_loss2).mean()
            newvalue = newvalue.view(-1)
            v_loss_unclipped = (newvalue - b_returns[mb_inds]) ** 2
            v_clipped = b_values[mb_inds] + lib.clamp(newvalue - b_values[mb_inds],
                                                      -clip_coef, clip_coef)
            v_loss_clipped = (v_clipped - b_returns[mb_inds]) ** 2
            v_loss = 0.5 * lib.max(v_loss_unclipped, v_loss_clipped).mean()
            entropy_loss = entropy.mean()
            loss = pg_loss - ent_coef * entropy_loss + v_loss * vf_coef
            model.opt.zero_grad()
            loss.backward()
            lib.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
            model.opt.step()
            losses.append(loss.detach())
    y_pred, y_true = b_values.cpu().numpy(), b_returns.cpu().numpy()
    var_y = np.var(y_true)
    model.explained_var = np.nan if var_y == 0 else 1 - np.var(y_true - y_pred) / var_y
    model.approx_kl, model.ratio = approx_kl, ratio.detach()
    model.update = update + 1
    return lib.stack(losses).mean()


def ppo_keeps(lib, model, data):
    """The last minibatch's probability ratios (not approx_kl: (ratio - 1) - log(ratio) cancels
    to rounding), the environments' state, the explained variance."""
    assert 0 <= model.approx_kl.item() < 1
    return [model.ratio, model.next_obs, lib.tensor(model.explained_var)]


# RWKV (v4) time and channel mixing: the token shift by ZeroPad2d((0, 0, 1, -1)), the WKV
# recurrence by a loop over time kept stable by a running maximum exponent (in place of the
# CUDA kernel), the mixing as TorchScript methods of jit.ScriptModules (RWKV_JIT_ON).

def rwkv(lib, device, n_embd=16, n_layer=2, vocab=11):
    nn, F = lib.nn, lib.nn.functional

    MyModule, MyFunction = lib.jit.ScriptModule, lib.jit.script_method

    class TimeMix(MyModule):
        def __init__(self, layer_id):
            super().__init__()
            ratio_0_to_1 = layer_id / (n_layer - 1)
            ratio_1_to_almost0 = 1.0 - layer_id / n_layer
            decay_speed = lib.ones(n_embd)
            for h in range(n_embd):
                decay_speed[h] = -5 + 8 * (h / (n_embd - 1)) ** (0.7 + 1.3 * ratio_0_to_1)
            self.time_decay = nn.Parameter(decay_speed)
            zigzag = lib.tensor([(i + 1) % 3 - 1 for i in range(n_embd)]) * 0.5
            self.time_first = nn.Parameter(lib.ones(n_embd) * math.log(0.3) + zigzag)
            x = lib.ones(1, 1, n_embd)
            for i in range(n_embd):
                x[0, 0, i] = i / n_embd
            self.time_mix_k = nn.Parameter(lib.pow(x, ratio_1_to_almost0))
            self.time_mix_v = nn.Parameter(lib.pow(x, ratio_1_to_almost0) + 0.3 * ratio_0_to_1)
            self.time_mix_r = nn.Parameter(lib.pow(x, 0.5 * ratio_1_to_almost0))
            self.time_shift = nn.ZeroPad2d((0, 0, 1, -1))
            self.key = nn.Linear(n_embd, n_embd, bias=False)
            self.value = nn.Linear(n_embd, n_embd, bias=False)
            self.receptance = nn.Linear(n_embd, n_embd, bias=False)
            self.output = nn.Linear(n_embd, n_embd, bias=False)

        def wkv(self, k, v):
            B, T, C = k.size()
            w, u = -lib.exp(self.time_decay), self.time_first
            aa = lib.zeros(B, C, device=k.device)
            bb = lib.zeros(B, C, device=k.device)
            pp = lib.full((B, C), -1e38, device=k.device)
            out = []
            for t in range(T):
                kk, vv = k[:, t], v[:, t]
                ww = u + kk
                p = lib.maximum(pp, ww)
                e1, e2 = lib.exp(pp - p), lib.exp(ww - p)
                out.append((e1 * aa + e2 * vv) / (e1 * bb + e2))
                ww = pp + w
                p = lib.maximum(ww, kk)
                e1, e2 = lib.exp(ww - p), lib.exp(kk - p)
                aa, bb, pp = e1 * aa + e2 * vv, e1 * bb + e2, p
            return lib.stack(out, dim=1)

        @MyFunction
        def jit_func(self, x):
            xx = self.time_shift(x)
            xk = x * self.time_mix_k + xx * (1 - self.time_mix_k)
            xv = x * self.time_mix_v + xx * (1 - self.time_mix_v)
            xr = x * self.time_mix_r + xx * (1 - self.time_mix_r)
            k, v, r = self.key(xk), self.value(xv), self.receptance(xr)
            return lib.sigmoid(r), k, v

        def forward(self, x):
            sr, k, v = self.jit_func(x)
            return self.output(sr * self.wkv(k, v))

    class ChannelMix(MyModule):
        def __init__(self, layer_id):
            super().__init__()
            self.time_shift = nn.ZeroPad2d((0, 0, 1, -1))
            x = lib.ones(1, 1, n_embd)
            for i in range(n_embd):
                x[0, 0, i] = i / n_embd
            self.time_mix_k = nn.Parameter(lib.pow(x, 1.0 - layer_id / n_layer))
            self.time_mix_r = nn.Parameter(lib.pow(x, 1.0 - layer_id / n_layer))
            self.key = nn.Linear(n_embd, 4 * n_embd, bias=False)
            self.receptance = nn.Linear(n_embd, n_embd, bias=False)
            self.value = nn.Linear(4 * n_embd, n_embd, bias=False)

        @MyFunction
        def forward(self, x):
            xx = self.time_shift(x)
            xk = x * self.time_mix_k + xx * (1 - self.time_mix_k)
            xr = x * self.time_mix_r + xx * (1 - self.time_mix_r)
            k = lib.square(lib.relu(self.key(xk)))
            return lib.sigmoid(self.receptance(xr)) * self.value(k)

    class Block(nn.Module):
        def __init__(self, layer_id):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(n_embd), nn.LayerNorm(n_embd)
            self.att, self.ffn = TimeMix(layer_id), ChannelMix(layer_id)

        def forward(self, x):
            x = x + self.att(self.ln1(x))
            return x + self.ffn(self.ln2(x))

    class RWKV(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(vocab, n_embd)
            self.blocks = nn.Sequential(*[Block(i) for i in range(n_layer)])
            self.ln_out = nn.LayerNorm(n_embd)
            self.head = nn.Linear(n_embd, vocab, bias=False)

        def forward(self, idx, targets=None):
            x = self.head(self.ln_out(self.blocks(self.emb(idx))))
            if targets is None:
                return x
            return F.cross_entropy(x.view(-1, x.size(-1)), targets.view(-1))

    model = RWKV()
    model.optimizer = lambda: lib.optim.Adam(model.parameters(), lr=3e-3, betas=(0.9, 0.99),
                                             eps=1e-8)
    return model


def rwkv_step(lib, model, data):
    tokens = data["tokens"]
    loss = model(tokens[:, :-1], tokens[:, 1:].contiguous())
    model.opt.zero_grad()
    loss.backward()
    model.opt.step()
    return loss


def rwkv_keeps(lib, model, data):
    with lib.no_grad():
        return [model(data["tokens"][:, :5]).softmax(-1)]


# A Neural ODE (torchdiffeq's ode_demo): the spiral's dynamics learned by an MLP, integrated by
# a hand-written fixed-step RK4, trained with RMSprop on minibatches of windows of the true
# trajectory; its gradients by the adjoint method (a custom autograd.Function integrating the
# augmented state backwards with vector-Jacobian products from autograd.grad).

def _rk4_step(func, t0, dt, y):
    """One RK4 step of dy/dt = func(t, y) for a tuple of tensors `y`."""
    def add(y, k, c):
        return tuple(a + c * b for a, b in zip(y, k))
    k1 = func(t0, y)
    k2 = func(t0 + dt / 2, add(y, k1, dt / 2))
    k3 = func(t0 + dt / 2, add(y, k2, dt / 2))
    k4 = func(t0 + dt, add(y, k3, dt))
    return tuple(a + dt / 6 * (b1 + 2 * b2 + 2 * b3 + b4)
                 for a, b1, b2, b3, b4 in zip(y, k1, k2, k3, k4))


def _odeint(func, y0, t):
    """The solution of dy/dt = func(t, y) at the times `t` (first dim), one RK4 step apart."""
    ys = [y0]
    for i in range(len(t) - 1):
        ys.append(_rk4_step(lambda tt, y: (func(tt, y[0]),), t[i], t[i + 1] - t[i],
                            (ys[-1],))[0])
    return ys


def neural_ode(lib, device):
    nn = lib.nn

    class ODEFunc(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 2))
            for m in self.net.modules():
                if isinstance(m, nn.Linear):
                    nn.init.normal_(m.weight, mean=0, std=0.1)
                    nn.init.constant_(m.bias, val=0)

        def forward(self, t, y):
            return self.net(y ** 3)

    class OdeintAdjoint(lib.autograd.Function):
        @staticmethod
        def forward(ctx, y0, t, func, *params):
            with lib.no_grad():
                trajectory = lib.stack(_odeint(func, y0, t))
            ctx.func = func
            ctx.save_for_backward(t, trajectory, *params)
            return trajectory

        @staticmethod
        def backward(ctx, grad_trajectory):
            t, trajectory, *params = ctx.saved_tensors
            func = ctx.func

            def augmented(tt, state):
                y, adj_y = state[0], state[1]
                with lib.enable_grad():
                    y = y.detach().requires_grad_(True)
                    f = func(tt, y)
                    vjp_y, *vjp_params = lib.autograd.grad(f, (y,) + tuple(params), -adj_y,
                                                           allow_unused=True)
                vjp_params = [lib.zeros_like(p) if g is None else g
                              for g, p in zip(vjp_params, params)]
                return (f, vjp_y, *vjp_params)

            adj_y = grad_trajectory[-1]
            adj_params = [lib.zeros_like(p) for p in params]
            for i in range(len(t) - 1, 0, -1):
                state = (trajectory[i], adj_y, *adj_params)
                state = _rk4_step(augmented, t[i], t[i - 1] - t[i], state)
                adj_y, adj_params = state[1] + grad_trajectory[i - 1], list(state[2:])
            return (adj_y, None, None, *adj_params)

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.func = ODEFunc()

        def forward(self, y0, t, adjoint=True):
            if adjoint:
                return OdeintAdjoint.apply(y0, t, self.func, *self.func.parameters())
            return lib.stack(_odeint(self.func, y0, t))

    model = Model()
    model.optimizer = lambda: lib.optim.RMSprop(model.parameters(), lr=1e-2)
    return model


def _spiral(lib, device, n=16):
    true_y0 = lib.tensor([[2., 0.]], device=device)
    t = lib.linspace(0., 1.5, n, device=device)
    true_A = lib.tensor([[-0.1, 2.0], [-2.0, -0.1]], device=device)
    with lib.no_grad():
        true_y = lib.stack(_odeint(lambda t, y: lib.mm(y ** 3, true_A), true_y0, t))
    return t, true_y


def neural_ode_step(lib, model, data, batch_time=5):
    t, true_y = _spiral(lib, data["starts"].device)
    s = data["starts"][getattr(model, "itr", 0)]
    batch_y0 = true_y[s]
    batch_t = t[:batch_time]
    batch_y = lib.stack([true_y[s + i] for i in range(batch_time)], dim=0)
    model.opt.zero_grad()
    pred_y = model(batch_y0, batch_t)
    loss = lib.mean(lib.abs(pred_y - batch_y))
    loss.backward()
    model.opt.step()
    model.itr = getattr(model, "itr", 0) + 1
    return loss


def neural_ode_keeps(lib, model, data):
    """The adjoint's gradients of a fresh loss and backpropagation's through the solver's steps
    (the two agree up to the solver's error), and a prediction over the whole span."""
    t, true_y = _spiral(lib, data["starts"].device)
    grads = []
    for adjoint in (True, False):
        model.zero_grad()
        pred_y = model(true_y[0], t, adjoint=adjoint)
        lib.mean(lib.abs(pred_y - true_y)).backward()
        grads += [p.grad.clone() for p in model.parameters()]
    for a, b in zip(grads[:4], grads[4:]):
        assert lib.allclose(a, b, rtol=1e-2, atol=1e-4)
    with lib.no_grad():
        return grads + [model(true_y[0], t, adjoint=False)]


# A continuous normalizing flow (torchdiffeq's cnf example): a hypernetwork gives the dynamics'
# weights at each time, the log-density change is minus the exact trace of dz/dt, summed from
# autograd.grad(create_graph=True) of each output coordinate; trained by backpropagating
# through the RK4 steps from the data back to a Gaussian (second derivatives).

def cnf(lib, device, in_out_dim=2, hidden_dim=8, width=4):
    nn = lib.nn

    def trace_df_dz(f, z):
        sum_diag = 0.
        for i in range(z.shape[1]):
            sum_diag += lib.autograd.grad(f[:, i].sum(), z,
                                          create_graph=True)[0].contiguous()[:, i].contiguous()
        return sum_diag.contiguous()

    class HyperNetwork(nn.Module):
        def __init__(self):
            super().__init__()
            blocksize = width * in_out_dim
            self.fc1 = nn.Linear(1, hidden_dim)
            self.fc2 = nn.Linear(hidden_dim, hidden_dim)
            self.fc3 = nn.Linear(hidden_dim, 3 * blocksize + width)
            self.blocksize = blocksize

        def forward(self, t):
            params = t.reshape(1, 1)
            params = lib.tanh(self.fc1(params))
            params = lib.tanh(self.fc2(params))
            params = self.fc3(params).reshape(-1)
            W = params[:self.blocksize].reshape(width, in_out_dim, 1)
            U = params[self.blocksize:2 * self.blocksize].reshape(width, 1, in_out_dim)
            G = params[2 * self.blocksize:3 * self.blocksize].reshape(width, 1, in_out_dim)
            U = U * lib.sigmoid(G)
            B = params[3 * self.blocksize:].reshape(width, 1, 1)
            return [W, B, U]

    class CNF(nn.Module):
        def __init__(self):
            super().__init__()
            self.hyper_net = HyperNetwork()

        def forward(self, t, states):
            z = states[0]
            batchsize = z.shape[0]
            with lib.set_grad_enabled(True):
                z.requires_grad_(True)
                W, B, U = self.hyper_net(t)
                Z = lib.unsqueeze(z, 0).repeat(width, 1, 1)
                h = lib.tanh(lib.matmul(Z, W) + B)
                dz_dt = lib.matmul(h, U).mean(0)
                dlogp_z_dt = -trace_df_dz(dz_dt, z).view(batchsize, 1)
            return (dz_dt, dlogp_z_dt)

    model = CNF()
    model.optimizer = lambda: lib.optim.Adam(model.parameters(), lr=1e-2)
    return model


def _cnf_flow(lib, model, x, steps=4, t0=0.0, t1=2.0):
    """(z, log-density change) at t0 from the data `x` at t1, by RK4 steps backwards."""
    logp_diff_t1 = lib.zeros(x.shape[0], 1).type(lib.float32).to(x.device)
    ts = lib.linspace(t1, t0, steps + 1, device=x.device)
    state = (x, logp_diff_t1)
    for i in range(steps):
        state = _rk4_step(model, ts[i], ts[i + 1] - ts[i], state)
    return state


def cnf_step(lib, model, data):
    x = data["moons"].type(lib.float32)
    p_z0 = lib.distributions.MultivariateNormal(
        loc=lib.tensor([0.0, 0.0]).to(x.device),
        covariance_matrix=lib.tensor([[0.1, 0.0], [0.0, 0.1]]).to(x.device))
    model.opt.zero_grad()
    z_t0, logp_diff_t0 = _cnf_flow(lib, model, x)
    logp_x = p_z0.log_prob(z_t0).to(x.device) - logp_diff_t0.view(-1)
    loss = -logp_x.mean(0)
    loss.backward()
    model.opt.step()
    return loss


def cnf_keeps(lib, model, data):
    z, logp = _cnf_flow(lib, model, data["moons"][:8])
    return [z, logp]


# A deep equilibrium model (the implicit-layers tutorial's DEQ): a residual cell's fixed point
# found by Anderson acceleration without grad, one more step with grad, and the implicit
# gradient by a hook on the output that solves the backward fixed point with autograd.grad
# (reentrant, inside the backward pass) and removes itself.

def _anderson(lib, f, x0, m=4, lam=1e-4, max_iter=12, tol=1e-12, beta=1.0):
    bsz, d, H, W = x0.shape
    X = lib.zeros(bsz, m, d * H * W, dtype=x0.dtype, device=x0.device)
    F = lib.zeros(bsz, m, d * H * W, dtype=x0.dtype, device=x0.device)
    X[:, 0], F[:, 0] = x0.view(bsz, -1), f(x0).view(bsz, -1)
    X[:, 1], F[:, 1] = F[:, 0], f(F[:, 0].view_as(x0)).view(bsz, -1)
    H = lib.zeros(bsz, m + 1, m + 1, dtype=x0.dtype, device=x0.device)
    H[:, 0, 1:] = H[:, 1:, 0] = 1
    y = lib.zeros(bsz, m + 1, 1, dtype=x0.dtype, device=x0.device)
    y[:, 0] = 1
    res = []
    for k in range(2, max_iter):
        n = min(k, m)
        G = F[:, :n] - X[:, :n]
        H[:, 1:n + 1, 1:n + 1] = lib.bmm(G, G.transpose(1, 2)) + lam * lib.eye(
            n, dtype=x0.dtype, device=x0.device)[None]
        alpha = lib.linalg.solve(H[:, :n + 1, :n + 1], y[:, :n + 1])[:, 1:n + 1, 0]
        X[:, k % m] = (beta * (alpha[:, None] @ F[:, :n])[:, 0]
                       + (1 - beta) * (alpha[:, None] @ X[:, :n])[:, 0])
        F[:, k % m] = f(X[:, k % m].view_as(x0)).view(bsz, -1)
        res.append((F[:, k % m] - X[:, k % m]).norm().item()
                   / (1e-5 + F[:, k % m].norm().item()))
        if res[-1] < tol:
            break
    return X[:, k % m].view_as(x0), res


def deq(lib, device, chan=8, inner=12):
    nn, F = lib.nn, lib.nn.functional

    class ResNetLayer(nn.Module):
        def __init__(self, n_channels, n_inner_channels, kernel_size=3, num_groups=4):
            super().__init__()
            self.conv1 = nn.Conv2d(n_channels, n_inner_channels, kernel_size,
                                   padding=kernel_size // 2, bias=False)
            self.conv2 = nn.Conv2d(n_inner_channels, n_channels, kernel_size,
                                   padding=kernel_size // 2, bias=False)
            self.norm1 = nn.GroupNorm(num_groups, n_inner_channels)
            self.norm2 = nn.GroupNorm(num_groups, n_channels)
            self.norm3 = nn.GroupNorm(num_groups, n_channels)
            self.conv1.weight.data.normal_(0, 0.01)
            self.conv2.weight.data.normal_(0, 0.01)

        def forward(self, z, x):
            y = self.norm1(F.relu(self.conv1(z)))
            return self.norm3(F.relu(z + self.norm2(x + self.conv2(y))))

    class DEQFixedPoint(nn.Module):
        def __init__(self, f, solver):
            super().__init__()
            self.f, self.solver = f, solver

        def forward(self, x):
            with lib.no_grad():
                z, self.forward_res = self.solver(lambda z: self.f(z, x), lib.zeros_like(x))
            z = self.f(z, x)
            z0 = z.clone().detach().requires_grad_()
            f0 = self.f(z0, x)

            def backward_hook(grad):
                if self.hook is not None:
                    self.hook.remove()
                g, self.backward_res = self.solver(
                    lambda y: lib.autograd.grad(f0, z0, y, retain_graph=True)[0] + grad, grad)
                return g

            self.hook = z.register_hook(backward_hook)
            return z

    model = nn.Sequential(nn.Conv2d(3, chan, kernel_size=3, bias=True, padding=1),
                          nn.BatchNorm2d(chan),
                          DEQFixedPoint(ResNetLayer(chan, inner), lambda f, x0: _anderson(
                              lib, f, x0)),
                          nn.BatchNorm2d(chan), nn.AvgPool2d(8, 8), nn.Flatten(),
                          nn.Linear(chan, 5))
    model.optimizer = lambda: lib.optim.Adam(model.parameters(), lr=1e-3)
    return model


def deq_step(lib, model, data):
    yp = model(data["noise"])
    loss = lib.nn.CrossEntropyLoss()(yp, data["classes"][:4] % 5)
    model.opt.zero_grad()
    loss.backward()
    model.opt.step()
    return loss


def deq_keeps(lib, model, data):
    """The solvers' residuals (forward and backward) of the last step, and eval outputs (under
    no_grad the hook cannot be registered)."""
    fixed = model[2]
    residuals = lib.tensor(fixed.forward_res + fixed.backward_res)
    model.eval()
    with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't "
                                           "require gradient"), lib.no_grad():
        model(data["noise"])
    return [residuals, model(data["noise"])]


# A physics-informed network (Raissi's PINN, Burgers' equation, as its PyTorch ports write it):
# u(x, t) from an MLP, u_t, u_x and u_xx from autograd.grad(create_graph=True) with ones as the
# output gradient, the residual's and the data's mean squares, minimized by LBFGS with a
# strong-Wolfe line search calling the closure.

def pinn(lib, device):
    nn = lib.nn

    class DNN(nn.Module):
        def __init__(self, layers):
            super().__init__()
            self.depth = len(layers) - 1
            layer_list = []
            for i in range(self.depth - 1):
                layer_list.append((f"layer_{i}", nn.Linear(layers[i], layers[i + 1])))
                layer_list.append((f"activation_{i}", nn.Tanh()))
            layer_list.append((f"layer_{self.depth - 1}", nn.Linear(layers[-2], layers[-1])))
            self.layers = nn.Sequential(OrderedDict(layer_list))

        def forward(self, x):
            return self.layers(x)

    model = DNN([2, 12, 12, 1])
    model.optimizer = lambda: lib.optim.LBFGS(model.parameters(), lr=1.0, max_iter=6,
                                              max_eval=8, history_size=5,
                                              tolerance_grad=1e-9, tolerance_change=1e-12,
                                              line_search_fn="strong_wolfe")
    return model


def _burgers_residual(lib, model, x, t, nu=0.01 / np.pi):
    u = model(lib.cat([x, t], dim=1))
    u_t = lib.autograd.grad(u, t, grad_outputs=lib.ones_like(u), retain_graph=True,
                            create_graph=True)[0]
    u_x = lib.autograd.grad(u, x, grad_outputs=lib.ones_like(u), retain_graph=True,
                            create_graph=True)[0]
    u_xx = lib.autograd.grad(u_x, x, grad_outputs=lib.ones_like(u_x), retain_graph=True,
                             create_graph=True)[0]
    return u_t + u * u_x - nu * u_xx


def pinn_step(lib, model, data):
    xt = data["features"][:, :2]
    x = xt[:, :1].clone().requires_grad_(True)
    t = (xt[:, 1:] * 0.5 + 0.5).clone().requires_grad_(True)
    x_u = data["features"][:8, 2:]
    u = -lib.sin(np.pi * x_u[:, :1])

    def closure():
        model.opt.zero_grad()
        u_pred = model(lib.cat([x_u[:, :1], lib.zeros_like(x_u[:, :1])], dim=1))
        f_pred = _burgers_residual(lib, model, x, t)
        if not hasattr(model, "first_residual"):
            model.first_residual = f_pred.detach()
        loss = lib.mean((u - u_pred) ** 2) + lib.mean(f_pred ** 2)
        loss.backward()
        return loss

    return model.opt.step(closure)


def pinn_keeps(lib, model, data):
    """The residual (u_t, u_x and u_xx by autograd.grad with create_graph) of the initial
    network, whose weights both frameworks share, and LBFGS's iteration count. The trained
    network's residual is not kept: LBFGS's line searches on rounded values take the weights
    apart along the loss's flat directions (one seed's residuals read -0.93 in genesis, -0.27
    in torch and 0.12 from it in torch's own float64 and one-ulp runs, the losses agreeing)."""
    return [model.first_residual, lib.tensor(model.opt.state[model.opt._params[0]]["n_iter"])]


CASES = {
    "nerf": (nerf, nerf_step, nerf_keeps),
    "realnvp": (realnvp, realnvp_step, realnvp_keeps),
    "glow": (glow, glow_step, glow_keeps),
    "mamba": (mamba, mamba_step, mamba_keeps),
    "mamba_pscan": (lambda lib, device: mamba(lib, device, pscan=True), mamba_step, pscan_keeps),
    "kan": (kan, kan_step, kan_keeps),
    "ppo": (ppo, ppo_step, ppo_keeps),
    "rwkv": (rwkv, rwkv_step, rwkv_keeps),
    "neural_ode": (neural_ode, neural_ode_step, neural_ode_keeps),
    "cnf": (cnf, cnf_step, cnf_keeps),
    "deq": (deq, deq_step, deq_keeps),
    "pinn": (pinn, pinn_step, pinn_keeps),
}

STEPS = 4


def _moons(rng, n):
    """Two interleaved half circles with noise (sklearn's make_moons, drawn here)."""
    t = rng.random(n) * np.pi
    upper = rng.random(n) < 0.5
    x = np.where(upper, np.cos(t), 1 - np.cos(t))
    y = np.where(upper, np.sin(t), 0.5 - np.sin(t))
    return (np.stack([x, y], 1) + 0.05 * rng.standard_normal((n, 2))).astype(np.float32)


def _data(rng):
    """The synthetic inputs and random draws every case reads from, as numpy arrays."""
    rays_d = rng.standard_normal((6, 3))
    return {
        "rays_o": rng.standard_normal((6, 3)).astype(np.float32) * 0.3,
        "rays_d": rays_d.astype(np.float32),
        "target": rng.random((6, 3)).astype(np.float32),
        "t_rand": rng.random((STEPS + 1, 6, 8)).astype(np.float32),
        "u": rng.random((STEPS + 1, 6, 8)).astype(np.float32),
        "moons": _moons(rng, 32), "z2": rng.standard_normal((8, 2)).astype(np.float32),
        "images": rng.random((4, 3, 8, 8)).astype(np.float32),
        "dequant": rng.random((4, 3, 8, 8)).astype(np.float32),
        "noise": rng.standard_normal((4, 3, 8, 8)).astype(np.float32),
        "tokens": rng.integers(0, 11, (3, 9)),
        "features": rng.uniform(-1, 1, (16, 4)).astype(np.float32),
        "classes": rng.integers(0, 3, 16),
        "starts": np.stack([rng.choice(np.arange(16 - 5), 4, replace=False)
                            for _ in range(STEPS)]),
        "perms": np.stack([np.stack([rng.permutation(32) for _ in range(2)])
                           for _ in range(STEPS)]),
    }


def _ppo_uniforms(rng):
    return rng.random((STEPS, 8, 4)).astype(np.float32)


# Cases whose few steps amplify rounding, compared within four times torch's own distance from
# its float64 run (nn_compare.assert_trajectory_close; for what the case keeps, the largest
# distance over the array, since which weights move differs between runs): Glow's
# zero-initialized convolutions and data-initialized ActNorm offsets, and the DEQ's stem bias
# before a BatchNorm, get gradients that are zero but for rounding, whose signs rounding
# decides, and Adam moves each such weight by the full lr (the DEQ's running mean follows that
# bias); the PINN's LBFGS iterations, each a line search on rounded values, part from torch's
# own runs as far as from genesis's. Their neighbours are two such runs, in float64 and in
# float32 from weights one ulp above, since either alone can land near torch's run by chance
# (for one PINN seed, a trained residual of the float64 run lay 2.4e-5 from torch's, of the
# one-ulp run 1.2e-3, of genesis's 1.5e-3). The PINN has two more: torch's run on data one ulp
# above, and on its points in another order (each set reversed: the same loss, every sum over
# the points taken in another order). Genesis sums in its own order, and so parted from torch
# by 2e-3 for one seed where the other neighbours stayed within 4e-5 and the reordered run
# parted by 2e-3 as well: LBFGS's line search decides its steps by comparisons of such sums.
AMPLIFY_ROUNDING = {"glow", "deq", "pinn"}
POINT_SETS = {"pinn": ("features", 8)}  # the array of points and where its second set starts


def _reordered_twins(build, torch_model, arrays, points):
    """Two more (model, data) of the case in torch from `torch_model`'s weights: on its float
    data one ulp above, and on its points with each set reversed (`points`: the array's name
    and the first row of its second set)."""
    name, split = points
    rows = np.concatenate([np.arange(split)[::-1], np.arange(split, len(arrays[name]))[::-1]])
    twins = []
    for data in ({k: np.nextafter(v, np.inf) if v.dtype == np.float32 else v
                  for k, v in arrays.items()}, {**arrays, name: arrays[name][rows]}):
        twin = build(torch, "cpu")
        twin.load_state_dict(torch_model.state_dict())
        twins.append((twin, {k: torch.tensor(np.ascontiguousarray(v)) for k, v in data.items()}))
    return twins


@pytest.mark.filterwarnings("ignore:`torch.jit.script")  # RWKV's ScriptModules
@pytest.mark.parametrize("name", list(CASES))
def test_ported_research_model_trains_as_torch(name, rng, device):
    build, step, keeps = CASES[name]
    arrays = _data(rng)
    if name == "ppo":
        arrays["u"] = _ppo_uniforms(rng)
    torch_model = build(torch, "cpu")
    model = copy_module(build(genesis, device), torch_model, device)
    twins = neighbour_twins(build, torch_model, arrays) if name in AMPLIFY_ROUNDING else []
    if name in POINT_SETS:
        twins += _reordered_twins(build, torch_model, arrays, POINT_SETS[name])
    expected = run_case(torch, torch_model, {k: torch.tensor(v) for k, v in arrays.items()},
                        step, keeps, STEPS)
    got = run_case(genesis, model, {k: genesis.tensor(v, device=device)
                                    for k, v in arrays.items()}, step, keeps, STEPS)
    assert all(math.isfinite(v) for v in expected[0])
    assert got[2] == expected[2]
    neighbours = [run_case(torch, *twin, step, keeps, STEPS) for twin in twins]
    if neighbours:
        assert_trajectory_close(got[0], expected[0], [run[0] for run in neighbours])
    else:
        np.testing.assert_allclose(got[0], expected[0], rtol=2e-4)
    kept_neighbours = [run[1] for run in neighbours]
    drifts = kept_drifts(expected[1], kept_neighbours)
    for i, (g, t, drift) in enumerate(zip(got[1], expected[1], drifts, strict=True)):
        if t.dtype.kind in "iu" and any(np.array_equal(g, n[i]) for n in kept_neighbours):
            continue  # a count one of torch's neighbours also reaches (LBFGS's iterations)
        assert_kept_close(g, t, drift)
