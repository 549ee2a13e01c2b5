"""Ported pytorch/examples scripts: for each, the smallest model that exercises the API the script
uses, written once against a framework (`torch` or `genesis`), trained a few steps from the same
initial weights on the same synthetic data in both; the losses must agree within 2e-4 relative in
float32 (relative to the run's largest loss where one nears zero: actor-critic's loss sums policy
terms of both signs). Each case is (build(lib, device) -> model, step(lib, model, data) -> loss)."""

import math
from collections import deque, namedtuple

import numpy as np
import pytest
import torch

import genesis
from nn_compare import assert_trajectory_close, copy_module, train_case

pytestmark = [pytest.mark.usefixtures("cudnn_ieee"),
              pytest.mark.filterwarnings("ignore:dropout2d")]


def _tensor(lib, device, array, dtype=None):
    return lib.tensor(array, dtype=dtype) if lib is torch else lib.tensor(array, dtype=dtype,
                                                                           device=device)


def mass_spring(lib, device):
    """differentiable_physics/mass_spring.py: a simulation loop written with in-place index
    updates (forces[i] += f, positions[0] = origin) between ops whose results backward reads."""
    nn = lib.nn

    class MassSpring(nn.Module):
        def __init__(self):
            super().__init__()
            self.origin = _tensor(lib, device, [0.0, 0.0])
            self.rest = nn.Parameter(lib.randn(2, 2))
            self.velocities = lib.zeros(3, 2, device=device)

        def forward(self, steps):
            positions = lib.cat([self.origin.unsqueeze(0), self.rest], dim=0)
            velocities = self.velocities
            for _ in range(steps):
                forces = lib.zeros_like(positions)
                for i, j in ((0, 1), (1, 2)):
                    dir_vec = positions[j] - positions[i]
                    dist = dir_vec.norm()
                    force = 10.0 * (dist - 1.0) * dir_vec / (dist + 1e-6)
                    forces[i] += force
                    forces[j] -= force
                forces[:, 1] -= 9.81
                velocities = velocities + forces / 1.0 * 0.01
                positions = positions + velocities * 0.01
                positions[0] = self.origin
                velocities[0] = _tensor(lib, positions.device, [0.0, 0.0])
            return positions

    model = MassSpring()
    model.optimizer = lambda: lib.optim.Adam(model.parameters(), lr=0.05)
    return model


def mass_spring_step(lib, model, data):
    loss = (model(8) - data["target"]).pow(2).mean()
    model.opt.zero_grad()
    loss.backward()
    model.opt.step()
    return loss


def graph_networks(lib, device):
    """gat/main.py and gcn/main.py: an attention layer over an adjacency mask (empty(size=...),
    xavier_normal_, mT, where, softmax, elu), then a graph convolution (Tensor(n, m), spmm) on
    the renormalised adjacency; NLL on the training nodes, Adam with weight decay."""
    nn, F = lib.nn, lib.nn.functional
    heads, hidden = 3, 4

    class Graph(nn.Module):
        def __init__(self):
            super().__init__()
            self.W = nn.Parameter(lib.empty(size=(12, hidden * heads)))
            self.a = nn.Parameter(lib.empty(size=(heads, 2 * hidden, 1)))
            self.kernel = nn.Parameter(lib.Tensor(hidden * heads, 5))
            self.bias = nn.Parameter(lib.Tensor(5))
            for weight in (self.W, self.a, self.kernel):
                nn.init.xavier_normal_(weight)
            nn.init.zeros_(self.bias)
            self.leakyrelu = nn.LeakyReLU(0.2)

        def forward(self, h, adj):
            n = h.shape[0]
            h = lib.mm(h, self.W).view(n, heads, hidden).permute(1, 0, 2)
            e = self.leakyrelu(lib.matmul(h, self.a[:, :hidden, :])
                               + lib.matmul(h, self.a[:, hidden:, :]).mT)
            e = lib.where(adj > 0, e, -9e16 * lib.ones_like(e))
            h = lib.matmul(F.softmax(e, dim=-1), h).permute(1, 0, 2).contiguous().view(n, -1)
            degree = lib.diag(lib.sqrt(1 / lib.sum(adj, dim=1)))
            out = lib.spmm(degree @ adj @ degree, lib.mm(F.elu(h), self.kernel)) + self.bias
            return F.log_softmax(out, dim=1)

    model = Graph().to(device)
    model.optimizer = lambda: lib.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    return model


def graph_step(lib, model, data):
    model.opt.zero_grad()
    out = model(data["features"], data["adjacency"])
    mask = data["train"]
    loss = lib.nn.NLLLoss()(out[mask], data["labels"][mask])
    loss.backward()
    model.opt.step()
    return loss


