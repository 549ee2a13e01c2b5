"""DDP's stock communication hooks (PyTorch's ddp_comm_hooks.default_hooks): all-reduce the
bucket's average, optionally through a float16 or bfloat16 copy that halves the bytes sent."""

from ...groups import group_or_world
from ...process_group import all_reduce

__all__ = ["allreduce_hook", "fp16_compress_hook", "bf16_compress_hook",
           "fp16_compress_wrapper", "bf16_compress_wrapper"]


def sum_future(pg, tensor):
    """The Future of `tensor` summed over group `pg` in place (None: the default group)."""
    return all_reduce(tensor, group=group_or_world(pg), async_op=True).get_future().then(
        lambda fut: fut.value()[0])


def allreduce_hook(process_group, bucket):
    """The bucket divided by the group size, then summed: DDP's own reduction."""
    return sum_future(process_group, bucket.buffer().div_(group_or_world(process_group).size()))


def _compress_hook(dtype, process_group, bucket):
    """The bucket cast to `dtype` and divided by the group size, all-reduced in `dtype`, then
    copied back into the bucket's buffer."""
    buffer = bucket.buffer()
    compressed = buffer.to(dtype).div_(group_or_world(process_group).size())
    return sum_future(process_group, compressed).then(lambda fut: buffer.copy_(fut.value()))


def fp16_compress_hook(process_group, bucket):
    """Average the bucket in float16 (its values rounded to float16 before and after)."""
    from .... import float16
    return _compress_hook(float16, process_group, bucket)


def bf16_compress_hook(process_group, bucket):
    """Average the bucket in bfloat16 (its values rounded to bfloat16 before and after)."""
    from .... import bfloat16
    return _compress_hook(bfloat16, process_group, bucket)


def _compress_wrapper(dtype, hook):
    """`hook` run on the bucket cast to `dtype`; its result cast back to the bucket's dtype."""

    def compressed_hook(hook_state, bucket):
        bucket.set_buffer(bucket.buffer().to(dtype))
        fut = hook(hook_state, bucket)

        def decompress(fut):
            return bucket.buffer().copy_(fut.value())
        return fut.then(decompress)
    return compressed_hook


def fp16_compress_wrapper(hook):
    """`hook` made to communicate in float16 (fp16_compress_hook is this of allreduce_hook)."""
    from .... import float16
    return _compress_wrapper(float16, hook)


def bf16_compress_wrapper(hook):
    """`hook` made to communicate in bfloat16."""
    from .... import bfloat16
    return _compress_wrapper(bfloat16, hook)
