"""genesis.backends.mps: Apple's Metal backend, which Genesis does not have. Scripts that choose
their device with `torch.backends.mps.is_available()` get False, as on a PyTorch built without
it."""


def is_available():
    """False: Genesis has no Metal backend."""
    return False


def is_built():
    """False: Genesis is not built with Metal."""
    return False
