"""Collectives of picklable Python objects (PyTorch's *_object and *_object_list, and the
point-to-point send/recv_object_list): the objects travel pickled, as uint8 tensors on the
backend's device."""

import pickle

import numpy as np

from .groups import member_group
from .p2p import recv, send
from .process_group import broadcast, output_list_only_on_root, root_rank


def broadcast_object_list(object_list, src=None, group=None, device=None, group_src=None):
    """Rank `src`'s objects into every rank's `object_list` (of the same length), in place."""
    pg = member_group("broadcast_object_list", group)
    if pg is None:
        return
    root = root_rank("broadcast_object_list", "src", pg, src, group_src, default=0)
    device = device or _device(pg)
    from .. import cat, empty, tensor
    if pg.rank() == root:
        payloads = [_to_tensor(obj, device) for obj in object_list]
        sizes = tensor([p.numel() for p in payloads], dtype=_int64(), device=device)
    else:
        sizes = empty(len(object_list), dtype=_int64(), device=device)
    broadcast(sizes, group=pg, group_src=root)
    counts = sizes.tolist()
    data = cat(payloads) if pg.rank() == root and payloads else \
        empty(sum(counts), dtype=_uint8(), device=device)
    broadcast(data, group=pg, group_src=root)
    if pg.rank() != root:
        object_list[:] = [pickle.loads(part.cpu().numpy().tobytes())
                          for part in data.split(counts)]


def gather_object(obj, object_gather_list=None, dst=None, group=None, group_dst=None):
    """Every rank's `obj` into `object_gather_list` (one per group rank) on rank `dst`."""
    pg = member_group("gather_object", group)
    if pg is None:
        return
    root = root_rank("gather_object", "dst", pg, dst, group_dst, default=0)
    output_list_only_on_root("gather_list", pg.rank(), root, object_gather_list)
    every = pg._backend.exchange(obj)
    if pg.rank() == root:
        object_gather_list[:len(every)] = every


def scatter_object_list(scatter_object_output_list, scatter_object_input_list=None, src=None,
                        group=None, group_src=None):
    """`scatter_object_input_list[r]` of rank `src` into group rank r's
    `scatter_object_output_list[0]`."""
    pg = member_group("scatter_object_list", group)
    if pg is None:
        return
    root = root_rank("scatter_object_list", "src", pg, src, group_src, default=0)
    if not isinstance(scatter_object_output_list, list) or len(scatter_object_output_list) < 1:
        raise ValueError("Expected argument scatter_object_output_list to be a list of size at "
                         "least 1.")
    if pg.rank() == root and scatter_object_input_list is None:
        raise ValueError("source rank must provide non-None scatter_object_input_list")
    objects = list(scatter_object_input_list) if pg.rank() == root else [None] * pg.size()
    broadcast_object_list(objects, group=pg, group_src=root)
    scatter_object_output_list[0] = objects[pg.rank()]


def send_object_list(object_list, dst=None, group=None, device=None, group_dst=None,
                     use_batch=False):
    """Send the picklable objects of `object_list` to rank `dst` (its recv_object_list)."""
    pg = member_group("send_object_list", group)
    if pg is None:
        return
    device = device or _device(pg)
    from .. import cat, tensor
    payloads = [_to_tensor(obj, device) for obj in object_list]
    sizes = tensor([p.numel() for p in payloads], dtype=_int64(), device=device)
    send(sizes, dst, pg, group_dst=group_dst)
    send(cat(payloads), dst, pg, group_dst=group_dst)


def recv_object_list(object_list, src=None, group=None, device=None, group_src=None,
                     use_batch=False):
    """Receive into `object_list` (of the sent list's length) the objects rank `src` sends
    (None: any rank); returns the sender's global rank, or -1 outside `group`."""
    pg = member_group("recv_object_list", group)
    if pg is None:
        return -1
    device = device or _device(pg)
    from .. import empty
    sizes = empty(len(object_list), dtype=_int64(), device=device)
    sender = recv(sizes, src, pg, group_src=group_src)
    counts = sizes.tolist()
    data = empty(sum(counts), dtype=_uint8(), device=device)
    recv(data, sender, pg)
    object_list[:] = [pickle.loads(part.cpu().numpy().tobytes()) for part in data.split(counts)]
    return sender


def _to_tensor(obj, device):
    from .. import tensor
    data = np.frombuffer(pickle.dumps(obj), dtype=np.uint8).copy()
    return tensor(data, device=device)


def _device(pg):
    if pg.name() != "nccl":
        return "cpu"
    from .. import cuda
    return f"cuda:{cuda.current_device()}"


def _int64():
    from .. import int64
    return int64


def _uint8():
    from .. import uint8
    return uint8
