"""The CUDA softmax's kept launches (kernels/softmax.py): a call whose geometry was seen before
launches the kept kernel and arguments with its own addresses; those must be what a launch
planned afresh for its arrays passes. Checked on the host: arrays in host memory, the bound
kernel replaced by a recorder of its specialization and launches."""

import numpy as np
import pytest
import triton_interpret as ti

from genesis.backends.cuda.launch import Const, constant_suffix

pytest.importorskip("triton")


class _Recorder:
    """Stands in for launch.get_kernel: each bound kernel records its specialization and
    every launch (grid, stream, arguments)."""

    def __init__(self):
        self.launches = []

    def __call__(self, fn, signature, constexprs=None, aligned=(), num_warps=4, num_stages=3,
                 device=0, pdl=False):
        recorder = self

        class Bound:
            n_args = constant_suffix(signature)
            spec = (tuple(signature.items()), tuple(sorted((constexprs or {}).items())),
                    tuple(aligned), num_warps)

            def __call__(self, grid, stream, *args):
                args = tuple(("Const", a.value) if isinstance(a, Const) else a for a in args)
                recorder.launches.append((self.spec, tuple(grid), stream, args))

        return Bound()


def _layouts(rng, shape):
    """Arrays of `shape`: contiguous, permuted, sliced, and contiguous one element past a
    16-byte boundary (another alignment, so another specialization)."""
    x = rng.standard_normal(shape).astype(np.float32)
    storage = ti.to_device(np.concatenate([[0.0], x.ravel()]).astype(np.float32))
    arrays = {"contiguous": ti.to_device(x),
              "misaligned": ti.view(storage, shape, tuple(s // 4 for s in x.strides), 1)}
    if shape:
        wide = np.repeat(x, 2, axis=-1)
        arrays["permuted"] = ti.to_device(x, transpose=True)
        arrays["sliced"] = ti.view(ti.to_device(wide), shape,
                                   tuple(s // 4 for s in wide[..., ::2].strides))
    return arrays


@pytest.mark.parametrize("op", ["softmax", "log_softmax", "softmax_backward",
                                "log_softmax_backward"])
@pytest.mark.parametrize("shape,dim", [((10, 1000), 1), ((10, 1000), 0), ((4, 3, 5), 1),
                                       ((7,), 0), ((), 0)], ids=str)
def test_kept_launch_passes_what_a_fresh_plan_would(op, shape, dim, rng, monkeypatch):
    """Each layout twice, on arrays of their own: the first round plans and keeps its launches,
    the second (other addresses, same geometries) reuses them; all launch as a fresh plan does."""
    from genesis.backends.cuda.kernels import softmax as sm
    backward, log = op.endswith("_backward"), op.startswith("log")
    recorder = _Recorder()
    with ti.device(sm):
        monkeypatch.setattr(sm, "_launches", type(sm._launches)())
        with monkeypatch.context() as m:
            m.setattr("genesis.backends.cuda.launch.get_kernel", recorder)
            planned = None
            for _ in range(2):
                xs, ys = _layouts(rng, shape), _layouts(rng, shape)
                for layout, x in xs.items():
                    y = ys[layout] if backward else None
                    out = getattr(sm, op)(*((x, y) if backward else (x,)), dim)
                    kept = recorder.launches[-1]
                    assert kept[3][0] == x.ptr and kept[3][2] == out.ptr
                    launch, dims = sm._plan(x, y, out, (dim,) if shape else (), backward, log)
                    sm._softmax_launch(launch, dims, 0, x, y, out)
                    assert kept == recorder.launches[-1], layout
                assert planned in (None, len(sm._launches)), "the second round plans nothing"
                planned = len(sm._launches)
