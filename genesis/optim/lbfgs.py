"""L-BFGS with an optional strong-Wolfe line search, as PyTorch's `torch.optim.LBFGS`.

The parameters are handled as one flat vector (their gradients concatenated); the scalars of
the two-loop recursion stay 0-d tensors where PyTorch's do, so the arithmetic rounds as there.
"""

from ..autograd.grad_mode import enable_grad, no_grad
from ..ops.shape_copies import cat
from ..tensor import Tensor
from .optimizer import Optimizer


def _cubic_interpolate(x1, f1, g1, x2, f2, g2, bounds=None):
    """The minimizer of the cubic through (x1, f1, g1) and (x2, f2, g2), clamped to `bounds`
    (default: between x1 and x2); their midpoint when the cubic has no minimum."""
    if bounds is not None:
        xmin_bound, xmax_bound = bounds
    else:
        xmin_bound, xmax_bound = (x1, x2) if x1 <= x2 else (x2, x1)
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 ** 2 - g1 * g2
    if d2_square >= 0:
        d2 = d2_square.sqrt() if isinstance(d2_square, Tensor) else d2_square ** 0.5
        if x1 <= x2:
            min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
        else:
            min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
        return min(max(min_pos, xmin_bound), xmax_bound)
    return (xmin_bound + xmax_bound) / 2.0


class _Bracket:
    """The line search's interval: step, loss, gradient and directional derivative at each
    end."""

    def __init__(self, t, f, g, gtd):
        self.t, self.f, self.g, self.gtd = t, f, g, gtd

    def set(self, i, t, f, g, gtd):
        self.t[i], self.f[i], self.g[i], self.gtd[i] = t, f, g, gtd


