"""RNN, LSTM, GRU and their cells against torch: outputs, final states and every gradient, with
weights copied through state dicts both ways; packed, unbatched, bf16 and error cases."""

import math
import re
import warnings

import numpy as np
import pytest
import torch

import genesis
import genesis.nn as nn
from genesis.nn.functional import recurrent as R
from genesis.nn.functional import recurrent_scan as S
from genesis.nn.utils import rnn as rnn_utils
from helpers import TOLERANCES, assert_close, from_torch, to_torch

pytestmark = pytest.mark.usefixtures("cudnn_ieee")

LAYER_CASES = [
    ("RNN", {}),
    ("RNN", {"nonlinearity": "relu", "num_layers": 2}),
    ("RNN", {"bidirectional": True, "bias": False}),
    ("LSTM", {}),
    ("LSTM", {"num_layers": 2, "bidirectional": True}),
    ("LSTM", {"proj_size": 3}),
    ("LSTM", {"proj_size": 2, "num_layers": 2, "bidirectional": True, "bias": False}),
    ("GRU", {}),
    ("GRU", {"num_layers": 3, "bidirectional": True}),
    ("GRU", {"bias": False, "num_layers": 2}),
]


@pytest.fixture(params=["sequence", "per_step"])
def scan_path(request, monkeypatch):
    """A layer test runs on both paths: LSTM and GRU over equal lengths take the sequence-level
    Function (functional/recurrent_scan.py) unless it is switched off."""
    monkeypatch.setattr(S, "ENABLED", request.param == "sequence")
    return request.param


def _case_id(case):
    name, kwargs = case
    return name + "".join(f"-{k}={v}" for k, v in kwargs.items())


def layer_pair(name, *args, device="cpu", **kwargs):
    """A torch layer (default init) and the genesis one holding its weights."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tl = getattr(torch.nn, name)(*args, **kwargs)
    gl = getattr(nn, name)(*args, **kwargs).to(device)
    gl.load_state_dict({k: from_torch(v, device) for k, v in tl.state_dict().items()})
    return gl, tl


def state_shapes(name, kwargs, hidden, batch):
    """The shapes of (h_0,) or (h_0, c_0) for a layer built with `kwargs`."""
    count = kwargs.get("num_layers", 1) * (2 if kwargs.get("bidirectional") else 1)
    proj = kwargs.get("proj_size", 0) or hidden
    lead = (count,) if batch is None else (count, batch)
    return [lead + (proj,), lead + (hidden,)] if name == "LSTM" else [lead + (hidden,)]


def random_pair(shape, rng, device, requires_grad=True):
    t = torch.from_numpy(rng.standard_normal(shape).astype(np.float32))
    return from_torch(t, device, requires_grad=requires_grad), t.requires_grad_(requires_grad)


def as_tuple(hidden):
    return tuple(hidden) if isinstance(hidden, tuple) else (hidden,)


def pack_hidden(name, states):
    return tuple(states) if name == "LSTM" else states[0]


def backward_both(g_out, t_out, rng):
    """Backward one random cotangent per output (tensors or tuples of them) in both."""
    g_terms, t_terms = [], []
    for g, t in zip(g_out, t_out):
        weight = rng.standard_normal(tuple(t.shape)).astype(np.float32)
        g_terms.append((g * genesis.tensor(weight, device=g.device)).sum())
        t_terms.append((t * torch.from_numpy(weight)).sum())
    sum(t_terms).backward()
    sum(g_terms[1:], g_terms[0]).backward()


def compare_param_grads(gl, tl, dtype=genesis.float32):
    g_params = dict(gl.named_parameters())
    assert list(g_params) == [n for n, _ in tl.named_parameters()]
    for name, tp in tl.named_parameters():
        assert_close(g_params[name].grad, tp.grad, dtype)


def compare_run(gl, tl, outputs, inputs, rng):
    """Given both layers' (output, hidden) and their (x, states) leaves: the final states, then
    after one backward the input, state and parameter gradients agree with torch's."""
    (g_out, g_hidden), (t_out, t_hidden) = outputs
    (gx, g_states), (tx, t_states) = inputs
    for g, t in zip(as_tuple(g_hidden), as_tuple(t_hidden)):
        assert_close(g, t)
    backward_both((g_out,) + as_tuple(g_hidden), (t_out,) + as_tuple(t_hidden), rng)
    assert_close(gx.grad, tx.grad)
    for g, t in zip(g_states, t_states):
        assert_close(g.grad, t.grad)
    compare_param_grads(gl, tl)


