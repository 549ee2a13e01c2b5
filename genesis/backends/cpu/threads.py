"""The CPU backend's thread count: numpy's BLAS thread pool, read and set through threadpoolctl
(the library made for controlling native thread pools). Elementwise numpy kernels run on the
calling thread; matmuls, convolutions and decompositions use the BLAS pool."""

import os


def _blas_pools():
    from threadpoolctl import threadpool_info
    return [pool for pool in threadpool_info() if pool["user_api"] == "blas"]


def get_num_threads():
    """The BLAS pool's thread count (the CPUs this process may use when numpy has no BLAS
    pool)."""
    pools = _blas_pools()
    if pools:
        return max(pool["num_threads"] for pool in pools)
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def set_num_threads(n):
    """Size numpy's BLAS pool to `n` threads, for the rest of the process."""
    from threadpoolctl import threadpool_limits
    threadpool_limits(limits=n, user_api="blas")