def mnist_rnn(lib, device):
    """mnist_rnn/main.py: LSTM over image rows (batch_first), BatchNorm1d and Dropout2d on its
    last output (a 2-D input), nll_loss, Adadelta with StepLR."""
    nn = lib.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.LSTM(input_size=7, hidden_size=16, batch_first=True)
            self.batchnorm = nn.BatchNorm1d(16)
            self.dropout1 = nn.Dropout2d(0.0)
            self.fc1 = nn.Linear(16, 10)

        def forward(self, x):
            output, _ = self.rnn(x.reshape(-1, 7, 7))
            output = self.dropout1(self.batchnorm(output[:, -1, :]))
            return nn.functional.log_softmax(self.fc1(nn.functional.relu(output)), dim=1)

    return _adadelta_stepped(lib, Net().to(device), lr=0.5)


def _adadelta_stepped(lib, model, lr):
    """Adadelta with StepLR(step_size=1, gamma=0.7), as the MNIST-style examples train."""
    model.optimizer = lambda: lib.optim.Adadelta(model.parameters(), lr=lr)
    model.scheduler = lambda opt: lib.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.7)
    return model


def _stepped_update(model, loss):
    """Backward, the optimizer's step and the scheduler's; the loss."""
    loss.backward()
    model.opt.step()
    model.sched.step()
    return loss


def classifier_step(lib, model, data):
    model.opt.zero_grad()
    return _stepped_update(model, lib.nn.functional.nll_loss(model(data["images"]),
                                                             data["labels"]))


def forward_forward(lib, device):
    """mnist_forward_forward/main.py: a Linear subclass with its own forward (norm(2, 1,
    keepdim), weight.T, bias.unsqueeze) trained on log1p(exp(goodness margins))."""
    nn = lib.nn

    class Layer(nn.Linear):
        def forward(self, x):
            x_direction = x / (x.norm(2, 1, keepdim=True) + 1e-4)
            return nn.functional.relu(lib.mm(x_direction, self.weight.T) + self.bias.unsqueeze(0))

    model = Layer(20, 16).to(device)
    model.optimizer = lambda: lib.optim.Adam(model.parameters(), lr=0.03)
    return model


def _overlay(x, y):
    """forward_forward's label overlay: in-place scaling of a column slice, then an advanced
    index write of the maximum."""
    x_ = x.clone()
    x_[:, :10] *= 0.0
    x_[range(x.shape[0]), y] = x.max()
    return x_


def forward_forward_step(lib, model, data):
    g_pos = model(_overlay(data["x"], data["y"])).pow(2).mean(1)
    g_neg = model(_overlay(data["x"], data["y_neg"])).pow(2).mean(1)
    loss = lib.log1p(lib.exp(lib.cat([-g_pos + 2.0, g_neg - 2.0]))).mean()
    model.opt.zero_grad()
    loss.backward()
    model.opt.step()
    return loss


def regression(lib, device):
    """regression/main.py: polynomial features by cat of powers, smooth_l1_loss, a hand-written
    update through param.data."""
    model = lib.nn.Linear(4, 1).to(device)
    model.optimizer = lambda: None
    return model


def regression_step(lib, model, data):
    x = data["x"].unsqueeze(1)
    features = lib.cat([x ** i for i in range(1, 5)], 1)
    model.zero_grad()
    output = lib.nn.functional.smooth_l1_loss(model(features), features.mm(data["w"]) + 0.5)
    output.backward()
    for param in model.parameters():
        param.data.add_(-0.01 * param.grad.data)
    return output


def neural_style(lib, device):
    """fast_neural_style: reflection-padded convs, affine InstanceNorm2d, a residual block and a
    nearest Upsample layer, against a frozen random CNN standing in for VGG (a namedtuple of
    features), with Gram matrices (bmm) and normalize_batch (new_tensor, div_)."""
    nn = lib.nn

    def conv(c_in, c_out, stride=1):
        return nn.Sequential(nn.ReflectionPad2d(1), nn.Conv2d(c_in, c_out, 3, stride))

    class Residual(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(conv(8, 8), nn.InstanceNorm2d(8, affine=True), nn.ReLU(),
                                      conv(8, 8), nn.InstanceNorm2d(8, affine=True))

        def forward(self, x):
            return self.body(x) + x

    class Loss(nn.Module):
        def __init__(self):
            super().__init__()
            self.slice1 = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU())
            self.slice2 = nn.Sequential(nn.MaxPool2d(2, 2), nn.Conv2d(4, 6, 3, padding=1),
                                        nn.ReLU())
            for param in self.parameters():
                param.requires_grad = False

        def forward(self, x):
            relu1 = self.slice1(x)
            return namedtuple("Outputs", ["relu1", "relu2"])(relu1, self.slice2(relu1))

    model = nn.Module()
    model.transformer = nn.Sequential(
        conv(3, 4), nn.InstanceNorm2d(4, affine=True), nn.ReLU(), conv(4, 8, 2),
        nn.InstanceNorm2d(8, affine=True), nn.ReLU(), Residual(),
        nn.Upsample(mode="nearest", scale_factor=2), conv(8, 3))
    model.vgg = Loss()
    model = model.to(device)
    model.optimizer = lambda: lib.optim.Adam(model.transformer.parameters(), 1e-2)
    return model