@pytest.mark.parametrize("case", LAYER_CASES, ids=_case_id)
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("with_state", [False, True])
def test_layer_matches_torch(case, batch_first, with_state, rng, device, scan_path):
    check_layer(case, batch_first, with_state, rng, device, (5, 3, 4, 6))


@pytest.mark.parametrize("case", [c for c in LAYER_CASES if c[0] != "RNN"], ids=_case_id)
def test_layer_with_aligned_steps_matches_torch(case, rng, device, scan_path):
    """Batch 4 and hidden size 8 make each float32 step's slice of a sequence buffer a multiple
    of 16 bytes: on the GPU the sequence-level path then plans its step products once and
    moves their addresses (kernels/recurrent.py, scan_step); batch 3 and hidden size 6 (the
    test above) keep the views it makes per step."""
    check_layer(case, False, True, rng, device, (5, 4, 4, 8))


def check_layer(case, batch_first, with_state, rng, device, sizes):
    """A layer's outputs and gradients over (steps, batch, features, hidden) `sizes` agree
    with torch's."""
    name, kwargs = case
    steps, batch, features, hidden = sizes
    gl, tl = layer_pair(name, features, hidden, batch_first=batch_first, device=device, **kwargs)
    shape = (batch, steps, features) if batch_first else (steps, batch, features)
    gx, tx = random_pair(shape, rng, device)
    g_states, t_states = [], []
    if with_state:
        for s in state_shapes(name, kwargs, hidden, batch):
            g, t = random_pair(s, rng, device)
            g_states.append(g)
            t_states.append(t)
    g_out, g_hidden = gl(gx, pack_hidden(name, g_states) if with_state else None)
    t_out, t_hidden = tl(tx, pack_hidden(name, t_states) if with_state else None)
    assert_close(g_out, t_out)
    compare_run(gl, tl, ((g_out, g_hidden), (t_out, t_hidden)),
                ((gx, g_states), (tx, t_states)), rng)


@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_packed_input_matches_torch(name, enforce_sorted, rng, device):
    kwargs = {"num_layers": 2, "bidirectional": True}
    if name == "LSTM":
        kwargs["proj_size"] = 3
    gl, tl = layer_pair(name, 4, 5, device=device, **kwargs)
    lengths = [6, 4, 4, 2, 1] if enforce_sorted else [2, 6, 1, 4, 3]
    gx, tx = random_pair((6, 5, 4), rng, device)
    g_states, t_states = zip(*(random_pair(s, rng, device)
                               for s in state_shapes(name, kwargs, 5, 5)))
    g_packed = rnn_utils.pack_padded_sequence(gx, lengths, enforce_sorted=enforce_sorted)
    t_packed = torch.nn.utils.rnn.pack_padded_sequence(tx, lengths,
                                                       enforce_sorted=enforce_sorted)
    g_out, g_hidden = gl(g_packed, pack_hidden(name, g_states))
    t_out, t_hidden = tl(t_packed, pack_hidden(name, t_states))
    assert isinstance(g_out, rnn_utils.PackedSequence)
    assert g_out.batch_sizes.tolist() == t_out.batch_sizes.tolist()
    assert_close(g_out.data, t_out.data)
    g_pad, g_len = rnn_utils.pad_packed_sequence(g_out)
    t_pad, t_len = torch.nn.utils.rnn.pad_packed_sequence(t_out)
    assert_close(g_pad, t_pad)
    assert g_len.tolist() == t_len.tolist()
    compare_run(gl, tl, ((g_pad, g_hidden), (t_pad, t_hidden)),
                ((gx, g_states), (tx, t_states)), rng)


