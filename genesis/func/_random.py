"""The default generators' state, to tell whether a function drew random numbers (vmap's and
jacfwd's randomness="error") and to replay it (randomness="same"). The CUDA generators count
only once CUDA has been initialised: asking earlier would start the driver."""

from .. import cuda, random

RANDOMNESS = ("error", "different", "same")
RANDOM_ERROR = ("vmap: called random operation while in randomness error mode. Please either "
                "use the 'same' or 'different' randomness flags on vmap or perform the "
                "randomness operation out of vmap")


def check_randomness(randomness):
    if randomness not in RANDOMNESS:
        raise RuntimeError("Only allowed values for randomness are 'error', 'different', or "
                           f"'same'. Got {randomness}")


def get_state():
    """(CPU state, CUDA states or None) of the default generators."""
    gpu = cuda.get_rng_state_all() if cuda.is_initialized() else None
    return random.get_rng_state(), gpu


def set_state(state):
    cpu, gpu = state
    random.set_rng_state(cpu)
    if gpu is not None:
        cuda.set_rng_state_all(gpu)


def _same(a, b):
    return a.shape == b.shape and bool((a == b).all())


def unchanged(before, after):
    """Whether no default generator moved between the two states."""
    (cpu_a, gpu_a), (cpu_b, gpu_b) = before, after
    if gpu_a is None or gpu_b is None:  # CUDA was first initialised in between
        gpu_a = gpu_b = []
    return _same(cpu_a, cpu_b) and len(gpu_a) == len(gpu_b) and all(
        _same(a, b) for a, b in zip(gpu_a, gpu_b))


def call_checked(func, args, kwargs):
    """func(*args, **kwargs), raising vmap's randomness error if it drew random numbers."""
    before = get_state()
    result = func(*args, **kwargs)
    if not unchanged(before, get_state()):
        raise RuntimeError(RANDOM_ERROR)
    return result
