"""PowerSGD gradient compression for DDP (PyTorch's ddp_comm_hooks.powerSGD_hook): each
gradient matrix M is all-reduced as a rank-r pair P = M Q, Q = M^T P with M ~ P Q^T, one power
iteration a step; error feedback keeps what compression lost for the next step, and warm start
keeps Q between steps."""

import logging
import math
from collections import defaultdict

import numpy as np

from ...groups import default_group, group_or_world
from . import default_hooks as default

__all__ = ["PowerSGDState", "powerSGD_hook", "batched_powerSGD_hook"]

logger = logging.getLogger(__name__)


def _orthogonalize(matrices, epsilon=0):
    """Make the columns of each (n, r) matrix of the batch `matrices` orthonormal in place:
    Gram-Schmidt up to rank 2 or in half precision, QR above it (PyTorch's choice)."""
    from .... import bfloat16, float16, linalg
    if matrices.dim() != 3 or matrices.shape[2] > matrices.shape[1]:
        raise ValueError(f"expected a batch of (n, r) matrices with r <= n, got shape "
                         f"{tuple(matrices.shape)}")
    if matrices.shape[2] <= 2 or matrices.dtype in (float16, bfloat16):
        _orthogonalize_gram_schmidt(matrices, epsilon)
    else:
        matrices.copy_(linalg.qr(matrices)[0])


def _orthogonalize_gram_schmidt(matrices, epsilon=0):
    """Gram-Schmidt over the columns in place; `epsilon` keeps an all-zero column from
    dividing by zero (with 0 it becomes NaN, as in PyTorch)."""
    from .... import norm, sum
    num_cols = matrices.shape[2]
    for i in range(num_cols):
        col = matrices[:, :, i:i + 1]
        col /= norm(col, dim=1, keepdim=True) + epsilon
        if i + 1 < num_cols:
            rest = matrices[:, :, i + 1:]
            rest -= sum(col * rest, dim=1, keepdim=True) * col


def _should_compress(num_rows, num_cols, matrix_approximation_rank, min_compression_rate):
    """(whether an (n, m) matrix shrinks by more than `min_compression_rate` as rank-r P and Q,
    its size, its compressed size)."""
    uncompressed_size = num_rows * num_cols
    compressed_size = (num_rows + num_cols) * matrix_approximation_rank
    return (compressed_size * min_compression_rate < uncompressed_size, uncompressed_size,
            compressed_size)


def _report_compression_stats(bucket, state):
    """Log the compression stats at the last bucket, every `compression_stats_logging_frequency`
    iterations."""
    if bucket.is_last() and state.iter >= state.next_stats_report:
        rate, before, after = state.compression_stats()
        logger.info("Compression stats: iter %s, total before compression %s, total after "
                    "compression %s, rate %s", state.iter, before, after, rate)
        state.next_stats_report = state.iter + state.compression_stats_logging_frequency


