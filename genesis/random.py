"""Random number generators: `genesis.Generator`, `manual_seed`, `seed`, RNG state.

The CPU generator is numpy's PCG64 behind PyTorch's API. CUDA generators (Philox, counter-based)
live in the CUDA backend and are seeded by `manual_seed` too.
"""

import numpy as np

from .device import as_device


class Generator:
    """A source of random numbers for one device: `genesis.Generator(device="cpu")`."""

    def __init__(self, device="cpu"):
        self.device = as_device(device)
        self._seed = 67280421310721
        self._rng = np.random.Generator(np.random.PCG64(self._seed))

    def manual_seed(self, seed):
        self._seed = int(seed) & 0xFFFF_FFFF_FFFF_FFFF
        self._rng = np.random.Generator(np.random.PCG64(self._seed))
        return self

    def seed(self):
        """Reseed from OS entropy; returns the new seed."""
        new = int(np.random.SeedSequence().generate_state(1, np.uint64)[0])
        self.manual_seed(new)
        return new

    def initial_seed(self):
        return self._seed

    def get_state(self):
        from .ops.creation import tensor
        state = repr(self._rng.bit_generator.state).encode()
        return tensor(np.frombuffer(state, dtype=np.uint8).copy())

    def set_state(self, state):
        import ast
        self._rng.bit_generator.state = ast.literal_eval(bytes(state.numpy().tobytes()).decode())
        return self

    @property
    def numpy_rng(self):
        """The numpy Generator that draws this generator's numbers on the CPU."""
        return self._rng


default_generator = Generator()
_seed_hooks = []


def manual_seed(seed):
    """Seed every device's default generator, as `torch.manual_seed`."""
    default_generator.manual_seed(seed)
    for hook in _seed_hooks:
        hook(int(seed))
    return default_generator


def seed():
    s = default_generator.seed()
    for hook in _seed_hooks:
        hook(s)
    return s


def initial_seed():
    return default_generator.initial_seed()


def get_rng_state():
    return default_generator.get_state()


def set_rng_state(state):
    default_generator.set_state(state)


def on_manual_seed(hook):
    """Backends register `hook(seed)` to reseed their generators with the CPU one."""
    _seed_hooks.append(hook)


def rng_for(generator):
    """The numpy Generator behind `generator` (or the default one)."""
    return (generator or default_generator).numpy_rng
