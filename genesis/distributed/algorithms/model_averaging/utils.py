"""Parameter averaging over a process group (PyTorch's model_averaging.utils): the parameters
are packed into one flat buffer so that a single all-reduce averages them all."""

from ...groups import GroupMember, group_or_world
from ...process_group import all_reduce, get_world_size

__all__ = ["average_parameters", "get_params_to_average",
           "average_parameters_or_parameter_groups"]


def average_parameters(params, process_group):
    """Replace each of `params` by its mean over `process_group` (None: the world); ranks
    outside the group keep theirs. Mixed dtypes are averaged in the promoted dtype."""
    from .... import accelerator, cat
    group_to_use = group_or_world(process_group)
    if group_to_use == GroupMember.NON_GROUP_MEMBER:
        return
    params = list(params)
    flat_params = cat([p.data.reshape(-1) for p in params])
    flat_params /= get_world_size(group_to_use)
    if accelerator.is_available():
        accelerator.synchronize()
    all_reduce(flat_params, group=group_to_use)
    offset = 0
    for p in params:
        p.data = flat_params[offset:offset + p.numel()].view_as(p).type_as(p)
        offset += p.numel()


def get_params_to_average(params):
    """The parameters among `params` (a model's parameters or an optimizer's groups) that have
    a gradient: those without one took no part in the step."""
    from ....nn import Parameter
    filtered_params = []
    for param in params:
        if isinstance(param, Parameter):
            candidates = [param]
        elif isinstance(param, dict):
            candidates = param["params"]
        else:
            raise NotImplementedError(f"Parameter input of type {type(param)} is not supported")
        filtered_params.extend(p for p in candidates if p.grad is not None)
    return filtered_params


def average_parameters_or_parameter_groups(params, process_group):
    """Average a model's parameters or an optimizer's parameter groups over `process_group`."""
    average_parameters(iter(get_params_to_average(params)), process_group)
