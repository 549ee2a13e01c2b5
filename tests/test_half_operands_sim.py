"""A binary op of a half-type tensor and a float32 one runs as one kernel, without casting the
half operand first (tests/half_operands_worker.py, on the simulated CUDA device in a process of
its own)."""

import pathlib

from helpers import run_checks_worker


def test_half_operand_beside_float32_is_not_cast_first():
    run_checks_worker(pathlib.Path(__file__).with_name("half_operands_worker.py"))
