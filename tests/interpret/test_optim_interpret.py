"""The multi-tensor optimizer kernels (kernels/optim.py and kernels/optim_extra.py) against their
CPU twins, through Triton's interpreter:
`TRITON_INTERPRET=1 python -m pytest tests/interpret/test_optim_interpret.py`.

Arrays of several sizes (empty, odd, longer than one chunk) go through one call, so the table,
the chunk walk and the per-dtype launches are all exercised.
"""

import ml_dtypes
import numpy as np
import pytest
import triton_interpret as ti

import genesis.backends.cpu  # noqa: F401  (registers the CPU twins)
from genesis import dispatch
from genesis.backends.cuda.kernels import optim as ko
from genesis.backends.cuda.kernels import optim_extra as kx

BF16 = np.dtype(ml_dtypes.bfloat16)
FLOATS = [np.dtype(np.float32), np.dtype(np.float16), BF16, np.dtype(np.float64)]
TOL = {np.dtype(np.float32): 2e-6, np.dtype(np.float16): 2e-3, BF16: 1.6e-2,
       np.dtype(np.float64): 1e-12}
SIZES = [(3, 5), (17000,), (0,), (1,), (40,)]


@pytest.fixture
def gpu():
    if not ti.ENABLED:
        pytest.skip("set TRITON_INTERPRET=1 to run")
    with ti.device(ko, kx):
        yield


def _arrays(rng, dtype, positive=False):
    out = [rng.standard_normal(s).astype(np.float32) for s in SIZES]
    return [(np.abs(a) if positive else a).astype(dtype) for a in out]


def _close(dev, host, dtype):
    for d, h in zip(dev, host):
        np.testing.assert_allclose(ti.to_host(d).astype(np.float64), h.astype(np.float64),
                                   rtol=TOL[dtype], atol=TOL[dtype])


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("amsgrad,weight_decay,decoupled,maximize,beta1", [
    (False, 0.0, False, False, 0.9),
    (True, 0.1, True, False, 0.9),
    (True, 0.05, False, True, 0.3),
])
def test_adam_step_matches_the_cpu_kernel(gpu, rng, dtype, amsgrad, weight_decay, decoupled,
                                          maximize, beta1):
    state = [_arrays(rng, dtype, positive=k >= 3) for k in range(5)]
    host = [[a.copy() for a in arrays] for arrays in state]
    dev = [[ti.to_device(a) for a in arrays] for arrays in state]
    args = (0.01, beta1, 0.99, 1e-8, weight_decay, decoupled, maximize, 1 - beta1 ** 3,
            (1 - 0.99 ** 3) ** 0.5)
    dispatch.kernel("adam_step", "cpu")(*host[:4], host[4] if amsgrad else None, *args)
    ko.adam_step(*dev[:4], dev[4] if amsgrad else None, *args)
    for k in (0, 2, 3, 4):
        _close(dev[k], host[k], dtype)


def _scalars(values, dtype=np.float32):
    """0-d arrays of `values`: (host twins, device arrays)."""
    host = [np.array(v, dtype=dtype) for v in values]
    return host, [ti.to_device(h) for h in host]


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("amsgrad,weight_decay,decoupled,maximize,beta1,tensor_lr,found", [
    (False, 0.0, False, False, 0.9, False, 0.0),
    (True, 0.1, True, False, 0.0, True, 0.0),
    (True, 0.05, False, True, 0.3, True, 0.0),
    (False, 0.1, True, False, 0.9, False, 1.0),
])
def test_adam_step_with_device_counters_and_scaler_inputs(gpu, rng, dtype, amsgrad,
                                                          weight_decay, decoupled, maximize,
                                                          beta1, tensor_lr, found):
    """Capturable Adam: each array's bias corrections from its own step counter, the lr read
    from a 0-d array or passed, the gradients divided by grad_scale and stored so; a nonzero
    found_inf leaves everything as it was."""
    state = [_arrays(rng, dtype, positive=k >= 3) for k in range(5)]
    host = [[a.copy() for a in arrays] for arrays in state]
    dev = [[ti.to_device(a) for a in arrays] for arrays in state]
    (steps, scale, flag, lr), (dsteps, dscale, dflag, dlr) = zip(
        _scalars(range(1, len(SIZES) + 1)), _scalars([8.0]), _scalars([found]),
        _scalars([0.01]))
    for kernel, lists, counters, extra in (
            (dispatch.kernel("adam_step", "cpu"), host, steps, (scale[0], flag[0], lr[0])),
            (ko.adam_step, dev, dsteps, (dscale[0], dflag[0], dlr[0]))):
        kernel(*lists[:4], lists[4] if amsgrad else None, extra[2] if tensor_lr else 0.01,
               beta1, 0.99, 1e-8, weight_decay, decoupled, maximize, None, None, steps=counters,
               grad_scale=extra[0], found_inf=extra[1])
    for k in (0, 1, 2, 3, 4):
        _close(dev[k], host[k], dtype)
    if found:
        for k in range(5):
            _close(dev[k], state[k], dtype)


