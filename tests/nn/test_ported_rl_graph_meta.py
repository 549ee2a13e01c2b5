"""Ported reinforcement-learning, graph, metric-learning, meta-learning and super-resolution
training scripts (the DQN tutorial, a from-scratch GCN and GAT, triplet mining with an ArcFace
head, MAML through torch.func, EDSR): for each, the smallest model using the API its reference
code uses, written once against a framework (`torch` or `genesis`) and trained a few steps from
the same initial weights on the same synthetic data in both; the losses must agree within 2e-4
relative in float32, and so must what the case keeps beside them (Q-values, node predictions,
mined indices, meta-gradients, PSNR). Random draws of the references (exploration coins,
replay samples, task batches) come with the data."""

import math
from collections import deque, namedtuple

import numpy as np
import pytest

from nn_compare import assert_case_trains_as_torch

pytestmark = pytest.mark.usefixtures("cudnn_ieee")

STEPS = 4


# DQN (the PyTorch "Reinforcement Learning (DQN)" tutorial) on a four-state chain written here:
# a replay memory of Transitions, epsilon-greedy actions, a policy and a target net, the
# Q-values of the actions taken by gather, the target net's max(1).values over the non-final
# next states, SmoothL1Loss, AdamW with amsgrad, clip_grad_value_ and the soft target update
# through state_dict() / load_state_dict().

Transition = namedtuple("Transition", ("state", "action", "next_state", "reward"))
CHAIN, EPISODE, CAPACITY = 4, 6, 8
BATCH_SIZE, GAMMA, EPS_START, EPS_END, EPS_DECAY, TAU = 4, 0.99, 0.9, 0.05, 10, 0.005


class ReplayMemory:
    """The tutorial's memory, its sample's random.sample drawn from a permutation in the
    data (the first `batch_size` positions it lists that the memory holds)."""

    def __init__(self, capacity):
        self.memory = deque([], maxlen=capacity)

    def push(self, *args):
        self.memory.append(Transition(*args))

    def sample(self, batch_size, order):
        picks = [i for i in order.tolist() if i < len(self.memory)][:batch_size]
        return [self.memory[i] for i in picks]

    def __len__(self):
        return len(self.memory)


def dqn(lib, device):
    """The tutorial's three-layer DQN as policy and target net (the target loaded from the
    policy's state_dict), AdamW(amsgrad=True)."""
    nn, F = lib.nn, lib.nn.functional

    class DQN(nn.Module):
        def __init__(self, n_observations, n_actions):
            super().__init__()
            self.layer1 = nn.Linear(n_observations, 32)
            self.layer2 = nn.Linear(32, 32)
            self.layer3 = nn.Linear(32, n_actions)

        def forward(self, x):
            x = F.relu(self.layer1(x))
            x = F.relu(self.layer2(x))
            return self.layer3(x)

    class Agent(nn.Module):
        def __init__(self):
            super().__init__()
            self.policy_net = DQN(CHAIN, 2)
            self.target_net = DQN(CHAIN, 2)
            self.target_net.load_state_dict(self.policy_net.state_dict())

    model = Agent().to(device)
    # eight transitions hold at most three final ones (each takes three moves right), so a
    # batch of four always has a next state for the tutorial's torch.cat
    model.memory, model.steps_done = ReplayMemory(CAPACITY), 0
    model.episode_durations, model.duration = [], 0
    model.optimizer = lambda: lib.optim.AdamW(model.policy_net.parameters(), lr=1e-3,
                                              amsgrad=True)
    return model


def _chain_state(lib, position, device):
    """The chain's observation (one-hot of the position) as the tutorial makes it."""
    observation = [float(i == position) for i in range(CHAIN)]
    return lib.tensor(observation, dtype=lib.float32, device=device).unsqueeze(0)


def _select_action(lib, model, state, coin, random_action):
    """Epsilon-greedy with the tutorial's decaying threshold; the coin and the random action
    come from the data."""
    eps_threshold = EPS_END + (EPS_START - EPS_END) * math.exp(-1. * model.steps_done / EPS_DECAY)
    model.steps_done += 1
    if coin > eps_threshold:
        with lib.no_grad():
            return model.policy_net(state).max(1).indices.view(1, 1)
    return lib.tensor([[random_action]], device=state.device, dtype=lib.long)


