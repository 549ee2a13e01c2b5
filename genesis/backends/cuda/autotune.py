"""Genesis's autotuner: time candidate configurations once per key, keep the winner on disk.

`AutoTuner.tune_kernel(fn, inputs, space, key)` runs `fn(*inputs, **config)` for every config of
`space`, times each with CUDA events (or an injected timer) and returns the fastest. Winners are
kept per key in a JSON file under GENESIS_KERNEL_CACHE_DIR (default ~/.cache/genesis), so a
second process reuses them without tuning. The file is written atomically (a temporary file
renamed over it) after merging what other processes wrote meanwhile; a corrupt file is ignored
with a warning and replaced by the next write.

A configuration that fails to compile or launch (too much shared memory, too many registers...)
is skipped with a warning and the others are tried: a failure is never a result.
"""

import json
import logging
import os
import tempfile
import threading
import warnings

logger = logging.getLogger("genesis.autotune")

FORMAT_VERSION = 1


def cache_dir():
    """Where tuned configurations are kept: GENESIS_KERNEL_CACHE_DIR, else ~/.cache/genesis."""
    root = os.environ.get("GENESIS_KERNEL_CACHE_DIR")
    if not root:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        root = os.path.join(base, "genesis")
    return os.path.join(root, "autotune")


def key_string(key):
    """The JSON-safe form of a key (a tuple of strings, numbers, booleans and tuples)."""
    return json.dumps(key, separators=(",", ":"), default=str)


def event_timer(run, budget_ms=10.0, max_reps=50):
    """Median milliseconds of one call of `run` on the current CUDA stream, timed by events
    around each call queued behind an L2 flush (`timing.time_calls`). One warm-up call first: it
    compiles, and raises if the configuration cannot launch. As many calls as fit in about
    `budget_ms` (3 to `max_reps`)."""
    from .runtime.graphs import check_not_capturing
    from .runtime.stream import synchronize
    from .timing import time_calls
    check_not_capturing("autotuning a kernel (run the captured code once before capturing, to "
                        "tune its kernels)")
    run()
    synchronize()
    first = time_calls(run, 1)[0]
    times = time_calls(run, max(3, min(max_reps, int(budget_ms / max(first, 1e-3)))))
    return times[len(times) // 2]


class AutoTuner:
    """The fastest configuration of a kernel per key, tuned once and remembered on disk.

    `name` names the cache file; `timer(run) -> ms` defaults to `event_timer` (tests inject a
    fake one). Entries are {"config": {...}, "ms": time} under `key_string(key)`.
    """

    def __init__(self, name, timer=None):
        self.name = name
        self.timer = timer or event_timer
        self._entries = None
        self._path = None
        self._lock = threading.RLock()

    @property
    def path(self):
        return os.path.join(cache_dir(), f"{self.name}.json")

    def _read(self, path):
        """The entries stored in `path` ({} when absent; a corrupt file is ignored with a
        warning)."""
        try:
            with open(path) as f:
                data = json.load(f)
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as e:
            warnings.warn(f"autotune: ignoring unreadable cache {path} ({e})", RuntimeWarning,
                          stacklevel=3)
            return {}
        ok = isinstance(data, dict) and data.get("version") == FORMAT_VERSION
        entries = data.get("entries") if ok else None
        if not isinstance(entries, dict) or not all(_valid_entry(e) for e in entries.values()):
            warnings.warn(f"autotune: ignoring corrupt cache {path}", RuntimeWarning, stacklevel=3)
            return {}
        return entries

    def entries(self):
        """Every stored entry (read from disk on first use, or when the cache dir changed)."""
        with self._lock:
            path = self.path
            if self._entries is None or path != self._path:
                self._entries, self._path = self._read(path), path
            return self._entries

    def lookup(self, key):
        """The stored winning config for `key`, or None."""
        entry = self.entries().get(key_string(key))
        return None if entry is None else dict(entry["config"])

    def store(self, key, config, ms):
        """Remember `config` as the winner for `key`, in memory and on disk (atomically, merged
        with entries other processes stored meanwhile). A cache that cannot be written only
        costs a warning."""
        with self._lock:
            entries = self.entries()
            entries[key_string(key)] = {"config": dict(config), "ms": ms}
            path = self.path
            try:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                merged = {**self._read(path), **entries}
                fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-",
                                           suffix=".json")
                with os.fdopen(fd, "w") as f:
                    json.dump({"version": FORMAT_VERSION, "entries": merged}, f, indent=0)
                os.replace(tmp, path)
                self._entries = merged
            except OSError as e:
                warnings.warn(f"autotune: could not write {path} ({e})", RuntimeWarning,
                              stacklevel=2)

    def forget(self, key):
        """Drop the entry of `key` in memory (a stored winner that no longer launches)."""
        with self._lock:
            self.entries().pop(key_string(key), None)

    def tune_kernel(self, fn, inputs, space, key=None):
        """The fastest config of `space` for `fn(*inputs, **config)` (the stored one when `key`
        was tuned before and its config is still in `space`). Configs that raise are skipped
        with a warning; RuntimeError when every one fails."""
        space = [dict(c) for c in space]
        if key is not None:
            known = self.lookup(key)
            if known is not None and known in space:
                return known
        timings = []
        for config in space:
            try:
                ms = self.timer(lambda config=config: fn(*inputs, **config))
            except Exception as e:  # a compile or launch failure: try the others
                warnings.warn(f"autotune {self.name}: skipping config {config}: "
                              f"{type(e).__name__}: {e}", RuntimeWarning, stacklevel=2)
                continue
            logger.debug("autotune %s %s: %s %.4f ms", self.name, key, config, ms)
            timings.append((ms, len(timings), config))
        if not timings:
            raise RuntimeError(f"autotune {self.name}: every configuration failed for key {key}")
        ms, _, best = min(timings, key=lambda t: (t[0], t[1]))
        if key is not None:
            self.store(key, best, ms)
        return best


def _valid_entry(entry):
    return (isinstance(entry, dict) and isinstance(entry.get("config"), dict)
            and isinstance(entry.get("ms"), (int, float)))
