"""CUDA C++ kernels from source, compiled by NVRTC and launched through the driver API.

`RawKernel(source, name, options)` is CuPy's RawKernel for Genesis: the source is compiled for
the device's architecture by `cuda.bindings.nvrtc` (CUBIN when this NVRTC knows the architecture,
PTX for the newest one it knows below it otherwise, which the driver then compiles), loaded with
cuModuleLoadData on each device that launches it, and launched on the current stream.

`name` is looked up as an NVRTC name expression, so it can be an `extern "C"` kernel (`"add"`) or
a template instance (`"scale<float>"`); NVRTC instantiates the template and reports its mangled
name.

Compiled images are cached in the process and on disk under
`$GENESIS_KERNEL_CACHE_DIR/nvrtc` (default: Triton's cache directory, `~/.triton/cache`), keyed by
source, name, options, architecture, and the NVRTC and driver versions.

Arguments are packed as CuPy packs them:
  - a CUDA tensor (or CUDAArray) passes its data pointer (`T*` in the kernel);
  - a Python bool, int, float and complex pass a `bool`, `long long`, `double` and
    `cuDoubleComplex`;
  - a numpy scalar, or a numpy array of one element, passes its own type by value.
Nothing checks the arguments against the kernel's parameters (NVRTC does not report them): the
caller passes what the kernel declares, as with CuPy. A `float` parameter given a Python float
reads half of a double: pass `numpy.float32(v)` (and `numpy.int32(n)` for an `int`).

Launches go on the current stream (or `stream=`), so a CUDA graph can capture them; launch once
before capturing, so that the module is loaded outside the capture (a first launch inside one
raises CaptureError: loading a module would break it).
"""

import ctypes
import hashlib
import json
import os
import struct
import threading
from dataclasses import dataclass

import numpy as np

from .runtime import driver, graphs
from .runtime.array import CUDAArray

_STATIC_SHARED_LIMIT = 48 << 10  # dynamic shared memory past this needs an opt-in per function
_DOUBLE = struct.Struct("<d")
_DOUBLE_COMPLEX = struct.Struct("<dd")

_programs = {}
_lock = threading.Lock()


class NVRTCError(RuntimeError):
    """NVRTC could not compile a kernel; the message holds the kernel's name and NVRTC's log."""


@dataclass(frozen=True)
class Program:
    """A compiled kernel image: `image` is CUBIN (`format` "cubin") or NUL-terminated PTX."""

    name: str
    lowered_name: str
    format: str
    arch_option: str
    image: bytes
    log: str


def _nvrtc():
    try:
        from cuda.bindings import nvrtc
    except ImportError as e:
        raise driver.CudaUnavailable(
            f"genesis: compiling CUDA C++ needs the 'cuda' extra (pip install 'genesis[cuda]'): "
            f"{e}") from None
    return nvrtc


def _check(nvrtc, result, call):
    err, *values = result
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise NVRTCError(f"{call}: {nvrtc.nvrtcGetErrorString(err)[1].decode()}")
    return values[0] if len(values) == 1 else tuple(values)


def nvrtc_version():
    nvrtc = _nvrtc()
    return _check(nvrtc, nvrtc.nvrtcVersion(), "nvrtcVersion")


def supported_archs():
    """The SM versions this NVRTC emits CUBIN for, e.g. [75, 80, ..., 90, ...]."""
    nvrtc = _nvrtc()
    return list(_check(nvrtc, nvrtc.nvrtcGetSupportedArchs(), "nvrtcGetSupportedArchs"))


def arch_option(arch):
    """(option, format) for SM version `arch` (90 for compute capability 9.0): CUBIN for an
    architecture NVRTC knows, else PTX for the newest one below it (the driver JIT-compiles it)."""
    known = supported_archs()
    if arch in known:
        return f"--gpu-architecture=sm_{arch}", "cubin"
    older = [a for a in known if a <= arch]
    if not older:
        raise NVRTCError(f"NVRTC {nvrtc_version()} cannot compile for sm_{arch} (it knows "
                         f"{known})")
    return f"--gpu-architecture=compute_{max(older)}", "ptx"


def _user_arch(options):
    """(option, format) when `options` choose the architecture themselves, else None."""
    for opt in options:
        flag, _, value = opt.partition("=")
        if flag in ("-arch", "--gpu-architecture"):
            return opt, "cubin" if value.startswith("sm_") else "ptx"
    return None


def cache_dir():
    """Where compiled kernels are kept: GENESIS_KERNEL_CACHE_DIR, else Triton's cache directory
    (TRITON_CACHE_DIR, else ~/.triton/cache), under nvrtc/."""
    root = os.environ.get("GENESIS_KERNEL_CACHE_DIR") or os.environ.get("TRITON_CACHE_DIR")
    if not root:
        home = os.environ.get("TRITON_HOME") or os.path.expanduser("~")
        root = os.path.join(home, ".triton", "cache")
    return os.path.join(root, "nvrtc")


