"""Matrix products: matmul (PyTorch's 1-D, 2-D and batched broadcasting rules), mm, bmm, mv, dot,
outer, the add*-forms, einsum and tensordot.

Two Functions do the work: `MatMul` and `Einsum`; every other op checks its operands the way its
PyTorch namesake does and calls one of them. Backward is written with genesis matmul and einsum,
so it is itself differentiable. `Einsum` calls a backend's "einsum" kernel where there is one
(the CPU's); elsewhere (CUDA) it is diagonals, sums, permutes and batched matmuls (`_contract`).
"""

import math
import string

from .. import dtypes
from ..autograd.function import Function, name_node
from ..dispatch import has_kernel
from ..tensor import Tensor
from .autocast import autocast_policy
from .common import broadcast_shapes, call, check_devices, sum_to, wrap
from .creation import eye, ones
from .reduce import sum


def _matrix_dtypes(op, a, b):
    """torch's words for a product of two dtypes (mm's and matmul's)."""
    return (f"{op}: expected m1 and m2 to have the same dtype, but got: "
            f"{dtypes.type_meta_name(a.dtype)} != {dtypes.type_meta_name(b.dtype)}")


def _batched_dtypes(op, a, b):
    """torch's words for a batched product of two dtypes (its bmm kernel's)."""
    return (f"{op}: expected scalar type {dtypes.scalar_type_name(a.dtype)} but found "
            f"{dtypes.scalar_type_name(b.dtype)}")


def _vector_dtypes(op, a, b):
    """torch's words for a dot product of two dtypes."""
    return (f"{op} : expected both vectors to have same dtype, but found "
            f"{dtypes.scalar_type_name(a.dtype)} and {dtypes.scalar_type_name(b.dtype)}")


def _check_operands(op, a, b, words=_matrix_dtypes):
    """Tensors on one device with one dtype (bool has no matrix product on the CPU); `words`
    (op, a, b) words a dtype mismatch as torch's op does."""
    for x in (a, b):
        if not isinstance(x, Tensor):
            raise TypeError(f"{op}(): argument must be Tensor, not {type(x).__name__}")
    check_devices(op, a, b)
    if a.dtype is not b.dtype:
        raise RuntimeError(words(op, a, b))
    if a.dtype is dtypes.bool_:
        raise NotImplementedError(f"{op}: not implemented for 'bool'")


def _dims(shape):
    return "x".join(str(s) for s in shape)


def _check_matmul_shapes(op, a, b):
    """PyTorch's errors for operands whose contraction sizes or batch dims disagree."""
    sa, sb = a._data.shape, b._data.shape
    if not sa or not sb:
        raise RuntimeError(f"{op}: both arguments to matmul need to be at least 1D, but they are "
                           f"{len(sa)}D and {len(sb)}D")
    k_a, k_b = sa[-1], sb[-2] if len(sb) > 1 else sb[0]
    if k_a == k_b:
        _check_batch_dims(op, sa[:-2], sb[:-2])
    elif len(sa) == 1 and len(sb) == 1:
        raise RuntimeError(f"{op}: inconsistent tensor size, expected tensor [{k_a}] and src "
                           f"[{k_b}] to have the same number of elements, but got {k_a} and {k_b} "
                           "elements respectively")
    elif len(sb) == 1:
        raise RuntimeError(f"{op}: size mismatch, got input ({sa[-2]}), mat "
                           f"({_dims(sa[-2:])}), vec ({k_b})")
    else:
        rows = sa[:-1] if len(sa) > 1 else (1,)
        raise RuntimeError(f"{op}: mat1 and mat2 shapes cannot be multiplied ({_dims(rows)}x{k_a} "
                           f"and {_dims(sb[:-2])}{'x' if len(sb) > 2 else ''}"
                           f"{_dims(sb[-2:])})")


def _check_batch_dims(op, batch_a, batch_b):
    for i in range(1, min(len(batch_a), len(batch_b)) + 1):
        sa, sb = batch_a[-i], batch_b[-i]
        if sa != sb and 1 not in (sa, sb):
            raise RuntimeError(f"{op}: The size of tensor a ({sa}) must match the size of tensor b "
                               f"({sb}) at non-singleton dimension "
                               f"{max(len(batch_a), len(batch_b)) - i}")


# PyTorch's node names for matmul by operand ranks; a batched product's is its final reshape's.
_MATMUL_NODES = {(1, 1): "DotBackward0", (2, 1): "MvBackward0", (2, 2): "MmBackward0",
                 (1, 2): "SqueezeBackward4"}


