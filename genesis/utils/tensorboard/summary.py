"""The Summary protos SummaryWriter writes, under torch.utils.tensorboard.summary's names:
scalars, tensors, histograms, text and custom-scalar layouts here; images, video and audio,
hparams, PR curves and meshes from the modules beside it."""

import struct

import numpy as np
from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary, SummaryMetadata
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.plugins.custom_scalar import layout_pb2
from tensorboard.plugins.text.plugin_data_pb2 import TextPluginData

from ... import dtypes
from ._convert import make_np
from ._hparams import hparams
from ._media import audio, draw_boxes, image, image_boxes, make_image, make_video, video
from ._mesh import mesh
from ._pr_curve import compute_curve, pr_curve, pr_curve_raw

__all__ = ["half_to_int", "int_to_half", "hparams", "scalar", "histogram_raw", "histogram",
           "make_histogram", "image", "image_boxes", "draw_boxes", "make_image", "video",
           "make_video", "audio", "custom_scalars", "text", "tensor_proto", "pr_curve_raw",
           "pr_curve", "compute_curve", "mesh"]


def half_to_int(f):
    """The float32 bit pattern of `f` as an int: what torch stores in a half type's half_val."""
    return struct.unpack("i", struct.pack("f", f))[0]


def int_to_half(i):
    """half_to_int undone."""
    return struct.unpack("f", struct.pack("i", i))[0]


def _half_vals(values):
    return [half_to_int(v) for v in values]


# genesis dtype -> (TensorProto dtype, its value field, conversion of the flat list of values)
_TENSOR_TYPES = {
    dtypes.float16: ("DT_HALF", "half_val", _half_vals),
    dtypes.bfloat16: ("DT_BFLOAT16", "half_val", _half_vals),
    dtypes.float32: ("DT_FLOAT", "float_val", list),
    dtypes.float64: ("DT_DOUBLE", "double_val", list),
    dtypes.int8: ("DT_INT8", "int_val", list),
    dtypes.uint8: ("DT_UINT8", "uint32_val", list),
    dtypes.int16: ("DT_INT16", "int_val", list),
    dtypes.int32: ("DT_INT32", "int_val", list),
    dtypes.int64: ("DT_INT64", "int64_val", list),
    dtypes.bool_: ("DT_BOOL", "bool_val", list),
}


def _plugin_metadata(plugin_name, content=b""):
    return SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name=plugin_name,
                                                                  content=content))


def _shape(sizes):
    return TensorShapeProto(dim=[TensorShapeProto.Dim(size=s) for s in sizes])


def scalar(name, tensor, collections=None, new_style=False, double_precision=False):
    """One value: simple_value, or with new_style a float (double_precision: double) tensor."""
    tensor = make_np(tensor).squeeze()
    if tensor.ndim != 0:
        raise AssertionError("Tensor should contain one element (0 dimensions). "
                             f"Was given size: {tensor.size} and {tensor.ndim} dimensions.")
    value = float(tensor)
    if not new_style:
        return Summary(value=[Summary.Value(tag=name, simple_value=value)])
    proto = (TensorProto(double_val=[value], dtype="DT_DOUBLE") if double_precision
             else TensorProto(float_val=[value], dtype="DT_FLOAT"))
    return Summary(value=[Summary.Value(tag=name, tensor=proto,
                                        metadata=_plugin_metadata("scalars"))])


def tensor_proto(tag, tensor):
    """The whole tensor, its values in the TensorProto field of its dtype."""
    if tensor.numel() * tensor.itemsize >= (1 << 31):
        raise ValueError("tensor is bigger than protocol buffer's hard limit of 2GB in size")
    dtype, field, convert = _TENSOR_TYPES[tensor.dtype]
    proto = TensorProto(dtype=dtype, tensor_shape=_shape(tensor.shape),
                        **{field: convert(tensor.flatten().tolist())})
    return Summary(value=[Summary.Value(tag=tag, metadata=_plugin_metadata("tensor"),
                                        tensor=proto)])


