"""Precision-recall curves for the pr_curves plugin: the six rows (TP, FP, TN, FN, precision,
recall) at each threshold, computed from labels and predictions or given as they are."""

import numpy as np
from tensorboard.compat.proto.summary_pb2 import Summary, SummaryMetadata
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.plugins.pr_curve.plugin_data_pb2 import PrCurvePluginData

_MAX_THRESHOLDS = 127  # torch's cap: more breaks the protobuf
_MINIMUM_COUNT = 1e-7


def pr_curve_raw(tag, tp, fp, tn, fn, precision, recall, num_thresholds=127, weights=None):
    """A curve from its six rows as given."""
    return _summary(tag, np.stack((tp, fp, tn, fn, precision, recall)), num_thresholds)


def pr_curve(tag, labels, predictions, num_thresholds=127, weights=None):
    """The curve of binary `labels` against `predictions` in [0, 1]."""
    num_thresholds = min(num_thresholds, _MAX_THRESHOLDS)
    data = compute_curve(labels, predictions, num_thresholds=num_thresholds, weights=weights)
    return _summary(tag, data, num_thresholds)


def compute_curve(labels, predictions, num_thresholds=None, weights=None):
    """TensorBoard's pr_curve computation: (weighted) positives and negatives counted in
    `num_thresholds` buckets of the prediction, summed from each threshold up."""
    weights = 1.0 if weights is None else weights
    buckets = np.int32(np.floor(predictions * (num_thresholds - 1)))
    positive = labels.astype(np.float64)
    tp = _counts_from(buckets, positive * weights, num_thresholds)
    fp = _counts_from(buckets, (1.0 - positive) * weights, num_thresholds)
    tn = fp[0] - fp
    fn = tp[0] - tp
    precision = tp / np.maximum(_MINIMUM_COUNT, tp + fp)
    recall = tp / np.maximum(_MINIMUM_COUNT, tp + fn)
    return np.stack((tp, fp, tn, fn, precision, recall))


def _counts_from(buckets, weights, num_thresholds):
    """The weights summed per bucket, then from each bucket to the last."""
    counts, _ = np.histogram(buckets, bins=num_thresholds, range=(0, num_thresholds - 1),
                             weights=weights)
    return np.cumsum(counts[::-1])[::-1]


def _summary(tag, data, num_thresholds):
    content = PrCurvePluginData(version=0, num_thresholds=min(num_thresholds, _MAX_THRESHOLDS))
    metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(
        plugin_name="pr_curves", content=content.SerializeToString()))
    rows, columns = data.shape[0], data.shape[1]
    shape = TensorShapeProto(dim=[TensorShapeProto.Dim(size=rows),
                                  TensorShapeProto.Dim(size=columns)])
    tensor = TensorProto(dtype="DT_FLOAT", float_val=data.reshape(-1).tolist(),
                         tensor_shape=shape)
    return Summary(value=[Summary.Value(tag=tag, metadata=metadata, tensor=tensor)])
