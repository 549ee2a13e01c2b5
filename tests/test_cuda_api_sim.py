"""genesis.cuda's torch.cuda names on the simulated CUDA device: the checks of
tests/cuda_api_worker.py, run once in a process of their own (the simulation replaces the driver
layer), each reported here as a test of its own."""

import ast
import pathlib
import subprocess
import sys

import pytest

WORKER = pathlib.Path(__file__).with_name("cuda_api_worker.py")
CHECKS = [node.name for node in ast.parse(WORKER.read_text()).body
          if isinstance(node, ast.FunctionDef) and node.name.startswith("check_")]


@pytest.fixture(scope="module")
def worker_output():
    result = subprocess.run([sys.executable, str(WORKER)], capture_output=True, text=True,
                            timeout=600)
    return result.stdout + result.stderr


@pytest.mark.parametrize("name", CHECKS)
def test_simulated_device(worker_output, name):
    if f"ok {name}\n" in worker_output:
        return
    start = worker_output.find(f"FAIL {name}\n")
    report = worker_output[start:worker_output.find(f"END {name}", start)] if start >= 0 \
        else worker_output  # it never ran: the worker died before (its whole output)
    pytest.fail(report, pytrace=False)
