"""Backend names and which of them this installation can run (PyTorch's `dist.Backend` and
`dist.is_*_available`). Availability is read from installed packages, never by importing them."""

import importlib.util


class Backend(str):
    """The backend names, lower case: `Backend("NCCL")` returns "nccl", an unknown name comes
    back lowered, as in PyTorch. Genesis runs "nccl" (CUDA tensors), "gloo" and "mpi" (CPU
    tensors)."""

    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    UCC = "ucc"
    MPI = "mpi"
    XCCL = "xccl"
    FAKE = "fake"

    backend_list = [UNDEFINED, GLOO, NCCL, XCCL, UCC, MPI, FAKE]
    default_device_backend_map = {"cpu": GLOO, "cuda": NCCL}
    backend_capability = {GLOO: ["cpu"], NCCL: ["cuda"], MPI: ["cpu"]}

    def __new__(cls, name):
        if not isinstance(name, str):
            raise ValueError("Backend constructor parameter must be string-ish")
        known = name.upper() in _NAMES and name.upper() != "UNDEFINED"
        return getattr(Backend, name.upper()) if known else name.lower()


_NAMES = ("UNDEFINED", "GLOO", "NCCL", "UCC", "MPI", "XCCL", "FAKE")


def is_mpi_available():
    """True where mpi4py is installed (the "mpi" backend's binding)."""
    return importlib.util.find_spec("mpi4py") is not None


def is_nccl_available():
    """True where nccl4py is installed (the "nccl" backend's binding)."""
    return importlib.util.find_spec("nccl") is not None


def is_gloo_available():
    """Always True: genesis's gloo backend is pure Python over sockets."""
    return True


def is_ucc_available():
    return False


def is_xccl_available():
    return False


_AVAILABLE = {"mpi": is_mpi_available, "nccl": is_nccl_available, "gloo": is_gloo_available,
              "ucc": is_ucc_available, "xccl": is_xccl_available}


def is_backend_available(backend):
    """Whether `backend` ("nccl", "gloo", "mpi", or "cpu:gloo,cuda:nccl" device by device)
    can run."""
    if ":" in backend:
        names = [part.split(":", 1)[-1] for part in backend.lower().split(",")]
        return all(_one_available(name) for name in names)
    return _one_available(backend)


def _one_available(name):
    name = str(name).lower()
    return _AVAILABLE[name]() if name in _AVAILABLE else name in Backend.backend_list


def get_default_backend_for_device(device):
    """The backend collectives on `device`'s tensors use: "gloo" for cpu, "nccl" for cuda."""
    kind = device.split(":")[0] if isinstance(device, str) else device.type
    backend = Backend.default_device_backend_map.get(kind)
    if backend is None:
        raise ValueError(f"Default backend not registered for device : {device}")
    return backend