def histogram_raw(name, min, max, num, sum, sum_squares, bucket_limits, bucket_counts):
    """A histogram from its statistics and buckets as given."""
    hist = HistogramProto(min=min, max=max, num=num, sum=sum, sum_squares=sum_squares,
                          bucket_limit=bucket_limits, bucket=bucket_counts)
    return Summary(value=[Summary.Value(tag=name, histo=hist)])


def histogram(name, values, bins, max_bins=None):
    """A histogram of `values` (in float64) over numpy's `bins`."""
    hist = make_histogram(make_np(values).astype(float), bins, max_bins)
    return Summary(value=[Summary.Value(tag=name, histo=hist)])


def make_histogram(values, bins, max_bins=None):
    """The HistogramProto of `values`: numpy's counts, merged down to at most about `max_bins`,
    cut to the buckets from the one before the first nonempty to the last nonempty (TensorBoard
    keeps only right edges, so an empty bucket stands for the leftmost edge)."""
    if values.size == 0:
        raise ValueError("The input has no element.")
    values = values.reshape(-1)
    counts, limits = np.histogram(values, bins=bins)
    if max_bins is not None and len(counts) > max_bins:
        counts, limits = _merge_buckets(counts, limits, len(counts) // max_bins)
    occupied = np.cumsum(counts > 0)
    start, end = np.searchsorted(occupied, [0, occupied[-1] - 1], side="right")
    start, end = int(start), int(end) + 1
    counts = counts[start - 1:end] if start > 0 else np.concatenate([[0], counts[:end]])
    limits = limits[start:end + 1]
    if counts.size == 0 or limits.size == 0:
        raise ValueError("The histogram is empty, please file a bug report.")
    return HistogramProto(min=values.min(), max=values.max(), num=len(values),
                          sum=values.sum(), sum_squares=values.dot(values),
                          bucket_limit=limits.tolist(), bucket=counts.tolist())


def _merge_buckets(counts, limits, factor):
    """Each run of `factor` buckets as one (the last run padded with empty ones), as torch's."""
    remainder = len(counts) % factor
    if remainder:
        counts = np.pad(counts, [[0, factor - remainder]])
    counts = counts.reshape(-1, factor).sum(axis=-1)
    return counts, np.append(limits[:-1:factor], limits[-1])


def custom_scalars(layout):
    """The custom-scalars plugin's layout: {category: {title: ["Multiline"|"Margin", tags]}}."""
    categories = [layout_pb2.Category(title=category,
                                      chart=[_chart(title, chart) for title, chart in
                                             charts.items()])
                  for category, charts in layout.items()]
    proto = TensorProto(dtype="DT_STRING",
                        string_val=[layout_pb2.Layout(category=categories).SerializeToString()],
                        tensor_shape=TensorShapeProto())
    return Summary(value=[Summary.Value(tag="custom_scalars__config__", tensor=proto,
                                        metadata=_plugin_metadata("custom_scalars"))])


def _chart(title, chart):
    kind, tags = chart[0], chart[1]
    if kind != "Margin":
        return layout_pb2.Chart(title=title, multiline=layout_pb2.MultilineChartContent(tag=tags))
    if len(tags) != 3:
        raise AssertionError("len(tags) != 3")
    series = layout_pb2.MarginChartContent.Series(value=tags[0], lower=tags[1], upper=tags[2])
    return layout_pb2.Chart(title=title, margin=layout_pb2.MarginChartContent(series=[series]))


def text(tag, text):
    """A UTF-8 string for the text plugin, under `tag`/text_summary."""
    metadata = _plugin_metadata("text", TextPluginData(version=0).SerializeToString())
    proto = TensorProto(dtype="DT_STRING", string_val=[text.encode(encoding="utf_8")],
                        tensor_shape=_shape([1]))
    return Summary(value=[Summary.Value(tag=tag + "/text_summary", metadata=metadata,
                                        tensor=proto)])
