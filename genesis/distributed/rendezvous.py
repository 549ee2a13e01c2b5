"""Rendezvous: where the ranks meet (`env://` or `tcp://host:port`) and the wait for all of them."""

import os
import time
from urllib.parse import urlparse

from .errors import DistStoreError
from .store import TCPStore


def _env_int(name, given):
    if given is not None and given != -1:
        return given
    if name not in os.environ:
        raise ValueError(f"init_process_group: {name} is not set in the environment and was not "
                         f"passed (start the workers with `python -m genesis.distributed.run`)")
    return int(os.environ[name])


def resolve(init_method, rank, world_size):
    """(host, port, rank, world_size) from an `env://` or `tcp://host:port` init method."""
    url = urlparse(init_method or "env://")
    rank, world_size = _env_int("RANK", rank), _env_int("WORLD_SIZE", world_size)
    if url.scheme == "env":
        host = os.environ.get("MASTER_ADDR")
        port = os.environ.get("MASTER_PORT")
        if host is None or port is None:
            raise ValueError("init_process_group: env:// needs MASTER_ADDR and MASTER_PORT")
        return host, int(port), rank, world_size
    if url.scheme == "tcp":
        return url.hostname, url.port, rank, world_size
    raise ValueError(f"init_process_group: unsupported init_method {init_method!r} "
                     f"(env:// or tcp://host:port)")


def rendezvous(host, port, rank, world_size, timeout):
    """A store served by rank 0, returned once all `world_size` ranks have joined it.

    A rank that never joins makes the others fail after `timeout` seconds with the count of
    those that did, instead of waiting forever.
    """
    if not 0 <= rank < world_size:
        raise ValueError(f"init_process_group: rank {rank} is not in [0, {world_size})")
    store = TCPStore(host, port, world_size, is_master=rank == 0, timeout=timeout)
    store.add("rendezvous/joined", 1)
    deadline = time.monotonic() + timeout
    while (joined := store.add("rendezvous/joined", 0)) < world_size:
        if time.monotonic() > deadline:
            store.close()
            raise DistStoreError(
                f"init_process_group: timed out after {timeout:g} s waiting for the ranks to "
                f"join at {host}:{port}: {joined} of {world_size} joined")
        time.sleep(0.02)
    return store


def is_torchelastic_launched():
    """True in a process that a launcher started (torchrun, or genesis.distributed.run, which
    set TORCHELASTIC_RUN_ID): the rank and world come from the environment."""
    return os.getenv("TORCHELASTIC_RUN_ID") is not None