class MatMul(Function):
    """a @ b for checked operands; backward is two matmuls, reduced over broadcast batch dims."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        ctx.node_name = _MATMUL_NODES.get((a.ndim, b.ndim), "UnsafeViewBackward0")
        return wrap(call("matmul", a, b), a.device, a.dtype)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        a2 = a.unsqueeze(0) if a.ndim == 1 else a
        b2 = b.unsqueeze(-1) if b.ndim == 1 else b
        if a.ndim == 1 and b.ndim == 1:
            g2 = g.reshape(1, 1)
        else:
            g2 = g.unsqueeze(-2) if a.ndim == 1 else g
            g2 = g2.unsqueeze(-1) if b.ndim == 1 else g2
        ga = gb = None
        if ctx.needs_input_grad[0]:
            ga = sum_to(matmul(g2, b2.mT), a2.shape).reshape(a.shape)
        if ctx.needs_input_grad[1]:
            gb = _folded_weight_grad(a2, g2) if b2.ndim == 2 and a2.ndim > 2 \
                else sum_to(matmul(a2.mT, g2), b2.shape)
            gb = gb.reshape(b.shape)
        return ga, gb


def _folded_weight_grad(a, g):
    """d(a @ w)/dw for batched `a` and one matrix `w`: fold the batch into the product's inner
    dimension (one large matmul) instead of a batch of small ones summed afterwards."""
    return matmul(a.reshape(-1, a.shape[-1]).mT, g.reshape(-1, g.shape[-1]))


@autocast_policy("matmul")
def matmul(input, other):
    """Matrix product with PyTorch's rules: 1-D operands are vectors (a dim is added and removed),
    batch dims broadcast; half types multiply in float32 and round once."""
    _check_operands("matmul", input, other,
                    _batched_dtypes if input.ndim > 2 and other.ndim > 2 else _matrix_dtypes)
    _check_matmul_shapes("matmul", input, other)
    return MatMul.apply(input, other)


@autocast_policy("mm")
def mm(input, mat2):
    """The product of two matrices (no broadcasting)."""
    if input.ndim != 2:
        raise RuntimeError("mm: self must be a matrix")
    if mat2.ndim != 2:
        raise RuntimeError("mm: mat2 must be a matrix")
    _check_operands("mm", input, mat2)
    _check_matmul_shapes("mm", input, mat2)
    return MatMul.apply(input, mat2)


def spmm(input, mat2):
    """PyTorch's sparse-times-dense product; for strided (dense) tensors, the only layout
    Genesis has, it is `mm`, as in PyTorch."""
    return mm(input, mat2)


@autocast_policy("bmm")
def bmm(input, mat2):
    """Batched matrix product of two 3-D tensors with equal batch sizes (no broadcasting)."""
    for name, x in (("batch1", input), ("batch2", mat2)):
        if x.ndim != 3:
            raise RuntimeError(f"bmm: {name} must be a 3D tensor")
    _check_operands("bmm", input, mat2, _batched_dtypes)
    expected = [input.shape[0], input.shape[2]]
    if list(mat2.shape[:2]) != expected:
        raise RuntimeError(f"bmm: Expected size for first two dimensions of batch2 tensor to be: "
                           f"{expected} but got: {list(mat2.shape[:2])}.")
    return name_node(MatMul.apply(input, mat2), "BmmBackward0")


@autocast_policy("mv")
def mv(input, vec):
    """Matrix-vector product."""
    if input.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"mv: vector + matrix @ vector expected, got {vec.ndim}, {input.ndim}")
    _check_operands("mv", input, vec)
    _check_matmul_shapes("mv", input, vec)
    return MatMul.apply(input, vec)


@autocast_policy("dot")
def dot(input, other):
    """Inner product of two 1-D tensors of equal size and dtype."""
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"dot: 1D tensors expected, but got {input.ndim}D and {other.ndim}D "
                           "tensors")
    _check_operands("dot", input, other, _vector_dtypes)
    _check_matmul_shapes("dot", input, other)
    return MatMul.apply(input, other)


vdot = dot


def outer(input, vec2):
    """Outer product of two 1-D tensors (types promote, as `mul`)."""
    for name, x in (("self", input), ("vec2", vec2)):
        if x.ndim != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {x.ndim}-D")
    return input.unsqueeze(1) * vec2


ger = outer


def _scaled_sum(op, input, product, beta, alpha):
    """beta * input + alpha * product, with `input` broadcast to the product's shape; beta == 0
    ignores input (its nan and inf do not propagate), as PyTorch."""
    shape = tuple(product.shape)
    if broadcast_shapes(tuple(input.shape), shape, op=op) != shape:
        raise RuntimeError(f"{op}: the input of shape {list(input.shape)} cannot be broadcast to "
                           f"the product's shape {list(shape)}")
    out = product if alpha == 1 else product * alpha
    if beta == 0:
        return out
    return out + (input if beta == 1 else input * beta)


def _in_float32(fn, *tensors):
    """`fn(*tensors)`, computed in float32 for half types and rounded once."""
    dtype = tensors[0].dtype
    if dtype not in (dtypes.float16, dtypes.bfloat16):
        return fn(*tensors)
    return fn(*(t.to(dtypes.float32) for t in tensors)).to(dtype)


@autocast_policy("addmm")
def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """beta * input + alpha * (mat1 @ mat2)."""
    return _in_float32(lambda i, a, b: name_node(_scaled_sum("addmm", i, mm(a, b), beta, alpha),
                                                 "AddmmBackward0"), input, mat1, mat2)


@autocast_policy("baddbmm")
def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """beta * input + alpha * bmm(batch1, batch2)."""
    return _in_float32(lambda i, a, b: _scaled_sum("baddbmm", i, bmm(a, b), beta, alpha),
                       input, batch1, batch2)


@autocast_policy("addmv")
def addmv(input, mat, vec, *, beta=1, alpha=1):
    """beta * input + alpha * (mat @ vec)."""
    return _in_float32(lambda i, a, b: _scaled_sum("addmv", i, mv(a, b), beta, alpha),
                       input, mat, vec)


_LETTERS = string.ascii_letters


class Einsum(Function):
    """An explicit einsum over operands whose labels already agree in size.

    `inputs` holds one label string per operand, `output` the result's labels (no repeats).
    The gradient of operand i is one einsum of the output gradient with the other operands, ones
    for labels only operand i has, and identity matrices that put repeated labels on diagonals.
    """

    @staticmethod
    def forward(ctx, inputs, output, *operands):
        ctx.inputs, ctx.output = inputs, output
        ctx.save_for_backward(*operands)
        device, dtype = operands[0].device, operands[0].dtype
        if not has_kernel("einsum", device.type):
            return wrap(_contract(inputs, output, operands)._data, device, dtype)
        equation = ",".join(inputs) + "->" + output
        return wrap(call("einsum", equation, *operands), device, dtype)

    @staticmethod
    def backward(ctx, g):
        operands = ctx.saved_tensors
        grads = [_einsum_grad(ctx.inputs, ctx.output, operands, i, g) if needed else None
                 for i, needed in enumerate(ctx.needs_input_grad[2:])]
        return (None, None, *grads)


def _contract(inputs, output, operands):
    """An explicit einsum written with diagonals, sums, permutes, reshapes and batched matmuls,
    for devices without an einsum kernel: always a fresh tensor."""
    terms = [_diagonals(labels, t) for labels, t in zip(inputs, operands)]
    computed = False
    for i, (labels, t) in enumerate(terms):
        elsewhere = set(output).union(*(set(lab) for j, (lab, _) in enumerate(terms) if j != i))
        lonely = [d for d, c in enumerate(labels) if c not in elsewhere]
        if lonely:
            terms[i] = ([c for c in labels if c in elsewhere], sum(t, tuple(lonely)).to(t.dtype))
            computed = True
    while len(terms) > 1:
        (la, a), (lb, b), rest = terms[0], terms[1], terms[2:]
        needed = set(output).union(*(set(lab) for lab, _ in rest))
        batch = [c for c in la if c in lb and c in needed]
        inner = [c for c in la if c in lb and c not in needed]
        left = [c for c in la if c not in lb]
        right = [c for c in lb if c not in la]
        sizes = dict(zip(la, a.shape)) | dict(zip(lb, b.shape))
        count = lambda labels: math.prod(sizes[c] for c in labels)  # noqa: E731
        a = a.permute(*(la.index(c) for c in batch + left + inner))
        b = b.permute(*(lb.index(c) for c in batch + inner + right))
        product = matmul(a.reshape(count(batch), count(left), count(inner)),
                         b.reshape(count(batch), count(inner), count(right)))
        labels = batch + left + right
        terms = [(labels, product.reshape(*(sizes[c] for c in labels)))] + rest
        computed = True
    labels, t = terms[0]
    t = t.permute(*(labels.index(c) for c in output)) if labels else t
    return t.contiguous() if computed else t.clone()


def _diagonals(labels, t):
    """(labels, t) with every repeated label's dims replaced by their diagonal (a view)."""
    labels = list(labels)
    for c in dict.fromkeys(labels):
        while labels.count(c) > 1:
            i = labels.index(c)
            j = labels.index(c, i + 1)
            t = t.diagonal(0, i, j)
            labels = [x for d, x in enumerate(labels) if d not in (i, j)] + [c]
    return labels, t


