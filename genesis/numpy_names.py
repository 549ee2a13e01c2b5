"""PyTorch's numpy-style keyword names: the ops PyTorch binds from C++ take `axis` for `dim` and
`keepdims` for `keepdim` (`x.sum(axis=1, keepdims=True)`, `torch.cat(ts, axis=0)`), and `x`, `a`
or `x1` for `input`, `x2` for `other` (`torch.sum(a=t)`); the ops it writes in Python
(`torch.norm`, `Tensor.split`, `F.softmax`...) take their own names only.

`install` wraps each public function of a namespace that has a `dim` or `keepdim` parameter,
except those PyTorch writes in Python (`PYTHON_DEFINED`), so the aliases reach it under the
real names; an alias given beside its real name is refused as PyTorch refuses it. (Ops with
neither parameter stay unwrapped, so that their calls cost nothing more: `torch.add(x1=a,
x2=b)` is not taken.)
"""

import functools
import inspect

ALIASES = (("axis", "dim"), ("keepdims", "keepdim"), ("x", "input"), ("a", "input"),
           ("x1", "input"), ("x2", "other"))
_ALIAS_NAMES = frozenset(alias for alias, _ in ALIASES)

# Per namespace, the names PyTorch defines in Python (not bound from C++), which take no alias.
PYTHON_DEFINED = {
    "genesis": frozenset(("norm", "split", "unique", "unique_consecutive")),
    "genesis.nn.functional": frozenset(("glu", "gumbel_softmax", "log_softmax", "normalize",
                                        "softmax", "softmin")),
    "Tensor": frozenset(("norm", "split", "unflatten", "unique", "unique_consecutive")),
}

_WRAPPED = {}  # id of a function -> its wrapper, shared by the namespaces that hold it


def _aliases(fn):
    """The (alias, name) pairs that apply to `fn`'s parameters; none unless it has a `dim` or
    `keepdim` one."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return ()
    if "dim" not in params and "keepdim" not in params:
        return ()
    return tuple((alias, name) for alias, name in ALIASES if name in params)


def _renamed(name, kwargs, aliases):
    kwargs = dict(kwargs)
    for alias, real in aliases:
        if alias in kwargs:
            if real in kwargs:
                raise TypeError(f"{name}() got an unexpected keyword argument '{alias}'")
            kwargs[real] = kwargs.pop(alias)
    return kwargs


def with_aliases(fn, name):
    """`fn` also taking the numpy names of its parameters; `fn` itself where it has no `dim` or
    `keepdim`."""
    if id(fn) in _WRAPPED:
        return _WRAPPED[id(fn)]
    aliases = _aliases(fn)
    if not aliases:
        return fn

    @functools.wraps(fn)
    def op(*args, **kwargs):
        if not kwargs:  # the usual call, passed on as it came
            return fn(*args)
        if not _ALIAS_NAMES.isdisjoint(kwargs):
            kwargs = _renamed(name, kwargs, aliases)
        return fn(*args, **kwargs)

    op.__numpy_names__ = True
    _WRAPPED[id(fn)] = _WRAPPED[id(op)] = op
    return op


def install(namespace, label, names=None):
    """Wrap the public functions `names` (default: all) of `namespace` (a module's globals or a
    class's attributes, set back through `setattr` when `namespace` is a class)."""
    skip = PYTHON_DEFINED.get(label, frozenset())
    items = vars(namespace) if isinstance(namespace, type) else namespace
    for name, fn in list(items.items()):
        if (names is not None and name not in names) or name.startswith("_") or name in skip:
            continue
        if not inspect.isfunction(fn):
            continue
        fresh = id(fn) not in _WRAPPED
        op = with_aliases(fn, name)
        if op is fn:
            continue
        if isinstance(namespace, type):
            setattr(namespace, name, op)
            owner, qualname = namespace.__module__, f"{namespace.__qualname__}.{name}"
        else:
            namespace[name] = op
            owner, qualname = namespace["__name__"], name
        if fresh:  # found by this name: pickle stores functions by where they are reached
            op.__module__, op.__qualname__ = owner, qualname
