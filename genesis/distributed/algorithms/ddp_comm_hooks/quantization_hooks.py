"""Quantized gradient averaging for DDP (PyTorch's ddp_comm_hooks.quantization_hooks): each rank
quantizes its bucket to uint8 with its own min/max scale and zero point, per tensor or per
chunk, all-gathers scales, zero points and uint8 tensors, and every rank dequantizes and averages
them. Experimental: all-gather moves every rank's copy, so it is slower than all-reduce."""

from ...process_group import all_gather
from ...groups import group_or_world

__all__ = ["quantization_pertensor_hook", "quantization_perchannel_hook"]

QUANT_MAX = 255  # uint8's largest value; the smallest is 0


def _qparams(rows):
    """(2, len(rows)): the scale and zero point of each row (MinMaxObserver's uint8 affine
    ones): the row's range, widened to take in 0, split into 255 steps."""
    from .... import amax, amin, finfo, float32, round, stack
    min_neg, max_pos = amin(rows, dim=1).clamp(max=0), amax(rows, dim=1).clamp(min=0)
    scale = ((max_pos - min_neg) / float(QUANT_MAX)).clamp(min=finfo(float32).eps)
    zero_point = (0 - round(min_neg / scale)).clamp(0, QUANT_MAX)
    return stack((scale, zero_point))


def _quantize(rows, s_and_z):
    """`rows` as uint8, row i on the grid of scale s_and_z[0, i] and zero point s_and_z[1, i]."""
    from .... import round, uint8
    scale, zero_point = s_and_z[0].unsqueeze(1), s_and_z[1].unsqueeze(1)
    return (round(rows / scale) + zero_point).clamp(0, QUANT_MAX).to(uint8)


def _dequantize(quantized, s_and_z):
    """The float32 values uint8 `quantized` stands for under `s_and_z` (as in _quantize)."""
    from .... import float32
    scale, zero_point = s_and_z[0].unsqueeze(1), s_and_z[1].unsqueeze(1)
    return scale * (quantized.to(float32) - zero_point)


def _gathered(pg, tensor):
    """(every rank's `tensor` once gathered, the Future of the all-gather)."""
    from .... import zeros_like
    out = [zeros_like(tensor) for _ in range(pg.size())]
    return out, all_gather(out, tensor, group=pg, async_op=True).get_future()


def _quantized_average(process_group, rows):
    """The Future of the average over the group of every rank's `rows`, each rank's rows sent
    as uint8 quantized with its own per-row qparams: all-gather the qparams, quantize, all-gather
    the uint8 rows, dequantize each rank's and sum in float32, divide by the group size."""
    from .... import float32, zeros_like
    pg = group_or_world(process_group)
    all_s_and_z, fut = _gathered(pg, _qparams(rows))

    def quantize_and_allgather(fut):
        fut.wait()
        all_quantized, gather_fut = _gathered(pg, _quantize(rows, all_s_and_z[pg.rank()]))
        gather_fut.wait()
        return all_quantized

    def dequantize_and_aggregate(fut):
        total = zeros_like(rows, dtype=float32)
        for quantized, s_and_z in zip(fut.wait(), all_s_and_z):
            total += _dequantize(quantized, s_and_z)
        return total / pg.size()
    return fut.then(quantize_and_allgather).then(dequantize_and_aggregate)


def quantization_pertensor_hook(process_group, bucket):
    """Average the bucket through uint8, one scale and zero point per rank for the whole
    bucket (torch.quantize_per_tensor's scheme). Returns a new float32 tensor. PyTorch's hook
    works only on NCCL, whose all-gather Future holds one stacked tensor; this one reads the
    gathered lists, so gloo works too."""
    buffer = bucket.buffer()
    return _quantized_average(process_group, buffer.view(1, -1)).then(
        lambda fut: fut.value().view(buffer.shape))


def quantization_perchannel_hook(process_group, bucket, bucket_size=512):
    """Average the bucket through uint8 with a scale and zero point per chunk of `bucket_size`
    elements (torch.quantize_per_channel's scheme, finer than per tensor for large buckets).
    The bucket is zero-padded by `bucket_size - numel % bucket_size` (a whole chunk when it
    divides, as PyTorch does) and the padding cut off the float32 result."""
    from ....nn.functional import pad
    buffer = bucket.buffer()
    numel = buffer.numel()
    rows = pad(buffer.view(-1), (0, bucket_size - numel % bucket_size), mode="constant",
               value=0).view(-1, bucket_size)
    return _quantized_average(process_group, rows).then(
        lambda fut: fut.value().view(-1)[:numel])
