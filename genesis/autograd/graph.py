"""The backward graph's public face (`torch.autograd.graph`'s names).

Inside `saved_tensors_hooks(pack, unpack)`, each tensor an op saves for its backward is stored
as `pack(tensor)`, whatever that returns, and backward reads it back as `unpack(packed)`. That
is how saved activations move to the host (`save_on_cpu`) or are dropped and recomputed
(`genesis.utils.checkpoint`). Hooks are per thread and nest; the innermost one applies.
`allow_mutation_on_saved_tensors` is such a pair: the in-place ops tell it before they write,
and it copies what the graph saved from the memory about to change.

`Node` is the abstract class of every grad_fn (genesis.autograd.function registers its nodes);
a `GradientEdge` names where a gradient flows in (a node and one of its inputs), and
autograd.grad and backward take edges wherever they take tensors. `register_multi_grad_hook`
calls one function for the gradients of several tensors, once per backward pass.
"""

import abc
import contextlib
import threading
import weakref
from typing import NamedTuple

from ..tensor import RemovableHandle

_local = threading.local()
_in_use = 0  # contexts open in any thread: the save path checks this plain int first


def current_hooks():
    """The innermost (pack, unpack) pair of this thread, or None."""
    if not _in_use:
        return None
    stack = getattr(_local, "stack", None)
    return stack[-1] if stack else None


class saved_tensors_hooks:
    """Store what ops save for backward as `pack_hook(tensor)`; backward reads
    `unpack_hook(packed)`. A context manager; `disable_saved_tensors_hooks` inside it raises."""

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook, self.unpack_hook = pack_hook, unpack_hook

    def __enter__(self):
        global _in_use
        message = getattr(_local, "disabled", None)
        if message is not None:
            raise RuntimeError(message)
        stack = getattr(_local, "stack", None)
        if stack is None:
            stack = _local.stack = []
        stack.append((self.pack_hook, self.unpack_hook))
        _in_use += 1
        return self

    def __exit__(self, *exc):
        global _in_use
        _local.stack.pop()
        _in_use -= 1
        return False


class disable_saved_tensors_hooks:
    """Within it, entering saved_tensors_hooks raises RuntimeError(error_message)."""

    def __init__(self, error_message):
        self.error_message = error_message

    def __enter__(self):
        self._previous = getattr(_local, "disabled", None)
        _local.disabled = self.error_message
        return self

    def __exit__(self, *exc):
        _local.disabled = self._previous
        return False


class save_on_cpu(saved_tensors_hooks):
    """Keep the tensors saved for backward on the host (pinned when `pin_memory`), and move each
    back to its device when backward reads it: GPU memory for activations, paid in copies."""

    def __init__(self, pin_memory=False, device_type="cuda"):
        def pack(tensor):
            if tensor.device.type == "cpu":
                return tensor.device, tensor
            host = tensor.detach().to("cpu")
            return tensor.device, host.pin_memory() if pin_memory else host

        def unpack(packed):
            device, tensor = packed
            return tensor.to(device, non_blocking=pin_memory)

        super().__init__(pack, unpack)


class Node(abc.ABC):
    """A node of the backward graph, as `torch.autograd.graph.Node`: every grad_fn, and the
    AccumulateGrad node of a leaf, is one (genesis.autograd.function registers its classes)."""

    @abc.abstractmethod
    def name(self):
        """The node's name, PyTorch's ("MulBackward0")."""

    @property
    @abc.abstractmethod
    def next_functions(self):
        """A (node, output index) pair per input, (None, 0) where no gradient flows."""

    @property
    @abc.abstractmethod
    def metadata(self):
        """A dict kept on the node for the user's own annotations."""

    @abc.abstractmethod
    def register_hook(self, fn):
        """`fn(grad_inputs, grad_outputs)` runs after the node; a tuple it returns replaces
        grad_inputs. Returns a handle whose remove() unregisters it."""

    @abc.abstractmethod
    def register_prehook(self, fn):
        """`fn(grad_outputs)` runs before the node; a tuple it returns replaces grad_outputs.
        Returns a handle whose remove() unregisters it."""


