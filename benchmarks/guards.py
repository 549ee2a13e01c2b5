"""The eager regression guards: Genesis's host wall time over PyTorch's, measured side by side
in one run on the GPU, each under its limit.

ops.py checks every small op and allocator.py every allocate+free scenario; both print the ratio
with PASS or FAIL and write the guards into their --json output.
"""

SMALL_OP_HOST = 2.0  # a small op's host wall time, Genesis / PyTorch
ALLOC_FREE_PAIR = 2.5  # an allocate+free pair's host wall time, Genesis / PyTorch


def check(case, genesis_us, torch_us, limit):
    """The guard of one case: its Genesis/PyTorch ratio and whether it is within `limit`."""
    ratio = genesis_us / torch_us
    return {"case": case, "genesis_us": genesis_us, "torch_us": torch_us,
            "ratio": round(ratio, 3), "limit": limit, "pass": ratio <= limit}


def verdict(guard):
    return "PASS" if guard["pass"] else "FAIL"


def summary(guards):
    """One line: how many guards passed, and which failed."""
    failed = [g["case"] for g in guards if not g["pass"]]
    line = f"guards: {len(guards) - len(failed)}/{len(guards)} PASS"
    return line + (f"; FAIL: {', '.join(failed)}" if failed else "")
