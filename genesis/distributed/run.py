"""Launcher: `python -m genesis.distributed.run --nproc-per-node N script.py args...` (torchrun's).

It starts one worker per rank with MASTER_ADDR, MASTER_PORT, RANK, LOCAL_RANK, WORLD_SIZE (and
their LOCAL_WORLD_SIZE, GROUP_RANK) set, and watches them. When a worker fails, the others are
stopped and the launcher exits with that worker's code, naming its rank. With `--mpi` each
worker runs under `mpiexec -n 1`, which the MPI backend needs to join workers started apart.
"""

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

_GRACE_SECONDS = 5.0


def _parse(argv):
    parser = argparse.ArgumentParser(prog="python -m genesis.distributed.run",
                                     description="Start and watch N workers of one job.")
    parser.add_argument("--nproc-per-node", "--nproc_per_node", type=int, default=1)
    parser.add_argument("--nnodes", type=str, default="1")
    parser.add_argument("--node-rank", "--node_rank", type=int, default=0)
    parser.add_argument("--master-addr", "--master_addr", default="127.0.0.1")
    parser.add_argument("--master-port", "--master_port", type=int, default=None)
    parser.add_argument("--standalone", action="store_true")
    parser.add_argument("--mpi", action="store_true",
                        help="run each worker under `mpiexec -n 1` (for the 'mpi' backend)")
    parser.add_argument("-m", "--module", action="store_true",
                        help="run the script argument as a module, as python -m does")
    parser.add_argument("script")
    parser.add_argument("script_args", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    if args.nnodes not in ("1", "1:1"):
        parser.error("only --nnodes 1 is supported")
    if args.nproc_per_node < 1:
        parser.error("--nproc-per-node must be at least 1")
    return args


def _free_port(host):
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _worker_env(args, port, rank):
    env = dict(os.environ)
    env.update(MASTER_ADDR=args.master_addr, MASTER_PORT=str(port), RANK=str(rank),
               LOCAL_RANK=str(rank), WORLD_SIZE=str(args.nproc_per_node),
               LOCAL_WORLD_SIZE=str(args.nproc_per_node), GROUP_RANK="0",
               TORCHELASTIC_RUN_ID="none")
    return env


def _mpiexec():
    """The mpiexec beside this Python (the mpich wheel's), else the one on PATH."""
    beside = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    found = beside if os.path.exists(beside) else shutil.which("mpiexec")
    if found is None:
        raise SystemExit("genesis.distributed.run --mpi: no mpiexec found "
                         "(pip install 'genesis[distributed]' installs MPICH's)")
    return [found, "-n", "1"]


def _start(args):
    port = args.master_port or _free_port(args.master_addr)
    command = (_mpiexec() if args.mpi else []) + [sys.executable] + (["-m"] if args.module else []) + [args.script] + \
        args.script_args
    return [subprocess.Popen(command, env=_worker_env(args, port, rank))
            for rank in range(args.nproc_per_node)]


def _stop(workers):
    """SIGTERM the workers still running, then SIGKILL those that outlast the grace period."""
    for w in workers:
        if w.poll() is None:
            w.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + _GRACE_SECONDS
    for w in workers:
        try:
            w.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            w.kill()
            w.wait()


def watch(workers):
    """0 once every worker succeeds; else the first failure's code, the others stopped."""
    while True:
        codes = [w.poll() for w in workers]
        failed = [(rank, c) for rank, c in enumerate(codes) if c not in (None, 0)]
        if failed:
            rank, code = failed[0]
            _stop(workers)
            how = f"signal {-code}" if code < 0 else f"exit code {code}"
            print(f"genesis.distributed.run: worker rank {rank} failed with {how}; "
                  f"stopped the other workers", file=sys.stderr, flush=True)
            return code if code > 0 else 128 - code
        if all(c == 0 for c in codes):
            return 0
        time.sleep(0.05)


def main(argv=None):
    args = _parse(sys.argv[1:] if argv is None else argv)
    workers = _start(args)
    try:
        return watch(workers)
    except KeyboardInterrupt:
        _stop(workers)
        return 130


if __name__ == "__main__":
    sys.exit(main())
