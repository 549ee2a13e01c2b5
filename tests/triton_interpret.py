"""Run the CUDA backend's kernels on the CPU through Triton's interpreter (TRITON_INTERPRET=1).

The kernels' own launch code runs unchanged: `device()` patches the pieces that need a GPU
(allocation, stream, context, the bound launcher) so that CUDAArrays live in host memory and each
launch becomes an interpreted `kernel[grid](...)`. libdevice has no interpreter implementation, so
its functions are replaced by numpy ones: results then check index math, masks, dtypes and
formulas, not the last bits of libdevice.

Only meaningful when TRITON_INTERPRET=1 was set before Triton was imported.
"""

import contextlib
import ctypes
import math
import os

import ml_dtypes
import numpy as np
import triton.language as tl
from triton.language.extra import libdevice
from triton.runtime import interpreter
from triton.runtime.interpreter import TensorHandle

from genesis.backends.cuda.launch import constant_suffix
from genesis.backends.cuda.runtime.array import CUDAArray, contiguous_byte_strides

ENABLED = os.environ.get("TRITON_INTERPRET") == "1"

def bf16_dot(self, a, b, d, input_precision, max_num_imprecise_acc,
             original=interpreter.InterpreterBuilder.create_dot):
    """The interpreter's dot with bfloat16 operands widened to float32 first (it multiplies
    their raw 16-bit patterns otherwise): patched in as InterpreterBuilder.create_dot by the
    tests of kernels with bfloat16 products."""
    if a.dtype == tl.bfloat16:
        a, b = (TensorHandle(np.ascontiguousarray(h.data).view(ml_dtypes.bfloat16)
                             .astype(np.float32), tl.float32) for h in (a, b))
    return original(self, a, b, d, input_precision, max_num_imprecise_acc)


_TL_TYPES = {"fp32": tl.float32, "fp64": tl.float64, "fp16": tl.float16, "bf16": tl.bfloat16,
             "i1": tl.int1, "i8": tl.int8, "i16": tl.int16, "i32": tl.int32, "i64": tl.int64,
             "u8": tl.uint8}
_NP_SCALARS = {"fp32": np.float32, "fp64": np.float64, "i32": np.int32, "i64": np.int64,
               "i1": np.bool_}


class _HostStorage:
    """Host memory standing in for a device allocation."""

    def __init__(self, nbytes):
        self.buffer = np.zeros(max(nbytes, 1), dtype=np.uint8)
        self.ptr = self.buffer.ctypes.data
        self.nbytes = nbytes
        self.device = 0


class _HostPointer:
    """What the interpreter needs of a tensor argument: an address and an element type."""

    def __init__(self, address, dtype):
        self.address, self.dtype = address, dtype

    def data_ptr(self):
        return self.address

    def untyped_storage(self):
        return self

    def cpu(self):
        return self

    def new_empty(self, *args, **kwargs):
        return self

    def set_(self, *args):
        return self

    def copy_(self, other):
        return self

    storage_offset = size = stride = lambda self: 0


def _empty(cls, shape, dtype, device=0, stream=None):
    dtype = np.dtype(dtype)
    shape = tuple(shape)
    storage = _HostStorage(int(np.prod(shape, dtype=np.int64)) * dtype.itemsize)
    return cls(storage, shape, contiguous_byte_strides(shape, dtype.itemsize), 0, dtype)


def to_device(array, transpose=False):
    """A host-backed CUDAArray holding `array`; with `transpose`, a transposed view of it."""
    array = np.asarray(array)
    if transpose:
        storage = np.ascontiguousarray(array.T)
        out = _empty(CUDAArray, storage.shape, array.dtype)
        to_host(out)[...] = storage
        return CUDAArray(out.storage, array.shape, out.strides[::-1], 0, array.dtype)
    out = _empty(CUDAArray, array.shape, array.dtype)
    to_host(out)[...] = array
    return out


