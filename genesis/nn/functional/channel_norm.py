"""Instance norm (batch norm of each sample on its own) and local response normalization across
channels."""

from ...autograd.grad_mode import no_grad
from ...ops import creation
from ...ops.shape_copies import cat
from .batch_stats import BatchNormTraining, update_running
from .normalization import batch_norm, check_per_channel


def _update_running(running, per_instance, momentum):
    """running <- (1 - momentum) running + momentum * (the (N, C) statistics averaged over N)."""
    with no_grad():
        update_running(running, per_instance.reshape(-1, running.shape[0]).mean(0), momentum)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-5):
    """Normalize each (sample, channel) of (N, C, *) input over its own spatial values."""
    if not use_input_stats and (running_mean is None or running_var is None):
        raise RuntimeError("instance_norm: Expected running_mean and running_var to be defined "
                           "when use_input_stats is false")
    check_per_channel("instance_norm", input.shape[1] if input.ndim > 1 else 0, True,
                      input.shape[0] if input.ndim else 1, running_mean=running_mean,
                      running_var=running_var, weight=weight, bias=bias)
    if not use_input_stats:
        return batch_norm(input, running_mean, running_var, weight, bias, False, momentum, eps)
    spatial = input.numel() // max(input.shape[0] * input.shape[1], 1) if input.ndim > 2 else 0
    if input.ndim < 3 or spatial <= 1 and input.numel():
        raise ValueError(f"Expected more than 1 spatial element when training, got input size "
                         f"{input.shape}")
    if input.numel() == 0:
        return input.clone()
    n, c = input.shape[0], input.shape[1]
    folded = input.reshape((1, n * c) + tuple(input.shape[2:]))
    y, mean, var = BatchNormTraining.apply(
        folded, None if weight is None else weight.repeat(n),
        None if bias is None else bias.repeat(n), eps)
    if running_mean is not None:
        _update_running(running_mean, mean, momentum)
    if running_var is not None:
        _update_running(running_var, var * (spatial / (spatial - 1)), momentum)
    return y.reshape(input.shape)


def _channel_window_sum(x, before, after):
    """For each channel c of (N, C, *) `x`, the sum of channels c - before .. c + after (zeros
    beyond the ends)."""
    shape = list(x.shape)
    channels = shape[1]
    parts = []
    for count in (before, after):
        shape[1] = count
        parts.append(creation.zeros(tuple(shape), dtype=x.dtype, device=x.device))
    padded = cat([parts[0], x, parts[1]], 1)
    total = padded.narrow(1, 0, channels)
    for start in range(1, before + after + 1):
        total = total + padded.narrow(1, start, channels)
    return total


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """x / (k + alpha * mean of x^2 over `size` neighbouring channels) ** beta."""
    if input.ndim < 3:  # torch's text, with the run of spaces its source line break leaves
        raise ValueError(f"Expected 3D or higher dimensionality{' ' * 26}input (got "
                         f"{input.ndim} dimensions)")
    if input.numel() == 0:
        return input
    window = _channel_window_sum(input * input, size // 2, (size - 1) // 2) / size
    return input / (window * alpha + k) ** beta
