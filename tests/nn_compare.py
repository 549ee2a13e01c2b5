"""Run a genesis function and its torch counterpart on the same random inputs and compare the
outputs and the gradients of every floating input (used by the spatial layer tests)."""

import math
import warnings

import numpy as np
import torch
from helpers import TORCH_DTYPES, assert_close, lay_out, make_pair, to_torch

import genesis


HALF = (genesis.float16, genesis.bfloat16)


def pairs(shapes, dtype, device, rng, layout="contiguous", low=-1.0, high=1.0):
    """Leaf tensors (genesis laid out as `layout`, torch contiguous) holding the same values;
    torch's are float32 for half types: the reference computes in float32 and rounds once, as
    genesis does (torch's own CPU half kernels round some partial sums); float64 for float32:
    torch's float32 sums over several dims (bias gradients) err by up to 5e-6 relative, past
    the float32 tolerance, while the float64 reference rounded once is the float32 truth."""
    g_inputs, t_inputs = [], []
    for shape in shapes:
        g, t = make_pair(shape, dtype, low, high, device=device, rng=rng)
        g_inputs.append(lay_out(g, layout).detach().requires_grad_())
        reference = t.float() if dtype in HALF else t.double() if dtype is genesis.float32 else t
        t_inputs.append(reference.requires_grad_())
    return g_inputs, t_inputs


def _rounded(t, like):
    """The torch reference `t` rounded to genesis tensor `like`'s dtype (half or float32)."""
    return t.to(TORCH_DTYPES[like.dtype]) if like.dtype in HALF + (genesis.float32,) else t


def check_grads(g_out, t_out, g_inputs, t_inputs, rng, rtol=None, atol=None):
    """Backward of a random output gradient through both graphs; input gradients agree."""
    g_go, t_go = make_pair(tuple(t_out.shape), g_out.dtype, device=g_out.device, rng=rng)
    g_out.backward(g_go)
    t_out.backward(t_go.to(t_out.dtype))
    for g, t in zip(g_inputs, t_inputs):
        if t.grad is None:
            assert g.grad is None or not np.any(g.grad.float().cpu().numpy())
            continue
        assert_close(g.grad, _rounded(t.grad, g), rtol=rtol, atol=atol)


def compare(g_fn, t_fn, shapes, dtype=genesis.float32, device="cpu", rng=None, grad=True,
            layout="contiguous", rtol=None, atol=None, low=-1.0):
    """g_fn and t_fn agree on fresh inputs of `shapes` drawn from [low, 1), forward and (if
    `grad`) backward."""
    rng = rng or np.random.default_rng()
    g_inputs, t_inputs = pairs(shapes, dtype, device, rng, layout, low)
    g_out, t_out = g_fn(*g_inputs), t_fn(*t_inputs)
    assert_close(g_out, _rounded(t_out, g_out), rtol=rtol, atol=atol)
    if grad and t_out.numel():
        check_grads(g_out, t_out, g_inputs, t_inputs, rng, rtol=rtol, atol=atol)
    return g_out, t_out


def copy_module(g_module, t_module, device="cpu"):
    """Load torch's parameters and buffers into the genesis module through its state_dict."""
    state = {k: genesis.tensor(v.detach().numpy(), device=device)
             for k, v in t_module.state_dict().items()}
    g_module.load_state_dict(state)
    return g_module.to(device)


def train_case(lib, model, data, step, steps):
    """A ported case's losses over `steps` calls of step(lib, model, data), after making the
    model's optimizer (and scheduler, where it has one)."""
    model.opt = model.optimizer()
    if hasattr(model, "scheduler"):
        model.sched = model.scheduler(model.opt)
    return [step(lib, model, data).item() for _ in range(steps)]


def run_case(lib, model, data, step, keeps, steps, warn_always=False):
    """A ported case's losses over `steps` steps (train_case), what `keeps(lib, model, data)`
    returns afterwards as numpy arrays, and the warnings given: (category, text before torch's
    C++ suffix). With `warn_always`, once-a-process warnings are given every time."""
    saved = lib.is_warn_always_enabled()
    lib.set_warn_always(warn_always or saved)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            losses = train_case(lib, model, data, step, steps)
            kept = [t.detach().cpu().numpy() for t in keeps(lib, model, data)]
    finally:
        lib.set_warn_always(saved)
    return losses, kept, [(w.category, str(w.message).split(" (Triggered internally")[0])
                          for w in caught]


def build_both(build, device):
    """(torch's model of `build(lib, device)` on the CPU, genesis's on `device` from torch's
    initial weights)."""
    torch_model = build(torch, "cpu")
    return torch_model, copy_module(build(genesis, device), torch_model, device)


def run_pair(torch_model, model, arrays, device, run):
    """`run(lib, model, data)` in torch and in genesis, the data the numpy `arrays` as each
    framework's tensors: (torch's result, genesis's)."""
    expected = run(torch, torch_model, {k: torch.tensor(v) for k, v in arrays.items()})
    return expected, run(genesis, model, {k: genesis.tensor(v, device=device)
                                          for k, v in arrays.items()})


def run_both(build, arrays, device, run):
    """`run(lib, model, data)` of a ported case in torch (on the CPU) and in genesis (on
    `device`, from torch's initial weights) (build_both, run_pair)."""
    return run_pair(*build_both(build, device), arrays, device, run)


