"""The "tma-stream" path: rows too long for one SM, each segment held in shared memory (Gluon).

Layer 1 and 2 of one path, apart from kernels/triton_softmax.py because it is written in Gluon
(triton.experimental.gluon), Triton's lower-level language with user-managed shared memory and the Tensor Memory
Accelerator (TMA). Gluon kernels run only on a CUDA GPU of compute capability 9.0 or more, never on the
interpreter, so triton_softmax imports this module only when it launches the path (tma_forward_eligible and
tma_backward_eligible say when), and the interpreter's tests take "tile-stream" and "stream" for the same rows. Its
GPU tests are tests/test_gluon_softmax.py.

Like tile-stream, a persistent grid (one program an SM) walks (row, segment) items and a row's segments exchange
their (max, sum) through slots in global memory. The difference is where a segment waits between its two passes:
here all of it (up to 14 tiles of 16 KB) sits in shared memory, asked of the TMA at once, where tile-stream re-reads
it through L1. So the bytes in flight are bounded by shared memory rather than by registers, and as soon as every
warp has read tile i of this item, tile i of the program's next item is asked for: the next item's reads overlap
this item's writes and its wait for siblings. Measured against tile-stream on fp32 rows of 131,072-1M columns
(notes/kernels.md, round 98): +11% to +16% on an H200, +1% to +12% on an H100; 2-byte rows of whole vectors lost
(3-15%), so they stay on tile-stream. The backward holds y and dy (up to 7 tiles each) the same way (round 99).

A tensor is read through a descriptor that views it as [numel // W, W] (W: 512 bytes of elements for the forward;
512 or 256, whichever divides the tensor, for the backward), one box of such view rows a tile, so a tile may start
anywhere a view row does: a segment's first tile starts at the view row that holds its first element. The forward
takes any row length: its tiles work on whole 16-byte vectors only, and the loose elements (a segment's partial
vectors at either end, and the tail past the last whole view row) are read and written apart (round 102).
"""
import functools
import math
from typing import Callable, NamedTuple

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier, tma
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

# ----------------------------------------------------------------------------------------------
# Layer 1: the kernel
# ----------------------------------------------------------------------------------------------

# A barrier of the program's warps: Gluon's name for it changed between Triton 3.6 (the GPU image's) and 3.8.
_cta_barrier = gl.thread_barrier if hasattr(gl, "thread_barrier") else gl.barrier


LOG2E: gl.constexpr = gl.constexpr(1.4426950408889634)


@gluon.jit
def _exp(x):
    """exp(x) as one multiply and ex2.approx, as Triton's own float32 exp lowers (Gluon's gl.exp adds a range check
    and a rescale an element, which cost this kernel 10-20% in the first sweep of it, round 98)."""
    return gl.exp2(x * LOG2E)


@gluon.jit
def _pack(hi, lo):
    """Two float32 scalars as one int64 (hi in the upper word), published by one atomic; never 0 for a finished
    segment (its max is finite, or -inf, whose bits are not 0), so 0 means "missing"."""
    return ((hi.to(gl.int32, bitcast=True).to(gl.int64) << 32)
            | (lo.to(gl.int32, bitcast=True).to(gl.int64) & 0xFFFFFFFF))


@gluon.jit
def _segment_span(row, segment, segment_cols, n_cols, W: gl.constexpr, ALIGNED: gl.constexpr, STEP: gl.constexpr,
                  CUT: gl.constexpr = 0, n_segments=1, edge_step=0):
    """(flat index of the segment's first element, of its end). A row's segments are segment_cols columns, its last
    what is left; with ALIGNED, every segment but a row's first starts on a view row of W elements (segment_cols is
    then whole tiles), so that only a row's first segment straddles a view row, and a row's last segment may be
    empty (first == end). STEP: a number of elements every row start is a multiple of (VEC for rows of whole vectors),
    which the compiler is told so that segment edges keep 16-byte stores. CUT (without ALIGNED; rows of partial
    vectors, segment_cols whole vectors): every segment but a row's first starts on a vector of CUT elements, its
    first shorter by the row's offset in its first vector and its last longer by it, so that only a row's ends are
    partial vectors (round 198); edge_step (CUT, rows of 3 segments or more; an even number of vectors) moves a row's
    inner boundaries so that its first and last segments are shorter and the others share what they gave up
    (_edge_shift, round 203b)."""
    row_first = row * n_cols
    if ALIGNED:
        lead = row_first % W // STEP * STEP  # the row's offset in its first view row
        seg_start = gl.minimum(gl.maximum(segment * segment_cols - lead, 0), n_cols)
        seg_end = gl.minimum((segment + 1) * segment_cols - lead, n_cols)
    elif CUT > 1:
        lead = row_first % CUT  # the row's offset in its first vector
        start_cols = segment * segment_cols - lead + _edge_shift(segment, n_segments, edge_step)
        end_cols = (segment + 1) * segment_cols - lead + _edge_shift(segment + 1, n_segments, edge_step)
        seg_start = gl.where(segment * segment_cols >= n_cols, n_cols, gl.minimum(gl.maximum(start_cols, 0), n_cols))
        seg_end = gl.where((segment + 1) * segment_cols >= n_cols, n_cols, gl.minimum(end_cols, n_cols))
    else:
        seg_start = segment * segment_cols
        seg_end = gl.minimum(seg_start + segment_cols, n_cols)
    return row_first + seg_start, row_first + seg_end


