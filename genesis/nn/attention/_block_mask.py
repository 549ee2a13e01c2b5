"""BlockMask and the mask helpers of torch.nn.attention.flex_attention (create_block_mask,
create_mask, noop_mask, and_masks, or_masks).

torch evaluates a mod under four nested vmaps, one element per call. Genesis calls it once with
broadcast int32 index tensors instead, b (B, 1, 1, 1), h (1, H, 1, 1), q_idx (1, 1, L, 1) and
kv_idx (1, 1, 1, S), and broadcasts the result to (B, H, L, S). Every mod written with tensor
ops gives the same values that way: arithmetic and comparisons, `genesis.where`, one subscript
of a captured tensor by index tensors (`bias[h, q_idx - kv_idx]`, `doc[q_idx] == doc[kv_idx]`).
What does not carry over, as it does not under vmap either: data-dependent Python control flow
(`if q_idx > kv_idx:`, `bool()`/`.item()` of an index) and chained subscripts (`bias[h][q_idx]`
indexes the broadcast result's first dim; write `bias[h, q_idx]`).
"""

import functools
import inspect
import itertools
import operator
import warnings

from ... import dtypes
from ...ops import creation, ranges
from ...ops import elementwise as ew
from ...ops import shape_copies
from ...ops.common import broadcast_shapes
from ...tensor import Tensor
from ..functional.padding import pad

__all__ = ["BlockMask", "create_block_mask", "create_mask", "noop_mask", "and_masks", "or_masks"]

_DEFAULT_SPARSE_BLOCK_SIZE = 128
_LARGE_SPARSE_BLOCK_SIZE = 1 << 30
_CHUNK_ELEMENTS = 1 << 24  # mask entries create_block_mask evaluates at once


def noop_mask(batch, head, token_q, token_kv):
    """Returns a noop mask_mod"""
    return batch.new_ones((), dtype=dtypes.bool_, device=batch.device)


def or_masks(*mask_mods):
    """Returns a mask_mod that's the union of provided mask_mods"""
    return _combined(mask_mods, False, operator.or_, "or_mask")


def and_masks(*mask_mods):
    """Returns a mask_mod that's the intersection of provided mask_mods"""
    return _combined(mask_mods, True, operator.and_, "and_mask")


def _combined(mask_mods, start, combine, name):
    """The mask_mod (named `name`, as torch's) folding `mask_mods` with `combine` from `start`."""
    if not all(callable(arg) for arg in mask_mods):
        raise RuntimeError(f"All inputs should be callable mask_mods: {mask_mods}")

    def combined(b, h, q_idx, kv_idx):
        first = b.new_full((), start, dtype=dtypes.bool_)
        return functools.reduce(combine, (m(b, h, q_idx, kv_idx) for m in mask_mods), first)

    combined.__name__ = name
    return combined


def _sliced_mask_mod_error(batch, head, token_q, token_kv):
    """Raises helpful error when using mask_mod from a sliced BlockMask (a slice's mask_mod is
    this stub: the original's would see the sliced indices)."""
    raise RuntimeError(
        "Cannot use mask_mod from a sliced BlockMask. "
        "When you slice a BlockMask using [], the mask_mod attribute is reset. "
        "You must set it from the original BlockMask's mask_mod."
        "\n\nIncorrect usage:"
        "\n  base_mask = create_block_mask(my_mask_fn, ...)"
        "\n  sliced_mask = base_mask[:, :, block_idx]"
        "\n  sliced_mask.mask_mod = apply_offset(sliced_mask.mask_mod, offset)  # WRONG!"
        "\n\nCorrect usage:"
        "\n  base_mask = create_block_mask(my_mask_fn, ...)"
        "\n  sliced_mask = base_mask[:, :, block_idx]"
        "\n  sliced_mask.mask_mod = apply_offset(base_mask.mask_mod, offset)  # Use base_mask!"
    )