def _gram_matrix(y):
    (b, ch, h, w) = y.size()
    features = y.view(b, ch, w * h)
    return features.bmm(features.transpose(1, 2)) / (ch * h * w)


def _normalize_batch(batch):
    mean = batch.new_tensor([0.485, 0.456, 0.406]).view(-1, 1, 1)
    std = batch.new_tensor([0.229, 0.224, 0.225]).view(-1, 1, 1)
    batch = batch.div_(255.0)
    return (batch - mean) / std


def neural_style_step(lib, model, data):
    mse = lib.nn.MSELoss()
    gram_style = [_gram_matrix(y) for y in model.vgg(_normalize_batch(data["style"].clone()))]
    model.opt.zero_grad()
    x = data["images"].clone()
    features_y = model.vgg(_normalize_batch(model.transformer(x)))
    features_x = model.vgg(_normalize_batch(x))
    content_loss = 10.0 * mse(features_y.relu2, features_x.relu2)
    style_loss = 0.
    for ft_y, gm_s in zip(features_y, gram_style):
        style_loss += mse(_gram_matrix(ft_y), gm_s[:len(x), :, :])
    total_loss = content_loss + style_loss * 1e3
    total_loss.backward()
    model.opt.step()
    return total_loss


def actor_critic(lib, device):
    """reinforcement_learning/actor_critic.py and reinforce.py: a two-headed policy, Categorical
    log-probabilities of the actions taken, returns built in a deque and normalised by
    std() + eps, smooth_l1_loss of the values, stack and cat of per-step losses."""
    nn, F = lib.nn, lib.nn.functional

    class Policy(nn.Module):
        def __init__(self):
            super().__init__()
            self.affine1 = nn.Linear(4, 32)
            self.action_head = nn.Linear(32, 2)
            self.value_head = nn.Linear(32, 1)

        def forward(self, x):
            x = F.relu(self.affine1(x))
            return F.softmax(self.action_head(x), dim=-1), self.value_head(x)

    model = Policy().to(device)
    model.optimizer = lambda: lib.optim.Adam(model.parameters(), lr=3e-2)
    return model


def actor_critic_step(lib, model, data):
    F = lib.nn.functional
    eps = np.finfo(np.float32).eps.item()
    saved = []
    for state, action in zip(data["states"], data["actions"]):
        probs, value = model(state.unsqueeze(0))
        m = lib.distributions.Categorical(probs)
        saved.append((m.log_prob(action.unsqueeze(0)), value[0]))
    R, returns = 0, deque()
    for r in data["rewards"]:
        R = r + 0.99 * R
        returns.appendleft(R)
    returns = lib.tensor(returns).to(data["states"].device)
    returns = (returns - returns.mean()) / (returns.std() + eps)
    policy_losses, value_losses = [], []
    for (log_prob, value), R in zip(saved, returns):
        policy_losses.append(-log_prob * (R - value.item()))
        value_losses.append(F.smooth_l1_loss(value, lib.tensor([R]).to(value.device)))
    model.opt.zero_grad()
    loss = lib.cat(policy_losses).sum() + lib.stack(value_losses).sum()
    loss.backward()
    model.opt.step()
    return loss


def siamese(lib, device):
    """siamese_network/main.py: a twin conv tower cut from a module's children(), weights set by
    apply() with the deprecated nn.init.xavier_uniform and bias.data.fill_, BCELoss on a
    sigmoid that saturates under Adadelta(lr=1), StepLR."""
    nn = lib.nn

    class Siamese(nn.Module):
        def __init__(self):
            super().__init__()
            tower = nn.Sequential(
                nn.Conv2d(1, 8, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(8),
                nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1), nn.AdaptiveAvgPool2d((1, 1)),
                nn.Linear(8, 8))
            self.tower = nn.Sequential(*(list(tower.children())[:-1]))
            self.fc = nn.Sequential(nn.Linear(16, 16), nn.ReLU(inplace=True), nn.Linear(16, 1))
            self.fc.apply(self.init_weights)

        def init_weights(self, m):
            if isinstance(m, nn.Linear):
                nn.init.xavier_uniform(m.weight)
                m.bias.data.fill_(0.01)

        def forward(self, a, b):
            a, b = self.tower(a), self.tower(b)
            features = lib.cat((a.view(a.size()[0], -1), b.view(b.size()[0], -1)), 1)
            return nn.Sigmoid()(self.fc(features))

    return _adadelta_stepped(lib, Siamese().to(device), lr=1.0)


def siamese_step(lib, model, data):
    model.opt.zero_grad()
    outputs = model(data["images"], data["images"].flip(0)).squeeze()
    pred = lib.where(outputs > 0.5, 1, 0)
    assert pred.eq(data["same"].view_as(pred)).sum().item() <= len(pred)
    return _stepped_update(model, lib.nn.BCELoss()(outputs, data["same"]))