class PowerSGDState:
    """What PowerSGD keeps between steps: its settings, the iteration count, and per bucket
    index the error feedback and the P and Q memories (warm start). `process_group` None is
    the default group."""

    __slots__ = ["process_group", "matrix_approximation_rank", "start_powerSGD_iter",
                 "min_compression_rate", "orthogonalization_epsilon", "use_error_feedback",
                 "warm_start", "batch_tensors_with_same_shape", "rng", "error_dict",
                 "p_memory_dict", "q_memory_dict", "iter", "total_numel_before_compression",
                 "total_numel_after_compression", "compression_stats_logging_frequency",
                 "next_stats_report"]

    def __init__(self, process_group, matrix_approximation_rank=1, start_powerSGD_iter=1_000,
                 min_compression_rate=2, use_error_feedback=True, warm_start=True,
                 orthogonalization_epsilon=0, random_seed=0,
                 compression_stats_logging_frequency=10_000, batch_tensors_with_same_shape=False):
        if (use_error_feedback or warm_start) and start_powerSGD_iter <= 1:
            raise ValueError("Expect `start_powerSGD_iter` > 1 if `use_error_feedback` or "
                             "`warm_start` is enabled, because PowerSGD can only be applied "
                             "after the first two iterations in DDP.")
        self.process_group = process_group
        self.matrix_approximation_rank = matrix_approximation_rank
        self.start_powerSGD_iter = start_powerSGD_iter
        self.min_compression_rate = min_compression_rate
        self.use_error_feedback = use_error_feedback
        self.warm_start = warm_start
        self.orthogonalization_epsilon = orthogonalization_epsilon
        self.rng = np.random.RandomState(random_seed)
        self.error_dict, self.p_memory_dict, self.q_memory_dict = {}, {}, {}
        self.iter = 0
        self.total_numel_before_compression = self.total_numel_after_compression = 0
        self.compression_stats_logging_frequency = max(1, compression_stats_logging_frequency)
        self.next_stats_report = 0
        self.batch_tensors_with_same_shape = batch_tensors_with_same_shape

    def __getstate__(self):
        """Every slot but the process group, which cannot be pickled."""
        logger.warning("NOTE: Process group is not serializable and excluded from a saved state.")
        return {slot: getattr(self, slot) for slot in self.__slots__ if slot != "process_group"}

    def __setstate__(self, state):
        """The saved slots, with the default group as the process group."""
        self.process_group = default_group("PowerSGDState.__setstate__")
        logger.warning("NOTE: Process group will be set to a default group (i.e. the world "
                       "size). If a different group is desired, please set "
                       "`self.process_group` after PowerSGD state is loaded.")
        for slot, value in state.items():
            setattr(self, slot, value)

    def maybe_increase_iter(self, bucket):
        """Count an iteration at its last bucket."""
        if bucket.is_last():
            self.iter += 1
        if self.iter == self.start_powerSGD_iter:
            logger.info("Start to apply PowerSGD after %s iterations.", self.iter)

    def compression_stats(self):
        """(compression rate, elements before compression, elements after), summed over the
        compressed steps; the rate is 0 before any."""
        after = self.total_numel_after_compression
        rate = self.total_numel_before_compression / after if after > 0 else 0
        return rate, self.total_numel_before_compression, after


def _allreduce_before_start(state, bucket):
    """DDP's plain averaging, counting the iteration (PowerSGD has not started)."""
    state.maybe_increase_iter(bucket)
    return default.allreduce_hook(state.process_group, bucket)


def _add_error_feedback(state, index, tensor):
    """Add bucket `index`'s error of the last step to `tensor`; a copy of the sum (None without
    error feedback), which the error of this step is measured against."""
    from .... import zeros
    if not state.use_error_feedback:
        return None
    if index in state.error_dict:
        tensor.add_(state.error_dict[index])
    else:
        state.error_dict[index] = zeros(tensor.shape[0], device=tensor.device, dtype=tensor.dtype)
    return tensor.detach().clone()


def _finish_step(state, bucket, input_copy, decompressed):
    """Keep what compression lost as the error, drop P and Q without warm start, count."""
    if state.use_error_feedback:
        state.error_dict[bucket.index()] = input_copy - decompressed
    if not state.warm_start:
        state.p_memory_dict.clear()
        state.q_memory_dict.clear()
    state.maybe_increase_iter(bucket)


def _generator(state):
    """A CPU generator seeded from `state.rng`: one a bucket's fresh Qs, so their draws leave
    the global generator alone."""
    from .... import Generator
    return Generator().manual_seed(int(state.rng.randint(1_000_000_000)))


def _random_normal(generator, shape, like):
    """Standard normal values of `shape` from `generator`, in `like`'s dtype and device."""
    from .... import randn
    return randn(*shape, generator=generator, dtype=like.dtype).to(like.device)


def _rank(state, n, m):
    """The rank an (n, m) matrix is compressed to: no more than it has."""
    return min(n, m, state.matrix_approximation_rank)


def _split_compressible(state, tensors):
    """The tensors worth compressing, as (rows, rest) matrix views, and the others; counts
    both in the compression stats."""
    matrices, uncompressed = [], []
    for tensor in tensors:
        matrix = tensor.view(tensor.shape[0], -1)
        n, m = matrix.shape
        compress, before, after = _should_compress(n, m, _rank(state, n, m),
                                                   state.min_compression_rate)
        state.total_numel_before_compression += before
        if compress:
            matrices.append(matrix)
            state.total_numel_after_compression += after
        else:
            uncompressed.append(tensor)
            state.total_numel_after_compression += before
    return matrices, uncompressed