def _positional_args(fn):
    """How many positional arguments without defaults `fn` takes: 5 for a score_mod, 4 for a
    mask_mod (torch's _get_mod_type)."""
    if hasattr(fn, "__code__"):
        count = fn.__code__.co_argcount - len(getattr(fn, "__defaults__", None) or ())
    else:
        count = sum(1 for p in inspect.signature(fn).parameters.values()
                    if p.default is inspect.Parameter.empty)
    if count not in (4, 5):
        raise AssertionError(f"Expected 4 or 5 positional args, got {count}")
    return count


def index_grid(start, stop, dim, device):
    """int32 arange(start, stop) laid along `dim` of four (b, h, q_idx, kv_idx) dims."""
    shape = [1, 1, 1, 1]
    shape[dim] = stop - start
    return ranges.arange(start, stop, dtype=dtypes.int32, device=device).view(*shape)


def bhqk_grids(batch, heads, q_len, kv_len, device):
    """The b, h, q_idx, kv_idx index tensors a mod is called with over (B, H, L, S)."""
    return tuple(index_grid(0, n, dim, device)
                 for dim, n in enumerate((batch, heads, q_len, kv_len)))


def _default_device(device):
    """torch's default device for mask creation: the current accelerator, else the CPU."""
    if device is not None:
        return device
    from ... import accelerator
    return accelerator.current_accelerator() or "cpu"


def create_mask(mod_fn, B, H, Q_LEN, KV_LEN, device=None):
    """The dense (B, H, Q_LEN, KV_LEN) mask of a mask_mod, or of a score_mod (False where it
    gives -inf on zero scores)."""
    device = _default_device(device)
    B, H = 1 if B is None else B, 1 if H is None else H
    shape = (B, H, Q_LEN, KV_LEN)
    b, h, m, n = bhqk_grids(B, H, Q_LEN, KV_LEN, device)
    if _positional_args(mod_fn) == 5:
        out = mod_fn(creation.zeros(shape, device=device), b, h, m, n)
        return (~out.isneginf()).expand(*shape).contiguous()
    return mod_fn(b, h, m, n).expand(*shape).contiguous()


def _round_up(x, multiple):
    return (x + multiple - 1) // multiple * multiple


