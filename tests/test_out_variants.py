"""PyTorch's out= keyword: the functions that take it (every torch function with an out
overload that genesis has), and what it does, against PyTorch: values written in place or
after a resize (with PyTorch's warning), dtype casts and their errors, factories in out's dtype,
several results, and the refusal to record gradients."""

import warnings

import numpy as np
import pytest
import torch

import genesis
import genesis.linalg  # noqa: F401
import genesis.special  # noqa: F401
from genesis import out_variants
from helpers import TOLERANCES, from_torch

# Names whose out overloads are aten internals that torch's Python functions do not expose.
INTERNAL = {"affine_grid_generator", "constant_pad_nd", "convolution", "embedding", "empty_like",
            "empty_permuted", "empty_strided", "full_like", "grid_sampler_2d", "grid_sampler_3d",
            "ones_like", "rand_like", "randint_like", "randn_like", "unsafe_split",
            "unsafe_split_with_sizes", "zeros_like"}
# torch functions with an aten out overload whose Python forms reject out= (a TypeError).
NO_PYTHON_OUT = {
    "adaptive_avg_pool1d", "argsort", "as_strided_scatter", "avg_pool1d",
    "binary_cross_entropy_with_logits", "bincount", "binomial", "block_diag", "celu",
    "channel_shuffle", "clone", "count_nonzero", "diag_embed", "diagonal_scatter", "dist",
    "fill", "flip", "index_fill", "index_put", "isinf", "isnan", "masked_fill",
    "masked_scatter", "pixel_shuffle", "pixel_unshuffle", "poisson", "put", "relu",
    "repeat_interleave", "roll", "rot90", "rsub", "scalar_tensor", "select_scatter", "slogdet",
    "std_mean", "trace", "tril_indices", "triu_indices", "unique_consecutive", "var_mean"}


def _has_out_overload(qualified):
    """Whether the aten operator has an overload writing into keyword-only tensors."""
    try:
        schemas = torch._C._jit_get_schemas_for_operator(qualified)
    except RuntimeError:
        return False
    return any(a.kwarg_only and a.alias_info is not None and a.alias_info.is_write
               for s in schemas for a in s.arguments)


@pytest.mark.parametrize("module,prefix,names,left_out", [
    ("", "aten::", out_variants.FUNCTIONS, INTERNAL | NO_PYTHON_OUT),
    ("linalg", "aten::linalg_", out_variants.LINALG_FUNCTIONS, INTERNAL | {"matrix_exp"}),
    ("special", "aten::special_", out_variants.SPECIAL_FUNCTIONS, INTERNAL)])
def test_every_out_overload_is_offered(module, prefix, names, left_out):
    t_mod = getattr(torch, module) if module else torch
    g_mod = getattr(genesis, module) if module else genesis
    have = {n for n in dir(t_mod) if not n.startswith("_") and hasattr(g_mod, n)
            and callable(getattr(t_mod, n)) and not isinstance(getattr(t_mod, n), type)}
    expected = {n for n in have if _has_out_overload(prefix + n)} - left_out
    assert set(names) == expected
    assert all(getattr(getattr(g_mod, n), "__out_variant__", False) for n in names)


@pytest.mark.parametrize("name", ["flip", "relu", "clone", "std_mean", "tril_indices"])
def test_out_where_torch_takes_none_is_a_type_error(name):
    """Functions whose Python forms take no out= reject it, as torch's do."""
    calls = {"flip": lambda lib, o: lib.flip(lib.ones(2), [0], out=o),
             "relu": lambda lib, o: lib.relu(lib.ones(2), out=o),
             "clone": lambda lib, o: lib.clone(lib.ones(2), out=o),
             "std_mean": lambda lib, o: lib.std_mean(lib.ones(2, 2), 0, out=(o, o)),
             "tril_indices": lambda lib, o: lib.tril_indices(2, 2, out=o)}
    for lib in (genesis, torch):
        with pytest.raises(TypeError, match="out"):
            calls[name](lib, lib.empty(0))


def _pair(array):
    return torch.from_numpy(array), genesis.tensor(array)


def _run(lib, fn, out):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn(lib, out)
    return result, [str(w.message).split(" (Triggered internally")[0] for w in caught]


