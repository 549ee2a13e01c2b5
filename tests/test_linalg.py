"""Matrix products against PyTorch: matmul's broadcasting rules, mm/bmm/mv/dot/outer, the
add*-forms, einsum, tensordot and genesis.linalg norms; values, gradients and errors."""

import math

import numpy as np
import pytest
import torch

import genesis
from genesis.autograd import gradcheck, gradgradcheck
from helpers import FLOAT_DTYPES, INT_DTYPES, assert_close, make_pair

MATMUL_SHAPES = [
    ((3,), (3,)), ((2, 3), (3, 4)), ((3,), (3, 4)), ((2, 3), (3,)), ((5, 2, 3), (3, 4)),
    ((3,), (5, 3, 4)), ((5, 2, 3), (3,)), ((2, 1, 2, 3), (4, 3, 5)), ((1, 2, 3), (4, 3, 5)),
    ((7, 13), (13, 1)), ((0, 3), (3, 4)), ((2, 0), (0, 4)), ((2, 3), (3, 0)), ((4, 1, 3), (3, 2)),
]


def pairs(*shapes, dtype=genesis.float64, requires_grad=False, rng=None, device="cpu"):
    """Genesis (on `device`)/torch pairs with the same random values, one per shape."""
    made = [make_pair(s, dtype, requires_grad=requires_grad, device=device, rng=rng)
            for s in shapes]
    return [m[0] for m in made], [m[1] for m in made]


def backward_both(g_out, t_out, rng):
    """Backward of a random weighting of both outputs."""
    w = rng.standard_normal(tuple(t_out.shape))
    (g_out * genesis.tensor(w, dtype=g_out.dtype, device=g_out.device)).sum().backward()
    (t_out * torch.tensor(w, dtype=t_out.dtype)).sum().backward()


def assert_grads(gs, ts):
    for g, t in zip(gs, ts):
        assert_close(g.grad, t.grad)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + INT_DTYPES)
@pytest.mark.parametrize("shapes", MATMUL_SHAPES)
def test_matmul_forward(dtype, shapes, rng, device):
    (a, b), (ta, tb) = pairs(*shapes, dtype=dtype, rng=rng, device=device)
    assert_close(a @ b, ta @ tb)


@pytest.mark.parametrize("dtype", [genesis.float32, genesis.float64])
@pytest.mark.parametrize("shapes", MATMUL_SHAPES)
def test_matmul_backward(dtype, shapes, rng, device):
    (a, b), (ta, tb) = pairs(*shapes, dtype=dtype, requires_grad=True, rng=rng, device=device)
    backward_both(genesis.matmul(a, b), torch.matmul(ta, tb), rng)
    assert_grads((a, b), (ta, tb))


@pytest.mark.parametrize("shapes", [((3,), (3,)), ((2, 3), (3,)), ((3,), (2, 3, 2)),
                                    ((2, 1, 2, 3), (3, 3, 2))])
def test_matmul_gradcheck(shapes, rng, device):
    (a, b), _ = pairs(*shapes, requires_grad=True, rng=rng, device=device)
    assert gradcheck(genesis.matmul, (a, b))
    assert gradgradcheck(genesis.matmul, (a, b))


def _noncontiguous(kind, shape, rng, device):
    """A float64 genesis view on `device` with `shape`, transposed / stepped / expanded, and
    torch's copy."""
    if kind == "transposed":
        g = genesis.tensor(rng.standard_normal(shape[::-1]), device=device)
        g = g.permute(*reversed(range(len(shape))))
    elif kind == "stepped":
        every_other = tuple(slice(None, None, 2) for _ in shape)
        g = genesis.tensor(rng.standard_normal([2 * s for s in shape]), device=device)[every_other]
    else:
        g = genesis.tensor(rng.standard_normal((1,) + shape[1:]), device=device).expand(*shape)
    return g, torch.from_numpy(np.ascontiguousarray(g.cpu().numpy()))


