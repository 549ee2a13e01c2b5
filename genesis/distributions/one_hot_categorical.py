"""`torch.distributions.one_hot_categorical`'s import path for
OneHotCategorical, OneHotCategoricalStraightThrough."""

from .categorical import OneHotCategorical, OneHotCategoricalStraightThrough

__all__ = ["OneHotCategorical", "OneHotCategoricalStraightThrough"]
