"""Checks that tests/test_distributed_api.py runs inside each rank of a two-rank gloo job: DDP
communication hooks (PowerSGD's and the quantization hooks too), join with uneven inputs, object
point-to-point and subgroups. Every rank builds both ranks' data from the job's seed, so it
computes each expected result itself."""

import os
import pickle

import ml_dtypes
import numpy as np
import pytest

import genesis
import genesis.distributed as dist
from genesis import nn
from genesis.distributed.algorithms.ddp_comm_hooks import (DDPCommHookType, default_hooks,
                                                           register_ddp_comm_hook)
from genesis.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as powerSGD
from genesis.distributed.algorithms.ddp_comm_hooks import quantization_hooks as quantization
from genesis.distributed.grad_bucket import GradBucket
from genesis.nn.parallel import DistributedDataParallel as DDP

TINY_BUCKETS = 1e-5  # MB: one parameter per bucket


def start(rank, world, port):
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)


def model(seed, out=3):
    genesis.manual_seed(seed)
    return nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, out))


def batch(seed, step, rank):
    rng = np.random.default_rng([seed, step, rank])
    return genesis.tensor(rng.standard_normal((6, 4)).astype(np.float32))


def local_grads(net, x):
    """Each parameter's gradient of the loss on `x` alone, as numpy arrays."""
    net.zero_grad()
    net(x).pow(2).mean().backward()
    return [p.grad.numpy().copy() for p in net.parameters()]


def hooked_grads(seed, rank, hook=None, state=None, register=None):
    ddp = DDP(model(seed), bucket_cap_mb=TINY_BUCKETS)
    if hook is not None:
        ddp.register_comm_hook(state, hook)
    if register is not None:
        register(ddp)
    ddp(batch(seed, 0, rank)).pow(2).mean().backward()
    return ddp, [p.grad.numpy() for p in ddp.module.parameters()]


def compressed_average(grads, dtype):
    """Both ranks' gradients rounded to `dtype`, halved there, summed in float32 and rounded
    once more (the gloo sum of half types), back in float32."""
    halves = [(g.astype(dtype) / dtype(2)).astype(np.float32) for g in grads]
    return (halves[0] + halves[1]).astype(dtype).astype(np.float32)


def check_hooks(rank, seed):
    per_rank = [local_grads(model(seed), batch(seed, 0, r)) for r in range(2)]
    mean = [(a / 2 + b / 2) for a, b in zip(*per_rank)]
    for hook in (None, default_hooks.allreduce_hook):
        for got, want in zip(hooked_grads(seed, rank, hook)[1], mean):
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    halves = {default_hooks.fp16_compress_hook: np.float16,
              default_hooks.fp16_compress_wrapper(default_hooks.allreduce_hook): np.float16,
              default_hooks.bf16_compress_hook: ml_dtypes.bfloat16,
              default_hooks.bf16_compress_wrapper(default_hooks.allreduce_hook):
                  ml_dtypes.bfloat16}
    for hook, dtype in halves.items():
        for got, *grads in zip(hooked_grads(seed, rank, hook)[1], *per_rank):
            np.testing.assert_array_equal(got, compressed_average(grads, dtype))
    builtin = hooked_grads(seed, rank, register=lambda m: m._register_builtin_comm_hook(
        dist.BuiltinCommHookType.FP16_COMPRESS))[1]
    for got, *grads in zip(builtin, *per_rank):
        np.testing.assert_array_equal(got, compressed_average(grads, np.float16))
    noop = hooked_grads(seed, rank, register=lambda m: register_ddp_comm_hook(
        DDPCommHookType.NOOP, m))[1]
    for got, want in zip(noop, per_rank[rank]):
        np.testing.assert_allclose(got, want, rtol=1e-6)
    check_grad_buckets(rank, seed, per_rank)


