"""The Tensor: a handle on a backend array plus dtype, device and autograd fields.

Math, shape, indexing and conversion methods (`add`, `view`, `to`...) are defined by the op
families in `genesis.ops`, each as a mixin class of explicit methods bound onto this class there;
this module holds what every tensor is.
"""

import sys

import numpy as np

from . import dtypes
from ._warnings import warn, warn_once
from . import memory_formats as formats
from .layouts import strided
from .device import device as Device
from .dispatch import kernel

_new = object.__new__


class _VersionCounter:
    """Shared by a tensor and all its views; bumped by every in-place write."""

    __slots__ = ("value",)

    def __init__(self):
        self.value = 0


class _LazyField:
    """A tensor field computed on its first read and then stored on the tensor, where it hides
    this descriptor. Unlike a `__getattr__` hook, it leaves every other attribute read at full
    speed (a class with `__getattr__` makes each tensor attribute read ~2.5x as costly)."""

    def __init__(self, compute):
        self._compute = compute

    def __set_name__(self, owner, name):
        self._name = name

    def __get__(self, t, owner=None):
        if t is None:
            return self
        self._compute(t)
        return t.__dict__[self._name]


def _find_storage(t):
    t._storage, t._offset = kernel("storage_of", t.device.type)(t._data)


def _new_version_counter(t):
    t._version_counter = _VersionCounter()


# `Tensor(...)`'s legacy constructor (sizes, data or a tensor, in the default dtype), set by
# genesis.ops.legacy when it loads.
_legacy_new = None

# check(tensor, read, reader), raising where the host may not read `tensor`'s values (`read`:
# "item", "control flow" or "data"; `reader`: the reading code's module name); set by
# genesis.func.vmap while it runs, else None.
_host_read_check = None


def set_host_read_check(check):
    """Make `check` (or None) the check of every host read of a tensor's values; returns the
    check it replaces."""
    global _host_read_check
    previous, _host_read_check = _host_read_check, check
    return previous


def check_host_read(t, read, depth=1):
    """Run the host read check, if one is set, on `t` read (`read`) by the code `depth` calls
    above the caller of this function (1: the code that called that caller)."""
    if _host_read_check is not None:
        _host_read_check(t, read, sys._getframe(depth + 1).f_globals.get("__name__", ""))