@gluon.jit
def _edge_shift(boundary, n_segments, edge_step):
    """How far a row's inner boundary (1 .. n_segments - 1) moves: edge_step (an even number of vectors) x (boundary -
    n_segments / 2), so a row's first and last segments are edge_step (n_segments - 2) / 2 shorter and each inner
    one edge_step longer; 0 for a row's ends and for edge_step 0. A multiply, no division (round 203's divisions cost
    the 2-byte rows 4%)."""
    inner = (boundary > 0) & (boundary < n_segments)
    return gl.where(inner, edge_step * (2 * boundary - n_segments) // 2, 0)


@gluon.jit
def _item_span(item, n_segments, segment_cols, n_cols, TILE: gl.constexpr, W: gl.constexpr,
               ALIGNED: gl.constexpr = False, STEP: gl.constexpr = 1, CUT: gl.constexpr = 0, edge_step=0):
    """(row, flat index of the item's first element, of its end, of its first tile (rounded down to a view row of W
    elements), its number of tiles); the item's segment as _segment_span cuts it (an empty one has no tiles)."""
    row = item // n_segments
    first, end = _segment_span(row, item - row * n_segments, segment_cols, n_cols, W, ALIGNED, STEP, CUT, n_segments,
                               edge_step)
    tile_start = first // W * W
    n_tiles = gl.cdiv(end - tile_start, TILE)
    if ALIGNED:
        n_tiles = gl.where(end > first, n_tiles, 0)
    return row, first, end, tile_start, n_tiles


@gluon.jit
def _issue_tile(in_desc, slot, bar, tile_start, W: gl.constexpr):
    """Ask the TMA for the tile (one box of view rows) at flat index tile_start; bar counts its bytes."""
    mbarrier.expect(bar, in_desc.block_type.nbytes)
    tma.async_copy_global_to_shared(in_desc, [tile_start // W, 0], bar, slot)


@gluon.jit
def _issue_last_tile(in_desc, part_desc, smem, bars, i, tile_start, end, TILE: gl.constexpr, SLOTS: gl.constexpr,
                     W: gl.constexpr):
    """Ask the TMA for an item's last tile, slot i, at flat index tile_start: one box where the item needs all of
    its parts, else the parts (part_desc's boxes, a few view rows each) up to the item's end, the rest aimed out of
    the tensor, which the TMA fills with zeros without reading memory, so that the barrier still counts a whole
    tile's bytes (its byte count is a compile-time one). A whole box reads the next item's elements too (fp32 100,000
    lost 1.8 points of copy to it on the H100, round 109)."""
    ROWS: gl.constexpr = TILE // W
    PART: gl.constexpr = part_desc.block_type.shape[0]
    PARTS: gl.constexpr = ROWS // PART
    parts = gl.cdiv(gl.cdiv(end - tile_start, W), PART)
    if parts >= PARTS:
        _issue_tile(in_desc, smem.index(i), bars.index(i), tile_start, W)
    else:
        mbarrier.expect(bars.index(i), in_desc.block_type.nbytes)
        view_parts = smem._reinterpret(in_desc.dtype, [SLOTS * PARTS, PART, W], in_desc.layout)
        for p in range(parts):
            tma.async_copy_global_to_shared(part_desc, [tile_start // W + p * PART, 0], bars.index(i),
                                            view_parts.index(i * PARTS + p))
        for p in range(parts, PARTS):
            tma.async_copy_global_to_shared(part_desc, [-PART, 0], bars.index(i), view_parts.index(i * PARTS + p))


@gluon.jit
def _tile(smem, slot, dtype: gl.constexpr, TILE: gl.constexpr, VEC: gl.constexpr, layout: gl.constexpr):
    """The tile in slot as float32 [TILE / VEC, VEC] (one 16-byte vector a row, consecutive threads consecutive
    vectors: no bank conflicts)."""
    vectors: gl.constexpr = gl.SwizzledSharedLayout(1, 1, 1, [1, 0])
    return smem.index(slot)._reinterpret(dtype, [TILE // VEC, VEC], vectors).load(layout).to(gl.float32)


@gluon.jit
def _new_barriers(SLOTS: gl.constexpr):
    """One mbarrier a slot, each counting one arrival (the TMA's, with its bytes)."""
    bars = gl.allocate_shared_memory(gl.int64, [SLOTS, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(SLOTS):
        mbarrier.init(bars.index(i), count=1)
    return bars


@gluon.jit
def _tile_offsets(TILE: gl.constexpr, VEC: gl.constexpr, layout: gl.constexpr):
    """Element offsets of a [TILE / VEC, VEC] tile, one 16-byte vector a row."""
    return (gl.expand_dims(gl.arange(0, TILE // VEC, layout=gl.SliceLayout(1, layout)), 1) * VEC
            + gl.expand_dims(gl.arange(0, VEC, layout=gl.SliceLayout(0, layout)), 0))


@gluon.jit
def _await_slots(slots_ptr, row, n_segments, siblings, max_polls):
    """(slot pointers, in-row mask, packed slots, any still missing) of row, re-read until every sibling has
    published or max_polls re-reads are spent."""
    ptrs = slots_ptr + row * n_segments + siblings
    in_row = siblings < n_segments
    packed = gl.load(ptrs, mask=in_row, other=-1, volatile=True)
    polls = 0
    while (gl.sum((packed == 0).to(gl.int32), axis=0) > 0) & (polls < max_polls):
        packed = gl.load(ptrs, mask=in_row, other=-1, volatile=True)
        polls += 1
    return ptrs, in_row, packed, gl.sum((packed == 0).to(gl.int32), axis=0) > 0


@gluon.jit
def _missing(packed, siblings, sibling):
    """Whether sibling's slot read 0 in this warp's packed."""
    return gl.max(gl.where(siblings == sibling, (packed == 0).to(gl.int32), 0), axis=0) > 0


@gluon.jit
def _anywhere(flag, NUM_WARPS: gl.constexpr):
    """Whether flag is set in any warp of the program: one value for all its threads. The slots' lanes are replicated
    in every warp, so each warp reads and reduces its own copy and warps may disagree while a sibling publishes; this
    reduction spans the warps (through shared memory), so branches on it hold every warp together around the
    barriers of the partials' own reductions."""
    lanes: gl.constexpr = gl.BlockedLayout([1], [32], [NUM_WARPS], [0])
    return gl.max(gl.full([NUM_WARPS * 32], 0, gl.int32, layout=lanes) + flag.to(gl.int32), axis=0) > 0


@gluon.jit
def _global_segment_max_sum(input_ptr, first, end, offsets, TILE: gl.constexpr, VEC: gl.constexpr,
                            layout: gl.constexpr):
    """(max, sum of exp(x - max)) of the flat elements [first, end), read from global memory: the cold path for a
    sibling that has not published (see max_polls)."""
    vec_max = gl.full([TILE // VEC], float("-inf"), gl.float32, layout=gl.SliceLayout(1, layout))
    vec_sum = gl.full([TILE // VEC], 0.0, gl.float32, layout=gl.SliceLayout(1, layout))
    for start in range(first, end, TILE):
        flat = start + offsets
        x = gl.load(input_ptr + flat.to(gl.int64), mask=flat < end, other=float("-inf")).to(gl.float32)
        vec_max, vec_sum = _online(vec_max, vec_sum, x)
    return _combine(vec_max, vec_sum)


@gluon.jit
def _online(vec_max, vec_sum, x):
    """One step of the running (max, sum of exp(x - max)) per row of a [vectors, VEC] block x."""
    new_max = gl.maximum(vec_max, gl.max(x, axis=1))
    safe_max = gl.where(new_max == float("-inf"), 0.0, new_max)  # a vector of only -inf keeps sum 0
    return new_max, vec_sum * _exp(vec_max - safe_max) + gl.sum(_exp(x - gl.expand_dims(safe_max, 1)), axis=1)


@gluon.jit
def _combine(vec_max, vec_sum):
    """(max, sum of exp(x - max)) of all vectors from their running pairs; all -inf gives (-inf, 0)."""
    seg_max = gl.max(vec_max, axis=0)
    safe_max = gl.where(seg_max == float("-inf"), 0.0, seg_max)
    return seg_max, gl.sum(vec_sum * _exp(vec_max - safe_max), axis=0)


@gluon.jit
def _with_loose(tiles_max, tiles_sum, loose_x):
    """A segment's (max, sum of exp(x - max)) from its tiles' pair and its loose elements (float32, -inf where
    masked)."""
    seg_max = gl.maximum(tiles_max, gl.max(loose_x, axis=0))
    safe_max = gl.where(seg_max == float("-inf"), 0.0, seg_max)
    return seg_max, tiles_sum * _exp(tiles_max - safe_max) + gl.sum(_exp(loose_x - safe_max), axis=0)


@gluon.jit
def _row_max_inv_sum(input_ptr, slots_ptr, row, item, n_segments, segment_cols, n_cols, siblings, max_polls, offsets,
                     W: gl.constexpr, ALIGNED: gl.constexpr, STEP: gl.constexpr, TILE: gl.constexpr,
                     VEC: gl.constexpr, layout: gl.constexpr, NUM_WARPS: gl.constexpr, CUT: gl.constexpr = 0,
                     edge_step=0):
    """(max, 1 / sum of exp(x - max)) of item's row from its segments' slots, re-read until every sibling has
    published; a sibling that is not running (the grid is not co-resident: max_polls spent) has its partial computed
    from global memory and published, so that the row's other segments find it too."""
    ptrs, in_row, packed, missing = _await_slots(slots_ptr, row, n_segments, siblings, max_polls)
    if _anywhere(missing, NUM_WARPS):
        for sibling in range(0, n_segments):
            if (sibling != item - row * n_segments) & _anywhere(_missing(packed, siblings, sibling), NUM_WARPS):
                s_first, s_end = _segment_span(row, sibling, segment_cols, n_cols, W, ALIGNED, STEP, CUT, n_segments,
                                               edge_step)
                s_max, s_sum = _global_segment_max_sum(input_ptr, s_first, s_end, offsets, TILE, VEC, layout)
                gl.atomic_xchg(slots_ptr + row * n_segments + sibling, _pack(s_max, s_sum), sem="relaxed")
        # every slot is written now: each warp re-reads its copy until it sees them all (one re-read, and a
        # decision of each warp's own, once left a warp summing its row without one partial on an H100)
        ptrs, in_row, packed, missing = _await_slots(slots_ptr, row, n_segments, siblings, 1 << 30)
    part_max = gl.where(in_row, (packed >> 32).to(gl.int32).to(gl.float32, bitcast=True), float("-inf"))
    part_sum = packed.to(gl.int32).to(gl.float32, bitcast=True)
    row_max = gl.max(part_max, axis=0)
    # all -inf parts add 0 * exp(-inf) = 0; a fully -inf row gives NaN, as in torch
    return row_max, 1.0 / gl.sum(gl.where(in_row, part_sum * _exp(part_max - row_max), 0.0), axis=0)


@gluon.jit
def _loose_offsets(first, end, covered, VEC: gl.constexpr, LOOSE: gl.constexpr, layout: gl.constexpr):
    """(flat indices, mask) of an item's loose elements, those outside its whole 16-byte vectors in the descriptor:
    the head [first, first rounded up to VEC), the foot [last rounded down to VEC, last) with last = min(end,
    covered), and the tail [covered, end) that no whole view row holds; one block of LOOSE lanes (>= 2 VEC + W)."""
    j = gl.arange(0, LOOSE, layout=layout)
    last = gl.minimum(end, covered)
    head_end = gl.minimum((first + VEC - 1) // VEC * VEC, last)
    foot_start = gl.maximum(last // VEC * VEC, head_end)
    flat = gl.where(j < VEC, first + j, gl.where(j < 2 * VEC, foot_start + j - VEC, covered + j - 2 * VEC))
    mask = gl.where(j < VEC, flat < head_end, gl.where(j < 2 * VEC, flat < last, (flat >= first) & (flat < end)))
    return flat, mask


@gluon.jit
def _load_loose(input_ptr, first, end, covered, VEC: gl.constexpr, LOOSE: gl.constexpr, layout: gl.constexpr):
    """(flat indices, mask, float32 values with -inf where masked) of an item's loose elements (_loose_offsets)."""
    loose, loose_mask = _loose_offsets(first, end, covered, VEC, LOOSE, layout)
    return loose, loose_mask, gl.load(input_ptr + loose.to(gl.int64), mask=loose_mask,
                                      other=float("-inf")).to(gl.float32)


@gluon.jit
def _load_tail(input_ptr, covered, end, TAIL: gl.constexpr, layout: gl.constexpr):
    """(flat indices, mask, float32 values with -inf where masked) of [covered, end): an item's elements past the
    descriptor's last whole view row (fewer than a view row, so TAIL lanes hold them)."""
    tail = covered + gl.arange(0, TAIL, layout=layout)
    tail_mask = tail < end
    return tail, tail_mask, gl.load(input_ptr + tail.to(gl.int64), mask=tail_mask, other=float("-inf")).to(gl.float32)


@gluon.jit
def _whole(tile_lo, vector_starts, first, last, VEC: gl.constexpr):
    """Which [vectors, 1] of the tile at flat index tile_lo lie wholly inside [first, last): one value a vector, so
    loads and stores under it stay 16-byte ones."""
    vector_lo = tile_lo + vector_starts
    return (vector_lo >= first) & (vector_lo + VEC <= last)


@gluon.jit
def _in_tiles(tile_lo, offsets, vector_starts, first, end, last, VEC: gl.constexpr, LOOSE: gl.constexpr):
    """Which elements of the tile at flat index tile_lo are the tiles' to reduce and store: those of its whole vectors
    inside [first, last), or, where the tensor has no loose elements (LOOSE 0), simply those inside [first, end)."""
    if LOOSE > 0:
        return _whole(tile_lo, vector_starts, first, last, VEC) & (offsets >= 0)
    else:
        return (tile_lo + offsets >= first) & (tile_lo + offsets < end)


@gluon.jit
def _reduce_tile(smem, bars, i, phases, vec_max, vec_sum, tile_start, offsets, vector_starts, first, end, last,
                 dtype: gl.constexpr, TILE: gl.constexpr, VEC: gl.constexpr, LOOSE: gl.constexpr,
                 layout: gl.constexpr):
    """Pass 1 of slot i: wait for its tile and fold the tile's elements (_in_tiles) into the running (max, sum)."""
    mbarrier.wait(bars.index(i), (phases >> i) & 1)
    mask = _in_tiles(tile_start + i * TILE, offsets, vector_starts, first, end, last, VEC, LOOSE)
    return _online(vec_max, vec_sum, gl.where(mask, _tile(smem, i, dtype, TILE, VEC, layout), float("-inf")))


@gluon.jit
def _write_tile(output_ptr, smem, i, offsets, vector_starts, row_max, inv_row_sum, tile_start, first, end, last,
                dtype: gl.constexpr, TILE: gl.constexpr, VEC: gl.constexpr, LOOSE: gl.constexpr,
                layout: gl.constexpr):
    """Pass 2 of slot i: store the softmax of the tile's elements (_in_tiles)."""
    tile_lo = tile_start + i * TILE
    y = _exp(_tile(smem, i, dtype, TILE, VEC, layout) - row_max) * inv_row_sum
    mask = _in_tiles(tile_lo, offsets, vector_starts, first, end, last, VEC, LOOSE)
    gl.store(output_ptr + (tile_lo + offsets).to(gl.int64), y.to(dtype), mask=mask)


@gluon.jit
def _refill(in_desc, smem, bars, i, next_tile_start, TILE: gl.constexpr, W: gl.constexpr):
    """Ask the TMA for the next item's tile i into slot i, once every warp has read the slot."""
    fence_async_shared()
    _cta_barrier()
    _issue_tile(in_desc, smem.index(i), bars.index(i), next_tile_start + i * TILE, W)


@gluon.jit
def _claim_row(mail_ptr, group, j, rows_cap, n_groups):
    """ROWS_DYNAMIC: the first of a group's programs to get here takes the group's j-th row from the counter
    (mail_ptr[-1]; rows n_groups, n_groups + 1, ... in turn) and posts it plus 1 in the group's box j (0: unclaimed,
    -1: claimed, not yet posted); the others find the box claimed and go on. One thread does the atomics (Triton
    shares a scalar atomic's result through shared memory), so a claim costs its program one barrier."""
    if j < rows_cap:
        box = mail_ptr + group * rows_cap + j
        unclaimed = (j * 0).to(gl.int64)
        if gl.atomic_cas(box, unclaimed, unclaimed - 1, sem="relaxed") == 0:
            ticket = gl.atomic_add(mail_ptr - 1, unclaimed + 1, sem="relaxed")
            gl.atomic_xchg(box, n_groups + ticket + 1, sem="relaxed")


@gluon.jit
def _posted_row(mail_ptr, group, j, rows_cap, n_rows):
    """ROWS_DYNAMIC: the group's j-th row once posted (n_rows: no more rows for the group). Every program of the group
    has tried to claim box j before it asks, so the box is claimed by a running program, which posts at once."""
    row = n_rows
    if j < rows_cap:
        box = mail_ptr + group * rows_cap + j
        posted = gl.load(box, volatile=True)
        while posted <= 0:
            posted = gl.load(box, volatile=True)
        row = gl.minimum(posted - 1, n_rows).to(gl.int32)
    return row


@gluon.jit
def _tma_stream_fwd_kernel(output_ptr, input_ptr, in_desc, part_desc, slots_ptr, n_rows, n_cols, n_segments,
                           segment_cols,
                           max_polls, rows_cap, edge_step, TILE: gl.constexpr, SLOTS: gl.constexpr, VEC: gl.constexpr,
                           SEGMENTS_BLOCK: gl.constexpr, NUM_WARPS: gl.constexpr, LOOSE: gl.constexpr,
                           TILE_LOOP: gl.constexpr, ALIGNED: gl.constexpr = False,
                           ROWS_DYNAMIC: gl.constexpr = False, TAIL: gl.constexpr = 0,
                           LOOSE_WHERE: gl.constexpr = False):
    """Two-pass online softmax of (row, segment) items program_id, program_id + num_programs, ... of a contiguous
    [n_rows, n_cols] input of any row length; a segment is at most SLOTS tiles of TILE elements, held in shared
    memory from its load to its write. Tiles reduce and store only their whole 16-byte vectors; the few loose
    elements an item has (_loose_offsets) are read from global memory apart, so that no tile carries a branch for
    them: 14 unrolled tiles that did overflowed the instruction cache (round 101). LOOSE: the lanes of that block
    (0: the tensor has no loose elements, and the kernel no block). TILE_LOOP runs the tiles as a loop
    over a runtime slot rather than unrolled (a quarter of the code; for 2-byte rows, round 102). The maxima stay in
    the input's units (exp(x - m)), as in triton_softmax's float32 kernels. Where part_desc's boxes are shorter than
    a tile, an item's last tile is asked for apart, up to the item's end in them (_issue_last_tile). ALIGNED: segments
    after a row's first start on a view row (_segment_span), so that they use every slot. ROWS_DYNAMIC (a grid of
    whole groups of n_segments programs): the programs of group g start on row g and then take whole rows from a
    counter (_claim_row, _posted_row; at most rows_cap rows a group, its boxes after the items' slots), not every
    num_programs-th item, so that the groups of programs launched first, which run faster, take more rows and the
    groups end together (round 182). TAIL (with LOOSE 0: rows of whole vectors in a tensor that is not whole view
    rows): the lanes of a block for the tensor's last elements, past its last whole view row, which only the item
    that holds them reads and writes apart, under a branch (round 193: the LOOSE block cost every item 3-7%).
    Rows of partial vectors cut evenly start every segment but a row's first on a vector (_segment_span's CUT), so
    that only a row's ends are partial vectors; LOOSE_WHERE runs the block's loads, fold and stores only in an item
    that has loose elements (round 198: the block costs an item as a whole, round 196)."""
    dtype: gl.constexpr = in_desc.dtype
    W: gl.constexpr = in_desc.block_type.shape[1]
    # 1: an item's last tile is asked for apart, in part_desc's boxes; 0: as every other tile
    APART: gl.constexpr = 1 if part_desc.block_type.shape[0] < in_desc.block_type.shape[0] else 0
    STEP: gl.constexpr = VEC if LOOSE == 0 else 1  # rows of whole vectors start on a vector
    # rows of partial vectors cut so that only a row's ends are partial vectors (round 198)
    CUT: gl.constexpr = VEC if (LOOSE > 0) & (not ALIGNED) else 0
    layout: gl.constexpr = gl.BlockedLayout([1, VEC], [32, 1], [NUM_WARPS, 1], [1, 0])
    lanes: gl.constexpr = gl.BlockedLayout([1], [32], [NUM_WARPS], [0])
    smem = gl.allocate_shared_memory(dtype, [SLOTS] + in_desc.block_type.shape, in_desc.layout)
    bars = _new_barriers(SLOTS)
    offsets = _tile_offsets(TILE, VEC, layout)
    vector_starts = gl.expand_dims(gl.arange(0, TILE // VEC, layout=gl.SliceLayout(1, layout)), 1) * VEC
    siblings = gl.arange(0, SEGMENTS_BLOCK, layout=lanes)
    n_items = n_rows * n_segments
    if LOOSE == 0:
        n_cols = n_cols // VEC * VEC  # tells the compiler what the launch checked: rows of whole 16-byte vectors
    segment_cols = segment_cols // VEC * VEC  # whole vectors too (_segments), so segment edges keep 16-byte stores
    covered = n_rows * n_cols // W * W  # the elements the descriptor's whole view rows hold
    step = gl.num_programs(0)
    item = gl.program_id(0)
    row, first, end, tile_start, n_tiles = _item_span(item, n_segments, segment_cols, n_cols, TILE, W, ALIGNED, STEP,
                                                      CUT, edge_step)
    for i in gl.static_range(SLOTS):
        if (i < n_tiles - APART) & (item < n_items):
            _issue_tile(in_desc, smem.index(i), bars.index(i), tile_start + i * TILE, W)
    if APART & (item < n_items) & ((n_tiles > 0) | (not ALIGNED)):
        _issue_last_tile(in_desc, part_desc, smem, bars, n_tiles - 1, tile_start + (n_tiles - 1) * TILE, end, TILE,
                         SLOTS, W)
    phases = item * 0  # bit i: the phase slot i's barrier completes next
    group = item // n_segments  # ROWS_DYNAMIC: the programs of a row, in step at its exchange
    segment = item - group * n_segments
    mail_ptr = slots_ptr + n_items + 1  # ROWS_DYNAMIC: the row counter, then rows_cap boxes a group
    j = item * 0  # ROWS_DYNAMIC: the group's rows so far
    while item < n_items:
        row, first, end, tile_start, n_tiles = _item_span(item, n_segments, segment_cols, n_cols, TILE, W, ALIGNED,
                                                          STEP, CUT, edge_step)
        last = gl.minimum(end, covered)
        if LOOSE > 0:  # LOOSE_WHERE: only an item with a partial vector at an end, or the tail (round 198)
            loose_here = (first % VEC != 0) | (last % VEC != 0) | (end > covered) | (not LOOSE_WHERE)
            loose_x = gl.full([LOOSE], float("-inf"), gl.float32, layout=lanes)
            if loose_here:
                loose_x = _load_loose(input_ptr, first, end, covered, VEC, LOOSE, lanes)[2]
        if TAIL > 0:  # the tiles' bound: the view's whole rows end at covered
            end_in_tiles = last
        else:
            end_in_tiles = end
        vec_max = gl.full([TILE // VEC], float("-inf"), gl.float32, layout=gl.SliceLayout(1, layout))
        vec_sum = gl.full([TILE // VEC], 0.0, gl.float32, layout=gl.SliceLayout(1, layout))
        if TILE_LOOP:  # pass 1: each tile as it lands
            for t in range(n_tiles):
                vec_max, vec_sum = _reduce_tile(smem, bars, t, phases, vec_max, vec_sum, tile_start, offsets,
                                                vector_starts, first, end_in_tiles, last, dtype, TILE, VEC, LOOSE,
                                                layout)
        else:
            for i in gl.static_range(SLOTS):
                if i < n_tiles:
                    vec_max, vec_sum = _reduce_tile(smem, bars, i, phases, vec_max, vec_sum, tile_start, offsets,
                                                    vector_starts, first, end_in_tiles, last, dtype, TILE, VEC,
                                                    LOOSE, layout)
        phases = phases ^ ((1 << n_tiles) - 1)
        seg_max, seg_sum = _combine(vec_max, vec_sum)
        if LOOSE > 0:
            if loose_here:
                seg_max, seg_sum = _with_loose(seg_max, seg_sum, loose_x)
        if TAIL > 0:
            if end > covered:
                tail, tail_mask, tail_x = _load_tail(input_ptr, covered, end, TAIL, lanes)
                seg_max, seg_sum = _with_loose(seg_max, seg_sum, tail_x)
        if ROWS_DYNAMIC:  # the group's next row, claimed while the siblings finish their pass 1
            _claim_row(mail_ptr, group, j + 1, rows_cap, step // n_segments)
        if n_segments == 1:
            row_max = seg_max
            inv_row_sum = 1.0 / (seg_sum * _exp(seg_max - row_max))  # NaN for a fully -inf row, as in torch
        else:
            gl.atomic_xchg(slots_ptr + item, _pack(seg_max, seg_sum), sem="relaxed")
            row_max, inv_row_sum = _row_max_inv_sum(input_ptr, slots_ptr, row, item, n_segments, segment_cols, n_cols,
                                                    siblings, max_polls, offsets, W, ALIGNED, STEP, TILE, VEC, layout,
                                                    NUM_WARPS, CUT, edge_step)
        if LOOSE > 0:
            if loose_here:  # the offsets again rather than kept through both passes (registers)
                loose, loose_mask = _loose_offsets(first, end, covered, VEC, LOOSE, lanes)
                y_loose = (_exp(loose_x - row_max) * inv_row_sum).to(dtype)
                gl.store(output_ptr + loose.to(gl.int64), y_loose, mask=loose_mask)
        if TAIL > 0:
            if end > covered:  # read again rather than kept: one item of the call has a tail
                tail, tail_mask, tail_x = _load_tail(input_ptr, covered, end, TAIL, lanes)
                gl.store(output_ptr + tail.to(gl.int64), (_exp(tail_x - row_max) * inv_row_sum).to(dtype),
                         mask=tail_mask)
        if ROWS_DYNAMIC:
            next_item = _posted_row(mail_ptr, group, j + 1, rows_cap, n_rows) * n_segments + segment
        else:
            next_item = item + step
        next_row, next_first, next_end, next_tile_start, next_tiles = _item_span(
            next_item, n_segments, segment_cols, n_cols, TILE, W, ALIGNED, STEP, CUT, edge_step)
        if next_item >= n_items:
            next_tiles = 0
        if TILE_LOOP:  # pass 2, from shared memory; the next item's tile i follows tile i, its last tile comes after
            for t in range(n_tiles):
                _write_tile(output_ptr, smem, t, offsets, vector_starts, row_max, inv_row_sum, tile_start, first,
                            end_in_tiles, last, dtype, TILE, VEC, LOOSE, layout)
                if t < next_tiles - APART:
                    _refill(in_desc, smem, bars, t, next_tile_start, TILE, W)
            for t in range(n_tiles, next_tiles - APART):
                _refill(in_desc, smem, bars, t, next_tile_start, TILE, W)
        else:
            for i in gl.static_range(SLOTS):
                if i < n_tiles:
                    _write_tile(output_ptr, smem, i, offsets, vector_starts, row_max, inv_row_sum, tile_start, first,
                                end_in_tiles, last, dtype, TILE, VEC, LOOSE, layout)
                if i < next_tiles - APART:
                    _refill(in_desc, smem, bars, i, next_tile_start, TILE, W)
        if APART & (next_tiles > 0):
            fence_async_shared()
            _cta_barrier()  # every warp has read the slot, whichever it is
            _issue_last_tile(in_desc, part_desc, smem, bars, next_tiles - 1, next_tile_start + (next_tiles - 1) * TILE,
                             next_end, TILE, SLOTS, W)
        item = next_item
        j += 1
    for i in gl.static_range(SLOTS):
        mbarrier.invalidate(bars.index(i))


@gluon.jit
def _lag_stats(input_ptr, smem, bars, base, phases, tile_start, n_tiles, first, end, covered, offsets, vector_starts,
               dtype: gl.constexpr, TILE: gl.constexpr, VEC: gl.constexpr, LOOSE: gl.constexpr, layout: gl.constexpr,
               lanes: gl.constexpr):
    """Pass 1 of an item held in slots base ..: its (max, sum of exp(x - max)) over [first, end), each tile as it
    lands (its whole vectors, _in_tiles), with its loose elements (LOOSE > 0) read from global memory."""
    last = gl.minimum(end, covered)
    if LOOSE > 0:  # asked for first, so that their latency passes under the tiles'
        loose, loose_mask, loose_x = _load_loose(input_ptr, first, end, covered, VEC, LOOSE, lanes)
    vec_max = gl.full([TILE // VEC], float("-inf"), gl.float32, layout=gl.SliceLayout(1, layout))
    vec_sum = gl.full([TILE // VEC], 0.0, gl.float32, layout=gl.SliceLayout(1, layout))
    for t in range(n_tiles):
        mbarrier.wait(bars.index(base + t), (phases >> (base + t)) & 1)
        mask = _in_tiles(tile_start + t * TILE, offsets, vector_starts, first, end, last, VEC, LOOSE)
        x = gl.where(mask, _tile(smem, base + t, dtype, TILE, VEC, layout), float("-inf"))
        vec_max, vec_sum = _online(vec_max, vec_sum, x)
    seg_max, seg_sum = _combine(vec_max, vec_sum)
    if LOOSE > 0:
        seg_max, seg_sum = _with_loose(seg_max, seg_sum, loose_x)
    return seg_max, seg_sum


@gluon.jit
def _tma_lag_fwd_kernel(output_ptr, input_ptr, in_desc, slots_ptr, n_rows, n_cols, n_segments, segment_cols,
                        max_polls, TILE: gl.constexpr, SLOTS: gl.constexpr, VEC: gl.constexpr,
                        SEGMENTS_BLOCK: gl.constexpr, NUM_WARPS: gl.constexpr, LOOSE: gl.constexpr = 0,
                        ALIGNED: gl.constexpr = False):
    """_tma_stream_fwd_kernel's softmax (the tiles as a loop; its LOOSE elements and ALIGNED cut), each
    item finished one step late, as _tma_lag_bwd_kernel's backward: two items a program in two groups of SLOTS slots,
    item k + 1's pass 1 and partial before item k waits for its row, item k's pass 2 refilling its group with item
    k + 2's tiles (round 170: the H200's fp32 1M +5.8% on the table's 6 programs an SM, at half the bytes an item;
    2-byte rows lost 1-3%, their passes being what holds them, round 167). Rows of one segment carry their own
    (max, sum) instead of publishing it."""
    dtype: gl.constexpr = in_desc.dtype
    W: gl.constexpr = in_desc.block_type.shape[1]
    STEP: gl.constexpr = VEC if LOOSE == 0 else 1  # rows of whole vectors start on a vector
    layout: gl.constexpr = gl.BlockedLayout([1, VEC], [32, 1], [NUM_WARPS, 1], [1, 0])
    lanes: gl.constexpr = gl.BlockedLayout([1], [32], [NUM_WARPS], [0])
    smem = gl.allocate_shared_memory(dtype, [2 * SLOTS] + in_desc.block_type.shape, in_desc.layout)
    bars = _new_barriers(2 * SLOTS)
    if LOOSE == 0:
        n_cols = n_cols // VEC * VEC  # tells the compiler what the launch checked: rows of whole 16-byte vectors
    segment_cols = segment_cols // VEC * VEC
    covered = n_rows * n_cols // W * W  # the elements the descriptor's whole view rows hold
    offsets = _tile_offsets(TILE, VEC, layout)
    vector_starts = gl.expand_dims(gl.arange(0, TILE // VEC, layout=gl.SliceLayout(1, layout)), 1) * VEC
    siblings = gl.arange(0, SEGMENTS_BLOCK, layout=lanes)
    n_items = n_rows * n_segments
    step = gl.num_programs(0)
    item = gl.program_id(0)  # the grid is at most an item a program: every program has a first item
    row, first, end, tile_start, n_tiles = _item_span(item, n_segments, segment_cols, n_cols, TILE, W, ALIGNED, STEP)
    for t in range(n_tiles):
        _issue_tile(in_desc, smem.index(t), bars.index(t), tile_start + t * TILE, W)
    second = item + step
    s_row, s_first, s_end, s_tile_start, s_tiles = _item_span(second, n_segments, segment_cols, n_cols, TILE, W,
                                                              ALIGNED, STEP)
    if second < n_items:
        for t in range(s_tiles):
            _issue_tile(in_desc, smem.index(SLOTS + t), bars.index(SLOTS + t), s_tile_start + t * TILE, W)
    phases = item * 0  # bit i: the phase slot i's barrier completes next
    seg_max, seg_sum = _lag_stats(input_ptr, smem, bars, 0, phases, tile_start, n_tiles, first, end, covered, offsets,
                                  vector_starts, dtype, TILE, VEC, LOOSE, layout, lanes)
    phases = phases ^ ((1 << n_tiles) - 1)
    if n_segments > 1:
        gl.atomic_xchg(slots_ptr + item, _pack(seg_max, seg_sum), sem="relaxed")
    base = item * 0  # the group of the item whose pass 2 comes next
    for item in range(gl.program_id(0), n_items, step):
        row, first, end, tile_start, n_tiles = _item_span(item, n_segments, segment_cols, n_cols, TILE, W, ALIGNED,
                                                          STEP)
        next_base = SLOTS - base
        following = item + step
        f_row, f_first, f_end, f_tile_start, f_tiles = _item_span(following, n_segments, segment_cols, n_cols, TILE,
                                                                  W, ALIGNED, STEP)
        f_max = seg_max
        f_sum = seg_sum
        if following < n_items:  # the lag: the next item's pass 1 and partial before this item's wait
            f_max, f_sum = _lag_stats(input_ptr, smem, bars, next_base, phases, f_tile_start, f_tiles, f_first, f_end,
                                      covered, offsets, vector_starts, dtype, TILE, VEC, LOOSE, layout, lanes)
            phases = phases ^ (((1 << f_tiles) - 1) << next_base)
            if n_segments > 1:
                gl.atomic_xchg(slots_ptr + following, _pack(f_max, f_sum), sem="relaxed")
        if n_segments == 1:
            row_max = seg_max
            inv_row_sum = 1.0 / (seg_sum * _exp(seg_max - row_max))  # NaN for a fully -inf row, as in torch
        else:
            row_max, inv_row_sum = _row_max_inv_sum(input_ptr, slots_ptr, row, item, n_segments, segment_cols, n_cols,
                                                    siblings, max_polls, offsets, W, ALIGNED, STEP, TILE, VEC, layout,
                                                    NUM_WARPS)
        after = item + 2 * step
        a_row, a_first, a_end, a_tile_start, a_tiles = _item_span(after, n_segments, segment_cols, n_cols, TILE, W,
                                                                  ALIGNED, STEP)
        if after >= n_items:
            a_tiles = 0
        if LOOSE > 0:  # read again: they were read an item ago, and L2 holds them
            loose, loose_mask, loose_x = _load_loose(input_ptr, first, end, covered, VEC, LOOSE, lanes)
            gl.store(output_ptr + loose.to(gl.int64), (_exp(loose_x - row_max) * inv_row_sum).to(dtype),
                     mask=loose_mask)
        last = gl.minimum(end, covered)
        for t in range(n_tiles):  # pass 2 from this item's group; item k + 2's tile t follows tile t
            tile_lo = tile_start + t * TILE
            y = _exp(_tile(smem, base + t, dtype, TILE, VEC, layout) - row_max) * inv_row_sum
            mask = _in_tiles(tile_lo, offsets, vector_starts, first, end, last, VEC, LOOSE)
            gl.store(output_ptr + (tile_lo + offsets).to(gl.int64), y.to(dtype), mask=mask)
            if t < a_tiles:
                fence_async_shared()
                _cta_barrier()  # every warp has read slot base + t
                _issue_tile(in_desc, smem.index(base + t), bars.index(base + t), a_tile_start + t * TILE, W)
        for t in range(n_tiles, a_tiles):
            fence_async_shared()
            _cta_barrier()
            _issue_tile(in_desc, smem.index(base + t), bars.index(base + t), a_tile_start + t * TILE, W)
        base = next_base
        seg_max = f_max
        seg_sum = f_sum
    for i in gl.static_range(2 * SLOTS):
        mbarrier.invalidate(bars.index(i))


@gluon.jit
def _global_segment_dot(output_ptr, grad_output_ptr, first, end, offsets, TILE: gl.constexpr, VEC: gl.constexpr,
                        layout: gl.constexpr):
    """sum(y * dy) over the flat elements [first, end), read from global memory: the backward's cold path for a
    sibling that has not published (see max_polls)."""
    vec_dot = gl.full([TILE // VEC], 0.0, gl.float32, layout=gl.SliceLayout(1, layout))
    for start in range(first, end, TILE):
        flat = start + offsets
        y = gl.load(output_ptr + flat.to(gl.int64), mask=flat < end, other=0.0).to(gl.float32)
        dy = gl.load(grad_output_ptr + flat.to(gl.int64), mask=flat < end, other=0.0).to(gl.float32)
        vec_dot += gl.sum(y * dy, axis=1)
    return gl.sum(vec_dot, axis=0)


@gluon.jit
def _pack_dot(dot):
    """A segment's dot as a slot: its bits in the lower word, 1.0's in the upper, so the slot is never 0 ("missing")
    whatever the dot (as triton_softmax's stream kernel)."""
    return (dot.to(gl.int32, bitcast=True).to(gl.int64) & 0xFFFFFFFF) | 0x3F80000000000000


@gluon.jit
def _row_dot_of(output_ptr, grad_output_ptr, slots_ptr, row, item, n_segments, segment_cols, n_cols, siblings,
                max_polls, offsets, TILE: gl.constexpr, VEC: gl.constexpr, layout: gl.constexpr,
                NUM_WARPS: gl.constexpr):
    """sum(y * dy) of item's row from its segments' slots, re-read until every sibling has published; a sibling that
    is not running (the grid is not co-resident: max_polls spent) has its dot computed from global memory and
    published, so that the row's other segments find it too."""
    ptrs, in_row, packed, missing = _await_slots(slots_ptr, row, n_segments, siblings, max_polls)
    if _anywhere(missing, NUM_WARPS):
        row_first = row * n_cols
        for sibling in range(0, n_segments):
            if (sibling != item - row * n_segments) & _anywhere(_missing(packed, siblings, sibling), NUM_WARPS):
                s_first = row_first + sibling * segment_cols
                s_dot = _global_segment_dot(output_ptr, grad_output_ptr, s_first,
                                            gl.minimum(s_first + segment_cols, row_first + n_cols), offsets, TILE, VEC,
                                            layout)
                gl.atomic_xchg(slots_ptr + row * n_segments + sibling, _pack_dot(s_dot), sem="relaxed")
        # every slot is written now: each warp re-reads its copy until it sees them all (one re-read, and a
        # decision of each warp's own, once left a warp summing its row without one partial on an H100)
        ptrs, in_row, packed, missing = _await_slots(slots_ptr, row, n_segments, siblings, 1 << 30)
    return gl.sum(gl.where(in_row, packed.to(gl.int32).to(gl.float32, bitcast=True), 0.0), axis=0)


@gluon.jit
def _issue_pair(y_desc, dy_desc, y_slot, dy_slot, bar, tile_start, W: gl.constexpr):
    """Ask the TMA for the y and dy tiles at flat index tile_start; bar counts both."""
    mbarrier.expect(bar, 2 * y_desc.block_type.nbytes)
    tma.async_copy_global_to_shared(y_desc, [tile_start // W, 0], bar, y_slot)
    tma.async_copy_global_to_shared(dy_desc, [tile_start // W, 0], bar, dy_slot)


@gluon.jit
def _after_block(first, end, REG: gl.constexpr, TILE: gl.constexpr):
    """(flat index of an item's first tile, its tiles) where the registers hold its first REG elements: whole tiles
    from first + REG (first is a whole tile into a row of whole tiles), none where the block holds the whole item."""
    tile_start = gl.minimum(first + REG, end)
    return tile_start, gl.cdiv(end - tile_start, TILE)


@gluon.jit
def _load_block(output_ptr, grad_output_ptr, flat, end, live):
    """y and dy at the flat indices of a registers' block, in their own type (0 past end, or where not live)."""
    mask = (flat < end) & live
    return (gl.load(output_ptr + flat.to(gl.int64), mask=mask, other=0.0),
            gl.load(grad_output_ptr + flat.to(gl.int64), mask=mask, other=0.0))


@gluon.jit
def _tma_stream_bwd_kernel(grad_input_ptr, output_ptr, grad_output_ptr, y_desc, dy_desc, slots_ptr, n_rows, n_cols,
                           n_segments, segment_cols, max_polls, TILE: gl.constexpr, SLOTS: gl.constexpr,
                           VEC: gl.constexpr, ALIGN: gl.constexpr, SEGMENTS_BLOCK: gl.constexpr,
                           NUM_WARPS: gl.constexpr, REG: gl.constexpr = 0):
    """The backward dx = y * (dy - sum(y * dy)) of contiguous [n_rows, n_cols] y and dy on tma-stream's plan: each
    (row, segment) item's y and dy (at most SLOTS tiles of each) held in shared memory from their load to dx's write,
    the segments' dots exchanged through slots, the next item's tiles asked for as this item's are written. REG > 0
    (rows and segments of whole tiles only: _register_cut): each segment's first REG elements of y and dy are held in
    registers instead, loaded beside the tiles; their dx is written first, and the next item's asked for right after,
    while the tiles' dx is written (round 152: one program an SM leaves the register file idle, and longer segments
    spread each item's wait over more bytes)."""
    dtype: gl.constexpr = y_desc.dtype
    W: gl.constexpr = y_desc.block_type.shape[1]
    layout: gl.constexpr = gl.BlockedLayout([1, VEC], [32, 1], [NUM_WARPS, 1], [1, 0])
    y_smem = gl.allocate_shared_memory(dtype, [SLOTS] + y_desc.block_type.shape, y_desc.layout)
    dy_smem = gl.allocate_shared_memory(dtype, [SLOTS] + dy_desc.block_type.shape, dy_desc.layout)
    bars = _new_barriers(SLOTS)
    n_cols = n_cols // ALIGN * ALIGN  # tells the compiler what the launch checked: 16-byte vectors
    segment_cols = segment_cols // VEC * VEC  # whole vectors (_segments)
    offsets = _tile_offsets(TILE, VEC, layout)
    siblings = gl.arange(0, SEGMENTS_BLOCK, layout=gl.BlockedLayout([1], [32], [NUM_WARPS], [0]))
    n_items = n_rows * n_segments
    step = gl.num_programs(0)
    item = gl.program_id(0)
    row, first, end, tile_start, n_tiles = _item_span(item, n_segments, segment_cols, n_cols, TILE, W)
    if REG > 0:
        block_offsets = _tile_offsets(REG, VEC, layout)
        tile_start, n_tiles = _after_block(first, end, REG, TILE)
    for i in gl.static_range(SLOTS):
        if (i < n_tiles) & (item < n_items):
            _issue_pair(y_desc, dy_desc, y_smem.index(i), dy_smem.index(i), bars.index(i), tile_start + i * TILE, W)
    if REG > 0:
        block_y, block_dy = _load_block(output_ptr, grad_output_ptr, first + block_offsets, end, item < n_items)
    phases = item * 0  # bit i: the phase slot i's barrier completes next
    for item in range(gl.program_id(0), n_items, step):
        row, first, end, tile_start, n_tiles = _item_span(item, n_segments, segment_cols, n_cols, TILE, W)
        if REG > 0:
            tile_start, n_tiles = _after_block(first, end, REG, TILE)
        vec_dot = gl.full([TILE // VEC], 0.0, gl.float32, layout=gl.SliceLayout(1, layout))
        for i in gl.static_range(SLOTS):  # pass 1: each pair of tiles as it lands
            if i < n_tiles:
                mbarrier.wait(bars.index(i), (phases >> i) & 1)
                flat = tile_start + i * TILE + offsets
                product = _tile(y_smem, i, dtype, TILE, VEC, layout) * _tile(dy_smem, i, dtype, TILE, VEC, layout)
                vec_dot += gl.sum(gl.where((flat >= first) & (flat < end), product, 0.0), axis=1)
        phases = phases ^ ((1 << n_tiles) - 1)
        row_dot = gl.sum(vec_dot, axis=0)
        if REG > 0:
            row_dot += gl.sum(gl.sum(block_y.to(gl.float32) * block_dy.to(gl.float32), axis=1), axis=0)
        if n_segments > 1:
            gl.atomic_xchg(slots_ptr + item, _pack_dot(row_dot), sem="relaxed")
            row_dot = _row_dot_of(output_ptr, grad_output_ptr, slots_ptr, row, item, n_segments, segment_cols, n_cols,
                                  siblings, max_polls, offsets, TILE, VEC, layout, NUM_WARPS)
        next_item = item + step
        next_row, next_first, next_end, next_tile_start, next_tiles = _item_span(
            next_item, n_segments, segment_cols, n_cols, TILE, W)
        if REG > 0:
            next_tile_start, next_tiles = _after_block(next_first, next_end, REG, TILE)
        if next_item >= n_items:
            next_tiles = 0
        if REG > 0:  # pass 2 of the registers' block, and the next item's block asked for
            block_flat = first + block_offsets
            block_dx = block_y.to(gl.float32) * (block_dy.to(gl.float32) - row_dot)
            gl.store(grad_input_ptr + block_flat.to(gl.int64), block_dx.to(dtype), mask=block_flat < end)
            block_y, block_dy = _load_block(output_ptr, grad_output_ptr, next_first + block_offsets, next_end,
                                            next_item < n_items)
        for i in gl.static_range(SLOTS):  # pass 2, from shared memory; the next item's tiles i follow tiles i
            if i < n_tiles:
                flat = tile_start + i * TILE + offsets
                y = _tile(y_smem, i, dtype, TILE, VEC, layout)
                dx = y * (_tile(dy_smem, i, dtype, TILE, VEC, layout) - row_dot)
                gl.store(grad_input_ptr + flat.to(gl.int64), dx.to(dtype), mask=(flat >= first) & (flat < end))
            if i < next_tiles:
                fence_async_shared()
                _cta_barrier()  # every warp has read slot i
                _issue_pair(y_desc, dy_desc, y_smem.index(i), dy_smem.index(i), bars.index(i),
                            next_tile_start + i * TILE, W)
    for i in gl.static_range(SLOTS):
        mbarrier.invalidate(bars.index(i))


@gluon.jit
def _lag_issue(y_desc, dy_desc, y_smem, dy_smem, bars, base, tile_start, n_tiles, SLOTS: gl.constexpr,
               TILE: gl.constexpr, W: gl.constexpr):
    """Ask the TMA for an item's y and dy tiles into slots base .. base + n_tiles - 1 (at most SLOTS)."""
    for i in gl.static_range(SLOTS):
        if i < n_tiles:
            _issue_pair(y_desc, dy_desc, y_smem.index(base + i), dy_smem.index(base + i), bars.index(base + i),
                        tile_start + i * TILE, W)


@gluon.jit
def _lag_dot(y_smem, dy_smem, bars, base, phases, tile_start, n_tiles, first, end, offsets, dtype: gl.constexpr,
             TILE: gl.constexpr, SLOTS: gl.constexpr, VEC: gl.constexpr, layout: gl.constexpr):
    """Pass 1 of an item held in slots base ..: sum(y * dy) over [first, end), each tile pair as it lands."""
    vec_dot = gl.full([TILE // VEC], 0.0, gl.float32, layout=gl.SliceLayout(1, layout))
    for i in gl.static_range(SLOTS):
        if i < n_tiles:
            mbarrier.wait(bars.index(base + i), (phases >> (base + i)) & 1)
            flat = tile_start + i * TILE + offsets
            product = (_tile(y_smem, base + i, dtype, TILE, VEC, layout)
                       * _tile(dy_smem, base + i, dtype, TILE, VEC, layout))
            vec_dot += gl.sum(gl.where((flat >= first) & (flat < end), product, 0.0), axis=1)
    return gl.sum(vec_dot, axis=0)


@gluon.jit
def _tma_lag_bwd_kernel(grad_input_ptr, output_ptr, grad_output_ptr, y_desc, dy_desc, slots_ptr, n_rows, n_cols,
                        n_segments, segment_cols, max_polls, TILE: gl.constexpr, SLOTS: gl.constexpr,
                        VEC: gl.constexpr, ALIGN: gl.constexpr, SEGMENTS_BLOCK: gl.constexpr,
                        NUM_WARPS: gl.constexpr):
    """_tma_stream_bwd_kernel's backward, each item finished one step late: a program holds two items, each in its
    own group of SLOTS slot pairs, and runs item k + 1's pass 1 and publishes its dot before item k waits for its
    row's total, so that a whole pass 1 stands between publishing an item and needing its row; item k's pass 2 then
    refills its group with item k + 2's tiles. One program an SM waits with every slot full, and the exchange cost the
    H200's fp32 rows of 1M columns 10.5% (round 167); the lag gave back 12% there, at half the bytes an item (round
    168). Rows of one segment carry their own dot instead of publishing it."""
    dtype: gl.constexpr = y_desc.dtype
    W: gl.constexpr = y_desc.block_type.shape[1]
    layout: gl.constexpr = gl.BlockedLayout([1, VEC], [32, 1], [NUM_WARPS, 1], [1, 0])
    y_smem = gl.allocate_shared_memory(dtype, [2 * SLOTS] + y_desc.block_type.shape, y_desc.layout)
    dy_smem = gl.allocate_shared_memory(dtype, [2 * SLOTS] + dy_desc.block_type.shape, dy_desc.layout)
    bars = _new_barriers(2 * SLOTS)
    n_cols = n_cols // ALIGN * ALIGN  # tells the compiler what the launch checked: 16-byte vectors
    segment_cols = segment_cols // VEC * VEC  # whole vectors (_segments)
    offsets = _tile_offsets(TILE, VEC, layout)
    siblings = gl.arange(0, SEGMENTS_BLOCK, layout=gl.BlockedLayout([1], [32], [NUM_WARPS], [0]))
    n_items = n_rows * n_segments
    step = gl.num_programs(0)
    item = gl.program_id(0)  # the grid is at most an item a program: every program has a first item
    row, first, end, tile_start, n_tiles = _item_span(item, n_segments, segment_cols, n_cols, TILE, W)
    _lag_issue(y_desc, dy_desc, y_smem, dy_smem, bars, 0, tile_start, n_tiles, SLOTS, TILE, W)
    second = item + step
    s_row, s_first, s_end, s_tile_start, s_tiles = _item_span(second, n_segments, segment_cols, n_cols, TILE, W)
    if second < n_items:
        _lag_issue(y_desc, dy_desc, y_smem, dy_smem, bars, SLOTS, s_tile_start, s_tiles, SLOTS, TILE, W)
    phases = item * 0  # bit i: the phase slot i's barrier completes next
    dot = _lag_dot(y_smem, dy_smem, bars, 0, phases, tile_start, n_tiles, first, end, offsets, dtype, TILE, SLOTS, VEC,
                   layout)
    phases = phases ^ ((1 << n_tiles) - 1)
    if n_segments > 1:
        gl.atomic_xchg(slots_ptr + item, _pack_dot(dot), sem="relaxed")
    base = item * 0  # the group of the item whose pass 2 comes next
    for item in range(gl.program_id(0), n_items, step):
        row, first, end, tile_start, n_tiles = _item_span(item, n_segments, segment_cols, n_cols, TILE, W)
        next_base = SLOTS - base
        following = item + step
        f_row, f_first, f_end, f_tile_start, f_tiles = _item_span(following, n_segments, segment_cols, n_cols, TILE,
                                                                  W)
        f_dot = dot * 0.0
        if following < n_items:  # the lag: the next item's pass 1 and its dot before this item's wait
            f_dot = _lag_dot(y_smem, dy_smem, bars, next_base, phases, f_tile_start, f_tiles, f_first, f_end, offsets,
                             dtype, TILE, SLOTS, VEC, layout)
            phases = phases ^ (((1 << f_tiles) - 1) << next_base)
            if n_segments > 1:
                gl.atomic_xchg(slots_ptr + following, _pack_dot(f_dot), sem="relaxed")
        row_dot = dot
        if n_segments > 1:
            row_dot = _row_dot_of(output_ptr, grad_output_ptr, slots_ptr, row, item, n_segments, segment_cols, n_cols,
                                  siblings, max_polls, offsets, TILE, VEC, layout, NUM_WARPS)
        after = item + 2 * step
        a_row, a_first, a_end, a_tile_start, a_tiles = _item_span(after, n_segments, segment_cols, n_cols, TILE, W)
        if after >= n_items:
            a_tiles = 0
        for i in gl.static_range(SLOTS):  # pass 2 from this item's group; item k + 2's tile i follows tile i
            if i < n_tiles:
                flat = tile_start + i * TILE + offsets
                y = _tile(y_smem, base + i, dtype, TILE, VEC, layout)
                dx = y * (_tile(dy_smem, base + i, dtype, TILE, VEC, layout) - row_dot)
                gl.store(grad_input_ptr + flat.to(gl.int64), dx.to(dtype), mask=(flat >= first) & (flat < end))
            if i < a_tiles:
                fence_async_shared()
                _cta_barrier()  # every warp has read slot base + i
                _issue_pair(y_desc, dy_desc, y_smem.index(base + i), dy_smem.index(base + i), bars.index(base + i),
                            a_tile_start + i * TILE, W)
        base = next_base
        dot = f_dot
    for i in gl.static_range(2 * SLOTS):
        mbarrier.invalidate(bars.index(i))


# ----------------------------------------------------------------------------------------------
# Layer 2: eligibility and launch
# ----------------------------------------------------------------------------------------------

# Shared memory a program may hold: 14 tiles of 16 KB and the barriers, under the 227 KB a Hopper program may take.
SEGMENT_BYTES = 229376
# What the programs on one Hopper SM share: 64K registers and 228 KB of shared memory, of which the driver reserves
# 1 KB a program. Launches of several programs an SM cap each thread's registers at its share, so that the whole grid
# is resident at once: a row's segments wait for each other, and a sibling that is not running costs max_polls
# re-reads and a read of its segment from global memory (rounds 113-114).
SM_REGISTERS = 65536
SM_SHARED_BYTES = 233472
PROGRAM_RESERVED_BYTES = 1024
# View rows of these many bytes, the first that divides the tensor (a TMA box's rows are 16-byte multiples, and
# narrower ones, many to a box, moved data at half of copy speed in round 6).
VIEW_ROW_BYTES = (512, 256)


def _view_width(x: torch.Tensor) -> int:
    """Elements a row of the descriptor's view of x (0: no view row width divides it)."""
    return _view_width_of(x.numel(), x.element_size())


def _view_width_of(numel: int, elem_bytes: int) -> int:
    """The widest view row, in elements, of VIEW_ROW_BYTES dividing numel elements (0: none does)."""
    return next((row_bytes // elem_bytes for row_bytes in VIEW_ROW_BYTES if numel % (row_bytes // elem_bytes) == 0), 0)


def _tma_readable(x: torch.Tensor) -> bool:
    """Whether the TMA can read x as a flat view: a CUDA tensor of compute capability 9.0 or more, 2-D, contiguous, on
    a 16-byte-aligned base, with fewer than 2^31 elements (the kernels' flat indices are 32-bit)."""
    return (x.is_cuda and x.dim() == 2 and x.is_contiguous() and x.data_ptr() % 16 == 0
            and _device_facts(x.device)[0] >= 9 and 0 < x.numel() < 2 ** 31)


@functools.lru_cache(maxsize=None)
def _device_facts(device: torch.device) -> tuple[int, int]:
    """(compute capability's major, streaming multiprocessors) of a CUDA device, asked of the driver once: an eager
    call's host time is what these lookups cost otherwise (round 142)."""
    properties = torch.cuda.get_device_properties(device)
    return properties.major, properties.multi_processor_count


@functools.lru_cache(maxsize=None)
def _shared_layout(elem_bytes: int):
    """The descriptors' shared-memory layout for elements of elem_bytes (no swizzle), built once."""
    return gl.NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=elem_bytes * 8, rank=2)


def tma_forward_eligible(x: torch.Tensor) -> bool:
    """Whether the tma-stream forward can take x: readable by the TMA and of at least one view row (of
    VIEW_ROW_BYTES[0]); any row length and element count (the kernel reads its loose elements apart)."""
    return _tma_readable(x) and x.numel() * x.element_size() >= VIEW_ROW_BYTES[0]


def tma_backward_eligible(x: torch.Tensor) -> bool:
    """Whether the tma-stream backward can take x (y or dy): readable by the TMA, of rows of whole 16-byte vectors,
    with a view row width dividing it."""
    return _tma_readable(x) and x.shape[1] % (16 // x.element_size()) == 0 and _view_width(x) > 0


@functools.lru_cache(maxsize=4096)
def _segments(n_cols: int, tile: int, segment_bytes: int, elem_bytes: int, width: int,
              aligned: bool = False) -> tuple[int, int, int]:
    """(segments a row, columns a segment, slots a program) for rows of n_cols in tiles of tile elements (view rows of
    width), each segment's tiles within segment_bytes. Rows that start on a view row take whole tiles a segment, as
    even as whole tiles allow. Others take as many segments as whole tiles of one slot less would (a segment that
    starts inside a view row reads one box more), cut evenly in whole vectors: whole tiles left the last segment
    short and the others reading one box more than their tiles (round 108). With aligned, they take every slot a
    segment instead, each segment after a row's first starting on a view row (the kernel's ALIGNED): a row that
    starts lead columns into a view row (a multiple of gcd(n_cols, width)) has cdiv(n_cols + lead, slots' columns)
    segments, and rows of fewer have an empty last one."""
    most = max(1, segment_bytes // (tile * elem_bytes))
    row_tiles = triton.cdiv(n_cols, tile)
    if aligned and n_cols % width:
        return triton.cdiv(n_cols + width - math.gcd(n_cols, width), most * tile), most * tile, most
    if n_cols % width == 0:
        n_segments = triton.cdiv(row_tiles, min(most, row_tiles))
        tiles = triton.cdiv(row_tiles, n_segments)
        return n_segments, tiles * tile, tiles
    vec = 16 // elem_bytes
    n_segments = triton.cdiv(row_tiles, max(1, most - 1))
    segment_cols = triton.cdiv(triton.cdiv(n_cols, n_segments), vec) * vec
    # at most (most - 1) tiles, plus an offset under a view row: within most tiles (a tile is whole view rows)
    return n_segments, segment_cols, triton.cdiv(segment_cols + width - 1, tile)


# fill_rounds: counts of segments from the fewest to FILL_SPREAD times it are weighed (rounds 145-147).
FILL_SPREAD = 1.25


@functools.lru_cache(maxsize=4096)
def _filled_segments(n_cols: int, tile: int, segment_bytes: int, elem_bytes: int, width: int,
                     programs: int) -> tuple[int, int, int]:
    """_segments' answer for a grid of programs over rows of whole view rows, cut into the count of segments, from the
    fewest to FILL_SPREAD times it, whose frac(programs / count) is largest (the fewer on ties), evenly in whole
    vectors within the slots; the fewest keep _segments' cut. On one program an SM the backward ran fastest where a
    round of the grid ends just short of a row's end, and up to 16% slower where it ends just into one (rounds
    145-147: fp32 1M in 45 segments, not 37, +5%; why is not understood)."""
    fewest = _segments(n_cols, tile, segment_bytes, elem_bytes, width)
    most = max(1, segment_bytes // (tile * elem_bytes))
    vec = 16 // elem_bytes
    if n_cols % width or fewest[0] == 1:
        return fewest
    best = fewest
    # counts past the programs would leave a row's segments waiting on siblings that are not running (round 158)
    for count in range(fewest[0] + 1, min(int(fewest[0] * FILL_SPREAD), programs) + 1):
        cols = triton.cdiv(triton.cdiv(n_cols, count), vec) * vec
        slots = triton.cdiv(cols + width - vec, tile)  # a segment starts at most width - vec into a view row
        fits = triton.cdiv(n_cols, cols) == count and slots <= most
        if fits and programs % count / count > programs % best[0] / best[0]:
            best = (count, cols, slots)
    return best


def _register_cut(n_cols: int, tile: int, segment_bytes: int, elem_bytes: int,
                  register_tiles: int) -> tuple[int, int, int] | None:
    """(segments a row, columns a segment, slots a program) where each segment's first register_tiles tiles are held
    in registers (the backward's REG) and the rest in at most segment_bytes of slots: rows of whole tiles only, cut
    into the fewest segments, of whole tiles as even as they allow (the last may be shorter; an even cut in whole
    vectors lost 1.5-4% on the H200, round 153); None for other rows, which keep _segments' cut without."""
    most = max(1, segment_bytes // (tile * elem_bytes))
    if not register_tiles or n_cols % tile:
        return None
    row_tiles = n_cols // tile
    n_segments = triton.cdiv(row_tiles, most + register_tiles)
    tiles = triton.cdiv(row_tiles, n_segments)
    return n_segments, tiles * tile, max(1, tiles - register_tiles)


def _cut(n_rows: int, n_cols: int, tile: int, segment_bytes: int, elem_bytes: int, width: int, aligned: bool,
         fill_rounds: bool, register_tiles: int, programs: int) -> tuple[int, int, int]:
    """(segments a row, columns a segment, slots a program) of a launch of programs programs: _register_cut's where
    it applies, else _filled_segments' with fill_rounds where the items outnumber the programs, else _segments'."""
    register_cut = _register_cut(n_cols, tile, segment_bytes, elem_bytes, register_tiles)
    if register_cut:
        return register_cut
    cut = _segments(n_cols, tile, segment_bytes, elem_bytes, width, aligned)
    if fill_rounds and not aligned and n_rows * cut[0] > programs:
        return _filled_segments(n_cols, tile, segment_bytes, elem_bytes, width, programs)
    return cut


def _forward_width(n_rows: int, n_cols: int, elem_bytes: int) -> int:
    """The forward's view row width: the widest of VIEW_ROW_BYTES dividing the tensor for rows of whole 16-byte
    vectors, else (rows with loose elements) the first."""
    whole = _view_width_of(n_rows * n_cols, elem_bytes) if n_cols % (16 // elem_bytes) == 0 else 0
    return whole or VIEW_ROW_BYTES[0] // elem_bytes


def fits_grid(op: str, n_rows: int, n_cols: int, elem_bytes: int, vectors_per_thread: int, num_warps: int,
              segment_bytes: int, programs_per_sm: int, sms: int, aligned: bool = False, fill_rounds: bool = False,
              register_tiles: int = 0, lag: bool = False) -> bool:
    """Whether every segment of a row of op's tma-stream launch (segment_bytes of slots a program, both tensors' for
    the backward, halved between two items with lag) runs at once on its grid of programs_per_sm x sms programs. A row
    cut into more segments waits on siblings that are not running, and each waiting program computes their partials
    from global memory: 75x slower (the H100's fp32 backward at 3,145,728 and 4,194,304 columns, round 158)."""
    tile = num_warps * 32 * vectors_per_thread * 16 // elem_bytes
    width = _forward_width(n_rows, n_cols, elem_bytes)  # the backward's too: it takes only rows of whole vectors
    aligned = bool(aligned and n_cols % width) if op == "forward" else False
    per_tensor = segment_bytes // (2 if lag else 1) if op == "forward" else segment_bytes // (4 if lag else 2)
    programs = programs_per_sm * sms
    n_segments = _cut(n_rows, n_cols, tile, per_tensor, elem_bytes, width, aligned, fill_rounds, register_tiles,
                      programs)[0]
    return n_segments <= programs


def _direct(kernel, grid, *args, **kwargs) -> None:
    """kernel[grid](*args, **kwargs): the launchers' default launch (triton_softmax passes its own, which records
    the compiled kernel for the runs' compile facts)."""
    kernel[grid](*args, **kwargs)


def _register_share(programs_per_sm: int, num_warps: int) -> int:
    """Registers a thread may take so that programs_per_sm programs of num_warps warps fit an SM (0: one program an
    SM, no cap); ptxas allocates them in steps of 8."""
    return 0 if programs_per_sm == 1 else SM_REGISTERS // (programs_per_sm * num_warps * 32) // 8 * 8


def _rows_cap(n_rows: int, n_groups: int) -> int:
    """Rows one group of a ROWS_DYNAMIC launch may take at most (its boxes): twice its even share, so the groups'
    boxes hold every row twice over, and a fast group is never stopped by its boxes."""
    return 2 * triton.cdiv(n_rows, n_groups) + 2


class _Launch(NamedTuple):
    """What both directions' launches share: the grid, the segments, the zeroed slots and the constexprs."""
    grid: tuple
    n_segments: int
    segment_cols: int
    slots: torch.Tensor
    descriptor: Callable[[torch.Tensor], TensorDescriptor]
    constexprs: dict
    rows_cap: int = 0  # rows a group may take from the counter (the forward's ROWS_DYNAMIC), 0: not from it


def _launch_shape(t: torch.Tensor, vectors_per_thread: int, num_warps: int, segment_bytes: int, width: int,
                  programs_per_sm: int = 1, tensors: int = 1, aligned: bool = False,
                  fill_rounds: bool = False, register_tiles: int = 0, rows_dynamic: bool = False) -> _Launch:
    """The launch of a tma-stream kernel over tensors shaped as t (eligible), in segments of at most segment_bytes of
    each tensor, through a descriptor of view rows of width elements over as many whole view rows as t holds, with
    programs_per_sm programs an SM (or one an item, if fewer), each holding tensors tensors' slots; fill_rounds: rows
    cut as _filled_segments does, where the items outnumber the programs; register_tiles: rows of whole tiles cut as
    _register_cut does, with the kernel's REG (the backward's), 0 for others; rows_dynamic: whole rows from a counter
    (the forward's ROWS_DYNAMIC) where the grid is whole groups of a row's programs and holds fewer groups than rows,
    the counter and each group's rows_cap boxes zeroed after the items' slots."""
    n_rows, n_cols = t.shape
    elem = t.element_size()
    tile = num_warps * 32 * vectors_per_thread * 16 // elem
    programs = programs_per_sm * _device_facts(t.device)[1] if fill_rounds else 0  # only fill_rounds needs them
    n_segments, segment_cols, slots = _cut(n_rows, n_cols, tile, segment_bytes, elem, width, aligned, fill_rounds,
                                           register_tiles, programs)
    register_cut = _register_cut(n_cols, tile, segment_bytes, elem, register_tiles)
    # the slots, and 1 KB for the barriers and the reductions' scratch (a few hundred bytes)
    if programs_per_sm * (tensors * slots * tile * elem + 1024 + PROGRAM_RESERVED_BYTES) > SM_SHARED_BYTES:
        raise ValueError(f"{programs_per_sm} tma-stream programs an SM of {slots} slots of {tile * elem} bytes "
                         f"({tensors} tensors) do not fit an SM's {SM_SHARED_BYTES} bytes of shared memory")
    sms = _device_facts(t.device)[1]
    maxnreg = _register_share(programs_per_sm, num_warps)
    layout = _shared_layout(elem)

    def descriptor(u: torch.Tensor, box_rows: int = tile // width) -> TensorDescriptor:
        """u's first numel // width * width elements viewed as [numel // width, width], in boxes of box_rows view
        rows (default: a tile a box)."""
        whole = u.numel() // width * width
        view = (u if whole == u.numel() else u.view(-1)[:whole]).view(-1, width)
        return TensorDescriptor(view, [whole // width, width], [width, 1], [box_rows, width], layout)
    grid = min(programs_per_sm * sms, n_rows * n_segments)
    n_groups = grid // n_segments
    rows_cap = _rows_cap(n_rows, n_groups) if rows_dynamic and grid % n_segments == 0 and n_rows > n_groups else 0
    n_slots = n_rows * n_segments if n_segments > 1 else 1
    if rows_cap:
        n_slots = n_rows * n_segments + 1 + n_groups * rows_cap
    return _Launch(
        grid=(grid,), n_segments=n_segments, segment_cols=segment_cols,
        slots=torch.zeros(n_slots, dtype=torch.int64, device=t.device),
        descriptor=descriptor, rows_cap=rows_cap,
        constexprs=dict(TILE=tile, SLOTS=slots, VEC=16 // elem,
                        SEGMENTS_BLOCK=max(2, triton.next_power_of_2(n_segments)), NUM_WARPS=num_warps,
                        num_warps=num_warps, **({"REG": register_tiles * tile} if register_cut else {}),
                        **({"maxnreg": maxnreg} if maxnreg else {})))


# An item's last tile is asked for in boxes of this many view rows where a segment's last tile is under half full,
# with the tiles unrolled, and as one box otherwise (round 111, against one box: fp32 100,000-100,001 +1.0-1.2% on the
# H100, +0.1-0.4% on the H200; fp32 777,777, whose last tiles are two-thirds full, -0.6% on the H100; the 2-byte tile
# loop's 100,001 -1.2% on the H200; boxes of one view row lost up to 4%).
LAST_TILE_PART_ROWS = 8


def _last_tile_part_rows(segment_cols: int, tile: int, width: int, tile_loop: bool) -> int:
    """View rows of the boxes an item's last tile is asked for in (a tile's: one box, with the other tiles)."""
    held = segment_cols % tile
    return LAST_TILE_PART_ROWS if 0 < held < tile // 2 and not tile_loop else tile // width


def tma_stream_forward(y: torch.Tensor, x: torch.Tensor, vectors_per_thread: int, num_warps: int,
                       segment_bytes: int, max_polls: int, tile_loop: bool = False, launch=_direct,
                       part_rows: int = 0, programs_per_sm: int = 1, aligned: bool = False,
                       lag: bool = False, rows_dynamic: bool = False) -> None:
    """Launch the tma-stream forward from x into y (both contiguous, x eligible: tma_forward_eligible), through
    launch(kernel, grid, *args, **kwargs); tile_loop: the kernel's TILE_LOOP; part_rows: view rows of the boxes an
    item's last tile is asked for in (0: _last_tile_part_rows's choice); programs_per_sm: programs an SM, each
    holding segment_bytes of slots (under SM_SHARED_BYTES together); aligned: rows that do not start on a view row
    cut so that only a row's first segment straddles one (_segments, the kernel's ALIGNED); lag: each program holds
    two items of half the slots each (_tma_lag_fwd_kernel); rows_dynamic: groups of a row's programs take whole rows
    from a counter (the kernel's ROWS_DYNAMIC), where the grid is whole groups and holds fewer groups than rows."""
    vec = 16 // x.element_size()
    # rows of whole vectors with a view row width dividing the tensor have no loose elements
    loose = 0 if x.shape[1] % vec == 0 and _view_width(x) else triton.next_power_of_2(
        2 * vec + VIEW_ROW_BYTES[0] // x.element_size())
    width = _forward_width(*x.shape, x.element_size())
    # rows of whole vectors in a tensor no view row width divides: only its last elements lie outside the view's
    # whole rows, so the unlagged kernel reads them apart in the one item that holds them (TAIL) rather than give
    # every item the loose block (round 193)
    tail = triton.next_power_of_2(width) if x.shape[1] % vec == 0 and not _view_width(x) and not lag else 0
    aligned = bool(aligned and x.shape[1] % width)
    if lag:
        shape = _launch_shape(x, vectors_per_thread, num_warps, segment_bytes // 2, width, programs_per_sm, tensors=2,
                              aligned=aligned)
        launch(_tma_lag_fwd_kernel, shape.grid, y, x, shape.descriptor(x), shape.slots, *x.shape, shape.n_segments,
               shape.segment_cols, max_polls, LOOSE=loose, ALIGNED=aligned, **shape.constexprs)
        return
    shape = _launch_shape(x, vectors_per_thread, num_warps, segment_bytes, width, programs_per_sm, aligned=aligned,
                          rows_dynamic=rows_dynamic)
    part_rows = part_rows or _last_tile_part_rows(shape.segment_cols, shape.constexprs["TILE"], width, tile_loop)
    # the block only where an item has loose elements: always with the even cut (only a row's first and last items
    # have any), on view rows only for rows of many segments (round 198: rows of 17-62 gained 1.3-3.4%, of 9-13
    # lost 3-5%)
    loose_where = bool(loose) and (not aligned or shape.n_segments >= LOOSE_WHERE_MIN_SEGMENTS)
    cut = bool(loose) and not aligned and not tail  # the kernel's CUT
    edge_step = _edge_step(shape, x.shape[1], width, 16 // x.element_size()) if cut else 0
    launch(_tma_stream_fwd_kernel, shape.grid, y, x, shape.descriptor(x), shape.descriptor(x, part_rows),
           shape.slots, *x.shape, shape.n_segments, shape.segment_cols, max_polls, shape.rows_cap, edge_step,
           LOOSE=0 if tail else loose, TILE_LOOP=tile_loop, ALIGNED=aligned, ROWS_DYNAMIC=shape.rows_cap > 0,
           TAIL=tail, LOOSE_WHERE=loose_where, **shape.constexprs)


# A row of partial vectors cut evenly (the kernel's CUT) gives its first and last segments, the two that read, fold and
# write its loose elements, about this share of segment_cols less, and its other segments the rest (round 203b: rows
# of 4 segments +4.6% on an H200 and +2.0% on an H100, rows of 5 and 10 within -0.1 to +0.3%).
EDGE_SHORTEN = 0.08


def _edge_step(shape, n_cols: int, width: int, vec: int) -> int:
    """The kernel's edge_step for an evenly cut launch of rows of n_cols: each inner segment edge_step longer, so the
    first and last EDGE_SHORTEN of segment_cols shorter, in even vectors, no more than lets the inner segments fit the
    slots at any offset in a view row or leaves the last segment empty; 0 for rows of fewer than 3 segments."""
    if shape.n_segments < 3:
        return 0
    inner = shape.n_segments - 2
    room = shape.constexprs["SLOTS"] * shape.constexprs["TILE"] - (width - vec) - shape.segment_cols
    last = n_cols - (shape.n_segments - 1) * shape.segment_cols  # a row's last segment, before any shift
    step = min(2 * int(EDGE_SHORTEN * shape.segment_cols) // inner, room, last // inner)
    return max(0, step) // (2 * vec) * (2 * vec)  # even vectors: the kernel's halving is exact


# Rows cut on view rows (ALIGNED) of at least this many segments run the loose block only where an item has loose
# elements (the kernel's LOOSE_WHERE): on an H200 rows of 17 segments and more gained 1.3-3.4% by it, of 9-13 lost 3-5%
# (round 198, notes/probes/2026-11-27-h200-vector-cut*.json).
LOOSE_WHERE_MIN_SEGMENTS = 16


def tma_stream_backward(dx: torch.Tensor, y: torch.Tensor, dy: torch.Tensor, vectors_per_thread: int, num_warps: int,
                        segment_bytes: int, max_polls: int, maxnreg: int = 0, launch=_direct,
                        programs_per_sm: int = 1, fill_rounds: bool = False, register_tiles: int = 0,
                        lag: bool = False) -> None:
    """Launch the tma-stream backward into dx (contiguous) from y and dy (both eligible: tma_backward_eligible),
    through launch; segment_bytes holds both tensors' tiles; maxnreg (0: ptxas chooses) caps a thread's registers
    where one program runs an SM (more take their share of the registers: _register_share); fill_rounds: the rows'
    cut as _filled_segments chooses it; register_tiles: tiles of each tensor a segment holds in registers, in rows of
    whole tiles (_register_cut); lag: each program holds two items of half the slots each (_tma_lag_bwd_kernel)."""
    items = 2 if lag else 1
    shape = _launch_shape(y, vectors_per_thread, num_warps, segment_bytes // (2 * items), _view_width(y),
                          programs_per_sm, tensors=2 * items, fill_rounds=fill_rounds, register_tiles=register_tiles)
    cap = {} if "maxnreg" in shape.constexprs or not maxnreg else {"maxnreg": maxnreg}
    launch(_tma_lag_bwd_kernel if lag else _tma_stream_bwd_kernel, shape.grid, dx, y, dy, shape.descriptor(y),
           shape.descriptor(dy), shape.slots,
           *y.shape, shape.n_segments, shape.segment_cols, max_polls, ALIGN=shape.constexprs["VEC"],
           **shape.constexprs, **cap)