def _batches(state, matrices):
    """(batch, members) pairs: `batch` is (b, n, m), a view of its one member, or with
    batch_tensors_with_same_shape a stack of all the matrices of one shape."""
    from .... import stack
    by_shape = defaultdict(list)
    for matrix in matrices:
        by_shape[tuple(matrix.shape)].append(matrix)
    groups = by_shape.values() if state.batch_tensors_with_same_shape else \
        [[m] for members in by_shape.values() for m in members]
    return [(stack(g) if len(g) > 1 else g[0].unsqueeze(0), g) for g in groups]


def _views(memory, shapes):
    """Consecutive views of flat `memory`, one of each shape."""
    views, start = [], 0
    for shape in shapes:
        size = math.prod(shape)
        views.append(memory[start:start + size].view(*shape))
        start += size
    return views


def _low_rank_memories(state, index, batches, like):
    """Bucket `index`'s P and Q views, one (b, n, r) and one (b, m, r) a batch; Q orthonormal,
    from the last step's (warm start) or random."""
    from .... import empty
    p_shapes = [(b, n, _rank(state, n, m)) for b, n, m in (x.shape for x, _ in batches)]
    q_shapes = [(b, m, _rank(state, n, m)) for b, n, m in (x.shape for x, _ in batches)]
    fresh = not state.warm_start or index not in state.p_memory_dict
    if fresh:
        for memories, shapes in ((state.p_memory_dict, p_shapes), (state.q_memory_dict, q_shapes)):
            memories[index] = empty(sum(math.prod(s) for s in shapes), device=like.device,
                                    dtype=like.dtype)
    ps = _views(state.p_memory_dict[index], p_shapes)
    qs = _views(state.q_memory_dict[index], q_shapes)
    generator = _generator(state) if fresh else None
    for q in qs:
        if fresh:
            q.copy_(_random_normal(generator, q.shape, q))
        _orthogonalize(q, state.orthogonalization_epsilon)
    return ps, qs


def _flatten(tensors, like):
    """`tensors` one after another in one flat tensor (empty, of `like`'s dtype, for none)."""
    from .... import cat, tensor
    if not tensors:
        return tensor([], device=like.device, dtype=like.dtype)
    return cat([t.reshape(-1) for t in tensors])


def _unflatten(flat, tensors):
    """Copy consecutive pieces of `flat` into `tensors`."""
    start = 0
    for t in tensors:
        t.copy_(flat[start:start + t.numel()].view(t.shape))
        start += t.numel()


class _PowerSGDStep:
    """One powerSGD_hook step of one bucket; its stages are the future chain's callbacks."""

    def __init__(self, state, bucket, batches, ps, qs, uncompressed, input_copy):
        self.state, self.bucket, self.batches = state, bucket, batches
        self.ps, self.qs, self.uncompressed, self.input_copy = ps, qs, uncompressed, input_copy
        self.group = group_or_world(state.process_group)
        self.index = bucket.index()

    def sum_ps(self, fut):
        """Write back the averaged uncompressed tensors, then sum the Ps."""
        _unflatten(fut.value().div_(self.group.size()), self.uncompressed)
        return default.sum_future(self.group, self.state.p_memory_dict[self.index]).wait()

    def sum_qs(self, fut):
        """Orthogonalize the summed Ps, then sum Q = M^T P."""
        from .... import bmm
        self.state.p_memory_dict[self.index] = fut.value()
        for p in self.ps:
            _orthogonalize(p, self.state.orthogonalization_epsilon)
        for (batch, _), p, q in zip(self.batches, self.ps, self.qs):
            bmm(batch.transpose(1, 2), p, out=q)
        return default.sum_future(self.group, self.state.q_memory_dict[self.index]).wait()

    def decompress(self, fut):
        """Write P Q^T, Q averaged, over each compressed gradient; the bucket's buffer."""
        from .... import bmm
        self.state.q_memory_dict[self.index] = fut.value().div_(self.group.size())
        for (batch, members), p, q in zip(self.batches, self.ps, self.qs):
            bmm(p, q.transpose(1, 2), out=batch)
            if len(members) > 1:
                for i, member in enumerate(members):
                    member.copy_(batch[i])
        buffer = self.bucket.buffer()
        _finish_step(self.state, self.bucket, self.input_copy, buffer)
        return buffer