def _optimize_model(lib, model, order):
    """One optimisation of the policy net on a batch from the memory (the tutorial's
    optimize_model), returning the loss."""
    transitions = model.memory.sample(BATCH_SIZE, order)
    batch = Transition(*zip(*transitions))
    device = batch.state[0].device
    non_final_mask = lib.tensor(tuple(map(lambda s: s is not None, batch.next_state)),
                                device=device, dtype=lib.bool)
    non_final_next_states = lib.cat([s for s in batch.next_state if s is not None])
    state_batch = lib.cat(batch.state)
    action_batch = lib.cat(batch.action)
    reward_batch = lib.cat(batch.reward)
    state_action_values = model.policy_net(state_batch).gather(1, action_batch)
    next_state_values = lib.zeros(BATCH_SIZE, device=device)
    with lib.no_grad():
        next_state_values[non_final_mask] = model.target_net(non_final_next_states).max(1).values
    expected_state_action_values = (next_state_values * GAMMA) + reward_batch
    criterion = lib.nn.SmoothL1Loss()
    loss = criterion(state_action_values, expected_state_action_values.unsqueeze(1))
    model.opt.zero_grad()
    loss.backward()
    lib.nn.utils.clip_grad_value_(model.policy_net.parameters(), 100)
    model.opt.step()
    return loss


def _soft_update(model):
    """target = TAU * policy + (1 - TAU) * target, key by key of the state dicts."""
    target_net_state_dict = model.target_net.state_dict()
    policy_net_state_dict = model.policy_net.state_dict()
    for key in policy_net_state_dict:
        target_net_state_dict[key] = (policy_net_state_dict[key] * TAU
                                      + target_net_state_dict[key] * (1 - TAU))
    model.target_net.load_state_dict(target_net_state_dict)


def dqn_step(lib, model, data):
    """EPISODE steps of the chain from its first state (right moves on, left back; reaching
    the end pays 1 and ends the episode, each other step costs 0.1), each pushed to the
    memory, then optimised on once the memory holds a batch, and the target net softly
    updated: the mean loss."""
    device = data["coins"].device
    losses = []
    position = 0
    state = _chain_state(lib, position, device)
    for _ in range(EPISODE):
        draw = model.steps_done
        action = _select_action(lib, model, state, data["coins"][draw].item(),
                                data["random_actions"][draw].item())
        position = max(position + (1 if action.item() == 1 else -1), 0)
        terminated = position == CHAIN - 1
        reward = lib.tensor([1.0 if terminated else -0.1], device=device)
        next_state = None if terminated else _chain_state(lib, position, device)
        model.memory.push(state, action, next_state, reward)
        state = next_state
        if len(model.memory) >= BATCH_SIZE:
            losses.append(_optimize_model(lib, model, data["orders"][draw]))
        _soft_update(model)
        model.duration += 1
        if terminated:
            model.episode_durations.append(model.duration)
            model.duration = 0
            position = 0
            state = _chain_state(lib, position, device)
    return lib.stack(losses).mean()


def dqn_keeps(lib, model, data):
    """The actions in the memory, both nets' Q-values on every state, the target net's
    weights, AdamW's amsgrad state and the tutorial's plot_durations means (over 2 episodes
    where it averages 100)."""
    states = lib.cat([_chain_state(lib, p, data["coins"].device) for p in range(CHAIN)])
    actions = lib.cat([t.action for t in model.memory.memory])
    with lib.no_grad():
        q_values = [model.policy_net(states), model.target_net(states)]
    amsgrad = [s["max_exp_avg_sq"] for s in model.opt.state.values()]
    durations_t = lib.tensor(model.episode_durations + [model.duration], dtype=lib.float)
    means = durations_t
    if len(durations_t) >= 2:
        means = durations_t.unfold(0, 2, 1).mean(1).view(-1)
        means = lib.cat((lib.zeros(1), means))
    return [actions, *q_values, means, *model.target_net.state_dict().values(), *amsgrad]


# A graph network in plain PyTorch (no PyG), as from-scratch GCN and GAT tutorials write it:
# self-loops added to an edge list, the symmetric degree normalisation from scatter_add_, a
# GCN layer passing messages with index_add_, then a GAT layer over the dense adjacency
# (LeakyReLU scores, softmax over neighbours after masked_fill(-inf), heads averaged); node
# classification on a train mask, Adam with weight decay.