def translator(lib, device):
    """language_translation: token embeddings with a sine/cosine positional buffer written by
    stepped slices, nn.Transformer (sequence first) with a float causal mask, a bool source mask
    and key padding masks, CrossEntropyLoss ignoring the padding index."""
    nn = lib.nn

    class Translator(nn.Module):
        def __init__(self):
            super().__init__()
            self.src_embedding = nn.Embedding(20, 8)
            self.tgt_embedding = nn.Embedding(20, 8)
            den = lib.exp(-lib.arange(0, 8, 2) * math.log(10000) / 8)
            pos = lib.arange(0, 16).reshape(16, 1)
            pos_embedding = lib.zeros((16, 8))
            pos_embedding[:, 0::2] = lib.sin(pos * den)
            pos_embedding[:, 1::2] = lib.cos(pos * den)
            self.register_buffer("pos_embedding", pos_embedding.unsqueeze(-2))
            self.transformer = nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1,
                                              num_decoder_layers=1, dim_feedforward=16,
                                              dropout=0.0)
            self.ff = nn.Linear(8, 20)

        def embed(self, embedding, tokens):
            x = embedding(tokens)
            return x + self.pos_embedding[:x.size(0), :]

        def forward(self, src, tgt, src_mask, tgt_mask, src_padding, tgt_padding):
            out = self.transformer(self.embed(self.src_embedding, src),
                                   self.embed(self.tgt_embedding, tgt), src_mask, tgt_mask,
                                   None, src_padding, tgt_padding, src_padding)
            return self.ff(out)

    model = Translator().to(device)
    model.optimizer = lambda: lib.optim.Adam(model.parameters(), lr=1e-2, betas=(0.9, 0.98),
                                             eps=1e-9)
    return model


def translator_step(lib, model, data):
    src, tgt = data["src"], data["tgt"]
    tgt_input = tgt[:-1, :]
    size = tgt_input.shape[0]
    mask = (lib.triu(lib.ones((size, size), device=src.device)) == 1).transpose(0, 1)
    tgt_mask = mask.float().masked_fill(mask == 0, float("-inf")).masked_fill(mask == 1, 0.0)
    src_mask = lib.zeros((src.shape[0], src.shape[0]), device=src.device).type(lib.bool)
    logits = model(src, tgt_input, src_mask, tgt_mask, (src == 1).transpose(0, 1),
                   (tgt_input == 1).transpose(0, 1))
    model.opt.zero_grad()
    loss = lib.nn.CrossEntropyLoss(ignore_index=1)(logits.reshape(-1, logits.shape[-1]),
                                                   tgt[1:, :].reshape(-1))
    loss.backward()
    model.opt.step()
    return loss


def dcgan(lib, device):
    """dcgan/main.py: a ConvTranspose2d generator (4x4 kernels, stride 2, padding 1, no bias)
    and a Conv2d discriminator, with BatchNorm2d, in-place ReLU and LeakyReLU, Tanh and
    Sigmoid, initialized by the script's weights_init (class-name tests, normal_ and fill_ on
    .data), and two Adams with betas (0.5, 0.999)."""
    nn = lib.nn
    nz, ngf, ndf, nc = 8, 4, 4, 3

    class Generator(nn.Module):
        def __init__(self):
            super().__init__()
            self.main = nn.Sequential(
                nn.ConvTranspose2d(nz, ngf * 4, 4, 1, 0, bias=False), nn.BatchNorm2d(ngf * 4),
                nn.ReLU(True),
                nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False),
                nn.BatchNorm2d(ngf * 2), nn.ReLU(True),
                nn.ConvTranspose2d(ngf * 2, nc, 4, 2, 1, bias=False), nn.Tanh())

        def forward(self, input):
            return self.main(input)

    class Discriminator(nn.Module):
        def __init__(self):
            super().__init__()
            self.main = nn.Sequential(
                nn.Conv2d(nc, ndf, 4, 2, 1, bias=False), nn.LeakyReLU(0.2, inplace=True),
                nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 2),
                nn.LeakyReLU(0.2, inplace=True),
                nn.Conv2d(ndf * 2, 1, 4, 1, 0, bias=False), nn.Sigmoid())

        def forward(self, input):
            return self.main(input).view(-1, 1).squeeze(1)

    def weights_init(m):
        classname = m.__class__.__name__
        if classname.find("Conv") != -1:
            m.weight.data.normal_(0.0, 0.02)
        elif classname.find("BatchNorm") != -1:
            m.weight.data.normal_(1.0, 0.02)
            m.bias.data.fill_(0)

    model = nn.Module()
    model.netG, model.netD = Generator().to(device), Discriminator().to(device)
    model.netG.apply(weights_init)
    model.netD.apply(weights_init)
    model.optimizer = lambda: (
        lib.optim.Adam(model.netD.parameters(), lr=0.0002, betas=(0.5, 0.999)),
        lib.optim.Adam(model.netG.parameters(), lr=0.0002, betas=(0.5, 0.999)))
    return model