def _einsum_grad(inputs, output, operands, i, g):
    """d(einsum)/d(operand i) contracted with `g`, as one einsum."""
    sizes = _label_sizes(inputs, operands)
    unused = iter(c for c in _LETTERS if c not in sizes)
    terms = [output] + [s for j, s in enumerate(inputs) if j != i]
    tensors = [g] + [t for j, t in enumerate(operands) if j != i]
    reachable = set("".join(terms))
    target, seen = [], set()
    for label in inputs[i]:
        if label in seen:
            fresh = next(unused)
            terms.append(label + fresh)
            tensors.append(eye(sizes[label], dtype=g.dtype, device=g.device))
            target.append(fresh)
            continue
        seen.add(label)
        target.append(label)
        if label not in reachable:
            terms.append(label)
            tensors.append(ones(sizes[label], dtype=g.dtype, device=g.device))
    return Einsum.apply(terms, "".join(target), *tensors)


def _label_sizes(inputs, operands):
    return {label: size for term, t in zip(inputs, operands) for label, size in zip(term, t.shape)}


def _parse_term(term, ndim, index):
    """Labels of one operand, with '...' expanded to ('.', k) labels aligned to the right."""
    if term.count("...") > 1 or term.replace("...", "").count("."):
        raise RuntimeError(f"einsum(): found '.' for operand {index} that is not part of any "
                           "ellipsis")
    for c in term.replace("...", ""):
        if c not in _LETTERS:
            raise RuntimeError(f"einsum(): invalid subscript given in the equation: {c!r}; "
                               "subscripts must be in [a-zA-Z]")
    if "..." not in term:
        if len(term) != ndim:
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(term)}) "
                               f"does not match the number of dimensions ({ndim}) for operand "
                               f"{index} and no ellipsis was given")
        return list(term), 0
    before, after = term.split("...")
    covered = ndim - len(before) - len(after)
    if covered < 0:
        raise RuntimeError(f"einsum(): the number of subscripts in the equation "
                           f"({len(before) + len(after)}) is more than the number of dimensions "
                           f"({ndim}) for operand {index}")
    return list(before) + [("...", covered - k) for k in range(covered)] + list(after), covered