def gcn_norm(lib, edge_index, num_nodes):
    """The edge list with self-loops and each edge's 1 / sqrt(deg(src) deg(dst))."""
    loops = lib.arange(num_nodes, device=edge_index.device)
    edge_index = lib.cat([edge_index, lib.stack([loops, loops])], dim=1)
    row, col = edge_index
    deg = lib.zeros(num_nodes, device=edge_index.device).scatter_add_(
        0, col, lib.ones(col.size(0), device=edge_index.device))
    deg_inv_sqrt = deg.pow(-0.5)
    deg_inv_sqrt[deg_inv_sqrt == float("inf")] = 0
    return edge_index, deg_inv_sqrt[row] * deg_inv_sqrt[col]


def graph_net(lib, device, in_features=6, hidden=8, heads=2, classes=3):
    """A GCN layer then a GAT layer over the same graph."""
    nn, F = lib.nn, lib.nn.functional

    class GCNConv(nn.Module):
        def __init__(self, in_channels, out_channels):
            super().__init__()
            self.lin = nn.Linear(in_channels, out_channels, bias=False)
            self.bias = nn.Parameter(lib.empty(out_channels))
            nn.init.xavier_uniform_(self.lin.weight)
            nn.init.zeros_(self.bias)

        def forward(self, x, edge_index, norm):
            x = self.lin(x)
            row, col = edge_index
            out = lib.zeros_like(x).index_add_(0, col, norm.view(-1, 1) * x[row])
            return out + self.bias

    class GATLayer(nn.Module):
        def __init__(self, in_features, out_features, heads, alpha=0.2, dropout=0.0):
            super().__init__()
            self.heads, self.out_features, self.dropout = heads, out_features, dropout
            self.W = nn.Linear(in_features, heads * out_features, bias=False)
            self.a_src = nn.Parameter(lib.empty(1, heads, out_features))
            self.a_dst = nn.Parameter(lib.empty(1, heads, out_features))
            self.leakyrelu = nn.LeakyReLU(alpha)
            nn.init.xavier_uniform_(self.W.weight, gain=1.414)
            nn.init.xavier_uniform_(self.a_src, gain=1.414)
            nn.init.xavier_uniform_(self.a_dst, gain=1.414)

        def forward(self, h, adj):
            n = h.size(0)
            wh = self.W(h).view(n, self.heads, self.out_features)
            e_src, e_dst = (wh * self.a_src).sum(-1), (wh * self.a_dst).sum(-1)
            e = self.leakyrelu(e_dst.unsqueeze(1) + e_src.unsqueeze(0))  # (dst, src, heads)
            e = e.masked_fill(adj.unsqueeze(-1) == 0, float("-inf"))
            attention = F.dropout(F.softmax(e, dim=1), self.dropout, training=self.training)
            self.attention = attention
            return lib.einsum("ijh,jhf->ihf", attention, wh).mean(dim=1)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = GCNConv(in_features, hidden)
            self.gat = GATLayer(hidden, classes, heads)

        def forward(self, x, edge_index):
            edge_index, norm = gcn_norm(lib, edge_index, x.size(0))
            adj = lib.zeros(x.size(0), x.size(0), device=x.device)
            adj[edge_index[1], edge_index[0]] = 1
            x = F.dropout(F.relu(self.conv1(x, edge_index, norm)), 0.0, training=self.training)
            return F.log_softmax(self.gat(x, adj), dim=1)

    model = Net().to(device)
    model.optimizer = lambda: lib.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    return model


def graph_step(lib, model, data):
    model.train()
    model.opt.zero_grad()
    out = model(data["node_features"], data["edge_index"])
    loss = lib.nn.functional.nll_loss(out[data["train_mask"]],
                                      data["node_labels"][data["train_mask"]])
    loss.backward()
    model.opt.step()
    return loss


def graph_keeps(lib, model, data):
    """The evaluation's predictions, test accuracy (as the tutorials count it), log-probabilities
    and attention weights."""
    model.eval()
    with lib.no_grad():
        out = model(data["node_features"], data["edge_index"])
    pred = out.argmax(dim=1)
    test_mask = ~data["train_mask"]
    correct = (pred[test_mask] == data["node_labels"][test_mask]).sum()
    acc = int(correct) / int(test_mask.sum())
    return [pred, lib.tensor(acc), out, model.gat.attention]


# Metric learning: an embedding net on the unit sphere (F.normalize), batch-hard triplets
# mined with cdist (the hardest positive by argsort, the hardest negative by topk), trained
# with TripletMarginLoss and TripletMarginWithDistanceLoss (a cosine distance lambda) beside an
# ArcFace head (F.linear of normalised features and weights, acos / cos of the clamped cosine
# with an additive angular margin, one_hot by scatter_).

