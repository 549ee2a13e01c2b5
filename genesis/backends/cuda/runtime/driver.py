"""A thin, checked layer over the CUDA driver API (`cuda.bindings.driver`).

Every call goes through `check`, which turns a non-success CUresult into `CudaError` (or
`DriverOutOfMemory` for CUDA_ERROR_OUT_OF_MEMORY). Handles are plain ints wherever the rest of
Genesis and Triton need them. The module imports cuda-bindings lazily: importing it never loads
libcuda; `load()` does, once, and raises `CudaUnavailable` saying what is missing.
"""

import threading

_lock = threading.Lock()
_cu = None
_init_error = None  # why cuInit failed, once it has


class CudaUnavailable(RuntimeError):
    """CUDA cannot be used here: no cuda-bindings package, no driver or no device."""


class AcceleratorError(RuntimeError):
    """Exception raised while executing on device (torch.AcceleratorError's place)."""


class CudaError(AcceleratorError):
    """A CUDA driver call failed; the message names the call and the driver's error."""


class DriverOutOfMemory(CudaError):
    """cuMemAlloc found no room on the device."""


def load():
    """The initialised `cuda.bindings.driver` module (cuInit done once)."""
    global _cu, _init_error
    if _cu is not None:
        return _cu
    with _lock:
        if _cu is None:
            if _init_error is not None:  # a fresh error: a kept one would keep its raisers'
                raise CudaUnavailable(_init_error)  # frames alive through its traceback
            _cu = _initialise()
    return _cu


def _initialise():
    global _init_error
    try:
        from cuda.bindings import driver as cu
    except ImportError as e:
        _init_error = (f"genesis: CUDA support needs the 'cuda' extra (pip install "
                       f"'genesis[cuda]'): {e}")
        raise CudaUnavailable(_init_error) from None
    try:
        (err,) = cu.cuInit(0)
    except Exception as e:  # the bindings raise when libcuda.so itself cannot be loaded
        _init_error = f"genesis: no NVIDIA driver found (libcuda): {e}"
        raise CudaUnavailable(_init_error) from None
    if err != cu.CUresult.CUDA_SUCCESS:
        _init_error = f"genesis: cuInit failed: {_error_text(cu, err)}"
        raise CudaUnavailable(_init_error)
    return cu


def _error_text(cu, err):
    name = cu.cuGetErrorName(err)[1]
    text = cu.cuGetErrorString(err)[1]
    decode = lambda b: b.decode() if isinstance(b, bytes) else str(b)  # noqa: E731
    return f"{decode(name)} ({decode(text)})"


def check(result, call):
    """Unpack a cuda-bindings result tuple; raise on error. Returns the value(s) after the code."""
    err, *values = result
    cu = _cu
    if err != cu.CUresult.CUDA_SUCCESS:
        if err == cu.CUresult.CUDA_ERROR_OUT_OF_MEMORY:
            raise DriverOutOfMemory(f"{call}: {_error_text(cu, err)}")
        raise CudaError(f"{call}: {_error_text(cu, err)}")
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


def is_available():
    try:
        return device_count() > 0
    except CudaUnavailable:
        return False


def device_count():
    """Number of visible devices (the driver applies CUDA_VISIBLE_DEVICES itself)."""
    cu = load()
    return check(cu.cuDeviceGetCount(), "cuDeviceGetCount")


def device_handle(index):
    cu = load()
    return check(cu.cuDeviceGet(index), f"cuDeviceGet({index})")


