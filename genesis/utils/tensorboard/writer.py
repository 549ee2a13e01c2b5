"""SummaryWriter and FileWriter, as torch.utils.tensorboard's: summaries of genesis tensors,
numpy arrays and Python numbers written as TensorBoard event files by TensorBoard's own
EventFileWriter."""

import os
import socket
import time
from datetime import datetime

from google.protobuf import text_format
from tensorboard.compat import tf
from tensorboard.compat.proto.event_pb2 import Event, SessionLog, TaggedRunMetadata
from tensorboard.plugins.projector.projector_config_pb2 import ProjectorConfig
from tensorboard.summary.writer.event_file_writer import EventFileWriter

from ._convert import make_np
from ._embedding import get_embedding_info, make_mat, make_sprite, make_tsv, write_pbtxt
from ._images import figure_to_image
from ._onnx_graph import load_onnx_graph
from ._pytorch_graph import graph
from .summary import (audio, custom_scalars, histogram, histogram_raw, hparams, image,
                      image_boxes, mesh, pr_curve, pr_curve_raw, scalar, tensor_proto, text,
                      video)

__all__ = ["FileWriter", "SummaryWriter"]


def _tensorflow_bins():
    """TensorFlow's default histogram buckets: +-1e-12 growing by 1.1 up to 1e20, and 0."""
    limits = []
    v = 1e-12
    while v < 1e20:
        limits.append(v)
        v *= 1.1
    return [-v for v in reversed(limits)] + [0] + limits


class FileWriter:
    """Events into one event file of `log_dir`, queued and flushed by EventFileWriter."""

    def __init__(self, log_dir, max_queue=10, flush_secs=120, filename_suffix=""):
        self.event_writer = EventFileWriter(str(log_dir), max_queue, flush_secs, filename_suffix)

    def get_logdir(self):
        return self.event_writer.get_logdir()

    def add_event(self, event, step=None, walltime=None):
        """`event` stamped with `walltime` (now by default) and `step` (an int), queued."""
        event.wall_time = time.time() if walltime is None else walltime
        if step is not None:
            event.step = int(step)
        self.event_writer.add_event(event)

    def add_summary(self, summary, global_step=None, walltime=None):
        self.add_event(Event(summary=summary), global_step, walltime)

    def add_graph(self, graph_profile, walltime=None):
        """A (GraphDef, RunMetadata) pair: the graph, then its step statistics as "step1"."""
        graph, stepstats = graph_profile[0], graph_profile[1]
        self.add_event(Event(graph_def=graph.SerializeToString()), None, walltime)
        tagged = TaggedRunMetadata(tag="step1", run_metadata=stepstats.SerializeToString())
        self.add_event(Event(tagged_run_metadata=tagged), None, walltime)

    def add_onnx_graph(self, graph, walltime=None):
        self.add_event(Event(graph_def=graph.SerializeToString()), None, walltime)

    def flush(self):
        self.event_writer.flush()

    def close(self):
        self.event_writer.close()

    def reopen(self):
        self.event_writer.reopen()