def dcgan_step(lib, model, data):
    """One iteration of the script's loop: the discriminator on real images (label 1) and on
    detached fakes (label 0, by fill_), then the generator through the discriminator (label
    1); errD + errG. The noise is the data's, the same in both frameworks."""
    netD, netG = model.netD, model.netG
    optimizerD, optimizerG = model.opt
    criterion = lib.nn.BCELoss()
    real_cpu = data["images"]
    batch_size = real_cpu.size(0)
    netD.zero_grad()
    label = lib.full((batch_size,), 1, dtype=real_cpu.dtype, device=real_cpu.device)
    output = netD(real_cpu)
    errD_real = criterion(output, label)
    errD_real.backward()
    fake = netG(data["noise"])
    label.fill_(0)
    output = netD(fake.detach())
    errD_fake = criterion(output, label)
    errD_fake.backward()
    errD = errD_real + errD_fake
    optimizerD.step()
    netG.zero_grad()
    label.fill_(1)
    output = netD(fake)
    errG = criterion(output, label)
    errG.backward()
    optimizerG.step()
    return errD + errG


def vae(lib, device):
    """vae/main.py: encode (relu, two heads), reparameterize (exp, the noise the data gives in
    place of randn_like, which no two frameworks draw alike), decode (sigmoid), and the loss of
    binary_cross_entropy(reduction='sum') plus the KL term (pow, exp, sum)."""
    nn, F = lib.nn, lib.nn.functional

    class VAE(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(64, 32)
            self.fc21 = nn.Linear(32, 4)
            self.fc22 = nn.Linear(32, 4)
            self.fc3 = nn.Linear(4, 32)
            self.fc4 = nn.Linear(32, 64)
            self.eps = None

        def encode(self, x):
            h1 = F.relu(self.fc1(x))
            return self.fc21(h1), self.fc22(h1)

        def reparameterize(self, mu, logvar):
            std = lib.exp(0.5 * logvar)
            return mu + self.eps * std

        def decode(self, z):
            h3 = F.relu(self.fc3(z))
            return lib.sigmoid(self.fc4(h3))

        def forward(self, x):
            mu, logvar = self.encode(x.view(-1, 64))
            z = self.reparameterize(mu, logvar)
            return self.decode(z), mu, logvar

    model = VAE().to(device)
    model.optimizer = lambda: lib.optim.Adam(model.parameters(), lr=1e-3)
    return model


def vae_step(lib, model, data):
    F = lib.nn.functional
    model.opt.zero_grad()
    model.eps = data["eps"]
    recon_batch, mu, logvar = model(data["images"])
    bce = F.binary_cross_entropy(recon_batch, data["images"].view(-1, 64), reduction="sum")
    kld = -0.5 * lib.sum(1 + logvar - mu.pow(2) - logvar.exp())
    loss = bce + kld
    loss.backward()
    model.opt.step()
    return loss


def super_resolution(lib, device):
    """super_resolution/model.py: convs with ReLU into a PixelShuffle, orthogonal_ weights
    scaled by calculate_gain('relu'), MSELoss and Adam."""
    nn, init = lib.nn, lib.nn.init

    class Net(nn.Module):
        def __init__(self, upscale_factor):
            super().__init__()
            self.relu = nn.ReLU()
            self.conv1 = nn.Conv2d(1, 8, (5, 5), (1, 1), (2, 2))
            self.conv2 = nn.Conv2d(8, 8, (3, 3), (1, 1), (1, 1))
            self.conv3 = nn.Conv2d(8, 4, (3, 3), (1, 1), (1, 1))
            self.conv4 = nn.Conv2d(4, upscale_factor ** 2, (3, 3), (1, 1), (1, 1))
            self.pixel_shuffle = nn.PixelShuffle(upscale_factor)
            self._initialize_weights()

        def forward(self, x):
            x = self.relu(self.conv1(x))
            x = self.relu(self.conv2(x))
            x = self.relu(self.conv3(x))
            return self.pixel_shuffle(self.conv4(x))

        def _initialize_weights(self):
            init.orthogonal_(self.conv1.weight, init.calculate_gain("relu"))
            init.orthogonal_(self.conv2.weight, init.calculate_gain("relu"))
            init.orthogonal_(self.conv3.weight, init.calculate_gain("relu"))
            init.orthogonal_(self.conv4.weight)

    model = Net(upscale_factor=2).to(device)
    model.optimizer = lambda: lib.optim.Adam(model.parameters(), lr=0.01)
    return model


def super_resolution_step(lib, model, data):
    model.opt.zero_grad()
    loss = lib.nn.MSELoss()(model(data["images"]), data["target"])
    loss.backward()
    model.opt.step()
    return loss


def time_sequence(lib, device):
    """time_sequence_prediction/train.py: two LSTMCells unrolled over a sequence in float64
    (h_t, c_t from zeros of the input's dtype), chunked input, stacked outputs, and LBFGS with a
    closure."""
    nn = lib.nn

    class Sequence(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm1 = nn.LSTMCell(1, 8)
            self.lstm2 = nn.LSTMCell(8, 8)
            self.linear = nn.Linear(8, 1)

        def forward(self, input, future=0):
            outputs = []
            h_t = lib.zeros(input.size(0), 8, dtype=lib.double, device=input.device)
            c_t = lib.zeros(input.size(0), 8, dtype=lib.double, device=input.device)
            h_t2 = lib.zeros(input.size(0), 8, dtype=lib.double, device=input.device)
            c_t2 = lib.zeros(input.size(0), 8, dtype=lib.double, device=input.device)
            for input_t in input.split(1, dim=1):
                h_t, c_t = self.lstm1(input_t, (h_t, c_t))
                h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
                output = self.linear(h_t2)
                outputs += [output]
            for i in range(future):
                h_t, c_t = self.lstm1(output, (h_t, c_t))
                h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
                output = self.linear(h_t2)
                outputs += [output]
            return lib.cat(outputs, dim=1)

    model = Sequence().double().to(device)
    model.optimizer = lambda: lib.optim.LBFGS(model.parameters(), lr=0.8)
    return model


def time_sequence_step(lib, model, data):
    criterion = lib.nn.MSELoss()

    def closure():
        model.opt.zero_grad()
        out = model(data["wave_in"])
        loss = criterion(out, data["wave_target"])
        loss.backward()
        return loss
    model.opt.step(closure)
    with lib.no_grad():
        pred = model(data["wave_in"][:2], future=3)
        return criterion(pred[:, :-3], data["wave_target"][:2])


def word_language_model(lib, device, rnn_type="LSTM"):
    """word_language_model/model.py's RNNModel (Embedding, an nn.LSTM/GRU by getattr, a
    Linear decoder with tied weights, init_weights by uniform_ and zeros_, log_softmax
    outputs) and main.py's loop: batchify by narrow/view/t, get_batch slices, init_hidden by
    weight.new_zeros, repackage_hidden (detach), clip_grad_norm_, and the hand-written SGD
    update p.data.add_(p.grad, alpha=-lr)."""
    nn, F = lib.nn, lib.nn.functional

    class RNNModel(nn.Module):
        def __init__(self, rnn_type, ntoken, ninp, nhid, nlayers, dropout=0.0):
            super().__init__()
            self.ntoken = ntoken
            self.drop = nn.Dropout(dropout)
            self.encoder = nn.Embedding(ntoken, ninp)
            self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=dropout)
            self.decoder = nn.Linear(nhid, ntoken)
            self.decoder.weight = self.encoder.weight
            self.init_weights()
            self.rnn_type, self.nhid, self.nlayers = rnn_type, nhid, nlayers

        def init_weights(self):
            initrange = 0.1
            nn.init.uniform_(self.encoder.weight, -initrange, initrange)
            nn.init.zeros_(self.decoder.bias)
            nn.init.uniform_(self.decoder.weight, -initrange, initrange)

        def forward(self, input, hidden):
            emb = self.drop(self.encoder(input))
            output, hidden = self.rnn(emb, hidden)
            output = self.drop(output)
            decoded = self.decoder(output)
            decoded = decoded.view(-1, self.ntoken)
            return F.log_softmax(decoded, dim=1), hidden

        def init_hidden(self, bsz):
            weight = next(self.parameters())
            if self.rnn_type == "LSTM":
                return (weight.new_zeros(self.nlayers, bsz, self.nhid),
                        weight.new_zeros(self.nlayers, bsz, self.nhid))
            return weight.new_zeros(self.nlayers, bsz, self.nhid)

    model = RNNModel(rnn_type, 20, 8, 8, 2).to(device)
    model.optimizer = lambda: None
    model.hidden = None
    return model


def word_language_transformer(lib, device):
    """word_language_model/model.py's TransformerModel: a PositionalEncoding buffer (sin/cos by
    stepped slices, unsqueeze, transpose), nn.TransformerEncoder over TransformerEncoderLayers,
    the causal mask as log(tril(ones)) (log of zero: -inf), the embedding scaled by
    sqrt(ninp)."""
    nn, F = lib.nn, lib.nn.functional

    class PositionalEncoding(nn.Module):
        def __init__(self, d_model, dropout=0.0, max_len=32):
            super().__init__()
            self.dropout = nn.Dropout(p=dropout)
            pe = lib.zeros(max_len, d_model)
            position = lib.arange(0, max_len, dtype=lib.float).unsqueeze(1)
            div_term = lib.exp(lib.arange(0, d_model, 2).float()
                               * (-math.log(10000.0) / d_model))
            pe[:, 0::2] = lib.sin(position * div_term)
            pe[:, 1::2] = lib.cos(position * div_term)
            pe = pe.unsqueeze(0).transpose(0, 1)
            self.register_buffer("pe", pe)

        def forward(self, x):
            x = x + self.pe[:x.size(0), :]
            return self.dropout(x)

    class TransformerModel(nn.Transformer):
        def __init__(self, ntoken, ninp, nhead, nhid, nlayers, dropout=0.0):
            super().__init__(d_model=ninp, nhead=nhead, dim_feedforward=nhid,
                             num_encoder_layers=nlayers, dropout=dropout)
            self.model_type = "Transformer"
            self.src_mask = None
            self.pos_encoder = PositionalEncoding(ninp, dropout)
            self.input_emb = nn.Embedding(ntoken, ninp)
            self.ninp = ninp
            self.decoder = nn.Linear(ninp, ntoken)
            self.init_weights()

        def _generate_square_subsequent_mask(self, sz):
            return lib.log(lib.tril(lib.ones(sz, sz)))

        def init_weights(self):
            initrange = 0.1
            nn.init.uniform_(self.input_emb.weight, -initrange, initrange)
            nn.init.zeros_(self.decoder.bias)
            nn.init.uniform_(self.decoder.weight, -initrange, initrange)

        def forward(self, src, has_mask=True):
            if has_mask:
                device = src.device
                if self.src_mask is None or self.src_mask.size(0) != len(src):
                    self.src_mask = self._generate_square_subsequent_mask(len(src)).to(device)
            else:
                self.src_mask = None
            src = self.input_emb(src) * math.sqrt(self.ninp)
            src = self.pos_encoder(src)
            output = self.encoder(src, mask=self.src_mask)
            output = self.decoder(output)
            return F.log_softmax(output, dim=-1)

    model = TransformerModel(20, 8, 2, 16, 2).to(device)
    model.optimizer = lambda: None
    return model


def word_language_transformer_step(lib, model, data):
    return _language_model_epoch(lib, model, data, lambda batch: model(batch).view(-1, 20), 0.5)


def _batchify(data, bsz):
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    return data.view(bsz, -1).t().contiguous()


def _repackage_hidden(h):
    if isinstance(h, (tuple, list)):
        return tuple(_repackage_hidden(v) for v in h)
    return h.detach()


def word_language_model_step(lib, model, data):
    """The RNN's hidden state carried from batch to batch, cut from the graph each time."""
    if model.hidden is None:
        model.hidden = model.init_hidden(3)

    def forward(batch):
        model.hidden = _repackage_hidden(model.hidden)
        output, model.hidden = model(batch, model.hidden)
        return output
    return _language_model_epoch(lib, model, data, forward, 20.0)


def _language_model_epoch(lib, model, data, forward, lr, bptt=5):
    """main.py's train(): the batchified corpus bptt tokens at a time, NLLLoss of `forward`'s
    log-probabilities, clip_grad_norm_ and the hand-written SGD update; the mean loss."""
    train_data = _batchify(data["corpus"], 3)
    total = 0.0
    for i in range(0, train_data.size(0) - 1, bptt):
        seq_len = min(bptt, len(train_data) - 1 - i)
        batch, targets = train_data[i:i + seq_len], train_data[i + 1:i + 1 + seq_len].view(-1)
        model.zero_grad()
        loss = lib.nn.NLLLoss()(forward(batch), targets)
        loss.backward()
        lib.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-lr)
        total = total + loss.detach()
    return total / math.ceil((train_data.size(0) - 1) / bptt)


