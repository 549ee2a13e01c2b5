"""The rest of torch.distributed's API: DDP communication hooks, join, object p2p and subgroups
over a two-rank gloo job (tests/ddp_hooks_worker.py), and in-process: the stores against
torch's HashStore, futures, debug levels, PowerSGD's state, and the coverage of
torch.distributed's names."""

import inspect
import pickle
import types
import warnings
from datetime import timedelta

import numpy as np
import pytest
import torch
import torch.distributed as tdist
from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as tpowerSGD
from torch.distributed.algorithms.ddp_comm_hooks import quantization_hooks as tquantization

import ddp_hooks_worker
import genesis
import genesis.distributed as dist
from genesis.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as powerSGD
from genesis.distributed.algorithms.ddp_comm_hooks import quantization_hooks as quantization
from genesis.futures import Future, collect_all, wait_all
from helpers import spawn_job

# Names torch.distributed imports for its own use: not part of its API.
NOT_API = {"timedelta", "log", "RankType"}

_OPTIONS = "an options struct of PyTorch's C++ process groups; genesis's collectives take " \
           "their arguments directly"
LEFT_OUT = {
    **{name: _OPTIONS for name in ("AllToAllOptions", "AllreduceCoalescedOptions",
                                   "AllreduceOptions", "BarrierOptions", "BroadcastOptions",
                                   "GatherOptions", "ReduceOptions", "ReduceScatterOptions",
                                   "ScatterOptions")},
    "DeviceMesh": "n-dimensional meshes of ranks for DTensor/FSDP2, which genesis does not have",
    "init_device_mesh": "makes a DeviceMesh (see there)",
    "GroupName": "a typing NewType for the names of PyTorch's C++ process groups",
    "Logger": "PyTorch's C++ DDP logger; genesis's DDP logs nothing",
    "Reducer": "PyTorch's C++ reducer class; genesis's is genesis.nn.parallel.reducer.Reducer",
    "ProcessGroupGloo": "PyTorch's C++ gloo process group; genesis's gloo backend sits behind "
                        "ProcessGroup",
    "BackendConfig": "the device-to-backend map of a C++ process group; genesis runs one "
                     "backend per job",
    "get_backend_config": "returns a BackendConfig (see there)",
    "reduce_op": "deprecated alias of ReduceOp",
    "register_rendezvous_handler": "URL schemes of init_method are fixed in genesis (env://, "
                                   "tcp://)",
    "record_comm": "names collectives in PyTorch's profiler traces; genesis's profiler does "
                   "not trace collectives",
    "shrink_group": "rebuilds a C++ communicator without failed ranks (fault tolerance)",
    "split_group": "ncclCommSplit-based groups; new_group serves",
    "all_gather_coalesced": "deprecated in PyTorch; all_gather over each tensor serves",
}

FLOOR = 0.99


def test_comm_hooks_join_objects_and_subgroups_over_two_ranks():
    """Hooks against their numpy averages (float16/bfloat16 rounding exact), join's uneven
    inputs against one process's training, send/recv_object_list, new_subgroups."""
    spawn_job(ddp_hooks_worker.run, 2)


def _torch_names():
    with warnings.catch_warnings():  # reading reduce_op warns
        warnings.simplefilter("ignore", FutureWarning)
        return [n for n in dir(tdist) if not n.startswith("_") and n not in NOT_API
                and not isinstance(getattr(tdist, n), types.ModuleType)]


