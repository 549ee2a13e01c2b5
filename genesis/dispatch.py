"""The dispatcher: (op name, device type) -> kernel.

It is the only seam between device-agnostic code (`genesis.ops`) and the backends. Kernels take
and return backend arrays (numpy arrays on the CPU, CUDA arrays on the GPU), never Tensors.
A backend registers its kernels when it is imported, and is imported on the first kernel lookup
for its device type (`register_backend` names the module), so `import genesis` never touches a
GPU library.
"""

from collections.abc import Mapping

_KERNELS = {}
_BACKEND_MODULES = {}  # device type -> the module whose import registers its kernels
_loaded = set()
_observer = None  # set_observer's hook, or None


def set_observer(observer):
    """While `observer` is set, every kernel lookup returns `observer(op_name, device_type,
    kernel)` in place of the kernel (genesis.profiler times ops this way); None removes it.
    Returns the observer it replaces, for a new one to pass lookups on to."""
    global _observer
    previous, _observer = _observer, observer
    return previous


def register_backend(device_type, module_name):
    """Name the module that registers `device_type`'s kernels, imported on first lookup (the
    backends package calls this; the dispatcher imports nothing of theirs by name)."""
    _BACKEND_MODULES[device_type] = module_name


def register(op_name, device_type):
    """Decorator: make `fn` the kernel of `op_name` on `device_type`."""
    def decorate(fn):
        _KERNELS[(op_name, device_type)] = fn
        return fn
    return decorate


def _load_backend(device_type):
    import importlib
    _loaded.add(device_type)
    importlib.import_module(_BACKEND_MODULES[device_type])


def kernel(op_name, device_type):
    """The kernel registered for `op_name` on `device_type`, loading that backend on first use."""
    fn = _KERNELS.get((op_name, device_type))
    if fn is not None:
        return fn if _observer is None else _observer(op_name, device_type, fn)
    if device_type not in _loaded and device_type in _BACKEND_MODULES:
        _load_backend(device_type)
        if (op_name, device_type) in _KERNELS:
            return kernel(op_name, device_type)
    return MissingKernel(op_name, device_type)


def has_kernel(op_name, device_type):
    return not isinstance(kernel(op_name, device_type), MissingKernel)


class MissingKernel:
    """Stands in for an unregistered kernel; calling it raises NotImplementedError naming the op,
    the device and the dtypes of the arrays it was given (only known at the call)."""

    __slots__ = ("op_name", "device_type")

    def __init__(self, op_name, device_type):
        self.op_name = op_name
        self.device_type = device_type

    def __call__(self, *args, **kwargs):
        raise NotImplementedError(missing_message(self.op_name, self.device_type, args))


def missing_message(op_name, device_type, args=()):
    """"genesis: 'sort' is not implemented for device 'cuda' (dtype float16)"."""
    names = []
    for a in args:
        for item in (a if isinstance(a, (list, tuple)) else (a,)):
            dtype = getattr(item, "dtype", None)
            name = getattr(dtype, "name", None)
            if name is not None and name not in names:
                names.append(name)
    text = f"genesis: '{op_name}' is not implemented for device '{device_type}'"
    if names:
        text += f" (dtype{'s' if len(names) > 1 else ''} {', '.join(names)})"
    return text


def registered_ops(device_type):
    """Names of the ops that have a kernel on `device_type` (loads that backend)."""
    if device_type not in _loaded and device_type in _BACKEND_MODULES:
        _load_backend(device_type)
    return sorted(name for name, dev in _KERNELS if dev == device_type)


class DeviceRegistry(Mapping):
    """A read-only view {op name: kernel} of one device type's kernels (`GPU_OPS_REGISTRY`)."""

    def __init__(self, device_type):
        self.device_type = device_type

    def __getitem__(self, op_name):
        fn = kernel(op_name, self.device_type)
        if isinstance(fn, MissingKernel):
            raise KeyError(op_name)
        return fn

    def __iter__(self):
        return iter(registered_ops(self.device_type))

    def __len__(self):
        return len(registered_ops(self.device_type))


GPU_OPS_REGISTRY = DeviceRegistry("cuda")


def list_gpu_ops():
    """Names of the ops with a CUDA kernel."""
    return registered_ops("cuda")
