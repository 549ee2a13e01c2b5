"""The gradient reducer of DistributedDataParallel: buckets all-reduced while backward runs.

Parameters are packed, in reverse order (roughly the order backward produces their gradients),
into flat buckets of at most `bucket_cap_mb` of one dtype and device. A post-accumulate hook on
each parameter copies its gradient into its bucket; a bucket whose gradients are all in is
reduced at once, asynchronously, while backward computes the rest: by the registered
communication hook, or by DDP's own (divide by the world size, all-reduce the sum). Buckets are
launched in index order so that every rank issues the same collectives in the same order. The
last gradient of the iteration waits for the hooks' futures and copies their results back to
`.grad`. A rank that has joined (uneven inputs) matches the reductions with zero buckets.
"""

from ... import distributed as dist
from ...autograd.function import AccumulateGrad
from ...autograd.grad_mode import no_grad
from ...distributed.algorithms.ddp_comm_hooks.default_hooks import sum_future
from ...distributed.grad_bucket import GradBucket
from ...ops.creation import zeros, zeros_like


class _Bucket:
    """A flat buffer of some parameters' gradients and where each one sits in it."""

    def __init__(self, params):
        self.params = params
        self.offsets, n = [], 0
        for p in params:
            self.offsets.append(n)
            n += p.numel()
        self.flat = zeros(n, dtype=params[0].dtype, device=params[0].device)

    def slice(self, i):
        p = self.params[i]
        return self.flat[self.offsets[i]:self.offsets[i] + p.numel()].view(p.shape)


def _bucket_params(params, cap_bytes):
    """Consecutive runs of `params` of one dtype and device, each under `cap_bytes`."""
    buckets, current, size = [], [], 0
    for p in params:
        nbytes = p.numel() * p.element_size()
        if current and (size + nbytes > cap_bytes or (p.dtype, p.device) !=
                        (current[0].dtype, current[0].device)):
            buckets.append(current)
            current, size = [], 0
        current.append(p)
        size += nbytes
    return buckets + [current] if current else buckets


