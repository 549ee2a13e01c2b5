"""functional_call (a module run with given parameters and buffers), stack_module_state
(the state of several like modules stacked, ready for vmap) and
replace_all_batch_norm_modules_ (batch norms that keep no running statistics, for vmap)."""

from ..nn.modules.batchnorm import _BatchNorm
from ..nn.utils.stateless import _functional_call
from ..ops.shape_copies import stack


def _merged(dicts):
    """One dict from a dict or a sequence of dicts whose keys do not overlap."""
    if isinstance(dicts, dict):
        return dicts
    if not isinstance(dicts, (tuple, list)):
        raise ValueError("Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of "
                         f"dicts, but got {type(dicts)}")
    if not all(isinstance(d, dict) for d in dicts):
        raise ValueError("Expected all elements of parameter_and_buffer_dicts to be dictionaries")
    counts = {}
    for d in dicts:
        for k in d:
            counts[k] = counts.get(k, 0) + 1
    repeated = [k for k, n in counts.items() if n > 1]
    if repeated:
        raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of functional "
                         "call is ambiguous")
    return {k: v for d in dicts for k, v in d.items()}


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *,
                    tie_weights=True, strict=False):
    """`module(*args, **kwargs)` with the given tensors (a dict, or a tuple of dicts, keyed as
    named_parameters/named_buffers) in place of its parameters and buffers; the module's own
    are back in place afterwards."""
    return _functional_call(module, _merged(parameter_and_buffer_dicts), args, kwargs,
                            tie_weights=tie_weights, strict=strict)


def _stacked_leaf(tensors, name):
    needs = [t.requires_grad for t in tensors]
    if any(needs) and not all(needs):
        raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
    result = stack(tensors)
    return result.detach().requires_grad_() if all(needs) else result


def stack_module_state(models):
    """(params, buffers): each model's parameters and buffers stacked along a new first
    dimension, keyed by name; stacked parameters are fresh leaves requiring grad."""
    if len(models) == 0:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if len({m.training for m in models}) > 1:
        raise RuntimeError("stack_module_state: Expected all models to have the same "
                           "training/eval mode.")
    if any(type(m) is not type(models[0]) for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    all_params = [dict(m.named_parameters()) for m in models]
    all_buffers = [dict(m.named_buffers()) for m in models]
    params = {k: _stacked_leaf([p[k] for p in all_params], k) for k in all_params[0]}
    buffers = {k: _stacked_leaf([b[k] for b in all_buffers], k) for k in all_buffers[0]}
    return params, buffers


def replace_all_batch_norm_modules_(root):
    """Make every batch norm of `root` (itself included) keep no running statistics, in place:
    running_mean, running_var and num_batches_tracked become None and track_running_stats
    False, so that vmap over a batch-normed model writes no shared buffer. Returns `root`."""
    for module in root.modules():
        if isinstance(module, _BatchNorm) and module.track_running_stats:
            module.running_mean = module.running_var = module.num_batches_tracked = None
            module.track_running_stats = False
    return root
