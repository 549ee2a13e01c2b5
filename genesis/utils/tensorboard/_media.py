"""Image, video and audio summaries: arrays scaled to uint8 and encoded as PNG (Pillow), GIF
(moviepy, as torch's) or WAV, as torch.utils.tensorboard.summary's."""

import io
import tempfile
import wave

import numpy as np
from tensorboard.compat.proto.summary_pb2 import Summary

from ._convert import make_np
from ._images import convert_to_HWC, prepare_video


def _to_uint8(array):
    """float values in [0, 1] (uint8 ones in [0, 255]) as clipped uint8."""
    scale = 1 if array.dtype == np.uint8 else 255
    return (array.astype(np.float32) * scale).clip(0, 255).astype(np.uint8)


def image(tag, tensor, rescale=1, dataformats="NCHW"):
    """An image (a batch as a grid) laid out as `dataformats`, PNG-encoded."""
    tensor = convert_to_HWC(make_np(tensor), dataformats)
    return Summary(value=[Summary.Value(tag=tag, image=make_image(_to_uint8(tensor),
                                                                  rescale=rescale))])


def image_boxes(tag, tensor_image, tensor_boxes, rescale=1, dataformats="CHW", labels=None):
    """An image with boxes (xyxy rows of `tensor_boxes`) and their labels drawn on it."""
    tensor_image = convert_to_HWC(make_np(tensor_image), dataformats)
    image = make_image(_to_uint8(tensor_image), rescale=rescale, rois=make_np(tensor_boxes),
                       labels=labels)
    return Summary(value=[Summary.Value(tag=tag, image=image)])


def draw_boxes(disp_image, boxes, labels=None):
    """Each xyxy row of `boxes` drawn in red on a PIL image, with its label if given."""
    for i, box in enumerate(boxes):
        disp_image = _draw_box(disp_image, *box[:4], None if labels is None else labels[i],
                               color="Red")
    return disp_image


def _draw_box(image, left, top, right, bottom, label, color="black", color_text="black",
              thickness=2):
    from PIL import ImageDraw, ImageFont

    font = ImageFont.load_default()
    draw = ImageDraw.Draw(image)
    corners = [(left, top), (left, bottom), (right, bottom), (right, top), (left, top)]
    draw.line(corners, width=thickness, fill=color)
    if label:
        x0, y0, x1, y1 = font.getbbox(label)
        width, height = x1 - x0, y1 - y0
        margin = np.ceil(0.05 * height)
        draw.rectangle([(left, bottom - height - 2 * margin), (left + width, bottom)], fill=color)
        draw.text((left + margin, bottom - height - margin), label, fill=color_text, font=font)
    return image


def make_image(tensor, rescale=1, rois=None, labels=None):
    """An HWC uint8 array as a PNG Summary.Image (resized by `rescale`, Lanczos)."""
    from PIL import Image

    height, width, channels = tensor.shape
    picture = Image.fromarray(tensor)
    if rois is not None:
        picture = draw_boxes(picture, rois, labels=labels)
    picture = picture.resize((int(width * rescale), int(height * rescale)),
                             Image.Resampling.LANCZOS)
    with io.BytesIO() as output:
        picture.save(output, format="PNG")
        encoded = output.getvalue()
    return Summary.Image(height=height, width=width, colorspace=channels,
                         encoded_image_string=encoded)


def video(tag, tensor, fps=4):
    """A BTCHW video as an animated GIF of grids (an empty value where moviepy cannot)."""
    frames = _to_uint8(prepare_video(make_np(tensor)))
    return Summary(value=[Summary.Value(tag=tag, image=make_video(frames, fps))])


def make_video(tensor, fps):
    """THWC uint8 frames as a GIF Summary.Image through moviepy.editor; None, with torch's
    message, where moviepy or its editor module is missing."""
    try:
        import moviepy  # noqa: F401
    except ImportError:
        print("add_video needs package moviepy")
        return None
    try:
        from moviepy import editor
    except ImportError:
        print("moviepy is installed, but can't import moviepy.editor.",
              "Some packages could be missing [imageio, requests]")
        return None
    _, height, width, channels = tensor.shape
    clip = editor.ImageSequenceClip(list(tensor), fps=fps)
    with tempfile.NamedTemporaryFile(suffix=".gif") as f:
        _write_gif(clip, f.name)
        f.seek(0)
        encoded = f.read()
    return Summary.Image(height=height, width=width, colorspace=channels,
                         encoded_image_string=encoded)


def _write_gif(clip, filename):
    """moviepy's write_gif, quiet: newer versions take a logger, older a progress_bar flag."""
    for quiet in ({"logger": None}, {"progress_bar": False}):
        try:
            return clip.write_gif(filename, verbose=False, **quiet)
        except TypeError:
            pass
    return clip.write_gif(filename, verbose=False)


def audio(tag, tensor, sample_rate=44100):
    """Mono samples in [-1, 1] (clipped, with torch's warning) as 16-bit WAV."""
    array = make_np(tensor).squeeze()
    if abs(array).max() > 1:
        print("warning: audio amplitude out of range, auto clipped.")
        array = array.clip(-1, 1)
    if array.ndim != 1:
        raise AssertionError("input tensor should be 1 dimensional.")
    array = (array * np.iinfo(np.int16).max).astype("<i2")
    with io.BytesIO() as output:
        with wave.open(output, "wb") as wav:
            wav.setnchannels(1)
            wav.setsampwidth(2)
            wav.setframerate(sample_rate)
            wav.writeframes(array.data)
        encoded = output.getvalue()
    sound = Summary.Audio(sample_rate=sample_rate, num_channels=1, length_frames=array.shape[-1],
                          encoded_audio_string=encoded, content_type="audio/wav")
    return Summary(value=[Summary.Value(tag=tag, audio=sound)])
