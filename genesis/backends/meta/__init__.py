"""The meta backend: tensors with a shape, dtype and strides and no data (`device="meta"`).

A meta array (`array.MetaArray`) has the fields numpy and CUDA arrays share (shape, byte
strides, dtype) and no buffer, so the device-agnostic ops layer runs on it unchanged: it checks
arguments, promotes dtypes, broadcasts and makes views as for any device, and calls kernels
through the dispatcher. The kernels here compute only their outputs' metadata, grouped by kind
so that one rule serves many ops:

- storage: creation, views (`as_strided`), moves and casts; writes (copies, fills, random
  draws, in-place ops) leave an array as it is; reading values raises torch's error.
- elementwise: the broadcast shape, in the layout of an elementwise result.
- reduce: reductions, scans, softmax and sorting.
- shapes: products, convolutions, concatenation, indexing and recurrent cells.
- linalg: matrix decompositions and solvers; LAPACK's results are column-major in each matrix,
  as torch lays them out.
- data_dependent: ops whose output shape depends on values (nonzero, unique...) raise
  NotImplementedError, as torch's do.

Fused kernels the ops layer only uses where a device has them (attention, cross entropy,
einsum, optimizer steps) have none here: on meta those ops run their composite forms.

A result whose dtype is not simply an operand's takes it from the CPU, whose type rules are
not restated here: the kernel runs the CPU kernel of its op on one-element stand-ins of its
arrays and takes the dtypes of what comes back (`probe`). An op with no meta kernel
raises the dispatcher's NotImplementedError naming the op and the device.
"""

# importing registers the kernels
from . import storage, elementwise, reduce, shapes, linalg, data_dependent  # noqa: F401
