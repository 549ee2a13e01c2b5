"""Image layouts, as torch.utils.tensorboard's _utils: any dataformats to HWC, batches tiled into
a grid, videos into frames of grids, matplotlib figures rendered to arrays."""

import numpy as np


def figure_to_image(figures, close=True):
    """A matplotlib figure as a CHW uint8 RGB array; a list of figures as NCHW."""
    if isinstance(figures, list):
        return np.stack([_render(figure, close) for figure in figures])
    return _render(figures, close)


def _render(figure, close):
    import matplotlib.pyplot as plt
    from matplotlib.backends import backend_agg

    canvas = backend_agg.FigureCanvasAgg(figure)
    canvas.draw()
    width, height = figure.canvas.get_width_height()
    rgba = np.frombuffer(canvas.buffer_rgba(), dtype=np.uint8).reshape(height, width, 4)
    if close:
        plt.close(figure)
    return np.moveaxis(rgba[:, :, :3], 2, 0)


def make_grid(images, ncols=8):
    """N1HW or N3HW images tiled, row by row, into one 3HW canvas of at most `ncols` columns."""
    if not isinstance(images, np.ndarray):
        raise AssertionError("plugin error, should pass numpy array here")
    if images.shape[1] == 1:
        images = np.concatenate([images] * 3, 1)
    if images.ndim != 4 or images.shape[1] != 3:
        raise AssertionError("Input should be a 4D numpy array with 3 channels")
    count, _, height, width = images.shape
    ncols = min(count, ncols)
    nrows = int(np.ceil(float(count) / ncols))
    canvas = np.zeros((3, height * nrows, width * ncols), dtype=images.dtype)
    for i, image in enumerate(images):
        row, col = divmod(i, ncols)
        canvas[:, row * height:(row + 1) * height, col * width:(col + 1) * width] = image
    return canvas


def convert_to_HWC(tensor, input_format):
    """An array laid out as `input_format` (NCHW, HWC, HW... any order) as one HWC RGB image;
    a batch becomes a grid, one channel becomes three."""
    if len(set(input_format)) != len(input_format):
        raise AssertionError("You can not use the same dimension shorthand twice. "
                             f"input_format: {input_format}")
    if len(tensor.shape) != len(input_format):
        raise AssertionError("size of input tensor and input format are different. "
                             f"tensor shape: {tensor.shape}, input_format: {input_format}")
    input_format = input_format.upper()
    if len(input_format) == 4:
        grid = make_grid(tensor.transpose([input_format.find(c) for c in "NCHW"]))
        return grid.transpose(1, 2, 0)
    if len(input_format) == 3:
        hwc = tensor.transpose([input_format.find(c) for c in "HWC"])
        return np.concatenate([hwc] * 3, 2) if hwc.shape[2] == 1 else hwc
    if len(input_format) == 2:
        return np.stack([tensor.transpose([input_format.find(c) for c in "HW"])] * 3, 2)
    return None


def prepare_video(video):
    """A BTCHW video as THWC frames: the batch padded to a power of two and tiled into a grid
    (uint8 scaled to [0, 1])."""
    batch, frames, channels, height, width = video.shape
    if video.dtype == np.uint8:
        video = np.float32(video) / 255.0
    if batch & (batch - 1):
        padding = np.zeros((2 ** batch.bit_length() - batch, frames, channels, height, width))
        video = np.concatenate((video, padding), axis=0)
    nrows = 2 ** ((batch.bit_length() - 1) // 2)
    ncols = video.shape[0] // nrows
    video = video.reshape(nrows, ncols, frames, channels, height, width)
    video = video.transpose(2, 0, 4, 1, 5, 3)
    return video.reshape(frames, nrows * height, ncols * width, channels)