def view(arr, shape, strides, offset=0):
    """`arr`'s storage seen as `shape` with element `strides` and element `offset`."""
    item = arr.itemsize
    return CUDAArray(arr.storage, shape, tuple(s * item for s in strides),
                     arr.offset + offset * item, arr.dtype)


def to_host(arr):
    """A numpy view of a host-backed CUDAArray (same memory)."""
    return np.ndarray(arr.shape, arr.dtype, buffer=arr.storage.buffer, offset=arr.offset,
                      strides=arr.strides)


def _scalar(value, ty):
    if ty[0] == "i" and isinstance(value, float):  # as Triton's C launcher
        raise TypeError("'float' object cannot be interpreted as an integer")
    np_type = _NP_SCALARS[ty]
    tl_type = _TL_TYPES[ty]
    return tl.tensor(TensorHandle(np.array([value], dtype=np_type), tl_type), tl_type)


class _Launcher:
    """Stands in for launch.BoundKernel: converts raw arguments and runs the interpreter."""

    def __init__(self, fn, signature, constexprs):
        self.fn, self.constexprs = fn, dict(constexprs or {})
        self.signature = signature
        self.n_args = constant_suffix(signature)

    def __call__(self, grid, stream, *args):
        """`args`: the parameters before the trailing constants, as launch.BoundKernel takes
        them (values at constant positions among them are ignored)."""
        converted = {}
        for name, value in zip(self.fn.arg_names, args):
            ty = self.signature[name]
            if ty == "constexpr":
                continue
            if ty.startswith("*"):
                converted[name] = _HostPointer(value, _TL_TYPES[ty[1:]])
            else:
                converted[name] = _scalar(value, ty)
        self.fn[tuple(grid)](**converted, **self.constexprs)


def _get_kernel(fn, signature, constexprs=None, aligned=(), num_warps=4, num_stages=3, device=0,
                pdl=False):
    """The interpreter's launcher; a kernel launched one at a time has no programmatic
    dependency to wait for (and the interpreter has no griddepcontrol), so PDL is off."""
    if constexprs and constexprs.get("PDL"):
        constexprs = dict(constexprs, PDL=False)
    return _Launcher(fn, signature, constexprs)


def _unary_np(fn):
    def apply(x):
        data = np.asarray(fn(x.handle.data)).astype(x.handle.data.dtype)
        return tl.tensor(TensorHandle(data, x.handle.dtype), x.type)
    return apply


def _binary_np(fn):
    def apply(a, b):
        data = np.asarray(fn(a.handle.data, b.handle.data)).astype(a.handle.data.dtype)
        return tl.tensor(TensorHandle(data, a.handle.dtype), a.type)
    return apply


_erf = np.vectorize(math.erf, otypes=[np.float64])
_LIBDEVICE = {
    **{name: _unary_np(getattr(np, name)) for name in (
        "exp", "exp2", "log", "log2", "log10", "log1p", "expm1", "sin", "cos", "tan", "sinh",
        "cosh", "tanh", "floor", "ceil", "trunc", "rint")},
    "asin": _unary_np(np.arcsin), "acos": _unary_np(np.arccos), "atan": _unary_np(np.arctan),
    "asinh": _unary_np(np.arcsinh), "acosh": _unary_np(np.arccosh),
    "atanh": _unary_np(np.arctanh), "erf": _unary_np(_erf),
    "erfc": _unary_np(lambda x: 1.0 - _erf(x)), "rsqrt": _unary_np(lambda x: 1.0 / np.sqrt(x)),
    "pow": _binary_np(np.power), "atan2": _binary_np(np.arctan2),
    "hypot": _binary_np(np.hypot), "copysign": _binary_np(np.copysign),
    "fmod": _binary_np(np.fmod),
}


def _patch_lang_tensor(tensor, scope, original=interpreter._patch_lang_tensor):
    """The interpreter's tensor patches, with `__index__` working on numpy 2.4, where int() of a
    one-element 1-d array (how the interpreter holds scalars) is an error."""
    original(tensor, scope)
    scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.reshape(-1)[0]))


