"""Model averaging (PyTorch's torch.distributed.algorithms.model_averaging): averagers that
all-reduce a model's parameters now and then, for post-local SGD."""
