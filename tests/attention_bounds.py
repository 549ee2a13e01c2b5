"""Per-element rounding bounds that fused attention's results may carry beyond a dtype's
tolerance, against a reference computed in a wider type.

Half precision: the kernels round the float32 probabilities P (and dS) to the input dtype before
the product that consumes them, as FlashAttention and torch's fused kernels do. A rounded term
is off by at most u |x| + e, u the dtype's unit roundoff and e half its smallest subnormal step
(float16's P and dS underflow into subnormals; bfloat16's never do, e = 0). To first order, with
G the output's gradient, N the keys each query sees (1 where P > 0) and s the score scale:

    E_O  = u (P |V|) + e (N |V|)                   the forward's P
    E_dV = u (P^T |G|) + e (N^T |G|)               the backward's P
    E_dS = u |dS| + e N + P rowsum(|G| E_O)        dS = P (G V^T - rowsum(G O)) rounded, and
                                                   O's error entering rowsum(G O)
    E_dQ = s (E_dS |K|)        E_dK = s (E_dS^T |Q|)

Cancellation: dP = dO V^T and Delta = rowsum(dO O) are float32 dot products that cancel exactly
wherever a query sees one key (P one-hot). There dQ and dK are rounding, the kernel's and the
reference's alike: up to float32's unit roundoff (2^-24) times the sum of the absolute terms,
which the dtype's tolerance does not cover when the exact value is zero.
"""

import math

import torch

UNIT_ROUNDOFF = {"float16": 2.0 ** -11, "bfloat16": 2.0 ** -8}
SUBNORMAL_ROUNDING = {"float16": 2.0 ** -25, "bfloat16": 0.0}


def _softmax(q, k, v, grad, causal, scale, mask=None):
    """(float64 q, k, v, grad, the probabilities P, the score scale s), causal top-left
    aligned, under `mask` (bool: True may attend; else added); rows no key may reach are 0."""
    q, k, v, g = (torch.as_tensor(t).detach().double() for t in (q, k, v, grad))
    s = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = q @ k.mT * s
    if mask is not None:
        if not isinstance(mask, torch.Tensor):
            mask = torch.as_tensor(mask if mask.dtype == bool else mask.astype("float64"))
        scores = (scores.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool
                  else scores + mask.double())
    if causal:
        keep = torch.ones(scores.shape[-2:], dtype=torch.bool).tril()
        scores = scores.masked_fill(~keep, float("-inf"))
    return q, k, v, g, scores.softmax(-1).nan_to_num(0.0), s


def half_rounding_bounds(q, k, v, grad, causal, scale, dtype_name, mask=None):
    """float64 bounds (out, dq, dk, dv) for (..., L, D) queries and (..., S, D) keys and values
    (as many heads as the queries); zeros for dtypes other than float16 and bfloat16."""
    q, k, v, g, p, s = _softmax(q, k, v, grad, causal, scale, mask)
    u, e = UNIT_ROUNDOFF.get(dtype_name, 0.0), SUBNORMAL_ROUNDING.get(dtype_name, 0.0)
    seen = (p > 0).double()
    out = u * (p @ v.abs()) + e * (seen @ v.abs())
    ds = p * (g @ v.mT - (g * (p @ v)).sum(-1, keepdim=True))
    ds_error = u * ds.abs() + e * seen + p * (g.abs() * out).sum(-1, keepdim=True)
    return (out, s * (ds_error @ k.abs()), s * (ds_error.mT @ q.abs()),
            u * (p.mT @ g.abs()) + e * (seen.mT @ g.abs()))


def cancellation_bounds(q, k, v, grad, causal, scale, mask=None):
    """float64 bounds (dq, dk) of float32's rounding where dP and Delta cancel."""
    q, k, v, g, p, s = _softmax(q, k, v, grad, causal, scale, mask)
    terms = p * (g.abs() @ v.abs().mT + (g.abs() * (p @ v).abs()).sum(-1, keepdim=True))
    eps = 2.0 ** -24
    return eps * s * (terms @ k.abs()), eps * s * (terms.mT @ q.abs())