def _compare_out(fn, out_array, computed_in=None):
    """fn(lib, out) on both libraries with equal out tensors: results, outs and warnings, the
    values within the tolerance of the dtype they are computed in (out's unless given)."""
    t_out = torch.tensor(out_array)
    g_out = genesis.tensor(out_array.copy())
    t_res, t_warn = _run(torch, fn, t_out)
    g_res, g_warn = _run(genesis, fn, g_out)
    assert g_res is g_out
    assert g_out.dtype.name == str(t_out.dtype).split(".")[1]
    rtol, atol = TOLERANCES.get(computed_in or g_out.dtype, (0, 0))
    np.testing.assert_allclose(g_out.numpy(), t_out.numpy(), rtol=rtol, atol=atol)
    assert set(g_warn) == set(t_warn)  # PyTorch warns twice when it also casts


@pytest.mark.parametrize("case", [
    "add", "add into int64 from int", "matmul", "exp", "clamp", "where", "cat", "sum dim",
    "mean dim", "cumsum", "pow", "eq into float", "linalg.inv", "special.expit"])
@pytest.mark.parametrize("out_shape", ["same", "empty", "other"])
def test_values_match_torch(case, out_shape, rng):
    a = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal((3, 4)).astype(np.float32)
    sq = rng.standard_normal((4, 4)) + 4 * np.eye(4)
    ints = rng.integers(-5, 5, (3, 4))
    cases = {
        "add": (lambda lib, o: lib.add(lib.tensor(a), lib.tensor(b), alpha=2, out=o),
                (3, 4), np.float32),
        "add into int64 from int": (lambda lib, o: lib.add(lib.tensor(ints), 3, out=o),
                                    (3, 4), np.int64),
        "matmul": (lambda lib, o: lib.matmul(lib.tensor(a), lib.tensor(b).T, out=o), (3, 3),
                   np.float32),
        "exp": (lambda lib, o: lib.exp(lib.tensor(a), out=o), (3, 4), np.float64,
                genesis.float32),
        "clamp": (lambda lib, o: lib.clamp(lib.tensor(a), -0.5, 0.5, out=o), (3, 4),
                  np.float32),
        "where": (lambda lib, o: lib.where(lib.tensor(a) > 0, lib.tensor(a), lib.tensor(b),
                                           out=o), (3, 4), np.float32),
        "cat": (lambda lib, o: lib.cat([lib.tensor(a), lib.tensor(b)], 1, out=o), (3, 8),
                np.float32),
        "sum dim": (lambda lib, o: lib.sum(lib.tensor(a), 1, out=o), (3,), np.float32),
        "mean dim": (lambda lib, o: lib.mean(lib.tensor(a), 0, keepdim=True, out=o), (1, 4),
                     np.float32),
        "cumsum": (lambda lib, o: lib.cumsum(lib.tensor(ints), 0, out=o), (3, 4), np.int64),
        "pow": (lambda lib, o: lib.pow(lib.tensor(a), 2, out=o), (3, 4), np.float32),
        "eq into float": (lambda lib, o: lib.eq(lib.tensor(a), lib.tensor(a), out=o), (3, 4),
                          np.float32),
        "linalg.inv": (lambda lib, o: lib.linalg.inv(lib.tensor(sq), out=o), (4, 4),
                       np.float64),
        "special.expit": (lambda lib, o: lib.special.expit(lib.tensor(a), out=o), (3, 4),
                          np.float32),
    }
    fn, shape, dtype, *computed_in = cases[case]
    out_shape = {"same": shape, "empty": (0,), "other": (2, 5)}[out_shape]
    _compare_out(fn, np.full(out_shape, 7, dtype=dtype), *computed_in)


def test_writes_through_a_view_and_into_an_operand(rng):
    a = rng.standard_normal((3, 4)).astype(np.float32)
    buffer = genesis.zeros(2, 3, 4)
    x = genesis.tensor(a)
    genesis.mul(x, 2, out=buffer[1])
    np.testing.assert_array_equal(buffer[1].numpy(), a * 2)
    assert not buffer[0].numpy().any()
    genesis.add(x, x, out=x)
    np.testing.assert_array_equal(x.numpy(), a * 2)


