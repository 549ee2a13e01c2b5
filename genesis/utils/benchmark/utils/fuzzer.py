"""`Fuzzer`, as torch.utils.benchmark's: random parameters and the tensors they shape.

Each step draws every FuzzedParameter from one numpy RandomState (seeded by `seed`, which also
seeds genesis' generator), resamples until the constraints and every FuzzedTensor's element and
allocation bounds hold, then builds the tensors: a FuzzedTensor is sometimes laid out in a
permuted order (not contiguous) and sliced by its `steps`. The draws are PyTorch's, so a seed
gives the same parameters and layouts.
"""

import functools
import itertools

import numpy as np

from .... import dtypes
from ....random import manual_seed
from ....type_info import finfo, iinfo

__all__ = ["Fuzzer", "FuzzedParameter", "ParameterAlias", "FuzzedTensor"]

_DISTRIBUTIONS = ("loguniform", "uniform")


class FuzzedParameter:
    """A named value drawn from "loguniform" or "uniform" on [minval, maxval], or from a dict
    of {value: probability}. A strict parameter keeps its first draw while others resample."""

    def __init__(self, name, minval=None, maxval=None, distribution=None, strict=False):
        self._name = name
        self._minval = minval
        self._maxval = maxval
        self._distribution = self._check_distribution(distribution)
        self.strict = strict

    @property
    def name(self):
        return self._name

    def _check_distribution(self, distribution):
        if not isinstance(distribution, dict):
            if distribution not in _DISTRIBUTIONS:
                raise AssertionError(f"Unknown distribution: {distribution}")
            return distribution
        if any(p < 0 for p in distribution.values()):
            raise AssertionError("Probabilities cannot be negative")
        if abs(sum(distribution.values()) - 1) > 1e-5:
            raise AssertionError("Distribution is not normalized")
        if self._minval is not None or self._maxval is not None:
            bound = "minval" if self._minval is not None else "maxval"
            raise AssertionError(f"When passing a custom distribution, '{bound}' must be None")
        return distribution

    def sample(self, state):
        if self._distribution == "loguniform":
            return self._loguniform(state)
        if self._distribution == "uniform":
            return self._uniform(state)
        return self._custom(state)

    def _loguniform(self, state):
        value = int(2 ** state.uniform(low=np.log2(self._minval), high=np.log2(self._maxval)))
        return min(max(value, self._minval), self._maxval)

    def _uniform(self, state):
        if isinstance(self._minval, int) and isinstance(self._maxval, int):
            return int(state.randint(low=self._minval, high=self._maxval + 1))
        return state.uniform(low=self._minval, high=self._maxval)

    def _custom(self, state):
        index = state.choice(np.arange(len(self._distribution)),
                             p=tuple(self._distribution.values()))
        return list(self._distribution)[index]


class ParameterAlias:
    """A parameter value that repeats the value of the parameter named `alias_to`."""

    def __init__(self, alias_to):
        self.alias_to = alias_to

    def __repr__(self):
        return f"ParameterAlias[alias_to: {self.alias_to}]"


def dtype_size(dtype):
    """Bytes per element of `dtype`."""
    if dtype == dtypes.bool_:
        return 1
    info = finfo if dtype.is_floating_point or dtype.is_complex else iinfo
    return info(dtype).bits // 8


def prod(values, base=1):
    """The product of sizes in Python ints, which cannot overflow."""
    return functools.reduce(lambda x, y: int(x) * int(y), values, base)


