"""Pytrees as torch.utils._pytree sees them: tuples, lists, dicts and namedtuples are nodes,
anything else (tensors, numbers, None) is a leaf. The TreeSpec prints as PyTorch's, so the
transforms' error messages read the same."""

from collections import OrderedDict


class LeafSpec:
    """The spec of a single leaf."""

    num_leaves = 1

    def __eq__(self, other):
        return isinstance(other, LeafSpec)

    def __repr__(self, indent=0):
        return "*"

    def is_leaf(self):
        return True


class TreeSpec:
    """A node: its type, its context (dict keys or namedtuple class) and its children's specs."""

    def __init__(self, kind, context, children):
        self.type, self.context, self.children_specs = kind, context, children
        self.num_leaves = sum(c.num_leaves for c in children)

    def __eq__(self, other):
        return (isinstance(other, TreeSpec) and self.type is other.type
                and self.context == other.context and self.children_specs == other.children_specs)

    def __repr__(self, indent=0):
        children = ""
        if self.children_specs:
            indent += 2
            first, *rest = self.children_specs
            children = first.__repr__(indent) + ("," if rest else "")
            children += ",".join("\n" + " " * indent + c.__repr__(indent) for c in rest)
        return f"TreeSpec({self.type.__name__}, {self.context}, [{children}])"

    def is_leaf(self):
        return False


def _is_namedtuple(value):
    return isinstance(value, tuple) and hasattr(type(value), "_fields")


def _children(node):
    """(children, context) of a node, or None for a leaf."""
    if _is_namedtuple(node):
        return list(node), type(node)
    if isinstance(node, (tuple, list)):
        return list(node), None
    if isinstance(node, dict):
        return list(node.values()), list(node.keys())
    return None


def _rebuild(kind, context, children):
    if kind is dict or kind is OrderedDict or (isinstance(kind, type) and issubclass(kind, dict)):
        return kind(zip(context, children))
    if context is not None:  # a namedtuple
        return kind(*children)
    return kind(children)


def tree_flatten(tree):
    """(the leaves of `tree` in order, its TreeSpec)."""
    node = _children(tree)
    if node is None:
        return [tree], LeafSpec()
    children, context = node
    leaves, specs = [], []
    for child in children:
        child_leaves, spec = tree_flatten(child)
        leaves += child_leaves
        specs.append(spec)
    return leaves, TreeSpec(type(tree), context, specs)


def tree_unflatten(leaves, spec):
    """The tree of `spec` with `leaves` in its place."""
    leaves = list(leaves)
    if len(leaves) != spec.num_leaves:
        raise ValueError(f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} but the "
                         f"spec refers to a pytree that holds {spec.num_leaves} items ({spec}).")
    return _unflatten(iter(leaves), spec)


def _unflatten(leaves, spec):
    if spec.is_leaf():
        return next(leaves)
    children = [_unflatten(leaves, child) for child in spec.children_specs]
    return _rebuild(spec.type, spec.context, children)


def tree_map(fn, tree):
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([fn(leaf) for leaf in leaves], spec)


def broadcast_to_and_flatten(prefix, spec):
    """`prefix` (a tree whose leaves stand for whole subtrees of `spec`) flattened to one entry
    per leaf of `spec`; None when the structures do not match."""
    if _children(prefix) is None:
        return [prefix] * spec.num_leaves
    if spec.is_leaf():
        return None
    children, context = _children(prefix)
    if type(prefix) is not spec.type or context != spec.context \
            or len(children) != len(spec.children_specs):
        return None
    flat = []
    for child, child_spec in zip(children, spec.children_specs):
        part = broadcast_to_and_flatten(child, child_spec)
        if part is None:
            return None
        flat += part
    return flat