def _band_counts(mask, rows, kv_len, q_block, kv_block):
    """Allowed entries per (q block, kv block) of one band of `rows` query rows; the blocks
    past the lengths are padded with False, as torch pads."""
    if mask.dtype is not dtypes.bool_:
        raise AssertionError(f"mask.dtype must be genesis.bool, got {mask.dtype}")
    mask = mask.expand(*broadcast_shapes(mask.shape, (1, 1, rows, kv_len)))
    mask = pad(mask, (0, _round_up(kv_len, kv_block) - kv_len,
                      0, _round_up(rows, q_block) - rows))
    b, h, q, kv = mask.shape
    return mask.reshape(b, h, q // q_block, q_block, kv // kv_block, kv_block).sum((3, 5))


def _block_counts(mask_mod, B, H, Q_LEN, KV_LEN, q_block, kv_block, device):
    """Allowed entries of each (B, H, q block, kv block) block, the mask evaluated a band of
    query blocks at a time so that no more than about _CHUNK_ELEMENTS entries exist at once."""
    width = B * H * _round_up(KV_LEN, kv_block)
    rows = q_block * max(1, _CHUNK_ELEMENTS // (width * q_block))
    b, h = index_grid(0, B, 0, device), index_grid(0, H, 1, device)
    kv = index_grid(0, KV_LEN, 3, device)
    bands = [_band_counts(mask_mod(b, h, index_grid(start, min(start + rows, Q_LEN), 2, device),
                                   kv), min(rows, Q_LEN - start), KV_LEN, q_block, kv_block)
             for start in range(0, Q_LEN, rows)]
    return shape_copies.cat([band.expand(B, H, *band.shape[2:]) for band in bands], dim=2)


def _dense_to_ordered(dense_mask):
    """(num_blocks_in_row, col_indices) of a dense 0/1 block matrix: the blocks of each row
    first, in column order."""
    dense_mask = dense_mask.to(dtypes.int32)
    num_blocks_in_row = dense_mask.sum(dim=-1)
    col_indices = dense_mask.argsort(dim=-1, descending=True, stable=True)
    return (num_blocks_in_row.to(dtypes.int32).contiguous(),
            col_indices.to(dtypes.int32).contiguous())


def _ordered_to_dense(num_blocks_in_row, col_indices, num_cols):
    """The dense int32 (..., rows, num_cols) block matrix of (num_blocks_in_row, col_indices);
    the entries past a row's count are ignored (scattered to a dropped extra column)."""
    device = col_indices.device
    listed = ranges.arange(col_indices.shape[-1], dtype=dtypes.int32, device=device)
    valid = listed < num_blocks_in_row.unsqueeze(-1)
    cols = ew.where(valid, col_indices, num_cols).to(dtypes.int64)
    dense = creation.zeros((*col_indices.shape[:-1], num_cols + 1), dtype=dtypes.int32,
                           device=device)
    return dense.scatter(-1, cols, 1)[..., :num_cols].contiguous()


def _transpose_ordered(num_blocks_in_row, col_indices):
    """The column-wise (num_blocks_in_col, row_indices) of a row-wise ordered block list."""
    dense = _ordered_to_dense(num_blocks_in_row, col_indices, col_indices.shape[-1])
    return _dense_to_ordered(dense.transpose(-2, -1))


def _adjust_num_blocks_and_indices(num_blocks, indices, new_num_rows, new_num_cols):
    """The block lists cropped to the top-left new_num_rows x new_num_cols blocks, as torch
    crops them."""
    indices = indices[:, :, :new_num_rows, :new_num_cols]
    num_blocks = num_blocks[:, :, :new_num_rows]
    num_blocks = ew.where(num_blocks < new_num_cols, num_blocks, new_num_cols)
    num_blocks = (indices < num_blocks[:, :, :, None]).sum(dim=-1).to(dtypes.int32)
    return num_blocks, indices


def _dq_write_order(block_mask, dq_kv_order=False):
    """The dQ write-order metadata torch keeps for its deterministic block-sparse FLASH
    backward: each (q block, kv block)'s rank among its row's kv blocks, ascending or
    (`dq_kv_order`) descending, gathered in the q_indices order."""
    bm = block_mask
    if bm.q_num_blocks is None or bm.q_indices is None:
        raise ValueError(
            "BlockMask must have q_num_blocks and q_indices to compute dq_write_order")
    listed = [t for t in (bm.kv_indices, bm.q_indices, bm.full_kv_indices, bm.full_q_indices)
              if t is not None]
    B, H = broadcast_shapes(*(t.shape[:2] for t in listed))
    num_m, num_n = bm.kv_indices.shape[2], bm.q_indices.shape[2]

    def dense_of(num_blocks, indices):
        return _ordered_to_dense(num_blocks.expand(B, H, *num_blocks.shape[2:]),
                                 indices.expand(B, H, *indices.shape[2:]), num_n)

    dense = dense_of(bm.kv_num_blocks, bm.kv_indices)
    if bm.full_kv_num_blocks is not None:
        dense = (dense + dense_of(bm.full_kv_num_blocks, bm.full_kv_indices)).clamp(max=1)
    cumsum = dense.cumsum(dim=-1)
    rank_table = (cumsum - dense).to(dtypes.int32)
    if dq_kv_order:
        rank_table = (cumsum[:, :, :, -1:] - 1 - rank_table).to(dtypes.int32)

    def gather(bwd_indices):
        device = bwd_indices.device
        n_i = index_grid(0, bwd_indices.shape[2], 2, device)
        m_vals = bwd_indices.to(dtypes.int64).clamp(0, num_m - 1)
        return rank_table[index_grid(0, B, 0, device), index_grid(0, H, 1, device), m_vals,
                          n_i].to(dtypes.int32)

    full = gather(bm.full_q_indices) if bm.full_q_indices is not None and \
        bm.full_kv_num_blocks is not None else None
    return gather(bm.q_indices), full


class BlockMask:
    """torch's block-sparse attention mask: for each (batch, head, query block) the kv blocks
    to visit, partial ones (kv_num_blocks, kv_indices: mask_mod applies) and optionally full
    ones (full_kv_*), with their column-wise transposes (q_*) for the backward.

    Genesis's flex_attention runs torch's eager math, which applies `mask_mod` to every score
    and reads no block lists; they are kept, shaped and printed as torch's for code that
    inspects them. The dq_* fields are torch's deterministic FLASH backward metadata.
    """

    _TENSOR_ATTRS = ["kv_num_blocks", "kv_indices", "full_kv_num_blocks", "full_kv_indices",
                     "q_num_blocks", "q_indices", "full_q_num_blocks", "full_q_indices",
                     "dq_write_order", "dq_write_order_full", "dq_kv_order"]

    def __init__(self, seq_lengths, kv_num_blocks, kv_indices, full_kv_num_blocks,
                 full_kv_indices, q_num_blocks, q_indices, full_q_num_blocks, full_q_indices,
                 BLOCK_SIZE=(_DEFAULT_SPARSE_BLOCK_SIZE, _DEFAULT_SPARSE_BLOCK_SIZE),
                 mask_mod=noop_mask, *, dq_write_order=None, dq_write_order_full=None,
                 dq_kv_order=None, dq_kv_order_spt=None):
        if kv_indices.dim() < 2:
            raise RuntimeError("BlockMask must have at least 2 dimensions")
        if kv_num_blocks is None:
            raise AssertionError("kv_num_blocks must be provided")
        if (full_kv_num_blocks is None) != (full_kv_indices is None):
            raise AssertionError(
                "full_kv_num_blocks and full_kv_indices must be both provided or omitted")
        if (full_q_num_blocks is None) != (full_q_indices is None):
            raise AssertionError(
                "full_q_num_blocks and full_q_indices must be both provided or omitted")
        if dq_write_order_full is not None and dq_write_order is None:
            raise ValueError("dq_write_order_full requires dq_write_order")
        self.seq_lengths = seq_lengths
        self.kv_num_blocks, self.kv_indices = kv_num_blocks, kv_indices
        self.full_kv_num_blocks, self.full_kv_indices = full_kv_num_blocks, full_kv_indices
        self.q_num_blocks, self.q_indices = q_num_blocks, q_indices
        self.full_q_num_blocks, self.full_q_indices = full_q_num_blocks, full_q_indices
        self.dq_write_order, self.dq_write_order_full = dq_write_order, dq_write_order_full
        self.dq_kv_order, self.dq_kv_order_spt = dq_kv_order, dq_kv_order_spt
        self.BLOCK_SIZE = BLOCK_SIZE
        self.mask_mod = mask_mod

    @classmethod
    def from_kv_blocks(cls, kv_num_blocks, kv_indices, full_kv_num_blocks=None,
                       full_kv_indices=None, BLOCK_SIZE=_DEFAULT_SPARSE_BLOCK_SIZE,
                       mask_mod=None, seq_lengths=None, compute_q_blocks=True, *,
                       dq_write_order=None, dq_write_order_full=None, dq_kv_order=None):
        """A BlockMask from its kv block lists, the q lists derived from them
        (`compute_q_blocks`); seq_lengths default to the blocks' extent."""
        if kv_indices.dim() < 2:
            raise RuntimeError("BlockMask must have at least 2 dimensions")
        if (full_kv_num_blocks is None) != (full_kv_indices is None):
            raise AssertionError(
                "full_kv_num_blocks and full_kv_indices must be both provided or omitted")
        q_blocks, full_q_blocks = (None, None), (None, None)
        if compute_q_blocks:
            q_blocks = _transpose_ordered(kv_num_blocks, kv_indices)
            if full_kv_num_blocks is not None:
                full_q_blocks = _transpose_ordered(full_kv_num_blocks, full_kv_indices)
        if isinstance(BLOCK_SIZE, int):
            BLOCK_SIZE = (BLOCK_SIZE, BLOCK_SIZE)
        if seq_lengths is None:
            seq_lengths = (kv_indices.shape[-2] * BLOCK_SIZE[0],
                           kv_indices.shape[-1] * BLOCK_SIZE[1])
        if dq_kv_order is not None and not isinstance(dq_kv_order, (bool, Tensor)):
            raise ValueError("dq_kv_order must be a bool, Tensor, or None")
        is_flag = dq_kv_order is None or isinstance(dq_kv_order, bool)
        return cls(seq_lengths, kv_num_blocks, kv_indices, full_kv_num_blocks, full_kv_indices,
                   *q_blocks, *full_q_blocks, BLOCK_SIZE=BLOCK_SIZE,
                   mask_mod=noop_mask if mask_mod is None else mask_mod,
                   dq_write_order=dq_write_order, dq_write_order_full=dq_write_order_full,
                   dq_kv_order=None if is_flag else dq_kv_order,
                   dq_kv_order_spt=dq_kv_order if is_flag else None)

    def as_tuple(self, flatten=True):
        """The fields in torch's order; with `flatten`, seq_lengths and BLOCK_SIZE spread."""
        seq_lengths = tuple(self.seq_lengths) if flatten else (self.seq_lengths,)
        block_size = tuple(self.BLOCK_SIZE) if flatten else (self.BLOCK_SIZE,)
        return (*seq_lengths, *(getattr(self, a) for a in self._TENSOR_ATTRS),
                self.dq_kv_order_spt, *block_size, self.mask_mod)

    @property
    def shape(self):
        """(*batch dims, q length, kv length)."""
        return tuple(self.kv_indices.shape[:-2]) + tuple(self.seq_lengths)

    def __str__(self):
        return (f"BlockMask(shape={self.shape}, sparsity={self.sparsity():.2f}%, \n"
                f"{self.to_string().strip()}\n)")

    def __getitem__(self, index):
        """The BlockMask of the (batch, head, query block) positions `index` selects; integer
        indices keep their dim. Its mask_mod raises: set it from the original's."""
        if self.dq_kv_order is not None:
            raise NotImplementedError(
                "Slicing BlockMask with tensor dq_kv_order is not supported yet. "
                "Construct a new BlockMask with matching precomputed dq_write_order metadata.")
        index = index if isinstance(index, tuple) else (index,)
        padded = (*index, slice(None), slice(None), slice(None))[:3]
        index = tuple(_keep_dim(i, n) if isinstance(i, int) else i
                      for i, n in zip(padded, self.kv_num_blocks.shape[:3], strict=True))
        full = (None, None) if self.full_kv_num_blocks is None else \
            (self.full_kv_num_blocks[index], self.full_kv_indices[index])
        sliced = BlockMask.from_kv_blocks(
            self.kv_num_blocks[index], self.kv_indices[index], *full, BLOCK_SIZE=self.BLOCK_SIZE,
            mask_mod=_sliced_mask_mod_error, seq_lengths=self.seq_lengths,
            compute_q_blocks=self.q_indices is not None)
        sliced.dq_kv_order_spt = self.dq_kv_order_spt
        return sliced._with_write_order(self.dq_write_order is not None)

    def _with_write_order(self, wanted):
        """self, with its dQ write order recomputed when `wanted` (the source mask had one)."""
        if wanted and self.dq_kv_order is None:
            self.dq_write_order, self.dq_write_order_full = _dq_write_order(
                self, dq_kv_order=self.dq_kv_order_spt)
        return self

    def __repr__(self):
        def shape_or_none(x):
            return x.shape if x is not None else None

        name = getattr(self.mask_mod, "__name__", self.mask_mod)
        return (f"BlockMask(\n"
                f"    kv_num_blocks={self.kv_num_blocks.shape},\n"
                f"    kv_indices={self.kv_indices.shape},\n"
                f"    full_kv_num_blocks={shape_or_none(self.full_kv_num_blocks)},\n"
                f"    full_kv_indices={shape_or_none(self.full_kv_indices)},\n"
                f"    q_num_blocks={shape_or_none(self.q_num_blocks)},\n"
                f"    q_indices={shape_or_none(self.q_indices)},\n"
                f"    full_q_num_blocks={shape_or_none(self.full_q_num_blocks)},\n"
                f"    full_q_indices={shape_or_none(self.full_q_indices)},\n"
                f"    BLOCK_SIZE={self.BLOCK_SIZE},\n"
                f"    shape={self.shape},\n"
                f"    sparsity={self.sparsity():.2f}%,\n"
                f"    mask_mod={name}\n"
                f")")

    def _adjust(self, new_q_len, new_kv_len):
        """This mask cropped to its top-left new_q_len x new_kv_len corner (right only for
        mask_mods that crop so, such as causal)."""
        if self.dq_kv_order is not None:
            raise NotImplementedError(
                "Adjusting BlockMask with tensor dq_kv_order is not supported yet. "
                "Construct a new BlockMask with matching precomputed dq_write_order metadata.")
        rows = (new_q_len + self.BLOCK_SIZE[0] - 1) // self.BLOCK_SIZE[0]
        cols = (new_kv_len + self.BLOCK_SIZE[1] - 1) // self.BLOCK_SIZE[1]
        partial = _adjust_num_blocks_and_indices(self.kv_num_blocks, self.kv_indices, rows, cols)
        full = (None, None) if self.full_kv_num_blocks is None else \
            _adjust_num_blocks_and_indices(self.full_kv_num_blocks, self.full_kv_indices,
                                           rows, cols)
        adjusted = self.from_kv_blocks(*partial, *full, BLOCK_SIZE=self.BLOCK_SIZE,
                                       mask_mod=self.mask_mod,
                                       seq_lengths=(new_q_len, new_kv_len),
                                       compute_q_blocks=self.q_indices is not None)
        adjusted.dq_kv_order_spt = self.dq_kv_order_spt
        return adjusted._with_write_order(self.dq_write_order is not None)

    def numel(self):
        """Returns the number of elements (not accounting for sparsity) in the mask."""
        return functools.reduce(operator.mul, self.shape, 1)

    def sparsity(self):
        """Computes the percentage of blocks that are sparse (i.e. not computed)"""
        computed_blocks = self.kv_num_blocks.sum()
        if self.full_kv_num_blocks is not None:
            computed_blocks = computed_blocks + self.full_kv_num_blocks.sum()
        computed_size = computed_blocks.item() * self.BLOCK_SIZE[0] * self.BLOCK_SIZE[1]
        return 100 * (1 - computed_size / self.numel())

    def to_dense(self):
        """Returns a dense block that is equivalent to the block mask."""
        dense = _ordered_to_dense(self.kv_num_blocks, self.kv_indices, self.kv_indices.shape[-1])
        if self.full_kv_num_blocks is None:
            return dense
        return dense | _ordered_to_dense(self.full_kv_num_blocks, self.full_kv_indices,
                                         self.full_kv_indices.shape[-1])

    def to_string(self, grid_size=(20, 20), limit=4):
        """The block pattern of each (batch, head), at most `grid_size` cells (█ all, ░ some,
        blank none of a cell's blocks visited), for the first `limit` of them; grid_size -1
        prints every block."""
        dense = self.to_dense().cpu().numpy()
        *batch_dims, num_rows, num_cols = dense.shape
        max_rows, max_cols = (grid_size, grid_size) if isinstance(grid_size, int) else grid_size
        row_step = max(1, -(num_rows // -max_rows))
        col_step = max(1, -(num_cols // -max_cols))
        out = []
        for count, batch_idx in enumerate(itertools.product(*(range(i) for i in batch_dims))):
            if count == limit:
                out += ["...", "To print out more, set BlockMask.to_string(limit=N)",
                        "You can also index (BlockMask[batch, head]) to choose a specific batch "
                        "or head"]
                break
            rows = (_cells(dense[batch_idx][r:r + row_step], num_cols, col_step)
                    for r in range(0, num_rows, row_step))
            out.append(f"{batch_idx}\n" + "".join(row + "\n" for row in rows))
        return "\n".join(out)

    def to(self, device):
        """This mask with its tensors on `device`."""
        moved = {a: getattr(self, a) if getattr(self, a) is None else getattr(self, a).to(device)
                 for a in self._TENSOR_ATTRS}
        return BlockMask(seq_lengths=self.seq_lengths, **moved, BLOCK_SIZE=self.BLOCK_SIZE,
                         mask_mod=self.mask_mod, dq_kv_order_spt=self.dq_kv_order_spt)


def _keep_dim(i, n):
    """Integer index `i` of a dim of size n as the one-element slice that keeps the dim."""
    return slice(i + n, i + n + 1) if -n <= i < 0 else slice(i, i + 1)


def _cells(band, num_cols, col_step):
    """One printed row of to_string: a cell per col_step columns of a band of block rows."""
    def cell(section):
        share = section.mean()
        return "█" if share == 1 else " " if share == 0 else "░"
    return "".join(cell(band[:, c:c + col_step]) * 2 for c in range(0, num_cols, col_step))


def _create_sparse_block_from_block_mask(partial_blocks, full_blocks, mask_mod, seq_lengths,
                                         Q_BLOCK_SIZE, KV_BLOCK_SIZE):
    """The BlockMask of dense 0/1 partial and full block matrices."""
    full = (None, None) if full_blocks is None else _dense_to_ordered(full_blocks)
    return BlockMask.from_kv_blocks(*_dense_to_ordered(partial_blocks), *full,
                                    BLOCK_SIZE=(Q_BLOCK_SIZE, KV_BLOCK_SIZE), mask_mod=mask_mod,
                                    seq_lengths=seq_lengths)


def create_block_mask(mask_mod, B, H, Q_LEN, KV_LEN, device=None,
                      BLOCK_SIZE=_DEFAULT_SPARSE_BLOCK_SIZE, _compile=False,
                      separate_full_blocks=True, compute_dq_write_order=False, dq_kv_order=True):
    """The BlockMask of `mask_mod` over (B, H, Q_LEN, KV_LEN) (None B or H: 1), made on
    `device` (default: the accelerator if there is one, else the CPU) with BLOCK_SIZE blocks
    (an int or (q, kv)). Blocks the mask fills are listed as full when `separate_full_blocks`;
    `compute_dq_write_order` adds torch's FLASH backward metadata.

    The mask is evaluated densely, a band of query blocks at a time, and each band reduced to
    its blocks' counts before the next. `_compile` is deprecated in torch and changes nothing.
    """
    device = _default_device(device)
    if _positional_args(mask_mod) != 4:
        raise AssertionError(f"create-block_mask requires a mask_mod function! Got {mask_mod}")
    B, H = 1 if B is None else B, 1 if H is None else H
    q_block, kv_block = (BLOCK_SIZE, BLOCK_SIZE) if isinstance(BLOCK_SIZE, int) else BLOCK_SIZE
    if _compile:
        warnings.warn(
            "_compile flag on create_block_mask was originally added to work around a "
            "torch.compile limitation. That limitation has since been addressed. So, to compile "
            "create_block_mask, we suggest doing torch.compile(create_block_mask). This still "
            "works for now, but will be removed in the future.", DeprecationWarning,
            stacklevel=2)
    if not isinstance(dq_kv_order, bool):
        raise ValueError("dq_kv_order must be a bool when using create_block_mask")
    counts = _block_counts(mask_mod, B, H, Q_LEN, KV_LEN, q_block, kv_block, device)
    if separate_full_blocks:
        full = counts == q_block * kv_block
        partial, full = ((counts > 0) & ~full).to(dtypes.int8), full.to(dtypes.int8)
    else:
        partial, full = (counts > 0).to(dtypes.int8), None
    block_mask = _create_sparse_block_from_block_mask(partial, full, mask_mod, (Q_LEN, KV_LEN),
                                                      q_block, kv_block)
    if compute_dq_write_order:
        block_mask.dq_write_order, block_mask.dq_write_order_full = _dq_write_order(
            block_mask, dq_kv_order=dq_kv_order)
        block_mask.dq_kv_order_spt = dq_kv_order
    return block_mask
