"""The dispatcher: (op name, device type) -> kernel.

It is the only seam between device-agnostic code (`genesis.ops`) and the backends. Kernels take
and return backend arrays (numpy arrays on the CPU, CUDA arrays on the GPU), never Tensors.
A backend registers its kernels when it is imported; the CUDA backend is imported on first use,
so `import genesis` never touches a GPU library.
"""

_KERNELS = {}
_BACKEND_MODULES = {"cpu": "genesis.backends.cpu", "cuda": "genesis.backends.cuda.register"}
_loaded = set()


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
        return fn
    if device_type not in _loaded and device_type in _BACKEND_MODULES:
        _load_backend(device_type)
        fn = _KERNELS.get((op_name, device_type))
        if fn is not None:
            return fn
    raise NotImplementedError(f"genesis: no kernel for op '{op_name}' on device type '{device_type}'")


def has_kernel(op_name, device_type):
    try:
        kernel(op_name, device_type)
        return True
    except NotImplementedError:
        return False


def registered_ops(device_type):
    """Names of the ops that have a kernel on `device_type` (loads that backend)."""
    if device_type not in _loaded and device_type in _BACKEND_MODULES:
        _load_backend(device_type)
    return sorted(name for name, dev in _KERNELS if dev == device_type)