@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("batch_first", [False, True])
def test_unbatched_input(name, batch_first, rng, device, scan_path):
    gl, tl = layer_pair(name, 3, 4, num_layers=2, bidirectional=True, batch_first=batch_first,
                        device=device)
    gx, tx = random_pair((5, 3), rng, device)
    g_states, t_states = zip(*(random_pair(s, rng, device)
                               for s in state_shapes(name, {"num_layers": 2,
                                                            "bidirectional": True}, 4, None)))
    g_out, g_hidden = gl(gx, pack_hidden(name, g_states))
    t_out, t_hidden = tl(tx, pack_hidden(name, t_states))
    assert_close(g_out, t_out)
    compare_run(gl, tl, ((g_out, g_hidden), (t_out, t_hidden)),
                ((gx, g_states), (tx, t_states)), rng)


@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU"])
def test_dropout_between_layers(name, rng, device, scan_path):
    """In eval mode dropout is off; in training, p=1 zeroes every layer's input but the
    first's, which both frameworks then agree on exactly."""
    for p, train in ((0.5, False), (1.0, True)):
        gl, tl = layer_pair(name, 3, 4, num_layers=3, dropout=p, device=device)
        gl.train(train)
        tl.train(train)
        gx, tx = random_pair((4, 2, 3), rng, device, requires_grad=False)
        g_out, g_hidden = gl(gx)
        t_out, t_hidden = tl(tx)
        assert_close(g_out, t_out)
        for g, t in zip(as_tuple(g_hidden), as_tuple(t_hidden)):
            assert_close(g, t)


CELL_CASES = [("RNNCell", {}), ("RNNCell", {"nonlinearity": "relu"}), ("RNNCell", {"bias": False}),
              ("LSTMCell", {}), ("LSTMCell", {"bias": False}), ("GRUCell", {}),
              ("GRUCell", {"bias": False})]


@pytest.mark.parametrize("case", CELL_CASES, ids=_case_id)
@pytest.mark.parametrize("batch", [None, 1, 3])
@pytest.mark.parametrize("with_state", [False, True])
def test_cell_matches_torch(case, batch, with_state, rng, device):
    name, kwargs = case
    gl, tl = layer_pair(name, 4, 5, device=device, **kwargs)
    lead = () if batch is None else (batch,)
    gx, tx = random_pair(lead + (4,), rng, device)
    count = 2 if name == "LSTMCell" else 1
    pairs = [random_pair(lead + (5,), rng, device) for _ in range(count)] if with_state else []
    g_hx = (tuple(p[0] for p in pairs) if count == 2 else pairs[0][0]) if pairs else None
    t_hx = (tuple(p[1] for p in pairs) if count == 2 else pairs[0][1]) if pairs else None
    g_out, t_out = as_tuple(gl(gx, g_hx)), as_tuple(tl(tx, t_hx))
    for g, t in zip(g_out, t_out):
        assert_close(g, t)
    backward_both(g_out, t_out, rng)
    assert_close(gx.grad, tx.grad)
    for g, t in pairs:
        assert_close(g.grad, t.grad)
    compare_param_grads(gl, tl)


@pytest.mark.parametrize("name", ["RNNCell", "LSTMCell", "GRUCell"])
def test_cell_gradcheck_float64(name, rng):
    cell = getattr(nn, name)(3, 4).double()
    x, h, c = (genesis.tensor(rng.standard_normal(s), requires_grad=True)
               for s in ((2, 3), (2, 4), (2, 4)))

    def run(x, h, c):
        out = cell(x, (h, c)) if name == "LSTMCell" else cell(x, h)
        return sum(o.square().sum() for o in as_tuple(out))

    assert genesis.autograd.gradcheck(run, (x, h, c))


@pytest.mark.parametrize("step", ["rnn", "lstm", "lstm_proj", "gru"])
def test_step_weights_gradcheck_float64(step, rng):
    """The gate math's gradients with respect to the recurrent weights and biases."""
    gates = {"rnn": 1, "lstm": 4, "lstm_proj": 4, "gru": 3}[step]
    hidden, proj = 3, (2 if step == "lstm_proj" else 3)
    tensors = [genesis.tensor(rng.standard_normal(s), requires_grad=True) for s in (
        (2, gates * hidden), (2, proj), (2, hidden), (gates * hidden, proj), (gates * hidden,),
        (proj, hidden))]

    def run(gi, h, c, w_hh, b_hh, w_hr):
        if step == "rnn":
            out = R.rnn_step(gi, (h,), w_hh, b_hh, "tanh")
        elif step == "gru":
            out = R.gru_step(gi, (h,), w_hh, b_hh)
        else:
            out = R.lstm_step(gi, (h, c), w_hh, b_hh, w_hr if step == "lstm_proj" else None)
        return sum(o.square().sum() for o in out) + 0 * (c.sum() + w_hr.sum())

    assert genesis.autograd.gradcheck(run, tuple(tensors))