def neighbour_twins(build, torch_model, arrays, kinds=("float64", "one ulp")):
    """(model, data) of the case in torch, apart from `torch_model`'s run by rounding alone, of
    each of `kinds`: "float64", the model and its float data in float64; "one ulp", in float32
    from its floating weights and buffers one ulp above. Take them before `torch_model`
    trains."""
    twins = []
    if "float64" in kinds:
        float64 = build(torch, "cpu")
        float64.load_state_dict(torch_model.state_dict())
        twins.append((float64.double(), {k: torch.tensor(
            v.astype(np.float64) if v.dtype == np.float32 else v) for k, v in arrays.items()}))
    if "one ulp" in kinds:
        nudged = build(torch, "cpu")
        nudged.load_state_dict({k: torch.from_numpy(np.nextafter(v.numpy(), np.inf))
                                if v.is_floating_point() else v
                                for k, v in torch_model.state_dict().items()})
        twins.append((nudged, {k: torch.tensor(v) for k, v in arrays.items()}))
    return twins


def kept_drifts(expected, neighbours):
    """Four times the largest distance of each kept array from its neighbours' (0 without)."""
    return [4 * max((np.nanmax(np.abs(t - n.astype(t.dtype))) if t.size else 0.0
                     for n in others), default=0.0)
            for t, *others in zip(expected, *neighbours)]


def assert_kept_close(got, expected, drift=0.0):
    """An array a ported case keeps: genesis's `got` has torch's `expected` dtype and shape,
    integers and bools equal, floats within 2e-4 of their value plus 2e-4 of the array's
    largest, widened by `drift` (four times torch's own distance from a neighbouring run, as in
    assert_trajectory_close), nan where torch has nan."""
    assert (got.dtype, got.shape) == (expected.dtype, expected.shape)
    if not np.issubdtype(expected.dtype, np.floating):
        np.testing.assert_array_equal(got, expected)
        return
    scale = np.nanmax(np.abs(expected)) if expected.size else 0
    bound = 2e-4 * (np.abs(expected) + scale) + drift
    close = (np.abs(got - expected) <= bound) | (np.isnan(got) & np.isnan(expected))
    assert close.all(), (f"genesis {got[~close]} against torch {expected[~close]} (bound "
                         f"{bound[~close]})")


def assert_case_trains_as_torch(build, step, keeps, arrays, device, steps, twins=()):
    """A ported case run in both frameworks (run_both, with every warning given each time):
    torch's losses finite, genesis's within 2e-4 of them, the same warnings, and what the case
    keeps close (assert_kept_close). A case that amplifies rounding (a weight whose gradient is
    zero but for rounding) names the neighbour_twins (`twins`, their kinds) whose runs widen
    the bounds by four times torch's own distance from them."""
    def run(lib, model, data):
        return run_case(lib, model, data, step, keeps, steps, warn_always=True)
    torch_model, model = build_both(build, device)
    twins = neighbour_twins(build, torch_model, arrays, twins) if twins else []
    expected, got = run_pair(torch_model, model, arrays, device, run)
    neighbours = [run(torch, *twin) for twin in twins]
    assert all(math.isfinite(v) for v in expected[0])
    assert set(got[2]) == set(expected[2])
    if neighbours:
        assert_trajectory_close(got[0], expected[0], [result[0] for result in neighbours])
    else:
        np.testing.assert_allclose(got[0], expected[0], rtol=2e-4)
    drifts = kept_drifts(expected[1], [result[1] for result in neighbours])
    for g, t, drift in zip(got[1], expected[1], drifts, strict=True):
        assert_kept_close(g, t, drift)


def torch_state(g_module):
    """The genesis module's state_dict as torch tensors."""
    return {k: to_torch(v.detach()) for k, v in g_module.state_dict().items()}


def assert_param_grads(g_module, t_module, rtol=None, atol=None):
    """Gradients of every parameter of the two modules agree."""
    t_params = dict(t_module.named_parameters())
    for name, p in g_module.named_parameters():
        assert_close(p.grad, t_params[name].grad, rtol=rtol, atol=atol)



def assert_trajectory_close(got, expected, neighbour, rtol=2e-4, atol=0.0):
    """Genesis's run `got` within `rtol` (and `atol`) of torch's run `expected`, widened by four
    times the largest distance up to each step between `expected` and `neighbour`: a torch run
    of the same script apart by rounding alone (in float64, or from weights one ulp apart), or a
    list of such runs (the largest distance of any). A few trajectories amplify rounding (an
    optimizer meeting gradients near zero, LBFGS blowing up); there torch parts from its own
    neighbour as much as from genesis."""
    got, expected, neighbour = (np.asarray(a, dtype=np.float64)
                                for a in (got, expected, neighbour))
    distance = np.abs(expected - neighbour)
    if neighbour.ndim > expected.ndim:  # several neighbours
        distance = distance.max(axis=0)
    drift = np.maximum.accumulate(distance, axis=-1)
    bound = rtol * np.abs(expected) + atol + 4 * drift
    assert (np.abs(got - expected) <= bound).all(), (
        f"genesis {got} against torch {expected}: differences {np.abs(got - expected)}, bound "
        f"{bound} (torch's own drift {drift})")
