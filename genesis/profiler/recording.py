"""What a profile records while it records: host spans of ops and ranges, kernels on the device.

Every op reaches its kernel through `dispatch.kernel`; while a `Session` records, the dispatcher
hands each kernel to `_observe`, which returns it wrapped in a `_TimedKernel` that times the call
on the host as one op event ("aten::add"). With no session, the dispatcher checks one module
global and returns the kernel itself. `record_function` ranges and ops nest on a per-thread stack;
kernel records of `genesis.backends.cuda.profiling` (CUDA activity) go to the op on top of the
stack when they are launched, and become device events under it once their events resolve.
Each node of a backward pass runs inside "autograd::engine::evaluate_function: MulBackward0"
and "MulBackward0" ranges, as in PyTorch.
"""

import contextlib
import os
import sys
import threading
import time

from .. import dispatch
from ..autograd import engine
from ..autograd.function import AccumulateGrad
from .events import DeviceType, EventList, FunctionEvent

_session = None

# Kernel names that differ from the aten op PyTorch's profiler shows for the same work.
_RENAMED = {
    "cast": "aten::_to_copy", "contiguous": "aten::clone",
    "max_dim": "aten::max", "min_dim": "aten::min", "median_dim": "aten::median",
    "gelu_tanh": "aten::gelu", "gelu_tanh_backward": "aten::gelu_backward",
    "softmax_backward": "aten::_softmax_backward_data",
    "log_softmax_backward": "aten::_log_softmax_backward_data",
    "layer_norm_fwd": "aten::native_layer_norm",
    "layer_norm_bwd": "aten::native_layer_norm_backward",
    "rms_norm_fwd": "aten::_fused_rms_norm", "rms_norm_bwd": "aten::_fused_rms_norm_backward",
    "max_pool_fwd": "aten::max_pool2d_with_indices",
    "max_pool_bwd": "aten::max_pool2d_with_indices_backward", "avg_pool": "aten::avg_pool2d",
    "flash_attention": "aten::_scaled_dot_product_flash_attention",
    "flash_attention_backward": "aten::_scaled_dot_product_flash_attention_backward",
}
# Lookups that fetch a helper rather than run an op: not recorded.
_NOT_OPS = frozenset({"storage_of", "storage_as", "data_ptr", "to_numpy", "from_numpy",
                      "to_dlpack", "from_dlpack"})
# Kernels with no aten counterpart (fused steps and Genesis's own helpers): "genesis::name".
_GENESIS_SUFFIXES = ("_step", "_fwd", "_bwd", "_igemm", "_igemm_weight_grad")
_GENESIS_NAMES = frozenset({
    "check_index", "advance_steps", "kv_cache_write", "total_norm",
    "clip_by_total_norm_", "amp_unscale_", "add_rms_norm", "decode_attention", "linear_act",
    "linear_act_backward", "linear_silu_gate", "rotary", "rotary_cache_write", "silu_mul",
    "upsample_linear_fwd", "upsample_linear_bwd"})


def op_name(kernel_name):
    """The event name of a kernel: "add" -> "aten::add", Genesis's own -> "genesis::name"."""
    if kernel_name in _RENAMED:
        return _RENAMED[kernel_name]
    if kernel_name in _GENESIS_NAMES or kernel_name.endswith(_GENESIS_SUFFIXES):
        return "genesis::" + kernel_name
    return "aten::" + kernel_name


# Kernels whose results are not fresh memory: views, and writes into a given array.
_NO_ALLOCATION = frozenset({"as_strided", "elementwise_into", "kv_cache_write",
                            "rotary_cache_write"})


def _result_bytes(result):
    """The bytes of a kernel's result arrays (one, or a tuple or list of them)."""
    items = result if isinstance(result, (tuple, list)) else (result,)
    return sum(getattr(item, "nbytes", 0) for item in items)


def _in_place_name(args):
    """An in-place op run by "elementwise_into" (its first argument names the op) is named
    as PyTorch names the in-place op: "aten::add_"."""
    return op_name(args[0]) + "_"


class _TimedKernel:
    """A kernel as the dispatcher hands it out while a session records: each call is an op
    event. Attributes the callers read from kernels (`READS_HALVES_AS_FLOAT32`, ...) pass
    through."""

    __slots__ = ("name", "fn", "on_device", "allocates")

    def __init__(self, kernel_name, device_type, fn):
        self.name = None if kernel_name == "elementwise_into" else op_name(kernel_name)
        self.fn = fn
        self.on_device = device_type != "cpu"
        self.allocates = not (kernel_name in _NO_ALLOCATION or kernel_name.endswith("_"))

    def __getattr__(self, attr):
        return getattr(self.fn, attr)

    def __call__(self, *args, **kwargs):
        session = _session
        if session is None:
            return self.fn(*args, **kwargs)
        event = session.open(self.name or _in_place_name(args), args)
        try:
            result = self.fn(*args, **kwargs)
        finally:
            session.close(event)
        if session.profile_memory and self.allocates:
            size = _result_bytes(result)
            event.allocated = (0, size) if self.on_device else (size, 0)
        return result


