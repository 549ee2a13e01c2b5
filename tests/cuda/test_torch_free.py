"""The GPU path never imports torch: a GPU workload runs where importing torch fails."""

import subprocess
import sys
import textwrap

from helpers import skip_no_cuda

pytestmark = skip_no_cuda

SCRIPT = textwrap.dedent("""
    import sys

    class BlockTorch:
        def find_spec(self, name, path=None, target=None):
            if name == "torch" or name.startswith("torch."):
                raise ImportError("torch is blocked in this test")
            return None

    sys.meta_path.insert(0, BlockTorch())
    import numpy as np
    import genesis

    host = (np.arange(100000) % 256).astype(np.float32)  # exact in bfloat16
    x = genesis.tensor(host, device="cuda")
    y = x.t() if x.ndim == 2 else x
    z = y.to(genesis.bfloat16).to(genesis.float64)
    w = genesis.zeros(7, 9, device="cuda").t().contiguous()
    s = genesis.cuda.Stream()
    with genesis.cuda.stream(s):
        v = genesis.ones(1000, device="cuda", dtype=genesis.int64)
    s.synchronize()
    assert np.array_equal(z.cpu().numpy(), host.astype(np.float64))
    assert w.shape == (9, 7) and int(v.cpu().numpy().sum()) == 1000
    assert not [m for m in sys.modules if m == "torch" or m.startswith("torch.")]
    print("TORCH-FREE OK")
""")


def test_gpu_workload_runs_without_torch():
    result = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "TORCH-FREE OK" in result.stdout