def _tokens(rng, length, batch):
    """Token ids (4..19) framed by <bos> 2 and <eos> 3, padded with 1, sequence first."""
    out = np.ones((length, batch), dtype=np.int64)
    for b in range(batch):
        n = rng.integers(2, length - 1)
        out[:n + 2, b] = [2, *rng.integers(4, 20, n), 3]
    return out


def _data(rng):
    """The synthetic inputs of every case, as numpy arrays (dtype given where it matters)."""
    adjacency = (rng.random((9, 9)) < 0.3).astype(np.float32)
    adjacency = np.maximum(adjacency, adjacency.T) + np.eye(9, dtype=np.float32)
    y = rng.integers(0, 10, 16)
    return {
        "target": np.array([[0.0, 0.0], [1.0, 0.0], [1.5, -0.5]], np.float32),
        "features": rng.random((9, 12)).astype(np.float32), "adjacency": adjacency,
        "labels": rng.integers(0, 5, 9), "train": rng.permutation(9)[:6],
        "images": rng.uniform(0, 255, (6, 3, 8, 8)).astype(np.float32),
        "style": rng.uniform(0, 255, (6, 3, 8, 8)).astype(np.float32),
        "x": rng.standard_normal((16, 20)).astype(np.float32), "y": y,
        "y_neg": (y + rng.integers(1, 10, 16)) % 10,
        "w": rng.standard_normal((4, 1)).astype(np.float32),
        "states": rng.standard_normal((7, 4)).astype(np.float32),
        "actions": rng.integers(0, 2, 7), "rewards": [1.0] * 7,
        "src": _tokens(rng, 7, 3), "tgt": _tokens(rng, 6, 3),
    }