def check_grad_buckets(rank, seed, per_rank):
    """A hook sees GradBucket's API: index, is_last, parameters and gradient views."""
    seen = []

    def recording_hook(state, bucket):
        assert state == "state"
        seen.append((bucket.index(), bucket.is_last(), bucket.parameters(),
                     [g.numpy().copy() for g in bucket.gradients()]))
        return default_hooks.allreduce_hook(None, bucket)
    ddp = hooked_grads(seed, rank, recording_hook, "state")[0]
    params = list(ddp.module.parameters())
    assert [s[0] for s in seen] == list(range(len(params)))
    assert [s[1] for s in seen] == [False] * (len(params) - 1) + [True]
    for (_, _, bucket_params, grads), p, want in zip(seen, params[::-1], per_rank[rank][::-1]):
        assert bucket_params == [p] and grads[0].shape == tuple(p.shape)
        np.testing.assert_allclose(grads[0], want, rtol=1e-6)
    with pytest.raises(RuntimeError, match="can only be called once"):
        ddp.register_comm_hook(None, default_hooks.allreduce_hook)
    with pytest.raises(TypeError, match="must be callable"):
        DDP(model(seed)).register_comm_hook(None, 3)


def joined_training(seed, rank, steps, **join_kwargs):
    """Train with join on `steps[rank]` batches; the final parameters as numpy arrays."""
    ddp = DDP(model(seed, out=1))
    opt = genesis.optim.SGD(ddp.parameters(), lr=0.1)
    with ddp.join(**join_kwargs):
        for step in range(steps[rank]):
            opt.zero_grad()
            ddp(batch(seed, step, rank)).pow(2).mean().backward()
            opt.step()
    return [p.detach().numpy() for p in ddp.module.parameters()]


def reference_training(seed, steps, divide_by_initial_world_size):
    """One process: each step's gradient is the sum of the active ranks' over the world size
    (or over the number of active ranks), as DDP's join documents."""
    net = model(seed, out=1)
    for step in range(max(steps)):
        active = [r for r in range(2) if step < steps[r]]
        grads = [local_grads(net, batch(seed, step, r)) for r in active]
        divisor = 2 if divide_by_initial_world_size else len(active)
        with genesis.no_grad():
            for k, p in enumerate(net.parameters()):
                p -= 0.1 * genesis.tensor(sum(g[k] for g in grads) / divisor)
    return [p.detach().numpy() for p in net.parameters()]


def check_join(rank, seed):
    steps = [2, 4]
    for divide in (True, False):
        got = joined_training(seed, rank, steps, divide_by_initial_world_size=divide)
        for g, want in zip(got, reference_training(seed, steps, divide)):
            np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-6)
    expected = "exhausted all inputs" if rank == 0 else "Detected at least one rank"
    with pytest.raises(RuntimeError, match=expected):
        joined_training(seed, rank, [1, 3], throw_on_early_termination=True)
    ddp = DDP(model(seed))
    assert ddp.join_device == genesis.device("cpu") and ddp.join_process_group is dist.group.WORLD
    assert not ddp.will_sync_module_buffers() and ddp.broadcast_buffers
    ddp.broadcast_buffers = False
    assert ddp.forward_sync_buffers is False


def check_objects_and_subgroups(rank):
    objects = [{"a": 1}, "two", [3.0]] if rank == 0 else [None] * 3
    if rank == 0:
        dist.send_object_list(objects, dst=1)
    else:
        assert dist.recv_object_list(objects, src=0) == 0
    assert objects == [{"a": 1}, "two", [3.0]]
    before = dist.get_pg_count()
    mine, every = dist.new_subgroups(group_size=1)
    assert len(every) == 2 and dist.get_process_group_ranks(mine) == [rank]
    assert dist.get_pg_count() == before + 1
    mine, every = dist.new_subgroups_by_enumeration([[0, 1]])
    assert dist.get_world_size(mine) == 2 and len(every) == 1
    t = genesis.tensor([float(rank + 1)])
    assert dist.all_reduce(t, async_op=True).get_future().wait()[0].tolist() == [3.0]
    with pytest.raises(ValueError, match="has appeared in both subgroup"):
        dist.new_subgroups_by_enumeration([[0, 1], [1]])


def wide_model(seed, out=1):
    """Gradients of shapes (6, 8), (6,), (out, 6) and (out,): with out 1 only the first is worth
    compressing at rank 1 (PowerSGD's default min_compression_rate of 2)."""
    genesis.manual_seed(seed)
    return nn.Sequential(nn.Linear(8, 6), nn.Tanh(), nn.Linear(6, out))