@pytest.mark.parametrize("kind", ["transposed", "stepped", "expanded"])
@pytest.mark.parametrize("op,shapes", [
    ("matmul", ((4, 3), (3, 5))), ("bmm", ((2, 4, 3), (2, 3, 5))), ("matmul", ((2, 4, 3), (3,))),
    ("mv", ((4, 3), (3,)))])
def test_noncontiguous(kind, op, shapes, rng, device):
    a, ta = _noncontiguous(kind, shapes[0], rng, device=device)
    b, tb = _noncontiguous(kind, shapes[1], rng, device=device)
    assert not a.is_contiguous()
    assert_close(getattr(genesis, op)(a, b), getattr(torch, op)(ta, tb))


@pytest.mark.parametrize("op,shapes", [
    ("mm", ((3, 4), (4, 2))), ("bmm", ((3, 2, 4), (3, 4, 5))), ("mv", ((3, 4), (4,))),
    ("dot", ((5,), (5,))), ("vdot", ((5,), (5,))), ("outer", ((3,), (4,))), ("ger", ((3,), (4,))),
    ("matmul", ((1, 1), (1, 1))), ("mm", ((0, 2), (2, 3)))])
@pytest.mark.parametrize("dtype", [genesis.float32, genesis.float64])
def test_named_products(op, shapes, dtype, rng, device):
    (a, b), (ta, tb) = pairs(*shapes, dtype=dtype, requires_grad=True, rng=rng, device=device)
    out, want = getattr(genesis, op)(a, b), getattr(torch, op)(ta, tb)
    assert_close(out, want)
    assert_close(getattr(a, op)(b), want)
    backward_both(out, want, rng)
    assert_grads((a, b), (ta, tb))


def test_spmm_of_strided_tensors_is_mm(rng, device):
    """torch.spmm of dense operands (graph-convolution scripts) is mm, gradients included."""
    (a, b), (ta, tb) = pairs((5, 4), (4, 3), dtype=genesis.float64, requires_grad=True, rng=rng,
                             device=device)
    out, want = genesis.spmm(a, b), torch.spmm(ta, tb)
    assert_close(out, want)
    backward_both(out, want, rng)
    assert_grads((a, b), (ta, tb))
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied "
                                           r"\(5x4 and 5x4\)"):
        genesis.spmm(a, a)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + [genesis.int64, genesis.int32])
def test_named_products_dtypes(dtype, rng, device):
    (a, b, v), (ta, tb, tv) = pairs((4, 3), (3, 5), (3,), dtype=dtype, rng=rng, device=device)
    assert_close(genesis.mm(a, b), torch.mm(ta, tb))
    assert_close(genesis.mv(a, v), torch.mv(ta, tv))
    assert_close(genesis.dot(v, v), torch.dot(tv, tv))
    assert_close(genesis.outer(v, v), torch.outer(tv, tv))


def test_outer_promotes(rng, device):
    (a, b), (ta, tb) = pairs((3,), (2,), rng=rng, device=device)
    assert_close(genesis.outer(a.long(), b.float()), torch.outer(ta.long(), tb.float()))


@pytest.mark.parametrize("op,shapes", [
    ("addmm", ((2, 4), (2, 3), (3, 4))), ("addmm", ((4,), (2, 3), (3, 4))),
    ("addmm", ((1, 1), (2, 3), (3, 4))), ("baddbmm", ((5, 2, 4), (5, 2, 3), (5, 3, 4))),
    ("baddbmm", ((2, 4), (5, 2, 3), (5, 3, 4))), ("addmv", ((2,), (2, 3), (3,)))])
@pytest.mark.parametrize("alpha,beta", [(1, 1), (0.5, 2.0), (-1.5, 0)])
def test_add_forms(op, shapes, alpha, beta, rng, device):
    gs, ts = pairs(*shapes, requires_grad=True, rng=rng, device=device)
    out = getattr(genesis, op)(*gs, alpha=alpha, beta=beta)
    want = getattr(torch, op)(*ts, alpha=alpha, beta=beta)
    assert_close(out, want)
    backward_both(out, want, rng)
    for g, t in zip(gs, ts):
        if t.grad is not None and g.grad is None:
            assert not t.grad.any()
        else:
            assert_close(g.grad, t.grad)
    assert gradcheck(lambda *xs: getattr(genesis, op)(*xs, alpha=alpha, beta=beta), tuple(gs))