def metric(lib, device, in_features=8, dim=6, classes=4):
    """The embedding net and the ArcFace head, trained by Adam."""
    nn, F = lib.nn, lib.nn.functional

    class EmbeddingNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(nn.Linear(in_features, 16), nn.PReLU(), nn.Linear(16, dim))

        def forward(self, x):
            return F.normalize(self.net(x), p=2, dim=1)

    class ArcMarginProduct(nn.Module):
        def __init__(self, in_features, out_features, s=16.0, m=0.5):
            super().__init__()
            self.s, self.m = s, m
            self.weight = nn.Parameter(lib.FloatTensor(out_features, in_features))
            nn.init.xavier_uniform_(self.weight)

        def forward(self, input, label):
            cosine = F.linear(F.normalize(input), F.normalize(self.weight))
            theta = lib.acos(lib.clamp(cosine, -1.0 + 1e-7, 1.0 - 1e-7))
            target_logits = lib.cos(theta + self.m)
            one_hot = lib.zeros(cosine.size(), device=input.device)
            one_hot.scatter_(1, label.view(-1, 1).long(), 1)
            output = (one_hot * target_logits) + ((1.0 - one_hot) * cosine)
            return output * self.s

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.embedding = EmbeddingNet()
            self.head = ArcMarginProduct(dim, classes)

    model = Model().to(device)
    model.triplet = nn.TripletMarginLoss(margin=0.2, p=2)
    model.cosine_triplet = nn.TripletMarginWithDistanceLoss(
        distance_function=lambda x, y: 1.0 - F.cosine_similarity(x, y), margin=0.3)
    model.optimizer = lambda: lib.optim.Adam(model.parameters(), lr=5e-3)
    return model


def batch_hard(lib, embeddings, labels):
    """Each anchor's farthest positive (argsort of its distances with the negatives at -1) and
    nearest negative (topk of the negated distances with the positives at +inf)."""
    with lib.no_grad():
        dist = lib.cdist(embeddings, embeddings, p=2)
        same = labels.unsqueeze(0) == labels.unsqueeze(1)
        positives = dist.masked_fill(~same, -1.0).argsort(dim=1, descending=True)[:, 0]
        negatives = (-dist.masked_fill(same, float("inf"))).topk(1, dim=1).indices.squeeze(1)
    return dist, positives, negatives


def metric_step(lib, model, data):
    x, labels = data["points"], data["point_labels"]
    embeddings = model.embedding(x)
    _, positives, negatives = batch_hard(lib, embeddings, labels)
    anchor, positive, negative = embeddings, embeddings[positives], embeddings[negatives]
    loss = (model.triplet(anchor, positive, negative)
            + model.cosine_triplet(anchor, positive, negative)
            + lib.nn.functional.cross_entropy(model.head(embeddings, labels), labels))
    model.opt.zero_grad()
    loss.backward()
    model.opt.step()
    return loss


def metric_keeps(lib, model, data):
    """The mined pairs and distances, nearest-neighbour retrieval (the distances to the
    other points sorted by topk) and the head's logits."""
    with lib.no_grad():
        embeddings = model.embedding(data["points"])
        dist, positives, negatives = batch_hard(lib, embeddings, data["point_labels"])
        eye = lib.eye(dist.size(0), dtype=lib.bool, device=dist.device)
        nearest = dist.masked_fill(eye, float("inf")).topk(3, dim=1, largest=False)
        logits = model.head(embeddings, data["point_labels"])
    return [positives, negatives, dist, nearest.values, nearest.indices, logits]


# MAML (the torch.func MAML example, evjang_transforms_module.py, and learn2learn-style
# second-order MAML): sine-wave regression tasks; each task's fast weights come from
# functional_call and autograd.grad(create_graph=True) over params.values(), the meta-loss of
# the adapted weights trains the model by Adam. What it keeps is the example's vmap over tasks of
# grad of the inner loss, and the meta-gradient through it.

MAML_ALPHA, MAML_INNER_STEPS = 0.1, 2


