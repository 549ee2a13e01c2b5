"""CUDA graph capture on the simulated device (tests/graph_capture_worker.py, in its own
process): the main job's whole training step captures, replays advance the random generator,
and what cannot be captured is refused with a clear error that leaves the stream usable."""

import pathlib
import subprocess
import sys

WORKER = pathlib.Path(__file__).with_name("graph_capture_worker.py")


def test_capture_on_the_simulated_device():
    result = subprocess.run([sys.executable, str(WORKER)], capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip().endswith("all checks passed"), result.stdout