@pytest.mark.parametrize("rows", [1, 3])
def test_quantization_matches_torchs_observers_and_backends(rows):
    """The hooks' uint8 step against torch's: MinMaxObserver (one row) or
    PerChannelMinMaxObserver qparams, quantize and dequantize, exactly. (torch's hooks
    themselves fail over gloo, so they are checked piecewise.)"""
    rng = np.random.default_rng(rows)
    x = rng.standard_normal((rows, 512)).astype(np.float32) * np.float32(3)
    x[-1] = np.abs(x[-1])  # a row with no negatives: zero point 0
    observer = torch.ao.quantization.MinMaxObserver() if rows == 1 else \
        torch.ao.quantization.PerChannelMinMaxObserver()
    observer(torch.tensor(x.reshape(-1) if rows == 1 else x))
    scale, zero_point = (t.float().reshape(-1) for t in observer.calculate_qparams())
    s_and_z = quantization._qparams(genesis.tensor(x))
    np.testing.assert_array_equal(s_and_z.numpy(), torch.stack((scale, zero_point)).numpy())
    quantized = quantization._quantize(genesis.tensor(x), s_and_z)
    want = tquantization._quantize_per_channel_backend(torch.tensor(x), scale, zero_point)
    np.testing.assert_array_equal(quantized.numpy(), want.numpy())
    np.testing.assert_array_equal(
        quantization._dequantize(quantized, s_and_z).numpy(),
        tquantization._dequantize_per_channel_backend(want, scale, zero_point).numpy())


def test_torch_distributed_coverage():
    considered = [n for n in _torch_names() if n not in LEFT_OUT]
    missing = sorted(n for n in considered if not hasattr(dist, n))
    have = len(considered) - len(missing)
    print(f"\ntorch.distributed names: {have} of {len(considered)}; missing:", *missing)
    assert have / len(considered) >= FLOOR


def test_left_out_names_are_really_left_out():
    assert not [n for n in LEFT_OUT if hasattr(dist, n)]


def _stores(tmp_path):
    master = dist.TCPStore("127.0.0.1", 0, is_master=True, timeout=5)
    yield master
    master.close()
    yield dist.HashStore()
    yield dist.FileStore(str(tmp_path / "store"))
    yield dist.PrefixStore("pre", dist.HashStore())


def _exercise(store):
    """The Store methods' results, for the same calls on genesis's and torch's stores."""
    store.set("a", "1")
    out = [store.get("a"), store.add("n", 3), store.add("n", 2), store.check(["a", "n"]),
           store.check(["zz"]), store.compare_set("a", "1", "2"), store.compare_set("a", "x", "3"),
           store.compare_set("new", "", "v"), store.compare_set("other", "zz", "v")]
    store.append("a", "xy")
    store.multi_set(["p", "q"], ["1", b"2"])
    out += [store.get("a"), store.multi_get(["a", "n", "q"]), store.delete_key("p"),
            store.delete_key("p"), store.num_keys()]
    store.queue_push("qq", b"x")
    store.queue_push("qq", "y")
    out += [store.queue_len("qq"), store.queue_pop("qq"), store.queue_pop("qq"),
            store.queue_len("qq")]
    with pytest.raises(tdist.QueueEmptyError if isinstance(store, tdist.Store)
                       else dist.QueueEmptyError, match="queue is empty"):
        store.queue_pop("qq", block=False)
    store.set_timeout(timedelta(seconds=0.2))
    for call in (lambda: store.get("missing"), lambda: store.wait(["missing"])):
        with pytest.raises(tdist.DistStoreError if isinstance(store, tdist.Store)
                           else dist.DistStoreError):
            call()
    return out + [store.timeout, store.has_extended_api()]


def test_stores_answer_as_torchs_hash_store(tmp_path):
    want = _exercise(tdist.HashStore())
    for store in _stores(tmp_path):
        assert _exercise(store) == want, type(store).__name__


def test_prefix_store_and_clones_share_the_underlying_store(tmp_path):
    base = dist.FileStore(str(tmp_path / "f"), 1)
    prefixed = dist.PrefixStore("job", base)
    prefixed.set("k", "v")
    assert base.get("job/k") == b"v" and prefixed.list_keys() == ["k"]
    assert prefixed.num_keys() == base.num_keys() == 1
    assert base.clone().get("job/k") == b"v" and prefixed.underlying_store is base
    hashed = dist.HashStore()
    hashed.clone().set("x", "1")
    assert hashed.get("x") == b"1" and isinstance(hashed, dist.Store)
    with pytest.raises(dist.DistStoreError, match=r"timed out after 0.1 s .* in "):
        base.wait(["nothing"], timedelta(seconds=0.1))


