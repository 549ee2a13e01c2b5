"""`torch.distributions.studentT`'s import path for StudentT."""

from .student_t import StudentT

__all__ = ["StudentT"]
