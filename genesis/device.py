"""Devices: where a tensor's storage lives ("cpu", "cuda" with an index, or "meta": nowhere,
a tensor of metadata only)."""

_KNOWN_TYPES = ("cpu", "cuda", "meta")


class device:
    """`genesis.device("cpu")`, `device("cuda")`, `device("cuda:1")` or `device("cuda", 1)`."""

    __slots__ = ("type", "index")

    def __init__(self, type_or_spec, index=None):
        if isinstance(type_or_spec, device):
            type_, index = type_or_spec.type, type_or_spec.index
        elif isinstance(type_or_spec, int) and not isinstance(type_or_spec, bool):
            type_, index = "cuda", type_or_spec
        elif isinstance(type_or_spec, str):
            type_, _, idx = type_or_spec.partition(":")
            if idx:
                if index is not None:
                    raise RuntimeError(f"device(): index given twice in {type_or_spec!r}")
                if not idx.isdigit():
                    raise RuntimeError(f"Invalid device string: '{type_or_spec}'")
                index = int(idx)
        else:
            raise TypeError("device(): expected a string or device, got "
                            f"{type(type_or_spec).__name__}")
        if type_ not in _KNOWN_TYPES:
            raise RuntimeError(f"Expected one of {', '.join(_KNOWN_TYPES)} device type at start of "
                               f"device string: {type_or_spec}")
        if index is not None and index < 0:
            raise RuntimeError(f"Device index must not be negative, got {index}")
        if type_ == "cpu" and index not in (None, 0):
            raise RuntimeError(f"CPU device index must be 0, got {index}")
        self.type = type_
        self.index = None if type_ == "cpu" else index

    def __eq__(self, other):
        if other is self:  # the usual case: tensors share their device objects
            return True
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and self.type == other.type and self.index == other.index

    def __hash__(self):
        return hash((self.type, self.index))

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self):
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __reduce__(self):
        return (device, (self.type, self.index))

    def __enter__(self):
        """`with genesis.device(d):` makes `d` the default device of factory calls inside it."""
        _entered.append(_default_device)
        set_default_device(self)
        return self

    def __exit__(self, *exc):
        set_default_device(_entered.pop())


cpu = device("cpu")


_parsed = {}


def as_device(value):
    """Accept a device, a string such as "cuda:0", an int (a CUDA index) or None (the CPU)."""
    if value is None:
        return cpu
    if isinstance(value, device):
        return value
    if isinstance(value, str):
        parsed = _parsed.get(value)
        if parsed is None:
            parsed = _parsed[value] = device(value)
        return parsed
    return device(value)


_default_device = None  # set_default_device's device; None is the CPU
_entered = []  # the default devices that `with device(...)` blocks replaced, innermost last


def set_default_device(device):
    """Make `device` the one factory functions (tensor, zeros, arange, randn...) use when they
    are given none; None restores the CPU."""
    global _default_device
    _default_device = None if device is None else as_device(device)


def get_default_device():
    """The device factory functions use when they are given none ("cuda" as the current CUDA
    device)."""
    return resolve(_default_device)


def factory_device(device):
    """A factory function's `device` argument, the default device when None."""
    return as_device(_default_device if device is None else device)


def factory_resolve(value):
    """`resolve(factory_device(value))`: a factory function's `device` argument as a concrete
    device, in one step (every new tensor asks)."""
    if value is None:
        value = _default_device
    dev = _parsed.get(value) if value.__class__ is str else None
    if dev is None:
        dev = as_device(value)
    if dev.index is None and dev.type == "cuda":
        return _cuda_devices[_current_cuda_device()]
    return dev


def resolve(dev):
    """A concrete device: "cuda" without an index becomes the current CUDA device."""
    dev = as_device(dev)
    if dev.type == "cuda" and dev.index is None:
        return _cuda_devices[_current_cuda_device()]
    return dev


def _current_cuda_device():
    """The index of the current CUDA device. genesis.cuda replaces this function when it is
    imported (`set_current_cuda_device`); until then no CUDA support is loaded."""
    raise RuntimeError("device('cuda'): no CUDA support is loaded (import genesis.cuda)")


def set_current_cuda_device(fn):
    """Make `fn()` the source of the current CUDA device's index; the package that owns the CUDA
    runtime sets it, so this layer never imports that package."""
    global _current_cuda_device
    _current_cuda_device = fn


class _CudaDevices(dict):
    """device("cuda", i) objects, made once per index."""

    def __missing__(self, index):
        self[index] = device("cuda", index)
        return self[index]


_cuda_devices = _CudaDevices()