class Tensor:
    """A multi-dimensional array on a device that can record the ops that made it."""

    __module__ = "genesis"  # shown as <class 'genesis.Tensor'>, as PyTorch's <class 'torch.Tensor'>

    __array_priority__ = 1000

    def __new__(cls, *args, **kwargs):
        """`Tensor(2, 3)`, `Tensor([1, 2])`: PyTorch's legacy constructor of the default type.
        A subclass builds its instances with its own __new__ (as Parameter does)."""
        if cls is not Tensor:
            raise TypeError("construct tensors with genesis.tensor(data), genesis.empty(shape), "
                            "genesis.zeros(...) and the other creation functions")
        return _legacy_new(*args, **kwargs)

    def __init__(self, *args, **kwargs):
        pass

    # Autograd fields: class defaults until a tensor sets its own (most tensors never do).
    _requires_grad = False
    grad = None
    grad_fn = None
    _output_nr = 0
    _base = None
    _fw_grad = None  # (dual level, tangent): see genesis.autograd.forward_ad
    _hooks = None
    _post_accumulate_hooks = None
    _retains_grad = False
    _grad_accumulator = None
    _storage = _LazyField(_find_storage)  # the storage and element offset the array views
    _offset = _LazyField(_find_storage)
    _version_counter = _LazyField(_new_version_counter)

    @classmethod
    def _make(cls, data, device, dtype=None, storage=None, offset=0, requires_grad=False,
              base=None, version=None):
        """Wrap a backend array; `storage`/`offset` default to the array's own buffer.

        That default, like the version counter, is made only when first read (`_LazyField`),
        since most op results are never viewed or written in place.
        """
        t = _new(cls)
        t._data = data
        t.device = device
        t.dtype = dtype if dtype is not None else dtypes.from_numpy_dtype(data.dtype)
        if storage is not None:
            t._storage = storage
            t._offset = offset
        if requires_grad:
            t._requires_grad = True
        if base is not None:
            t._base = base
        if version is not None:
            t._version_counter = version
        return t

    # geometry

    @property
    def shape(self):
        return Size(self._data.shape)

    def size(self, dim=None):
        if dim is None:
            return Size(self._data.shape)
        return self._data.shape[self._wrap_dim(dim, "size")]

    def stride(self, dim=None):
        data = self._data
        if dim is not None and 0 not in data.shape:  # one dim: no tuple of them all
            strides = data.strides
            if -len(strides) <= dim < len(strides):  # in range: the tuple's own index wraps it
                return strides[dim] // self.dtype.itemsize
            return strides[self._wrap_dim(dim, "stride")] // self.dtype.itemsize
        itemsize = self.dtype.itemsize
        strides = tuple([s // itemsize for s in data.strides])
        if 0 in data.shape and strides and not any(strides):
            strides = contiguous_strides(data.shape)  # numpy's fresh empty results
        return strides if dim is None else strides[self._wrap_dim(dim, "stride")]

    def storage_offset(self):
        return self._offset

    @property
    def ndim(self):
        return len(self._data.shape)

    def dim(self):
        return len(self._data.shape)

    ndimension = dim

    def numel(self):
        n = 1
        for s in self._data.shape:
            n *= s
        return n

    nelement = numel

    def element_size(self):
        return self.dtype.itemsize

    @property
    def itemsize(self):
        return self.dtype.itemsize

    @property
    def nbytes(self):
        return self.numel() * self.dtype.itemsize

    def is_contiguous(self, memory_format=None):
        """Dense in `memory_format`'s dim order (row-major by default; sizes of 1, and empty
        tensors, count whatever their strides): numpy's c_contiguous flag or the CUDA array's
        own check, or PyTorch's rule for the channels-last formats."""
        if memory_format is not None and memory_format.order is not None:
            return formats.is_laid_out(self._data.shape, self.stride(), memory_format)
        arr = self._data
        return arr.flags.c_contiguous if isinstance(arr, np.ndarray) else arr.is_contiguous()

    def data_ptr(self):
        check_host_read(self, "data")
        return kernel("data_ptr", self.device.type)(self._data)

    def _wrap_dim(self, dim, op):
        return wrap_dim(dim, self.ndim, op)

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    @property
    def is_cuda(self):
        return self.device.type == "cuda"

    @property
    def is_cpu(self):
        return self.device.type == "cpu"

    @property
    def is_meta(self):
        """True on the meta device: a shape, dtype and strides with no data."""
        return self.device.type == "meta"

    @property
    def layout(self):
        """genesis.strided: the one layout Genesis's tensors have."""
        return strided

    is_sparse = False

    def is_floating_point(self):
        return self.dtype.is_floating_point

    # values on the host

    def numpy(self, *, force=False):
        """The data as a numpy array; shares memory for CPU tensors (as `torch.Tensor.numpy`)."""
        check_host_read(self, "data")
        if self.device.type != "cpu" and not force:
            raise TypeError(f"can't convert {self.device} device type tensor to numpy. "
                            "Use Tensor.cpu() to copy the tensor to host memory first.")
        from .autograd.grad_mode import is_grad_enabled  # (that package imports this module)
        if self.requires_grad and is_grad_enabled() and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. "
                               "Use tensor.detach().numpy() instead.")
        return kernel("to_numpy", self.device.type)(self._data)

    def _host(self):
        """A numpy array holding this tensor's values (a copy for device tensors)."""
        return kernel("to_numpy", self.device.type)(self._data)

    def item(self):
        check_host_read(self, "item")
        if self.numel() != 1:
            raise RuntimeError(f"a Tensor with {self.numel()} elements cannot be converted to Scalar")
        if self.device.type == "meta":
            raise RuntimeError("Tensor.item() cannot be called on meta tensors")
        return self._host().reshape(()).item() if self.dtype not in (dtypes.bfloat16,) \
            else float(self._host().reshape(()))

    def tolist(self):
        check_host_read(self, "data")
        host = self._host()
        if self.dtype is dtypes.bfloat16:
            host = host.astype("float32")
        return host.tolist()

    def __bool__(self):
        check_host_read(self, "control flow")
        if self.numel() != 1:
            raise RuntimeError("Boolean value of Tensor with no values is ambiguous" if
                               self.numel() == 0 else
                               "Boolean value of Tensor with more than one value is ambiguous")
        return bool(self.item())

    def _scalar(self):
        """The one value of this tensor, for float(), int() and complex()."""
        if self.numel() != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        check_host_read(self, "item", depth=2)
        return self.item()

    def __float__(self):
        from .autograd.grad_mode import is_grad_enabled  # (that package imports this module)
        if self.requires_grad and is_grad_enabled():  # once a process, as PyTorch's TORCH_WARN_ONCE
            warn_once("float_of_requires_grad", "Converting a tensor with requires_grad=True to a "
                      "scalar may lead to unexpected behavior.\nConsider using tensor.detach() "
                      "first.")
        return float(self._scalar())

    def __int__(self):
        return int(self._scalar())

    def __index__(self):
        if self.dtype.is_floating_point or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        check_host_read(self, "item")
        return int(self.item())

    def __complex__(self):
        return complex(self._scalar())

    __hash__ = object.__hash__  # by identity, as torch's (`==` is elementwise); in C, not a frame

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __reversed__(self):
        """The tensor flipped along dim 0 (a 0-d tensor itself), as torch's: `reversed(x)` is a
        tensor, not an iterator, so that reversed(inputs) of a sequence runs through a model."""
        return self if self.ndim == 0 else self.flip(0)

    def __array__(self, dtype=None, copy=None):
        check_host_read(self, "data")
        arr = self.detach()._host()
        return arr if dtype is None else arr.astype(dtype)

    def __array_wrap__(self, array, context=None, return_scalar=False):
        """numpy's ufuncs over a tensor give a CPU tensor back (`np.exp(x)`, `np.ones(2) * x`),
        as PyTorch's do; a bool result comes back as uint8, as torch gives it."""
        if array.dtype == np.bool_:
            array = array.astype(np.uint8)
        return Tensor._make(np.asarray(array), Device("cpu"))

    def __repr__(self):
        from ._tensor_str import tensor_repr
        return tensor_repr(self)

    __str__ = __repr__

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        from .dlpack import to_dlpack
        return to_dlpack(self, stream, max_version, dl_device, copy)

    def __dlpack_device__(self):
        from .dlpack import dlpack_device
        return dlpack_device(self)

    def __format__(self, spec):
        if self.ndim == 0 and self.device.type != "meta":
            check_host_read(self, "item")
            return format(self.item(), spec)
        return object.__format__(self, spec)

    def __reduce_ex__(self, protocol):
        return (_rebuild_tensor, (self.detach()._host().copy(), str(self.device), self.requires_grad))

    def __deepcopy__(self, memo):
        if not self.is_leaf:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support "
                               "the deepcopy protocol at the moment.  If you were attempting to "
                               "deepcopy a module, this may be because of a "
                               "torch.nn.utils.weight_norm usage, see "
                               "https://github.com/pytorch/pytorch/pull/103001")
        out = self.detach().clone()
        out.requires_grad_(self.requires_grad)
        if self.grad is not None:
            out.grad = self.grad.__deepcopy__(memo)
        memo[id(self)] = out
        return out

    # autograd

    @property
    def requires_grad(self):
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, flag):
        self.requires_grad_(flag)

    def requires_grad_(self, requires_grad=True):
        if not self.is_leaf and not requires_grad:
            raise RuntimeError("you can only change requires_grad flags of leaf variables. If you "
                               "want to use a computed variable in a subgraph that doesn't require "
                               "differentiation use var_no_grad = var.detach().")
        if requires_grad and not (self.dtype.is_floating_point):
            raise RuntimeError(f"only Tensors of floating point dtype can require gradients, "
                               f"got {self.dtype}")
        self._requires_grad = bool(requires_grad)
        return self

    @property
    def is_leaf(self):
        return self.grad_fn is None

    @property
    def _version(self):
        return self._version_counter.value

    def _bump_version(self):
        self._version_counter.value += 1

    @property
    def data(self):
        """The same data cut from the graph, with a version counter of its own: writes through
        it go unseen by the graph's saved-tensor checks, as PyTorch's `.data` writes do."""
        return Tensor._make(self._data, self.device, self.dtype, self._storage, self._offset)

    @data.setter
    def data(self, other):
        if other.shape != self.shape or other.dtype is not self.dtype or other.device != self.device:
            self.dtype, self.device = other.dtype, other.device
        self._data, self._storage, self._offset = other._data, other._storage, other._offset

    @property
    def volatile(self):
        """Always False: PyTorch removed volatile (no_grad took its place) and warns on use."""
        warn("volatile was removed (Variable.volatile is always False)")
        return False

    @volatile.setter
    def volatile(self, value):
        warn("volatile was removed and now has no effect. Use `with torch.no_grad():` instead.")

    def detach(self):
        """The same data cut from the graph: shares memory and the version counter, no history."""
        return Tensor._make(self._data, self.device, self.dtype, self._storage, self._offset,
                            version=self._version_counter)

    def detach_(self):
        """Make this tensor a leaf that requires no gradient, in place."""
        if self._base is not None and self._base.requires_grad:
            raise RuntimeError("Can't detach views in-place. Use detach() instead.")
        self.grad_fn = None
        self._requires_grad = False
        return self

    def module_load(self, other, assign=False):
        """What `load_state_dict` swaps in for this parameter or buffer given the state-dict
        value `other`, when genesis.__future__ says to swap: `other` detached if `assign`,
        else this tensor's storage holding `other`'s values, detached. Subclasses override it."""
        return other.detach() if assign else self.copy_(other).detach()

    def retain_grad(self):
        if not self.requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self.is_leaf or self._retains_grad:
            return
        self._retains_grad = True
        self.grad_fn.retain_grad_of(self)

    @property
    def retains_grad(self):
        return self._retains_grad

    def register_hook(self, hook):
        """Call `hook(grad)` when this tensor's gradient is computed; it may return a new grad."""
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.is_leaf:
            if self._hooks is None:
                self._hooks = {}
            hooks = self._hooks
        else:
            hooks = self.grad_fn.tensor_hooks(self._output_nr)
        return RemovableHandle(hooks, hook)

    def register_post_accumulate_grad_hook(self, hook):
        """Call `hook(tensor)` on this leaf after its `.grad` has been accumulated in backward."""
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if not self.is_leaf:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf "
                               "tensors")
        if self._post_accumulate_hooks is None:
            self._post_accumulate_hooks = {}
        return RemovableHandle(self._post_accumulate_hooks, hook)

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        from .autograd.engine import backward
        backward((self,), None if gradient is None else (gradient,), retain_graph, create_graph,
                 inputs)

    def record_stream(self, stream):
        """Mark this CUDA tensor's memory as in use on `stream` (the allocator waits for it)."""
        if self.device.type != "cuda":
            raise RuntimeError(f"record_stream: expected a CUDA tensor, got one on {self.device}")
        stream.retain_handle()
        self._data.storage.record_stream(stream.cuda_stream)

    def pin_memory(self):
        """A copy of this CPU tensor in page-locked memory (fast, asynchronous uploads)."""
        if self.device.type != "cpu":
            raise RuntimeError(f"pin_memory: cannot pin a tensor on {self.device}; only CPU "
                               "tensors can be pinned")
        if self.is_pinned():
            return self
        return Tensor._make(kernel("pin_memory", "cuda")(self._host()), self.device, self.dtype)

    def is_pinned(self):
        from .backends.cuda.runtime.driver import is_available as cuda_is_available
        if self.device.type != "cpu" or not cuda_is_available():
            return False
        return kernel("is_pinned", "cuda")(self._data)

    def get_device(self):
        return self.device.index if self.device.type == "cuda" else -1