def test_futures_chain_and_fail_as_torchs():
    for F in (Future, torch.futures.Future):
        f = F()
        assert not f.done()
        chained = f.then(lambda fut: fut.value() + 1).then(lambda fut: fut.value() * 10)
        f.set_result(1)
        assert f.done() and chained.wait() == 20 and f.value() == 1
        with pytest.raises(RuntimeError, match="can only be marked completed once"):
            f.set_result(2)
        failing = F()
        after = failing.then(lambda fut: fut.value())
        failing.set_exception(ValueError("boom"))
        with pytest.raises((ValueError, RuntimeError), match="boom"):
            after.wait()
    parts = [Future() for _ in range(3)]
    every = collect_all(parts)
    for i, p in enumerate(parts):
        p.set_result(i)
    assert every.wait() == parts and wait_all(parts) == [0, 1, 2]


def test_debug_levels_and_small_names(monkeypatch):
    monkeypatch.setenv("GENESIS_DISTRIBUTED_DEBUG", "DETAIL")
    dist.set_debug_level_from_env()
    assert dist.get_debug_level() == dist.DebugLevel.DETAIL
    dist.set_debug_level(dist.DebugLevel.OFF)
    assert dist.get_debug_level() == dist.DebugLevel.OFF
    monkeypatch.setenv("GENESIS_DISTRIBUTED_DEBUG", "1")
    dist.set_debug_level_from_env()
    assert dist.get_debug_level() == dist.DebugLevel.DETAIL
    monkeypatch.delenv("GENESIS_DISTRIBUTED_DEBUG")
    dist.set_debug_level_from_env()
    for ours, theirs in ((dist.DebugLevel, tdist.DebugLevel),
                         (dist.BuiltinCommHookType, tdist.BuiltinCommHookType)):
        assert {m.name: m.value for m in ours} == \
            {name: int(m) for name, m in theirs.__members__.items()}
    assert dist.default_pg_timeout == tdist.default_pg_timeout
    assert not any(dist.supports_complex(op) for op in dist.ReduceOp)
    monkeypatch.delenv("TORCHELASTIC_RUN_ID", raising=False)
    assert not dist.is_torchelastic_launched()
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "none")
    assert dist.is_torchelastic_launched() and tdist.is_torchelastic_launched()
    assert issubclass(dist.QueueEmptyError, dist.DistStoreError)
    assert issubclass(dist.DistNetworkError, dist.DistError)
    assert dist.get_pg_count() == 0 == genesis.distributed.get_pg_count()


def test_powerSGD_state_defaults_iterations_and_pickling():
    """PowerSGDState's defaults are torch's; it counts an iteration at the last bucket; a
    pickle leaves the process group out and, unpickled, asks for the default group."""
    assert str(inspect.signature(powerSGD.PowerSGDState)) == \
        str(inspect.signature(tpowerSGD.PowerSGDState)).replace(": bool = ", "=")
    assert powerSGD.PowerSGDState.__slots__ == tpowerSGD.PowerSGDState.__slots__
    with pytest.raises(ValueError, match="start_powerSGD_iter` > 1"):
        powerSGD.PowerSGDState(None, start_powerSGD_iter=1)
    powerSGD.PowerSGDState(None, start_powerSGD_iter=1, use_error_feedback=False,
                           warm_start=False)
    state = powerSGD.PowerSGDState("group", start_powerSGD_iter=2, random_seed=5)
    buffer = genesis.zeros(3)
    for is_last, want in ((False, 0), (True, 1), (False, 1), (True, 2)):
        state.maybe_increase_iter(dist.GradBucket(0, buffer, [], [], is_last))
        assert state.iter == want
    assert state.compression_stats() == (0, 0, 0)
    state.total_numel_before_compression, state.total_numel_after_compression = 30, 12
    assert state.compression_stats() == (2.5, 30, 12)
    saved = state.__getstate__()
    assert set(saved) == set(state.__slots__) - {"process_group"} and saved["iter"] == 2
    assert saved["rng"].randint(10 ** 9) == tpowerSGD.PowerSGDState(
        None, random_seed=5).rng.randint(10 ** 9)
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        pickle.loads(pickle.dumps(state))