def _strong_wolfe(obj_func, x, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9,
                  max_ls=25):
    """A step t along d meeting the strong Wolfe conditions (sufficient decrease c1, curvature
    c2): bracket, then zoom by cubic interpolation. Returns (loss, flat grad, t, evaluations)."""
    d_norm = d.abs().max()
    g = g.clone()
    f_new, g_new = obj_func(x, t, d)
    ls_func_evals = 1
    gtd_new = g_new.dot(d)
    t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
    done = False
    ls_iter = 0
    bracket = None
    while ls_iter < max_ls:
        if f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev):
            bracket = _Bracket([t_prev, t], [f_prev, f_new], [g_prev, g_new.clone()],
                               [gtd_prev, gtd_new])
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket = _Bracket([t], [f_new], [g_new], None)
            done = True
            break
        if gtd_new >= 0:
            bracket = _Bracket([t_prev, t], [f_prev, f_new], [g_prev, g_new.clone()],
                               [gtd_prev, gtd_new])
            break
        min_step = t + 0.01 * (t - t_prev)
        max_step = t * 10
        tmp = t
        t = _cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new,
                               bounds=(min_step, max_step))
        t_prev, f_prev, g_prev, gtd_prev = tmp, f_new, g_new.clone(), gtd_new
        f_new, g_new = obj_func(x, t, d)
        ls_func_evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1
    if ls_iter == max_ls:
        bracket = _Bracket([0, t], [f, f_new], [g, g_new], None if bracket is None
                           else bracket.gtd)
    b = bracket
    insuf_progress = False
    low, high = (0, 1) if b.f[0] <= b.f[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(b.t[1] - b.t[0]) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(b.t[0], b.f[0], b.gtd[0], b.t[1], b.f[1], b.gtd[1])
        t, insuf_progress = _safeguard(t, b.t, insuf_progress)
        f_new, g_new = obj_func(x, t, d)
        ls_func_evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1
        if f_new > (f + c1 * t * gtd) or f_new >= b.f[low]:
            b.set(high, t, f_new, g_new.clone(), gtd_new)
            low, high = (0, 1) if b.f[0] <= b.f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (b.t[high] - b.t[low]) >= 0:
                b.set(high, b.t[low], b.f[low], b.g[low], b.gtd[low])
            b.set(low, t, f_new, g_new.clone(), gtd_new)
    return b.f[low], b.g[low], b.t[low], ls_func_evals


def _safeguard(t, bracket, insuf_progress):
    """Move a trial step too close to an end of the bracket (within a tenth of its width) 0.1
    width inside, when progress was already insufficient or it lies outside; returns (t, the
    new insufficient-progress flag)."""
    eps = 0.1 * (max(bracket) - min(bracket))
    if min(max(bracket) - t, t - min(bracket)) >= eps:
        return t, False
    if not (insuf_progress or t >= max(bracket) or t <= min(bracket)):
        return t, True
    if abs(t - max(bracket)) < abs(t - min(bracket)):
        return max(bracket) - eps, False
    return min(bracket) + eps, False


class LBFGS(Optimizer):
    """PyTorch's L-BFGS: `step(closure)` runs up to `max_iter` iterations of the two-loop
    recursion over the last `history_size` curvature pairs, with a fixed step `lr` or a strong
    Wolfe line search (`line_search_fn="strong_wolfe"`). One parameter group only."""

    def __init__(self, params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7,
                 tolerance_change=1e-9, history_size=100, line_search_fn=None):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = dict(lr=lr, max_iter=max_iter, max_eval=max_eval,
                        tolerance_grad=tolerance_grad, tolerance_change=tolerance_change,
                        history_size=history_size, line_search_fn=line_search_fn)
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    def _gather_flat_grad(self):
        return cat([p.new_zeros((p.numel(),)) if p.grad is None else p.grad.reshape(-1)
                    for p in self._params], 0)

    def _add_grad(self, step_size, update):
        offset = 0
        for p in self._params:
            numel = p.numel()
            p.add_(update[offset:offset + numel].view_as(p), alpha=float(step_size))
            offset += numel

    def _directional_evaluate(self, closure, x, t, d):
        """(loss, flat gradient) at x + t d; the parameters are put back to x."""
        self._add_grad(t, d)
        loss = float(closure())
        flat_grad = self._gather_flat_grad()
        for p, value in zip(self._params, x):
            p.copy_(value)
        return loss, flat_grad

    def step(self, closure):
        """Minimize for up to `max_iter` iterations; `closure` re-evaluates the model (zeroing
        and recomputing the gradients) and returns the loss. Returns the first loss."""
        with no_grad():
            return self._step(_with_grad(closure))

    def _step(self, closure):
        group = self.param_groups[0]
        lr = float(group["lr"])
        max_iter, max_eval = group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)
        orig_loss = closure()
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._gather_flat_grad()
        if flat_grad.abs().max() <= tolerance_grad:
            return orig_loss
        d, t = state.get("d"), state.get("t")
        old_dirs, old_stps, ro = state.get("old_dirs"), state.get("old_stps"), state.get("ro")
        H_diag = state.get("H_diag")
        prev_flat_grad, prev_loss = state.get("prev_flat_grad"), state.get("prev_loss")
        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d = flat_grad.neg()
                old_dirs, old_stps, ro = [], [], []
                H_diag = 1
            else:
                y = flat_grad.sub(prev_flat_grad)
                s = d.mul(t)
                ys = y.dot(s)
                if ys > 1e-10:
                    if len(old_dirs) == group["history_size"]:
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    H_diag = ys / y.dot(y)
                d = self._direction(state, flat_grad, old_dirs, old_stps, ro, H_diag)
            if prev_flat_grad is None:
                prev_flat_grad = flat_grad.clone()
            else:
                prev_flat_grad.copy_(flat_grad)
            prev_loss = loss
            if state["n_iter"] == 1:
                t = min(1.0, 1.0 / flat_grad.abs().sum()) * lr
            else:
                t = lr
            gtd = flat_grad.dot(d)
            if gtd > -tolerance_change:
                break
            ls_func_evals = 0
            if group["line_search_fn"] is not None:
                if group["line_search_fn"] != "strong_wolfe":
                    raise RuntimeError("only 'strong_wolfe' is supported")
                x_init = [p.clone() for p in self._params]

                def obj_func(x, t, d):
                    return self._directional_evaluate(closure, x, t, d)

                loss, flat_grad, t, ls_func_evals = _strong_wolfe(
                    obj_func, x_init, t, d, loss, flat_grad, gtd,
                    max_ls=max_eval - current_evals)
                self._add_grad(t, d)
                opt_cond = flat_grad.abs().max() <= tolerance_grad
            else:
                self._add_grad(t, d)
                opt_cond = False
                if n_iter != max_iter:
                    loss = float(closure())
                    flat_grad = self._gather_flat_grad()
                    opt_cond = flat_grad.abs().max() <= tolerance_grad
                    ls_func_evals = 1
            current_evals += ls_func_evals
            state["func_evals"] += ls_func_evals
            if (n_iter == max_iter or current_evals >= max_eval or opt_cond
                    or d.mul(t).abs().max() <= tolerance_change
                    or abs(loss - prev_loss) < tolerance_change):
                break
        state.update(d=d, t=t, old_dirs=old_dirs, old_stps=old_stps, ro=ro, H_diag=H_diag,
                     prev_flat_grad=prev_flat_grad, prev_loss=prev_loss)
        return orig_loss

    def _direction(self, state, flat_grad, old_dirs, old_stps, ro, H_diag):
        """The two-loop recursion: -H g for the inverse Hessian estimate H of the history."""
        if "al" not in state:
            state["al"] = [None] * self.param_groups[0]["history_size"]
        al = state["al"]
        q = flat_grad.neg()
        for i in range(len(old_dirs) - 1, -1, -1):
            al[i] = old_stps[i].dot(q) * ro[i]
            q.add_(old_dirs[i], alpha=-float(al[i]))
        r = q.mul(H_diag)
        for i in range(len(old_dirs)):
            be_i = old_dirs[i].dot(r) * ro[i]
            r.add_(old_stps[i], alpha=float(al[i] - be_i))
        return r


def _with_grad(closure):
    """`closure` run with gradient recording on (the step itself runs without)."""
    def run():
        with enable_grad():
            return closure()
    return run