def _convert_float(data, src, dst, rounding_mode, original=interpreter._convert_float):
    """The interpreter's float conversions, except float32 -> bfloat16 rounds to nearest even
    as compiled kernels do (the interpreter truncates)."""
    if src == tl.float32 and dst == tl.bfloat16 and rounding_mode in (None, "rtne"):
        return np.asarray(data, np.float32).astype(ml_dtypes.bfloat16).view(np.uint16)
    return original(data, src, dst, rounding_mode)


def dense_on_device(array):
    """A device array holding `array` in its own dense layout (channels-last stays so)."""
    order = np.argsort([-s for s in array.strides], kind="stable")
    dev = to_device(np.ascontiguousarray(array.transpose(order)))
    strides = [0] * array.ndim
    for axis, stride in zip(order, dev.element_strides()):
        strides[axis] = stride
    return view(dev, array.shape, strides)


def host_kernel(fn):
    """`fn` (a CUDA kernel entry point) as a CPU kernel: numpy arrays in (their dense layout
    kept), numpy arrays out (a tuple stays a tuple), laid out as the device results are. What
    the kernel writes into an argument in place (batch norm's running estimates) is copied back
    into that argument."""
    def result(arr):
        return to_host(arr).copy(order="K") if isinstance(arr, CUDAArray) else arr

    def run(*args):
        converted = [dense_on_device(a) if isinstance(a, np.ndarray) else a for a in args]
        out = fn(*converted)
        for arg, device_arg in zip(args, converted):
            if isinstance(arg, np.ndarray) and arg.flags.writeable:
                arg[...] = to_host(device_arg)
        return tuple(result(a) for a in out) if isinstance(out, tuple) else result(out)
    return run


def on_cpu(monkeypatch, module, *ops):
    """Register `module`'s CUDA entry points named `ops` as the CPU backend's kernels of those
    names (through `host_kernel`) until the test ends."""
    from genesis import dispatch
    for op in ops:
        monkeypatch.setitem(dispatch._KERNELS, (op, "cpu"), host_kernel(getattr(module, op)))


def small_sort_blocks(monkeypatch):
    """Shrink the CUDA sort's blocks so small inputs walk its chunked and merge paths."""
    from genesis.backends.cuda.kernels import sort
    monkeypatch.setattr(sort, "SORT_BLOCK", 16)
    monkeypatch.setattr(sort, "MERGE_BLOCK", 8)
    monkeypatch.setattr(sort, "_MIN_TILE", 32)
    monkeypatch.setattr(sort, "_plans", sort.LaunchCache())


@contextlib.contextmanager
def device(*modules):
    """Within: the given kernel modules launch through the interpreter on host memory."""
    from genesis.backends.cuda import launch
    from genesis.backends.cuda.kernels import copy
    from genesis.backends.cuda.runtime import driver
    saved = []

    def patch(obj, name, value):
        saved.append((obj, name, getattr(obj, name)))
        setattr(obj, name, value)

    patch(CUDAArray, "empty", classmethod(_empty))
    patch(interpreter, "_patch_lang_tensor", _patch_lang_tensor)
    patch(interpreter, "_convert_float", _convert_float)
    for name, fn in _LIBDEVICE.items():
        patch(libdevice, name, fn)
    patch(driver, "memset_d8", lambda ptr, value, nbytes, stream=0: ctypes.memset(ptr, value,
                                                                                   nbytes))
    copy_bytes = lambda dst, src, nbytes, stream=0: ctypes.memmove(dst, src, nbytes)  # noqa: E731
    for name in ("memcpy_dtod", "memcpy_htod", "memcpy_dtoh"):
        patch(driver, name, copy_bytes)
    patch(driver, "stream_synchronize", lambda stream: None)
    for module in (launch, copy) + modules:
        for name, value in (("get_kernel", _get_kernel), ("activate", lambda index: None),
                            ("current_stream_handle", lambda index: 0)):
            if hasattr(module, name):
                patch(module, name, value)
    try:
        with np.errstate(all="ignore"):
            yield
    finally:
        for obj, name, value in reversed(saved):
            setattr(obj, name, value)