@pytest.mark.parametrize("case", ["zeros", "ones", "arange", "randn float64", "full",
                                  "eye int32", "linspace", "randint float"])
def test_factories_take_out_dtype(case):
    cases = {
        "zeros": (lambda lib, o: lib.zeros(2, 3, out=o), np.int32),
        "ones": (lambda lib, o: lib.ones((4,), out=o), np.float64),
        "arange": (lambda lib, o: lib.arange(1, 7, 2, out=o), np.float32),
        "randn float64": (lambda lib, o: lib.randn(5, out=o), np.float64),
        "full": (lambda lib, o: lib.full((2, 2), 3, out=o), np.int64),
        "eye int32": (lambda lib, o: lib.eye(3, out=o), np.int32),
        "linspace": (lambda lib, o: lib.linspace(0, 1, 5, out=o), np.float64),
        "randint float": (lambda lib, o: lib.randint(0, 4, (6,), out=o), np.float32),
    }
    fn, dtype = cases[case]
    t_out, g_out = torch.tensor(np.zeros(0, dtype)), genesis.tensor(np.zeros(0, dtype))
    t_res, g_res = fn(torch, t_out), fn(genesis, g_out)
    assert g_res is g_out and tuple(g_out.shape) == tuple(t_out.shape)
    assert g_out.dtype.name == str(t_out.dtype).split(".")[1]
    if not case.startswith("rand"):
        np.testing.assert_array_equal(g_out.numpy(), t_out.numpy())


def test_several_results():
    x = np.array([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]], dtype=np.float32)
    for name, call in [("max", lambda lib, x, o: lib.max(x, 1, out=o)),
                       ("sort", lambda lib, x, o: lib.sort(x, 1, descending=True, out=o)),
                       ("topk", lambda lib, x, o: lib.topk(x, 2, out=o))]:
        results = []
        for lib in (torch, genesis):
            out = (lib.empty(0), lib.empty(0, dtype=lib.int64))
            got = call(lib, lib.tensor(x), out)
            assert got[0] is out[0] and got[1] is out[1], name
            results.append([np.asarray(t.tolist()) for t in got])
            assert got.values is out[0] and got.indices is out[1]
        for t_part, g_part in zip(*results):
            np.testing.assert_array_equal(g_part, t_part)


def _error(lib, fn):
    with pytest.raises(Exception) as info:
        fn(lib)
    return type(info.value), str(info.value)


@pytest.mark.parametrize("case", ["float into long", "grad input", "grad out", "dtype clash",
                                  "list out", "tuple count"])
def test_errors_match_torch(case):
    cases = {
        "float into long": lambda lib: lib.add(lib.ones(2), 1, out=lib.empty(2, dtype=lib.int64)),
        "grad input": lambda lib: lib.mul(lib.ones(2, requires_grad=True), 2, out=lib.empty(2)),
        "grad out": lambda lib: lib.mul(lib.ones(2), 2, out=lib.empty(2, requires_grad=True)),
        "dtype clash": lambda lib: lib.zeros(3, dtype=lib.float64, out=lib.empty(0)),
        "list out": lambda lib: lib.cat([lib.ones(2)], out=[1]),
        "tuple count": lambda lib: lib.sort(lib.ones(3), out=(lib.empty(0),)),
    }
    t_type, t_message = _error(torch, cases[case])
    g_type, g_message = _error(genesis, cases[case])
    assert issubclass(g_type, t_type)
    if case not in ("list out", "tuple count"):
        assert g_message == t_message