def test_layer_gradcheck_float64(rng):
    """A bidirectional two-layer packed LSTM with projections, in float64."""
    lstm = nn.LSTM(2, 3, num_layers=2, bidirectional=True, proj_size=2).double()
    x = genesis.tensor(rng.standard_normal((3, 2, 2)), requires_grad=True)

    def run(x):
        packed = rnn_utils.pack_padded_sequence(x, [3, 2])
        out, (h, c) = lstm(packed)
        return out.data.sum() + h.square().sum() + c.sum()

    assert genesis.autograd.gradcheck(run, (x,))


@pytest.mark.parametrize("name, kwargs", [("LSTM", {"proj_size": 2, "bidirectional": True}),
                                          ("GRU", {"num_layers": 2}), ("RNN", {}),
                                          ("LSTMCell", {}), ("GRUCell", {"bias": False})])
def test_state_dict_loads_both_ways(name, kwargs, rng):
    gl = getattr(nn, name)(3, 4, **kwargs)
    tl = getattr(torch.nn, name)(3, 4, **kwargs)
    tl.load_state_dict({k: to_torch(v) for k, v in gl.state_dict().items()})
    back = getattr(nn, name)(3, 4, **kwargs)
    back.load_state_dict({k: from_torch(v) for k, v in tl.state_dict().items()})
    for (gk, gv), (bk, bv) in zip(gl.state_dict().items(), back.state_dict().items()):
        assert gk == bk
        np.testing.assert_array_equal(gv.numpy(), bv.numpy())
    assert repr(gl) == repr(tl)


@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU", "RNNCell", "LSTMCell", "GRUCell"])
def test_init_is_uniform_within_one_over_sqrt_hidden(name):
    hidden = 64
    layer = getattr(nn, name)(32, hidden)
    bound = 1 / math.sqrt(hidden)
    values = np.concatenate([p.detach().numpy().ravel() for p in layer.parameters()])
    assert values.min() >= -bound and values.max() <= bound
    assert values.min() < -0.95 * bound and values.max() > 0.95 * bound
    assert abs(values.mean()) < 0.05 * bound


def test_all_weights_and_flatten_parameters():
    gl, tl = layer_pair("LSTM", 3, 4, num_layers=2, bidirectional=True, proj_size=2)
    assert gl.flatten_parameters() is None
    assert [[tuple(w.shape) for w in ws] for ws in gl.all_weights] == \
        [[tuple(w.shape) for w in ws] for ws in tl.all_weights]
    assert gl._flat_weights_names == tl._flat_weights_names
    assert gl.all_weights[1][0] is gl.weight_ih_l0_reverse


def test_bfloat16_forward_within_bf16_tolerance(rng, scan_path):
    gl, tl = layer_pair("LSTM", 8, 16, num_layers=2, bidirectional=True)
    gl, tl = gl.bfloat16(), tl.bfloat16()
    gx, tx = random_pair((6, 3, 8), rng, "cpu", requires_grad=False)
    g_out, (g_h, g_c) = gl(gx.bfloat16())
    t_out, (t_h, t_c) = tl(tx.bfloat16())
    for g, t in ((g_out, t_out), (g_h, t_h), (g_c, t_c)):
        assert_close(g, t, rtol=1.6e-2, atol=1.6e-2)
    for name in ("GRU", "RNN"):
        gl, tl = layer_pair(name, 8, 16)
        g_out, _ = gl.bfloat16()(gx.bfloat16())
        t_out, _ = tl.bfloat16()(tx.bfloat16())
        assert_close(g_out, t_out, rtol=1.6e-2, atol=1.6e-2)


def _same_error(g_call, t_call):
    """Both calls raise the same exception type with the same message (dtype names aside)."""
    with pytest.raises(Exception) as t_err:
        t_call()
    with pytest.raises(type(t_err.value)) as g_err:
        g_call()
    normalise = (lambda s: re.sub(r"(torch|genesis)\.", "", str(s)))
    assert normalise(g_err.value) == normalise(t_err.value)