def wide_batch(seed, step, rank):
    rng = np.random.default_rng([seed, step, rank, 8])
    return genesis.tensor(rng.standard_normal((6, 8)).astype(np.float32))


def powerSGD_training(seed, rank, hook, steps=4, bucket_cap_mb=None, out=1, **options):
    """The DDP gradients of `steps` backwards (the parameters unchanged), PowerSGD starting at
    the third, and the state after each step (its Qs and errors copied)."""
    ddp = DDP(wide_model(seed, out), bucket_cap_mb=bucket_cap_mb)
    state = powerSGD.PowerSGDState(None, start_powerSGD_iter=2, **options)
    ddp.register_comm_hook(state, hook)
    grads, qs, errors = [], [], []
    for step in range(steps):
        ddp.zero_grad()
        ddp(wide_batch(seed, step, rank)).pow(2).mean().backward()
        grads.append([p.grad.numpy().copy() for p in ddp.module.parameters()])
        qs.append({i: q.numpy().copy() for i, q in state.q_memory_dict.items()})
        errors.append({i: e.numpy().copy() for i, e in state.error_dict.items()})
    return state, grads, qs, errors


def orthonormal(matrix):
    """Gram-Schmidt over the columns, as PowerSGD does."""
    out = matrix.astype(np.float64).copy()
    for i in range(out.shape[1]):
        out[:, i] /= np.linalg.norm(out[:, i])
        out[:, i + 1:] -= out[:, i:i + 1] * (out[:, i] @ out[:, i + 1:])
    return out


def power_step(matrices, q):
    """One PowerSGD step of the ranks' `matrices` from `q`: P Q^T, Q averaged."""
    p = orthonormal(sum(m @ orthonormal(q) for m in matrices))
    return p @ (sum(m.T @ p for m in matrices) / len(matrices)).T


def check_powerSGD_exact_at_full_rank(rank, seed, per_step):
    """At rank min(rows, cols) of every matrix the compressed average is the average: each
    tensor compressed by powerSGD_hook, the whole bucket (8 x 8) by the batched hook."""
    full = {powerSGD.powerSGD_hook: dict(matrix_approximation_rank=6, min_compression_rate=0.5),
            powerSGD.batched_powerSGD_hook: dict(matrix_approximation_rank=8)}
    for hook, options in full.items():
        grads = powerSGD_training(seed, rank, hook, steps=3, **options)[1]
        for step in range(3):
            for got, *local in zip(grads[step], *per_step[step]):
                np.testing.assert_allclose(got, (local[0] + local[1]) / 2, rtol=1e-4,
                                           atol=1e-6)
    grads = powerSGD_training(seed, rank, powerSGD.powerSGD_hook, steps=3, out=6,
                              matrix_approximation_rank=6, min_compression_rate=0.5,
                              batch_tensors_with_same_shape=True)[1]
    per_rank = [local_grads(wide_model(seed, 6), wide_batch(seed, 2, r)) for r in range(2)]
    for got, *local in zip(grads[2], *per_rank):  # the two (6,) biases compressed as a batch
        np.testing.assert_allclose(got, (local[0] + local[1]) / 2, rtol=1e-4, atol=1e-6)


def check_powerSGD_rank1(rank, seed, per_step):
    """powerSGD_hook at rank 1: before start_powerSGD_iter plain averaging; then the (6, 8)
    weight as one power step from the kept Q, the rest averaged, and what was lost added to
    the next step's gradients (error feedback)."""
    state, grads, qs, errors = powerSGD_training(seed, rank, powerSGD.powerSGD_hook)
    for step in range(2):
        for got, *local in zip(grads[step], *per_step[step]):
            np.testing.assert_allclose(got, (local[0] + local[1]) / 2, rtol=1e-6, atol=1e-7)
    for step in (2, 3):
        errors_before = [[np.zeros_like(g) for g in grads[step]] for _ in range(2)] \
            if step == 2 else [[g - o for g, o in zip(local, grads[2])] for local in per_step[2]]
        inputs = [[g + e for g, e in zip(local, error)]
                  for local, error in zip(per_step[step], errors_before)]
        want = [(a + b) / 2 for a, b in zip(*inputs)]
        if step == 3:
            want[0] = power_step([inputs[0][0], inputs[1][0]], qs[2][0].reshape(8, 1))
        for k, (got, w) in enumerate(zip(grads[step], want)):
            if step == 2 and k == 0:
                continue  # compressed from a random Q
            np.testing.assert_allclose(got, w, rtol=1e-4, atol=1e-6, err_msg=f"step {step} {k}")
    mine = np.concatenate([(g - o).ravel() for g, o in zip(per_step[3][rank], grads[3])])
    assert sorted(errors[3]) == [0]
    np.testing.assert_allclose(np.sort(errors[3][0]), np.sort(mine + np.concatenate(
        [e.ravel() for e in errors_before[rank]])), rtol=1e-4, atol=1e-6)
    assert state.iter == 4 and state.compression_stats() == (122 / 54, 122, 54)


