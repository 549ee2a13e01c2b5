"""The projector plugin's files for add_embedding: tensors.tsv, metadata.tsv, sprite.png and
projector_config.pbtxt, written through TensorBoard's gfile (local or remote log dirs alike)."""

import io
import math

import numpy as np
from tensorboard.compat import tf
from tensorboard.plugins.projector.projector_config_pb2 import EmbeddingInfo

from ._convert import make_np
from ._images import make_grid


def _join(directory, name):
    """gfile's join: TensorFlow's gfile has one, TensorBoard's stub keeps it on the filesystem."""
    if hasattr(tf.io.gfile, "join"):
        return tf.io.gfile.join(directory, name)
    return tf.io.gfile.get_filesystem(directory).join(directory, name)


def _write(directory, name, data):
    with tf.io.gfile.GFile(_join(directory, name), "wb") as f:
        f.write(data)


def make_tsv(metadata, save_path, metadata_header=None):
    """metadata.tsv: one label a line, or with a header one tab-separated row a line."""
    if not metadata_header:
        lines = [str(x) for x in metadata]
    else:
        if len(metadata_header) != len(metadata[0]):
            raise AssertionError("len of header must be equal to the number of columns in "
                                 "metadata")
        lines = ["\t".join(str(e) for e in row) for row in [metadata_header] + metadata]
    _write(save_path, "metadata.tsv", tf.compat.as_bytes("\n".join(lines) + "\n"))


def make_sprite(label_img, save_path):
    """sprite.png: the NCHW label images (values in [0, 1]) tiled into a square grid."""
    from PIL import Image

    ncols = math.ceil(label_img.size(0) ** 0.5)
    grid = make_grid(make_np(label_img), ncols=ncols).transpose(1, 2, 0)
    square = np.zeros((grid.shape[1], grid.shape[1], 3))
    square[:grid.shape[0]] = grid
    picture = Image.fromarray(np.uint8((square * 255).clip(0, 255)))
    with io.BytesIO() as buffer:
        picture.save(buffer, format="PNG")
        _write(save_path, "sprite.png", buffer.getvalue())


def make_mat(matlist, save_path):
    """tensors.tsv: one tab-separated row of values a line."""
    with tf.io.gfile.GFile(_join(save_path, "tensors.tsv"), "wb") as f:
        for row in matlist:
            f.write(tf.compat.as_bytes("\t".join(str(v.item()) for v in row) + "\n"))


def get_embedding_info(metadata, label_img, subdir, global_step, tag):
    """The projector config's entry for one embedding, its files under `subdir`."""
    info = EmbeddingInfo()
    info.tensor_name = f"{tag}:{str(global_step).zfill(5)}"
    info.tensor_path = _join(subdir, "tensors.tsv")
    if metadata is not None:
        info.metadata_path = _join(subdir, "metadata.tsv")
    if label_img is not None:
        info.sprite.image_path = _join(subdir, "sprite.png")
        info.sprite.single_image_dim.extend([label_img.size(3), label_img.size(2)])
    return info


def write_pbtxt(save_path, contents):
    """projector_config.pbtxt, rewritten whole."""
    _write(save_path, "projector_config.pbtxt", tf.compat.as_bytes(contents))