class Reducer:
    """Averages the gradients of `params` over the world during backward."""

    def __init__(self, params, bucket_cap_mb, find_unused_parameters, process_group):
        self.params, self.group = params, process_group
        self.find_unused = find_unused_parameters
        self.comm_state = self.comm_hook = self.count_work = None
        self.buckets = [_Bucket(b) for b in
                        _bucket_params(list(reversed(params)), bucket_cap_mb * 2 ** 20)]
        self.where = {id(p): (b, i) for b, bucket in enumerate(self.buckets)
                      for i, p in enumerate(bucket.params)}
        self.handles = [p.register_post_accumulate_grad_hook(self._grad_ready) for p in params]
        self.armed = False

    def prepare(self, outputs):
        """Arm the reducer for the backward of `outputs` (called by each synced forward)."""
        if self.armed and self.used:
            missing = [i for i, p in enumerate(self.params) if id(p) not in self.ready]
            raise RuntimeError(
                "Expected to have finished reduction in the prior iteration before starting a "
                "new one. This error indicates that your module has parameters that were not "
                "used in producing loss. Pass find_unused_parameters=True to "
                "DistributedDataParallel, and make sure every forward's output takes part in "
                f"the loss. Parameter indices that did not receive a gradient: {missing}")
        self.armed, self.ready, self.used = True, set(), set()
        self.pending = [len(b.params) for b in self.buckets]
        self.futures, self.next_launch = [], 0
        if self.find_unused:
            reached = _leaves_reached(outputs)
            for p in self.params:
                if id(p) not in reached:
                    self._mark(p, used=False)

    def _grad_ready(self, p):
        if self.armed and id(p) not in self.ready:
            self._mark(p, used=True)

    def _mark(self, p, used):
        """Put `p`'s gradient (zeros when unused) in its bucket; launch buckets that are full."""
        b, i = self.where[id(p)]
        with no_grad():
            if used:
                self.buckets[b].slice(i).copy_(p.grad)
                self.used.add(id(p))
            else:
                self.buckets[b].slice(i).zero_()
        self.ready.add(id(p))
        self.pending[b] -= 1
        while self.next_launch < len(self.buckets) and self.pending[self.next_launch] == 0:
            buffer = self.buckets[self.next_launch].flat
            self.futures.append(self.run_comm_hook(self.next_launch, buffer))
            self.next_launch += 1
        if self.next_launch == len(self.buckets):
            self._finish()

    def _finish(self):
        """Wait for the reductions and write the averaged gradients back to `.grad`."""
        for bucket, fut in zip(self.buckets, self.futures):
            _take_result(bucket.flat, fut.wait())
        used = self._globally_used() if self.find_unused else None
        with no_grad():
            for bucket in self.buckets:
                for i, p in enumerate(bucket.params):
                    if used is None or used[id(p)]:
                        _write_grad(p, bucket.slice(i))
        self.armed = False

    def register_comm_hook(self, state, hook):
        """Reduce each bucket with `hook(state, GradBucket)`, which returns a Future."""
        if self.comm_hook is not None:
            raise RuntimeError("register_comm_hook or register_builtin_comm_hook can only be "
                               "called once.")
        self.comm_state, self.comm_hook = state, hook

    def set_count_work(self, work, divide_by_initial_world_size):
        """Under join: the Work of the count of ranks still training, which DDP's own reduction
        divides by unless `divide_by_initial_world_size`."""
        self.count_work = None if divide_by_initial_world_size else work

    def run_comm_hook(self, index, buffer):
        """The Future of bucket `index`'s reduction, with `buffer` as its gradients."""
        bucket = self.buckets[index]
        grad_bucket = GradBucket(index, buffer, bucket.params, bucket.offsets,
                                 index == len(self.buckets) - 1)
        if self.comm_hook is not None:
            return self.comm_hook(self.comm_state, grad_bucket)
        return sum_future(self.group, buffer.div_(self._divide_by()))

    def _divide_by(self):
        if self.count_work is None:
            return self.group.size()
        self.count_work.wait()
        return self.count_work.result()[0].item()

    def match_backward(self):
        """A joined rank's share of one backward: every bucket reduced with zeros (and the
        used-parameter flags, with find_unused_parameters)."""
        futures = [self.run_comm_hook(i, zeros_like(b.flat)) for i, b in enumerate(self.buckets)]
        for fut in futures:
            fut.wait()
        if self.find_unused:
            self._globally_used()

    def _globally_used(self):
        """Which parameters got a gradient on at least one rank (others keep `.grad` None)."""
        flags = zeros(len(self.params), device=self.params[0].device)
        for k, p in enumerate(self.params):
            if id(p) in self.used:
                flags[k] = 1.0
        dist.all_reduce(flags, dist.ReduceOp.MAX, group=self.group)
        return {id(p): f > 0 for p, f in zip(self.params, flags.tolist())}


def _take_result(flat, result):
    """Copy a hook's result (the reduced bucket, maybe of another dtype) into `flat`."""
    if result is flat:
        return
    if result.numel() != flat.numel():
        raise RuntimeError(f"The comm hook's future must hold a tensor of the bucket's "
                           f"{flat.numel()} elements, got shape {tuple(result.shape)}")
    flat.copy_(result.reshape(flat.shape))


def _write_grad(p, averaged):
    if p.grad is None:
        p.grad = averaged.clone()
    else:
        p.grad.copy_(averaged)


def _leaves_reached(outputs):
    """Ids of the leaf tensors that the autograd graph of `outputs` reaches."""
    stack = [t.grad_fn for t in _tensors(outputs) if t.grad_fn is not None]
    seen, leaves = set(), set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, AccumulateGrad):
            leaves.add(id(node.variable))
        stack.extend(e[0] for e in node._edges if e is not None)
    return leaves


def _tensors(obj):
    """The tensors in a (nested) forward output: a tensor, a tuple/list, or a dict."""
    if isinstance(obj, (list, tuple)):
        return [t for o in obj for t in _tensors(o)]
    if isinstance(obj, dict):
        return [t for o in obj.values() for t in _tensors(o)]
    return [obj] if hasattr(obj, "grad_fn") else []