def _case_data(rng, name):
    """The data a case reads, with the image-shaped inputs it needs."""
    data = _data(rng)
    if name == "mnist_rnn":
        data["images"] = rng.standard_normal((12, 1, 7, 7)).astype(np.float32)
        data["labels"] = rng.integers(0, 10, 12)
    elif name == "siamese":
        data["images"] = rng.integers(0, 256, (6, 1, 12, 12)).astype(np.float32)
        data["same"] = np.array([1, 0, 1, 1, 0, 1], np.float32)
    elif name == "regression":
        data["x"] = rng.standard_normal(32).astype(np.float32)
    elif name == "vae":
        data["images"] = rng.random((6, 1, 8, 8)).astype(np.float32)
        data["eps"] = rng.standard_normal((6, 4)).astype(np.float32)
    elif name == "super_resolution":
        data["images"] = rng.random((4, 1, 8, 8)).astype(np.float32)
        data["target"] = rng.random((4, 1, 16, 16)).astype(np.float32)
    elif name == "time_sequence":
        t = np.arange(13)[None, :] + rng.integers(-80, 80, (5, 1))
        wave = np.sin(t / 20.0).astype(np.float64)  # the example's period, T = 20
        data["wave_in"], data["wave_target"] = wave[:, :-1], wave[:, 1:]
    elif name.startswith("word_language_model"):
        data["corpus"] = rng.integers(0, 20, 50)
    elif name == "dcgan":
        data["images"] = rng.uniform(-1, 1, (6, 3, 16, 16)).astype(np.float32)
        data["noise"] = rng.standard_normal((6, 8, 1, 1)).astype(np.float32)
    return data