def maml(lib, device):
    nn = lib.nn
    model = nn.Sequential(nn.Linear(1, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(),
                          nn.Linear(16, 1)).to(device)
    model.optimizer = lambda: lib.optim.Adam(dict(model.named_parameters()).values(), lr=1e-2)
    return model


def _adapt(lib, model, params, x, y):
    """MAML_INNER_STEPS of SGD on a task's support set, differentiable (second order)."""
    F = lib.nn.functional
    fast = params
    for _ in range(MAML_INNER_STEPS):
        loss = F.mse_loss(lib.func.functional_call(model, fast, (x,)), y)
        grads = lib.autograd.grad(loss, fast.values(), create_graph=True)
        fast = {name: p - MAML_ALPHA * g for (name, p), g in zip(fast.items(), grads)}
    return fast


def maml_step(lib, model, data):
    F = lib.nn.functional
    i = getattr(model, "global_step", 0)
    x1, y1, x2, y2 = (data[k][i] for k in ("x1", "y1", "x2", "y2"))
    params = dict(model.named_parameters())
    meta_losses = []
    for t in range(x1.size(0)):
        fast = _adapt(lib, model, params, x1[t], y1[t])
        meta_losses.append(F.mse_loss(lib.func.functional_call(model, fast, (x2[t],)), y2[t]))
    loss = lib.stack(meta_losses).mean()
    model.opt.zero_grad()
    loss.backward()
    model.opt.step()
    model.global_step = i + 1
    return loss


def maml_keeps(lib, model, data):
    """The torch.func example's per-task losses by vmap(get_loss_for_task) (one inner step by
    grad) and the meta-gradient of their mean by grad, on the last task batch."""
    F, func = lib.nn.functional, lib.func
    x1, y1, x2, y2 = (data[k][-1] for k in ("x1", "y1", "x2", "y2"))

    def get_loss_for_task(params, x1, y1, x2, y2):
        def inner_loss(params, x1, y1):
            return F.mse_loss(func.functional_call(model, params, (x1,)), y1)

        grads = func.grad(inner_loss)(params, x1, y1)
        new_params = {k: params[k] - MAML_ALPHA * grads[k] for k in params}
        return F.mse_loss(func.functional_call(model, new_params, (x2,)), y2)

    def meta_loss(params):
        return func.vmap(get_loss_for_task, in_dims=(None, 0, 0, 0, 0))(
            params, x1, y1, x2, y2)

    params = {k: v.detach() for k, v in model.named_parameters()}
    meta_grads = func.grad(lambda p: meta_loss(p).mean())(params)
    return [meta_loss(params), *meta_grads.values()]


# EDSR (EDSR-PyTorch's baseline, the ESPCN example being ported in test_ported_examples):
# MeanShift 1x1 convs with frozen weights set through .data, residual blocks scaled by
# res_scale with in-place adds, a PixelShuffle upsampler, L1Loss, Adam with MultiStepLR; PSNR
# as the examples compute it (10 * log10(1 / mse.item()), and EDSR's shaved -10 * log10(mse)).

def edsr(lib, device, n_resblocks=2, n_feats=8, scale=2, rgb_range=1, res_scale=0.1):
    nn = lib.nn

    class MeanShift(nn.Conv2d):
        def __init__(self, rgb_range, rgb_mean=(0.4488, 0.4371, 0.4040), rgb_std=(1.0, 1.0, 1.0),
                     sign=-1):
            super().__init__(3, 3, kernel_size=1)
            std = lib.Tensor(rgb_std)
            self.weight.data = lib.eye(3).view(3, 3, 1, 1) / std.view(3, 1, 1, 1)
            self.bias.data = sign * rgb_range * lib.Tensor(rgb_mean) / std
            for p in self.parameters():
                p.requires_grad = False

    def default_conv(in_channels, out_channels, kernel_size, bias=True):
        return nn.Conv2d(in_channels, out_channels, kernel_size, padding=(kernel_size // 2),
                         bias=bias)

    class ResBlock(nn.Module):
        def __init__(self, conv, n_feats, kernel_size, act=nn.ReLU(True), res_scale=1):
            super().__init__()
            self.body = nn.Sequential(conv(n_feats, n_feats, kernel_size), act,
                                      conv(n_feats, n_feats, kernel_size))
            self.res_scale = res_scale

        def forward(self, x):
            res = self.body(x).mul(self.res_scale)
            res += x
            return res

    class Upsampler(nn.Sequential):
        def __init__(self, conv, scale, n_feats):
            m = []
            for _ in range(int(math.log(scale, 2))):
                m.append(conv(n_feats, 4 * n_feats, 3))
                m.append(nn.PixelShuffle(2))
            super().__init__(*m)

    class EDSR(nn.Module):
        def __init__(self, conv=default_conv):
            super().__init__()
            act = nn.ReLU(True)
            self.sub_mean = MeanShift(rgb_range)
            self.add_mean = MeanShift(rgb_range, sign=1)
            self.head = nn.Sequential(conv(3, n_feats, 3))
            self.body = nn.Sequential(
                *[ResBlock(conv, n_feats, 3, act=act, res_scale=res_scale)
                  for _ in range(n_resblocks)], conv(n_feats, n_feats, 3))
            self.tail = nn.Sequential(Upsampler(conv, scale, n_feats), conv(n_feats, 3, 3))

        def forward(self, x):
            x = self.sub_mean(x)
            x = self.head(x)
            res = self.body(x)
            res += x
            x = self.tail(res)
            return self.add_mean(x)

    model = EDSR().to(device)
    model.optimizer = lambda: lib.optim.Adam(
        filter(lambda x: x.requires_grad, model.parameters()), lr=1e-3, betas=(0.9, 0.999),
        eps=1e-8)
    model.scheduler = lambda opt: lib.optim.lr_scheduler.MultiStepLR(opt, milestones=[2, 3],
                                                                     gamma=0.5)
    return model


def edsr_step(lib, model, data):
    model.opt.zero_grad()
    loss = lib.nn.L1Loss()(model(data["low_res"]), data["high_res"])
    loss.backward()
    model.opt.step()
    model.sched.step()
    return loss


def edsr_keeps(lib, model, data, scale=2, rgb_range=1):
    """The super-resolved images, both PSNRs and the learning rate."""
    with lib.no_grad():
        sr = model(data["low_res"])
    mse = lib.nn.MSELoss()(sr, data["high_res"])
    psnr = 10 * math.log10(1 / mse.item())
    diff = (sr - data["high_res"]) / rgb_range
    shave = scale + 2
    valid = diff[..., shave:-shave, shave:-shave]
    edsr_psnr = -10 * lib.log10(valid.pow(2).mean())
    return [sr, lib.tensor(psnr), edsr_psnr, lib.tensor(model.sched.get_last_lr())]


CASES = {
    "dqn": (dqn, dqn_step, dqn_keeps),
    "graph_gcn_gat": (graph_net, graph_step, graph_keeps),
    "metric_triplet_arcface": (metric, metric_step, metric_keeps),
    "maml_torch_func": (maml, maml_step, maml_keeps),
    "edsr": (edsr, edsr_step, edsr_keeps),
}


def _graph(rng, n=10):
    """A random undirected graph of n nodes (a ring plus random chords, both directions
    listed) and its node features, labels and train mask."""
    edges = {(i, (i + 1) % n) for i in range(n)}
    edges |= {tuple(e) for e in rng.integers(0, n, (6, 2)) if e[0] != e[1]}
    edges |= {(b, a) for a, b in edges}
    edge_index = np.array(sorted(edges)).T
    train_mask = np.zeros(n, dtype=bool)
    train_mask[rng.permutation(n)[:6]] = True
    return {"edge_index": edge_index, "node_features": rng.standard_normal((n, 6), np.float32),
            "node_labels": rng.integers(0, 3, n), "train_mask": train_mask}


def _sine_tasks(rng, tasks=3, k=5):
    """Sine regression task batches (amplitude, phase) of support and query sets per step."""
    amplitude = rng.uniform(0.1, 5.0, (STEPS, tasks, 1, 1))
    phase = rng.uniform(0, np.pi, (STEPS, tasks, 1, 1))
    x1, x2 = (rng.uniform(-5, 5, (STEPS, tasks, k, 1)) for _ in range(2))
    return {k: v.astype(np.float32) for k, v in {
        "x1": x1, "y1": amplitude * np.sin(x1 + phase),
        "x2": x2, "y2": amplitude * np.sin(x2 + phase)}.items()}


def _data(rng):
    """The synthetic inputs and random draws every case reads from, as numpy arrays."""
    draws = STEPS * EPISODE
    high_res = rng.random((2, 3, 12, 12), np.float32)
    return {
        "coins": rng.random(draws), "random_actions": rng.integers(0, 2, draws),
        "orders": np.stack([rng.permutation(CAPACITY) for _ in range(draws)]),
        **_graph(rng),
        "points": rng.standard_normal((12, 8), np.float32),
        "point_labels": np.repeat(np.arange(4), 3),
        **_sine_tasks(rng),
        "high_res": high_res,
        "low_res": high_res.reshape(2, 3, 6, 2, 6, 2).mean((3, 5)),
    }


@pytest.mark.parametrize("name", list(CASES))
def test_ported_rl_graph_meta_model_trains_as_torch(name, rng, device):
    assert_case_trains_as_torch(*CASES[name], _data(rng), device, STEPS)
