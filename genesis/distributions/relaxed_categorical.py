"""`torch.distributions.relaxed_categorical`'s import path for
ExpRelaxedCategorical, RelaxedOneHotCategorical."""

from .relaxed import ExpRelaxedCategorical, RelaxedOneHotCategorical

__all__ = ["ExpRelaxedCategorical", "RelaxedOneHotCategorical"]
