"""genesis.multiprocessing: spawn runs fn(i, *args) in fresh processes, and reports a child's
exception or exit code as torch.multiprocessing does; the sharing-strategy API."""

import pytest
import torch.multiprocessing as torch_mp

import genesis.multiprocessing as mp
import spawn_targets


def test_spawn_runs_each_index(tmp_path):
    assert mp.spawn(spawn_targets.write_rank_sum, args=(str(tmp_path), 10), nprocs=2) is None
    assert [float((tmp_path / str(i)).read_text()) for i in range(2)] == [45.0, 46.0]


def test_a_raising_child_raises_its_traceback():
    with pytest.raises(mp.ProcessRaisedException) as failure:
        mp.spawn(spawn_targets.raise_on_one, nprocs=2)
    assert failure.value.error_index == 1
    assert "-- Process 1 terminated with the following error:" in str(failure.value)
    assert "ValueError: child 1 failed on purpose" in str(failure.value)


def test_an_exiting_child_gives_its_code():
    context = mp.start_processes(spawn_targets.exit_with_code, args=(3,), nprocs=1, join=False,
                                 start_method="spawn")
    with pytest.raises(mp.ProcessExitedException, match="^process 0 terminated with exit code 3$"):
        while not context.join():
            pass
    assert context.processes[0].exitcode == 3


def test_sharing_strategies_as_torch():
    assert mp.get_all_sharing_strategies() == torch_mp.get_all_sharing_strategies()
    assert mp.get_sharing_strategy() == torch_mp.get_sharing_strategy()
    mp.set_sharing_strategy("file_system")
    assert mp.get_sharing_strategy() == "file_system"
    mp.set_sharing_strategy("file_descriptor")
    with pytest.raises(AssertionError, match="invalid sharing strategy 'x'"):
        mp.set_sharing_strategy("x")


def test_reexports_python_multiprocessing():
    assert mp.Queue is not None and mp.cpu_count() >= 1 and mp.get_context("spawn")