def test_add_forms_ignore_nan_input_when_beta_is_zero(rng, device):
    (a, b), _ = pairs((2, 3), (3, 4), rng=rng, device=device)
    out = genesis.addmm(genesis.full((2, 4), math.nan, dtype=genesis.float64, device=device), a, b,
                        beta=0)
    assert not out.isnan().any()


@pytest.mark.parametrize("dtype", [genesis.float16, genesis.bfloat16])
def test_half_products_compute_in_float32(dtype, rng, device):
    (i, a, b), (ti, ta, tb) = pairs((8, 16), (8, 64), (64, 16), dtype=dtype, rng=rng, device=device)
    want = (ta.float() @ tb.float()).to(ta.dtype)
    assert_close(a @ b, want)
    assert_close(genesis.addmm(i, a, b), (ti.float() + ta.float() @ tb.float()).to(ta.dtype))
    assert_close(genesis.einsum("ij,jk->ik", a, b), want)


EINSUM_CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("ij,jk", [(2, 3), (3, 4)]), ("ii->i", [(3, 3)]),
    ("ii", [(4, 4)]), ("iij->ij", [(3, 3, 2)]), ("iii->", [(2, 2, 2)]),
    ("...ij,...jk->...ik", [(5, 1, 2, 3), (4, 3, 2)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("i,j->ij", [(3,), (4,)]), ("ij->", [(2, 3)]), ("ij->ji", [(2, 3)]), ("ijk->kij", [(2, 3, 4)]),
    ("ab...,b", [(2, 3, 4, 5), (3,)]), ("i,i", [(5,), (5,)]),
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
    ("Ba,aB", [(2, 3), (3, 2)]), ("bA,aB", [(2, 3), (3, 2)]), ("ij,ij->ij", [(2, 3), (1, 3)]),
    ("i j , j k -> i k", [(2, 3), (3, 2)]), ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
    ("...", [(2, 3)]), ("...->", [(2, 3)]), ("i...->...", [(3, 2, 2)]),
    ("ijk,k->", [(2, 0, 3), (3,)]), ("ii->i", [(1, 1)]), ("ji,j->i", [(3, 4), (3,)]),
    (",i->i", [(), (3,)]), ("i,ij->j", [(1,), (4, 2)]),
]


@pytest.mark.parametrize("equation,shapes", EINSUM_CASES)
def test_einsum(equation, shapes, rng, device):
    gs, ts = pairs(*shapes, requires_grad=True, rng=rng, device=device)
    out, want = genesis.einsum(equation, *gs), torch.einsum(equation, *ts)
    assert_close(out, want)
    backward_both(out, want, rng)
    assert_grads(gs, ts)


@pytest.mark.parametrize("equation,shapes", [
    ("ij,jk->ik", [(2, 3), (3, 2)]), ("ii->i", [(3, 3)]), ("iij->j", [(2, 2, 3)]),
    ("...ij,...jk", [(2, 1, 2, 3), (2, 3, 2)]), ("ij,j,jk->ik", [(2, 3), (3,), (3, 2)]),
    ("ij->", [(2, 3)]), ("i,i->i", [(3,), (1,)])])
def test_einsum_gradcheck(equation, shapes, rng, device):
    gs, _ = pairs(*shapes, requires_grad=True, rng=rng, device=device)
    fn = lambda *xs: genesis.einsum(equation, *xs)  # noqa: E731
    assert gradcheck(fn, tuple(gs))
    assert gradgradcheck(fn, tuple(gs))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + [genesis.int64, genesis.int32])
def test_einsum_dtypes_and_list_operands(dtype, rng, device):
    (a, b), (ta, tb) = pairs((2, 3, 4), (4, 3), dtype=dtype, rng=rng, device=device)
    assert_close(genesis.einsum("bij,jk->bik", [a, b]), torch.einsum("bij,jk->bik", [ta, tb]))