def _parse_equation(equation, operands):
    """(labels per operand, output labels) with ellipses expanded; PyTorch's errors."""
    equation = equation.replace(" ", "")
    lhs, arrow, rhs = equation.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        which = "more" if len(operands) > len(terms) else "fewer"
        raise RuntimeError(f"einsum(): {which} operands were provided than specified in the "
                           "equation")
    parsed = [_parse_term(term, t.ndim, i) for i, (term, t) in enumerate(zip(terms, operands))]
    labels = [p[0] for p in parsed]
    ellipsis = [("...", k) for k in range(max((p[1] for p in parsed), default=0), 0, -1)]
    if not arrow:
        flat = [label for term in labels for label in term if isinstance(label, str)]
        return labels, ellipsis + sorted(c for c in set(flat) if flat.count(c) == 1)
    output = list(rhs.replace("...", "\0"))
    known = {label for term in labels for label in term}
    result = []
    for c in output:
        if c == "\0":
            result += ellipsis
        elif c not in known:
            raise RuntimeError(f"einsum(): output subscript {c} does not appear in the equation "
                               "for any input operand")
        elif c in result:
            raise RuntimeError(f"einsum(): output subscript {c} appears more than once in the "
                               "output")
        else:
            result.append(c)
    return labels, result


def _broadcast_labels(labels, operands):
    """Operands expanded so that each label has one size (size-1 dims broadcast)."""
    sizes = {}
    for i, (term, t) in enumerate(zip(labels, operands)):
        seen = {}
        for label, size in zip(term, t.shape):
            if seen.setdefault(label, size) != size:
                raise RuntimeError(f"einsum(): subscript {label} is repeated for operand {i} but "
                                   f"the sizes don't match, {seen[label]} != {size}")
            known = sizes.get(label)
            if known is None or known == 1:
                sizes[label] = size
            elif size not in (1, known):
                raise RuntimeError(f"einsum(): subscript {label} has size {size} for operand {i} "
                                   f"which does not broadcast with previously seen size {known}")
    return [t if tuple(t.shape) == tuple(sizes[label] for label in term)
            else t.expand(*(sizes[label] for label in term))
            for term, t in zip(labels, operands)]


