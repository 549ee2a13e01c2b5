"""`genesis.cuda`'s random-number functions (torch.cuda's names), over the per-device Philox
generators of genesis.random. None of them initialises the driver, except the `_all` forms that
need the device count."""

from .. import random as _random
from ..backends.cuda.runtime import device as _devices


def _count():
    from . import device_count
    return device_count()


def default_generator(device=None):
    """The default generator of `device` (default: the current device)."""
    return _random.cuda_generator(_devices.device_index(device))


def manual_seed(seed):
    """Seed the current device's generator."""
    default_generator().manual_seed(seed)


def manual_seed_all(seed):
    """Seed every device's generator (including devices not used yet)."""
    _random.seed_cuda(seed)


def seed():
    """Seed the current device's generator from OS entropy."""
    default_generator().seed()


def seed_all():
    """Seed every device's generator with one seed from OS entropy."""
    _random.seed_cuda(_random._entropy_seed())


def initial_seed():
    return default_generator().initial_seed()


def get_rng_state(device="cuda"):
    """The state of `device`'s generator: a uint8 CPU tensor (seed and offset)."""
    return default_generator(device).get_state()


def set_rng_state(new_state, device="cuda"):
    default_generator(device).set_state(new_state)


def get_rng_state_all():
    return [get_rng_state(i) for i in range(_count())]


def set_rng_state_all(new_states):
    for i, state in enumerate(new_states):
        set_rng_state(state, i)