def test_einsum_returns_a_fresh_tensor(rng, device):
    (a,), _ = pairs((3, 3), rng=rng, device=device)
    diag = genesis.einsum("ii->i", a)
    diag.add_(1.0)
    assert (a.cpu().numpy().diagonal() + 1 == diag.cpu().numpy()).all()


@pytest.mark.parametrize("dims,shapes", [
    (0, [(2, 3), (4,)]), (1, [(2, 3, 4), (4, 2)]), (2, [(2, 3, 4), (3, 4, 5)]),
    (([1, 0], [0, 1]), [(2, 3, 4), (3, 2, 4)]), (([2], [0]), [(2, 3, 4), (4, 2)]),
    (([-1], [0]), [(2, 3), (3, 4)])])
def test_tensordot(dims, shapes, rng, device):
    (a, b), (ta, tb) = pairs(*shapes, requires_grad=True, rng=rng, device=device)
    out, want = genesis.tensordot(a, b, dims), torch.tensordot(ta, tb, dims)
    assert_close(out, want)
    backward_both(out, want, rng)
    assert_grads((a, b), (ta, tb))


@pytest.mark.parametrize("ord,dim", [(2, None), (1, 1), (math.inf, (0, 2)), (3.5, -1), (0, None)])
def test_linalg_vector_norm(ord, dim, rng, device):
    (x,), (tx,) = pairs((3, 4, 5), rng=rng, device=device)
    assert_close(genesis.linalg.vector_norm(x, ord, dim), torch.linalg.vector_norm(tx, ord, dim))


@pytest.mark.parametrize("ord", ["fro", 1, -1, math.inf, -math.inf])
@pytest.mark.parametrize("keepdim", [False, True])
def test_linalg_matrix_norm(ord, keepdim, rng, device):
    (x,), (tx,) = pairs((2, 3, 4), requires_grad=True, rng=rng, device=device)
    out = genesis.linalg.matrix_norm(x, ord, keepdim=keepdim)
    want = torch.linalg.matrix_norm(tx, ord, keepdim=keepdim)
    assert_close(out, want)
    backward_both(out, want, rng)
    assert_grads((x,), (tx,))


@pytest.mark.parametrize("args", [(None, None), (None, 1), ("fro", None), (1, None), (math.inf, 0),
                                  (3, 1), (-1, None)])
def test_linalg_norm(args, rng, device):
    (x,), (tx,) = pairs((3, 4), rng=rng, device=device)
    assert_close(genesis.linalg.norm(x, *args), torch.linalg.norm(tx, *args))


def test_linalg_namespace(rng, device):
    import genesis.linalg as la
    (a, b), (ta, tb) = pairs((3, 4), (3, 4), rng=rng, device=device)
    assert la is genesis.linalg
    assert_close(la.vecdot(a, b), torch.linalg.vecdot(ta, tb))
    assert_close(la.matmul(a, b.mT), torch.linalg.matmul(ta, tb.mT))


def test_rmatmul_and_inplace_operator(rng, device):
    (a, b), (ta, tb) = pairs((2, 3), (3, 3), rng=rng, device=device)
    assert_close(b.__rmatmul__(a), ta @ tb)
    c = a.clone()
    c @= b
    assert_close(c, ta @ tb)


def _op(name, *args):
    """A call of `name` from the library (genesis or torch) given first."""
    return lambda lib, *xs: getattr(lib, name)(*args, *xs)


def _matmul(lib, a, b):
    return a @ b


