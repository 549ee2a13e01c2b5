"""float32 precision on the simulated CUDA device (tests/tf32_precision_worker.py, in its own
process): convolutions and the recurrent layers, forward and backward, take TF32 exactly when
genesis.backends.cudnn.allow_tf32 is set, a recurrent layer's backward keeps its forward's
choice, and F.linear, Linear and the cells follow genesis.backends.cuda.matmul.allow_tf32."""

import pathlib

from helpers import run_checks_worker


def test_precision_flags_on_the_simulated_device():
    run_checks_worker(pathlib.Path(__file__).with_name("tf32_precision_worker.py"))
