"""The base of `torch.distributions.transforms`: Transform (with its cache and its inverse),
the composition of transforms (ComposeTransform, identity_transform) and the base of the
parameterless ones. transforms.py gathers every transform under PyTorch's names."""

import genesis
from . import constraints
from .independent import sum_rightmost


class Transform:
    """y = f(x) from `domain` to `codomain`; `inv` is the inverse transform. With cache_size=1
    the last (x, y) pair is remembered, so inverting a sample returns the exact x."""

    bijective = False
    domain = constraints.real
    codomain = constraints.real

    def __init__(self, cache_size=0):
        if cache_size not in (0, 1):
            raise ValueError("cache_size must be 0 or 1")
        self._cache_size = cache_size
        self._cached_x_y = None, None
        self._inv = None

    @property
    def event_dim(self):
        if self.domain.event_dim == self.codomain.event_dim:
            return self.domain.event_dim
        raise ValueError("Please use either .domain.event_dim or .codomain.event_dim")

    @property
    def inv(self):
        inv = self._inv
        if inv is None:
            inv = _InverseTransform(self)
            self._inv = inv
        return inv

    @property
    def sign(self):
        raise NotImplementedError

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        raise NotImplementedError(f"{type(self)}.with_cache is not implemented")

    def __call__(self, x):
        if self._cache_size == 0:
            return self._call(x)
        x_old, y_old = self._cached_x_y
        if x is x_old:
            return y_old
        y = self._call(x)
        self._cached_x_y = x, y
        return y

    def _inv_call(self, y):
        if self._cache_size == 0:
            return self._inverse(y)
        x_old, y_old = self._cached_x_y
        if y is y_old:
            return x_old
        x = self._inverse(y)
        self._cached_x_y = x, y
        return x

    def _call(self, x):
        raise NotImplementedError

    def _inverse(self, y):
        raise NotImplementedError

    def log_abs_det_jacobian(self, x, y):
        raise NotImplementedError

    def forward_shape(self, shape):
        return shape

    def inverse_shape(self, shape):
        return shape

    def __repr__(self):
        return self.__class__.__name__ + "()"


class _InverseTransform(Transform):
    """The inverse of a transform (domain and codomain swapped)."""

    def __init__(self, transform):
        super().__init__(cache_size=transform._cache_size)
        self._inv = transform

    @property
    def domain(self):
        return self._inv.codomain

    @property
    def codomain(self):
        return self._inv.domain

    @property
    def bijective(self):
        return self._inv.bijective

    @property
    def sign(self):
        return self._inv.sign

    @property
    def inv(self):
        return self._inv

    def __eq__(self, other):
        return isinstance(other, _InverseTransform) and self._inv == other._inv

    __hash__ = Transform.__hash__

    def __call__(self, x):
        return self._inv._inv_call(x)

    def log_abs_det_jacobian(self, x, y):
        return -self._inv.log_abs_det_jacobian(y, x)

    def forward_shape(self, shape):
        return self._inv.inverse_shape(shape)

    def inverse_shape(self, shape):
        return self._inv.forward_shape(shape)


class ComposeTransform(Transform):
    """parts[-1](...parts[0](x)); event dims grow to the largest any part needs."""

    def __init__(self, parts, cache_size=0):
        self.parts = [p.with_cache(cache_size) for p in parts] if cache_size else list(parts)
        super().__init__(cache_size=cache_size)

    @constraints.dependent_property(is_discrete=False)
    def domain(self):
        if not self.parts:
            return constraints.real
        domain = self.parts[0].domain
        event_dim = self.parts[-1].codomain.event_dim
        for part in reversed(self.parts):
            event_dim += part.domain.event_dim - part.codomain.event_dim
            event_dim = max(event_dim, part.domain.event_dim)
        if event_dim > domain.event_dim:
            domain = constraints.independent(domain, event_dim - domain.event_dim)
        return domain

    @constraints.dependent_property(is_discrete=False)
    def codomain(self):
        if not self.parts:
            return constraints.real
        codomain = self.parts[-1].codomain
        event_dim = self.parts[0].domain.event_dim
        for part in self.parts:
            event_dim += part.codomain.event_dim - part.domain.event_dim
            event_dim = max(event_dim, part.codomain.event_dim)
        if event_dim > codomain.event_dim:
            codomain = constraints.independent(codomain, event_dim - codomain.event_dim)
        return codomain

    def __eq__(self, other):
        return isinstance(other, ComposeTransform) and self.parts == other.parts

    __hash__ = Transform.__hash__

    @property
    def bijective(self):
        return all(p.bijective for p in self.parts)

    @property
    def sign(self):
        sign = 1
        for p in self.parts:
            sign = sign * p.sign
        return sign

    @property
    def inv(self):
        inv = self._inv
        if inv is None:
            inv = ComposeTransform([p.inv for p in reversed(self.parts)])
            self._inv = inv
            inv._inv = self
        return inv

    def __call__(self, x):
        for part in self.parts:
            x = part(x)
        return x

    def log_abs_det_jacobian(self, x, y):
        if not self.parts:
            return genesis.zeros_like(x)
        xs = [x]
        for part in self.parts[:-1]:
            xs.append(part(xs[-1]))
        xs.append(y)
        total, event_dim = 0, self.domain.event_dim
        for part, a, b in zip(self.parts, xs[:-1], xs[1:]):
            total = total + sum_rightmost(part.log_abs_det_jacobian(a, b),
                                          event_dim - part.domain.event_dim)
            event_dim += part.codomain.event_dim - part.domain.event_dim
        return total

    def forward_shape(self, shape):
        for part in self.parts:
            shape = part.forward_shape(shape)
        return shape

    def inverse_shape(self, shape):
        for part in reversed(self.parts):
            shape = part.inverse_shape(shape)
        return shape

    def __repr__(self):
        inner = ",\n    ".join(repr(p) for p in self.parts)
        return f"{self.__class__.__name__}(\n    {inner}\n)"


identity_transform = ComposeTransform([])


class _Stateless(Transform):
    """A transform with no parameters: all instances are equal, with_cache builds a fresh one."""

    def __eq__(self, other):
        return type(other) is type(self)

    __hash__ = Transform.__hash__

    def with_cache(self, cache_size=1):
        return self if self._cache_size == cache_size else type(self)(cache_size=cache_size)
