"""`import genesis` loads no torch, no Triton and no CUDA library, and works without them.

Genesis's own CUDA runtime modules are plain Python and may be imported; what must stay unloaded
are the third-party packages (torch, triton, cuda-bindings' `cuda`, nvidia wheels) and any CUDA
shared library in the process.
"""

import json
import subprocess
import sys

FORBIDDEN = ("torch", "triton", "cuda", "nvidia")

PROBE = """
import json, os, sys
before = set(sys.modules)
import genesis
x = genesis.randn(3, 4, requires_grad=True)
(genesis.gelu(x) * 2).sum().backward()
repr(x.grad)
maps = open("/proc/self/maps").read() if os.path.exists("/proc/self/maps") else ""
print(json.dumps({
    "modules": sorted(set(sys.modules) - before),
    "libraries": sorted({line.split()[-1] for line in maps.splitlines()
                         if "libcuda" in line or "libnvrtc" in line or "libnvidia" in line}),
    "cuda_available": genesis.cuda.is_available() if hasattr(genesis, "cuda") else None,
}))
"""

BLOCKER = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {forbidden}:
            raise ImportError("blocked: " + name)
sys.meta_path.insert(0, Block())
"""


def _run(code):
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def _offending(modules):
    return [m for m in modules if m.split(".")[0] in FORBIDDEN]


def test_import_loads_no_torch_or_cuda():
    result = _run(PROBE)
    assert _offending(result["modules"]) == []
    assert result["libraries"] == []


def test_import_works_when_torch_and_cuda_are_missing():
    result = _run(BLOCKER.format(forbidden=set(FORBIDDEN)) + PROBE)
    assert _offending(result["modules"]) == []
    assert result["cuda_available"] in (False, None)
