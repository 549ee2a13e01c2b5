"""Switches for behaviour PyTorch means to make the default: how nn.Module's conversions
(`to`, `float`, `cuda`...) and `load_state_dict` replace a module's parameters."""

_overwrite_module_params_on_conversion = False
_swap_module_params_on_conversion = False


def set_overwrite_module_params_on_conversion(value):
    """Make module conversions put new Parameters in the module instead of giving the existing
    ones the converted data."""
    global _overwrite_module_params_on_conversion
    _overwrite_module_params_on_conversion = value


def get_overwrite_module_params_on_conversion():
    """Whether module conversions put new Parameters in the module (default False)."""
    return _overwrite_module_params_on_conversion


def set_swap_module_params_on_conversion(value):
    """Make module conversions and `load_state_dict` swap each parameter with its new value
    (`genesis.utils.swap_tensors`), keeping the Parameter objects; this takes precedence over
    the overwrite switch."""
    global _swap_module_params_on_conversion
    _swap_module_params_on_conversion = value


def get_swap_module_params_on_conversion():
    """Whether module conversions and `load_state_dict` swap parameters (default False)."""
    return _swap_module_params_on_conversion