def check_batched_powerSGD_rank1(rank, seed, per_step):
    """batched_powerSGD_hook at rank 1, one parameter a bucket: each bucket zero-padded to a
    square, one power step from the kept Q, the padding's error carried too."""
    state, grads, qs, errors = powerSGD_training(seed, rank, powerSGD.batched_powerSGD_hook,
                                                 bucket_cap_mb=TINY_BUCKETS)
    params = len(grads[0])
    for k in range(params):
        index = params - 1 - k  # buckets run in reverse parameter order
        n = per_step[0][0][k].size
        side = int(np.ceil(np.sqrt(n)))
        padding = errors[2][index][n:]  # the same on both ranks: P Q^T is

        def square(flat, error):
            return np.concatenate([flat.ravel(), np.zeros(side * side - n)]).reshape(
                side, side) + error.reshape(side, side)
        step2 = [np.concatenate([g.ravel() - grads[2][k].ravel(), padding])
                 for g in (per_step[2][r][k] for r in range(2))]
        np.testing.assert_allclose(errors[2][index], step2[rank], rtol=1e-4, atol=1e-6)
        matrices = [square(per_step[3][r][k], step2[r]) for r in range(2)]
        want = power_step(matrices, qs[2][index]).ravel()[:n].reshape(grads[3][k].shape)
        np.testing.assert_allclose(grads[3][k], want, rtol=1e-4, atol=1e-6)
    assert state.compression_stats() == (122 / 56, 122, 56)


def check_powerSGD_registration_and_pickling(rank, seed, per_step):
    """DDPCommHookType's PowerSGD entries wrap the process group in a PowerSGDState; a pickled
    state comes back with the default group and its memories."""
    for hook_type in (DDPCommHookType.POWER_SGD, DDPCommHookType.BATCHED_POWER_SGD_RANK2):
        ddp = DDP(wide_model(seed))
        register_ddp_comm_hook(hook_type, ddp, None)
        state = ddp.reducer.comm_state
        assert isinstance(state, powerSGD.PowerSGDState) and state.process_group is None
        assert state.start_powerSGD_iter == 1_000
        assert state.matrix_approximation_rank == (2 if "RANK2" in hook_type.name else 1)
        ddp(wide_batch(seed, 0, rank)).pow(2).mean().backward()
        for p, *local in zip(ddp.module.parameters(), *per_step[0]):
            np.testing.assert_allclose(p.grad.numpy(), (local[0] + local[1]) / 2, rtol=1e-6,
                                       atol=1e-7)
    state = powerSGD_training(seed, rank, powerSGD.powerSGD_hook, steps=3)[0]
    restored = pickle.loads(pickle.dumps(state))
    assert restored.process_group is dist.group.WORLD and restored.iter == 3
    np.testing.assert_array_equal(restored.q_memory_dict[0].numpy(),
                                  state.q_memory_dict[0].numpy())


def check_powerSGD(rank, seed):
    per_step = [[local_grads(wide_model(seed), wide_batch(seed, step, r)) for r in range(2)]
                for step in range(4)]
    check_powerSGD_exact_at_full_rank(rank, seed, per_step)
    check_powerSGD_rank1(rank, seed, per_step)
    check_batched_powerSGD_rank1(rank, seed, per_step)
    check_powerSGD_registration_and_pickling(rank, seed, per_step)