class GradientEdge(NamedTuple):
    """Where a gradient flows in the graph: input `output_nr` of `node`, which carries the
    gradient of the node's forward output `output_nr`. Python nodes own the graph behind them,
    so the edge keeps it alive with no ownership token."""

    node: Node
    output_nr: int
    ownership_token: Node | None = None


def get_gradient_edge(tensor):
    """The GradientEdge that `tensor`'s gradient flows along: `grad(loss, get_gradient_edge(x))`
    is `grad(loss, x)`, and stays so after `x` itself is gone."""
    from .function import edge_of
    edge = edge_of(tensor)
    if edge is None:
        raise RuntimeError("It is not possible to get the gradient edge for a Tensor that does "
                           "not require gradients")
    return GradientEdge(*edge)


def increment_version(tensor):
    """Bump the version counter of `tensor` (or of each tensor of an iterable), for a write made
    behind autograd's back: backward then refuses the stale values it saved, as after any
    in-place op."""
    from .function import tensor_type
    for t in (tensor,) if isinstance(tensor, tensor_type()) else tensor:
        t._bump_version()


class _MultiHandle(RemovableHandle):
    """The handle of a multi-grad hook: remove() removes its hook from every tensor."""

    def __init__(self, handles):
        self.handles = tuple(handles)

    def remove(self):
        for handle in self.handles:
            handle.remove()


def register_multi_grad_hook(tensors, fn, *, mode="all"):
    """Call `fn` once per backward pass for the gradients of `tensors`.

    mode "all": `fn(grads)`, a list with one entry per tensor, once every tensor whose gradient
    the pass computes has it (None for the others: outside the graph, or not needed for the
    pass's `inputs`). mode "any": `fn(grad)` with the first gradient the pass computes.
    """
    modes = ("all", "any")
    if mode not in modes:
        raise ValueError(f"Expects mode to be one of {modes} but got {mode}")
    if mode == "all":
        return _MultiHandle(_hooks_for_all(tensors, fn))
    return _MultiHandle(_hooks_for_any(tensors, fn))


def _node_of(tensor):
    """The node that receives `tensor`'s gradient: its grad_fn, or its AccumulateGrad."""
    from .function import edge_of
    edge = edge_of(tensor)
    if edge is None:
        raise AssertionError("Expected gradient function to be set")
    return edge[0]


def _hooks_for_all(tensors, fn):
    """One tensor hook per tensor; the last of a pass's expected calls runs `fn(grads)`. The
    count expected is that of the tensors' nodes the pass executes, taken at its first call."""
    from .engine import current_graph_task
    nodes = [_node_of(t) for t in tensors]
    pending = weakref.WeakKeyDictionary()  # graph task -> [calls still to come, grads]

    def hook_for(index):
        def hook(grad):
            task = current_graph_task()
            state = pending.get(task)
            if state is None:
                state = pending[task] = [sum(map(task.will_execute, nodes)), [None] * len(nodes)]
            state[0] -= 1
            state[1][index] = grad
            if state[0] == 0:
                del pending[task]
                fn(state[1])
        return hook
    return [t.register_hook(hook_for(i)) for i, t in enumerate(tensors)]


def _hooks_for_any(tensors, fn):
    """One tensor hook per tensor that requires grad; the first call of a pass runs `fn(grad)`."""
    from .engine import current_graph_task
    ran = weakref.WeakSet()  # graph tasks that have called fn

    def hook(grad):
        task = current_graph_task()
        if task not in ran:
            ran.add(task)
            fn(grad)
    return [t.register_hook(hook) for t in tensors if t.requires_grad]


_mutation_context = None  # the open allow_mutation_on_saved_tensors context, or None

