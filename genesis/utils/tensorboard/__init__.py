"""genesis.utils.tensorboard: torch.utils.tensorboard's SummaryWriter for genesis tensors, over
the tensorboard package's event writer and protos (`pip install 'genesis[tensorboard]'`)."""

import re

import tensorboard


def _release(version):
    """A version's major and minor numbers: "2.21.0" -> (2, 21)."""
    return tuple(int(p) for p in re.findall(r"\d+", version)[:2])


if _release(getattr(tensorboard, "__version__", "0")) < (1, 15):
    raise ImportError("TensorBoard logging requires TensorBoard version 1.15 or above")

from tensorboard.summary.writer.record_writer import RecordWriter  # noqa: E402

from .writer import FileWriter, SummaryWriter  # noqa: E402

__all__ = ["FileWriter", "RecordWriter", "SummaryWriter"]