_wrapped = {}


def _observe(kernel_name, device_type, fn):
    """dispatch's observer: `fn` wrapped to record its calls (one wrapper per kernel)."""
    entry = _wrapped.get((kernel_name, device_type))
    if entry is None or entry.fn is not fn:
        if kernel_name in _NOT_OPS:
            return fn
        entry = _wrapped[(kernel_name, device_type)] = _TimedKernel(kernel_name, device_type, fn)
    return entry


def _shape(arg):
    shape = getattr(arg, "shape", None)
    return list(shape) if isinstance(shape, tuple) else []


_GENESIS_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _user_stack():
    """The Python stack outside genesis, innermost first, as "file.py(12): fn" entries."""
    out = []
    frame = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if not code.co_filename.startswith(_GENESIS_ROOT):
            out.append(f"{code.co_filename}({frame.f_lineno}): {code.co_name}")
        frame = frame.f_back
    return out


class Session:
    """One recording: from `start` to `stop`, the events of every thread, then `events()`."""

    def __init__(self, cpu=True, cuda=False, record_shapes=False, with_stack=False,
                 profile_memory=False):
        self.cpu = cpu
        self.cuda = cuda
        self.record_shapes = record_shapes
        self.with_stack = with_stack
        self.profile_memory = profile_memory
        self.use_device = "cuda" if cuda else None
        self._events = []
        self._launches = []  # (owner event or None, profiling Record, leaf)
        self._local = threading.local()
        self._next_id = 0

    def _stack(self):
        stack = getattr(self._local, "stack", None)
        if stack is None:
            stack = self._local.stack = []
            self._local.has_child = set()
        return stack

    def start(self):
        global _session
        if _session is not None:
            raise RuntimeError("Can't start a genesis.profiler profile: another one is recording")
        _session = self
        if self.cpu:
            dispatch.set_observer(_observe)
            engine.set_node_observer(self._node_ranges)
        if self.cuda:
            from ..backends.cuda import profiling
            profiling.attach(self)

    def stop(self):
        global _session
        if _session is not self:
            return
        if self.cuda:
            from ..backends.cuda import profiling
            profiling.detach(self)
        dispatch.set_observer(None)
        engine.set_node_observer(None)
        _session = None
        end = _now_us()
        for e in self._events:
            if e.time_range.end is None:
                e.time_range.end = end

    def open(self, name, args=(), annotation=False, trace_name=None):
        """Begin an event named `name` under the innermost open one of this thread."""
        stack = self._stack()
        self._next_id += 1
        shapes = [_shape(a) for a in args] if self.record_shapes else ()
        event = FunctionEvent(self._next_id, name, threading.get_native_id(), 0.0, None, shapes,
                              _user_stack() if self.with_stack else (),
                              is_user_annotation=annotation, use_device=self.use_device,
                              trace_name=trace_name)
        if stack:
            event.cpu_parent = stack[-1]
            stack[-1].cpu_children.append(event)
        stack.append(event)
        self._events.append(event)
        event.time_range.start = _now_us()
        event.time_range.end = None
        return event

    def close(self, event):
        event.time_range.end = _now_us()
        stack = self._stack()
        while stack and stack.pop() is not event:
            pass

    @contextlib.contextmanager
    def _node_ranges(self, node):
        """The ranges PyTorch's profiler puts around one backward node's run."""
        name = "torch::autograd::AccumulateGrad" if isinstance(node, AccumulateGrad) \
            else node.name()
        outer = self.open("autograd::engine::evaluate_function: " + name)
        inner = self.open(name)
        try:
            yield
        finally:
            self.close(inner)
            self.close(outer)

    def add(self, record):
        """A kernel or library region of the CUDA backend, handed over as it is launched: it
        belongs to the op open on this thread. A region that enclosed other records is not a
        device event of its own (its kernels are)."""
        stack = self._stack()
        has_child = self._local.has_child
        leaf = record.depth not in has_child
        has_child.discard(record.depth)
        if record.depth:
            has_child.add(record.depth - 1)
        self._launches.append((stack[-1] if stack else None, record, leaf))

    def events(self):
        """The recorded events, host ones in the order they began, then the kernels."""
        out = EventList(self._events, self.use_device, self.profile_memory)
        for owner, record, leaf in self._launches:
            if leaf:
                kernel = self._kernel_event(record)
                if owner is not None:
                    owner.kernels.append(kernel)
                    kernel.args["External id"] = owner.id
                out.append(kernel)
        self._launches = []
        self._events = list(out)
        return out

    def _kernel_event(self, record):
        record.resolve()
        self._next_id += 1
        start = record.base[1] / 1e3 + record.start_us
        args = dict(record.args or {}, device=record.device, stream=record.stream)
        if record.grid:
            args["grid"] = list(record.grid)
        return FunctionEvent(self._next_id, record.name, record.stream, start,
                             start + record.device_us, device_type=DeviceType.CUDA,
                             use_device=self.use_device, device_index=record.device, args=args)


def _now_us():
    return time.perf_counter_ns() / 1e3


def current_session():
    return _session