class FuzzedTensor:
    """A tensor named `name` whose `size` (and slicing `steps`) are ints or parameter names;
    with probability 1 - `probability_contiguous` its memory order is permuted. Parameters
    that give fewer than `min_elements` or more than `max_elements` elements, or an allocation
    over `max_allocation_bytes`, are rejected. `dim_parameter` names the parameter that sets
    the dimension count; `tensor_constructor(size=, dtype=, **params)` replaces the default
    rand (floats) or randint(1, 127) (integers)."""

    def __init__(self, name, size, steps=None, probability_contiguous=0.5, min_elements=None,
                 max_elements=None, max_allocation_bytes=None, dim_parameter=None,
                 roll_parameter=None, dtype=dtypes.float32, cuda=False,
                 tensor_constructor=None):
        self._name = name
        self._size = size
        self._steps = steps
        self._probability_contiguous = probability_contiguous
        self._min_elements = min_elements
        self._max_elements = max_elements
        self._max_allocation_bytes = max_allocation_bytes
        self._dim_parameter = dim_parameter
        self._dtype = dtype
        self._cuda = cuda
        self._tensor_constructor = tensor_constructor

    @property
    def name(self):
        return self._name

    @staticmethod
    def default_tensor_constructor(size, dtype, **kwargs):
        from .... import rand, randint
        if dtype.is_floating_point or dtype.is_complex:
            return rand(size=size, dtype=dtype, device="cpu")
        return randint(1, 127, size=size, dtype=dtype, device="cpu")

    def _make_tensor(self, params, state):
        size, steps, allocation_size = self._get_size_and_steps(params)
        constructor = self._tensor_constructor or self.default_tensor_constructor
        raw = constructor(size=allocation_size, dtype=self._dtype, **params)
        if self._cuda:
            raw = raw.cuda()
        order = np.arange(len(size))
        if state.rand() > self._probability_contiguous:
            while len(size) > 1 and np.all(order == np.arange(len(size))):
                order = state.permutation(raw.dim())
            raw = raw.permute(tuple(order)).contiguous().permute(tuple(np.argsort(order)))
        tensor = raw[tuple(slice(0, n * step, step) for n, step in zip(size, steps))]
        properties = {"numel": int(tensor.numel()), "order": order, "steps": steps,
                      "is_contiguous": tensor.is_contiguous(), "dtype": str(self._dtype)}
        return tensor, properties

    def _get_size_and_steps(self, params):
        dim = params[self._dim_parameter] if self._dim_parameter is not None else len(self._size)

        def resolve(values):
            values = tuple(params.get(v, v) for v in values)[:dim]
            return values + (1,) * (dim - len(values))

        size, steps = resolve(self._size), resolve(self._steps or ())
        return size, steps, tuple(n * step for n, step in zip(size, steps))

    def satisfies_constraints(self, params):
        size, _, allocation_size = self._get_size_and_steps(params)
        elements = prod(size)
        allocation_bytes = prod(allocation_size, base=dtype_size(self._dtype))
        return not (_greater(elements, self._max_elements)
                    or _greater(self._min_elements, elements)
                    or _greater(allocation_bytes, self._max_allocation_bytes))


def _greater(left, right):
    """left > right, False when either bound is unset."""
    return left is not None and right is not None and left > right


class Fuzzer:
    """Draws `parameters` (FuzzedParameters, or lists of them) and builds `tensors`
    (FuzzedTensors, or lists of them) from them; `constraints` are callables of the parameters
    of the parameters dict that must all hold. `take(n)` yields (tensors, their properties,
    parameters) n times."""

    def __init__(self, parameters, tensors, constraints=None, seed=None):
        if seed is None:
            seed = int(np.random.RandomState().randint(0, 2 ** 32 - 1, dtype=np.int64))
        self._seed = seed
        self._parameters = Fuzzer._unpack(parameters, FuzzedParameter)
        self._tensors = Fuzzer._unpack(tensors, FuzzedTensor)
        self._constraints = constraints or ()
        overlap = {p.name for p in self._parameters} & {t.name for t in self._tensors}
        if overlap:
            raise ValueError(f"Duplicate names in parameters and tensors: {overlap}")
        self._rejections = 0
        self._total_generated = 0

    @staticmethod
    def _unpack(values, cls):
        return tuple(itertools.chain.from_iterable(
            [v] if isinstance(v, cls) else v for v in values))

    def take(self, n):
        state = np.random.RandomState(self._seed)
        manual_seed(int(state.randint(low=0, high=2 ** 63, dtype=np.int64)))
        for _ in range(n):
            params = self._generate(state)
            made = {t.name: t._make_tensor(params, state) for t in self._tensors}
            yield ({name: m[0] for name, m in made.items()},
                   {name: m[1] for name, m in made.items()}, params)

    @property
    def rejection_rate(self):
        return self._rejections / self._total_generated if self._total_generated else 0.0

    def _draw(self, state, strict):
        params = {}
        for p in self._parameters:
            if p.strict and p.name in strict:
                params[p.name] = strict[p.name]
            else:
                params[p.name] = p.sample(state)
                if p.strict:
                    strict[p.name] = params[p.name]
        return self._resolve_aliases(params)

    def _generate(self, state):
        strict = {}
        for _ in range(1000):
            params = self._draw(state, strict)
            self._total_generated += 1
            if (all(f(params) for f in self._constraints)
                    and all(t.satisfies_constraints(params) for t in self._tensors)):
                return params
            self._rejections += 1
        raise ValueError("Failed to generate a set of valid parameters.")

    @staticmethod
    def _resolve_aliases(params):
        params = dict(params)
        pending = sum(isinstance(v, ParameterAlias) for v in params.values())
        while pending:
            for k, v in list(params.items()):
                if isinstance(v, ParameterAlias):
                    params[k] = params[v.alias_to]
            now = sum(isinstance(v, ParameterAlias) for v in params.values())
            if now == pending:
                raise ValueError(f"ParameterAlias cycle detected\n{params}")
            pending = now
        return params