@pytest.mark.parametrize("args, kwargs", [
    ((3, 4), {"dropout": 1.5}), ((3, 4), {"dropout": True}), ((3, 0), {}), ((0, 4), {}),
    ((3, 4.0), {}), ((3, 4), {"num_layers": 0}), ((3, 4), {"bias": 1}),
    ((3, 4), {"batch_first": None}), ((3, 4), {"proj_size": 4}), ((3, 4), {"proj_size": -1}),
])
def test_constructor_errors_match_torch(args, kwargs):
    _same_error(lambda: nn.LSTM(*args, **kwargs), lambda: torch.nn.LSTM(*args, **kwargs))


def test_constructor_rnn_and_gru_errors_match_torch():
    _same_error(lambda: nn.RNN(3, 4, nonlinearity="gelu"),
                lambda: torch.nn.RNN(3, 4, nonlinearity="gelu"))
    _same_error(lambda: nn.GRU(3, 4, proj_size=2), lambda: torch.nn.GRU(3, 4, proj_size=2))
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        nn.GRU(3, 4, dropout=0.2)


@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("bad", ["4d", "features", "batch", "hidden_dims", "hidden_size", "dtype"])
def test_forward_errors_match_torch(name, bad):
    gl, tl = layer_pair(name, 3, 4, num_layers=2)
    x_shape, count = (5, 2, 3), 2
    h_shapes = state_shapes(name, {"num_layers": 2}, 4, 2)
    if bad == "4d":
        x_shape = (5, 2, 1, 3)
    elif bad == "features":
        x_shape = (5, 2, 7)
    elif bad == "batch":
        h_shapes = [(count, 3, s[-1]) for s in h_shapes]
    elif bad == "hidden_dims":
        h_shapes = [s[1:] for s in h_shapes]
    elif bad == "hidden_size":
        h_shapes = [s[:-1] + (5,) for s in h_shapes]
    x = torch.randn(*x_shape, dtype=torch.float64 if bad == "dtype" else torch.float32)
    hs = [torch.randn(*s) for s in h_shapes]
    _same_error(lambda: gl(from_torch(x), pack_hidden(name, [from_torch(h) for h in hs])),
                lambda: tl(x, pack_hidden(name, hs)))


@pytest.mark.parametrize("name", ["RNNCell", "LSTMCell", "GRUCell"])
@pytest.mark.parametrize("x_shape, h_shape", [((2, 5), (2, 4)), ((3, 3), (2, 4)),
                                              ((2, 3), (2, 5)), ((1, 2, 3), (2, 4)),
                                              ((2, 3), (1, 2, 4))])
def test_cell_errors_match_torch(name, x_shape, h_shape):
    gl, tl = layer_pair(name, 3, 4)
    x, h = torch.randn(*x_shape), torch.randn(*h_shape)
    t_hx = (h, h) if name == "LSTMCell" else h
    g_hx = (from_torch(h), from_torch(h)) if name == "LSTMCell" else from_torch(h)
    _same_error(lambda: gl(from_torch(x), g_hx), lambda: tl(x, t_hx))


