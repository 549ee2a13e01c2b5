"""Random number generators: `genesis.Generator`, `manual_seed`, `seed`, RNG state.

The CPU generator is numpy's PCG64 behind PyTorch's API. A CUDA generator is counter-based
(Philox4x32-10, the kernels in backends/cuda/kernels/random.py): its whole state is a 64-bit seed
and a 64-bit counter offset; each draw of n values uses the counters offset, offset + 1, ... and
advances the offset by n. Each CUDA device has a default generator, made on first use (so
nothing here touches the driver), seeded by `manual_seed` as PyTorch seeds every device.
"""

import contextlib

import numpy as np

from .device import as_device

DEFAULT_SEED = 67280421310721
_MASK64 = (1 << 64) - 1


def _entropy_seed():
    return int(np.random.SeedSequence().generate_state(1, np.uint64)[0])


class Generator:
    """A source of random numbers for one device: `genesis.Generator(device="cpu")`.

    `Generator(device="cuda")` makes a PhiloxGenerator (a subclass), without touching the driver.
    """

    def __new__(cls, device="cpu"):
        kind = PhiloxGenerator if cls is Generator and as_device(device).type == "cuda" else cls
        return super().__new__(kind)

    def __init__(self, device="cpu"):
        self.device = as_device(device)
        self._seed = DEFAULT_SEED
        self._rng = np.random.Generator(np.random.PCG64(self._seed))

    def manual_seed(self, seed):
        self._seed = int(seed) & _MASK64
        self._rng = np.random.Generator(np.random.PCG64(self._seed))
        return self

    def seed(self):
        """Reseed from OS entropy; returns the new seed."""
        new = _entropy_seed()
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

    def host_rng(self):
        """The numpy Generator that draws this generator's numbers on the host."""
        return self._rng


class PhiloxGenerator(Generator):
    """A counter-based generator for a CUDA device: state (seed, offset), 16 bytes.

    While a CUDA graph is captured, draws cannot take their (seed, offset) from the host: the
    graph would repeat the same numbers on every replay. Between `graph_capture_begin(state)`
    and `graph_capture_end()` a draw gets `state`, a device array [seed, base offset] that the
    graph writes before each replay, and its offset relative to that base; each replay then
    moves the generator past the counters the graph consumes, as eager execution would."""

    def __init__(self, device="cuda"):
        self.device = as_device(device)
        self._seed = DEFAULT_SEED
        self._offset = 0
        self._graph = None  # [device state array, counters reserved so far] during a capture

    def manual_seed(self, seed):
        self._seed = int(seed) & _MASK64
        self._offset = 0
        return self

    def get_offset(self):
        return self._offset

    def set_offset(self, offset):
        self._offset = int(offset)
        return self

    def philox_reserve(self, count):
        """(seed, offset) for a draw of `count` values, advancing the offset past them; during a
        graph capture, (the device state array, the offset from its base)."""
        graph = self._graph
        if graph is not None:
            offset = graph[1]
            graph[1] = offset + int(count)
            return graph[0], offset
        offset = self._offset
        self._offset = offset + int(count)
        return self._seed, offset

    def graph_capture_begin(self, state):
        """Draws read their seed and base offset from `state` until graph_capture_end()."""
        if self._graph is not None:
            raise RuntimeError(f"{self.device} generator: already in a CUDA graph capture")
        self._graph = [state, 0]

    def graph_capture_end(self):
        """Leave capture mode; returns how many counters each replay of the graph consumes."""
        graph, self._graph = self._graph, None
        return 0 if graph is None else graph[1]

    def get_state(self):
        """The state as a uint8 CPU tensor: seed then offset, 8 little-endian bytes each."""
        from .ops.creation import tensor
        return tensor(np.array([self._seed, self._offset], dtype="<u8").view(np.uint8))

    def set_state(self, state):
        from .tensor import Tensor
        if not isinstance(state, Tensor) or state.dtype.name != "uint8":
            raise TypeError("set_state: RNG state must be a genesis.uint8 tensor")
        if state.numel() != 16:
            raise RuntimeError(f"set_state: RNG state is wrong size: expected 16 bytes, got "
                               f"{state.numel()}")
        seed, offset = np.ascontiguousarray(state.numpy()).reshape(-1).view("<u8")
        self._seed, self._offset = int(seed), int(offset)
        return self

    def host_rng(self):
        """A numpy Generator for one draw made on the host (ops without a device kernel, such
        as multinomial): seeded from (seed, offset), after which the offset moves past it."""
        if self._graph is not None:
            raise RuntimeError(f"a random draw on the host cannot be captured in a CUDA graph "
                               f"(the {self.device} generator is being captured)")
        seed, offset = self.philox_reserve(1)
        return np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, offset])))


default_generator = Generator()
_meta_generator = PhiloxGenerator("meta")  # meta fills reserve counters that draw nothing
_cuda_generators = {}
_cuda_seed = [DEFAULT_SEED]


def cuda_generator(index):
    """The default generator of CUDA device `index`, made on first use."""
    gen = _cuda_generators.get(index)
    if gen is None:
        gen = _cuda_generators[index] = PhiloxGenerator(f"cuda:{index}").manual_seed(_cuda_seed[0])
    return gen


def seed_cuda(seed, index=None):
    """Seed CUDA device `index`'s default generator, or every device's (also those not made
    yet) when `index` is None."""
    if index is not None:
        cuda_generator(index).manual_seed(seed)
        return
    _cuda_seed[0] = int(seed) & _MASK64
    for gen in _cuda_generators.values():
        gen.manual_seed(seed)


def manual_seed(seed):
    """Seed every device's default generator, as `torch.manual_seed`."""
    default_generator.manual_seed(seed)
    seed_cuda(seed)
    return default_generator


def seed():
    """Seed every device's default generator from OS entropy; returns the seed."""
    s = default_generator.seed()
    seed_cuda(s)
    return s


def initial_seed():
    return default_generator.initial_seed()


def get_rng_state():
    return default_generator.get_state()


def set_rng_state(state):
    default_generator.set_state(state)


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices",
             device_type="cuda"):
    """Inside the block, random draws change no generator seen outside it: the CPU generator
    and the CUDA generators of `devices` (indices; all made so far when None) are restored on
    exit, and CUDA generators first made inside the block are dropped."""
    if not enabled:
        yield
        return
    if device_type != "cuda":
        indices = []
    elif devices is None:
        indices = list(_cuda_generators)
    else:
        indices = [d if isinstance(d, int) else as_device(d).index or 0 for d in devices]
    cpu_state = default_generator.get_state()
    cuda_states = {i: cuda_generator(i).get_state() for i in indices}
    known = set(_cuda_generators)
    try:
        yield
    finally:
        default_generator.set_state(cpu_state)
        for i, state in cuda_states.items():
            _cuda_generators[i].set_state(state)
        for i in set(_cuda_generators) - known:
            del _cuda_generators[i]


def generator_for(generator, device):
    """The generator drawing for `device` (a resolved device): `generator`, checked to be for
    that device type, or the device's default one."""
    if device.type == "meta":  # draws nothing, so any generator will do, as in torch
        return _meta_generator
    if generator is None:
        return cuda_generator(device.index) if device.type == "cuda" else default_generator
    if generator.device.type != device.type:
        raise RuntimeError(f"Expected a '{device.type}' device type for generator but found "
                           f"'{generator.device.type}'")
    return generator


def rng_for(generator):
    """The numpy Generator drawing for `generator` (or the default one) on the host."""
    return (generator or default_generator).host_rng()
