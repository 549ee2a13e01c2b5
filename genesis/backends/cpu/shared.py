"""Shared-memory storages: the memory of `Tensor.share_memory_` and of tensors sent through
genesis.multiprocessing, which other processes map and write too.

A shared storage is a numpy array over a `Segment`, one mapping of shared memory. Under the
"file_descriptor" strategy that memory is an anonymous memfd, sent as a duplicated descriptor
and freed by the kernel with its last descriptor and mapping. Under "file_system" it is a named
POSIX segment (/dev/shm/genesis_*), sent by name; a count of its holders (each process mapping
it, each handle in flight) sits after the data, and the last holder to let go unlinks it.
A process killed by a signal keeps its holds, so its named segments stay until removed by hand.
"""

import _posixshmem
import fcntl
import mmap
import os
import secrets
import struct
import sys
import weakref
from multiprocessing import reduction, util

import numpy as np

from ...dispatch import register

strategy = "file_descriptor" if sys.platform != "darwin" else "file_system"

_COUNT = struct.Struct("q")
# mmap keeps a duplicate of the descriptor it maps unless told not to (Python 3.13 on).
_UNTRACKED = {"trackfd": False} if sys.version_info >= (3, 13) else {}
_mapped = weakref.WeakValueDictionary()  # key -> the Segment of that memory mapped here


class Segment(mmap.mmap):
    """Shared memory mapped in this process. `key` tells it apart across processes (the memfd's
    device and inode, or the segment's name); `fd` or `name` is what sends it."""


def _aligned(nbytes):
    """Bytes to map for `nbytes` of data: at least one, rounded up to the count's alignment."""
    return (max(nbytes, 1) + _COUNT.size - 1) // _COUNT.size * _COUNT.size


def _map(fd, size, key):
    segment = Segment(fd, size, **_UNTRACKED)
    segment.key = key
    segment.address = np.frombuffer(segment, np.uint8).__array_interface__["data"][0]
    _mapped[key] = segment
    return segment


def _map_fd(fd, size):
    """Map memfd `fd`, keeping the descriptor to send it on; it closes with the mapping."""
    stat = os.fstat(fd)
    segment = _map(fd, size, ("fd", stat.st_dev, stat.st_ino))
    segment.fd = fd
    weakref.finalize(segment, os.close, fd)
    return segment


def _map_name(name, size):
    """Map the named segment, already counting this process among its holders."""
    fd = _posixshmem.shm_open(name, os.O_RDWR, 0o600)
    try:
        segment = _map(fd, size, ("name", name))
    finally:
        os.close(fd)
    segment.name, segment.pid = name, os.getpid()
    _release_later(segment)
    util.register_after_fork(segment, _release_later)
    return segment


def _release_later(segment):
    """Let go of this process's hold when the segment is unmapped or the process exits. Again
    after a child's start-up, which drops the finalizers of the arguments it unpickled; not in a
    forked child, which inherits the mapping but not the hold."""
    if segment.pid == os.getpid():
        util.Finalize(segment, _add_holders, (segment.name, len(segment), -1), exitpriority=0)


def _add_holders(name, size, delta):
    """Add `delta` to the named segment's count of holders, under an exclusive lock; unlink
    it when none are left."""
    fd = _posixshmem.shm_open(name, os.O_RDWR, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        count = _COUNT.unpack(os.pread(fd, _COUNT.size, size))[0] + delta
        os.pwrite(fd, _COUNT.pack(count), size)
        if count == 0:
            _posixshmem.shm_unlink(name)
    finally:
        os.close(fd)


def _create(nbytes):
    """A new segment for `nbytes` under the current strategy."""
    size = _aligned(nbytes)
    if strategy == "file_descriptor":
        fd = os.memfd_create("genesis", os.MFD_CLOEXEC)
        os.ftruncate(fd, size)
        return _map_fd(fd, size)
    name = f"/genesis_{os.getpid()}_{secrets.token_hex(8)}"
    fd = _posixshmem.shm_open(name, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
    try:
        os.ftruncate(fd, size + _COUNT.size)
        os.pwrite(fd, _COUNT.pack(1), size)
    finally:
        os.close(fd)
    return _map_name(name, size)


def segment_of(arr):
    """The Segment under `arr`, or None when its memory is private."""
    base = arr
    while isinstance(base, np.ndarray):
        base = base.base
    if isinstance(base, memoryview):
        base = base.obj
    return base if isinstance(base, Segment) else None


@register("share_storage", "cpu")
def share_storage(storage):
    """A copy of the 1-D `storage` in new shared memory."""
    shared = np.frombuffer(_create(storage.nbytes), storage.dtype, storage.size)
    np.copyto(shared, storage)
    return shared


@register("is_shared", "cpu")
def is_shared(storage):
    return segment_of(storage) is not None


def handle(storage):
    """What to pickle for the shared `storage` so that another process maps its memory: the
    segment's descriptor (duplicated for the receiver) or its name (the handle counts as a
    holder until received), the segment's size, and where and what the storage is in it."""
    segment = segment_of(storage)
    kind, size = segment.key[0], len(segment)
    if kind == "fd":
        source = reduction.DupFd(segment.fd)
    else:
        _add_holders(segment.name, size, 1)
        source = segment.name
    start = storage.__array_interface__["data"][0] - segment.address
    return kind, source, size, start, storage.dtype, storage.size


def storage_from(handle):
    """The storage a `handle` describes, over this process's mapping of its segment (one
    mapping per segment and process)."""
    kind, source, size, start, dtype, count = handle
    segment = _attach_fd(source.detach(), size) if kind == "fd" else _attach_name(source, size)
    return np.frombuffer(segment, dtype, count, start)


def _attach_fd(fd, size):
    stat = os.fstat(fd)
    segment = _mapped.get(("fd", stat.st_dev, stat.st_ino))
    if segment is None:
        return _map_fd(fd, size)
    os.close(fd)
    return segment


def _attach_name(name, size):
    """The handle's hold becomes this process's, or is dropped if the process has one."""
    segment = _mapped.get(("name", name))
    if segment is None:
        return _map_name(name, size)
    _add_holders(name, size, -1)
    return segment