def test_lstm_language_model_trains_like_torch(rng, scan_path):
    """A ported script: embedding, two-layer LSTM and decoder trained with Adam for a few
    steps from torch's initial weights; every loss within 2e-4 relative of torch's."""
    vocab, embed, hidden, steps, batch = 20, 8, 16, 12, 4

    def build(lib):
        class LanguageModel(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = lib.nn.Embedding(vocab, embed)
                self.lstm = lib.nn.LSTM(embed, hidden, num_layers=2, dropout=0.0)
                self.decoder = lib.nn.Linear(hidden, vocab)

            def forward(self, tokens, state=None):
                out, state = self.lstm(self.embed(tokens), state)
                return self.decoder(out), state
        return LanguageModel()

    t_model, g_model = build(torch), build(genesis)
    g_model.load_state_dict({k: from_torch(v) for k, v in t_model.state_dict().items()})
    t_opt = torch.optim.Adam(t_model.parameters(), lr=3e-2)
    g_opt = genesis.optim.Adam(g_model.parameters(), lr=3e-2)
    starts = rng.integers(0, vocab, (8, 1, batch))  # counting sequences: learnable
    data = (starts + np.arange(steps + 1)[None, :, None]) % vocab
    t_losses, g_losses = [], []
    for chunk in data:
        for model, opt, lib, losses in ((t_model, t_opt, torch, t_losses),
                                        (g_model, g_opt, genesis, g_losses)):
            tokens = lib.tensor(chunk)
            logits, _ = model(tokens[:-1])
            loss = lib.nn.functional.cross_entropy(logits.reshape(-1, vocab),
                                                   tokens[1:].reshape(-1))
            opt.zero_grad()
            loss.backward()
            lib.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            losses.append(loss.item())
    np.testing.assert_allclose(g_losses, t_losses, rtol=2e-4)
    assert t_losses[-1] < t_losses[0]


DOUBLE_BACKWARD_CASES = [("LSTMCell", {}, (2, 3), (2, 4)), ("GRUCell", {}, (2, 3), (2, 4)),
                         ("LSTM", {"num_layers": 2, "bidirectional": True}, (4, 2, 3), (4, 2, 4)),
                         ("GRU", {"num_layers": 2, "bidirectional": True}, (4, 2, 3), (4, 2, 4))]


@pytest.mark.parametrize("name, kwargs, x_shape, h_shape", DOUBLE_BACKWARD_CASES,
                         ids=[c[0] for c in DOUBLE_BACKWARD_CASES])
def test_double_backward_matches_torch(name, kwargs, x_shape, h_shape, rng, device, scan_path):
    """Gradients of a function of the first gradients (create_graph), which run the gate
    math's backward through genesis ops instead of the backward kernel (a layer's
    sequence-level path replays the per-step path for it)."""
    gl, tl = layer_pair(name, 3, 4, device=device, **kwargs)
    gx, tx = random_pair(x_shape, rng, device)
    gh, th = random_pair(h_shape, rng, device)
    results = []
    for lib, layer, x, h in ((genesis, gl, gx, gh), (torch, tl, tx, th)):
        out = layer(x, (h, h * 0.5) if name.startswith("LSTM") else h)
        if not name.endswith("Cell"):
            out = (out[0],) + as_tuple(out[1])
        loss = sum((o * o).sum() for o in as_tuple(out))
        first = lib.autograd.grad(loss, [x, h], create_graph=True)
        (first[0].square().sum() + first[1].sum()).backward()
        results.append(first)
    for g, t in zip(*results):
        assert_close(g, t)
    assert_close(gx.grad, tx.grad)
    assert_close(gh.grad, th.grad)
    compare_param_grads(gl, tl)


def assert_close_in_scale(actual, expected, dtype):
    """Within the half type's relative tolerance of the float32 `expected`, measured against
    the largest magnitude of `expected` (a gradient sums products, so small entries carry
    the rounding of large ones)."""
    rtol = TOLERANCES[dtype][0]
    assert actual.dtype is dtype
    scale = float(expected.detach().abs().max())
    assert_close(actual.float(), expected, rtol=rtol, atol=rtol * scale)


@pytest.mark.parametrize("name", ["LSTMCell", "GRUCell"])
@pytest.mark.parametrize("dtype", [genesis.bfloat16, genesis.float16], ids=lambda d: d.name)
def test_cell_half_types_within_tolerance(name, dtype, rng):
    """float16/bfloat16 cells (gates computed in float32, rounded once) against torch's
    float32 cell on the same rounded weights and inputs: outputs and gradients."""
    gl, tl = layer_pair(name, 8, 16)
    gl.to(dtype=dtype)
    tl.load_state_dict({k: to_torch(v.float()) for k, v in gl.state_dict().items()})
    gx, _ = random_pair((4, 8), rng, "cpu")
    gx = gx.detach().to(dtype).requires_grad_(True)
    tx = to_torch(gx.detach().float(), requires_grad=True)
    g_out, t_out = as_tuple(gl(gx)), as_tuple(tl(tx))
    for g, t in zip(g_out, t_out):
        assert_close_in_scale(g, t, dtype)
    sum(o.sum() for o in g_out).backward()
    sum(o.sum() for o in t_out).backward()
    assert_close_in_scale(gx.grad, tx.grad, dtype)
    g_params = dict(gl.named_parameters())
    for param_name, tp in tl.named_parameters():
        assert_close_in_scale(g_params[param_name].grad, tp.grad, dtype)


@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU"])
def test_empty_batch_and_empty_sequence(name, device, scan_path):
    gl, tl = layer_pair(name, 3, 4, num_layers=2, bidirectional=True, device=device)
    g_out, g_hidden = gl(genesis.zeros(5, 0, 3, device=device))
    t_out, t_hidden = tl(torch.zeros(5, 0, 3))
    assert tuple(g_out.shape) == tuple(t_out.shape)
    for g, t in zip(as_tuple(g_hidden), as_tuple(t_hidden)):
        assert tuple(g.shape) == tuple(t.shape)
    _same_error(lambda: gl(genesis.zeros(0, 2, 3, device=device)),
                lambda: tl(torch.zeros(0, 2, 3)))


SCAN_CASES = [("LSTM", {}), ("LSTM", {"num_layers": 2, "bidirectional": True, "proj_size": 2}),
              ("GRU", {"num_layers": 2, "bidirectional": True}), ("GRU", {"bias": False})]


def _spy_scans(monkeypatch):
    """The modes of the sequence-level scans the layers run from now on."""
    calls, scan = [], S.scan
    monkeypatch.setattr(S, "scan", lambda mode, *args: calls.append(mode) or scan(mode, *args))
    return calls


def test_sequence_path_runs_where_it_applies(monkeypatch, rng):
    """Padded and equal-length packed LSTM/GRU input take one Function per layer direction;
    variable lengths, RNN, an empty batch and mixed dtypes take the per-step path."""
    calls = _spy_scans(monkeypatch)
    x = genesis.tensor(rng.standard_normal((4, 3, 2)).astype(np.float32))
    nn.LSTM(2, 3, num_layers=2, bidirectional=True)(x)
    nn.GRU(2, 3, batch_first=True)(x)
    nn.GRU(2, 3)(rnn_utils.pack_padded_sequence(x, [4, 4, 4]))
    assert calls == ["LSTM"] * 4 + ["GRU"] * 2
    nn.LSTM(2, 3)(rnn_utils.pack_padded_sequence(x, [4, 3, 3]))
    nn.RNN(2, 3)(x)
    nn.GRU(2, 3)(x[:, :0])
    nn.LSTM(2, 3)(x, (genesis.zeros(1, 3, 3), genesis.zeros(1, 3, 3, dtype=genesis.float64)))
    assert len(calls) == 6


def _run_layer(layer, x, states):
    """Output, final states and the gradients of x, the states and every parameter after one
    backward of a weighted sum of the outputs, as float64 arrays."""
    layer.zero_grad()
    leaves = [t.detach().requires_grad_(True) for t in (x, *states)]
    out, hidden = layer(leaves[0], pack_hidden(type(layer).__name__, tuple(leaves[1:])))
    results = [out] + list(as_tuple(hidden))
    loss = sum(((r * r).sum() * (k + 1) for k, r in enumerate(results)), out.sum())
    loss.backward()
    tensors = results + [t.grad for t in leaves] + [p.grad for p in layer.parameters()]
    return [t.detach().cpu().numpy() for t in tensors]


@pytest.mark.parametrize("case", SCAN_CASES, ids=_case_id)
@pytest.mark.parametrize("reverse_batch_first", [False, True])
def test_sequence_path_matches_per_step_path_float64(case, reverse_batch_first, rng, device,
                                                     monkeypatch):
    """Both paths agree to float64 rounding: outputs, final states and every gradient."""
    name, kwargs = case
    layer = getattr(nn, name)(3, 4, batch_first=reverse_batch_first, **kwargs).double()
    layer.to(device)
    x = genesis.tensor(rng.standard_normal((2, 5, 3) if reverse_batch_first else (5, 2, 3)),
                       device=device)
    states = [genesis.tensor(rng.standard_normal(s), device=device)
              for s in state_shapes(name, kwargs, 4, 2)]
    fast = _run_layer(layer, x, states)
    monkeypatch.setattr(S, "ENABLED", False)
    slow = _run_layer(layer, x, states)
    for a, b in zip(fast, slow):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def _gradcheck_inputs(name, kwargs, rng):
    """A float64 layer and the inputs of a gradient check through it: x, the initial states and
    some recurrent weights of every role (the rest are left out to keep the check short)."""
    layer = getattr(nn, name)(2, 3, **kwargs).double()
    x = genesis.tensor(rng.standard_normal((3, 2, 2)), requires_grad=True)
    states = [genesis.tensor(rng.standard_normal(s), requires_grad=True)
              for s in state_shapes(name, kwargs, 3, 2)]
    roles = ("weight_hh_l0", "weight_hr_l0_reverse", "bias_hh_l1", "bias_hh_l0_reverse")
    weights = [getattr(layer, n) for n in roles if hasattr(layer, n)]

    def run(x, *rest):
        out, hidden = layer(x, pack_hidden(name, tuple(rest[:len(states)])))
        return (out,) + as_tuple(hidden)
    return run, (x, *states, *weights)


@pytest.mark.parametrize("case", SCAN_CASES[1:], ids=_case_id)
def test_sequence_path_gradcheck_float64(case, rng, monkeypatch):
    calls = _spy_scans(monkeypatch)
    run, inputs = _gradcheck_inputs(*case, rng)
    assert genesis.autograd.gradcheck(run, inputs)
    assert calls


@pytest.mark.parametrize("case", SCAN_CASES[1:3], ids=_case_id)
def test_sequence_path_gradgradcheck_float64(case, rng, monkeypatch):
    """A backward with create_graph recomputes through the per-step path: second derivatives
    are exact too."""
    calls = _spy_scans(monkeypatch)
    run, inputs = _gradcheck_inputs(*case, rng)
    assert genesis.autograd.gradgradcheck(lambda x, h: run(x, h, *inputs[2:]), inputs[:2])
    assert calls


@pytest.mark.parametrize("name", ["LSTM", "GRU"])
@pytest.mark.parametrize("dtype", [genesis.bfloat16, genesis.float16], ids=lambda d: d.name)
def test_layer_half_types_within_tolerance(name, dtype, rng, device, scan_path):
    """float16/bfloat16 layers against torch's float32 layer on the same rounded weights and
    inputs: outputs, final states and gradients. A few steps of one direction: every step's
    rounding feeds the next, so a long chain's error outgrows the half type's tolerance (the
    float32 and float64 tests cover layers and directions)."""
    gl, tl = layer_pair(name, 8, 16, device=device)
    gl.to(dtype=dtype)
    tl.load_state_dict({k: to_torch(v.float()) for k, v in gl.state_dict().items()})
    gx, _ = random_pair((3, 4, 8), rng, device)
    gx = gx.detach().to(dtype).requires_grad_(True)
    tx = to_torch(gx.detach().float(), requires_grad=True)
    (g_out, g_hidden), (t_out, t_hidden) = gl(gx), tl(tx)
    g_all, t_all = (g_out,) + as_tuple(g_hidden), (t_out,) + as_tuple(t_hidden)
    for g, t in zip(g_all, t_all):
        assert_close_in_scale(g, t, dtype)
    sum(o.float().sum() for o in g_all).backward()
    sum(o.sum() for o in t_all).backward()
    assert_close_in_scale(gx.grad, tx.grad, dtype)
    g_params = dict(gl.named_parameters())
    for param_name, tp in tl.named_parameters():
        assert_close_in_scale(g_params[param_name].grad, tp.grad, dtype)


def test_sequence_path_catches_an_output_changed_in_place(rng):
    """The saved states are the output's memory: writing into the output before backward is
    the error torch raises, not a wrong gradient."""
    layer = nn.LSTM(2, 3)
    x = genesis.tensor(rng.standard_normal((4, 2, 2)).astype(np.float32), requires_grad=True)
    out, _ = layer(x)
    out.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


def test_sequence_path_backward_twice_with_retain_graph(rng):
    layer = nn.GRU(2, 3, num_layers=2)
    x = genesis.tensor(rng.standard_normal((4, 2, 2)).astype(np.float32), requires_grad=True)
    out, h = layer(x)
    (out.sum() + h.sum()).backward(retain_graph=True)
    first = [x.grad.numpy().copy()] + [p.grad.numpy().copy() for p in layer.parameters()]
    (out.sum() + h.sum()).backward()
    second = [x.grad.numpy()] + [p.grad.numpy() for p in layer.parameters()]
    for a, b in zip(first, second):
        np.testing.assert_allclose(b, 2 * a, rtol=1e-6, atol=1e-6)
