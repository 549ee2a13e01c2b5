"""Settings of the caching allocator: defaults, GENESIS_CUDA_* variables, configure() options.

Every value is checked once, when the allocator starts or is reconfigured; a bad one raises a
ValueError naming the variable (or option) and the forms it accepts.
"""

import dataclasses
import os
import re

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
LARGE_ROUND = 2 * MiB  # large blocks and segments are whole multiples of this

_UNITS = {"": 1, "b": 1, "k": KiB, "m": MiB, "g": GiB, "t": 1 << 40}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*(?:([kmgt])(?:i?b)?|(b))?\s*$", re.IGNORECASE)
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")

SIZE_FORMS = "a byte count such as 1073741824 or a size such as 512MB, 1GB, 1.5GiB"
CACHE_FORMS = "a block count such as 1000, or a byte size such as 512MB or 1GB"
BOOL_FORMS = "one of " + ", ".join(_TRUE + _FALSE)
FRACTION_FORMS = "a number in (0, 1], such as 0.8"

ENV = {
    "segment_size": "GENESIS_CUDA_SEGMENT_SIZE",
    "cache_size": "GENESIS_CUDA_CACHE_SIZE",
    "enable_warmup": "GENESIS_CUDA_WARMUP_ENABLED",
    "enable_stats": "GENESIS_CUDA_STATS_ENABLED",
    "memory_fraction": "GENESIS_CUDA_MEMORY_FRACTION",
    "debug": "GENESIS_CUDA_MEMORY_DEBUG",
}


def parse_size(value):
    """Bytes from an int or a string like "1GB", "512MB", "1.5GiB", "4096" (units are binary)."""
    if isinstance(value, bool):
        raise ValueError(value)
    if isinstance(value, int):
        return value
    match = _SIZE.match(str(value))
    if match is None:
        raise ValueError(value)
    number, unit, byte = match.groups()
    if unit is None and byte is None and not number.isdigit():
        raise ValueError(value)  # a fraction of a byte
    return int(float(number) * _UNITS[(unit or "").lower()])


def _has_unit(value):
    return isinstance(value, str) and not value.strip().isdigit()


def parse_bool(value):
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE or text in _FALSE:
        return text in _TRUE
    raise ValueError(value)


def parse_fraction(value):
    fraction = float(value)
    if not 0.0 < fraction <= 1.0:
        raise ValueError(value)
    return fraction


def parse_segment_size(value):
    """A segment size of at least 2 MiB, rounded up to a multiple of 2 MiB."""
    size = parse_size(value)
    if size < LARGE_ROUND:
        raise ValueError(value)
    return -(-size // LARGE_ROUND) * LARGE_ROUND


def parse_cache_size(value):
    """(max blocks, max bytes) of the stream-local cache: a count or a byte size bounds it."""
    if _has_unit(value):
        size = parse_size(value)
        if size < 0:
            raise ValueError(value)
        return None, size
    count = parse_size(value)
    if count < 0:
        raise ValueError(value)
    return count, None


_PARSERS = {
    "segment_size": (parse_segment_size, SIZE_FORMS + " (at least 2MB)"),
    "cache_size": (parse_cache_size, CACHE_FORMS),
    "enable_warmup": (parse_bool, BOOL_FORMS),
    "enable_stats": (parse_bool, BOOL_FORMS),
    "memory_fraction": (parse_fraction, FRACTION_FORMS),
    "debug": (parse_bool, BOOL_FORMS),
    "caching": (parse_bool, BOOL_FORMS),
    "allocation_strategy": (lambda v: v if v == "best_fit" else _reject(v), "'best_fit'"),
}


def _reject(value):
    raise ValueError(value)


@dataclasses.dataclass(frozen=True)
class MemoryConfig:
    """The allocator's settings; `cache_size` is (max blocks, max bytes), None meaning unbounded;
    `caching` False returns each freed block's segment to the driver once it is all free."""

    segment_size: int = 20 * MiB
    cache_size: tuple = (1000, None)
    enable_warmup: bool = True
    enable_stats: bool = True
    memory_fraction: float = 1.0
    debug: bool = False
    caching: bool = True
    allocation_strategy: str = "best_fit"
    debug_max_frames: int = 16
    async_workers: int = 2

    @classmethod
    def from_env(cls, environ=None):
        """Defaults overridden by the GENESIS_CUDA_* variables that are set."""
        environ = os.environ if environ is None else environ
        values = {}
        for key, var in ENV.items():
            raw = environ.get(var)
            if raw is not None:
                values[key] = parse_option(key, raw, f"{var}={raw!r}")
        return cls(**values)

    def updated(self, options):
        """A copy with configure_memory_manager-style options applied (unknown keys rejected)."""
        unknown = sorted(set(options) - set(_PARSERS))
        if unknown:
            raise ValueError(f"configure_memory_manager: unknown option(s) {', '.join(unknown)}; "
                             f"accepted: {', '.join(sorted(_PARSERS))}, warmup_sizes")
        values = {key: parse_option(key, raw, f"configure_memory_manager: {key}={raw!r}")
                  for key, raw in options.items()}
        return dataclasses.replace(self, **values)


def parse_option(key, raw, where):
    """The parsed value of option `key`; ValueError naming `where` and the accepted forms."""
    parser, forms = _PARSERS[key]
    try:
        return parser(raw)
    except (ValueError, TypeError):
        raise ValueError(f"{where} is not valid: expected {forms}") from None
