"""The safetensors file format, read and written with numpy (no dependency on `safetensors`).

Layout: an 8-byte little-endian header length N, N bytes of JSON mapping each tensor name to
{"dtype", "shape", "data_offsets": [begin, end]} (plus an optional "__metadata__" dict of
strings), then the raw little-endian tensor bytes, packed back to back in header order.
Reading validates everything before touching the data, so a truncated or corrupt file raises
`CheckpointError` naming the file instead of returning garbage.
"""

import json
import os
import sys

import ml_dtypes
import numpy as np

MAX_HEADER_BYTES = 100_000_000
_ALIGNMENT = 8

DTYPE_CODES = {
    "F64": np.dtype(np.float64), "F32": np.dtype(np.float32), "F16": np.dtype(np.float16),
    "BF16": np.dtype(ml_dtypes.bfloat16), "I64": np.dtype(np.int64), "I32": np.dtype(np.int32),
    "I16": np.dtype(np.int16), "I8": np.dtype(np.int8), "U8": np.dtype(np.uint8),
    "BOOL": np.dtype(np.bool_),
}
_CODE_OF = {v: k for k, v in DTYPE_CODES.items()}


class CheckpointError(RuntimeError):
    """A checkpoint file that is truncated, corrupt or not in the expected format."""


def _little_endian(arr):
    """`arr` as little-endian bytes in C order (a no-op on little-endian hosts)."""
    arr = np.ascontiguousarray(arr)
    return arr.byteswap() if sys.byteorder == "big" and arr.dtype.itemsize > 1 else arr


def build_header(arrays, metadata=None):
    """The encoded, space-padded JSON header for `arrays`, in order.

    `arrays` maps names to numpy arrays or to lazy stand-ins with numpy's `dtype`, `shape`,
    `nbytes` and `__array__`, so device tensors are copied to the host one at a time.
    """
    header, offset = {}, 0
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    for name, arr in arrays.items():
        if arr.dtype not in _CODE_OF:
            raise TypeError(f"safetensors: dtype {arr.dtype} of tensor '{name}' is not supported")
        header[name] = {"dtype": _CODE_OF[arr.dtype], "shape": list(arr.shape),
                        "data_offsets": [offset, offset + arr.nbytes]}
        offset += arr.nbytes
    raw = json.dumps(header, separators=(",", ":")).encode("utf-8")
    return raw + b" " * (-len(raw) % _ALIGNMENT)


def write(f, arrays, metadata=None):
    """Write `arrays` (name -> numpy array) and string `metadata` to the binary file `f`."""
    header = build_header(arrays, metadata)
    f.write(len(header).to_bytes(8, "little"))
    f.write(header)
    for arr in arrays.values():
        f.write(memoryview(_little_endian(np.asarray(arr)).reshape(-1).view(np.uint8)))


def _fail(name, message):
    raise CheckpointError(f"{name}: {message}")


def read_header(f, name, file_size):
    """Parse and validate the header of the safetensors file `f`: (entries, metadata, data start)."""
    prefix = f.read(8)
    if len(prefix) < 8:
        _fail(name, f"not a safetensors checkpoint: file is {len(prefix)} bytes, shorter than the "
                    "8-byte header length")
    size = int.from_bytes(prefix, "little")
    if size > min(MAX_HEADER_BYTES, file_size - 8):
        _fail(name, f"corrupt or truncated checkpoint: header length {size} exceeds the "
                    f"{file_size - 8} bytes that follow it")
    try:
        header = json.loads(f.read(size).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        _fail(name, f"corrupt checkpoint: header is not valid JSON ({e})")
    if not isinstance(header, dict):
        _fail(name, "corrupt checkpoint: header is not a JSON object")
    metadata = header.pop("__metadata__", None) or {}
    if not isinstance(metadata, dict):
        _fail(name, "corrupt checkpoint: __metadata__ is not a JSON object")
    data_size = file_size - 8 - size
    for key, entry in header.items():
        _check_entry(name, key, entry, data_size)
    return header, metadata, 8 + size


def _check_entry(name, key, entry, data_size):
    if not isinstance(entry, dict) or not {"dtype", "shape", "data_offsets"} <= entry.keys():
        _fail(name, f"corrupt checkpoint: entry '{key}' lacks dtype, shape or data_offsets")
    if entry["dtype"] not in DTYPE_CODES:
        _fail(name, f"tensor '{key}' has unknown dtype {entry['dtype']!r}; known: "
                    f"{', '.join(DTYPE_CODES)}")
    shape, offsets = entry["shape"], entry["data_offsets"]
    if not (isinstance(shape, list) and all(isinstance(s, int) and s >= 0 for s in shape)):
        _fail(name, f"corrupt checkpoint: tensor '{key}' has invalid shape {shape!r}")
    if not (isinstance(offsets, list) and len(offsets) == 2
            and all(isinstance(o, int) for o in offsets) and 0 <= offsets[0] <= offsets[1]):
        _fail(name, f"corrupt checkpoint: tensor '{key}' has invalid data_offsets {offsets!r}")
    if offsets[1] > data_size:
        _fail(name, f"truncated checkpoint: tensor '{key}' needs bytes {offsets[0]}..{offsets[1]} "
                    f"but the data section holds {data_size} bytes")
    expected = int(np.prod(shape, dtype=np.int64)) * DTYPE_CODES[entry["dtype"]].itemsize
    if offsets[1] - offsets[0] != expected:
        _fail(name, f"corrupt checkpoint: tensor '{key}' of shape {shape} and dtype "
                    f"{entry['dtype']} needs {expected} bytes, data_offsets span "
                    f"{offsets[1] - offsets[0]}")


def read_array(f, entry, data_start):
    """The numpy array described by the validated header `entry`, read from `f`."""
    dtype = DTYPE_CODES[entry["dtype"]]
    begin, end = entry["data_offsets"]
    arr = np.empty(entry["shape"], dtype=dtype)
    f.seek(data_start + begin)
    if end > begin:
        f.readinto(memoryview(arr.reshape(-1).view(np.uint8)))
    return arr.byteswap() if sys.byteorder == "big" and dtype.itemsize > 1 else arr


def map_array(f, entry, data_start):
    """The array of `entry` mapped copy-on-write from the file `f` names: its pages are read
    when touched, and writes to it stay in memory."""
    begin, end = entry["data_offsets"]
    if end == begin or sys.byteorder == "big":
        return read_array(f, entry, data_start)
    mapped = np.memmap(f.name, DTYPE_CODES[entry["dtype"]], "c", data_start + begin,
                       tuple(entry["shape"]))
    return mapped.view(np.ndarray)


def read(f, name, mmap=False):
    """(name -> numpy array in data order, metadata) from the open binary file `f`; with `mmap`
    the arrays map the file named `f.name` instead of being read."""
    start = f.tell()
    size = f.seek(0, os.SEEK_END) - start
    f.seek(start)
    header, metadata, data_start = read_header(f, name, size)
    order = sorted(header, key=lambda k: header[k]["data_offsets"][0])
    fetch = map_array if mmap else read_array
    return {k: fetch(f, header[k], start + data_start) for k in order}, metadata