CASES = {
    "mass_spring": (mass_spring, mass_spring_step),
    "graph_networks": (graph_networks, graph_step),
    "mnist_rnn": (mnist_rnn, classifier_step),
    "forward_forward": (forward_forward, forward_forward_step),
    "regression": (regression, regression_step),
    "neural_style": (neural_style, neural_style_step),
    "actor_critic": (actor_critic, actor_critic_step),
    "siamese": (siamese, siamese_step),
    "translator": (translator, translator_step),
    "dcgan": (dcgan, dcgan_step),
    "vae": (vae, vae_step),
    "super_resolution": (super_resolution, super_resolution_step),
    "time_sequence": (time_sequence, time_sequence_step),
    "word_language_model_lstm": (word_language_model, word_language_model_step),
    "word_language_model_gru": (lambda lib, device: word_language_model(lib, device, "GRU"),
                                word_language_model_step),
    "word_language_model_transformer": (word_language_transformer,
                                        word_language_transformer_step),
}


# Examples whose few steps may amplify rounding (LBFGS at the example's lr can blow up on some
# initial weights): compared within torch's own distance from a run one ulp apart.
AMPLIFY_ROUNDING = {"time_sequence"}


@pytest.mark.filterwarnings("ignore:enable_nested_tensor", "ignore:Support for mismatched",
                            "ignore:`nn.init.xavier_uniform`")
@pytest.mark.parametrize("name", list(CASES))
def test_ported_example_trains_as_torch(name, rng, device):
    build, step = CASES[name]
    arrays = _case_data(rng, name)
    torch_model = build(torch, "cpu")
    model = copy_module(build(genesis, device), torch_model, device)
    twin = _one_ulp_apart(build, torch_model) if name in AMPLIFY_ROUNDING else None
    torch_data = {k: torch.tensor(v) for k, v in arrays.items()}
    expected = train_case(torch, torch_model, torch_data, step, 4)
    losses = train_case(genesis, model, {k: _tensor(genesis, device, v)
                                         for k, v in arrays.items()}, step, 4)
    scale = np.abs(expected).max()  # a loss summing terms of both signs may cross zero
    if twin is not None:
        neighbour = train_case(torch, twin, torch_data, step, 4)
        assert_trajectory_close(losses, expected, neighbour, atol=2e-4 * scale)
    else:
        np.testing.assert_allclose(losses, expected, rtol=2e-4, atol=2e-4 * scale)
        assert np.isfinite(expected).all()


def _one_ulp_apart(build, model):
    """Another torch build of the example holding `model`'s weights, each float one ulp larger
    in magnitude."""
    twin = build(torch, "cpu")
    twin.load_state_dict({k: v * (1 + torch.finfo(v.dtype).eps) if v.is_floating_point() else v
                          for k, v in model.state_dict().items()})
    return twin
