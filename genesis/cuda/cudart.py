"""`genesis.cuda.cudart()`: the CUDA runtime calls scripts make through torch.cuda.cudart() (the
profiler started and stopped around a region for Nsight Systems, error strings, pinning host
memory), over cuda-bindings' runtime module. Each call returns its cudaError code as an int,
as PyTorch's do; `check_error` turns a failure into an exception."""

from ..backends.cuda.runtime.driver import CudaError


class cudaStatus:
    """PyTorch's two named cudaError codes (ERROR_NOT_READY has CUDA's pre-10 number)."""

    SUCCESS = 0
    ERROR_NOT_READY = 34


def _runtime():
    from cuda.bindings import runtime
    return runtime


def _code(result):
    return int(result[0])


class CudaRuntimeAPI:
    """What `cudart()` returns: the runtime calls Genesis offers, with PyTorch's names."""

    class cudaError:
        success = 0

    @staticmethod
    def cudaGetErrorString(code):
        runtime = _runtime()
        try:
            error = runtime.cudaError_t(int(code))
        except ValueError:
            return "unrecognized error code"
        return runtime.cudaGetErrorString(error)[1].decode()

    @staticmethod
    def cudaProfilerStart():
        return _code(_runtime().cudaProfilerStart())

    @staticmethod
    def cudaProfilerStop():
        return _code(_runtime().cudaProfilerStop())

    @staticmethod
    def cudaHostRegister(ptr, size, flags):
        return _code(_runtime().cudaHostRegister(ptr, size, flags))

    @staticmethod
    def cudaHostUnregister(ptr):
        return _code(_runtime().cudaHostUnregister(ptr))

    @staticmethod
    def cudaMemGetInfo(device):
        from . import mem_get_info
        return mem_get_info(device)


_api = CudaRuntimeAPI()


def cudart():
    """The CUDA runtime calls (see CudaRuntimeAPI), after initialising CUDA."""
    from . import init
    init()
    return _api


def check_error(res):
    """Raise CudaError, naming the error, when runtime call result `res` is not success."""
    if res != CudaRuntimeAPI.cudaError.success:
        raise CudaError(f"{CudaRuntimeAPI.cudaGetErrorString(res)} ({res})")