def fresh(data, device, dtype):
    """A tensor owning the new array `data`; empty ones get PyTorch's contiguous strides
    (numpy gives them zero strides)."""
    t = _new(Tensor)  # Tensor._make(data, device, dtype), inlined: every new tensor comes here
    t._data, t.device, t.dtype = data, device, dtype
    if 0 in data.shape:
        t._data = kernel("as_strided", device.type)(t._storage, t.shape,
                                                    contiguous_strides(t.shape), 0)
    return t


def filled(shape, value, dtype, device):
    """A new tensor of `shape` (a tuple) on the concrete `device`, every element `value`: the
    device's own fill kernel, so autograd can make gradients without the op layer."""
    return fresh(kernel("full", device.type)(shape, value, dtype, device.index), device, dtype)


def _rebuild_tensor(array, device, requires_grad):
    """Unpickle a tensor (`Tensor.__reduce_ex__`): host values, then the device it lived on."""
    t = Tensor._make(array, Device("cpu"))
    if device != "cpu":
        t = t.to(device)
    return t.requires_grad_(True) if requires_grad else t


class Size(tuple):
    """A tuple of dimension sizes, printed as `genesis.Size([2, 3])`."""

    __module__ = "genesis"

    def __repr__(self):
        return f"genesis.Size({list(self)})"

    def numel(self):
        n = 1
        for s in self:
            n *= s
        return n

    def __getitem__(self, item):
        out = tuple.__getitem__(self, item)
        return Size(out) if type(out) is tuple else out


class RemovableHandle:
    """Returned by `register_hook`; `remove()` unregisters the hook."""

    _next_id = 0

    def __init__(self, hooks, hook):
        RemovableHandle._next_id += 1
        self.id = RemovableHandle._next_id
        self._hooks = hooks
        hooks[self.id] = hook

    def remove(self):
        self._hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def contiguous_strides(shape):
    """Row-major element strides of `shape` (size-0 and size-1 dims count as 1); cached, as
    every view and reshape asks for them."""
    if shape.__class__ is not tuple:
        shape = tuple(shape)
    strides = _contiguous.get(shape)
    if strides is None:
        if len(_contiguous) >= 4096:
            _contiguous.clear()
        strides = _contiguous[shape] = _row_major(shape)
    return strides


_contiguous = {}


def _row_major(shape):
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


def wrap_dim(dim, ndim, op="op"):
    """Turn a possibly negative dim into an index in [0, ndim); IndexError names the op."""
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"{op}: Dimension out of range (expected to be in range of "
                         f"[{-n}, {n - 1}], but got {dim})")
    return dim % n
