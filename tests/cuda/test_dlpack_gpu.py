"""DLPack on the GPU: zero-copy exchange with PyTorch and CuPy, both ways."""

import numpy as np
import pytest

import genesis
from helpers import skip_no_cuda

pytestmark = skip_no_cuda
torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("torch without CUDA", allow_module_level=True)


@pytest.mark.parametrize("dtype", [genesis.float32, genesis.bfloat16, genesis.int64, genesis.bool],
                         ids=str)
def test_genesis_to_torch_shares_memory(dtype, rng):
    host = (rng.standard_normal((5, 7)) > 0) if dtype is genesis.bool else \
        rng.standard_normal((5, 7)).astype(dtype.numpy_dtype)
    g = genesis.tensor(host, device="cuda").t()
    t = torch.from_dlpack(g)
    assert t.is_cuda and t.data_ptr() == g.data_ptr() and t.stride() == g.stride()
    expected = torch.from_numpy(np.ascontiguousarray(host.T).astype(np.float32)).to(t.dtype)
    assert torch.equal(t.cpu(), expected)
    t.zero_()
    assert not g.cpu().numpy().astype(np.float32).any()


def test_torch_to_genesis_shares_memory_and_outlives_the_producer():
    t = torch.arange(12, dtype=torch.float32, device="cuda").reshape(3, 4)[:, 1:]
    g = genesis.from_dlpack(t)
    assert g.device == genesis.device("cuda", 0) and g.shape == (3, 3)
    assert g.data_ptr() == t.data_ptr() and g.stride() == t.stride()
    t.add_(100)
    torch.cuda.synchronize()
    np.testing.assert_array_equal(g.cpu().numpy(), t.cpu().numpy())
    del t
    assert g.cpu().numpy()[0, 0] == 101.0


def test_round_trip_through_cupy():
    cupy = pytest.importorskip("cupy")
    g = genesis.tensor(np.arange(10, dtype=np.int32), device="cuda")
    c = cupy.from_dlpack(g)
    c *= 3
    back = genesis.from_dlpack(c)
    genesis.cuda.synchronize()
    np.testing.assert_array_equal(back.cpu().numpy(), np.arange(10) * 3)
    assert back.data_ptr() == g.data_ptr()
