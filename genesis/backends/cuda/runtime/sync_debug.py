"""torch.cuda.set_sync_debug_mode's switch: whether an implicit host-device synchronization warns
or raises, with PyTorch's message, so a training loop can be checked for hidden stalls.

As in PyTorch, what counts is a blocking copy between host and device (`.item()`, `.cpu()`,
`genesis.tensor(..., device="cuda")`), a size read back from the device (nonzero, boolean-mask
indexing) and `Stream.synchronize()`; `genesis.cuda.synchronize()` and `Event.synchronize()`,
asked for explicitly, do not.
"""

from ...._warnings import warn

MODES = {"default": 0, "warn": 1, "error": 2}
MESSAGE = "called a synchronizing CUDA operation"
mode = 0  # 0 quiet, 1 warn, 2 raise: one process-wide setting, as PyTorch's


def set_mode(debug_mode):
    """Set the mode from "default"/"warn"/"error" or 0/1/2 (PyTorch's forms and error)."""
    global mode
    if isinstance(debug_mode, str):
        if debug_mode not in MODES:
            raise RuntimeError("invalid value of debug_mode, expected one of `default`, `warn`, "
                               "`error`")
        debug_mode = MODES[debug_mode]
    if debug_mode not in (0, 1, 2):
        raise RuntimeError("invalid value of debug_mode, expected one of 0,1,2")
    mode = int(debug_mode)


def warn_or_error_on_sync():
    """Called before every implicit synchronization: warns or raises as the mode says."""
    if mode == 2:
        raise RuntimeError(MESSAGE)
    if mode == 1:
        warn(MESSAGE)
