"""LBFGS against torch.optim.LBFGS: least squares and the Rosenbrock function, with a fixed step
and with the strong-Wolfe line search, closure calls and state included."""

import numpy as np
import pytest
import torch

import genesis
from genesis import optim


def _least_squares(lib, params, a, b):
    (x,) = params
    return ((a @ x - b) ** 2).sum()


def _rosenbrock(lib, params, *_):
    (x,) = params
    return ((1 - x[:-1]) ** 2).sum() + 100 * ((x[1:] - x[:-1] ** 2) ** 2).sum()


def _problem(kind, rng, dtype):
    if kind == "least_squares":
        # orthogonal columns scaled by 1..3: condition number 3, so the float32 rounding of
        # the two frameworks' dot products is not magnified into the iterates
        q = np.linalg.qr(rng.standard_normal((30, 16)))[0]
        a = (q * np.linspace(1.0, 3.0, 16)).astype(dtype)
        b = rng.standard_normal(30).astype(dtype)
        return _least_squares, rng.standard_normal(16).astype(dtype), (a, b)
    return _rosenbrock, np.array([-1.2, 1.0, -0.5, 0.8], dtype=dtype), ()


def _run(lib, opt_module, objective, x0, data, kwargs, steps):
    x = lib.tensor(x0, requires_grad=True)
    opt = opt_module.LBFGS([x], **kwargs)
    tensors = [lib.tensor(d) for d in data]
    calls, losses = [0], []

    def closure():
        calls[0] += 1
        opt.zero_grad()
        loss = objective(lib, [x], *tensors)
        loss.backward()
        return loss

    for _ in range(steps):
        losses.append(float(opt.step(closure).detach()))
    return x.detach().numpy(), losses, calls[0], opt.state[x]


# float32: the recursion divides by y.s and y.y, differences of nearby gradients, so a
# last-bit difference of a dot product (BLAS's summation order against numpy's) reaches the
# iterates magnified; over 960 random least-squares runs they stayed within 5e-5 of torch's
@pytest.mark.parametrize("dtype,rtol", [(np.float64, 1e-9), (np.float32, 2e-4)],
                         ids=["float64", "float32"])
@pytest.mark.parametrize("kind", ["least_squares", "rosenbrock"])
@pytest.mark.parametrize("kwargs", [dict(max_iter=5), dict(line_search_fn="strong_wolfe",
                                                               max_iter=5),
                                    dict(lr=0.5, max_iter=4, history_size=2),
                                    dict(line_search_fn="strong_wolfe", history_size=2,
                                         max_iter=4)],
                         ids=["fixed", "wolfe", "fixed-short-history", "wolfe-short-history"])
def test_matches_torch(kind, kwargs, dtype, rtol, rng):
    """Two steps of a few iterations each, stopping short of convergence (16 unknowns for the
    least squares, more than the 10 iterations): near the minimum
    the stopping tests and the line search's branches turn on last-bit differences of the dot
    products (BLAS's summation order against numpy's)."""
    objective, x0, data = _problem(kind, rng, dtype)
    if kind == "rosenbrock" and "line_search_fn" not in kwargs:
        kwargs = dict(kwargs, lr=kwargs.get("lr", 1) * 0.01)
    steps = 2
    mine = _run(genesis, optim, objective, x0, data, kwargs, steps)
    theirs = _run(torch, torch.optim, objective, x0, data, kwargs, steps)
    assert mine[2] == theirs[2]
    assert mine[3]["func_evals"] == theirs[3]["func_evals"]
    assert mine[3]["n_iter"] == theirs[3]["n_iter"]
    np.testing.assert_allclose(mine[1], theirs[1], rtol=rtol)
    np.testing.assert_allclose(mine[0], theirs[0], rtol=rtol,
                               atol=rtol * np.abs(theirs[0]).max())


def test_state_keys_as_torch(rng):
    objective, x0, data = _problem("least_squares", rng, np.float64)
    kwargs = dict(line_search_fn="strong_wolfe", max_iter=3)
    mine = _run(genesis, optim, objective, x0, data, kwargs, 2)[3]
    theirs = _run(torch, torch.optim, objective, x0, data, kwargs, 2)[3]
    assert mine.keys() == theirs.keys()


def test_bad_use_raises_as_torch():
    for lib, opt in ((torch, torch.optim), (genesis, optim)):
        a, b = lib.zeros(2, requires_grad=True), lib.zeros(2, requires_grad=True)
        with pytest.raises(ValueError, match="doesn't support per-parameter options"):
            opt.LBFGS([{"params": [a]}, {"params": [b]}])
        x = lib.ones(2, requires_grad=True)
        lbfgs = opt.LBFGS([x], line_search_fn="wolfe")

        def closure():
            lbfgs.zero_grad()
            loss = (x * x).sum()
            loss.backward()
            return loss
        with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
            lbfgs.step(closure)