def powerSGD_hook(state, bucket):
    """Average the bucket's gradient matrices as rank-`matrix_approximation_rank`
    approximations P Q^T (vectors and matrices not worth it uncompressed), after
    `start_powerSGD_iter` iterations of plain averaging. Returns a Future of the buffer."""
    from .... import bmm
    if state.iter < state.start_powerSGD_iter:
        return _allreduce_before_start(state, bucket)
    buffer = bucket.buffer()
    input_copy = _add_error_feedback(state, bucket.index(), buffer)
    matrices, uncompressed = _split_compressible(state, bucket.gradients())
    _report_compression_stats(bucket, state)
    batches = _batches(state, matrices)
    ps, qs = _low_rank_memories(state, bucket.index(), batches, buffer)
    for (batch, _), q, p in zip(batches, qs, ps):
        bmm(batch, q, out=p)
    step = _PowerSGDStep(state, bucket, batches, ps, qs, uncompressed, input_copy)
    return default.sum_future(step.group, _flatten(uncompressed, buffer)).then(
        step.sum_ps).then(step.sum_qs).then(step.decompress)


def _square_matrix(state, buffer):
    """The bucket padded with zeros to the next square length, as a square matrix; counts it
    in the compression stats."""
    from .... import zeros
    side = math.ceil(math.sqrt(buffer.shape[0]))
    state.total_numel_before_compression += buffer.shape[0]
    state.total_numel_after_compression += side * state.matrix_approximation_rank * 2
    padded = zeros(side * side, device=buffer.device, dtype=buffer.dtype)
    padded[:buffer.shape[0]].copy_(buffer)
    return padded.view(side, side)


def _batched_memories(state, index, matrix):
    """Bucket `index`'s P and Q, (side, r) each; Q orthonormal, the last step's or random."""
    from .... import empty
    shape = (matrix.shape[0], state.matrix_approximation_rank)
    if not state.warm_start or index not in state.p_memory_dict:
        state.p_memory_dict[index] = empty(*shape, device=matrix.device, dtype=matrix.dtype)
        state.q_memory_dict[index] = _random_normal(_generator(state), shape, matrix)
    _orthogonalize(state.q_memory_dict[index].unsqueeze(0))
    return state.p_memory_dict[index], state.q_memory_dict[index]


def batched_powerSGD_hook(state, bucket):
    """Average the whole bucket as one square matrix (zero-padded) of rank
    `matrix_approximation_rank`, after `start_powerSGD_iter` iterations of plain averaging:
    faster than powerSGD_hook, less accurate. Returns a Future of the buffer."""
    from .... import matmul
    if state.iter < state.start_powerSGD_iter:
        return _allreduce_before_start(state, bucket)
    group, index, buffer = group_or_world(state.process_group), bucket.index(), bucket.buffer()
    matrix = _square_matrix(state, buffer)
    _report_compression_stats(bucket, state)
    padded = matrix.view(-1)
    input_copy = _add_error_feedback(state, index, padded)
    p, q = _batched_memories(state, index, matrix)
    matmul(matrix, q, out=p)

    def sum_q(fut):
        state.p_memory_dict[index] = fut.value()
        _orthogonalize(p.unsqueeze(0))
        matmul(matrix.t(), p, out=q)
        return default.sum_future(group, q).wait()

    def decompress(fut):
        state.q_memory_dict[index] = fut.value().div_(group.size())
        matmul(p, q.t(), out=matrix)
        _finish_step(state, bucket, input_copy, padded)
        return buffer.copy_(padded[:buffer.shape[0]])
    return default.sum_future(group, p).then(sum_q).then(decompress)
