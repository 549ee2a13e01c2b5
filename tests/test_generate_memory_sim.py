"""generate's peak device memory on the simulated CUDA device (tests/generate_memory_worker.py,
in its own process): weights, key/value cache and one layer's prefill MLP intermediates, with
little besides, on the first call and on a repeated one that replays the captured decode step."""

import pathlib

from helpers import run_checks_worker


def test_generate_peak_on_the_simulated_device():
    run_checks_worker(pathlib.Path(__file__).with_name("generate_memory_worker.py"))