_OUTSIDE = ("Trying to backward outside of the 'allow_mutation_on_saved_tensors' context"
            "in which the graph was originally recorded.")


class _Handle:
    """What the graph holds for a tensor saved inside allow_mutation_on_saved_tensors: the
    context maps it to the tensor, or to the copy taken before the tensor was written."""

    __slots__ = ("version", "__weakref__")

    def __init__(self, version):
        self.version = version


class _AllowMutationOnSavedContext:
    """The state of one allow_mutation_on_saved_tensors block: `original` maps each saved
    tensor's handle to the tensor, `cloned` to the copy taken before its memory was first
    written. Tensors over one memory share a version counter, so a write to any of them (a view,
    the base, a detached alias) copies every tensor saved from that memory."""

    def __init__(self):
        self.original = weakref.WeakKeyDictionary()
        self.cloned = weakref.WeakKeyDictionary()
        self._handles = weakref.WeakValueDictionary()  # (id(tensor), version) -> handle
        self._saved_from = {}  # id(version counter) -> keys of _handles saved from that memory

    def pack(self, tensor):
        """A handle for `tensor`: one per tensor and version, however often it is saved."""
        key = (id(tensor), tensor._version)
        handle = self._handles.get(key)
        if handle is None:
            handle = self._handles[key] = _Handle(tensor._version)
            self.original[handle] = tensor
            self._saved_from.setdefault(id(tensor._version_counter), set()).add(key)
        return handle

    def unpack(self, handle):
        """The saved tensor, or the copy taken before it was written."""
        if _mutation_context is None:
            raise AssertionError(_OUTSIDE)
        if handle in self.cloned:
            return self.cloned[handle]
        if handle not in self.original:
            raise AssertionError(_OUTSIDE)
        tensor = self.original[handle]
        if tensor._version != handle.version:
            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified by an "
                f"operation allow_mutation_on_saved_tensors did not see: [{tensor.dtype.name} "
                f"tensor of shape {list(tensor.shape)}] is at version {tensor._version}; expected "
                f"version {handle.version}. It was written without genesis's in-place ops (a "
                "fused optimizer step, a raw kernel): clone it before writing it.")
        return tensor

    def before_write(self, tensor):
        """Copy every tensor the graph saved from `tensor`'s memory and has not copied yet: the
        in-place ops call this just before they write."""
        for key in self._saved_from.get(id(tensor._version_counter), ()):
            handle = self._handles.get(key)
            if handle is not None and handle in self.original:
                self.cloned[handle] = _stand_in(self.original.pop(handle))

    def clear(self):
        self.original.clear()
        self.cloned.clear()
        self._handles.clear()
        self._saved_from.clear()


def _stand_in(tensor):
    """A copy of `tensor`'s values in its place in the graph (its grad_fn and output index, or
    its leaf's AccumulateGrad), so higher-order gradients flow through the copy as through it."""
    from .function import grad_accumulator
    copy = tensor.detach().clone()
    if tensor.requires_grad:
        if tensor.grad_fn is None:
            copy._grad_accumulator = weakref.ref(grad_accumulator(tensor))
        else:
            copy.grad_fn, copy._output_nr = tensor.grad_fn, tensor._output_nr
        copy._requires_grad = True
    return copy


@contextlib.contextmanager
def allow_mutation_on_saved_tensors():
    """Within it, writing in place to a tensor the graph saved for backward is allowed: the
    in-place op first copies the saved values, and backward reads the copy. Run forward and
    backward inside the same block; yields the block's _AllowMutationOnSavedContext."""
    global _mutation_context
    if _mutation_context is not None:
        raise RuntimeError("allow_mutation_on_saved_tensors contexts cannot be nested")
    context = _AllowMutationOnSavedContext()
    with saved_tensors_hooks(context.pack, context.unpack):
        _mutation_context = context
        try:
            yield context
        finally:
            context.clear()
            _mutation_context = None
