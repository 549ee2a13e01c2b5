"""Ops and Tensor methods are defined where a reader finds them: every public op of an ops
family and every method of a family's mixin class has a docstring, and Tensor's methods come
from those mixins only (no table of names bound some other way)."""

import ast
import importlib
import pathlib

import pytest

import genesis
from genesis import ops

OPS = pathlib.Path(ops.__file__).parent
# every module under genesis/ops: "shape", "elementwise" (a package), "elementwise.binary"...
SOURCES = {".".join(p.relative_to(OPS).with_suffix("").parts).removesuffix(".__init__"): p
           for p in sorted(OPS.rglob("*.py")) if p.name != "__init__.py" or p.parent != OPS}
FAMILIES = sorted(name for name in SOURCES if not name.split(".")[-1].startswith("_"))


def _public_ops(module):
    return [(name, getattr(module, name)) for name in getattr(module, "__all__", ())
            if callable(getattr(module, name))]


@pytest.mark.parametrize("family", FAMILIES)
def test_public_ops_have_docstrings(family):
    module = importlib.import_module(f"genesis.ops.{family}")
    bare = [name for name, fn in _public_ops(module) if not (fn.__doc__ or "").strip()]
    assert not bare, f"genesis.ops.{family}: no docstring on {bare}"


@pytest.mark.parametrize("mixin", ops.METHODS, ids=lambda cls: cls.__name__)
def test_methods_have_docstrings(mixin):
    bare = []
    for name, value in vars(mixin).items():
        fn = value.fget if isinstance(value, property) else value
        if not name.startswith("__") and callable(fn) and not (fn.__doc__ or "").strip():
            bare.append(name)
    assert not bare, f"{mixin.__name__}: no docstring on {bare}"


def test_each_method_has_one_definition():
    """No two mixins define the same method (the later one would silently win), and Tensor's
    is the mixin's (under the numpy_names form that takes `axis`/`keepdims`, where it has
    `dim`/`keepdim`)."""
    owners = {}
    for mixin in ops.METHODS:
        for name, value in vars(mixin).items():
            if name in ops._CLASS_ATTRIBUTES:
                continue
            assert name not in owners, f"{name}: in {owners[name]} and {mixin.__name__}"
            owners[name] = mixin.__name__
            method = vars(genesis.Tensor)[name]
            if hasattr(method, "__numpy_names__"):
                method = method.__wrapped__
            assert method is value, name


@pytest.mark.parametrize("family", FAMILIES)
def test_no_names_made_at_run_time(family):
    """No family fills its namespace with `globals().update(...)` or `setattr` loops."""
    tree = ast.parse(SOURCES[family].read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                isinstance(node.func.value, ast.Call) and \
                getattr(node.func.value.func, "id", None) == "globals":
            pytest.fail(f"{SOURCES[family]}:{node.lineno} builds names with globals()")