def cache_key(source, name, options, arch, driver_version=None):
    text = json.dumps([source, name, list(options), arch, list(nvrtc_version()), driver_version])
    return hashlib.sha256(text.encode()).hexdigest()


def compile_program(source, name, options=(), *, arch, driver_version=None):
    """The compiled image of kernel `name` in `source` for SM version `arch`, from the process's
    cache, the disk cache, or NVRTC (then stored in both). Needs no GPU."""
    options = _as_options(options)
    key = cache_key(source, name, options, arch, driver_version)
    program = _programs.get(key)
    if program is None:
        with _lock:
            program = _programs.get(key)
            if program is None:
                program = _load_cached(key)
                if program is None:
                    program = _compile(source, name, options, arch)
                    _store(key, program)
                _programs[key] = program
    return program


def _as_options(options):
    if isinstance(options, str):
        return (options,)
    options = tuple(options)
    for opt in options:
        if not isinstance(opt, str):
            raise TypeError(f"compile_kernel: options must be strings, got {opt!r}")
    return options


def _compile(source, name, options, arch):
    nvrtc = _nvrtc()
    chosen = _user_arch(options)
    arch_opt, fmt = chosen or arch_option(arch)
    flags = list(options) if chosen else [arch_opt, *options]
    prog = _check(nvrtc, nvrtc.nvrtcCreateProgram(source.encode(), f"{name}.cu".encode(), 0, [],
                                                  []), "nvrtcCreateProgram")
    try:
        _check(nvrtc, nvrtc.nvrtcAddNameExpression(prog, name.encode()), "nvrtcAddNameExpression")
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(flags), [f.encode() for f in flags])
        log = _program_log(nvrtc, prog)
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise NVRTCError(f"compile_kernel: NVRTC could not compile kernel '{name}' "
                             f"({' '.join(flags)}):\n{log}")
        lowered = _check(nvrtc, nvrtc.nvrtcGetLoweredName(prog, name.encode()),
                         "nvrtcGetLoweredName").decode()
        image = _image(nvrtc, prog, fmt)
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
    return Program(name, lowered, fmt, arch_opt, image, log)


def _program_log(nvrtc, prog):
    size = _check(nvrtc, nvrtc.nvrtcGetProgramLogSize(prog), "nvrtcGetProgramLogSize")
    log = bytearray(size)  # NVRTC writes into it: never a bytes object (CPython shares those)
    _check(nvrtc, nvrtc.nvrtcGetProgramLog(prog, log), "nvrtcGetProgramLog")
    return log.rstrip(b"\0").decode(errors="replace").strip()


def _image(nvrtc, prog, fmt):
    get_size, get = ((nvrtc.nvrtcGetCUBINSize, nvrtc.nvrtcGetCUBIN) if fmt == "cubin" else
                     (nvrtc.nvrtcGetPTXSize, nvrtc.nvrtcGetPTX))
    size = _check(nvrtc, get_size(prog), get_size.__name__)
    image = bytearray(size)
    _check(nvrtc, get(prog, image), get.__name__)
    return bytes(image)


def _paths(key):
    base = os.path.join(cache_dir(), key)
    return base + ".json", base + ".bin"


def _load_cached(key):
    """The program stored under `key`, or None (absent, or unreadable: it is then recompiled)."""
    meta_path, image_path = _paths(key)
    try:
        with open(meta_path) as f:
            meta = json.load(f)
        with open(image_path, "rb") as f:
            image = f.read()
    except (OSError, ValueError):
        return None
    return Program(image=image, **meta)


def _store(key, program):
    """Write the image, then its metadata (a reader finds the metadata only once both are
    complete); each goes through a temporary file and a rename, so readers never see half."""
    meta_path, image_path = _paths(key)
    meta = {k: getattr(program, k) for k in ("name", "lowered_name", "format", "arch_option",
                                             "log")}
    try:
        os.makedirs(os.path.dirname(meta_path), exist_ok=True)
        _write_atomic(image_path, program.image)
        _write_atomic(meta_path, json.dumps(meta).encode())
    except OSError:
        pass  # an unwritable cache only costs a recompile in the next process


def _write_atomic(path, data):
    tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def clear_memory_cache():
    """Forget the programs compiled in this process (the disk cache stays)."""
    _programs.clear()


def dim3(value, what):
    """(x, y, z) from an int or a tuple of one to three ints."""
    dims = tuple(value) if isinstance(value, (tuple, list)) else (value,)
    if not 1 <= len(dims) <= 3 or not all(isinstance(d, (int, np.integer)) and d >= 1
                                          for d in dims):
        raise ValueError(f"RawKernel: {what} must be a positive int or a tuple of 1 to 3 positive "
                         f"ints, got {value!r}")
    return tuple(int(d) for d in dims) + (1,) * (3 - len(dims))


