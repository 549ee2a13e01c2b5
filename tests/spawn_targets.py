"""Entry points for tests/test_multiprocessing.py's spawned children (importable by name)."""

import os
import pathlib

import genesis


def write_rank_sum(i, out_dir, n):
    """Child i computes a sum with genesis and writes it to out_dir/i."""
    value = genesis.arange(n, dtype=genesis.float64).sum().item() + i
    pathlib.Path(out_dir, str(i)).write_text(repr(value))


def raise_on_one(i):
    if i == 1:
        raise ValueError(f"child {i} failed on purpose")


def exit_with_code(i, code):
    if i == 0:
        os._exit(code)