IN_PLACE_DTYPE_ERRORS = {
    "add_ scalar": lambda lib, x: x.add_(1.5), "add_ tensor": lambda lib, x: x.add_(lib.ones(3)),
    "div_": lambda lib, x: x.div_(2), "sqrt_": lambda lib, x: x.sqrt_(),
    "bool add_": lambda lib, x: x.bool().add_(1), "pow_": lambda lib, x: x.pow_(0.5),
    "out int": lambda lib, x: lib.add(lib.ones(3), 1, out=x),
    "out bool": lambda lib, x: lib.mul(lib.ones(3), 2, out=x.bool()),
    "index_add_": lambda lib, x: x.index_add_(0, lib.tensor([0]), lib.ones(1)),
    "index_add": lambda lib, x: x.half().index_add(0, lib.tensor([0]), lib.ones(1)),
    "index_copy_": lambda lib, x: x.index_copy_(0, lib.tensor([0]), lib.ones(1)),
    "index_reduce_": lambda lib, x: x.index_reduce_(0, lib.tensor([0]), lib.ones(1), "prod"),
    "scatter_reduce_": lambda lib, x: x.scatter_reduce_(0, lib.tensor([0]), lib.ones(1), "sum"),
    "index_put_": lambda lib, x: x.index_put_((lib.tensor([0]),), lib.ones(1)),
    "setitem": lambda lib, x: x.__setitem__(lib.tensor([0]), lib.ones(1)),
    "masked_scatter_": lambda lib, x: x.masked_scatter_(lib.ones(3, dtype=lib.bool), lib.ones(3)),
    "float_power_": lambda lib, x: x.float_power_(2),
    "float_power_ half": lambda lib, x: x.half().float_power_(2),
    "lerp_": lambda lib, x: x.lerp_(x, 0.5),
}


@pytest.mark.parametrize("case", IN_PLACE_DTYPE_ERRORS)
def test_in_place_and_out_dtype_errors_as_torch(case):
    """A result an in-place op or out= cannot hold, or operands of the wrong dtype, get PyTorch's
    text with its scalar type names ("result type Float can't be cast to the desired output
    type Long")."""
    def call(lib):
        return IN_PLACE_DTYPE_ERRORS[case](lib, lib.zeros(3, dtype=lib.int64))
    assert _error(genesis, call) == _error(torch, call)


def test_copy_casts_any_dtype():
    """copy_ is not a same-kind cast: it writes floats into integers and bools as PyTorch."""
    for dtype in ("int64", "bool"):
        want = torch.zeros(3, dtype=getattr(torch, dtype)).copy_(torch.tensor([1.5, 0.0, -2.5]))
        got = genesis.zeros(3, dtype=getattr(genesis, dtype)).copy_(
            genesis.tensor([1.5, 0.0, -2.5]))
        assert got.tolist() == want.tolist()


def test_failed_cast_writes_nothing():
    out = genesis.full((2,), 5, dtype=genesis.int64)
    with pytest.raises(RuntimeError, match="can't be cast"):
        genesis.add(genesis.ones(2), 0.5, out=out)
    assert out.tolist() == [5, 5]


def test_out_under_no_grad_and_on_cuda_tensors():
    with genesis.no_grad():
        x = genesis.ones(2, requires_grad=True)
        out = genesis.mul(x, 3, out=genesis.empty(2))
    assert out.tolist() == [3.0, 3.0] and not out.requires_grad
    if genesis.cuda.is_available():
        y = from_torch(torch.arange(4.0), "cuda")
        o = genesis.empty(4, device="cuda")
        assert genesis.exp(y, out=o) is o
        np.testing.assert_allclose(o.cpu().numpy(), np.exp(np.arange(4.0)), rtol=1e-6)
        with pytest.raises(RuntimeError, match="Expected out tensor to have device"):
            genesis.exp(y, out=genesis.empty(4))


def _matrix(lib):
    return lib.tensor([[1.0, 2.0], [3.0, 4.0]])


