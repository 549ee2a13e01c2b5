"""The layers hold: no genesis module imports from a layer above its own, and no import cycle runs
among genesis modules at module level.

Layers, bottom to top:
  1 core            genesis.dtypes, genesis.device, genesis.dispatch, genesis.memory_formats,
                    genesis.layouts, genesis._warnings
  2 backends        genesis.backends.*
  3 tensor+autograd genesis.tensor, genesis._tensor_str, genesis.dlpack, genesis.autograd.*
                    (but genesis.autograd.profiler, public: torch.autograd.profiler's facade
                    over genesis.profiler)
  4 ops             genesis.ops.* (any module added there), genesis.random
  5 public          genesis itself, genesis.cuda, nn, optim, utils, serialization and any other
                    module or package added under genesis/

Every import counts, at module level and inside functions, absolute and relative, and so does
`importlib.import_module("genesis...")` with a literal name. An import of `pkg.name` names the
module `pkg.name` when it exists and the package `pkg` otherwise. Importing a module also runs
the `__init__` of each package above it that does not already contain the importer, so those
count too (a module importing its own package's siblings does not import the package again; the
root `genesis` contains every module).
"""

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent / "genesis"

CORE, BACKENDS, TENSOR, OPS, PUBLIC = 1, 2, 3, 4, 5
LAYER_NAMES = {CORE: "core", BACKENDS: "backends", TENSOR: "tensor+autograd", OPS: "ops",
               PUBLIC: "public"}

# Module prefixes and their layers; the longest matching prefix wins. A module under genesis/
# that matches none (a new top-level module or package) is public.
LAYERS = {
    "genesis.dtypes": CORE,
    "genesis.device": CORE,
    "genesis.dispatch": CORE,
    "genesis.memory_formats": CORE,
    "genesis.layouts": CORE,
    "genesis._warnings": CORE,
    "genesis.backends": BACKENDS,
    "genesis.tensor": TENSOR,
    "genesis._tensor_str": TENSOR,
    "genesis.dlpack": TENSOR,
    "genesis.autograd": TENSOR,
    "genesis.autograd.profiler": PUBLIC,  # torch.autograd.profiler, over genesis.profiler
    "genesis.ops": OPS,
    "genesis.random": OPS,
}


def module_name(path):
    """genesis/ops/shape.py -> genesis.ops.shape; genesis/ops/__init__.py -> genesis.ops."""
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def all_modules():
    """{module name: (path, is_package)} for every .py file under genesis/."""
    return {module_name(p): (p, p.name == "__init__.py") for p in sorted(ROOT.rglob("*.py"))}


def layer_of(module):
    best = max((prefix for prefix in LAYERS if module == prefix or module.startswith(prefix + ".")),
               key=len, default=None)
    return LAYERS[best] if best is not None else PUBLIC


def _base_of(module, is_package, node):
    """The absolute module a `from ... import` statement names (relative levels resolved)."""
    if node.level == 0:
        return node.module
    package = module.split(".") if is_package else module.split(".")[:-1]
    package = package[:len(package) - (node.level - 1)]
    return ".".join(package + ([node.module] if node.module else []))


def _dynamic_import(node):
    """The literal module name of an `importlib.import_module(...)` or `__import__(...)` call,
    else None."""
    if not isinstance(node, ast.Call) or not node.args:
        return None
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    arg = node.args[0]
    if name in ("import_module", "__import__") and isinstance(arg, ast.Constant) \
            and isinstance(arg.value, str):
        return arg.value
    return None


def _named(module, is_package, node, modules):
    """The genesis modules one import statement (or literal dynamic import) names."""
    if isinstance(node, ast.Call):
        names = [_dynamic_import(node)]
    elif isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = _base_of(module, is_package, node)
        names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                 for alias in node.names]
    return {name for name in names if name == "genesis" or name.startswith("genesis.")}


def _packages_run(module, target):
    """The packages above `target` whose `__init__` importing it runs: those not containing
    `module`."""
    parts = target.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts))
            if not _contains(".".join(parts[:i]), module)}


def _contains(package, module):
    return module == package or module.startswith(package + ".")


def _walk(tree, at_module_level):
    """Yield (import node, module_level) for every import in the tree."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)) or _dynamic_import(node):
            yield node, at_module_level
        inside = at_module_level and not isinstance(
            node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        yield from _walk(node, inside)


def import_edges():
    """[(importer, imported, lineno, module_level, named)] for every genesis module an import
    loads; `named` is False for the packages above a named module that the import also runs."""
    modules = all_modules()
    edges = []
    for module, (path, is_package) in modules.items():
        tree = ast.parse(path.read_text(), str(path))
        for node, module_level in _walk(tree, True):
            named = _named(module, is_package, node, modules)
            implied = set().union(*(_packages_run(module, t) for t in named)) - named
            for target, is_named in [(t, True) for t in named] + [(t, False) for t in implied]:
                if target != module:
                    edges.append((module, target, node.lineno, module_level, is_named))
    return edges


def _describe(edge):
    src, dst, line, module_level, _ = edge
    where = "module level" if module_level else "in a function"
    return (f"{src}:{line} ({LAYER_NAMES[layer_of(src)]}) imports {dst} "
            f"({LAYER_NAMES[layer_of(dst)]}), {where}")


def upward_edges():
    """Named imports of a module in a higher layer (a package run on the way is in its named
    module's layer, so it adds nothing)."""
    return [e for e in import_edges() if e[4] and layer_of(e[1]) > layer_of(e[0])]


def module_level_cycles():
    """Each import cycle at module level, as the edges among the modules of one strongly
    connected component (of more than one module)."""
    edges = [e for e in import_edges() if e[3]]
    graph = {}
    for src, dst, *_ in edges:
        graph.setdefault(src, set()).add(dst)
    cycles = []
    for component in _components(graph):
        if len(component) > 1:
            members = set(component)
            cycles.append([e for e in edges if e[0] in members and e[1] in members])
    return cycles


def _components(graph):
    """Tarjan's strongly connected components, iteratively."""
    index, low, on_stack, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                out.append(sorted(component))
    return out


def test_layer_map_defaults():
    assert layer_of("genesis.ops.fft") == OPS
    assert layer_of("genesis.linalg") == PUBLIC
    assert layer_of("genesis.distributions.normal") == PUBLIC
    assert layer_of("genesis.backends.cuda.kernels.reduce") == BACKENDS
    assert layer_of("genesis.devices") == PUBLIC  # a prefix matches whole names only


def test_walk_sees_function_level_relative_and_dynamic_imports():
    source = ("from ..ops import shape\ndef f():\n    from genesis import nn\n"
              "    importlib.import_module('genesis.cuda')\n")
    modules = {"genesis.ops.shape": None, "genesis.nn": None}
    found = [(sorted(_named("genesis.autograd.x", False, n, modules)), level)
             for n, level in _walk(ast.parse(source), True)]
    assert found == [(["genesis.ops.shape"], True), (["genesis.nn"], False),
                     (["genesis.cuda"], False)]


def test_no_import_from_a_higher_layer():
    offending = upward_edges()
    if offending:
        pytest.fail("imports that point up the layers:\n" + "\n".join(map(_describe, offending)),
                    pytrace=False)


def test_no_module_level_import_cycle():
    cycles = module_level_cycles()
    if cycles:
        pytest.fail("module-level import cycles:\n" + "\n\n".join(
            "\n".join(f"{src}:{line} imports {dst}" for src, dst, line, *_ in cycle)
            for cycle in cycles), pytrace=False)
