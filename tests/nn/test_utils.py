"""genesis.nn.utils: gradient clipping and parameter vectors, against torch."""

import math

import numpy as np
import pytest
import torch
from helpers import assert_close

import genesis
from genesis import nn


def _params_with_grads(rng, dtype=genesis.float64, shapes=((3, 4), (5,), (2, 2, 2)), device="cpu"):
    g_params, t_params = [], []
    for shape in shapes:
        value, grad = rng.standard_normal(shape), rng.standard_normal(shape)
        gp = nn.Parameter(genesis.tensor(value, dtype=dtype, device=device))
        gp.grad = genesis.tensor(grad, dtype=dtype, device=device)
        tp = torch.nn.Parameter(torch.from_numpy(value.copy()))
        tp.grad = torch.from_numpy(grad.copy())
        g_params.append(gp)
        t_params.append(tp)
    return g_params, t_params


@pytest.mark.parametrize("norm_type", [2.0, 1, math.inf, 3.5])
@pytest.mark.parametrize("max_norm", [0.5, 1e6])
def test_clip_grad_norm_matches_torch(norm_type, max_norm, rng, device):
    g_params, t_params = _params_with_grads(rng, device=device)
    g_params.append(nn.Parameter(genesis.zeros(2, dtype=genesis.float64, device=device)))
    g_total = nn.utils.clip_grad_norm_(g_params, max_norm, norm_type)
    t_total = torch.nn.utils.clip_grad_norm_(t_params, max_norm, norm_type)
    assert_close(g_total, t_total)
    for gp, tp in zip(g_params, t_params):
        assert_close(gp.grad, tp.grad)
    assert g_params[-1].grad is None


def test_clip_grad_norm_single_tensor_empty_and_nonfinite(rng, device):
    g_params, t_params = _params_with_grads(rng, shapes=((4,),), device=device)
    assert_close(nn.utils.clip_grad_norm_(g_params[0], 1.0),
                 torch.nn.utils.clip_grad_norm_(t_params[0], 1.0))
    assert float(nn.utils.clip_grad_norm_([], 1.0)) == 0.0
    g_params[0].grad = genesis.tensor([1.0, math.inf], dtype=genesis.float64, device=device)
    before = g_params[0].grad.cpu().numpy().copy()
    with pytest.raises(RuntimeError, match="non-finite"):
        nn.utils.clip_grad_norm_(g_params, 1.0, error_if_nonfinite=True)
    np.testing.assert_array_equal(g_params[0].grad.cpu().numpy(), before)


def test_clip_grad_value_matches_torch(rng, device):
    g_params, t_params = _params_with_grads(rng, device=device)
    nn.utils.clip_grad_value_(g_params, 0.3)
    torch.nn.utils.clip_grad_value_(t_params, 0.3)
    for gp, tp in zip(g_params, t_params):
        assert_close(gp.grad, tp.grad)


def test_clip_grad_norm_float32_model(rng, device):
    model = nn.Linear(4, 3).to(device)
    model(genesis.randn(2, 4, device=device)).sum().backward()
    total = nn.utils.clip_grad_norm_(model.parameters(), 0.1)
    assert total.dtype is genesis.float32 and total.ndim == 0
    clipped = nn.utils.get_total_norm([p.grad for p in model.parameters()])
    assert abs(float(clipped) - min(0.1, float(total))) < 1e-5


def test_parameters_to_vector_and_back(rng, device):
    g_params, t_params = _params_with_grads(rng, device=device)
    vec = nn.utils.parameters_to_vector(g_params)
    assert_close(vec, torch.nn.utils.parameters_to_vector(t_params))
    vec.sum().backward()
    np.testing.assert_array_equal(g_params[1].grad.cpu().numpy(), t_params[1].grad.numpy() + 1)
    nn.utils.vector_to_parameters(genesis.arange(vec.numel(), dtype=genesis.float64,
                                                 device=device), g_params)
    np.testing.assert_array_equal(g_params[1].detach().cpu().numpy(), np.arange(12, 17))
    with pytest.raises(TypeError, match="1-D"):
        nn.utils.vector_to_parameters(genesis.zeros(2, 2, device=device), g_params)


@pytest.mark.parametrize("name", ["_single", "_pair", "_triple", "_quadruple"])
@pytest.mark.parametrize("value", [3, (1, 2), [4], range(3)])
def test_module_utils_ntuples_as_torch(name, value):
    import torch.nn.modules.utils as theirs

    import genesis.nn.modules.utils as ours
    assert getattr(ours, name)(value) == getattr(theirs, name)(value)
    assert ours._reverse_repeat_tuple((1, 2, 3), 2) == theirs._reverse_repeat_tuple((1, 2, 3), 2)


def test_consume_prefix_in_state_dict_loads_a_data_parallel_checkpoint():
    from genesis.nn.modules.utils import consume_prefix_in_state_dict_if_present
    model = nn.Sequential(nn.Linear(2, 3), nn.ReLU())
    state = nn.DataParallel(model).state_dict()
    assert list(state) == ["module.0.weight", "module.0.bias"]
    consume_prefix_in_state_dict_if_present(state, "module.")
    assert list(state) == ["0.weight", "0.bias"]
    model.load_state_dict(state)


def test_consume_prefix_strips_metadata_keys_as_torch():
    import collections

    from torch.nn.modules.utils import consume_prefix_in_state_dict_if_present as theirs

    from genesis.nn.modules.utils import consume_prefix_in_state_dict_if_present as ours
    results = []
    for consume in (ours, theirs):
        state = collections.OrderedDict([("module.w", 1), ("other", 2)])
        state._metadata = {key: {} for key in ("", "module", "module.0", "other")}
        consume(state, "module.")
        results.append((list(state), list(state._metadata)))
    assert results[0] == results[1]