def argument_bytes(arg, index, device, kernel):
    """(bytes, alignment) of the value launch argument `index` passes (see the module
    docstring)."""
    if arg.__class__ is CUDAArray:
        return _pointer(arg.ptr, arg.device, index, device, kernel), 8
    if isinstance(arg, bool):
        return (b"\1" if arg else b"\0"), 1
    if isinstance(arg, int):
        try:
            return arg.to_bytes(8, "little", signed=True), 8
        except OverflowError:
            raise OverflowError(f"RawKernel '{kernel}': argument {index} ({arg}) does not fit a "
                                f"long long; pass a numpy scalar of the parameter's type") from None
    if isinstance(arg, float):
        return _DOUBLE.pack(arg), 8
    if isinstance(arg, complex):
        return _DOUBLE_COMPLEX.pack(arg.real, arg.imag), 16
    if isinstance(arg, np.generic) or isinstance(arg, np.ndarray) and arg.size == 1:
        return arg.tobytes(), arg.dtype.alignment
    where = getattr(arg, "device", None)
    if where is not None and callable(getattr(arg, "data_ptr", None)):
        if where.type != "cuda":
            raise TypeError(f"RawKernel '{kernel}': argument {index} is a tensor on {where}; "
                            f"kernel arguments must be CUDA tensors")
        return _pointer(arg.data_ptr(), where.index, index, device, kernel), 8
    raise TypeError(f"RawKernel '{kernel}': argument {index} has unsupported type "
                    f"{type(arg).__name__} (expected a CUDA tensor, a Python or numpy scalar)")


def _pointer(ptr, on, index, device, kernel):
    if device is not None and on is not None and on != device:
        raise ValueError(f"RawKernel '{kernel}': argument {index} is on cuda:{on} but the kernel "
                         f"launches on cuda:{device}")
    return ptr.to_bytes(8, "little")


def pack_arguments(args, device=None, kernel="kernel"):
    """(params, buffer): the argument values laid out in `buffer` (a ctypes char array) at their
    natural alignment, and `params`, a ctypes array of their addresses (what cuLaunchKernel's
    kernelParams points to). Both must live until the launch call returns."""
    if not isinstance(args, (tuple, list)):
        raise TypeError(f"RawKernel '{kernel}': args must be a tuple or list, got "
                        f"{type(args).__name__}")
    chunks, offsets, end = [], [], 0
    for i, arg in enumerate(args):
        data, align = argument_bytes(arg, i, device, kernel)
        pad = -end % align
        chunks += [bytes(pad), data]
        offsets.append(end + pad)
        end += pad + len(data)
    buffer = ctypes.create_string_buffer(b"".join(chunks), max(end, 1))
    base = ctypes.addressof(buffer)
    params = (ctypes.c_uint64 * max(len(offsets), 1))(*[base + off for off in offsets])
    return params, buffer


class RawKernel:
    """A CUDA C++ kernel compiled by NVRTC: `kernel(grid, block, args, shared_mem=0,
    stream=None)` launches it on the current device (see the module docstring)."""

    def __init__(self, source, name, options=()):
        if not isinstance(source, str) or not isinstance(name, str):
            raise TypeError("compile_kernel: source and name must be strings")
        self.code, self.name, self.options = source, name, _as_options(options)
        self._functions = {}
        self._shared_opt_in = {}

    def program(self, device=None):
        """The compiled program for `device`'s architecture (the current device by default)."""
        from .runtime.device import get_context
        major, minor = get_context(device).properties.capability
        return compile_program(self.code, self.name, self.options, arch=major * 10 + minor,
                               driver_version=driver.driver_version())

    def function(self, device):
        """The kernel's CUfunction on `device`, loaded there on first use (device made active)."""
        function = self._functions.get(device)
        if function is None:
            graphs.check_not_capturing(
                f"loading the NVRTC kernel {self.name} on cuda:{device} (launch it once before "
                "capturing, to load it)")
            program = self.program(device)
            module = driver.module_load_data(program.image)
            function = self._functions[device] = driver.module_get_function(
                module, program.lowered_name)
        return function

    def __call__(self, grid, block, args, *, shared_mem=0, stream=None):
        from .runtime.device import activate, current_device
        from .runtime.stream import current_stream_handle
        device = current_device() if stream is None or isinstance(stream, int) \
            else stream.device_index
        activate(device)
        function = self.function(device)
        if shared_mem > self._shared_opt_in.get(device, _STATIC_SHARED_LIMIT):
            driver.function_set_max_dynamic_shared(function, shared_mem)
            self._shared_opt_in[device] = shared_mem
        handle = current_stream_handle(device) if stream is None else \
            getattr(stream, "cuda_stream", stream)
        params, _buffer = pack_arguments(args, device, self.name)
        driver.launch_kernel(function, dim3(grid, "grid"), dim3(block, "block"), shared_mem,
                             handle, ctypes.addressof(params))

    def __repr__(self):
        return f"RawKernel(name={self.name!r}, options={self.options!r})"


def compile_kernel(source, name, options=()):
    """Compile kernel `name` from CUDA C++ `source` for the current device now (a compile error
    raises NVRTCError with NVRTC's log) and return it as a launchable RawKernel."""
    kernel = RawKernel(source, name, options)
    kernel.program()
    return kernel