# ops whose out= must hold their result's dtype exactly, each with PyTorch's own error text
SAME_DTYPE_OUTS = {
    "matmul": lambda lib, o: lib.matmul(_matrix(lib), _matrix(lib), out=o),
    "addmm": lambda lib, o: lib.addmm(_matrix(lib), _matrix(lib), _matrix(lib), out=o),
    "mv": lambda lib, o: lib.mv(_matrix(lib), _matrix(lib)[0], out=o),
    "softmax": lambda lib, o: lib.softmax(_matrix(lib), 0, out=o),
    "argmax": lambda lib, o: lib.argmax(_matrix(lib), 0, out=o),
    "sort": lambda lib, o: lib.sort(_matrix(lib), 0, out=(o, lib.empty(0, dtype=lib.int64))),
    "sort indices": lambda lib, o: lib.sort(_matrix(lib), 0, out=(lib.empty(0), o)),
    "max dim": lambda lib, o: lib.max(_matrix(lib), 0, out=(o, lib.empty(0, dtype=lib.int64))),
    "tril": lambda lib, o: lib.tril(_matrix(lib), out=o),
    "gather": lambda lib, o: lib.gather(_matrix(lib), 0, lib.tensor([[0, 1]]), out=o),
    "neg": lambda lib, o: lib.neg(_matrix(lib), out=o),
    "clamp": lambda lib, o: lib.clamp(_matrix(lib), 0, 1, out=o),
    "floor": lambda lib, o: lib.floor(_matrix(lib), out=o),
    "dot": lambda lib, o: lib.dot(_matrix(lib)[0], _matrix(lib)[1], out=o),
    "amax": lambda lib, o: lib.amax(_matrix(lib), 0, out=o),
    "where": lambda lib, o: lib.where(_matrix(lib) > 2, _matrix(lib), _matrix(lib), out=o),
    "take": lambda lib, o: lib.take(_matrix(lib), lib.tensor([0]), out=o),
    "cummax": lambda lib, o: lib.cummax(_matrix(lib), 0, out=(o, lib.empty(0, dtype=lib.int64))),
    "tensordot": lambda lib, o: lib.tensordot(_matrix(lib), _matrix(lib), out=o),
    "index_select": lambda lib, o: lib.index_select(_matrix(lib), 0, lib.tensor([1]), out=o),
    "nan_to_num": lambda lib, o: lib.nan_to_num(_matrix(lib), out=o),
    "quantile": lambda lib, o: lib.quantile(_matrix(lib), 0.5, dim=0, out=o),
    "cat": lambda lib, o: lib.cat([_matrix(lib), _matrix(lib)], out=o),
    "logsumexp": lambda lib, o: lib.logsumexp(_matrix(lib), 0, out=o),
    "nonzero": lambda lib, o: lib.nonzero(_matrix(lib), out=o),
    "searchsorted": lambda lib, o: lib.searchsorted(lib.tensor([1.0, 2.0]), _matrix(lib), out=o),
}


@pytest.mark.parametrize("out_dtype", ["float64", "int32", "float16"])
@pytest.mark.parametrize("case", SAME_DTYPE_OUTS)
def test_out_dtype_rules_per_op_as_torch(case, out_dtype):
    """Where PyTorch's kernel wants out= in the result's dtype (matmul, sort, where, neg, ...),
    the same error and text; where it casts (cat into a wider type, logsumexp into a float),
    the same values."""
    def call(lib):
        return SAME_DTYPE_OUTS[case](lib, lib.empty(0, dtype=getattr(lib, out_dtype)))
    try:
        expected = call(torch)
    except (RuntimeError, TypeError):
        assert _error(genesis, call) == _error(torch, call)
        return
    got = call(genesis)
    for g, t in zip(*((r,) if isinstance(r, (genesis.Tensor, torch.Tensor)) else r
                      for r in (got, expected))):
        assert str(g.dtype)[8:] == str(t.dtype)[6:]
        np.testing.assert_allclose(g.float().numpy(), t.float().numpy(), rtol=1e-3)


@pytest.mark.parametrize("name", ["sum", "prod", "cumsum", "cumprod"])
def test_sums_and_products_compute_in_out_dtype(name):
    """sum(x, out=int) sums the truncated values, as PyTorch's: out= sets the dtype the
    reduction computes in (dtype=); a dtype= that differs from out's is PyTorch's error."""
    results = []
    for lib in (genesis, torch):
        x = lib.tensor([1.5, 1.5, 0.7, 2.9])
        results.append(getattr(lib, name)(x, 0, out=lib.empty(0, dtype=lib.int64)).tolist())
    assert results[0] == results[1]

    def asked_otherwise(lib):
        return getattr(lib, name)(lib.ones(2), 0, dtype=lib.float64, out=lib.empty(0))
    assert _error(genesis, asked_otherwise) == _error(torch, asked_otherwise)