@pytest.mark.parametrize("found", [0.0, 1.0, None])
def test_advance_steps(gpu, found):
    host, dev = _scalars([0.0, 3.0, 41.0])
    flags = (None, None) if found is None else tuple(x[0] for x in _scalars([found]))
    dispatch.kernel("advance_steps", "cpu")(host, flags[0])
    ko.advance_steps(dev, flags[1])
    expected = [0.0, 3.0, 41.0] if found else [1.0, 4.0, 42.0]
    assert [float(ti.to_host(d)) for d in dev] == [float(h) for h in host] == expected


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("found", [0.0, 1.0])
def test_sgd_step_with_scaler_inputs(gpu, rng, dtype, found):
    state = [_arrays(rng, dtype) for _ in range(3)]
    host = [[a.copy() for a in arrays] for arrays in state]
    dev = [[ti.to_device(a) for a in arrays] for arrays in state]
    (scale, flag), (dscale, dflag) = zip(_scalars([0.25]), _scalars([found]))
    args = (0.05, 0.9, 0.1, 0.01, False, True, False)
    dispatch.kernel("sgd_step", "cpu")(*host, *args, grad_scale=scale[0], found_inf=flag[0])
    ko.sgd_step(*dev, *args, grad_scale=dscale[0], found_inf=dflag[0])
    for k in (0, 1, 2):
        _close(dev[k], host[k], dtype)
        if found:
            _close(dev[k], state[k], dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("momentum,dampening,weight_decay,nesterov,maximize,first", [
    (0.0, 0.0, 0.0, False, False, False),
    (0.9, 0.0, 0.0, False, False, True),
    (0.9, 0.2, 0.01, False, True, False),
    (0.8, 0.0, 0.1, True, False, False),
])
def test_sgd_step_matches_the_cpu_kernel(gpu, rng, dtype, momentum, dampening, weight_decay,
                                         nesterov, maximize, first):
    state = [_arrays(rng, dtype) for _ in range(3)]
    host = [[a.copy() for a in arrays] for arrays in state]
    dev = [[ti.to_device(a) for a in arrays] for arrays in state]
    args = (0.05, momentum, dampening, weight_decay, nesterov, maximize, first)
    dispatch.kernel("sgd_step", "cpu")(*host[:2], host[2] if momentum else None, *args)
    ko.sgd_step(*dev[:2], dev[2] if momentum else None, *args)
    for k in (0, 2):
        _close(dev[k], host[k], dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("centered,momentum,weight_decay,maximize", [
    (False, 0.0, 0.0, False), (True, 0.5, 0.1, False), (False, 0.9, 0.0, True),
    (True, 0.0, 0.0, True)])
def test_rmsprop_step_matches_the_cpu_kernel(gpu, rng, dtype, centered, momentum, weight_decay,
                                             maximize):
    state = [_arrays(rng, dtype, positive=k == 2) for k in range(5)]
    # as a real state: the mean square above the squared mean (moments of the same gradients),
    # by enough that sqrt(v - m^2) does not magnify last-bit differences of m
    state[2] = [(v.astype(np.float32) + m.astype(np.float32) ** 2 + 0.5).astype(dtype)
                for v, m in zip(state[2], state[3])]
    host = [[a.copy() for a in arrays] for arrays in state]
    dev = [[ti.to_device(a) for a in arrays] for arrays in state]
    args = (0.01, 0.9, 1e-6, weight_decay, momentum, maximize)
    for kernel, lists in ((dispatch.kernel("rmsprop_step", "cpu"), host),
                          (ko.rmsprop_step, dev)):
        kernel(*lists[:3], lists[3] if centered else None, lists[4] if momentum else None,
               *args)
    for k in (0, 2, 3, 4):
        _close(dev[k], host[k], dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("weight_decay,maximize", [(0.0, False), (0.1, True)])
def test_adagrad_step_matches_the_cpu_kernel(gpu, rng, dtype, weight_decay, maximize):
    state = [_arrays(rng, dtype, positive=k == 2) for k in range(3)]
    host = [[a.copy() for a in arrays] for arrays in state]
    dev = [[ti.to_device(a) for a in arrays] for arrays in state]
    dispatch.kernel("adagrad_step", "cpu")(*host, 0.05, 1e-10, weight_decay, maximize)
    ko.adagrad_step(*dev, 0.05, 1e-10, weight_decay, maximize)
    for k in (0, 2):
        _close(dev[k], host[k], dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("norm_type", [2.0, 1.0, np.inf, -np.inf, 3.5])
def test_total_norm_and_clip_match_the_cpu_kernels(gpu, rng, dtype, norm_type):
    host = _arrays(rng, dtype)
    dev = [ti.to_device(a) for a in host]
    total = ko.total_norm(dev, norm_type, dtype)
    expected = dispatch.kernel("total_norm", "cpu")(host, norm_type, dtype)
    assert total.dtype == dtype and total.shape == ()
    _close([total], [expected], dtype)
    ko.clip_by_total_norm_(dev, 0.5, total)
    dispatch.kernel("clip_by_total_norm_", "cpu")(host, 0.5, expected)
    _close(dev, host, dtype)


def test_mixed_dtypes_take_one_launch_each_and_one_table_per_list(gpu, rng, monkeypatch):
    host = _arrays(rng, np.float32) + _arrays(rng, np.float16)
    dev = [ti.to_device(a) for a in host]
    uploads = []
    upload = ko._upload
    monkeypatch.setattr(ko, "_upload", lambda *a: uploads.append(1) or upload(*a))
    ko._tables.clear()
    for _ in range(2):
        total = ko.total_norm(dev, 2.0, np.dtype(np.float32))
    assert len(uploads) == 2  # one table per dtype, reused by the second call
    expected = np.sqrt(sum(np.sum(a.astype(np.float64) ** 2) for a in host))
    np.testing.assert_allclose(float(ti.to_host(total)), expected, rtol=1e-5)


def test_nan_propagates_through_the_max_norm(gpu, rng):
    host = _arrays(rng, np.float32)
    host[1][5] = np.nan
    total = ko.total_norm([ti.to_device(a) for a in host], np.inf, np.dtype(np.float32))
    assert np.isnan(ti.to_host(total))


def _run_both(name, rng, dtype, count, args, positive=()):
    """Call the CPU kernel and the CUDA one on the same `count` lists of arrays (those in
    `positive` non-negative, as running second moments are); return both sets."""
    state = [_arrays(rng, dtype, positive=k in positive) for k in range(count)]
    host = [[a.copy() for a in arrays] for arrays in state]
    dev = [[ti.to_device(a) for a in arrays] for arrays in state]
    dispatch.kernel(name, "cpu")(*host, *args)
    getattr(kx, name)(*dev, *args)
    return host, dev


def _check(host, dev, dtype, lists):
    for k in lists:
        _close(dev[k], host[k], dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("weight_decay,decoupled,maximize", [
    (0.0, False, False), (0.1, True, False), (0.05, False, True)])
def test_nadam_step(gpu, rng, dtype, weight_decay, decoupled, maximize):
    args = (0.01, 0.9, 0.99, 1e-8, weight_decay, decoupled, maximize, 1 - 0.99 ** 3, -0.002,
            -0.015)
    _check(*_run_both("nadam_step", rng, dtype, 4, args, positive=(3,)), dtype, (0, 2, 3))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("weight_decay,decoupled,maximize,rect", [
    (0.0, False, False, None), (0.1, True, False, 0.4), (0.05, False, True, 0.9)])
def test_radam_step(gpu, rng, dtype, weight_decay, decoupled, maximize, rect):
    args = (0.01, 0.9, 0.99, 1e-8, weight_decay, decoupled, maximize, 1 - 0.9 ** 7,
            1 - 0.99 ** 7, rect)
    _check(*_run_both("radam_step", rng, dtype, 4, args, positive=(3,)), dtype, (0, 2, 3))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("weight_decay,maximize,beta1", [(0.0, False, 0.9), (0.1, True, 0.3)])
def test_adamax_step(gpu, rng, dtype, weight_decay, maximize, beta1):
    args = (beta1, 0.99, 1e-8, weight_decay, maximize, -0.01 / (1 - beta1 ** 2))
    _check(*_run_both("adamax_step", rng, dtype, 4, args, positive=(3,)), dtype, (0, 2, 3))


def _run_with_counters(name, rng, dtype, args, tensor_lr):
    """_run_both for a kernel taking the step counters from the device (steps 1 to 40 across
    the arrays: RAdam's variance is tractable from step 6 with beta2 = 0.99): `args(lr)` gives
    its arguments after the arrays, positional and keyword, lr a float or a 0-d array."""
    (steps, lr), (dsteps, dlr) = zip(_scalars([1, 3, 6, 10, 40]), _scalars([0.01]))
    state = [_arrays(rng, dtype, positive=k == 3) for k in range(4)]
    host = [[a.copy() for a in arrays] for arrays in state]
    dev = [[ti.to_device(a) for a in arrays] for arrays in state]
    for kernel, lists, counters, lr_array in ((dispatch.kernel(name, "cpu"), host, steps, lr[0]),
                                              (getattr(kx, name), dev, dsteps, dlr[0])):
        positional, keywords = args(lr_array if tensor_lr else 0.01)
        kernel(*lists, *positional, steps=counters, **keywords)
    return host, dev


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("weight_decay,decoupled,maximize,tensor_lr", [
    (0.0, False, False, False), (0.1, True, False, True), (0.05, False, True, True)])
def test_radam_step_with_device_counters(gpu, rng, dtype, weight_decay, decoupled, maximize,
                                         tensor_lr):
    def args(lr):
        return (lr, 0.9, 0.99, 1e-8, weight_decay, decoupled, maximize, None, None, None), {}
    _check(*_run_with_counters("radam_step", rng, dtype, args, tensor_lr), dtype, (0, 2, 3))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("weight_decay,maximize,beta1,tensor_lr", [
    (0.0, False, 0.9, True), (0.1, True, 0.3, False)])
def test_adamax_step_with_device_counters(gpu, rng, dtype, weight_decay, maximize, beta1,
                                          tensor_lr):
    def args(lr):
        return (beta1, 0.99, 1e-8, weight_decay, maximize, None), {"lr": lr}
    _check(*_run_with_counters("adamax_step", rng, dtype, args, tensor_lr), dtype, (0, 2, 3))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("weight_decay,maximize", [(0.0, False), (0.1, True)])
def test_adadelta_step(gpu, rng, dtype, weight_decay, maximize):
    args = (0.5, 0.9, 1e-6, weight_decay, maximize)
    _check(*_run_both("adadelta_step", rng, dtype, 4, args, positive=(2, 3)), dtype, (0, 2, 3))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("mu,weight_decay,maximize", [(1.0, 0.0, False), (0.25, 0.1, True)])
def test_asgd_step(gpu, rng, dtype, mu, weight_decay, maximize):
    args = (0.05, mu, 1e-2, weight_decay, maximize)
    _check(*_run_both("asgd_step", rng, dtype, 3, args), dtype, (0, 2))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("maximize,bounds", [(False, (1e-6, 50.0)), (True, (0.3, 0.9))])
def test_rprop_step(gpu, rng, dtype, maximize, bounds):
    args = (0.5, 1.2, *bounds, maximize)
    host, dev = _run_both("rprop_step", rng, dtype, 4, args, positive=(3,))
    _check(host, dev, dtype, (0, 2, 3))


def test_rprop_zero_and_flipped_signs(gpu):
    """Gradients that flip sign, keep it, or meet a zero previous gradient, element by element."""
    grads = [np.array([1.0, -2.0, 3.0, 0.0, -1.0], np.float32)]
    prevs = [np.array([2.0, -1.0, -3.0, 5.0, 0.0], np.float32)]
    host = [[np.zeros(5, np.float32)], grads, prevs, [np.full(5, 0.1, np.float32)]]
    dev = [[ti.to_device(a) for a in lst] for lst in host]
    dispatch.kernel("rprop_step", "cpu")(*host, 0.5, 1.2, 1e-6, 50.0, False)
    kx.rprop_step(*dev, 0.5, 1.2, 1e-6, 50.0, False)
    np.testing.assert_allclose(host[3][0], [0.12, 0.12, 0.05, 0.1, 0.1], rtol=1e-6)
    np.testing.assert_allclose(host[0][0], [-0.12, 0.12, 0.0, 0.0, 0.1], rtol=1e-6)
    _check(host, dev, np.dtype(np.float32), (0, 2, 3))
