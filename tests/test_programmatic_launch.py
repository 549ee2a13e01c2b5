"""Programmatic dependent launch (launch.Launch's `pdl`): which launches ask for it, that the
flag reaches the kernel's PDL parameter and the compile, that GENESIS_PDL=0 turns it off, and
that a kernel compiled for it waits for the previous grid. Checked without a GPU (sm_90
compiles, placeholder arrays)."""

import os
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

pytest.importorskip("triton")

from genesis.backends.cuda import launch  # noqa: E402
from genesis.backends.cuda.kernels import (decode_attention, gemv, residual_norm,  # noqa: E402
                                          rotary)
from genesis.backends.cuda.kernels import matmul as mm  # noqa: E402
from genesis.backends.cuda.kernels._strided_indexing import placeholder  # noqa: E402

BF16 = np.dtype(ml_dtypes.bfloat16)


def _norm_plan(rows):
    return residual_norm._plan(placeholder((rows, 2048), BF16))


def _gemv_plan(rows):
    strides = {"a": (2048, 1), "b": (1, 2048), "c": (3072, 1)}
    arrays = {"a": placeholder((rows, 2048), BF16), "b": placeholder((2048, 3072), BF16, (1, 2048)),
              "c": placeholder((rows, 3072), BF16)}
    problem = mm.Problem(rows, 3072, 2048, (), strides, arrays)
    return gemv.Plan(problem, gemv.config_space(problem)[0]).launch


def _decode_plan(batch):
    q = placeholder((batch, 32, 1, 64), BF16)
    k = placeholder((batch, 8, 384, 64), BF16)
    return decode_attention._Plan(q, k, k, None, None).split


def _rotary_cache_plan(batch):
    return rotary._cache_plan(placeholder((batch, 32, 1, 64), BF16),
                              placeholder((batch, 8, 1, 64), BF16))


PLANS = {"add_rms_norm": _norm_plan, "gemv": _gemv_plan, "decode_attention": _decode_plan,
         "rotary_cache_write": _rotary_cache_plan}


@pytest.mark.parametrize("kernel", sorted(PLANS))
def test_decode_kernels_ask_for_it_at_one_row_only(kernel):
    one, many = PLANS[kernel](1), PLANS[kernel](16)
    assert one.pdl is True and one.meta["PDL"] is True
    assert many.pdl is False and many.meta["PDL"] is False


def test_turned_off_everywhere_by_the_flag(monkeypatch):
    monkeypatch.setattr(launch, "PROGRAMMATIC_LAUNCH", False)
    plan = _norm_plan(1)
    assert plan.pdl is False and plan.meta["PDL"] is False


def test_environment_variable_sets_the_flag():
    code = "import genesis.backends.cuda.launch as l; print(l.PROGRAMMATIC_LAUNCH)"
    for value, expected in (("0", "False"), ("1", "True")):
        env = dict(os.environ, GENESIS_PDL=value)
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, check=True).stdout
        assert out.strip() == expected


def test_launch_passes_the_flag_to_the_compile(monkeypatch):
    seen = {}

    def fake_compile(*args):
        seen["pdl"] = args[-1]

    monkeypatch.setattr(launch, "compile_kernel", fake_compile)
    x = placeholder((1, 2048), BF16)
    plan = residual_norm._plan(x, target=object())
    residual_norm._launch(plan, residual_norm._row_geometry(x, x), 0, x, x,
                          placeholder((2048,), BF16), x, x, 1e-5)
    assert seen == {"pdl": True}


@pytest.mark.parametrize("pdl", [True, False])
def test_compiled_kernel_waits_for_the_previous_grid_only_with_pdl(pdl):
    from triton.backends.compiler import GPUTarget
    x = placeholder((1, 2048), BF16)
    plan = launch.Launch(residual_norm._add_rms_norm_kernel, (1,), {"BN": 2048}, 4, pdl=pdl)
    signature, constexprs, aligned, _ = plan.specialization(
        (x, x, x, x, x, 2048, 2048, 2048, 1e-5))
    compiled = launch.compile_kernel(plan.fn, signature, constexprs, aligned, 4, 1,
                                     GPUTarget("cuda", 90, 32), plan.pdl)
    assert compiled.metadata.launch_pdl is pdl
    assert ("griddepcontrol.wait" in compiled.asm["ptx"]) is pdl