class SummaryWriter:
    """Writes summaries to event files under `log_dir` (runs/<time>_<host><comment> by default)
    for TensorBoard; add_scalars adds a writer per tag in a subdirectory."""

    def __init__(self, log_dir=None, comment="", purge_step=None, max_queue=10, flush_secs=120,
                 filename_suffix=""):
        if not log_dir:
            now = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", now + "_" + socket.gethostname() + comment)
        self.log_dir = log_dir
        self.purge_step = purge_step
        self.max_queue = max_queue
        self.flush_secs = flush_secs
        self.filename_suffix = filename_suffix
        self.file_writer = self.all_writers = None
        self._get_file_writer()
        self.default_bins = _tensorflow_bins()

    def _get_file_writer(self):
        """The default FileWriter, opened again after close(); a purge_step is written once, as
        a restart that makes TensorBoard drop the events at and after it."""
        if self.all_writers is None or self.file_writer is None:
            self.file_writer = FileWriter(self.log_dir, self.max_queue, self.flush_secs,
                                          self.filename_suffix)
            self.all_writers = {self.file_writer.get_logdir(): self.file_writer}
            if self.purge_step is not None:
                self.file_writer.add_event(Event(step=self.purge_step,
                                                 file_version="brain.Event:2"))
                self.file_writer.add_event(Event(step=self.purge_step,
                                                 session_log=SessionLog(status=SessionLog.START)))
                self.purge_step = None
        return self.file_writer

    def _add(self, summary, global_step=None, walltime=None):
        self._get_file_writer().add_summary(summary, global_step, walltime)

    def get_logdir(self):
        return self.log_dir

    def add_hparams(self, hparam_dict, metric_dict, hparam_domain_discrete=None, run_name=None,
                    global_step=None):
        """The hparams and the metrics' values, in a run of their own under the log dir (named
        `run_name`, the time by default)."""
        if type(hparam_dict) is not dict or type(metric_dict) is not dict:
            raise TypeError("hparam_dict and metric_dict should be dictionary.")
        summaries = hparams(hparam_dict, metric_dict, hparam_domain_discrete)
        logdir = os.path.join(self._get_file_writer().get_logdir(), run_name or str(time.time()))
        with SummaryWriter(log_dir=logdir) as run:
            for summary in summaries:
                run.file_writer.add_summary(summary, global_step)
            for tag, value in metric_dict.items():
                run.add_scalar(tag, value, global_step)

    def add_scalar(self, tag, scalar_value, global_step=None, walltime=None, new_style=False,
                   double_precision=False):
        self._add(scalar(tag, scalar_value, new_style=new_style,
                         double_precision=double_precision), global_step, walltime)

    def add_scalars(self, main_tag, tag_scalar_dict, global_step=None, walltime=None):
        """Each value of `tag_scalar_dict` under `main_tag`, each in a run of its own:
        <log dir>/<main_tag>_<tag>."""
        walltime = time.time() if walltime is None else walltime
        root = self._get_file_writer().get_logdir()
        for tag, value in tag_scalar_dict.items():
            run = root + "/" + main_tag.replace("/", "_") + "_" + tag
            if run not in self.all_writers:
                self.all_writers[run] = FileWriter(run, self.max_queue, self.flush_secs,
                                                   self.filename_suffix)
            self.all_writers[run].add_summary(scalar(main_tag, value), global_step, walltime)

    def add_tensor(self, tag, tensor, global_step=None, walltime=None):
        self._add(tensor_proto(tag, tensor), global_step, walltime)

    def add_histogram(self, tag, values, global_step=None, bins="tensorflow", walltime=None,
                      max_bins=None):
        """`bins`: "tensorflow" (TensorFlow's default buckets) or any of np.histogram's."""
        if isinstance(bins, str) and bins == "tensorflow":
            bins = self.default_bins
        self._add(histogram(tag, values, bins, max_bins=max_bins), global_step, walltime)

    def add_histogram_raw(self, tag, min, max, num, sum, sum_squares, bucket_limits,
                          bucket_counts, global_step=None, walltime=None):
        if len(bucket_limits) != len(bucket_counts):
            raise ValueError("len(bucket_limits) != len(bucket_counts), see the document.")
        self._add(histogram_raw(tag, min, max, num, sum, sum_squares, bucket_limits,
                                bucket_counts), global_step, walltime)

    def add_image(self, tag, img_tensor, global_step=None, walltime=None, dataformats="CHW"):
        self._add(image(tag, img_tensor, dataformats=dataformats), global_step, walltime)

    def add_images(self, tag, img_tensor, global_step=None, walltime=None, dataformats="NCHW"):
        self._add(image(tag, img_tensor, dataformats=dataformats), global_step, walltime)

    def add_image_with_boxes(self, tag, img_tensor, box_tensor, global_step=None, walltime=None,
                             rescale=1, dataformats="CHW", labels=None):
        """Labels are drawn only when there is one per box."""
        if isinstance(labels, str):
            labels = [labels]
        if labels is not None and len(labels) != box_tensor.shape[0]:
            labels = None
        self._add(image_boxes(tag, img_tensor, box_tensor, rescale=rescale,
                              dataformats=dataformats, labels=labels), global_step, walltime)

    def add_figure(self, tag, figure, global_step=None, close=True, walltime=None):
        """A matplotlib figure (or a list of them, as a grid) rendered as an image."""
        dataformats = "NCHW" if isinstance(figure, list) else "CHW"
        self.add_image(tag, figure_to_image(figure, close), global_step, walltime,
                       dataformats=dataformats)

    def add_video(self, tag, vid_tensor, global_step=None, fps=4, walltime=None):
        self._add(video(tag, vid_tensor, fps), global_step, walltime)

    def add_audio(self, tag, snd_tensor, global_step=None, sample_rate=44100, walltime=None):
        self._add(audio(tag, snd_tensor, sample_rate=sample_rate), global_step, walltime)

    def add_text(self, tag, text_string, global_step=None, walltime=None):
        self._add(text(tag, text_string), global_step, walltime)

    def add_onnx_graph(self, prototxt):
        self._get_file_writer().add_onnx_graph(load_onnx_graph(prototxt))

    def add_graph(self, model, input_to_model=None, verbose=False, use_strict_trace=True):
        """The graph of `model`'s forward on `input_to_model` (a tensor or a tuple of them),
        recorded from its autograd graph under module scopes (see _pytorch_graph)."""
        self._get_file_writer().add_graph(graph(model, input_to_model, verbose, use_strict_trace))

    @staticmethod
    def _encode(rawstr):
        """`rawstr` with %, / and \\ percent-encoded, as a directory name."""
        return rawstr.replace("%", "%25").replace("/", "%2f").replace("\\", "%5c")

    def add_embedding(self, mat, metadata=None, label_img=None, global_step=None, tag="default",
                      metadata_header=None):
        """Rows of `mat` for the projector, with their labels and sprite images, under
        <log dir>/<step>/<tag>; projector_config.pbtxt lists every embedding added."""
        mat = make_np(mat)
        global_step = 0 if global_step is None else global_step
        subdir = f"{str(global_step).zfill(5)}/{self._encode(tag)}"
        save_path = os.path.join(self._get_file_writer().get_logdir(), subdir)
        _make_embedding_dir(save_path)
        if metadata is not None:
            if mat.shape[0] != len(metadata):
                raise AssertionError("#labels should equal with #data points")
            make_tsv(metadata, save_path, metadata_header=metadata_header)
        if label_img is not None:
            if mat.shape[0] != label_img.shape[0]:
                raise AssertionError("#images should equal with #data points")
            make_sprite(label_img, save_path)
        if mat.ndim != 2:
            raise AssertionError("mat should be 2D, where mat.size(0) is the number of data "
                                 "points")
        make_mat(mat, save_path)
        if not hasattr(self, "_projector_config"):
            self._projector_config = ProjectorConfig()
        self._projector_config.embeddings.extend(
            [get_embedding_info(metadata, label_img, subdir, global_step, tag)])
        write_pbtxt(self._get_file_writer().get_logdir(),
                    text_format.MessageToString(self._projector_config))

    def add_pr_curve(self, tag, labels, predictions, global_step=None, num_thresholds=127,
                     weights=None, walltime=None):
        self._add(pr_curve(tag, make_np(labels), make_np(predictions), num_thresholds, weights),
                  global_step, walltime)

    def add_pr_curve_raw(self, tag, true_positive_counts, false_positive_counts,
                         true_negative_counts, false_negative_counts, precision, recall,
                         global_step=None, num_thresholds=127, weights=None, walltime=None):
        self._add(pr_curve_raw(tag, true_positive_counts, false_positive_counts,
                               true_negative_counts, false_negative_counts, precision, recall,
                               num_thresholds, weights), global_step, walltime)

    def add_custom_scalars_multilinechart(self, tags, category="default", title="untitled"):
        self._add(custom_scalars({category: {title: ["Multiline", tags]}}))

    def add_custom_scalars_marginchart(self, tags, category="default", title="untitled"):
        """`tags`: the value's, the lower bound's and the upper bound's."""
        if len(tags) != 3:
            raise AssertionError(f"Expected 3 tags, got {len(tags)}.")
        self._add(custom_scalars({category: {title: ["Margin", tags]}}))

    def add_custom_scalars(self, layout):
        """`layout`: {category: {title: ["Multiline" or "Margin", tags]}}."""
        self._add(custom_scalars(layout))

    def add_mesh(self, tag, vertices, colors=None, faces=None, config_dict=None,
                 global_step=None, walltime=None):
        self._add(mesh(tag, vertices, colors, faces, config_dict), global_step, walltime)

    def flush(self):
        for writer in (self.all_writers or {}).values():
            writer.flush()

    def close(self):
        """Flushes and closes every writer; a later add opens the default one again."""
        for writer in (self.all_writers or {}).values():
            writer.flush()
            writer.close()
        self.file_writer = self.all_writers = None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.close()


def _make_embedding_dir(save_path):
    """The embedding's directory, made; one already there is reused with torch's warning."""
    if not tf.io.gfile.exists(save_path):
        tf.io.gfile.makedirs(save_path)
    elif tf.io.gfile.isdir(save_path):
        print("warning: Embedding dir exists, did you set global_step for add_embedding()?")
    else:
        raise NotADirectoryError(f"Path: `{save_path}` exists, but is a file. Cannot proceed.")
