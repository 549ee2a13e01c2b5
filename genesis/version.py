"""genesis.version, as torch.version: the package version and the CUDA version of its GPU path.

`cuda` is the CUDA release of the installed `cuda-bindings` ("13.0"), the bindings Genesis drives
the GPU through, or None where the GPU path is not installed. Genesis has no HIP path and no
debug build.
"""

import importlib.metadata

__version__ = "0.1.0"
debug = False
hip = None


def _cuda_release():
    try:
        major, minor = importlib.metadata.version("cuda-bindings").split(".")[:2]
    except importlib.metadata.PackageNotFoundError:
        return None
    return f"{major}.{minor}"


cuda = _cuda_release()
