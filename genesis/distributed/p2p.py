"""Point-to-point communication: one rank's tensor into another's, with PyTorch's names.

`dst`/`src`/`peer` are global ranks and `group_dst`/`group_src`/`group_peer` ranks of `group`,
as in PyTorch; a receive without a source takes the first message of any rank (MPI only).
"""

from .groups import default_group, get_global_rank, member_group
from .process_group import check_placement, root_rank


def isend(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Start sending `tensor` to `dst`; the Work's wait() returns once it may be reused."""
    return _start("isend", True, tensor, group, tag, dst, group_dst)


def irecv(tensor, src=None, group=None, tag=0, group_src=None):
    """Start receiving into `tensor` from `src` (None: any rank)."""
    return _start("irecv", False, tensor, group, tag, src, group_src, any_source=True)


def send(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Send `tensor` to `dst` and wait until it may be reused."""
    pg = member_group("send", group)
    if pg is not None:
        _not_self(pg, root_rank("send", "dst", pg, dst, group_dst), "destination")
        _start("send", True, tensor, pg, tag, dst, group_dst).wait()


def recv(tensor, src=None, group=None, tag=0, group_src=None):
    """Receive into `tensor` from `src` (None: any rank); returns the sender's global rank, or
    -1 outside `group`."""
    work = irecv(tensor, src, group, tag, group_src)
    if work is None:
        return -1
    work.wait()
    if src is not None:
        return src
    pg = group or default_group("recv")
    if group_src is None:
        group_src = work._source_rank()
        _not_self(pg, group_src, "source")
    return get_global_rank(pg, group_src)


def _start(name, is_send, tensor, group, tag, global_peer, peer, any_source=False):
    _check_tensor(tensor, "tensor")
    pg = member_group(name, group)
    if pg is None:
        return None
    if any_source and global_peer is None and peer is None:
        r = None
    else:
        r = root_rank(name, "peer", pg, global_peer, peer)
    check_placement(name, pg._backend, tensor)
    return pg._backend.p2p([(is_send, tensor, r, tag)])[0]


class P2POp:
    """One send or receive of a batch_isend_irecv: `op` is isend or irecv, `peer` a global rank
    (or `group_peer` a rank of `group`)."""

    def __new__(cls, op, tensor, peer=None, group=None, tag=0, group_peer=None):
        if op not in (isend, irecv):
            raise ValueError("Invalid ``op``. Expected ``op`` to be of type "
                             "``genesis.distributed.isend`` or ``genesis.distributed.irecv``.")
        _check_tensor(tensor, "tensor")
        return object.__new__(cls)

    def __init__(self, op, tensor, peer=None, group=None, tag=0, group_peer=None):
        self.op, self.tensor, self.tag = op, tensor, tag
        self.group = group or default_group("P2POp")
        self.group_peer = root_rank("P2POp", "peer", self.group, peer, group_peer)
        self.peer = get_global_rank(self.group, self.group_peer)

    def __repr__(self):
        me, other = self.group.rank(), self.group_peer
        src, dst = (me, other) if self.op is isend else (other, me)
        return f"P2POp({self.op.__name__} pg={self.group.group_name}, group_src={src}, " \
               f"group_dst={dst}, {self.tensor.shape}, {self.tensor.dtype})"


def batch_isend_irecv(p2p_op_list):
    """Start every send and receive of `p2p_op_list` at once (their order within the list does
    not matter); returns the Works to wait on (NCCL: one for the whole batch)."""
    if not isinstance(p2p_op_list, list) or not p2p_op_list or \
            not all(isinstance(op, P2POp) for op in p2p_op_list):
        raise ValueError("Invalid ``p2p_op_list``. Each op is expected to to be of type "
                         "``genesis.distributed.P2POp``.")
    pg = p2p_op_list[0].group
    if not all(op.group is pg for op in p2p_op_list):
        raise ValueError("All ops need to use the same group.")
    for op in p2p_op_list:
        check_placement("batch_isend_irecv", pg._backend, op.tensor)
    return pg._backend.p2p([(op.op is isend, op.tensor, op.group_peer, op.tag)
                            for op in p2p_op_list])


def _check_tensor(tensor, what):
    from ..tensor import Tensor
    if not isinstance(tensor, Tensor):
        raise TypeError(f"Invalid function argument. Expected parameter `{what}` of type "
                        f"Tensor but got {type(tensor)} instead.")


def _not_self(pg, r, what):
    if pg.rank() == r:
        raise ValueError(f"Invalid {what} rank: {what} rank should not be the same as the rank "
                         f"of the current process.")
