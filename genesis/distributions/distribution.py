"""The Distribution base class, as `torch.distributions.Distribution`: batch and event shapes,
argument and sample validation with PyTorch's messages, sample/rsample over a sample_shape."""

import warnings

import genesis
from . import constraints
from .utils import lazy_property


class Distribution:
    """A batch of probability distributions with `batch_shape` and `event_shape`."""

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__
    arg_constraints = {}

    @staticmethod
    def set_default_validate_args(value):
        """Turn argument validation on or off for every distribution made afterwards."""
        if value not in [True, False]:
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape=(), event_shape=(), validate_args=None):
        self._batch_shape = genesis.Size(batch_shape)
        self._event_shape = genesis.Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            self._check_arguments()
        super().__init__()

    def _check_arguments(self):
        for param, constraint in self.arg_constraints.items():
            if constraints.is_dependent(constraint):
                continue
            if param not in self.__dict__ and isinstance(getattr(type(self), param, None),
                                                         lazy_property):
                continue
            value = getattr(self, param)
            if not bool(constraint.check(value).all()):
                raise ValueError(f"Expected parameter {param} ({type(value).__name__} of shape "
                                 f"{tuple(value.shape)}) of distribution {self!r} to satisfy the "
                                 f"constraint {constraint!r}, but found invalid values:\n{value}")

    _unexpanded = ()  # tensor attributes that keep their own (smaller) batch shape

    def expand(self, batch_shape, _instance=None):
        """The same distribution with its parameters (every tensor attribute, whose leading dims
        are the batch shape) expanded to `batch_shape`, without copies."""
        new = object.__new__(type(self)) if _instance is None else _instance
        batch_shape = tuple(batch_shape)
        n = len(self._batch_shape)
        for key, value in self.__dict__.items():
            if isinstance(value, genesis.Tensor) and key not in self._unexpanded:
                value = value.expand(*batch_shape, *value.shape[n:])
            new.__dict__[key] = value
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _get_checked_instance(self, cls, _instance=None):
        """A bare instance for `expand` to fill in; a subclass with its own __init__ must
        define its own expand, as in torch."""
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(f"Subclass {self.__class__.__name__} of {cls.__name__} "
                                      "that defines a custom __init__ method must also define "
                                      "a custom .expand() method.")
        return object.__new__(type(self)) if _instance is None else _instance

    @property
    def batch_shape(self):
        return self._batch_shape

    @property
    def event_shape(self):
        return self._event_shape

    @property
    def support(self):
        raise NotImplementedError

    @property
    def mean(self):
        raise NotImplementedError(f"{self.__class__} does not implement mean")

    @property
    def mode(self):
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self):
        raise NotImplementedError(f"{self.__class__} does not implement variance")

    @property
    def stddev(self):
        return self.variance.sqrt()

    def sample(self, sample_shape=()):
        """A sample (no gradient); reparameterized distributions detach their rsample."""
        with genesis.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()):
        raise NotImplementedError

    def sample_n(self, n):
        warnings.warn("sample_n will be deprecated. Use .sample((n,)) instead", UserWarning)
        return self.sample(genesis.Size((n,)))

    def log_prob(self, value):
        raise NotImplementedError

    def cdf(self, value):
        raise NotImplementedError

    def icdf(self, value):
        raise NotImplementedError

    def entropy(self):
        raise NotImplementedError

    def perplexity(self):
        return self.entropy().exp()

    def enumerate_support(self, expand=True):
        raise NotImplementedError

    def _extended_shape(self, sample_shape=()):
        """sample_shape + batch_shape + event_shape."""
        if not isinstance(sample_shape, (tuple, list)):
            sample_shape = (sample_shape,)
        return genesis.Size(tuple(sample_shape) + tuple(self._batch_shape)
                            + tuple(self._event_shape))

    def _validate_sample(self, value):
        """PyTorch's checks of a value passed to log_prob/cdf: a Tensor, event shape on the
        right, broadcastable with the batch, inside the support."""
        if not isinstance(value, genesis.Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_start = value.ndim - len(self._event_shape)
        if tuple(value.shape[event_start:]) != tuple(self._event_shape):
            raise ValueError(f"The right-most size of value must match event_shape: "
                             f"{value.shape} vs {self._event_shape}.")
        expected = tuple(self._batch_shape) + tuple(self._event_shape)
        for i, j in zip(reversed(tuple(value.shape)), reversed(expected)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: "
                                 f"{value.shape} vs {genesis.Size(expected)}.")
        support = self.support
        if not bool(support.check(value).all()):
            raise ValueError(f"Expected value argument ({type(value).__name__} of shape "
                             f"{tuple(value.shape)}) to be within the support ({support!r}) of "
                             f"the distribution {self!r}, but found invalid values:\n{value}")

    def __repr__(self):
        values = [(k, self.__dict__[k]) for k in self.arg_constraints if k in self.__dict__]
        args = ", ".join(f"{k}: {v if v.numel() == 1 else v.shape}" for k, v in values)
        return f"{self.__class__.__name__}({args})"