def retain_primary_context(index):
    """The device's primary context (the one PyTorch and Triton use too), made current."""
    cu = load()
    ctx = check(cu.cuDevicePrimaryCtxRetain(device_handle(index)), "cuDevicePrimaryCtxRetain")
    check(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    return ctx


def set_current_context(ctx):
    check(_cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")


def _device_string(call, length, index):
    """The NUL-terminated string driver call `call` writes for device `index`."""
    raw = check(getattr(load(), call)(length, device_handle(index)), call)
    return raw.split(b"\0", 1)[0].decode()


def device_name(index):
    return _device_string("cuDeviceGetName", 256, index)


def device_attribute(index, name):
    cu = load()
    attr = getattr(cu.CUdevice_attribute, "CU_DEVICE_ATTRIBUTE_" + name)
    return check(cu.cuDeviceGetAttribute(attr, device_handle(index)), f"cuDeviceGetAttribute({name})")


def device_pci_bus_id(index):
    """The device's PCI bus id, "0000:3B:00.0": how NVML finds the device CUDA numbers `index`."""
    return _device_string("cuDeviceGetPCIBusId", 32, index)


def can_access_peer(index, peer):
    """Whether device `index` can read and write device `peer`'s memory directly."""
    cu = load()
    return bool(check(cu.cuDeviceCanAccessPeer(device_handle(index), device_handle(peer)),
                      "cuDeviceCanAccessPeer"))


def total_memory(index):
    cu = load()
    return check(cu.cuDeviceTotalMem(device_handle(index)), "cuDeviceTotalMem")


def mem_get_info():
    """(free, total) bytes of the current context's device."""
    return check(_cu.cuMemGetInfo(), "cuMemGetInfo")


def mem_alloc(nbytes):
    return int(check(_cu.cuMemAlloc(nbytes), f"cuMemAlloc({nbytes})"))


def mem_free(ptr):
    check(_cu.cuMemFree(ptr), "cuMemFree")


def host_alloc_pinned(nbytes):
    """Page-locked host memory (for async copies); returns its address."""
    return int(check(_cu.cuMemHostAlloc(nbytes, 0), f"cuMemHostAlloc({nbytes})"))


def host_free_pinned(ptr):
    check(_cu.cuMemFreeHost(ptr), "cuMemFreeHost")


def memcpy_htod(dst, src_host_ptr, nbytes, stream):
    check(_cu.cuMemcpyHtoDAsync(dst, src_host_ptr, nbytes, stream), "cuMemcpyHtoDAsync")


def memcpy_dtoh(dst_host_ptr, src, nbytes, stream):
    check(_cu.cuMemcpyDtoHAsync(dst_host_ptr, src, nbytes, stream), "cuMemcpyDtoHAsync")


def memcpy_dtod(dst, src, nbytes, stream):
    check(_cu.cuMemcpyDtoDAsync(dst, src, nbytes, stream), "cuMemcpyDtoDAsync")


def memset_d8(dst, value, nbytes, stream):
    check(_cu.cuMemsetD8Async(dst, value, nbytes, stream), "cuMemsetD8Async")


def stream_create(non_blocking=True, priority=0):
    flags = _cu.CUstream_flags.CU_STREAM_NON_BLOCKING if non_blocking else \
        _cu.CUstream_flags.CU_STREAM_DEFAULT
    return int(check(_cu.cuStreamCreateWithPriority(flags, priority), "cuStreamCreateWithPriority"))


def stream_destroy(stream):
    check(_cu.cuStreamDestroy(stream), "cuStreamDestroy")


def stream_priority(stream):
    return check(_cu.cuStreamGetPriority(stream), "cuStreamGetPriority")


def stream_synchronize(stream):
    check(_cu.cuStreamSynchronize(stream), "cuStreamSynchronize")


def stream_query(stream):
    """True when all work on `stream` is done."""
    err = _cu.cuStreamQuery(stream)[0]
    if err == _cu.CUresult.CUDA_ERROR_NOT_READY:
        return False
    check((err,), "cuStreamQuery")
    return True


def stream_wait_event(stream, event):
    check(_cu.cuStreamWaitEvent(stream, event, 0), "cuStreamWaitEvent")


def stream_priority_range():
    """(least, greatest) priority; numerically lower is higher priority."""
    return check(_cu.cuCtxGetStreamPriorityRange(), "cuCtxGetStreamPriorityRange")


def event_create(enable_timing=False, blocking=False):
    flags = 0 if enable_timing else int(_cu.CUevent_flags.CU_EVENT_DISABLE_TIMING)
    if blocking:
        flags |= int(_cu.CUevent_flags.CU_EVENT_BLOCKING_SYNC)
    return int(check(_cu.cuEventCreate(flags), "cuEventCreate"))


def event_destroy(event):
    check(_cu.cuEventDestroy(event), "cuEventDestroy")


def event_record(event, stream):
    check(_cu.cuEventRecord(event, stream), "cuEventRecord")


def event_query(event):
    err = _cu.cuEventQuery(event)[0]
    if err == _cu.CUresult.CUDA_ERROR_NOT_READY:
        return False
    check((err,), "cuEventQuery")
    return True


def event_synchronize(event):
    check(_cu.cuEventSynchronize(event), "cuEventSynchronize")


def event_elapsed_ms(start, end):
    return check(_cu.cuEventElapsedTime(start, end), "cuEventElapsedTime")


def context_synchronize():
    check(_cu.cuCtxSynchronize(), "cuCtxSynchronize")


CAPTURE_MODES = ("global", "thread_local", "relaxed")  # CUstreamCaptureMode's order


_capturing = 0  # captures begun and not ended in this process


def stream_begin_capture(stream, mode="global"):
    """Start recording the work given to `stream` into a graph instead of running it."""
    global _capturing
    check(_cu.cuStreamBeginCapture(stream, _capture_mode(mode)), "cuStreamBeginCapture")
    _capturing += 1


def stream_end_capture(stream):
    """Stop recording on `stream`; returns the graph (an int handle)."""
    global _capturing
    _capturing -= 1
    return int(check(_cu.cuStreamEndCapture(stream), "cuStreamEndCapture"))


def stream_capture_info(stream):
    """(capturing, capture id) of `stream`; an invalidated capture counts as capturing."""
    status, capture_id = check(_cu.cuStreamGetCaptureInfo(stream), "cuStreamGetCaptureInfo")[:2]
    none = _cu.CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_NONE
    return status != none, int(capture_id)


def exchange_capture_mode(mode):
    """Set this thread's capture interaction mode; returns the previous one (a name)."""
    old = check(_cu.cuThreadExchangeStreamCaptureMode(_capture_mode(mode)),
                "cuThreadExchangeStreamCaptureMode")
    return CAPTURE_MODES[int(old)]


class relaxed_capture:
    """`with relaxed_capture():` lets this thread make calls that a capture in "global" or
    "thread_local" mode refuses as potentially unsafe (allocations), while one is under way."""

    def __enter__(self):
        self.previous = exchange_capture_mode("relaxed") if _capturing else None

    def __exit__(self, *exc):
        if self.previous is not None:
            exchange_capture_mode(self.previous)
        return False


def _capture_mode(mode):
    return _cu.CUstreamCaptureMode(CAPTURE_MODES.index(mode))


def graph_instantiate(graph):
    return int(check(_cu.cuGraphInstantiate(graph, 0), "cuGraphInstantiate"))


def graph_launch(graph_exec, stream):
    check(_cu.cuGraphLaunch(graph_exec, stream), "cuGraphLaunch")


def graph_exec_destroy(graph_exec):
    check(_cu.cuGraphExecDestroy(graph_exec), "cuGraphExecDestroy")


def graph_destroy(graph):
    check(_cu.cuGraphDestroy(graph), "cuGraphDestroy")


def graph_debug_dot_print(graph, path):
    check(_cu.cuGraphDebugDotPrint(graph, path.encode(), 0), "cuGraphDebugDotPrint")


def driver_version():
    """The driver's CUDA version as an int (13000 for 13.0)."""
    cu = load()
    return check(cu.cuDriverGetVersion(), "cuDriverGetVersion")


def module_load_data(image):
    """Load a CUBIN or NUL-terminated PTX image into the current context; returns the module."""
    return int(check(_cu.cuModuleLoadData(image), "cuModuleLoadData"))


def module_unload(module):
    check(_cu.cuModuleUnload(module), "cuModuleUnload")


def module_get_function(module, name):
    return int(check(_cu.cuModuleGetFunction(module, name.encode()),
                     f"cuModuleGetFunction({name})"))


def function_set_max_dynamic_shared(function, nbytes):
    """Let `function` take `nbytes` of dynamic shared memory (past the default cap of 48 KiB)."""
    attr = _cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    check(_cu.cuFuncSetAttribute(function, attr, nbytes), "cuFuncSetAttribute")


def launch_kernel(function, grid, block, shared_mem, stream, params):
    """cuLaunchKernel on `grid` and `block` (3-tuples); `params` is the address of an array of
    pointers to the argument values (the driver copies them before it returns)."""
    check(_cu.cuLaunchKernel(function, *grid, *block, shared_mem, stream, params, 0),
          "cuLaunchKernel")


class AllocatorDriver:
    """The driver operations the caching allocator needs, for one device's context."""

    DriverOutOfMemory = DriverOutOfMemory

    def __init__(self, context):
        self._context = context

    def _current(self):
        set_current_context(self._context)

    def mem_alloc(self, nbytes):
        self._current()
        with relaxed_capture():  # cuMemAlloc is safe in a capture: the graph never frees it
            return mem_alloc(nbytes)

    def mem_free(self, ptr):
        self._current()
        mem_free(ptr)

    def mem_get_info(self):
        self._current()
        return mem_get_info()

    def event_create(self):
        return event_create()

    def event_record(self, event, stream):
        event_record(event, stream)

    def event_query(self, event):
        return event_query(event)

    def event_synchronize(self, event):
        event_synchronize(event)

    def event_destroy(self, event):
        event_destroy(event)

    def stream_capture_info(self, stream):
        return stream_capture_info(stream)