def quantized_rows(flat, chunk):
    """`flat` as one row, or zero-padded by `chunk - size % chunk` into rows of `chunk`."""
    if chunk is None:
        return flat.reshape(1, -1)
    return np.concatenate([flat, np.zeros(chunk - flat.size % chunk, np.float32)]).reshape(
        -1, chunk)


def quantized_average(grads, chunk=None):
    """Both ranks' gradients quantized to uint8 per row (MinMaxObserver's scale and zero point
    of each row's range widened to 0), dequantized, summed in float32 from zero and halved."""
    total = 0
    for grad in grads:
        rows = quantized_rows(grad.reshape(-1).astype(np.float32), chunk)
        min_neg = np.minimum(rows.min(1, keepdims=True), 0)
        max_pos = np.maximum(rows.max(1, keepdims=True), 0)
        scale = np.maximum((max_pos - min_neg) / np.float32(255), np.finfo(np.float32).eps)
        zero_point = np.clip(-np.round(min_neg / scale), 0, 255)
        quantized = np.clip(np.round(rows / scale) + zero_point, 0, 255).astype(np.uint8)
        total = total + scale * (quantized.astype(np.float32) - zero_point)
    return (total / np.float32(2)).reshape(-1)[:grads[0].size].reshape(grads[0].shape)


def check_quantization_hooks_in_ddp(rank, seed):
    """Both hooks and their DDPCommHookType registrations, one parameter a bucket, exactly
    equal to the numpy quantized average and within a quantization step of the true mean."""
    per_rank = [local_grads(model(seed), batch(seed, 0, r)) for r in range(2)]
    for hook in (quantization.quantization_pertensor_hook,
                 quantization.quantization_perchannel_hook):
        for got, *grads in zip(hooked_grads(seed, rank, hook)[1], *per_rank):
            np.testing.assert_array_equal(got, quantized_average(grads))
    registrations = {DDPCommHookType.QUANTIZE_PER_TENSOR: quantization.quantization_pertensor_hook,
                     DDPCommHookType.QUANTIZE_PER_CHANNEL:
                         quantization.quantization_perchannel_hook}
    for hook_type, hook in registrations.items():
        ddp, registered = hooked_grads(seed, rank, register=lambda m: register_ddp_comm_hook(
            hook_type, m, None))
        assert ddp.reducer.comm_hook is hook
        for got, *grads in zip(registered, *per_rank):
            np.testing.assert_array_equal(got, quantized_average(grads))
            step = max(np.ptp(np.append(g, 0)) for g in grads) / 255
            np.testing.assert_allclose(got, (grads[0] + grads[1]) / 2, rtol=0, atol=step)


def check_quantization_hooks_on_large_buckets(rank, seed):
    """Buckets past 512 elements called directly: per channel in chunks of 512 (a ragged last
    chunk; a whole padding chunk when 512 divides) and of 100, per tensor, group given or not."""
    for numel in (1100, 1024):
        both = [np.random.default_rng([seed, numel, r]).standard_normal(numel).astype(
            np.float32) * np.float32(r + 1) for r in range(2)]

        def hooked(hook, group, **kwargs):
            bucket = GradBucket(0, genesis.tensor(both[rank]), [], [], True)
            return hook(group, bucket, **kwargs).wait().numpy()
        for group in (None, dist.group.WORLD):
            np.testing.assert_array_equal(
                hooked(quantization.quantization_perchannel_hook, group),
                quantized_average(both, 512))
        np.testing.assert_array_equal(
            hooked(quantization.quantization_perchannel_hook, None, bucket_size=100),
            quantized_average(both, 100))
        np.testing.assert_array_equal(hooked(quantization.quantization_pertensor_hook, None),
                                      quantized_average(both))


def run(rank, world, port, seed):
    start(rank, world, port)
    try:
        check_hooks(rank, seed)
        check_quantization_hooks_in_ddp(rank, seed)
        check_quantization_hooks_on_large_buckets(rank, seed)
        check_powerSGD(rank, seed)
        check_join(rank, seed)
        check_objects_and_subgroups(rank)
    finally:
        dist.destroy_process_group()
