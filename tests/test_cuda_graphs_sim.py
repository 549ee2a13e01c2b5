"""CUDA graph capture on the simulated device (tests/graph_capture_worker.py, in its own
process): the main job's whole training step captures, and so does fused attention with each
of its backwards; replays advance the random generator, a capture's launches share one scratch
buffer, and what cannot be captured is refused with a clear error that leaves the stream
usable."""

import pathlib

from helpers import run_checks_worker


def test_capture_on_the_simulated_device():
    run_checks_worker(pathlib.Path(__file__).with_name("graph_capture_worker.py"))