@pytest.mark.parametrize("fn,shapes,message", [
    (_matmul, [(2, 3), (4, 5)], r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)"),
    (_matmul, [(3,), (4,)], r"inconsistent tensor size, expected tensor \[3\]"),
    (_matmul, [(2, 3), (4,)], r"size mismatch, got input \(2\), mat \(2x3\), vec \(4\)"),
    (_matmul, [(3,), (4, 5)], r"shapes cannot be multiplied \(1x3 and 4x5\)"),
    (_matmul, [(2, 2, 3), (3, 3, 5)], r"size of tensor a \(2\) must match the size of tensor b"),
    (_matmul, [(), (2,)], r"at least 1D, but they are 0D and 1D"),
    (_op("mm"), [(3,), (3, 3)], "self must be a matrix"),
    (_op("mm"), [(3, 3), (3,)], "mat2 must be a matrix"),
    (_op("bmm"), [(2, 3), (2, 3, 3)], "batch1 must be a 3D tensor"),
    (_op("bmm"), [(2, 2, 3), (3, 3, 3)], r"batch2 tensor to be: \[2, 3\] but got: \[3, 3\]"),
    (_op("mv"), [(2, 3), (4,)], r"size mismatch, got input \(2\), mat \(2x3\), vec \(4\)"),
    (_op("dot"), [(2, 3), (3,)], "1D tensors expected, but got 2D and 1D"),
    (_op("dot"), [(3,), (4,)], "inconsistent tensor size"),
    (_op("outer"), [(2, 2), (3,)], "outer: Expected 1-D argument self, but got 2-D"),
    (_op("addmm"), [(3, 3), (2, 3), (3, 2)], "size"),
    (_op("einsum", "ij,jk"), [(2, 3)], "fewer operands were provided"),
    (_op("einsum", "ijk"), [(2, 3)], r"number of subscripts in the equation \(3\)"),
    (_op("einsum", "ij->k"), [(2, 3)], "output subscript k does not appear"),
    (_op("einsum", "ii->i"), [(2, 3)], "subscript i is repeated for operand 0"),
    (_op("einsum", "ij,ij"), [(2, 3), (3, 2)], "not broadcast"),
])
def test_errors(fn, shapes, message, rng, device):
    gs, ts = pairs(*shapes, rng=rng, device=device)
    with pytest.raises(RuntimeError, match=message):
        fn(torch, *ts)
    with pytest.raises(RuntimeError, match=message):
        fn(genesis, *gs)


@pytest.mark.parametrize("fn, shapes, dtypes", [
    (_matmul, [(2, 3), (3, 2)], ("float32", "float64")),
    (_matmul, [(2, 3), (3, 2)], ("float16", "float32")),
    (_matmul, [(2, 3), (3, 2)], ("float32", "int64")),
    (_matmul, [(2, 2, 3), (2, 3, 2)], ("float32", "float64")),
    (_matmul, [(2, 2, 3), (3, 2)], ("float32", "bfloat16")),
    (_op("mm"), [(2, 3), (3, 2)], ("float32", "int32")),
    (_op("bmm"), [(2, 2, 3), (2, 3, 2)], ("float64", "float32")),
    (_op("dot"), [(3,), (3,)], ("float32", "float64"))])
def test_dtype_mismatch_refused_as_torch(fn, shapes, dtypes, device):
    """Products of two dtypes are refused in torch's words ('expected m1 and m2 to have the
    same dtype, but got: float != double'; bmm's 'expected scalar type Float but found
    Double'), after the op's name where torch's names none."""
    with pytest.raises(RuntimeError) as expected:
        fn(torch, *(torch.ones(s, dtype=getattr(torch, d)) for s, d in zip(shapes, dtypes)))
    with pytest.raises(RuntimeError) as got:
        fn(genesis, *(genesis.ones(s, dtype=getattr(genesis, d), device=device)
                      for s, d in zip(shapes, dtypes)))
    assert str(expected.value) in (str(got.value), str(got.value).split(": ", 1)[1])


def test_dtype_and_bool_errors(device):
    def ones(*shape, dtype=genesis.float32):
        return genesis.ones(*shape, dtype=dtype, device=device)
    with pytest.raises(RuntimeError, match="same dtype"):
        ones(2, 3) @ ones(3, 2, dtype=genesis.float64)
    with pytest.raises(RuntimeError, match="dot : expected both vectors to have same dtype"):
        genesis.dot(ones(3), ones(3, dtype=genesis.float64))
    with pytest.raises(RuntimeError, match="einsum"):
        genesis.einsum("ij,jk", ones(2, 3), ones(3, 4, dtype=genesis.float64))
    with pytest.raises(NotImplementedError, match="bool"):
        ones(2, 2, dtype=genesis.bool) @ ones(2, 2, dtype=genesis.bool)