def _sublist_equation(args):
    """(equation, operands) of einsum's sublist form: op1, [0, 1], op2, [1, 2], [0, 2], where
    subscripts are ints in [0, 52) and Ellipsis stands for `...`."""
    def term(sublist):
        for s in sublist:
            if s is not Ellipsis and not (isinstance(s, int) and 0 <= s < len(_LETTERS)):
                raise ValueError(f"einsum(): subscript in subscript list is not within the "
                                 f"valid range [0, {len(_LETTERS)})")
        return "".join("..." if s is Ellipsis else _LETTERS[s] for s in sublist)
    pairs, output = (args[:-1], args[-1]) if len(args) % 2 else (args, None)
    operands = tuple(pairs[0::2])
    equation = ",".join(term(sublist) for sublist in pairs[1::2])
    if output is not None:
        equation += "->" + term(output)
    return equation, operands


@autocast_policy("einsum")
def einsum(equation, *operands):
    """Einstein summation over any subscripts: ellipsis, repeated labels (diagonals), implicit
    output (labels seen once, sorted) and size-1 broadcasting, as `torch.einsum`; the sublist
    form einsum(op1, [0, 1], op2, [1, 2], [0, 2]) too."""
    if not isinstance(equation, str):
        equation, operands = _sublist_equation((equation,) + operands)
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands:
        raise RuntimeError("einsum(): must provide at least one operand")
    check_devices("einsum", *operands)
    if len({t.dtype for t in operands}) > 1:
        raise RuntimeError("einsum(): expected all operands to have the same dtype, got "
                           + ", ".join(t.dtype.name for t in operands))
    labels, output = _parse_equation(equation, operands)
    operands = _broadcast_labels(labels, operands)
    letters = {}
    for label in [label for term in labels for label in term] + output:
        letters.setdefault(label, _LETTERS[len(letters)] if len(letters) < len(_LETTERS) else None)
    if None in letters.values():
        raise RuntimeError("einsum(): too many distinct subscripts (at most 52)")
    inputs = ["".join(letters[label] for label in term) for term in labels]
    return Einsum.apply(inputs, "".join(letters[label] for label in output), *operands)


@autocast_policy("tensordot")
def tensordot(a, b, dims=2):
    """Contract the last `dims` dims of `a` with the first of `b`, or the listed dim pairs."""
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        dims_a, dims_b = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    else:
        dims_a, dims_b = ([d] if isinstance(d, int) else list(d) for d in dims)
    if len(dims_a) != len(dims_b):
        raise RuntimeError("tensordot: both dimension lists should have same length")
    dims_a = [d % max(a.ndim, 1) for d in dims_a]
    dims_b = [d % max(b.ndim, 1) for d in dims_b]
    for da, db in zip(dims_a, dims_b):
        if a.shape[da] != b.shape[db]:
            raise RuntimeError(f"tensordot: contracted dimensions need to match, but first has "
                               f"size {a.shape[da]} in dim {da} and second has size "
                               f"{b.shape[db]} in dim {db}")
    la = list(_LETTERS[:a.ndim])
    lb = list(_LETTERS[a.ndim:a.ndim + b.ndim])
    for da, db in zip(dims_a, dims_b):
        lb[db] = la[da]
    out = [c for i, c in enumerate(la) if i not in dims_a] + \
          [c for i, c in enumerate(lb) if i not in dims_b]
    return einsum(f"{''.join(la)},{''.join(lb)}->{''.join(out)}", a, b)


def vecdot(x, y, *, dim=-1):
    """Dot products along `dim` with broadcasting."""
    return sum(x * y, dim)


def _rmatmul(self, other):
    return matmul(other, self) if isinstance(other, Tensor) else NotImplemented


def _matmul_method(self, other):
    return matmul(self, other) if isinstance(other, Tensor) else NotImplemented


class LinalgMethods:
    """Tensor methods of this family: products of matrices and vectors, and the `@` operator."""

    matmul = matmul
    mm = mm
    bmm = bmm
    mv = mv
    dot = dot
    vdot = vdot
    outer = outer
    ger = outer
    addmm = addmm
    baddbmm = baddbmm
    addmv = addmv
    __matmul__ = _matmul_method
    __rmatmul__ = _rmatmul


__all__ = ["matmul", "mm", "spmm", "bmm", "mv", "dot", "vdot", "outer", "ger", "addmm", "baddbmm",
           "addmv", "einsum", "tensordot"]
