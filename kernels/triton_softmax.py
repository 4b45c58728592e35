"""Triton softmax over the last dimension: forward, backward and the seed variants.

Three layers, top to bottom:
  1. @triton.jit kernels (fp32 accumulation everywhere; row offsets in int64, but rows-lanes' where they fit int32);
  2. host functions on 2-D tensors: the seed variants (single_block_*, online_*) and the
     dispatchers softmax_forward / softmax_backward, which pick a path from SOFTMAX_PLANS by
     shape, element size, alignment and the GPU's SM count and L2 size;
  3. a thin torch.autograd.Function and `softmax(x, dim)`, a drop-in for torch.softmax.

Paths (see notes/kernels.md for the memory-traffic reasoning and the measurements):
  rows     - ROWS_PER_PROGRAM whole rows per program, held in registers: one read, one write.
  rows-lanes - float32 rows of 2,048 and 4,096 columns in torch.compile's (Inductor's) form: a (max, sum) a
             lane, reduced across the row, and the row read again from L1 for the write.
  row-tiles - one whole row a program, held in registers as equal tiles (any number of them), so that
             only the last tile is padded where "rows" pads to a power of two.
  tile     - long rows, many of them: a persistent grid, one row at a time in [TILE_ROWS, VEC]
             steps; pass 1 keeps one running (max, sum) per 16-byte vector (few registers, so
             64 warps fit an SM), pass 2 re-reads the row backwards (from L2) and writes.
  online   - the same two passes with a running (max, sum) per lane (seed 003; the backward's
             mid-length path).
  exchange - long rows in ONE HBM pass: a persistent, co-resident grid walks (row, chunk) items
             in order; each program keeps its chunk in registers, publishes its partial in a slot,
             waits (bounded) for its row's other partials, and writes its chunk from registers.
  tile-stream - the longest rows, or too few rows to fill the GPU: a persistent grid walks (row,
             segment) items; each segment is streamed twice in "tile" steps, the second time
             from L2, and a row's segments exchange partials as in "exchange". Pass 1 asks L2
             for the tile one step ahead (TILE_STREAM_PREFETCH); rows that start off a 128-byte
             line are read from that line's start (_line_bases).
  stream   - the backward's "tile-stream": per-lane partials and software-pipelined loads.
  tma-stream - tile-stream (forward: float32 rows past 65,536 columns, 2-byte rows past 65,536) and stream
             (backward, all three types) on a GPU of compute capability 9.0 or more, each segment held in
             shared memory, loaded by the TMA, one to three programs an SM (kernels/gluon_softmax.py, in
             Gluon; imported only when launched; the interpreter takes tile-stream and stream instead).

Nothing here touches a device at import time.
"""

import functools
import itertools
import math
import os
from typing import Callable, NamedTuple

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

# ----------------------------------------------------------------------------------------------
# Layer 1: kernels
# ----------------------------------------------------------------------------------------------
# ALIGN is the largest power of two (at most one 16-byte vector) dividing n_cols and every row
# stride, computed on the host. `n = n // ALIGN * ALIGN` is then a no-op that lets the compiler
# prove n % ALIGN == 0, so masks and row starts allow ALIGN-wide vector accesses. Triton only
# specialises integers divisible by 16 on its own, so without this an fp16 row of 1000 or 3000
# columns is read two bytes at a time.


# exp(x - m) = exp2(x * log2(e) - m * log2(e)). With m * log2(e) once per row (or vector) the
# per-element work is one FMA and one ex2, where exp(x - m) is a subtraction, a multiplication and
# ex2: one instruction less per element, which the H200's issue-bound 2-byte rows feel (up to
# +17%, notes/kernels.md, round 15). The kernels that take LOG2 keep their maxima in this scaled
# domain (m * log2(e), rounded once), so every exponent of a row is taken against the same rounded
# value: its rounding error shifts all of them alike and cancels in exp / sum(exp). The scaled max
# overflows past |m| = 2.4e38. float16 (|x| <= 65504) never gets there; bfloat16 can, so its kernels
# take GUARD: a row whose scaled max is infinite (overflowed, or a row of -inf) takes exp(x - m)
# instead (the tile kernels read it again). float32 keeps exp(x - m): it is at copy speed where this
# helps 2-byte rows.
LOG2E: tl.constexpr = tl.constexpr(1.4426950408889634)


@triton.jit
def _exp_scaled(x, scaled_max, scale=LOG2E):
    """exp(x - m) for scaled_max = m * scale, scale = log2(e): exp2 of one FMA; -inf and NaN as exp(x - m)
    gives them. (The bfloat16 guard passes scale 1 for a row beyond the scaled range: see _guard_scale.)"""
    return tl.exp2(tl.fma(x, scale, -scaled_max))


@triton.jit
def _normalized(x, row_max, inv_row_sum, LOG2: tl.constexpr, scale=LOG2E):
    """exp(x - m) * inv_row_sum for float32 x: the output before its cast, m = row_max (with LOG2, row_max is
    m * scale: see _exp_scaled)."""
    return (_exp_scaled(x, row_max, scale) if LOG2 else tl.exp(x - row_max)) * inv_row_sum


@triton.jit
def _guard_scale(natural):
    """The scale of exp2 for a row that GUARD took back to exp(x - m) (natural) or not.

    Such a row's finite max is above 2.35e38 in magnitude, where bfloat16 values are 2^120 apart: every
    x - m is 0 or beyond -1e36, so exp2(x - m) = exp(x - m) exactly (1 or 0), and a row of +inf or of -inf
    gives NaN either way. One write loop then serves both kinds of row, instead of a copy per domain.
    """
    return tl.where(natural, 1.0, LOG2E)


@triton.jit
def _prefetch_l2(ptrs):
    """Ask L2 for the lines holding ptrs: a hint that holds no register (CUDA only; not under the interpreter)."""
    tl.inline_asm_elementwise("prefetch.global.L2::evict_last [$1];\n\tmov.u32 $0, 0;", "=r,l", [ptrs],
                              dtype=tl.int32, is_pure=False, pack=1)


@triton.jit
def _program_rows(n_rows, n_cols, ROWS_PER_PROGRAM: tl.constexpr, BLOCK_SIZE: tl.constexpr):
    """(row indices [R, 1] in int64, column indices [1, B], in-bounds mask [R, B]) of this program's rows."""
    rows = tl.program_id(0) * ROWS_PER_PROGRAM + tl.arange(0, ROWS_PER_PROGRAM)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = (rows < n_rows)[:, None] & (cols < n_cols)[None, :]
    return rows.to(tl.int64)[:, None], cols[None, :], mask


@triton.jit
def _rows_fwd_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols,
                     ROWS_PER_PROGRAM: tl.constexpr, BLOCK_SIZE: tl.constexpr, ALIGN: tl.constexpr,
                     LOAD_CACHE: tl.constexpr, STORE_CACHE: tl.constexpr, LOAD_EVICT: tl.constexpr = "",
                     STORE_EVICT: tl.constexpr = "", LOG2: tl.constexpr = False, GUARD: tl.constexpr = False):
    """Softmax of ROWS_PER_PROGRAM whole rows held in registers: one read, one write."""
    n_cols = n_cols // ALIGN * ALIGN
    input_row_stride = input_row_stride // ALIGN * ALIGN
    output_row_stride = output_row_stride // ALIGN * ALIGN
    rows64, cols, mask = _program_rows(n_rows, n_cols, ROWS_PER_PROGRAM, BLOCK_SIZE)
    # padding is -inf: it never wins the max and adds exp(-inf) = 0 to the sum
    x = tl.load(input_ptr + rows64 * input_row_stride + cols, mask=mask,
                other=float("-inf"), cache_modifier=LOAD_CACHE, eviction_policy=LOAD_EVICT).to(tl.float32)
    # a fully -inf row has max -inf, so x - max is NaN everywhere: torch's answer too
    if LOG2:
        row_max = tl.max(x, axis=1)
        scaled_max = row_max * LOG2E
        # GUARD (bfloat16, see LOG2E): decided before any exponential, so that the row and its
        # exponentials are never live together (6a6d50a decided after, and lost 10-35%)
        if GUARD:
            if tl.max(tl.abs(scaled_max), axis=0) == float("inf"):
                numerator = tl.exp(x - row_max[:, None])
            else:
                numerator = _exp_scaled(x, scaled_max[:, None])
        else:
            numerator = _exp_scaled(x, scaled_max[:, None])
    else:
        numerator = tl.exp(x - tl.max(x, axis=1)[:, None])
    inv_denominator = 1.0 / tl.sum(numerator, axis=1)
    y = numerator * inv_denominator[:, None]
    tl.store(output_ptr + rows64 * output_row_stride + cols,
             y.to(output_ptr.dtype.element_ty), mask=mask, cache_modifier=STORE_CACHE, eviction_policy=STORE_EVICT)


@triton.jit
def _nan_max(a, b):
    """max of a and b, NaN if either is NaN."""
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def _lanes_exp(x, LIBDEVICE: tl.constexpr):
    """exp(x): libdevice's where the backend links it (CUDA, round 85), tl.exp under the interpreter."""
    if LIBDEVICE:
        return libdevice.exp(x)
    else:
        return tl.exp(x)


@triton.jit
def _rows_lanes_fwd_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride,
                           ROWS_PER_PROGRAM: tl.constexpr, BLOCK_SIZE: tl.constexpr, OFFSETS_64: tl.constexpr,
                           LIBDEVICE: tl.constexpr):
    """Softmax of ROWS_PER_PROGRAM rows of exactly BLOCK_SIZE float32 columns (no masks), in Inductor's form: each
    lane's (max, sum) combined online with its element, reduced across the row, then the row read again (from L1)
    for the write. What of this form makes it faster than the rows kernel is not known (notes/kernels.md, rounds
    84-87): not the re-read, the masks, the exp or the offsets alone; the lane combine's exponentials (two an
    element, one of them always 0 or 1) are part of the form that was measured, so they stay."""
    rows = tl.program_id(0) * ROWS_PER_PROGRAM + tl.arange(0, ROWS_PER_PROGRAM)[:, None]
    if OFFSETS_64:
        rows = rows.to(tl.int64)
    cols = tl.arange(0, BLOCK_SIZE)[None, :]
    input_ptrs = input_ptr + rows * input_row_stride + cols
    x = tl.load(input_ptrs, eviction_policy="evict_last")
    # a lane's (max, sum) after combining (-inf, 0) with its element: (x, 1), or (-inf, 1) for x = -inf
    lane_max = _nan_max(tl.full([ROWS_PER_PROGRAM, BLOCK_SIZE], float("-inf"), tl.float32), x)
    no_max = lane_max == float("-inf")
    lane_sum = (0.0 * tl.where(no_max, 1.0, _lanes_exp(float("-inf") - lane_max, LIBDEVICE))
                + tl.where(no_max, 1.0, _lanes_exp(x - lane_max, LIBDEVICE)))
    row_max = tl.reduce(lane_max, 1, _nan_max)[:, None]
    # a row of -inf keeps max -inf, and x - max is NaN in the write: torch's answer too
    row_sum = tl.sum(lane_sum * _lanes_exp(tl.where(row_max == float("-inf"), 0.0, lane_max - row_max),
                                           LIBDEVICE), 1)[:, None]
    x = tl.load(input_ptrs, eviction_policy="evict_first")
    tl.store(output_ptr + rows * output_row_stride + cols, _lanes_exp(x - row_max, LIBDEVICE) / row_sum)


@triton.jit
def _row_tile_inside(first_col, n_cols, k, TILE: tl.constexpr, VEC: tl.constexpr):
    """Mask of tile k's vectors (from a row's aligned base) that lie wholly inside the row: one test a vector."""
    vector_first = first_col + k * TILE + tl.arange(0, TILE) // VEC * VEC
    return (vector_first >= 0) & (vector_first <= n_cols - VEC)


@triton.jit
def _straddling_vectors(input_row, first_col, n_cols, VEC: tl.constexpr):
    """((offsets, mask, x in float32) of the vector holding column 0, and of the one holding column n_cols - 1) of a
    row from its aligned base, each masked to the row's columns, and wholly masked unless it straddles one of the row's
    ends (a vector wholly inside is in a tile) or is the first one again (a row within one vector)."""
    first_offsets, first_mask, first_x = _read_vector(input_row, 0, first_col, n_cols, 0, VEC)
    first_straddles = first_col < 0
    last_start = (n_cols - 1 - first_col) // VEC * VEC
    last_straddles = ((n_cols - first_col) % VEC != 0) & ((last_start > 0) | ~first_straddles)
    first_mask = first_mask & first_straddles
    last_offsets, last_mask, last_x = _read_vector(input_row, 0, first_col, n_cols, last_start, VEC)
    last_mask = last_mask & last_straddles
    return ((first_offsets, first_mask, tl.where(first_mask, first_x, float("-inf"))),
            (last_offsets, last_mask, tl.where(last_mask, last_x, float("-inf"))))


@triton.jit
def _row_tile_load(input_row, first_col, n_cols, k, N_TILES: tl.constexpr, TILE: tl.constexpr, VEC: tl.constexpr,
                   LOAD_EVICT: tl.constexpr):
    """Tile k of N_TILES of a row read from its aligned base (N_TILES = cdiv(n_cols + VEC - 1, TILE), TILE >= 2 VEC),
    in the input's type. The first tile and the last two may hang over the row's ends (the one before the last only
    when the row starts on a vector): they read only the vectors wholly inside the row, -inf for the rest, and the
    two vectors that straddle the row's ends are read apart (see _straddling_vectors); the tiles inside are read
    unmasked. (Set to -inf element by element instead, the straddling columns cost a compare and a select on every
    element of the edge tiles, round 55; a run-time test on the one before the last split the row's loads into two
    batches, each waited for in turn, round 56: notes/kernels.md.)"""
    cols = tl.arange(0, TILE)
    if k == 0 or k >= N_TILES - 2:
        x = tl.load(input_row + k * TILE + cols, mask=_row_tile_inside(first_col, n_cols, k, TILE, VEC),
                    other=float("-inf"), eviction_policy=LOAD_EVICT)
    else:
        x = tl.load(input_row + k * TILE + cols, eviction_policy=LOAD_EVICT)
    return x


@triton.jit
def _row_tile_store(output_row, y, first_col, n_cols, k, N_TILES: tl.constexpr, TILE: tl.constexpr,
                    VEC: tl.constexpr):
    """Store tile k of N_TILES of a row from its aligned base, the tiles that may hang over its ends as
    _row_tile_load reads them: only their vectors wholly inside the row (the two that straddle its ends are written
    element by element apart: see _row_tiles_softmax; storing them here too, under a second, per-element mask, lost
    1-10% on the H200, round 52)."""
    cols = tl.arange(0, TILE)
    if k == 0 or k >= N_TILES - 2:
        tl.store(output_row + k * TILE + cols, y, mask=_row_tile_inside(first_col, n_cols, k, TILE, VEC))
    else:
        tl.store(output_row + k * TILE + cols, y)


@triton.jit
def _row_tiles_softmax(output_row, input_row, n_cols, N_TILES: tl.constexpr, TILE: tl.constexpr,
                       LOAD_EVICT: tl.constexpr, LOG2: tl.constexpr, GUARD: tl.constexpr, KEEP_INPUT: tl.constexpr = False,
                       PTX: tl.constexpr = False, first_col=0, VEC: tl.constexpr = 1,
                       VECTOR_EDGES: tl.constexpr = False):
    """Softmax of one whole row held in registers as N_TILES tiles of TILE lanes: one read, one write, one exp
    an element. The rows kernel pads a row to next_pow2(n_cols) lanes, and padded lanes cost their exp, max and
    sum too; here only the last tile is padded, and the tiles are combined lane by lane before one max and one
    sum reduction (notes/kernels.md, round 43). KEEP_INPUT holds the row in its own type and takes the exp again
    for the write (two an element): half the registers for 2-byte rows, so two programs can share an SM.
    VECTOR_EDGES (rows that are not whole vectors): the row's lanes start at its first VEC-aligned element, first_col
    in (-VEC, 0] (see _row_bases), so every access is a whole vector; the tiles read and write only the vectors wholly
    inside the row, and the two that straddle its ends are read first, apart, element by element, added to the
    row's max and sum, and written after the tiles (rounds 55-56)."""
    cols = tl.arange(0, TILE)
    tiles = ()  # unrolled at compile time: tiles[k] is the row's columns [k * TILE, (k + 1) * TILE)
    in_type: tl.constexpr = input_row.dtype.element_ty
    keep_max: tl.constexpr = KEEP_INPUT and (in_type == tl.float16 or (in_type == tl.bfloat16 and PTX))
    lane_max = tl.full([TILE], float("-inf"), in_type if keep_max else tl.float32)
    if VECTOR_EDGES:
        first_vector, last_vector = _straddling_vectors(input_row, first_col, n_cols, VEC)
        first_offsets, first_mask, first_x = first_vector
        last_offsets, last_mask, last_x = last_vector
    for k in tl.static_range(N_TILES):
        if VECTOR_EDGES:
            x = _row_tile_load(input_row, first_col, n_cols, k, N_TILES, TILE, VEC, LOAD_EVICT)
        elif k == N_TILES - 1:  # only the last tile can hang over the row's end; -inf never wins, adds exp(-inf) = 0
            x = tl.load(input_row + k * TILE + cols, mask=k * TILE + cols < n_cols, other=float("-inf"),
                        eviction_policy=LOAD_EVICT)
        else:
            x = tl.load(input_row + k * TILE + cols, eviction_policy=LOAD_EVICT)
        if keep_max and in_type == tl.bfloat16:  # a max only selects: exact in x's own type, x left unwidened;
            # bfloat16's in PTX, two lanes an instruction, as float16's compiles
            lane_max = tl.inline_asm_elementwise("max.bf16x2 $0, $1, $2;", "=r,r,r", [lane_max, x], dtype=tl.bfloat16,
                                                 is_pure=True, pack=2)
        elif keep_max:
            lane_max = tl.maximum(lane_max, x)
        elif KEEP_INPUT:  # float32, or bfloat16 under the interpreter (which has no bfloat16 constants)
            lane_max = tl.maximum(lane_max, x.to(tl.float32))
        else:
            x = x.to(tl.float32)
            lane_max = tl.maximum(lane_max, x)
        tiles = tiles + (x,)
    # a fully -inf row has max -inf, so x - max is NaN everywhere: torch's answer too
    row_max = tl.max(lane_max, axis=0).to(tl.float32)
    if VECTOR_EDGES:
        row_max = tl.maximum(row_max, tl.maximum(tl.max(first_x, axis=0), tl.max(last_x, axis=0)))
    scale = LOG2E
    if GUARD:  # bfloat16 (see LOG2E): a row whose scaled max overflows takes exp(x - max), exactly (_guard_scale)
        scale = _guard_scale(tl.abs(row_max * LOG2E) == float("inf"))
    scaled_max = row_max * scale
    lane_sum = tl.zeros([TILE], tl.float32)
    numerators = ()
    for k in tl.static_range(N_TILES):
        x = tiles[k].to(tl.float32)
        numerator = _exp_scaled(x, scaled_max, scale) if LOG2 else tl.exp(x - row_max)
        lane_sum += numerator
        if not KEEP_INPUT:
            numerators = numerators + (numerator,)
    row_sum = tl.sum(lane_sum, axis=0)
    if VECTOR_EDGES:  # exp(-inf) = 0 for the columns outside the row
        if LOG2:
            row_sum += tl.sum(_exp_scaled(first_x, scaled_max, scale), axis=0)
            row_sum += tl.sum(_exp_scaled(last_x, scaled_max, scale), axis=0)
        else:
            row_sum += tl.sum(tl.exp(first_x - row_max), axis=0) + tl.sum(tl.exp(last_x - row_max), axis=0)
    inv_row_sum = 1.0 / row_sum
    log2_row_sum = tl.log2(row_sum)
    opaque_zero = (n_cols // (n_cols + 1)).to(tl.int16)  # 0 (n_cols >= 0), which no compiler can fold: _widen_kept
    for k in tl.static_range(N_TILES):
        if KEEP_INPUT:  # widened again, by operations that nothing can merge with the sum's widening
            x = _widen_kept(tiles[k], PTX, opaque_zero)
            if LOG2:  # exp2 in both scales (see _guard_scale); log2 of the sum taken off after the FMA, at full precision
                y = tl.exp2(tl.fma(x, scale, -scaled_max) - log2_row_sum)
            else:
                y = tl.exp(x - row_max) * inv_row_sum
        else:
            y = numerators[k] * inv_row_sum
        y = y.to(output_row.dtype.element_ty)
        if VECTOR_EDGES:
            _row_tile_store(output_row, y, first_col, n_cols, k, N_TILES, TILE, VEC)
        elif k == N_TILES - 1:
            tl.store(output_row + k * TILE + cols, y, mask=k * TILE + cols < n_cols)
        else:
            tl.store(output_row + k * TILE + cols, y)
    if VECTOR_EDGES:  # the straddling vectors, element by element
        row_max_in_domain = scaled_max if LOG2 else row_max
        _store_vector(output_row, 0, first_offsets, first_mask, first_x, row_max_in_domain, inv_row_sum, LOG2, scale)
        _store_vector(output_row, 0, last_offsets, last_mask, last_x, row_max_in_domain, inv_row_sum, LOG2, scale)


@triton.jit
def _row_tiles_fwd_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_cols,
                          N_TILES: tl.constexpr, TILE: tl.constexpr, ALIGN: tl.constexpr, LOAD_EVICT: tl.constexpr = "",
                          LOG2: tl.constexpr = False, GUARD: tl.constexpr = False, KEEP_INPUT: tl.constexpr = False,
                          PTX: tl.constexpr = False, VEC: tl.constexpr = 1, VECTOR_EDGES: tl.constexpr = False):
    """_row_tiles_softmax of row program_id (VECTOR_EDGES: both tensors share one row stride and 16-byte-aligned
    bases, and N_TILES * TILE >= n_cols + VEC - 1)."""
    n_cols = n_cols // ALIGN * ALIGN
    input_row_stride = input_row_stride // ALIGN * ALIGN
    output_row_stride = output_row_stride // ALIGN * ALIGN
    in_base, out_base, first_col, _ = _row_bases(tl.program_id(0), input_row_stride, output_row_stride, n_cols, TILE,
                                                 VEC if VECTOR_EDGES else 1)
    _row_tiles_softmax(output_ptr + out_base, input_ptr + in_base, n_cols, N_TILES, TILE, LOAD_EVICT, LOG2, GUARD,
                       KEEP_INPUT, PTX, first_col, VEC, VECTOR_EDGES)


@triton.jit
def _online_fwd_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols,
                       BLOCK_SIZE: tl.constexpr, ALIGN: tl.constexpr):
    """Two-pass online softmax of rows program_id, program_id + num_programs, ... in BLOCK_SIZE steps."""
    n_cols = n_cols // ALIGN * ALIGN
    input_row_stride = input_row_stride // ALIGN * ALIGN
    output_row_stride = output_row_stride // ALIGN * ALIGN
    cols = tl.arange(0, BLOCK_SIZE)
    n_blocks = tl.cdiv(n_cols, BLOCK_SIZE)
    for row_idx in range(tl.program_id(0), n_rows, tl.num_programs(0)):
        row_idx = tl.cast(row_idx, tl.int64)  # tl.cast, not .to(): the interpreter's range yields ints
        input_row = input_ptr + row_idx * input_row_stride
        output_row = output_ptr + row_idx * output_row_stride
        # per-lane running max and sum: no cross-warp reduction (and no barrier) inside the loop
        lane_max = tl.full([BLOCK_SIZE], float("-inf"), tl.float32)
        lane_sum = tl.zeros([BLOCK_SIZE], tl.float32)
        for block in range(0, n_blocks):
            offsets = block * BLOCK_SIZE + cols
            x = tl.load(input_row + offsets, mask=offsets < n_cols, other=float("-inf"),
                        eviction_policy="evict_last").to(tl.float32)
            # one exp per element: of the old max and x, the larger contributes exp(0) = 1 and
            # the other exp(-|x - max|); -inf contributes 0 (and -inf - -inf would be NaN)
            scale = tl.where(x == float("-inf"), 0.0, tl.exp(-tl.abs(x - lane_max)))
            lane_sum = tl.where(x > lane_max, lane_sum * scale + 1.0, lane_sum + scale)
            lane_max = tl.maximum(lane_max, x)
        row_max = tl.max(lane_max, axis=0)
        # lanes that saw only -inf hold sum 0 and add 0 * exp(-inf) = 0; a fully -inf row has
        # row_max -inf, so this is NaN and the whole row comes out NaN, as in torch
        inv_row_sum = 1.0 / tl.sum(lane_sum * tl.exp(lane_max - row_max), axis=0)
        for block in range(0, n_blocks):
            offsets = (n_blocks - 1 - block) * BLOCK_SIZE + cols
            mask = offsets < n_cols
            x = tl.load(input_row + offsets, mask=mask, other=float("-inf"),
                        eviction_policy="evict_first").to(tl.float32)
            y = tl.exp(x - row_max) * inv_row_sum
            tl.store(output_row + offsets, y.to(output_ptr.dtype.element_ty), mask=mask,
                     cache_modifier=".cs")


# "exchange": one HBM pass for long rows. A persistent program walks work items (row, chunk) in
# increasing order, keeps its chunk in registers, publishes the chunk's partial, waits for the
# row's other chunks' partials, and writes its chunk of the result from registers. A partial is
# ONE 64-bit word (two float32 packed) written by one atomic exchange into a zeroed slot, so
# "published" and "its data is visible" are the same event: readers need no fence or acquire,
# only loads that bypass the incoherent L1 (volatile). Never 0 once written (see _pack callers),
# so 0 means "missing".
# Chunks start at VEC-element (16-byte) boundaries of memory, not of the row: with an unaligned
# row (777,777 columns) every chunk but the row's first and last is then a whole aligned block,
# loaded and stored unmasked with 16-byte vectors; only the two edge chunks are masked.


@triton.jit
def _pack(hi, lo):
    """Two float32 scalars as one int64 (hi in the upper word), published by a single atomic."""
    return ((hi.to(tl.int32, bitcast=True).to(tl.int64) << 32)
            | (lo.to(tl.int32, bitcast=True).to(tl.int64) & 0xFFFFFFFF))


@triton.jit
def _unpack(packed):
    """Inverse of _pack, elementwise."""
    return ((packed >> 32).to(tl.int32).to(tl.float32, bitcast=True),
            packed.to(tl.int32).to(tl.float32, bitcast=True))


@triton.jit
def _chunk_layout(row_start, chunk, n_cols, BLOCK_SIZE: tl.constexpr, VEC: tl.constexpr):
    """Memory offsets and column indices of one chunk, and whether it lies wholly inside the row."""
    first = row_start // VEC * VEC + chunk * BLOCK_SIZE  # VEC-aligned, provably (vector accesses)
    offsets = first + tl.arange(0, BLOCK_SIZE)
    first_col = first - row_start
    return offsets, offsets - row_start, (first_col >= 0) & (first_col + BLOCK_SIZE <= n_cols)


@triton.jit
def _load_chunk(ptr, offsets, cols, n_cols, interior, other):
    """ptr[offsets] where cols is inside [0, n_cols), else other; unmasked for an interior chunk."""
    if interior:
        values = tl.load(ptr + offsets)
    else:
        values = tl.load(ptr + offsets, mask=(cols >= 0) & (cols < n_cols), other=other)
    return values


@triton.jit
def _store_chunk(ptr, offsets, cols, n_cols, interior, values):
    """ptr[offsets] = values where cols is inside [0, n_cols); unmasked for an interior chunk."""
    if interior:
        tl.store(ptr + offsets, values)
    else:
        tl.store(ptr + offsets, values, mask=(cols >= 0) & (cols < n_cols))


@triton.jit
def _await_row(slots_ptr, row, n_chunks, max_polls, CHUNKS_BLOCK: tl.constexpr, SLEEP_NS: tl.constexpr = 0):
    """The row's n_chunks slots, re-read until none is 0 or max_polls re-reads are spent; SLEEP_NS > 0
    (CUDA only, inline PTX): a nanosleep before each re-read (see POLL_SLEEP_NS). A CHUNKS_BLOCK of at least
    one lane per thread keeps the re-reads in the first warp (Plan.one_warp_from); a smaller one is held,
    and re-read, by every warp."""
    siblings = tl.arange(0, CHUNKS_BLOCK)
    ptrs = slots_ptr + row * n_chunks + siblings
    in_row = siblings < n_chunks
    packed = tl.load(ptrs, mask=in_row, other=-1, volatile=True)
    n_missing = tl.sum((packed == 0).to(tl.int32), axis=0)
    polls = 0
    while (n_missing > 0) & (polls < max_polls):
        if SLEEP_NS > 0:
            tl.inline_asm_elementwise("nanosleep.u32 $1;\n\tmov.u32 $0, 0;", "=r,r", [polls * 0 + SLEEP_NS],
                                      dtype=tl.int32, is_pure=False, pack=1)
        packed = tl.load(ptrs, mask=in_row, other=-1, volatile=True)
        n_missing = tl.sum((packed == 0).to(tl.int32), axis=0)
        polls += 1
    return packed, n_missing, in_row


@triton.jit
def _anywhere(flag):
    """Whether flag is set in any thread of the program: one value for all of them. A slot read by every warp on
    its own can read 0 in one warp and the published partial in another while a sibling publishes, and a branch on
    it would split the warps around the barriers of the partials' reductions (round 160: the cold paths of the
    stream kernels gave wrong outputs when forced; gluon_softmax._anywhere fixed the same in round 104). The same
    holds for _await_row's n_missing: a slot vector narrower than the program is re-read by each warp on its own,
    and its sum is each warp's own (round 162), so the cold paths' entries take it through here too. The max
    spans all threads (1,024 lanes: one or more a thread at up to 32 warps), through shared memory."""
    return tl.max(tl.zeros([1024], tl.int32) + flag.to(tl.int32), axis=0) > 0


@triton.jit
def _combine_partials(packed, in_row, LOG2: tl.constexpr = False):
    """(row max, 1 / row sum of exp(x - max)) from a row's published (max, sum) partials; with LOG2
    the maxima are scaled by log2(e) (see LOG2E) and so is the row max returned."""
    partial_max, partial_sum = _unpack(packed)
    partial_max = tl.where(in_row, partial_max, float("-inf"))
    row_max = tl.max(partial_max, axis=0)
    # all -inf parts add 0 * exp(-inf) = 0; a fully -inf row gives NaN, as in torch
    rescale = tl.exp2(partial_max - row_max) if LOG2 else tl.exp(partial_max - row_max)
    return row_max, 1.0 / tl.sum(tl.where(in_row, partial_sum * rescale, 0.0), axis=0)


@triton.jit
def _chunk_max_sum(x):
    """(max, sum of exp(x - max)) of a block; an all -inf block gives (-inf, 0), not NaN."""
    chunk_max = tl.max(x, axis=0)
    safe_max = tl.where(chunk_max == float("-inf"), 0.0, chunk_max)
    return chunk_max, tl.sum(tl.exp(x - safe_max), axis=0)


@triton.jit
def _exchange_fwd_kernel(output_ptr, input_ptr, slots_ptr, input_row_stride, output_row_stride, n_rows,
                         n_cols, n_chunks, max_polls, BLOCK_SIZE: tl.constexpr, CHUNKS_BLOCK: tl.constexpr,
                         ALIGN: tl.constexpr, VEC: tl.constexpr):
    """One-HBM-pass softmax of long rows: chunks in registers, (max, sum) exchanged through slots."""
    n_cols = n_cols // ALIGN * ALIGN
    input_row_stride = input_row_stride // ALIGN * ALIGN
    output_row_stride = output_row_stride // ALIGN * ALIGN
    for item in range(tl.program_id(0), n_rows * n_chunks, tl.num_programs(0)):
        row = item // n_chunks
        row_start = tl.cast(row, tl.int64) * input_row_stride
        offsets, cols, interior = _chunk_layout(row_start, item % n_chunks, n_cols, BLOCK_SIZE, VEC)
        x = _load_chunk(input_ptr, offsets, cols, n_cols, interior, float("-inf")).to(tl.float32)
        chunk_max, chunk_sum = _chunk_max_sum(x)
        # never 0: a finite max has sum >= 1, and -inf's bits are not 0
        tl.atomic_xchg(slots_ptr + item, _pack(chunk_max, chunk_sum), sem="relaxed")
        packed, n_missing, in_row = _await_row(slots_ptr, row, n_chunks, max_polls, CHUNKS_BLOCK)
        if _anywhere(n_missing > 0):
            # siblings not running (not co-resident, or the sequential interpreter): compute
            # their partials from the input and publish them, so later siblings need not
            for sibling in range(0, n_chunks):
                slot = slots_ptr + row * n_chunks + sibling
                if _anywhere(tl.load(slot, volatile=True) == 0):
                    s_offsets, s_cols, s_interior = _chunk_layout(row_start, sibling, n_cols, BLOCK_SIZE, VEC)
                    s_x = _load_chunk(input_ptr, s_offsets, s_cols, n_cols, s_interior,
                                      float("-inf")).to(tl.float32)
                    s_max, s_sum = _chunk_max_sum(s_x)
                    tl.atomic_xchg(slot, _pack(s_max, s_sum), sem="relaxed")
            packed = _await_row(slots_ptr, row, n_chunks, 1 << 30, CHUNKS_BLOCK)[0]
            # re-read our chunk rather than keep it live across this loop: no spills
            x = _load_chunk(input_ptr, offsets, cols, n_cols, interior, float("-inf")).to(tl.float32)
        row_max, inv_row_sum = _combine_partials(packed, in_row)
        y = (tl.exp(x - row_max) * inv_row_sum).to(output_ptr.dtype.element_ty)
        if VEC > 1:  # same row stride as the input (host-checked): same offsets, same alignment
            _store_chunk(output_ptr, offsets, cols, n_cols, interior, y)
        else:
            _store_chunk(output_ptr, tl.cast(row, tl.int64) * output_row_stride + cols, cols, n_cols,
                         interior, y)


@triton.jit
def _widen_kept(v, PTX: tl.constexpr, opaque_zero=None):
    """v as float32, by an operation the compiler cannot merge with an earlier v.to(tl.float32).

    A kernel that needs a 2-byte tensor in float32 on both sides of a reduction can then keep it in its own
    type across the reduction (half the registers) and widen it twice, where one merged widening would keep
    the float32 copy live instead. bfloat16: its bits shifted into a float32's high half (exact). float16:
    cvt.f32.f16 in inline PTX (exact; CUDA only, so PTX is False under the interpreter, where the plain
    widening serves). float32: v itself. ptxas can still merge float16's cvt with an identical one of the same
    register: given opaque_zero (an int16 zero no compiler can fold), float16 bits pass an xor with it first
    (row-tiles' kept rows, notes/kernels.md round 49: 100-127 registers without it, where bfloat16 takes 54-74).
    """
    if v.dtype == tl.float16 and opaque_zero is not None:
        v = (v.to(tl.int16, bitcast=True) ^ opaque_zero).to(tl.float16, bitcast=True)
    if v.dtype == tl.bfloat16:
        return (v.to(tl.uint16, bitcast=True).to(tl.uint32) << 16).to(tl.float32, bitcast=True)
    elif v.dtype == tl.float16 and PTX:
        return tl.inline_asm_elementwise("cvt.f32.f16 $0, $1;", "=r,h", [v], dtype=tl.float32, is_pure=True,
                                         pack=1)
    else:
        return v.to(tl.float32)


@triton.jit
def _rows_bwd_kernel(grad_input_ptr, output_ptr, grad_output_ptr, grad_input_row_stride,
                     output_row_stride, grad_output_row_stride, n_rows, n_cols,
                     ROWS_PER_PROGRAM: tl.constexpr, BLOCK_SIZE: tl.constexpr, ALIGN: tl.constexpr,
                     PTX: tl.constexpr = False):
    """dx = y * (dy - sum(y * dy)) for ROWS_PER_PROGRAM whole rows in registers.

    y and dy stay in their own type across the row's sum and are widened again for dx (_widen_kept): held
    in float32, a 32-warp program spilled at 32,768 2-byte columns, and a 16-warp one at 16,384 needed 80
    registers, one program an SM (notes/kernels.md, round 24).
    """
    n_cols = n_cols // ALIGN * ALIGN
    grad_input_row_stride = grad_input_row_stride // ALIGN * ALIGN
    output_row_stride = output_row_stride // ALIGN * ALIGN
    grad_output_row_stride = grad_output_row_stride // ALIGN * ALIGN
    rows64, cols, mask = _program_rows(n_rows, n_cols, ROWS_PER_PROGRAM, BLOCK_SIZE)
    y = tl.load(output_ptr + rows64 * output_row_stride + cols, mask=mask, other=0.0)
    dy = tl.load(grad_output_ptr + rows64 * grad_output_row_stride + cols, mask=mask, other=0.0)
    dot = tl.sum(y.to(tl.float32) * dy.to(tl.float32), axis=1)[:, None]
    dx = _widen_kept(y, PTX) * (_widen_kept(dy, PTX) - dot)
    tl.store(grad_input_ptr + rows64 * grad_input_row_stride + cols,
             dx.to(grad_input_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _online_bwd_kernel(grad_input_ptr, output_ptr, grad_output_ptr, grad_input_row_stride,
                       output_row_stride, grad_output_row_stride, n_rows, n_cols,
                       BLOCK_SIZE: tl.constexpr, ALIGN: tl.constexpr):
    """Two-pass softmax backward of rows program_id, program_id + num_programs, ..."""
    n_cols = n_cols // ALIGN * ALIGN
    grad_input_row_stride = grad_input_row_stride // ALIGN * ALIGN
    output_row_stride = output_row_stride // ALIGN * ALIGN
    grad_output_row_stride = grad_output_row_stride // ALIGN * ALIGN
    cols = tl.arange(0, BLOCK_SIZE)
    n_blocks = tl.cdiv(n_cols, BLOCK_SIZE)
    for row_idx in range(tl.program_id(0), n_rows, tl.num_programs(0)):
        row_idx = tl.cast(row_idx, tl.int64)  # tl.cast, not .to(): the interpreter's range yields ints
        output_row = output_ptr + row_idx * output_row_stride
        grad_output_row = grad_output_ptr + row_idx * grad_output_row_stride
        grad_input_row = grad_input_ptr + row_idx * grad_input_row_stride
        lane_dot = tl.zeros([BLOCK_SIZE], tl.float32)
        for block in range(0, n_blocks):
            offsets = block * BLOCK_SIZE + cols
            mask = offsets < n_cols
            y = tl.load(output_row + offsets, mask=mask, other=0.0,
                        eviction_policy="evict_last").to(tl.float32)
            dy = tl.load(grad_output_row + offsets, mask=mask, other=0.0,
                         eviction_policy="evict_last").to(tl.float32)
            lane_dot += y * dy
        row_dot = tl.sum(lane_dot, axis=0)
        # backwards, so the blocks read last in pass 1 are re-read first, from L2
        for block in range(0, n_blocks):
            offsets = (n_blocks - 1 - block) * BLOCK_SIZE + cols
            mask = offsets < n_cols
            y = tl.load(output_row + offsets, mask=mask, other=0.0,
                        eviction_policy="evict_first").to(tl.float32)
            dy = tl.load(grad_output_row + offsets, mask=mask, other=0.0,
                         eviction_policy="evict_first").to(tl.float32)
            tl.store(grad_input_row + offsets, (y * (dy - row_dot)).to(grad_input_ptr.dtype.element_ty),
                     mask=mask)


@triton.jit
def _exchange_bwd_kernel(grad_input_ptr, output_ptr, grad_output_ptr, slots_ptr, grad_input_row_stride,
                         output_row_stride, grad_output_row_stride, n_rows, n_cols, n_chunks, max_polls,
                         BLOCK_SIZE: tl.constexpr, CHUNKS_BLOCK: tl.constexpr, ALIGN: tl.constexpr,
                         VEC: tl.constexpr):
    """One-HBM-pass softmax backward of long rows: y, dy chunks in registers, sum(y * dy) exchanged."""
    n_cols = n_cols // ALIGN * ALIGN
    grad_input_row_stride = grad_input_row_stride // ALIGN * ALIGN
    output_row_stride = output_row_stride // ALIGN * ALIGN
    grad_output_row_stride = grad_output_row_stride // ALIGN * ALIGN
    for item in range(tl.program_id(0), n_rows * n_chunks, tl.num_programs(0)):
        row = item // n_chunks
        row64 = tl.cast(row, tl.int64)
        # VEC > 1 only when all three tensors share one row stride (host-checked)
        offsets, cols, interior = _chunk_layout(row64 * output_row_stride, item % n_chunks, n_cols,
                                                BLOCK_SIZE, VEC)
        if VEC == 1:
            y_offsets, dy_offsets, dx_offsets = (row64 * output_row_stride + cols,
                                                 row64 * grad_output_row_stride + cols,
                                                 row64 * grad_input_row_stride + cols)
        else:
            y_offsets, dy_offsets, dx_offsets = offsets, offsets, offsets
        y = _load_chunk(output_ptr, y_offsets, cols, n_cols, interior, 0.0).to(tl.float32)
        dy = _load_chunk(grad_output_ptr, dy_offsets, cols, n_cols, interior, 0.0).to(tl.float32)
        # the upper word 1.0 makes the slot non-zero whatever the dot
        tl.atomic_xchg(slots_ptr + item, _pack(tl.full((), 1.0, tl.float32), tl.sum(y * dy, axis=0)), sem="relaxed")
        packed, n_missing, in_row = _await_row(slots_ptr, row, n_chunks, max_polls, CHUNKS_BLOCK)
        if _anywhere(n_missing > 0):
            # siblings not running: compute and publish their dots from y and dy
            for sibling in range(0, n_chunks):
                slot = slots_ptr + row * n_chunks + sibling
                if _anywhere(tl.load(slot, volatile=True) == 0):
                    s_offsets, s_cols, s_interior = _chunk_layout(row64 * output_row_stride, sibling,
                                                                  n_cols, BLOCK_SIZE, VEC)
                    if VEC == 1:
                        s_y_offsets, s_dy_offsets = (row64 * output_row_stride + s_cols,
                                                     row64 * grad_output_row_stride + s_cols)
                    else:
                        s_y_offsets, s_dy_offsets = s_offsets, s_offsets
                    s_y = _load_chunk(output_ptr, s_y_offsets, s_cols, n_cols, s_interior, 0.0)
                    s_dy = _load_chunk(grad_output_ptr, s_dy_offsets, s_cols, n_cols, s_interior, 0.0)
                    s_dot = tl.sum(s_y.to(tl.float32) * s_dy.to(tl.float32), axis=0)
                    tl.atomic_xchg(slot, _pack(tl.full((), 1.0, tl.float32), s_dot), sem="relaxed")
            packed = _await_row(slots_ptr, row, n_chunks, 1 << 30, CHUNKS_BLOCK)[0]
            # re-read our chunks rather than keep them live across this loop: no spills
            y = _load_chunk(output_ptr, y_offsets, cols, n_cols, interior, 0.0).to(tl.float32)
            dy = _load_chunk(grad_output_ptr, dy_offsets, cols, n_cols, interior, 0.0).to(tl.float32)
        row_dot = tl.sum(tl.where(in_row, _unpack(packed)[1], 0.0), axis=0)
        _store_chunk(grad_input_ptr, dx_offsets, cols, n_cols, interior,
                     (y * (dy - row_dot)).to(grad_input_ptr.dtype.element_ty))


# "stream" (backward) and "tile-stream" (forward): long rows at two HBM passes whatever their
# length. A persistent grid walks (row, segment) items in order. A program streams its segment
# twice: pass 1 for running partials, pass 2 (backwards, so the blocks read last come first) to
# write. The grid's segments in flight (programs x segment bytes) stay well under L2, so pass 2
# reads L2, not HBM. A row of several segments exchanges its partials through slots, as
# "exchange" does. Blocks are laid out from the row's first VEC-aligned (16-byte) address: every
# block but the row's first and last is then whole and aligned, loaded and stored unmasked with
# 16-byte vectors whatever N is; only the two edge blocks are masked. The backward's loops are
# software-pipelined (tl.range num_stages: cp.async into shared memory); the forward's are
# plain loads on [TILE_ROWS, VEC] tiles with one running (max, sum) per vector, as "tile" does,
# which keeps ~30 registers a thread and no shared memory, so 64 warps fit an SM.


@triton.jit
def _holds_last_block(first_block, end_block, n_blocks):
    """Whether blocks [first_block, end_block) hold the row's last block, and it is not also its first."""
    return (end_block == n_blocks) & (first_block < n_blocks) & (n_blocks > 1)


@triton.jit
def _edge_block(first_col, n_cols, block, BLOCK_SIZE: tl.constexpr):
    """(offsets from the row's aligned base, mask of the row's columns) of a row's edge block."""
    offsets = block * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    cols = first_col + offsets
    return offsets, (cols >= 0) & (cols < n_cols)


@triton.jit
def _row_bases(row, input_row_stride, output_row_stride, n_cols, BLOCK_SIZE: tl.constexpr, VEC: tl.constexpr,
               LINE: tl.constexpr = False):
    """(in_base, out_base, first_col, n_blocks): blocks of a row start at its first VEC-aligned element,
    or with LINE at the first element of its 128-byte line (8 vectors; see _line_bases)."""
    row64 = tl.cast(row, tl.int64)
    in_start = row64 * input_row_stride
    in_base = in_start // (8 * VEC) * (8 * VEC) if LINE else in_start // VEC * VEC
    first_col = (in_base - in_start).to(tl.int32)  # in (-VEC, 0], or (-8 VEC, 0] with LINE; 0 when VEC == 1
    # VEC > 1 only when both tensors share one row stride (host-checked): same layout
    out_base = in_base if VEC > 1 else row64 * output_row_stride
    return in_base, out_base, first_col, tl.cdiv(n_cols - first_col, BLOCK_SIZE)


@triton.jit
def _segment_item(item, n_segments, blocks_per_segment, input_row_stride, output_row_stride, n_cols,
                  BLOCK_SIZE: tl.constexpr, VEC: tl.constexpr, LINE: tl.constexpr = False):
    """(row, in_base, out_base, first_col, n_blocks, first_block, end_block) of a (row, segment) item:
    its row's bases (see _row_bases) and its blocks [first_block, end_block) of the row's n_blocks."""
    row = item // n_segments
    in_base, out_base, first_col, n_blocks = _row_bases(row, input_row_stride, output_row_stride, n_cols,
                                                        BLOCK_SIZE, VEC, LINE)
    first_block = (item % n_segments) * blocks_per_segment
    return row, in_base, out_base, first_col, n_blocks, first_block, tl.minimum(first_block + blocks_per_segment,
                                                                                 n_blocks)


@triton.jit
def _segment_dot(output_ptr, grad_output_ptr, y_base, dy_base, first_col, n_cols, n_blocks, first_block,
                 end_block, BLOCK_SIZE: tl.constexpr, NUM_STAGES: tl.constexpr):
    """sum(y * dy) over blocks [first_block, end_block) of one row; 0 if empty.

    2-byte types read [vectors, V] tiles (V = 8 elements, 16 bytes) and keep one running sum per vector,
    as the forward's tile kernels keep (max, sum): 2 registers a thread where a sum per lane held 16, and
    the spills on the GPU's triton 3.6 go (+2.4-5.5% past 64k on the H200, round 19). float32 keeps a
    sum per lane (V = 1): per vector its 1M-column kernel spilled 6 registers there and lost 12%.
    """
    V: tl.constexpr = 8 if output_ptr.dtype.element_ty.primitive_bitwidth == 16 else 1
    tile = tl.arange(0, BLOCK_SIZE // V)[:, None] * V + tl.arange(0, V)[None, :]
    vec_dot = tl.zeros([BLOCK_SIZE // V], tl.float32)
    for block in tl.range(tl.maximum(first_block, 1), tl.minimum(end_block, n_blocks - 1),
                          num_stages=NUM_STAGES):
        offsets = block * BLOCK_SIZE + tile
        y = tl.load(output_ptr + y_base + offsets, eviction_policy="evict_last").to(tl.float32)
        dy = tl.load(grad_output_ptr + dy_base + offsets, eviction_policy="evict_last").to(tl.float32)
        vec_dot += tl.sum(y * dy, axis=1)
    if first_block == 0:
        vec_dot += _edge_product(output_ptr, grad_output_ptr, y_base, dy_base, first_col, n_cols, 0, BLOCK_SIZE, V)
    if _holds_last_block(first_block, end_block, n_blocks):
        vec_dot += _edge_product(output_ptr, grad_output_ptr, y_base, dy_base, first_col, n_cols, n_blocks - 1,
                                 BLOCK_SIZE, V)
    return tl.sum(vec_dot, axis=0)


@triton.jit
def _edge_product(output_ptr, grad_output_ptr, y_base, dy_base, first_col, n_cols, block, BLOCK_SIZE: tl.constexpr,
                  V: tl.constexpr):
    """sum(y * dy) per V-element vector of one masked edge block of a row (0 outside it)."""
    offsets, mask = _tile_edge(first_col, n_cols, block, BLOCK_SIZE // V, V)
    y = tl.load(output_ptr + y_base + offsets, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(grad_output_ptr + dy_base + offsets, mask=mask, other=0.0).to(tl.float32)
    return tl.sum(y * dy, axis=1)


@triton.jit
def _edge_grad(grad_input_ptr, output_ptr, grad_output_ptr, dx_base, y_base, dy_base, first_col, n_cols, block,
               row_dot, BLOCK_SIZE: tl.constexpr):
    """dx = y * (dy - row_dot) over one masked edge block of a row."""
    offsets, mask = _edge_block(first_col, n_cols, block, BLOCK_SIZE)
    y = tl.load(output_ptr + y_base + offsets, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(grad_output_ptr + dy_base + offsets, mask=mask, other=0.0).to(tl.float32)
    tl.store(grad_input_ptr + dx_base + offsets, (y * (dy - row_dot)).to(grad_input_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _stream_bwd_kernel(grad_input_ptr, output_ptr, grad_output_ptr, slots_ptr, grad_input_row_stride,
                       output_row_stride, grad_output_row_stride, n_rows, n_cols, n_segments, blocks_per_segment,
                       max_polls, BLOCK_SIZE: tl.constexpr, SEGMENTS_BLOCK: tl.constexpr, ALIGN: tl.constexpr,
                       VEC: tl.constexpr, NUM_STAGES: tl.constexpr, LINE: tl.constexpr = False,
                       POLL_SLEEP: tl.constexpr = 0, WRITE_PAIRS: tl.constexpr = False):
    """Two-HBM-pass softmax backward of long rows: y, dy streamed twice, sum(y * dy) exchanged. WRITE_PAIRS: the
    second pass reads its blocks two at a time before it stores either (see STREAM_WRITE_PAIRS)."""
    n_cols = n_cols // ALIGN * ALIGN
    grad_input_row_stride = grad_input_row_stride // ALIGN * ALIGN
    output_row_stride = output_row_stride // ALIGN * ALIGN
    grad_output_row_stride = grad_output_row_stride // ALIGN * ALIGN
    idx = tl.arange(0, BLOCK_SIZE)
    for item in range(tl.program_id(0), n_rows * n_segments, tl.num_programs(0)):
        row, y_base, dx_base, first_col, n_blocks, first_block, end_block = _segment_item(
            item, n_segments, blocks_per_segment, output_row_stride, grad_input_row_stride, n_cols, BLOCK_SIZE, VEC,
            LINE)
        # VEC > 1 only when all three tensors share one row stride (host-checked)
        dy_base = y_base if VEC > 1 else tl.cast(row, tl.int64) * grad_output_row_stride
        row_dot = _segment_dot(output_ptr, grad_output_ptr, y_base, dy_base, first_col, n_cols, n_blocks,
                               first_block, end_block, BLOCK_SIZE, NUM_STAGES)
        if SEGMENTS_BLOCK > 1:
            # the upper word 1.0 makes the slot non-zero whatever the dot
            tl.atomic_xchg(slots_ptr + item, _pack(tl.full((), 1.0, tl.float32), row_dot), sem="relaxed")
            packed, n_missing, in_row = _await_row(slots_ptr, row, n_segments, max_polls, SEGMENTS_BLOCK, POLL_SLEEP)
            if _anywhere(n_missing > 0):
                # siblings not running: compute and publish their dots from y and dy
                for sibling in range(0, n_segments):
                    slot = slots_ptr + row * n_segments + sibling
                    if _anywhere(tl.load(slot, volatile=True) == 0):
                        s_first = sibling * blocks_per_segment
                        s_dot = _segment_dot(output_ptr, grad_output_ptr, y_base, dy_base, first_col, n_cols,
                                             n_blocks, s_first, tl.minimum(s_first + blocks_per_segment, n_blocks),
                                             BLOCK_SIZE, NUM_STAGES)
                        tl.atomic_xchg(slot, _pack(tl.full((), 1.0, tl.float32), s_dot), sem="relaxed")
                packed = _await_row(slots_ptr, row, n_segments, 1 << 30, SEGMENTS_BLOCK)[0]
            row_dot = tl.sum(tl.where(in_row, _unpack(packed)[1], 0.0), axis=0)
        lo = tl.maximum(first_block, 1)
        hi = tl.minimum(end_block, n_blocks - 1)
        # backwards, so the blocks read last in pass 1 are re-read first, from L2
        if WRITE_PAIRS:
            for k in tl.range(0, (hi - lo) // 2, num_stages=NUM_STAGES):
                offsets = (hi - 1 - 2 * k) * BLOCK_SIZE + idx
                y = tl.load(output_ptr + y_base + offsets, eviction_policy="evict_first")
                dy = tl.load(grad_output_ptr + dy_base + offsets, eviction_policy="evict_first")
                y_next = tl.load(output_ptr + y_base + offsets - BLOCK_SIZE, eviction_policy="evict_first")
                dy_next = tl.load(grad_output_ptr + dy_base + offsets - BLOCK_SIZE, eviction_policy="evict_first")
                tl.store(grad_input_ptr + dx_base + offsets,
                         (y.to(tl.float32) * (dy.to(tl.float32) - row_dot)).to(grad_input_ptr.dtype.element_ty))
                tl.store(grad_input_ptr + dx_base + offsets - BLOCK_SIZE,
                         (y_next.to(tl.float32) * (dy_next.to(tl.float32) - row_dot)).to(
                             grad_input_ptr.dtype.element_ty))
        paired = (hi - lo) // 2 * 2 if WRITE_PAIRS else 0  # the last block of an odd count is left for this loop
        for k in tl.range(paired, hi - lo, num_stages=NUM_STAGES):
            offsets = (hi - 1 - k) * BLOCK_SIZE + idx
            y = tl.load(output_ptr + y_base + offsets, eviction_policy="evict_first").to(tl.float32)
            dy = tl.load(grad_output_ptr + dy_base + offsets, eviction_policy="evict_first").to(tl.float32)
            tl.store(grad_input_ptr + dx_base + offsets, (y * (dy - row_dot)).to(grad_input_ptr.dtype.element_ty))
        if first_block == 0:
            _edge_grad(grad_input_ptr, output_ptr, grad_output_ptr, dx_base, y_base, dy_base, first_col, n_cols, 0,
                       row_dot, BLOCK_SIZE)
        if _holds_last_block(first_block, end_block, n_blocks):
            _edge_grad(grad_input_ptr, output_ptr, grad_output_ptr, dx_base, y_base, dy_base, first_col, n_cols,
                       n_blocks - 1, row_dot, BLOCK_SIZE)


@triton.jit
def _vector_online(vec_max, vec_sum, x, LOG2: tl.constexpr = False):
    """One step of the running (max, sum of exp(x - max)) per row of a [vectors, VEC] block x; with
    LOG2 the running max is scaled by log2(e) (see LOG2E)."""
    if LOG2:
        new_max = tl.maximum(vec_max, tl.max(x, axis=1) * LOG2E)
    else:
        new_max = tl.maximum(vec_max, tl.max(x, axis=1))
    # a vector that has seen only -inf keeps sum 0 (and -inf - -inf would be NaN)
    safe_max = tl.where(new_max == float("-inf"), 0.0, new_max)
    if LOG2:
        return new_max, vec_sum * tl.exp2(vec_max - safe_max) + tl.sum(_exp_scaled(x, safe_max[:, None]), axis=1)
    return new_max, vec_sum * tl.exp(vec_max - safe_max) + tl.sum(tl.exp(x - safe_max[:, None]), axis=1)


@triton.jit
def _tile_edge(first_col, n_cols, block, TILE_ROWS: tl.constexpr, VEC: tl.constexpr):
    """(offsets from the row's aligned base, mask of the row's columns) of a row's edge tile."""
    offsets = block * (TILE_ROWS * VEC) + tl.arange(0, TILE_ROWS)[:, None] * VEC + tl.arange(0, VEC)[None, :]
    cols = first_col + offsets
    return offsets, (cols >= 0) & (cols < n_cols)


@triton.jit
def _tile_edge_vectors(first_col, n_cols, block, TILE_ROWS: tl.constexpr, VEC: tl.constexpr):
    """([TILE_ROWS, 1] masks of a row's edge tile: its vectors that hold any of the row's columns, and those wholly
    inside the row): masks constant over a vector keep its accesses whole (see TILE_STREAM_VECTOR_EDGES)."""
    vector_first = first_col + block * (TILE_ROWS * VEC) + tl.arange(0, TILE_ROWS)[:, None] * VEC
    return (vector_first > -VEC) & (vector_first < n_cols), (vector_first >= 0) & (vector_first <= n_cols - VEC)


@triton.jit
def _load_edge(input_ptr, in_base, first_col, n_cols, block, TILE_ROWS: tl.constexpr, VEC: tl.constexpr,
               VECTOR_EDGES: tl.constexpr):
    """(x in float32, -inf outside the row; offsets; the mask to store the tile under) of one edge tile of a row.
    With VECTOR_EDGES every vector holding one of the row's columns is read whole, and the rest set to -inf in
    registers (a 16-byte-aligned vector holding one of the tensor's bytes lies in its allocation's pages: bases are
    16-byte aligned, or VEC = 1), and the store mask takes only the vectors wholly inside the row (see
    _write_vector for the others); else both masks are the row's columns."""
    offsets, mask = _tile_edge(first_col, n_cols, block, TILE_ROWS, VEC)
    if VECTOR_EDGES:
        touched, store_mask = _tile_edge_vectors(first_col, n_cols, block, TILE_ROWS, VEC)
        x = tl.load(input_ptr + in_base + offsets, mask=touched, other=float("-inf")).to(tl.float32)
        x = tl.where(mask, x, float("-inf"))
    else:
        store_mask = mask
        x = tl.load(input_ptr + in_base + offsets, mask=mask, other=float("-inf")).to(tl.float32)
    return x, offsets, store_mask


@triton.jit
def _read_vector(input_ptr, in_base, first_col, n_cols, start, VEC: tl.constexpr):
    """(offsets, mask, x in float32) of the row's columns among the VEC elements from `start` (an offset from the
    row's aligned base): a vector that straddles one of the row's ends, element by element."""
    offsets = start + tl.arange(0, VEC)
    mask = (first_col + offsets >= 0) & (first_col + offsets < n_cols)
    return offsets, mask, tl.load(input_ptr + in_base + offsets, mask=mask, other=float("-inf")).to(tl.float32)


@triton.jit
def _store_vector(output_ptr, out_base, offsets, mask, x, row_max, inv_row_sum, LOG2: tl.constexpr, scale):
    """y = exp(x - row_max) * inv_row_sum of a vector _read_vector read, stored element by element."""
    tl.store(output_ptr + out_base + offsets,
             _normalized(x, row_max, inv_row_sum, LOG2, scale).to(output_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _write_vector(output_ptr, input_ptr, out_base, in_base, first_col, n_cols, start, row_max, inv_row_sum,
                  VEC: tl.constexpr, LOG2: tl.constexpr, scale):
    """y = exp(x - row_max) * inv_row_sum over the row's columns among the VEC elements from `start` (an offset
    from the row's aligned base): a vector that straddles one of the row's ends, element by element."""
    offsets, mask, x = _read_vector(input_ptr, in_base, first_col, n_cols, start, VEC)
    _store_vector(output_ptr, out_base, offsets, mask, x, row_max, inv_row_sum, LOG2, scale)


@triton.jit
def _tile_segment_max_sum(input_ptr, in_base, first_col, n_cols, n_blocks, first_block, end_block,
                          TILE_ROWS: tl.constexpr, VEC: tl.constexpr, UNROLL: tl.constexpr,
                          LOG2: tl.constexpr = False, PREFETCH: tl.constexpr = 0, VECTOR_EDGES: tl.constexpr = False):
    """(max, sum of exp(x - max)) over tiles [first_block, end_block) of one row; (-inf, 0) if empty.
    With LOG2 the max is scaled by log2(e) (see LOG2E). PREFETCH > 0: each step asks L2 for the tile
    PREFETCH steps ahead (see TILE_STREAM_PREFETCH). VECTOR_EDGES: see _load_edge."""
    tile = tl.arange(0, TILE_ROWS)[:, None] * VEC + tl.arange(0, VEC)[None, :]
    vec_max = tl.full([TILE_ROWS], float("-inf"), tl.float32)
    vec_sum = tl.zeros([TILE_ROWS], tl.float32)
    lo = tl.maximum(first_block, 1)
    hi = tl.minimum(end_block, n_blocks - 1)
    for block in tl.range(lo, hi, loop_unroll_factor=UNROLL):
        if PREFETCH > 0:  # one address per 16-byte vector, as the loads: a coarser stride asks for lines twice
            _prefetch_l2(input_ptr + in_base + tl.minimum(block + PREFETCH, hi - 1) * (TILE_ROWS * VEC)
                         + tl.arange(0, TILE_ROWS) * VEC)
        x = tl.load(input_ptr + in_base + block * (TILE_ROWS * VEC) + tile, eviction_policy="evict_last")
        vec_max, vec_sum = _vector_online(vec_max, vec_sum, x.to(tl.float32), LOG2)
    # the row's first and last tiles, masked: they may hang over the row's ends. (Handled before
    # the loop instead, the H200 sweep of commit 7b27c32 ran 8-11% slower: notes/kernels.md, round 7.)
    if first_block == 0:
        x, _, _ = _load_edge(input_ptr, in_base, first_col, n_cols, 0, TILE_ROWS, VEC, VECTOR_EDGES)
        vec_max, vec_sum = _vector_online(vec_max, vec_sum, x, LOG2)
    if _holds_last_block(first_block, end_block, n_blocks):
        x, _, _ = _load_edge(input_ptr, in_base, first_col, n_cols, n_blocks - 1, TILE_ROWS, VEC, VECTOR_EDGES)
        vec_max, vec_sum = _vector_online(vec_max, vec_sum, x, LOG2)
    segment_max = tl.max(vec_max, axis=0)
    safe_max = tl.where(segment_max == float("-inf"), 0.0, segment_max)
    rescale = tl.exp2(vec_max - safe_max) if LOG2 else tl.exp(vec_max - safe_max)
    return segment_max, tl.sum(vec_sum * rescale, axis=0)


@triton.jit
def _tile_row_edges_write(output_ptr, input_ptr, out_base, in_base, first_col, n_cols, n_blocks, row_max, inv_row_sum,
                          TILE_ROWS: tl.constexpr, VEC: tl.constexpr, LOG2: tl.constexpr, scale,
                          VECTOR_EDGES: tl.constexpr):
    """The write of a row's two edge tiles (the row holds two tiles or more) and, with VECTOR_EDGES, of the vectors
    that straddle its ends, with every load issued before the first store: a store may alias a later load, which
    would otherwise wait behind it (round 58)."""
    x_first, first_offsets, first_mask = _load_edge(input_ptr, in_base, first_col, n_cols, 0, TILE_ROWS, VEC,
                                                    VECTOR_EDGES)
    x_last, last_offsets, last_mask = _load_edge(input_ptr, in_base, first_col, n_cols, n_blocks - 1, TILE_ROWS, VEC,
                                                 VECTOR_EDGES)
    if VECTOR_EDGES:
        head_offsets, head_mask, x_head = _read_vector(input_ptr, in_base, first_col, n_cols, -first_col // VEC * VEC,
                                                       VEC)
        tail_offsets, tail_mask, x_tail = _read_vector(input_ptr, in_base, first_col, n_cols,
                                                       (n_cols - 1 - first_col) // VEC * VEC, VEC)
    tl.store(output_ptr + out_base + first_offsets,
             _normalized(x_first, row_max, inv_row_sum, LOG2, scale).to(output_ptr.dtype.element_ty), mask=first_mask)
    tl.store(output_ptr + out_base + last_offsets,
             _normalized(x_last, row_max, inv_row_sum, LOG2, scale).to(output_ptr.dtype.element_ty), mask=last_mask)
    if VECTOR_EDGES:
        _store_vector(output_ptr, out_base, head_offsets, head_mask, x_head, row_max, inv_row_sum, LOG2, scale)
        _store_vector(output_ptr, out_base, tail_offsets, tail_mask, x_tail, row_max, inv_row_sum, LOG2, scale)


@triton.jit
def _tile_segment_write(output_ptr, input_ptr, out_base, in_base, first_col, n_cols, n_blocks, first_block,
                        end_block, row_max, inv_row_sum, TILE_ROWS: tl.constexpr, VEC: tl.constexpr,
                        UNROLL: tl.constexpr, LOG2: tl.constexpr = False, scale=LOG2E,
                        VECTOR_EDGES: tl.constexpr = False, EDGE_BATCH: tl.constexpr = False,
                        WRITE_PAIRS: tl.constexpr = False):
    """y = exp(x - row_max) * inv_row_sum over tiles [first_block, end_block), interior last to first
    (with LOG2, row_max is scaled by `scale`: see LOG2E and _guard_scale). With VECTOR_EDGES the edge tiles store
    whole vectors, and the at most two vectors that straddle the row's ends element by element. EDGE_BATCH: the
    segment is a whole row of two tiles or more, whose edges are written by _tile_row_edges_write. WRITE_PAIRS: the
    inner tiles are read two at a time before either is stored (see TILE_WRITE_PAIRS)."""
    tile = tl.arange(0, TILE_ROWS)[:, None] * VEC + tl.arange(0, VEC)[None, :]
    lo = tl.maximum(first_block, 1)
    hi = tl.minimum(end_block, n_blocks - 1)
    if WRITE_PAIRS:
        for k in tl.range(0, (hi - lo) // 2, loop_unroll_factor=max(1, UNROLL // 2)):
            offsets = (hi - 1 - 2 * k) * (TILE_ROWS * VEC) + tile
            x = tl.load(input_ptr + in_base + offsets, eviction_policy="evict_first")
            x_next = tl.load(input_ptr + in_base + offsets - TILE_ROWS * VEC, eviction_policy="evict_first")
            tl.store(output_ptr + out_base + offsets,
                     _normalized(x.to(tl.float32), row_max, inv_row_sum, LOG2, scale).to(output_ptr.dtype.element_ty),
                     cache_modifier=".cs")
            tl.store(output_ptr + out_base + offsets - TILE_ROWS * VEC,
                     _normalized(x_next.to(tl.float32), row_max, inv_row_sum, LOG2, scale).to(
                         output_ptr.dtype.element_ty), cache_modifier=".cs")
    paired = (hi - lo) // 2 * 2 if WRITE_PAIRS else 0  # the last inner tile of an odd count is left for this loop
    for k in tl.range(paired, hi - lo, loop_unroll_factor=1 if WRITE_PAIRS else UNROLL):
        offsets = (hi - 1 - k) * (TILE_ROWS * VEC) + tile
        x = tl.load(input_ptr + in_base + offsets, eviction_policy="evict_first").to(tl.float32)
        y = _normalized(x, row_max, inv_row_sum, LOG2, scale)
        tl.store(output_ptr + out_base + offsets, y.to(output_ptr.dtype.element_ty), cache_modifier=".cs")
    if EDGE_BATCH:
        _tile_row_edges_write(output_ptr, input_ptr, out_base, in_base, first_col, n_cols, n_blocks, row_max,
                              inv_row_sum, TILE_ROWS, VEC, LOG2, scale, VECTOR_EDGES)
    else:
        for edge in tl.static_range(2):
            block = 0 if edge == 0 else n_blocks - 1
            if (first_block == 0) if edge == 0 else _holds_last_block(first_block, end_block, n_blocks):
                x, offsets, store_mask = _load_edge(input_ptr, in_base, first_col, n_cols, block, TILE_ROWS, VEC,
                                                    VECTOR_EDGES)
                y = _normalized(x, row_max, inv_row_sum, LOG2, scale)
                tl.store(output_ptr + out_base + offsets, y.to(output_ptr.dtype.element_ty), mask=store_mask)
        if VECTOR_EDGES:  # the vectors holding column 0 and column n_cols - 1 (a whole one is written twice, alike)
            if first_block == 0:
                _write_vector(output_ptr, input_ptr, out_base, in_base, first_col, n_cols, -first_col // VEC * VEC,
                              row_max, inv_row_sum, VEC, LOG2, scale)
            if (end_block == n_blocks) & (first_block < n_blocks):
                _write_vector(output_ptr, input_ptr, out_base, in_base, first_col, n_cols,
                              (n_cols - 1 - first_col) // VEC * VEC, row_max, inv_row_sum, VEC, LOG2, scale)


@triton.jit
def _row_partials(input_ptr, slots_ptr, in_base, first_col, n_cols, n_blocks, row, n_segments, blocks_per_segment,
                  max_polls, SEGMENTS_BLOCK: tl.constexpr, TILE_ROWS: tl.constexpr, VEC: tl.constexpr,
                  UNROLL: tl.constexpr, LOG2: tl.constexpr = False, SLEEP_NS: tl.constexpr = 0):
    """(packed (max, sum) partials, in-row mask) of a row's segments, as their programs publish them;
    any still missing after max_polls re-reads is computed here from the input and published, so that
    later siblings find it (see _await_row)."""
    packed, n_missing, in_row = _await_row(slots_ptr, row, n_segments, max_polls, SEGMENTS_BLOCK, SLEEP_NS)
    if _anywhere(n_missing > 0):
        for sibling in range(0, n_segments):
            slot = slots_ptr + row * n_segments + sibling
            if _anywhere(tl.load(slot, volatile=True) == 0):
                s_first = sibling * blocks_per_segment
                s_max, s_sum = _tile_segment_max_sum(input_ptr, in_base, first_col, n_cols, n_blocks, s_first,
                                                     tl.minimum(s_first + blocks_per_segment, n_blocks),
                                                     TILE_ROWS, VEC, UNROLL, LOG2)
                tl.atomic_xchg(slot, _pack(s_max, s_sum), sem="relaxed")
        packed = _await_row(slots_ptr, row, n_segments, 1 << 30, SEGMENTS_BLOCK)[0]
    return packed, in_row


@triton.jit
def _prefetch_next_item(input_ptr, next_item, n_items, n_segments, blocks_per_segment, input_row_stride,
                        output_row_stride, n_cols, BLOCK_SIZE: tl.constexpr, VEC: tl.constexpr, LINE: tl.constexpr,
                        N_BLOCKS: tl.constexpr):
    """Ask L2 for the first N_BLOCKS interior blocks of this program's next item, while it waits for its
    row's other segments (see TILE_STREAM_WAIT_PREFETCH). CUDA only."""
    if next_item < n_items:
        row, in_base, out_base, first_col, n_blocks, first_block, end_block = _segment_item(
            next_item, n_segments, blocks_per_segment, input_row_stride, output_row_stride, n_cols, BLOCK_SIZE, VEC,
            LINE)
        lo = tl.maximum(first_block, 1)
        hi = tl.minimum(end_block, n_blocks - 1)
        # one address per 16-byte vector, as the loads (one per 128-byte line lost 2-8% in the backward: round 30)
        step: tl.constexpr = 128 // input_ptr.dtype.element_ty.primitive_bitwidth
        vectors = tl.arange(0, BLOCK_SIZE // step) * step
        for k in tl.static_range(N_BLOCKS):
            if lo + k < hi:
                _prefetch_l2(input_ptr + in_base + (lo + k) * BLOCK_SIZE + vectors)


@triton.jit
def _tile_stream_fwd_kernel(output_ptr, input_ptr, slots_ptr, input_row_stride, output_row_stride, n_rows, n_cols,
                            n_segments, blocks_per_segment, max_polls, TILE_ROWS: tl.constexpr,
                            SEGMENTS_BLOCK: tl.constexpr, ALIGN: tl.constexpr, VEC: tl.constexpr,
                            UNROLL: tl.constexpr, LOG2: tl.constexpr = False, GUARD: tl.constexpr = False,
                            PREFETCH: tl.constexpr = 0, LINE: tl.constexpr = False, POLL_SLEEP: tl.constexpr = 0,
                            WAIT_PREFETCH: tl.constexpr = 0, VECTOR_EDGES: tl.constexpr = False,
                            WRITE_PAIRS: tl.constexpr = False):
    """The stream kernel on the tile kernel's register diet: [TILE_ROWS, VEC] tiles with one running
    (max, sum) per vector, plain loads (no shared-memory stages), so many warps fit an SM."""
    n_cols = n_cols // ALIGN * ALIGN
    input_row_stride = input_row_stride // ALIGN * ALIGN
    output_row_stride = output_row_stride // ALIGN * ALIGN
    for item in range(tl.program_id(0), n_rows * n_segments, tl.num_programs(0)):
        row, in_base, out_base, first_col, n_blocks, first_block, end_block = _segment_item(
            item, n_segments, blocks_per_segment, input_row_stride, output_row_stride, n_cols, TILE_ROWS * VEC, VEC,
            LINE)
        segment_max, segment_sum = _tile_segment_max_sum(input_ptr, in_base, first_col, n_cols, n_blocks,
                                                         first_block, end_block, TILE_ROWS, VEC, UNROLL, LOG2,
                                                         PREFETCH, VECTOR_EDGES)
        if SEGMENTS_BLOCK == 1:
            row_max = segment_max
            # times exp(0) = 1, or exp(-inf - -inf) = NaN for a fully -inf row (as torch gives), in either domain
            inv_row_sum = 1.0 / (segment_sum * tl.exp(segment_max - row_max))
        else:
            tl.atomic_xchg(slots_ptr + item, _pack(segment_max, segment_sum), sem="relaxed")
            if WAIT_PREFETCH > 0:
                _prefetch_next_item(input_ptr, item + tl.num_programs(0), n_rows * n_segments, n_segments,
                                    blocks_per_segment, input_row_stride, output_row_stride, n_cols, TILE_ROWS * VEC,
                                    VEC, LINE, WAIT_PREFETCH)
            packed, in_row = _row_partials(input_ptr, slots_ptr, in_base, first_col, n_cols, n_blocks, row,
                                           n_segments, blocks_per_segment, max_polls, SEGMENTS_BLOCK, TILE_ROWS, VEC,
                                           UNROLL, LOG2, POLL_SLEEP)
            row_max, inv_row_sum = _combine_partials(packed, in_row, LOG2)
        scale = LOG2E
        if GUARD:  # a row whose scaled max is infinite (see LOG2E): its statistics again, from every segment
            natural = tl.abs(row_max) == float("inf")
            if natural:
                row_max, row_sum = _tile_segment_max_sum(input_ptr, in_base, first_col, n_cols, n_blocks, 0, n_blocks,
                                                         TILE_ROWS, VEC, UNROLL)
                inv_row_sum = 1.0 / row_sum
            scale = _guard_scale(natural)
        _tile_segment_write(output_ptr, input_ptr, out_base, in_base, first_col, n_cols, n_blocks, first_block,
                            end_block, row_max, inv_row_sum, TILE_ROWS, VEC, UNROLL, LOG2, scale, VECTOR_EDGES,
                            WRITE_PAIRS=WRITE_PAIRS)


@triton.jit
def _tile_load(input_row, first_col, n_cols, offsets, block, TILE_ROWS: tl.constexpr, VEC: tl.constexpr,
               VECTOR_EDGES: tl.constexpr, eviction_policy: tl.constexpr):
    """One [TILE_ROWS, VEC] tile of a row in float32, -inf outside it. With VECTOR_EDGES (rows that are not whole
    vectors, offsets from the row's aligned base: see _row_bases) every vector holding one of the row's columns is
    read whole and the rest set to -inf in registers (see _load_edge); else each element is masked."""
    if VECTOR_EDGES:
        touched, _ = _tile_edge_vectors(first_col, n_cols, block, TILE_ROWS, VEC)
        x = tl.load(input_row + offsets, mask=touched, other=float("-inf"), eviction_policy=eviction_policy)
        cols = first_col + offsets
        return tl.where((cols >= 0) & (cols < n_cols), x.to(tl.float32), float("-inf"))
    return tl.load(input_row + offsets, mask=offsets < n_cols, other=float("-inf"),
                   eviction_policy=eviction_policy).to(tl.float32)


@triton.jit
def _tile_row_stats(input_row, first_col, n_cols, n_blocks, TILE_ROWS: tl.constexpr, VEC: tl.constexpr,
                    UNROLL: tl.constexpr, LOG2: tl.constexpr, VECTOR_EDGES: tl.constexpr = False):
    """(max, 1 / sum of exp(x - max)) of one row, read in [TILE_ROWS, VEC] steps (with LOG2 the max
    is scaled by log2(e): see LOG2E). VECTOR_EDGES: see _tile_load."""
    tile = tl.arange(0, TILE_ROWS)[:, None] * VEC + tl.arange(0, VEC)[None, :]
    vec_max = tl.full([TILE_ROWS], float("-inf"), tl.float32)
    vec_sum = tl.zeros([TILE_ROWS], tl.float32)
    for block in tl.range(0, n_blocks, loop_unroll_factor=UNROLL):
        x = _tile_load(input_row, first_col, n_cols, block * (TILE_ROWS * VEC) + tile, block, TILE_ROWS, VEC,
                       VECTOR_EDGES, "evict_last")
        vec_max, vec_sum = _vector_online(vec_max, vec_sum, x, LOG2)
    row_max = tl.max(vec_max, axis=0)
    # vectors that saw only -inf add 0 * exp(-inf) = 0; a fully -inf row gives NaN, as in torch
    rescale = tl.exp2(vec_max - row_max) if LOG2 else tl.exp(vec_max - row_max)
    return row_max, 1.0 / tl.sum(vec_sum * rescale, axis=0)


@triton.jit
def _tile_store(output_row, x, block, first_col, n_cols, row_max, inv_row_sum, TILE_ROWS: tl.constexpr,
                VEC: tl.constexpr, LOG2: tl.constexpr, scale, VECTOR_EDGES: tl.constexpr):
    """Store y = exp(x - row_max) * inv_row_sum of one [TILE_ROWS, VEC] tile that _tile_load read."""
    offsets = block * (TILE_ROWS * VEC) + tl.arange(0, TILE_ROWS)[:, None] * VEC + tl.arange(0, VEC)[None, :]
    y = _normalized(x, row_max, inv_row_sum, LOG2, scale).to(output_row.dtype.element_ty)
    if VECTOR_EDGES:
        _, inside = _tile_edge_vectors(first_col, n_cols, block, TILE_ROWS, VEC)
        tl.store(output_row + offsets, y, mask=inside, cache_modifier=".cs")
    else:
        tl.store(output_row + offsets, y, mask=offsets < n_cols, cache_modifier=".cs")


@triton.jit
def _tile_row_write(output_row, input_row, first_col, n_cols, n_blocks, row_max, inv_row_sum, TILE_ROWS: tl.constexpr,
                    VEC: tl.constexpr, UNROLL: tl.constexpr, LOG2: tl.constexpr, scale=LOG2E,
                    VECTOR_EDGES: tl.constexpr = False, WRITE_PAIRS: tl.constexpr = False):
    """y = exp(x - row_max) * inv_row_sum over one row, last step first (its tail is likeliest in L2);
    with LOG2, row_max is scaled by `scale` (see LOG2E and _guard_scale). With VECTOR_EDGES the steps store whole
    vectors, and the at most two vectors that straddle the row's ends are stored element by element after them.
    WRITE_PAIRS: steps read two at a time before either is stored (see TILE_WRITE_PAIRS)."""
    tile = tl.arange(0, TILE_ROWS)[:, None] * VEC + tl.arange(0, VEC)[None, :]
    if WRITE_PAIRS:
        for k in tl.range(0, n_blocks // 2, loop_unroll_factor=max(1, UNROLL // 2)):
            block = n_blocks - 1 - 2 * k
            x = _tile_load(input_row, first_col, n_cols, block * (TILE_ROWS * VEC) + tile, block, TILE_ROWS, VEC,
                           VECTOR_EDGES, "evict_first")
            x_next = _tile_load(input_row, first_col, n_cols, (block - 1) * (TILE_ROWS * VEC) + tile, block - 1,
                                TILE_ROWS, VEC, VECTOR_EDGES, "evict_first")
            _tile_store(output_row, x, block, first_col, n_cols, row_max, inv_row_sum, TILE_ROWS, VEC, LOG2, scale,
                        VECTOR_EDGES)
            _tile_store(output_row, x_next, block - 1, first_col, n_cols, row_max, inv_row_sum, TILE_ROWS, VEC, LOG2,
                        scale, VECTOR_EDGES)
    paired = n_blocks // 2 * 2 if WRITE_PAIRS else 0  # the last step of an odd count is left for this loop
    for k in tl.range(paired, n_blocks, loop_unroll_factor=1 if WRITE_PAIRS else UNROLL):
        block = n_blocks - 1 - k
        x = _tile_load(input_row, first_col, n_cols, block * (TILE_ROWS * VEC) + tile, block, TILE_ROWS, VEC,
                       VECTOR_EDGES, "evict_first")
        _tile_store(output_row, x, block, first_col, n_cols, row_max, inv_row_sum, TILE_ROWS, VEC, LOG2, scale,
                    VECTOR_EDGES)
    if VECTOR_EDGES:  # the vectors holding column 0 and column n_cols - 1 (a whole one is written twice, alike)
        _write_vector(output_row, input_row, 0, 0, first_col, n_cols, -first_col // VEC * VEC, row_max, inv_row_sum,
                      VEC, LOG2, scale)
        _write_vector(output_row, input_row, 0, 0, first_col, n_cols, (n_cols - 1 - first_col) // VEC * VEC, row_max,
                      inv_row_sum, VEC, LOG2, scale)


@triton.jit
def _tile_row_edges_apart(output_ptr, input_ptr, out_base, in_base, first_col, n_cols, n_blocks,
                          TILE_ROWS: tl.constexpr, VEC: tl.constexpr, UNROLL: tl.constexpr, LOG2: tl.constexpr,
                          GUARD: tl.constexpr, VECTOR_EDGES: tl.constexpr, EDGE_BATCH: tl.constexpr = False,
                          WRITE_PAIRS: tl.constexpr = False):
    """One row of _tile_online_fwd_kernel with EDGES_APART: the row as one segment of tile-stream, without the
    exchange."""
    row_max, row_sum = _tile_segment_max_sum(input_ptr, in_base, first_col, n_cols, n_blocks, 0, n_blocks,
                                             TILE_ROWS, VEC, UNROLL, LOG2, 0, VECTOR_EDGES)
    # row_max is -inf for a fully -inf row only: its sum is 0, and its outputs NaN (x - max), as torch gives
    inv_row_sum = 1.0 / row_sum
    scale = LOG2E
    if GUARD:  # a row whose scaled max is infinite (see LOG2E) is read again, with exp(x - max)
        natural = tl.abs(row_max) == float("inf")
        if natural:
            row_max, row_sum = _tile_segment_max_sum(input_ptr, in_base, first_col, n_cols, n_blocks, 0, n_blocks,
                                                     TILE_ROWS, VEC, UNROLL, False, 0, VECTOR_EDGES)
            inv_row_sum = 1.0 / row_sum
        scale = _guard_scale(natural)
    _tile_segment_write(output_ptr, input_ptr, out_base, in_base, first_col, n_cols, n_blocks, 0, n_blocks,
                        row_max, inv_row_sum, TILE_ROWS, VEC, UNROLL, LOG2, scale, VECTOR_EDGES, EDGE_BATCH,
                        WRITE_PAIRS)


@triton.jit
def _tile_online_fwd_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols,
                            TILE_ROWS: tl.constexpr, VEC: tl.constexpr, ALIGN: tl.constexpr,
                            UNROLL: tl.constexpr = 1, LOG2: tl.constexpr = False, GUARD: tl.constexpr = False,
                            VECTOR_EDGES: tl.constexpr = False, EDGES_APART: tl.constexpr = False,
                            EDGE_BATCH: tl.constexpr = False, WRITE_PAIRS: tl.constexpr = False):
    """Two-pass online softmax of rows program_id, program_id + num_programs, ... in steps of a
    [TILE_ROWS, VEC] tile: each thread owns whole VEC-element vectors, so the running (max, sum)
    is one pair per vector (few registers: many warps fit an SM) and costs 1 + 1/VEC exp per element.
    VECTOR_EDGES (rows that are not whole vectors; both tensors share one row stride and 16-byte-aligned bases):
    each row's steps start at its first 16-byte-aligned element, so accesses stay whole vectors (see _tile_load).
    EDGES_APART: the loops read the row's inner tiles unmasked and its two edge tiles after them, as one segment of
    tile-stream does (_tile_segment_max_sum, _tile_segment_write); with EDGE_BATCH (every row two tiles or more) its
    write reads the edges in one batch (see TILE_EDGE_BATCH)."""
    n_cols = n_cols // ALIGN * ALIGN
    input_row_stride = input_row_stride // ALIGN * ALIGN
    output_row_stride = output_row_stride // ALIGN * ALIGN
    for row_idx in range(tl.program_id(0), n_rows, tl.num_programs(0)):
        # without VECTOR_EDGES the rows start where they start (first_col 0): a base aligned to one element
        in_base, out_base, first_col, n_blocks = _row_bases(row_idx, input_row_stride, output_row_stride, n_cols,
                                                            TILE_ROWS * VEC, VEC if VECTOR_EDGES else 1)
        if EDGES_APART:
            _tile_row_edges_apart(output_ptr, input_ptr, out_base, in_base, first_col, n_cols, n_blocks, TILE_ROWS, VEC,
                                  UNROLL, LOG2, GUARD, VECTOR_EDGES, EDGE_BATCH, WRITE_PAIRS)
        else:
            input_row = input_ptr + in_base
            output_row = output_ptr + out_base
            row_max, inv_row_sum = _tile_row_stats(input_row, first_col, n_cols, n_blocks, TILE_ROWS, VEC, UNROLL,
                                                   LOG2, VECTOR_EDGES)
            scale = LOG2E
            if GUARD:  # a row whose scaled max is infinite (see LOG2E) is read again, with exp(x - max)
                natural = tl.abs(row_max) == float("inf")
                if natural:
                    row_max, inv_row_sum = _tile_row_stats(input_row, first_col, n_cols, n_blocks, TILE_ROWS, VEC,
                                                           UNROLL, False, VECTOR_EDGES)
                scale = _guard_scale(natural)
            _tile_row_write(output_row, input_row, first_col, n_cols, n_blocks, row_max, inv_row_sum, TILE_ROWS, VEC,
                            UNROLL, LOG2, scale, VECTOR_EDGES, WRITE_PAIRS)


# Seed 003's autotuning grid. Under TRITON_INTERPRET timings mean nothing (and the autotuner's
# benchmark needs a GPU), so the interpreter gets one config, which triton.autotune runs untimed.
AUTOTUNE_BLOCK_SIZES = (256, 512, 1024, 2048, 4096, 8192)
AUTOTUNE_NUM_WARPS = (2, 4, 8, 16)
_AUTOTUNE_CONFIGS = (
    [triton.Config({"BLOCK_SIZE": 4096}, num_warps=8)]
    if os.environ.get("TRITON_INTERPRET") == "1"
    else [triton.Config({"BLOCK_SIZE": block}, num_warps=warps)
          for block, warps in itertools.product(AUTOTUNE_BLOCK_SIZES, AUTOTUNE_NUM_WARPS)]
)
_online_fwd_autotuned_kernel = triton.autotune(configs=_AUTOTUNE_CONFIGS, key=["n_cols"])(
    _online_fwd_kernel)

# ----------------------------------------------------------------------------------------------
# The heuristics table
# ----------------------------------------------------------------------------------------------


class Plan(NamedTuple):
    """One row of SOFTMAX_PLANS: how to launch one band of shapes."""
    op: str                # "forward" or "backward"
    max_cols: float        # the row applies when n_cols <= max_cols ...
    min_rows_per_sm: int   # ... and n_rows >= min_rows_per_sm * SM count ...
    elem_bytes: int        # ... and the element size is elem_bytes (0: any); first match wins
    path: str              # "rows" | "rows-lanes" | "row-tiles" | "tile" | "online" | "exchange"
                           # | "tile-stream" | "stream" | "tma-stream" (only for tensors the TMA can take:
                           # _tma_stream_eligible)
                           # (module docstring)
    rows_per_program: int  # rows: rows per program (tile = rows_per_program x next_pow2(n_cols));
                           # tile, tile-stream, tma-stream: 16-byte vectors per thread per step
    block_size: int        # online, stream: columns per loop step; exchange: columns per chunk; row-tiles: lanes a tile
    num_warps: int
    programs_per_sm: int   # tile, online, exchange, stream, tma-stream: persistent grid =
                           # programs_per_sm * SMs
    num_stages: int = 0    # stream: software-pipeline depth of the loop (blocks in flight + 1)
    segment_bytes: float = 0  # stream, tile-stream: bytes of a row one program streams twice at most;
                              # tma-stream: bytes of a row one program holds in shared memory at most
    unroll: int = 1        # tile, tile-stream: loop unroll factor (loads of the next steps issued early)
    whole_vectors: bool = False  # the row applies only to rows of whole 16-byte vectors (ALIGN = 16 / elem_bytes)
    partial_vectors: bool = False  # ... only to rows that are not whole 16-byte vectors
    one_warp_from: int = 0  # stream, tile-stream: rows of this many segments or more have a waiting segment's
                            # slots re-read by one warp, without sleeping (0: never)
    slot_lanes: int = 16    # stream, tile-stream: the least width of the slot vector (see _segments_block)
    maxnreg: int = 0        # stream, row-tiles, backward tma-stream: registers a thread, passed to ptxas (0: ptxas
                            # chooses; see SOFTMAX_PLANS)
    keep_input: bool = False  # row-tiles: hold the row in the input's own type (see _row_tiles_softmax)
    edges_apart: bool = False  # tile: inner tiles unmasked, the edge tiles after them (see _tile_online_fwd_kernel)
    shorter_segment_bytes: float = 0  # tile-stream: a shorter cut of the row, taken where the grid's arithmetic
                                      # favours it (see SHORTER_SEGMENT_GAIN; 0: none)
    min_l2_bytes: int = 0  # ... and the GPU's L2 holds at least this many bytes (see L2_60_MB)
    tile_loop: bool = False  # forward tma-stream: the tiles as a loop rather than unrolled (see gluon_softmax)
    view_rows: bool = False  # ... only to rows of whole TMA view rows (n_cols * elem_bytes a multiple of
                             # TMA_VIEW_ROW_BYTES), whose tma-stream segments are whole tiles
    aligned: bool = False  # forward tma-stream: rows off view rows cut on view rows, every slot a segment
                           # (gluon_softmax's ALIGNED)
    fill_rounds: bool = False  # backward tma-stream: rows of whole view rows cut into the count of segments that
                               # gluon_softmax._filled_segments weighs best for the grid (rounds 145-148)
    register_tiles: int = 0  # backward tma-stream: tiles of y and dy each segment of a row of whole tiles holds in
                             # registers besides its slots (gluon_softmax._register_cut; rounds 152-154)
    lag: bool = False  # tma-stream: each program holds two items in half the slots each and runs the next one's
                       # pass 1 before this one's wait (gluon_softmax._tma_lag_bwd_kernel, _tma_lag_fwd_kernel;
                       # rounds 168-170; rows off view rows since round 173)
    rows_dynamic: bool = False  # forward tma-stream: groups of a row's programs take whole rows from a counter where
                                # the grid is whole groups (gluon_softmax's ROWS_DYNAMIC; round 182)
    exact_cols: bool = False  # the row applies only to rows of exactly max_cols columns, in a multiple of
                              # rows_per_program rows (rows-lanes: no masks)


# An L2 this large or larger takes the table's min_l2_bytes rows: 60 MiB, the H200's (the H100's holds 50 MiB).
L2_60_MB = 60 << 20
# The view row of kernels/gluon_softmax (its VIEW_ROW_BYTES[0]; a test keeps the two equal): rows of a multiple of it
# start on a view row, so their segments are cut in whole tiles (gluon_softmax._segments).
TMA_VIEW_ROW_BYTES = 512


# Short rows: tiles of ~4096 elements, so each program moves 8-16 KB and a thread holds 2-4
# 16-byte vectors. Medium rows: one row per program in registers, warps grow with the row so a
# thread holds <= 32 fp32 values (64 for backward's two tensors, hence its lower switch-over).
# Short rows (scripts/probe_rows_tiles.py, H200): 2 rows x 1 warp per program beat the 16x4 and
# 8x4 tiles at 4096x256 (6.2 us against 7.6, torch 7.0) and 4096x512 (7.4 against ~8, torch 9.6):
# these tiny tensors need more, smaller programs in flight, not more bytes per program.
# N = 1024 (same probe, 131072 rows, H200): 1 row x 2 warps in fp32 (256.6 us) and 2 rows x 4
# warps in 2-byte types (130.7 us) against the earlier 4 x 4 (263.5 / 134.2 us), where
# torch.compile's kernel had been 2.5% ahead; the sweep then measured a tie with it on both GPUs.
# With few rows (4096 x 1024) the small programs cost the H100 2-5% (runs 20261121T235353Z,
# 20261122T013627Z), so they start at 64 rows per SM.
# Long rows, measured on an H200 with scripts/probe_long_rows.py (notes/kernels.md, round 4):
# - 2-byte rows of 32k-128k with >= 2 rows per SM: "tile". One running (max, sum) per 16-byte
#   vector needs ~30 registers, so 64 warps fit an SM; at 65536 fp16 it moved 3,317 GB/s against
#   2,322 for the per-lane online kernel (50% of warps active); the sweeps then gave 78% of copy
#   on the H200 (was 54%) and 87% on the H100 (was 68%). At 32768 it (1 x 16 warps x 4) beat the
#   32-warp whole-row kernel on the H200 (79% against 74%) but lost on the H100 (87% against
#   93%; runs 20261122T013138Z, 20261122T013627Z), so 32768 stays on the whole-row kernel.
#   Rows the whole-row kernel pads (next_pow2: 8,200 columns take 16,384 lanes, and padded lanes cost their
#   exp, max and sum) go to "row-tiles": one row a program in registers as cdiv(N, tile) equal tiles, combined
#   lane by lane before one max and one sum reduction, one exp an element (notes/kernels.md, round 43). Its
#   tables (notes/probes/2026-11-22-h{100,200}-row-tiles{,-more,-dispatch}.json), against the rows it replaced
#   (the tile kernel at 8,193-9,728 and 16,385-28,000, rows-pipelined at 9,729-14,336, rows elsewhere):
#   - 2-byte 4,097-28,000 but 8,192 and 16,384 (which rows holds unpadded, within 1-3% either way): tiles of
#     4,096 lanes on 8 warps (two 16-byte vectors a thread a tile; 7 tiles at 28,000 take 125 registers, no
#     spills). H200 +13-20% at 8,200-28,000 (96-98% of copy) and +10-12% at 6,000; H100 +7-14% at 8,200-28,000
#     and -0.5% at 6,000. 16 warps lost 9% at 8,200 on the H200; evict_last loads gained 1-4% on the H200 and
#     0.7-1.4% on the H100 (ROW_TILES_LOAD_EVICT).
#   - 2-byte 32,769-57,344 with >= 2 rows an SM: tiles of 8,192 on 16 warps (7 tiles: 128 registers, no spills;
#     8 tiles at 65,536 spill 68-70 and lose 35%): +29-33% at 40,000 on both GPUs, +7-18% at 50,000-56,000; the
#     H200 still only at 78-88% of copy there (one 16-warp program an SM: load, reduce and write in turn).
#   - fp32 16,385-24,576: tiles of 4,096 on 16 warps: H200 +16% at 20,000 and +6% at 24,000, H100 +0-0.3%;
#     fp32 32,769-40,960 with >= 2 rows an SM: tiles of 8,192 on 32 warps (5 tiles, 62 registers): +8% (H200)
#     and +4% (H100) at 40,000 over the tile kernel. fp32 to 16,384 and at 28,000 stays on rows (1-3% ahead).
#   - Rows that are not whole 16-byte vectors (ALIGN < 16 / elem_bytes, so every access is split into elements)
#     run it too, on tiles of 2,048 lanes for 2-byte rows (fewer registers than 4,096 once the accesses are
#     scalar): at 6,001-28,001 columns +30% to +128% over the rows kernel on both GPUs (but 28,001 bfloat16,
#     +6-10%), to 79-81% of copy on the H200 to 12,801 and 75% at 20,001-24,001, 87-94% on the H100; and fp32
#     20,001 +43% (H200) and +22% (H100), to 94% and 98% (notes/probes/2026-11-22-h{100,200}-row-tiles-odd.json).
#     fp32 rows of 4,097-16,383 that are not whole vectors take tiles of 2,048 on 8 warps too (H200: 97-99% of
#     copy at 6,001-12,801, where the rows kernel ran at 57-83%; notes/probes/2026-11-22-h200-row-tiles-odd32.json;
#     no H100 figure yet), whole-vector fp32 rows there staying on rows. 2-byte rows of 28,001-32,767 that are
#     not whole vectors stay on rows, and longer ones on tile-stream (not measured on row-tiles).
#   2-byte rows of 28k-32k columns, where one row fills an SM, once went to a "rows-pipelined" path (whole rows on
#   a persistent grid, the next rows loaded into shared memory by the software pipeliner): 89-91% of copy at 32,768
#   on the H200 against the rows kernel's 73-76%, 91% against 93% on the H100 (notes/kernels.md, round 9;
#   notes/probes/2026-11-22-h{100,200}-rows-pipelined.json). Row-tiles replaced it (round 49, below) and the path
#   was removed in session 37.
#   Past 65536, 2 vectors a thread with the loops unrolled twice: +2.4% (H100) and +1.8% (H200)
#   at 131072 fp16 over the same tile not unrolled (notes/probes/2026-11-22-*-tile-stream.json).
#   To 65536, 2 vectors a thread unrolled 4x: +3% (H100) and +1.5% (H200) at 65536 fp16 over
#   1 vector x 32 warps x 2; and for fp32 +9% on the H200 (86% of copy against exchange's 79%)
#   but -1.9% on the H100 (2,706 against 2,758 GB/s, about 90% of copy): the table takes the
#   better worst case (notes/probes/2026-11-22-h100-unroll.json, ...-h200-tile-stream.json).
# - fp32 with few rows, 32k-64k: "exchange" (one HBM pass).
# - Longer rows, and any long row with too few rows for a persistent grid: "tile-stream", the
#   tile kernel's steps (2 vectors a thread, 32 warps, 1 program per SM) over 256 KB segments,
#   132 x 256 KB = 34 MB in flight, under L2. Probed against the pipelined 1-D "stream" it
#   replaced (4 KB blocks, 4 warps, 8 programs per SM, 64 KB segments: 1.6x the ideal DRAM reads,
#   or, with smaller segments, 12-29% of warps active): 262144-1M +11-24% on the H100, +2-16% on
#   the H200 (fp32 1M: -1.7%), and +3% / +13% for fp32 131072 over "exchange". With too few rows
#   the segments shrink so that every program has one (_few_rows_segment). Unrolled twice, this
#   kernel spills at its 64 registers and loses 3% at fp32 131072-262144 (notes/kernels.md, round 6).
# Backward: rows to 16384 (2-byte: 32768, fp32 with >= 2 rows per SM: 24,577-32,768 too); "online" for
# fp32 16,385-24,576; "stream" beyond, as
# the forward's tile-stream: 32 KB blocks of each tensor (one or two 16-byte vectors a thread),
# 32 warps, 1 program per SM, plain loads (1 stage), 256 KB segments. On the H200 probe
# (notes/probes/2026-11-22-h200-backward-stream.json) that beat the pipelined configs (2-8 KB
# blocks, 4-8 warps, 3-4 stages) by 1-3% (2-byte) and 14-22% (fp32) from 65536 to 262144, 5-10%
# at 777777-1M 2-byte, and tied at fp32 1M (-0.7%).
# Backward rows of 8,193-32,768 columns, with y and dy kept in their 2-byte type across the row's sum
# (_rows_bwd_kernel, notes/kernels.md round 24; notes/probes/2026-11-22-h{100,200}-backward-rows.json):
# 2-byte 8,193-16,384 on 16 warps (64 registers, two programs an SM) instead of 32: at 12,800 +15% on
# the H200 (4,224 against 3,682 GB/s, 99% of the 3-tensor ceiling) and +1% on the H100; at 16,384 +5% /
# 0%. 2-byte 16,385-32,768 keep 32 warps, now without spills: +8-30% (H200) and +3-8% (H100) at 24,000
# and 32,768. fp32 24,577-32,768 on rows of 16 warps (128 registers; spills 14, still the fastest): at
# 28,000 +15% and at 32,768 +9% over "online" on the H200, +2% at 32,768 on the H100; at 20,000 and
# 24,000 (27% padding) "online" stays ahead by 0.6-5%. Below 8,192 keeping y and dy 2-byte is within 1%.
# Rows that are not whole 16-byte vectors (ALIGN < 16 / elem_bytes) stay off the tile kernel: it masks every
# access per element, so such rows ran it one element at a time, at 36-55% of copy for 2-byte rows of 40,001-
# 131,071 columns. tile-stream realigns a row's tiles and, since round 41, reads its edge tiles in whole vectors:
# against the tile kernel, 2-byte 65,535-131,071 +7% to +44% and 40,001 +1% to +4%, fp32 65,535 +8% (H200) and
# +30% (H100), fp32 100,001-131,071 +2% to +4% (those rows take tile-stream already), fp32 40,001 -8% (H200) and
# +1% (H100) (notes/kernels.md, round 41). The rows-kernel band's rows of 8k-32k that are not whole vectors are
# unchanged (see above).
# Rows cut into segments, where one warp re-reads a waiting segment's slots (one_warp_from, round 33): by
# default Triton gives each of the program's 32 warps a copy of the small slot vector, and every warp re-reads
# it; a lane per thread keeps the loads in the first warp. The wait's latency had grown with the segments a
# row (round 32's timeline, H200: 1.0 us at 2-4, 1.8-1.9 us at 8-16). For 2-byte forward rows +0.7% to +3.2%
# (H200) and +0.1% to +2.1% (H100) at 262,144-1M; fp32 forward lost 0.9-1.6% on the H100, so it keeps the
# per-warp copies. For the fp32 backward, without the sleep: at 1M +15.5% (H200) and +6.8% (H100), at 262,144
# +2.8% and +4.7%, at 131,072 and 524,288 -0.7% to +2.7%; the 2-byte backward then spilled and lost 10-20%
# (notes/probes/2026-11-22-h{100,200}-one-warp.json). The sweeps of 0c41d40 then put the fp32 backward at
# 131,072 (4 segments) at -2.5% on the H200 (+3.4% on the H100), so it starts at 8 segments (262,144).
# The 2-byte backward's slot vector has 32 lanes (one slot a lane of each warp, where 16 lanes put two copies in
# a warp), under an explicit 64-register cap: +1.6% to +2.8% on the H200 and +0.7% to +2.6% on the H100 at
# 131,072-1M (notes/kernels.md, round 35; notes/probes/2026-11-22-h{100,200}-slots.json). The cap is what makes
# it work: without one, ptxas gives the kernel with the wider vector 32 registers (two 1,024-thread programs an
# SM) and spills, -6% to -9%, which is what round 33's one-warp 2-byte backward met. The fp32 backward keeps
# ptxas's own choice: capped at 64 explicitly it spills 10 registers and loses 12-20%, uncapped it takes 58.
# Since round 49 (notes/probes/2026-11-22-h{100,200}-row-tiles-keep.json) whole-vector 2-byte rows of 28,001-57,344
# columns with >= 2 rows an SM take row-tiles held in the input's own type (KEEP_INPUT: 40 registers of data a thread
# at 40,000 instead of 80), 4,096 lanes on 8 warps under 128 registers, so two programs share an SM and one loads while
# the other reduces and writes: H200 96-99% of copy at 32,768-57,344 (float32 tiles 78-82% at 40,000, rows-pipelined
# 89% at 32,768), H100 +1-2% over float32 tiles and +5-6% over rows-pipelined (since removed). The rows above that
# say "8,192 on 16 warps" for these rows describe the table before.
# Since round 48 (...-tile-edges.json) rows of 32k-131k 2-byte and 32k-65k fp32 columns that are not whole vectors
# take the tile kernel with VECTOR_EDGES (whole-vector accesses from each row's first aligned element), 1 vector a
# thread unrolled 4x for 2-byte rows (2 vectors spill 30-38 registers with the edge selects): +6% to +43% over
# tile-stream's one-segment rows on both GPUs.
# Since rounds 50-56 (...-row-tiles-edges{,-more}.json, ...-edges-apart.json, ...-odd-ab.json) every row-tiles launch
# reads rows that are not whole vectors from their first aligned element (VECTOR_EDGES): the tiles read and write only
# the vectors wholly inside the row, masked at compile time in the first tile and the last two (no run-time branch, so
# a row's loads go out in one batch: round 56), and the two vectors that straddle the row's ends are read apart. Odd
# 2-byte rows then take, against the element-wise row-tiles or the kernels they had (H200 / H100): to 8,191 float32
# tiles of 2,048 (6,001: +18% / +6%); 8,193-10,233 (5 such tiles; fp32 to 10,237) float32 tiles under 64 registers, where
# fp32 would take 74 and run three programs an SM, not four (10,001: +22% / +8%, to 97.5% and 98% of copy); to 20,473
# (10 tiles) tiles kept in their type under 64 registers, four programs an SM (12,801-20,001: +14-30% / +4-13% in round
# 50, less 0-2% since round 56, where 2-4 registers spill; float32 tiles there need 80-128 registers and lose); from
# 20,474 kept 4,096 x 8 under 128, as whole-vector rows from 28,001 (24,001-50,001: +22-83% / +8-50%). Odd 2-byte rows
# of 57,345-131,072 take the tile kernel with 2 vectors unrolled 2x and the edge tiles apart from the unmasked inner
# ones (EDGES_APART: +3% to +9% at 65,535-131,071); aligned rows and odd fp32 rows lost 3-16% with the edges apart, so
# they keep the loop form. The rows above that say "tiles of 2,048" for odd rows or "tile kernel" for odd 2-byte rows
# of 32k-57k describe the table before.
# Since round 66 (...-h100-segments{,-more}.json, ...-h100-backward-segments.json) the forward's tile-stream segments
# fit L1: pass 2 reads a segment back from the SM's L1 (256 KB with shared memory, of which these kernels take 128
# bytes), which a 256 KB segment overflows. 2-byte rows: segments of 224 KB (7 tiles), -0.6% to +2.1% (1M). fp32: 224
# KB (131,072-524,288: +4.1-4.8%). Which of 224 KB and 192 KB (6 tiles) serves a row better depends on how its tiles and
# the grid divide (round 72: 192 KB -4% to +3% against 224 KB, shape by shape), so the launch takes 192 KB where the
# grid's arithmetic says it fills at least SHORTER_SEGMENT_GAIN more (_grid_fill). The backward's stream segments (y
# and dy together) of 192 KB, 3 blocks, for rows of 65,537-262,144 columns: +4-6% at 131,072-262,144 (fp16 262,144:
# +0.9%); at 524,288-1M they lost 1-8% (more siblings), and 65,536 (one 256 KB segment a row, no exchange) was not
# measured with them.
# Since round 98 (notes/probes/2026-11-26-h{200,100}-tma-stream-single.json) float32 rows of whole vectors past
# 65,536 columns take "tma-stream" where the TMA can read them (contiguous, 16-byte-aligned, sm_90+; see
# _tma_stream_eligible), and tile-stream otherwise: each segment (up to 224 KB) in shared memory, 8 warps of 4 vectors
# a thread. Against tile-stream, two fresh inputs a shape: H200 +11.3% (131,072), +13.6% (262,144), +14.1% (524,288),
# +16.4% (1M); H100 +0.9%, +3.9%, +5.0%, +11.7%. 16 warps of 2 vectors were 1-6% behind on both; 32 warps, or two
# halves of 104 KB (so that a whole item's loads are in flight), lost on the H200. 2-byte rows lost there (fp16 262,144
# -8% on the H200, -1% on the H100; 1M -15% and -10%): their first pass is bound by its exp work, not by its loads.
# Since round 99 (notes/probes/2026-11-26-h{200,100}-tma-stream-backward.json) the backward takes tma-stream too, for
# whole-vector rows from 65,536 columns the TMA can read: y and dy, up to 7 tiles of 16 KB each, held in shared memory
# (kernels/gluon_softmax.py, _tma_stream_bwd_kernel). Against stream, two fresh inputs a shape: H200 +8-20% in all
# three dtypes at 65,536, 131,072 and 1M; H100 fp32 +5-12%, 2-byte +12-15% at 65,536 and +10% at 1M but -0.7% at
# 131,072, so on the H100 2-byte rows of 65,537-262,144 keep stream's 192 KB segments (the rows below). The backward
# has no exp, so its 2-byte passes are bound by their loads, where the forward's are bound by their exp work. Capped
# at 128 registers: Triton 3.8's own choice for the 2-byte kernel (64) spills 8 bytes; 3.6's (80) does not.
# Since round 102 (notes/probes/2026-11-26-h{200,100}-tma-loose.json) the forward's tma-stream takes rows of any
# length: a tile reduces and stores only its whole 16-byte vectors and an item's few loose elements are read apart.
# Against tile-stream, two fresh inputs a shape: fp32 100,001 +7.9% on the H200, +0.1% on the H100; 777,777 +10.1%
# and +6.1%. Round 100's first try, with each unrolled tile branching for its loose elements, ran at 0.22-0.40x: its
# code overflowed the instruction cache (ncu, round 101). 2-byte rows of partial vectors at 100,001 columns gain with
# the tiles as a loop (tile_loop: a quarter of the code) against "tile": fp16 +9.3% and bf16 +7.9% on the H200, +5.7%
# and +6.0% on the H100, so 2-byte rows of partial vectors of 65,537-131,072 columns take it where "tile" would (2 rows
# an SM or more: the case measured); at 777,777 columns they lost 10-21%, as the whole-vector 2-byte rows do.
# Since round 90 (notes/probes/2026-11-25-h200-trials-{since-c60f2b1,segments}.json) the segments differ by GPU: on
# an H200 the H100's 224/192 KB forward segments and 192 KB backward ones lost to the 256 KB they replaced, so rows
# keyed on an L2 of 60 MB or more (min_l2_bytes; the H200's 60 MB against the H100's 50 MB tells the two apart, though
# which of the H200's differences, its L2 or its faster HBM, favours the longer segment was not measured) keep 256 KB.
# Against the H100's rows, on an H200, three fresh inputs a shape: forward 2-byte 262,144 +6-10%, 524,288-1M +2-3%,
# fp32 131,072-1M +2-6% but 777,777 -0.9% and 100,000 0.0%; backward 2-byte 100,000 +7-8%, 131,072-262,144 +2-9%,
# fp32 100,000 -0.8%. Without the 192 KB cut, 224 KB segments gained nothing there: the segment's length is what
# counts. Longer ones lost on the H200 wherever a segment grew: forward 288-384 KB -4% to -15%, backward 320-512 KB
# -2% to -18% (round 91, ...-h200-trials-longer-segments.json), so 256 KB is its optimum from both sides.
# Since rounds 113-114 (notes/probes/2026-11-26-h{200,100}-tma-ctas*.json) tma-stream runs several programs an SM,
# each with fewer slots, so that one program's first pass and wait overlap another's second pass and loads (one
# program an SM did the three one after another): 3 programs of 4 slots (64 KB) for rows of whole view rows, 2 of 7
# (112 KB) for the others (3 of 4 cut those in segments of 3 tiles and lost 18-29%), as a tile loop. The table against
# the one before, three fresh inputs a shape (H100 | H200): 2-byte 131,072 +4.3% | +10.8%, 262,144 +10.7% | +13.9%,
# 524,288 +12.5% | +17.1%, 777,777 (2 of 7) +7.3% | +10.2%, 1M +8.8% | +13.7%; fp32 100,000 and 100,001 (2 of 7)
# +4.9-5.6% | +7.4-7.9%, 131,072 +5.9% | +6.8%, 262,144 +5.3% | +7.2%, and 524,288 +5.2% | +4.6% with 3 of 4 against
# one program. On the H200 (L2 of 60 MB) 2-byte rows of 65,537-131,072 that are not whole view rows kept their rows
# before (2 of 7 ran 100,000 at 0.99-1.01x of the tile kernel and 100,001 at 0.95x of one program, where the H100
# gained 5.9% and 4.3-4.8%), until rounds 118-119 (below). fp32 rows of 4 MB (1M) lost 1.5-4% with more programs
# (38-64 segments a row), and 777,777 2-4%, so fp32 rows past 524,288 keep one program of 14 slots. At 65,536 3 of 4
# gained only 0.2-1.5% on 2-byte rows (fp32: +3.2% | +0.7%) against the tile kernel, which keeps them (rows of
# 40,961-65,535 were not measured). The launch caps a thread's registers at its share of the SM
# (gluon_softmax._register_share), so that the grid is resident: four programs of 3 slots, uncapped, left some out
# and ran 1,000 times slower on their siblings' polls.
# Since rounds 118-119 (notes/probes/2026-11-26-h{100,200}-tma-narrow.json) some 2-byte rows take three programs of 8
# slots of 8 KB tiles (the same 64 KB a program; a slot refills after half the work), on 4 warps of 4 vectors on the
# H200 and 8 warps of 2 on the H100, which each lost where the other gained. Against the table before, three fresh
# inputs a shape: on the H200 (4 warps) rows off view rows +4.7% (fp16 100,000, the tile kernel before), +3.2% (bf16
# 100,001, one program before), +2.4-4.2% (777,777, 2 of 7 before), and 1M +2.6-4.1% (3 of 4 before), where whole
# view rows of 131,072-524,288 lost 0.4-2.0% and keep 3 of 4; on the H100 (8 warps) 2-byte 100,000-100,001 +1.2-2.1%
# (2 of 7 before), where 777,777, 524,288 and 1M lost 0.4-1.2% and 4 warps lost 1-3% but at bf16 100,000. Rows off
# view rows of 131,073-777,776 columns, between the shapes measured, take the H200's narrow row by interpolation.
# On the H100, four programs of 6 slots of those 8 KB tiles (8 warps of 2 vectors, 64 registers) ran 2-byte
# 100,000-100,001 a further 3.4-3.6% faster than three of 8, where 4 KB tiles lost 0.6-0.9%, and both lost 2.6-4.4% at
# 65,536 and 777,777 (round 120, notes/probes/2026-11-26-h100-tma-finer.json).
# On the H200, the rows off view rows of 65,537-131,072 columns (2 rows an SM or more) take more programs of those 8 KB
# tiles on 4 warps (round 121, notes/probes/2026-11-26-h200-tma-{four,five}.json), against 3 of 8, three fresh inputs
# a shape: 2-byte 100,000-100,001 +7.9-9.5% with 4 programs of 6 slots (5 of 5: +0.4-3.0%; 6 of 4: +0.3-3.0%); fp32
# 100,000-100,001 (2 of 7 of 16 KB before) +2.5-3.4% with 5 of 5 (4 of 6: +1.1-1.6%). Four of 6 lost 8.3% at 2-byte
# 777,777 (39 segments a row), 2.4% at 65,536 and up to 1.7% at whole view rows, which keep their rows.
# Then more programs still (rounds 123-126, notes/probes/2026-11-26-h200-tma-{whole,rest,most,unseen}.json): on the
# H200, rows of whole view rows from 65,536 columns take 6 programs of 4 slots of 8 KB on 4 warps (at any number of
# rows; 2-byte rows of 32,769-65,535 columns with under 2 rows an SM too, which took 3 of 4 of 16 KB before, and
# float32 rows up to 65,536 with under 2 rows an SM keep the exchange kernel), and float32 rows off view rows past
# 65,536 take 5 of 5. Against the table before,
# three fresh inputs a shape: 2-byte 65,536 +3.4-3.5% (the tile kernel), 131,072-1M +2.4-3.7% (3 of 4, or 3 of 8 at
# 1M); fp32 65,536 +2.2%, 131,072-262,144 +1.4-2.1%, 524,288 +5.1%, 1M +3.8% (one program of 14 before); fp32 off
# view rows 150,001-777,777 +4.1-6.2% (2 of 7, or one program). The rule held at shapes no sweep has (round 126:
# 2-byte 98,304-2M +2.8-4.0%, fp32 98,304-393,216 +1.7-3.4%). Seven and eight programs lost to six (round 125), and
# 6 of 4 lost at fp32 777,777 (-3%), as 4 of 6 and 5 of 5 did at 2-byte rows off view rows past 131,072, which keep 3
# of 8. Rows of whole view rows of 40,961-65,535 columns (57,345-65,535 in 2-byte types), between the row-tiles and
# 65,536, were not measured: they take 6 of 4 by interpolation.
# Round 130 (notes/probes/2026-11-26-{h100,h200}-tma-{aligned,rest}.json): the H100 takes the same rows (6 of 4 at
# whole view rows: fp16 65,536-131,072 +1.1-1.3% against the tile kernel and 3 of 4 of 16 KB, bf16 262,144 +0.7%,
# fp32 524,288 +0.3%; 5 of 5 at fp32 100,000-100,001 +1.2-1.7% against 2 of 7 of 16 KB), and rows off view rows past
# 131,072 are cut on view rows (aligned: a row's segments after its first start on a view row and use every slot),
# 2-byte on 6 of 4, fp32 on 5 of 5: at 777,777 the H200 +4.2-4.9% (2-byte, against 3 of 8) and +5.1% (fp32), the
# H100 +2.9% and +3.3% (against 2 of 7 and one program of 14); fp32 300,000 +3.3% and +6-8%. The cut lost 0.5-2% at
# 100,000-100,001 on both GPUs (rows of 10-13 segments), which keep the cut of round 108.
# Round 182 (notes/probes/2026-11-27-{h100,h200}-rows-dynamic*.json): a grid's programs end in the order they were
# launched (round 180's timeline: on the H200 the sixth wave of programs 25 us after the first), so whole view rows of
# up to 131,072 columns hand whole rows to groups of a row's programs from a counter (rows_dynamic), where the grid is
# whole groups (2-byte 65,536 and 131,072, fp32 65,536). Against the table before, three fresh inputs a shape: bf16
# 65,536 and 131,072 +2.2% and +2.4% on the H200 (+1.7-2.1% in a second call), +0.8% on the H100; at twice and four
# times the sweep's rows +4.1-4.5% and +5.3-5.5% (H200), +2.1-2.7% and +3.2-3.3% (H100), the gap growing with the rows
# as the waves' spread does. Rows of 16 or more segments (grids that are not whole groups, or whole groups of fewer
# programs) gained nothing at the sweep's size or lost 1-3% (bf16 1M, fp16 777,777), so they keep every step-th item.
SOFTMAX_PLANS = (
    #     op          max_cols  min_rows bytes path      rows  block  warps  progs stages segment unroll
    Plan("forward",        64,        0,  0, "rows",      64,     0,     4,    0),
    Plan("forward",       128,        0,  0, "rows",      32,     0,     4,    0),
    Plan("forward",       256,        0,  0, "rows",       2,     0,     1,    0),
    Plan("forward",       512,        0,  0, "rows",       2,     0,     1,    0),
    Plan("forward",      1024,       64,  4, "rows",       1,     0,     2,    0),
    Plan("forward",      1024,       64,  2, "rows",       2,     0,     4,    0),
    Plan("forward",      1024,        0,  0, "rows",       4,     0,     4,    0),
    # fp32 rows of exactly 2,048 and 4,096 columns on the H100 in Inductor's form (rounds 84-87: 0.9993x and 1.0003x
    # of torch.compile, where the rows kernel is 0.995x); the H200 keeps the rows kernel, 1.20-1.27x faster there than
    # this form (round 88), by the rows before them
    Plan("forward",      2048,        0,  4, "rows",       2,     0,     8,    0, min_l2_bytes=L2_60_MB),
    Plan("forward",      2048,        0,  4, "rows-lanes", 2,     0,    16,    0, whole_vectors=True, exact_cols=True),
    Plan("forward",      2048,        0,  0, "rows",       2,     0,     8,    0),
    Plan("forward",      4096,        0,  4, "rows",       1,     0,     8,    0, min_l2_bytes=L2_60_MB),
    Plan("forward",      4096,        0,  4, "rows-lanes", 1,     0,    16,    0, whole_vectors=True, exact_cols=True),
    Plan("forward",      4096,        0,  0, "rows",       1,     0,     8,    0),
    Plan("forward",      8191,        0,  2, "row-tiles",  1,  4096,     8,    0,    0,      0, 1, True),
    Plan("forward",      8191,        0,  0, "row-tiles",  1,  2048,     8,    0, partial_vectors=True),
    Plan("forward",      8192,        0,  0, "rows",       1,     0,    16,    0),
    Plan("forward",     16383,        0,  2, "row-tiles",  1,  4096,     8,    0,    0,      0, 1, True),
    Plan("forward",     10233,        0,  2, "row-tiles",  1,  2048,     8,    0, partial_vectors=True, maxnreg=64),
    Plan("forward",     10237,        0,  4, "row-tiles",  1,  2048,     8,    0, partial_vectors=True, maxnreg=64),
    Plan("forward",     16383,        0,  2, "row-tiles",  1,  2048,     8,    0, partial_vectors=True, maxnreg=64,
         keep_input=True),
    Plan("forward",     16383,        0,  0, "row-tiles",  1,  2048,     8,    0, partial_vectors=True),
    Plan("forward",     16384,        0,  0, "rows",       1,     0,    16,    0),
    Plan("forward",     20473,        0,  2, "row-tiles",  1,  2048,     8,    0, partial_vectors=True, maxnreg=64,
         keep_input=True),
    Plan("forward",     28000,        0,  2, "row-tiles",  1,  4096,     8,    0,    0,      0, 1, True),
    Plan("forward",     28000,        0,  2, "row-tiles",  1,  4096,     8,    0, partial_vectors=True, maxnreg=128,
         keep_input=True),
    Plan("forward",     57344,        2,  2, "row-tiles",  1,  4096,     8,    0, maxnreg=128, keep_input=True),
    Plan("forward",     24576,        0,  4, "row-tiles",  1,  4096,    16,    0),
    Plan("forward",     32768,        0,  0, "rows",       1,     0,    32,    0),
    Plan("forward",     40960,        2,  4, "row-tiles",  1,  8192,    32,    0,    0,      0, 1, True),
    Plan("forward",    131072,        2,  0, "tma-stream", 4,    0,     4,    6,    0,  32768, tile_loop=True,
         view_rows=True, rows_dynamic=True),
    Plan("forward",     65536,        2,  0, "tile",       2,     0,    32,    1,    0,      0, 4, True),
    Plan("forward",    131072,        2,  2, "tma-stream", 4,    0,     4,    4,    0,  49152, tile_loop=True,
         min_l2_bytes=L2_60_MB),
    Plan("forward",    131072,        2,  2, "tma-stream", 2,    0,     8,    4,    0,  49152, tile_loop=True),
    Plan("forward",    131072,        2,  2, "tile",       2,     0,    32,    1,    0,      0, 2, True),
    Plan("forward",    131072,        2,  2, "tile",       2,     0,    32,    1,    0,      0, 2, partial_vectors=True,
         edges_apart=True),
    Plan("forward",     65536,        2,  4, "tile",       2,     0,    32,    1,    0,      0, 2, partial_vectors=True),
    Plan("forward",     65536,        0,  4, "exchange",   0,  4096,     8,    4),
    # the H200's fp32 rows of whole view rows past 131,072 (or of under 2 rows an SM) finish each item one step late,
    # two items of 2 slots a program (round 170: 1M +5.8%, 262,144 1.000; 2-byte rows lost 1-3%: their passes hold
    # them, round 167)
    Plan("forward",  math.inf,        0,  4, "tma-stream", 4,    0,     4,    6,    0,  32768, tile_loop=True,
         view_rows=True, min_l2_bytes=L2_60_MB, lag=True),
    Plan("forward",  math.inf,        0,  0, "tma-stream", 4,    0,     4,    6,    0,  32768, tile_loop=True,
         view_rows=True),
    Plan("forward",    131072,        0,  4, "tma-stream", 4,    0,     4,    5,    0,  40960, tile_loop=True),
    # the H200's fp32 rows off view rows past 262,144 finish each item one step late too, on 4 programs of 2 x 3 slots
    # with the ALIGNED cut (round 173: 777,777 +5.9%, 500,000 +5.0%, 1,000,003 +7.0%, 300,000 +1.4%; 200,003 -2.9%)
    Plan("forward",    262144,        0,  4, "tma-stream", 4,    0,     4,    5,    0,  40960, tile_loop=True,
         aligned=True, min_l2_bytes=L2_60_MB),
    Plan("forward",  math.inf,        0,  4, "tma-stream", 4,    0,     4,    4,    0,  49152, tile_loop=True,
         aligned=True, min_l2_bytes=L2_60_MB, lag=True),
    Plan("forward",  math.inf,        0,  4, "tma-stream", 4,    0,     4,    5,    0,  40960, tile_loop=True,
         aligned=True),
    Plan("forward",  math.inf,        0,  2, "tma-stream", 4,    0,     4,    6,    0,  32768, tile_loop=True,
         aligned=True),
    Plan("forward",  math.inf,        0,  2, "tile-stream", 2,    0,    32,    1,    0, 262144, one_warp_from=2,
         min_l2_bytes=L2_60_MB),
    Plan("forward",  math.inf,        0,  4, "tile-stream", 2,    0,    32,    1,    0, 262144, min_l2_bytes=L2_60_MB),
    Plan("forward",  math.inf,        0,  2, "tile-stream", 2,    0,    32,    1,    0, 229376, one_warp_from=2,
         shorter_segment_bytes=196608),
    Plan("forward",  math.inf,        0,  4, "tile-stream", 2,    0,    32,    1,    0, 229376,
         shorter_segment_bytes=196608),
    Plan("backward",       64,        0,  0, "rows",      32,     0,     4,    0),
    Plan("backward",      128,        0,  0, "rows",      16,     0,     4,    0),
    Plan("backward",      256,        0,  0, "rows",       8,     0,     4,    0),
    Plan("backward",      512,        0,  0, "rows",       4,     0,     4,    0),
    Plan("backward",     1024,        0,  0, "rows",       2,     0,     4,    0),
    Plan("backward",     2048,        0,  0, "rows",       1,     0,     4,    0),
    Plan("backward",     4096,        0,  0, "rows",       1,     0,     8,    0),
    Plan("backward",     8192,        0,  0, "rows",       1,     0,    16,    0),
    Plan("backward",    16384,        0,  2, "rows",       1,     0,    16,    0),
    Plan("backward",    16384,        0,  4, "rows",       1,     0,    32,    0),
    Plan("backward",    32768,        0,  2, "rows",       1,     0,    32,    0),
    Plan("backward",    24576,        2,  4, "online",     0,  8192,    32,    1),
    Plan("backward",    32768,        2,  4, "rows",       1,     0,    16,    0),
    # the H200's rows of whole view rows to 131,072 on 6 programs of 2 slots of 8 KB a tensor (round 127: fp32
    # 65,536-131,072 +3.1-5.9%, bf16 131,072 +7.6%; at 1M every launch of more programs lost 3-22%; round 130: fp16
    # 98,304 +4.7%, bf16 65,536 +1.3%, fp32 40,960 +0.1%, but fp32 120,000, off view rows, -22%: a segment that starts
    # inside a view row uses one slot of its two)
    Plan("backward",    131072,        0,  0, "tma-stream", 4,    0,     4,    6,    0,  32768, whole_vectors=True,
         view_rows=True, min_l2_bytes=L2_60_MB),
    Plan("backward",    524288,        0,  4, "tma-stream", 4,    0,     8,    1,    0, 229376, whole_vectors=True,
         maxnreg=128, min_l2_bytes=L2_60_MB),
    # the H200's fp32 rows past 524,288 finish each item one step late: two items a program, each in 7 slots of 8 KB
    # a tensor on 4 warps, the next one's pass 1 and partial before this one's wait (round 168, against the 2
    # register tiles below: 1M +11.9%, 786,432 +4.4%; the exchange cost 1M 10.5%, round 167) ...
    Plan("backward",  math.inf,        0,  4, "tma-stream", 4,    0,     4,    1,    0, 229376, whole_vectors=True,
         min_l2_bytes=L2_60_MB, lag=True),
    # ... and rows of more such segments than the grid holds at once (fp32 past about 1.9M columns) hold 2 tiles of
    # each tensor in registers a segment, besides the 7 slots, where the rows are whole tiles (rounds 152-154: +1.4% to
    # +7.6% at 589,824-1,572,864 columns, 2M +12%; 524,288 lost 3%; 4 tiles gained more at 1M and 2M, +3% and +18%, but
    # lost 1% at 983,040 and 1,310,720)
    Plan("backward",  math.inf,        0,  4, "tma-stream", 4,    0,     8,    1,    0, 229376, whole_vectors=True,
         min_l2_bytes=L2_60_MB, register_tiles=2),
    Plan("backward",  math.inf,        0,  0, "tma-stream", 4,    0,     8,    1,    0, 229376, whole_vectors=True,
         maxnreg=128, min_l2_bytes=L2_60_MB),
    Plan("backward",     65536,        0,  0, "tma-stream", 4,    0,     8,    1,    0, 229376, whole_vectors=True,
         maxnreg=128),
    # fp32 rows past 524,288 on one program an SM take 14 slots of 8 KB a tensor on 4 warps, cut by fill_rounds
    # (rounds 145-149, on the H100: 786,432 +3.8% in 34 segments, 1M +5.6% in 45, 1,310,720 +1.5%, 2M +0.5%, and at
    # rows no sweep has -0.6% to +16.9%; shorter rows lost up to 3.7% on 4 warps where the cut stays, and 2-byte rows
    # 2-3%). The H200 keeps its launch until an H200 has timed this one.
    Plan("backward",    524288,        0,  4, "tma-stream", 4,    0,     8,    1,    0, 229376, whole_vectors=True,
         maxnreg=128),
    Plan("backward",  math.inf,        0,  4, "tma-stream", 4,    0,     4,    1,    0, 229376, whole_vectors=True,
         maxnreg=128, fill_rounds=True),
    Plan("backward",     65536,        0,  4, "stream",     0,  8192,    32,    1,    1, 262144, one_warp_from=8),
    Plan("backward",     65536,        0,  2, "stream",     0, 16384,    32,    1,    1, 262144, slot_lanes=32,
         maxnreg=64),
    Plan("backward",    262144,        0,  4, "stream",     0,  8192,    32,    1,    1, 262144, one_warp_from=8,
         min_l2_bytes=L2_60_MB),
    Plan("backward",    262144,        0,  2, "stream",     0, 16384,    32,    1,    1, 262144, slot_lanes=32,
         maxnreg=64, min_l2_bytes=L2_60_MB),
    Plan("backward",    262144,        0,  4, "stream",     0,  8192,    32,    1,    1, 196608, one_warp_from=8),
    Plan("backward",    262144,        0,  2, "stream",     0, 16384,    32,    1,    1, 196608, slot_lanes=32,
         maxnreg=64),
    Plan("backward",  math.inf,        0,  2, "tma-stream", 4,    0,     8,    1,    0, 229376, whole_vectors=True,
         maxnreg=128),
    Plan("backward",  math.inf,        0,  4, "stream",     0,  8192,    32,    1,    1, 262144, one_warp_from=8),
    Plan("backward",  math.inf,        0,  2, "stream",     0, 16384,    32,    1,    1, 262144, slot_lanes=32,
         maxnreg=64),
)

# tile-stream's pass 1 asks L2 for the tile this many steps ahead of the one it loads
# (prefetch.global.L2: no register waits on it). One step ahead was +0.2-2.2% on the H100 and H200 at
# 262,144-1M columns; two steps ahead less, four and more slower; prefetching the next segment during
# pass 2 lost 5-15% (notes/kernels.md, round 16). Inline PTX: CUDA only (_l2_prefetch_steps); a test
# compiles it for sm_90 offline, since the interpreter cannot run it.
TILE_STREAM_PREFETCH = 1
# A segment waiting for its row's other segments sleeps this long before each re-read of their slots, when
# a row has POLL_SLEEP_MIN_SEGMENTS segments or more: then every warp of 16-32 programs re-reads the same
# 128-256 bytes while siblings write them. At 1M columns on the H200, 500 ns was +4.0% for the fp32 backward
# (32 segments), +2.4% for fp16 (16) and the fp32 forward (16), +0.9% for the fp16 forward (8); at 131,072
# (2-4 segments) it lost 1-2% (notes/kernels.md, round 26). The sweeps then measured fp32 1M +1.0-1.3 points
# on both GPUs, forward and backward, and the rest unchanged. nanosleep is inline PTX: CUDA only. Rows where
# one warp re-reads the slots (Plan.one_warp_from) do not sleep: without the contention it only delays them.
POLL_SLEEP_NS = 500
POLL_SLEEP_MIN_SEGMENTS = 16
# Tiles of its next item a tile-stream program asks L2 for right after publishing its partial, so that HBM
# reads while the program waits for its row's other segments (notes/kernels.md, round 30), by element size. One tile
# (32 KB): +0.8-3.3% on the H100 and +1.3-3.4% on the H200 at 262,144-1M; two tiles +0-3.7% on the H200, four and
# eight lost 2-12% (the extra lines compete with pass 2's re-reads). On today's 192-224 KB segments (round 73, H100,
# three fresh inputs each) two tiles gain +0.9-3.1% for 2-byte rows of 262,144-1M (three: -2.4 to +1.0%, four: -3 to
# -8%) and -1.3 to +0.6% for fp32, and none loses 2.5-8%. The backward lost with it wherever it spilled (fp32: -2% to
# -15%) and gained 0-4% only for 2-byte rows of 524,288 and more, so it has none.
TILE_STREAM_WAIT_PREFETCH = {2: 2, 4: 1}
# Whether tile-stream's edge tiles (a row's first and last) load and store whole 16-byte vectors, with the row's
# columns picked in registers, where ALIGN < VEC would split every access into VEC (notes/kernels.md, round 41):
# for rows that are not whole vectors, +1.5-2% (fp32) and +3-22% (2-byte) at 262,147 and 777,777 columns on the
# H100 and H200 (notes/probes/2026-11-22-h{100,200}-vector-edges.json). Only for such rows (_vector_edges).
TILE_STREAM_VECTOR_EDGES = True
# A tile-stream row takes its plan's shorter segments where _grid_fill gives them at least this much more of the grid
# than the plan's own (a row's segments wait for its longest, and the grid is a multiple of a row's segments, so both
# the last segment's length and the grid's size decide). Round 72 (H100, 14 shapes of 262,144-1M columns, five fresh
# inputs each, notes/probes/2026-11-25-h100-trials-segments-*.json): the measured effect was a third to a half of the
# arithmetic's, with its sign in 12 of 13 shapes where the two cuts differ; at 3% every one of the 14 chose the faster
# cut or an equal one (the one wrong sign, fp32 393,216, was 0.8% in the arithmetic, -3.6% measured).
SHORTER_SEGMENT_GAIN = 1.03
# Segments of a row as even as whole blocks allow: with 8-block segments fp32 100,000 columns (13 blocks) are
# cut 8 + 5, and a row's two segments wait for each other (round 57). On the H100: fp32 100,000-100,001 +6-7%
# (with the write pairs), other rows within 0.3% (round 60).
EVEN_SEGMENTS = True
# Whether the tile kernel's write, with its edge tiles apart (odd 2-byte rows of 57k-131k columns), reads both edge
# tiles and both straddling vectors before it stores any of them. In the sm_90 SASS of 100,001-column fp16 rows
# (Triton 3.6, 64 registers) the write otherwise waits four times in a row for its edges' loads: the first tile,
# the last tile, and each straddling vector; batched, twice (ptxas still splits the two tiles to stay in 64
# registers), with no spills. Loading the first pass's edge tiles together as well compiled to the same serial
# loads and spilled (notes/kernels.md, round 58). Measured off: on the H100 within -0.5 to +0.2% of the serial
# edges at 65,535-131,071 and 100,001 columns (round 60); on the H200 (round 92, notes/probes/2026-11-25-h200-trials-
# knobs.json) +1.3-1.7% for bf16 at 100,001-131,071 but fp16 0.0% there and -0.2 to -0.6% at 65,535. No gain on both
# GPUs or in both 2-byte types, so it stays off.
TILE_EDGE_BATCH = False
# Whether the second pass of the tile and tile-stream kernels (the write: re-read a tile from L2, store its softmax)
# reads its tiles two at a time before it stores either. Each store may alias the next tile's load (nothing tells the
# compiler that x and y do not overlap), so the next load waits behind it: in the sm_90 SASS (Triton 3.6) the write
# loop goes load, load, store, store per tile whatever the unroll, one L2 round trip a tile, 32 KB in flight an SM.
# Paired, it goes four loads then four stores (64 KB), at the same 64 registers and no spills (notes/kernels.md,
# round 59). Measured on the H100 (notes/probes/2026-11-25-h100-knobs.json): +0.4-4.7% on rows of more than 128 KB
# (2-byte 131,071: +4.7%, fp16 1M: +2.9%; fp32 65,536-1M: +0.4-3.9%), but -0.6 to -2.7% on 2-byte rows of 64K (128 KB),
# whose tile kernel is unrolled 4x. So only rows of more than WRITE_PAIRS_ABOVE_ROW_BYTES pair their writes.
TILE_WRITE_PAIRS = True
# The same for the backward's stream kernel, whose second pass reads y and dy and writes dx: in its sm_90 SASS a
# block's four loads then two stores, the next block's loads behind them; paired, eight loads then four stores, at 64
# registers and nothing spilled (fp16 under its cap of 64, fp32 at ptxas's choice). Measured on the H100: -2.6% at
# fp16 65,536 (128 KB rows), -0.6 to +1.5% on whole-vector rows above, so it too pairs only rows of more than 128 KB;
# and only whole-vector rows: at 777,777 columns fp16 lost 2% and fp32 17%, whose one-warp-slots build spills 72
# bytes with the pairs against 8 without (round 60).
STREAM_WRITE_PAIRS = True
# Rows of at most this many bytes (of one tensor) write one tile at a time even where the knobs above are on.
WRITE_PAIRS_ABOVE_ROW_BYTES = 131072
# Exchange programs re-read their row's slots up to this many times (~0.5 us each, an L2 round
# trip) before computing missing partials from the input. Co-resident siblings publish within
# a few microseconds, so this only runs out when they are not running.
EXCHANGE_MAX_POLLS = 4096
# The seeds' one-program-per-row limit (calculate_settings, Unsloth/Liger).
MAX_FUSED_SIZE = 65536
# Seed online variants: fixed block, warps from calculate_settings(ONLINE_BLOCK_SIZE).
ONLINE_BLOCK_SIZE = 4096
# Stand-in SM count on the CPU interpreter: small, so tests reach every table row cheaply and
# the persistent loops really loop.
_INTERPRETER_SM_COUNT = 1
_SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32)

# ----------------------------------------------------------------------------------------------
# Layer 2: host functions on 2-D tensors
# ----------------------------------------------------------------------------------------------


def calculate_settings(n: int) -> tuple[int, int]:
    """Seed 003's (BLOCK_SIZE, num_warps) for a row of n elements held by one program."""
    block_size = triton.next_power_of_2(n)
    if block_size > MAX_FUSED_SIZE:
        raise ValueError(f"n_cols = {n} exceeds the one-program-per-row limit of {MAX_FUSED_SIZE} "
                         f"columns; use online_forward / softmax_forward for longer rows")
    num_warps = 32 if block_size >= 32768 else 16 if block_size >= 8192 else 8 if block_size >= 2048 else 4
    return block_size, num_warps


def _interpreting() -> bool:
    """Whether Triton runs kernels on the CPU interpreter."""
    return os.environ.get("TRITON_INTERPRET") == "1"


def _check_tensor(t: torch.Tensor, name: str) -> None:
    """Reject dtypes and devices the kernels cannot run on, with a message saying what would work."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.dtype not in _SUPPORTED_DTYPES:
        raise TypeError(f"{name} has dtype {t.dtype}; softmax supports float16, bfloat16 and float32")
    if not t.is_cuda and not _interpreting():
        raise RuntimeError(f"{name} is on {t.device}, but these Triton kernels need a CUDA tensor; "
                           f"move it with .cuda(), or set TRITON_INTERPRET=1 before triton is "
                           f"imported to run them on the CPU interpreter (slow, for testing)")


def _as_rows(t: torch.Tensor, name: str) -> torch.Tensor:
    """Check a 2-D operand and give it unit column stride, copying only when it lacks one."""
    _check_tensor(t, name)
    if t.dim() != 2:
        raise ValueError(f"{name} must be 2-D, got shape {tuple(t.shape)}")
    return t if t.stride(1) == 1 or t.shape[1] <= 1 else t.contiguous()


def _new_output(n_rows: int, n_cols: int, like: torch.Tensor) -> torch.Tensor:
    """A fresh contiguous (n_rows, n_cols) result; every kernel path writes all of it."""
    return torch.empty((n_rows, n_cols), dtype=like.dtype, device=like.device)


@functools.lru_cache(maxsize=None)
def _l2_bytes(device: torch.device) -> int:
    """Bytes of L2 on device (the interpreter: 0, the table's rows for any L2)."""
    if device.type != "cuda":
        return 0
    return torch.cuda.get_device_properties(device).L2_cache_size


def _vector_align(element_size: int, *extents: int) -> int:
    """Largest power of two, up to one 16-byte vector of elements, dividing every extent."""
    align = 16 // element_size
    while align > 1 and any(extent % align for extent in extents):
        align //= 2
    return align


@functools.lru_cache(maxsize=None)
def _sm_count(device: torch.device) -> int:
    """Streaming multiprocessors on device (queried on first use, never at import)."""
    if device.type != "cuda":
        return _INTERPRETER_SM_COUNT
    return torch.cuda.get_device_properties(device).multi_processor_count


# The dispatcher's rows kernel marks its loads evict_last in L2, as Inductor's kernels do. On the
# H100, fp32 2K-16K: +0.8% over no policy (2,999-3,003 GB/s against 2,959-2,978), which brings
# torch.compile's 0.4-1.3% lead to 0.4% at 2K-4K and a lead of ours at 8K-16K; evict_first on the
# loads lost 1-2%, a policy on the stores nothing (notes/probes/2026-11-22-h100-rows-evict.json).
ROWS_LOAD_EVICT = "evict_last"
# The row-tiles kernel's loads: evict_last was +1-4% on the H200 and +0.7-1.4% on the H100 for 2-byte rows of
# 6,000-28,000 columns (notes/probes/2026-11-22-h{100,200}-row-tiles-dispatch.json).
ROW_TILES_LOAD_EVICT = "evict_last"


def _select_plan(op: str, n_rows: int, n_cols: int, elem_bytes: int, device: torch.device, align: int,
                 tma: bool = False) -> Plan:
    """First SOFTMAX_PLANS row of op matching the shape, the element size and the alignment (ALIGN,
    in elements: see _vector_align); "tma-stream" rows only where tma (the tensor is _tma_stream_eligible)."""
    sm_count, l2_bytes = _sm_count(device), _l2_bytes(device)
    whole_vectors = align * elem_bytes == 16
    view_rows = n_cols * elem_bytes % TMA_VIEW_ROW_BYTES == 0
    for plan in SOFTMAX_PLANS:
        if (plan.op == op and n_cols <= plan.max_cols and n_rows >= plan.min_rows_per_sm * sm_count
                and plan.elem_bytes in (0, elem_bytes) and l2_bytes >= plan.min_l2_bytes
                and not (plan.whole_vectors and not whole_vectors) and not (plan.partial_vectors and whole_vectors)
                and not (plan.view_rows and not view_rows)
                and not (plan.exact_cols and (n_cols != plan.max_cols or n_rows % plan.rows_per_program))
                and (plan.path != "tma-stream" or tma and _tma_fits(op, plan, n_rows, n_cols, elem_bytes, sm_count))):
            return plan
    raise LookupError(f"SOFTMAX_PLANS has no {op} row for shape ({n_rows}, {n_cols}), {elem_bytes}-byte elements")


def _tma_fits(op: str, plan: Plan, n_rows: int, n_cols: int, elem_bytes: int, sm_count: int) -> bool:
    """Whether a row of plan's tma-stream launch runs all its segments at once on sm_count SMs (gluon_softmax.fits_grid;
    always on the interpreter, which runs programs one after another and never waits)."""
    return _interpreting() or _gluon_softmax().fits_grid(
        op, n_rows, n_cols, elem_bytes, plan.rows_per_program, plan.num_warps, int(plan.segment_bytes),
        plan.programs_per_sm, sm_count, plan.aligned, plan.fill_rounds, plan.register_tiles, plan.lag)


@functools.lru_cache(maxsize=None)
def _gluon_softmax():
    """kernels.gluon_softmax, imported on first use (None where this Triton lacks Gluon's Hopper TMA)."""
    try:
        from kernels import gluon_softmax
    except (ImportError, AttributeError):
        return None
    return gluon_softmax


def _tma_stream_eligible(x: torch.Tensor, op: str = "forward") -> bool:
    """Whether x may take a "tma-stream" row of op: long rows (where the table has one) on a CUDA GPU, not the
    interpreter, that kernels.gluon_softmax can read (its tma_forward_eligible or tma_backward_eligible)."""
    if not (x.shape[1] >= MAX_FUSED_SIZE and x.is_cuda and not _interpreting() and _gluon_softmax() is not None):
        return False
    gluon_softmax = _gluon_softmax()
    return (gluon_softmax.tma_forward_eligible if op == "forward" else gluon_softmax.tma_backward_eligible)(x)


def _max_polls() -> int:
    """Sibling re-reads before an exchange program computes the missing partials itself."""
    # the interpreter runs programs one after another: waiting there is pointless
    return 1 if _interpreting() else EXCHANGE_MAX_POLLS


# compile_facts sets this to a list to collect (kernel, compiled handle, launch kwargs).
_launch_log = None


def _launch(kernel, grid, *args, **kwargs) -> None:
    """kernel[grid](*args, **kwargs), recording the compiled handle while compile_facts listens."""
    handle = kernel[grid](*args, **kwargs)
    if _launch_log is not None:
        _launch_log.append((kernel, handle, kwargs, grid))


def _forward_rows(y, x, rows_per_program, num_warps, align, load_cache="", store_cache="", load_evict="",
                  store_evict="", log2=False):
    """Launch the whole-rows-in-registers forward (log2: exp as exp2 of one FMA, see LOG2E; guarded
    for bfloat16, see _log2_guard)."""
    n_rows, n_cols = x.shape
    _launch(_rows_fwd_kernel, (triton.cdiv(n_rows, rows_per_program),), y, x, x.stride(0), y.stride(0),
            n_rows, n_cols, ROWS_PER_PROGRAM=rows_per_program, BLOCK_SIZE=triton.next_power_of_2(n_cols),
            ALIGN=align, LOAD_CACHE=load_cache, STORE_CACHE=store_cache, LOAD_EVICT=load_evict,
            STORE_EVICT=store_evict, LOG2=log2, GUARD=_log2_guard(x, log2), num_warps=num_warps)


def _forward_rows_lanes(y, x, rows_per_program, num_warps):
    """Launch the Inductor-form forward on rows of a power of two columns, a multiple of rows_per_program of them;
    int32 offsets where every element's offset fits."""
    n_rows, n_cols = x.shape
    offsets_64 = n_rows * max(x.stride(0), y.stride(0), n_cols) >= 2**31
    _launch(_rows_lanes_fwd_kernel, (n_rows // rows_per_program,), y, x, x.stride(0), y.stride(0),
            ROWS_PER_PROGRAM=rows_per_program, BLOCK_SIZE=n_cols, OFFSETS_64=offsets_64, LIBDEVICE=not _interpreting(),
            num_warps=num_warps)


def _log2_exp(x) -> bool:
    """Whether the dispatcher's kernels take exp in the log2 domain for x: the 2-byte types (see LOG2E)."""
    return x.dtype in (torch.float16, torch.bfloat16)


def _log2_guard(x, log2: bool) -> bool:
    """Whether a log2-domain kernel must check for rows whose scaled max overflows: bfloat16 reaches
    3.4e38, float16 only 65504."""
    return log2 and x.dtype == torch.bfloat16


def _forward_row_tiles(y, x, tile, num_warps, align, log2=False, keep_input=False, maxnreg=0, vector_edges=False):
    """Launch the row-tiles forward: one program a row, held as cdiv(n_cols, tile) tiles of tile lanes (in x's own
    type with keep_input, under maxnreg registers a thread if given); with vector_edges, rows that are not whole
    vectors are read in whole vectors where the tensors allow it, on one more vector's lanes (see
    _row_tiles_softmax)."""
    n_rows, n_cols = x.shape
    vec = _exchange_vec(x.element_size(), x, y)
    vector_edges = _vector_edges(align, vec, vector_edges)
    lanes = n_cols + vec - 1 if vector_edges else n_cols
    _launch(_row_tiles_fwd_kernel, (n_rows,), y, x, x.stride(0), y.stride(0), n_cols, N_TILES=triton.cdiv(lanes, tile),
            TILE=tile, ALIGN=align, LOAD_EVICT=ROW_TILES_LOAD_EVICT, LOG2=log2, GUARD=_log2_guard(x, log2),
            KEEP_INPUT=keep_input, PTX=_inline_ptx(x), VEC=vec, VECTOR_EDGES=vector_edges, num_warps=num_warps,
            **({"maxnreg": maxnreg} if maxnreg else {}))


def _forward_online(y, x, block_size, num_warps, n_programs, align):
    """Launch the two-pass online forward on n_programs programs striding over the rows."""
    n_rows, n_cols = x.shape
    _launch(_online_fwd_kernel, (n_programs,), y, x, x.stride(0), y.stride(0), n_rows, n_cols,
            BLOCK_SIZE=block_size, ALIGN=align, num_warps=num_warps)


def _forward_tile_online(y, x, vectors_per_thread, num_warps, programs_per_sm, align, unroll=1, log2=False,
                         vector_edges=False, edges_apart=False):
    """Launch the tile-online forward on a persistent grid striding over the rows; with vector_edges, rows that
    are not whole vectors keep whole-vector accesses where the tensors allow it (see _tile_online_fwd_kernel).

    Registers are capped so that programs_per_sm programs fit an SM together.
    """
    n_rows, n_cols = x.shape
    n_programs = min(n_rows, programs_per_sm * _sm_count(x.device))
    maxnreg = min(255, 65536 // (programs_per_sm * num_warps * 32) // 8 * 8)
    _launch(_tile_online_fwd_kernel, (n_programs,), y, x, x.stride(0), y.stride(0), n_rows, n_cols,
            TILE_ROWS=32 * num_warps * vectors_per_thread, VEC=16 // x.element_size(), ALIGN=align,
            UNROLL=unroll, LOG2=log2, GUARD=_log2_guard(x, log2),
            VECTOR_EDGES=_vector_edges(align, _exchange_vec(x.element_size(), x, y), vector_edges),
            EDGES_APART=edges_apart, EDGE_BATCH=_edge_batch(edges_apart, n_cols, 32 * num_warps * vectors_per_thread,
                                                            x.element_size()),
            WRITE_PAIRS=_write_pairs(TILE_WRITE_PAIRS, n_cols, x.element_size()), num_warps=num_warps,
            maxnreg=maxnreg)


def _write_pairs(knob: bool, n_cols: int, elem_bytes: int) -> bool:
    """Whether a second pass reads two tiles before it stores: knob on, and rows of more than
    WRITE_PAIRS_ABOVE_ROW_BYTES."""
    return bool(knob and n_cols * elem_bytes > WRITE_PAIRS_ABOVE_ROW_BYTES)


def _edge_batch(edges_apart: bool, n_cols: int, tile_rows: int, elem_bytes: int) -> bool:
    """TILE_EDGE_BATCH for a tile launch with its edge tiles apart whose every row holds two tiles or more."""
    return bool(TILE_EDGE_BATCH and edges_apart and n_cols > tile_rows * (16 // elem_bytes))


def _exchange_grid(n_items, n_chunks, num_warps, programs_per_sm, device):
    """(programs, maxnreg) for an exchange launch whose programs are all co-resident.

    The wait for siblings needs them running: programs_per_sm * num_warps warps fit an SM's
    64 warps, and maxnreg caps registers so that many programs fit its 64K registers (the
    kernels use ~1-2 KB of shared memory). Walking items in order, a program waits only on
    items less than one grid ahead when n_chunks <= programs, so the wait chain ends; beyond
    that (or with other kernels sharing the SMs) the bounded spin and fallback keep it correct.
    """
    programs_per_sm = max(1, min(programs_per_sm, 64 // num_warps))
    maxnreg = min(255, 65536 // (programs_per_sm * num_warps * 32) // 8 * 8)
    return min(n_items, programs_per_sm * _sm_count(device)), maxnreg


def _exchange_vec(element_size, *tensors):
    """16-byte vector of elements when the tensors share row stride and 16-byte-aligned bases, else 1."""
    shared = len({t.stride(0) for t in tensors}) == 1 and all(t.data_ptr() % 16 == 0 for t in tensors)
    return 16 // element_size if shared else 1


def _exchange_chunks(n_cols, block_size, align, vec):
    """Chunks per row: rows start up to vec - align elements into their first aligned block."""
    return triton.cdiv(n_cols + vec - min(vec, align), block_size)


def _forward_exchange(y, x, block_size, num_warps, programs_per_sm, align):
    """Launch the one-pass split-row forward on a persistent, co-resident grid."""
    n_rows, n_cols = x.shape
    vec = _exchange_vec(x.element_size(), x, y)
    n_chunks = _exchange_chunks(n_cols, block_size, align, vec)
    slots = torch.zeros(n_rows * n_chunks, dtype=torch.int64, device=x.device)
    n_programs, maxnreg = _exchange_grid(n_rows * n_chunks, n_chunks, num_warps, programs_per_sm, x.device)
    _launch(_exchange_fwd_kernel, (n_programs,), y, x, slots, x.stride(0), y.stride(0), n_rows, n_cols,
            n_chunks, _max_polls(), BLOCK_SIZE=block_size, CHUNKS_BLOCK=triton.next_power_of_2(n_chunks),
            ALIGN=align, VEC=vec, num_warps=num_warps, maxnreg=maxnreg)


def _backward_rows(dx, y, dy, rows_per_program, num_warps, align):
    """Launch the whole-rows-in-registers backward."""
    n_rows, n_cols = y.shape
    _launch(_rows_bwd_kernel, (triton.cdiv(n_rows, rows_per_program),), dx, y, dy, dx.stride(0),
            y.stride(0), dy.stride(0), n_rows, n_cols, ROWS_PER_PROGRAM=rows_per_program,
            BLOCK_SIZE=triton.next_power_of_2(n_cols), ALIGN=align, PTX=_inline_ptx(y), num_warps=num_warps)


def _backward_online(dx, y, dy, block_size, num_warps, n_programs, align):
    """Launch the two-pass backward on n_programs programs striding over the rows."""
    n_rows, n_cols = y.shape
    _launch(_online_bwd_kernel, (n_programs,), dx, y, dy, dx.stride(0), y.stride(0), dy.stride(0),
            n_rows, n_cols, BLOCK_SIZE=block_size, ALIGN=align, num_warps=num_warps)


def _backward_exchange(dx, y, dy, block_size, num_warps, programs_per_sm, align):
    """Launch the one-pass split-row backward on a persistent, co-resident grid."""
    n_rows, n_cols = y.shape
    vec = _exchange_vec(y.element_size(), dx, y, dy)
    n_chunks = _exchange_chunks(n_cols, block_size, align, vec)
    slots = torch.zeros(n_rows * n_chunks, dtype=torch.int64, device=y.device)
    n_programs, maxnreg = _exchange_grid(n_rows * n_chunks, n_chunks, num_warps, programs_per_sm, y.device)
    _launch(_exchange_bwd_kernel, (n_programs,), dx, y, dy, slots, dx.stride(0), y.stride(0), dy.stride(0),
            n_rows, n_cols, n_chunks, _max_polls(), BLOCK_SIZE=block_size,
            CHUNKS_BLOCK=triton.next_power_of_2(n_chunks), ALIGN=align, VEC=vec, num_warps=num_warps,
            maxnreg=maxnreg)


def _resident_per_sm(compiled, num_warps: int, device: torch.device) -> int:
    """How many programs of a compiled kernel one SM holds at once (warps, registers, shared memory)."""
    props = triton.runtime.driver.active.utils.get_device_properties(device.index or 0)
    if hasattr(compiled, "_init_handles"):
        compiled._init_handles()  # n_regs is read from the loaded module
    regs_per_warp = -(-compiled.n_regs * 32 // 256) * 256  # allocated per warp in units of 256
    by_regs = props["max_num_regs"] // max(1, regs_per_warp * num_warps)
    # the opt-in per-block maximum is the SM's shared memory less 1 KB, which each block reserves
    by_shared = (props["max_shared_mem"] + 1024) // (compiled.metadata.shared + 1024)
    return max(1, min(64 // num_warps, 32, by_regs, by_shared))


_RESIDENT_CACHE: dict = {}


class _RowOutgrowsGrid(Exception):
    """A row's segments outnumber the programs that run at once: its waits would be on siblings that are not running.
    Round 159: the H100's stream backward and tile-stream forward ran 30-160x slower at 8M-16M fp32 columns that way
    (and, before round 162, gave wrong outputs). Raised before any launch, with the programs that do run at once, so
    that the dispatcher can cut the row into no more segments than that (_run_forward_plan)."""

    def __init__(self, n_segments: int, programs: int):
        super().__init__(f"{n_segments} segments a row, {programs} programs at once")
        self.programs = programs


def _persistent_programs(kernel, args, kwargs, n_items, n_segments, programs_per_sm, device) -> int:
    """Grid size for a persistent kernel: co-resident, a multiple of n_segments, at most n_items.

    Co-resident so that a program waiting for its row's other segments waits on running programs;
    a multiple of n_segments so that a row's segments run in the same round.
    """
    per_sm = programs_per_sm
    if not _interpreting():
        key = (kernel, device, args[1].dtype, tuple(sorted(kwargs.items())))
        if key not in _RESIDENT_CACHE:
            compiled = kernel.warmup(*args, grid=(1,), **kwargs)
            _RESIDENT_CACHE[key] = _resident_per_sm(compiled, kwargs["num_warps"], device)
        per_sm = min(per_sm, _RESIDENT_CACHE[key])
        if n_segments > per_sm * _sm_count(device):
            raise _RowOutgrowsGrid(n_segments, per_sm * _sm_count(device))
    grid = per_sm * _sm_count(device) // n_segments * n_segments
    return max(n_segments, min(n_items, grid))


def _row_blocks(n_cols, block_size, align, vec, line=False) -> int:
    """Blocks a stream kernel's row spans at most (rows start up to one base alignment, vec or a 128-byte line of
    elements, into their first block)."""
    base = 8 * vec if line else vec
    return triton.cdiv(n_cols + base - min(base, align), block_size)


def _stream_segments(n_cols, elem_bytes, block_size, segment_bytes, align, vec, line=False):
    """(n_segments, blocks_per_segment): a row's blocks (_row_blocks) cut into segments of about segment_bytes."""
    max_blocks = _row_blocks(n_cols, block_size, align, vec, line)
    blocks_per_segment = max(1, int(min(max_blocks, segment_bytes // (block_size * elem_bytes))))
    n_segments = triton.cdiv(max_blocks, blocks_per_segment)
    if EVEN_SEGMENTS:  # as many segments, as even as whole blocks allow (13 blocks: 7 + 6, not 8 + 5)
        blocks_per_segment = triton.cdiv(max_blocks, n_segments)
    return n_segments, blocks_per_segment


def _capped_segments(n_segments, blocks_per_segment, n_blocks, max_segments=0):
    """(n_segments, blocks_per_segment), cut again into at most max_segments (0: no cap) segments of a row of
    n_blocks blocks where it has more: each a longer run of whole blocks."""
    if not max_segments or n_segments <= max_segments:
        return n_segments, blocks_per_segment
    blocks_per_segment = triton.cdiv(n_blocks, max_segments)
    return triton.cdiv(n_blocks, blocks_per_segment), blocks_per_segment


def _few_rows_segment(segment_bytes: float, n_rows: int, row_bytes: int, n_programs: int) -> float:
    """segment_bytes, or less when there are too few rows to give every program a segment."""
    return min(segment_bytes, max(1, row_bytes // triton.cdiv(n_programs, max(1, n_rows))))


def _segments_block(n_segments: int, num_warps: int = 0, one_warp: bool = False, lanes: int = 16) -> int:
    """The slot vector's constexpr width: 1 (no exchange) or a power of two >= lanes (few compiles); with
    one_warp at least one lane per thread of num_warps warps, so that the first warp alone holds, and
    re-reads, the slots (Triton gives every warp a copy of a smaller vector)."""
    return 1 if n_segments == 1 else max(lanes, triton.next_power_of_2(n_segments), 32 * num_warps if one_warp else 0)


def _line_bases(vec: int, block_size: int, *tensors) -> bool:
    """Whether the stream kernels align row bases to 128-byte lines: when a row stride is not a whole number
    of lines, rows start off them, and a warp's 512-byte step would touch 5 lines instead of 4
    (notes/kernels.md, round 21: +4-6% at 777,777 columns on the H200). Bases are offsets from the tensor's
    start, which the CUDA caching allocator puts on a line. Rows whose stride is whole lines keep 16-byte
    bases, whose code is the same as before. Only blocks of a line or more: the shift before a row's start
    must stay inside its first block, the only masked one at that end."""
    return vec > 1 and block_size >= 8 * vec and any((t.stride(0) * t.element_size()) % 128 for t in tensors)


def _inline_ptx(x: torch.Tensor) -> bool:
    """Whether kernels on x may run inline PTX: CUDA tensors, not under the interpreter, not on other GPUs."""
    return bool(x.is_cuda and torch.version.cuda and not _interpreting())


def _poll_sleep_ns(x: torch.Tensor, n_segments: int, one_warp: bool = False) -> int:
    """POLL_SLEEP_NS for rows of POLL_SLEEP_MIN_SEGMENTS segments or more where inline PTX runs, else 0; 0 where
    one warp re-reads the slots (one_warp): the contention the sleep eased is gone (round 33)."""
    return POLL_SLEEP_NS if n_segments >= POLL_SLEEP_MIN_SEGMENTS and _inline_ptx(x) and not one_warp else 0


def _slot_polling(x: torch.Tensor, n_segments: int, num_warps: int, one_warp_from: int, lanes: int = 16) -> dict:
    """The stream kernels' SEGMENTS_BLOCK and POLL_SLEEP for rows of n_segments: one warp re-reads the slots,
    without sleeping, from one_warp_from segments a row (Plan.one_warp_from; 0: never); the slot vector has
    lanes lanes at least (Plan.slot_lanes)."""
    one_warp = 0 < one_warp_from <= n_segments
    return dict(SEGMENTS_BLOCK=_segments_block(n_segments, num_warps, one_warp, lanes),
                POLL_SLEEP=_poll_sleep_ns(x, n_segments, one_warp))


def _wait_prefetch_blocks(x: torch.Tensor, n_segments: int, blocks=None) -> int:
    """Tiles of the next item to prefetch while waiting (TILE_STREAM_WAIT_PREFETCH for x's element size unless
    given): only where rows exchange (several segments) and inline PTX runs (the prefetch is inline PTX), else 0."""
    blocks = TILE_STREAM_WAIT_PREFETCH[x.element_size()] if blocks is None else blocks
    return blocks if n_segments > 1 and _inline_ptx(x) else 0


def _vector_edges(align: int, vec: int, vector_edges=None) -> bool:
    """TILE_STREAM_VECTOR_EDGES (or vector_edges, if given) for rows that are not whole vectors (align < vec); rows
    of whole vectors keep per-element edge masks, which ALIGN already lets the compiler keep whole, and the kernel
    that the vector edges' extra code slowed by 4-13% at fp32 100,000-1M (sweeps of 01e56f5, round 41)."""
    return bool(TILE_STREAM_VECTOR_EDGES if vector_edges is None else vector_edges) and align < vec


def _l2_prefetch_steps(x: torch.Tensor) -> int:
    """TILE_STREAM_PREFETCH where inline PTX runs (the prefetch is inline PTX), else 0."""
    return TILE_STREAM_PREFETCH if _inline_ptx(x) else 0


def _grid_fill(n_rows: int, n_blocks: int, n_segments: int, blocks_per_segment: int, n_programs: int) -> float:
    """The share of a persistent grid's block-steps that a launch of n_rows rows of n_blocks blocks fills, cut in
    n_segments of blocks_per_segment, on n_programs programs: the grid is the largest multiple of n_segments that
    fits, a row's segments run together and wait for the longest, and a group of n_segments programs takes a row a
    round."""
    grid = max(n_segments, min(n_rows * n_segments, n_programs // n_segments * n_segments))
    rounds = triton.cdiv(n_rows, grid // n_segments)
    return n_rows * n_blocks / (rounds * blocks_per_segment * n_programs)


def _tile_stream_layout(y, x, vectors_per_thread, num_warps, programs_per_sm, segment_bytes, align,
                        shorter_segment_bytes=0, max_segments=0):
    """(vec, tile_rows, line, n_segments, blocks_per_segment) of a tile-stream forward from x into y: segments of
    segment_bytes, or of shorter_segment_bytes where they fill the grid SHORTER_SEGMENT_GAIN better (_grid_fill), and
    at most max_segments a row (0: no cap; _capped_segments)."""
    n_rows, n_cols = x.shape
    vec = _exchange_vec(x.element_size(), x, y)
    tile_rows = 32 * num_warps * vectors_per_thread
    line = _line_bases(vec, tile_rows * vec, x, y)
    n_programs = programs_per_sm * _sm_count(x.device)

    def cut(size):
        return _stream_segments(n_cols, x.element_size(), tile_rows * vec,
                                _few_rows_segment(size, n_rows, n_cols * x.element_size(), n_programs), align, vec,
                                line)

    segments = cut(segment_bytes)
    n_blocks = _row_blocks(n_cols, tile_rows * vec, align, vec, line)
    if shorter_segment_bytes:
        shorter = cut(shorter_segment_bytes)
        if (_grid_fill(n_rows, n_blocks, *shorter, n_programs)
                >= SHORTER_SEGMENT_GAIN * _grid_fill(n_rows, n_blocks, *segments, n_programs)):
            segments = shorter
    return vec, tile_rows, line, *_capped_segments(*segments, n_blocks, max_segments)


def _forward_tile_stream(y, x, vectors_per_thread, num_warps, programs_per_sm, segment_bytes, align, unroll=1,
                         log2=False, wait_prefetch=None, one_warp_from=0, kernel=None, vector_edges=None,
                         shorter_segment_bytes=0, max_segments=0):
    """Launch the tile-stream forward (or a probe's copy of its kernel) on a persistent grid of (row, segment)
    items, at most max_segments a row (0: no cap)."""
    kernel = kernel or _tile_stream_fwd_kernel
    n_rows, n_cols = x.shape
    vec, tile_rows, line, n_segments, blocks_per_segment = _tile_stream_layout(
        y, x, vectors_per_thread, num_warps, programs_per_sm, segment_bytes, align, shorter_segment_bytes,
        max_segments)
    slots = torch.zeros(n_rows * n_segments if n_segments > 1 else 1, dtype=torch.int64, device=x.device)
    args = (y, x, slots, x.stride(0), y.stride(0), n_rows, n_cols, n_segments, blocks_per_segment, _max_polls())
    maxnreg = min(255, 65536 // (programs_per_sm * num_warps * 32) // 8 * 8)
    kwargs = dict(TILE_ROWS=tile_rows, ALIGN=align, VEC=vec, UNROLL=unroll, LOG2=log2, GUARD=_log2_guard(x, log2),
                  PREFETCH=_l2_prefetch_steps(x), LINE=line, **_slot_polling(x, n_segments, num_warps, one_warp_from),
                  WAIT_PREFETCH=_wait_prefetch_blocks(x, n_segments, wait_prefetch),
                  VECTOR_EDGES=_vector_edges(align, vec, vector_edges),
                  WRITE_PAIRS=_write_pairs(TILE_WRITE_PAIRS, n_cols, x.element_size()),
                  num_warps=num_warps, maxnreg=maxnreg)
    n_programs = _persistent_programs(kernel, args, kwargs, n_rows * n_segments, n_segments, programs_per_sm,
                                      x.device)
    _launch(kernel, (n_programs,), *args, **kwargs)


def _backward_stream(dx, y, dy, block_size, num_warps, programs_per_sm, num_stages, segment_bytes, align,
                     one_warp_from=0, slot_lanes=16, maxnreg=0, max_segments=0):
    """Launch the two-HBM-pass streaming backward on a persistent grid of (row, segment) items, at most max_segments
    a row (0: no cap)."""
    n_rows, n_cols = y.shape
    vec = _exchange_vec(y.element_size(), dx, y, dy)
    line = _line_bases(vec, block_size, dx, y, dy)
    segment_bytes = _few_rows_segment(segment_bytes, n_rows, n_cols * 2 * y.element_size(),
                                      programs_per_sm * _sm_count(y.device))
    n_segments, blocks_per_segment = _capped_segments(
        *_stream_segments(n_cols, 2 * y.element_size(), block_size, segment_bytes, align, vec, line),
        _row_blocks(n_cols, block_size, align, vec, line), max_segments)
    slots = torch.zeros(n_rows * n_segments if n_segments > 1 else 1, dtype=torch.int64, device=y.device)
    args = (dx, y, dy, slots, dx.stride(0), y.stride(0), dy.stride(0), n_rows, n_cols, n_segments,
            blocks_per_segment, _max_polls())
    kwargs = dict(BLOCK_SIZE=block_size, ALIGN=align, VEC=vec, NUM_STAGES=num_stages, LINE=line,
                  **_slot_polling(y, n_segments, num_warps, one_warp_from, slot_lanes),
                  WRITE_PAIRS=_write_pairs(STREAM_WRITE_PAIRS and align >= vec, n_cols, y.element_size()),
                  num_warps=num_warps, **({"maxnreg": maxnreg} if maxnreg else {}))
    n_programs = _persistent_programs(_stream_bwd_kernel, args, kwargs, n_rows * n_segments, n_segments,
                                      programs_per_sm, y.device)
    _launch(_stream_bwd_kernel, (n_programs,), *args, **kwargs)


def _forward_align(y, x) -> int:
    """ALIGN of a forward from x into y (see _vector_align)."""
    return _vector_align(x.element_size(), x.shape[1], x.stride(0), y.stride(0))


def _backward_align(dx, y, dy) -> int:
    """ALIGN of a backward from (y, dy) into dx."""
    return _vector_align(y.element_size(), y.shape[1], dx.stride(0), y.stride(0), dy.stride(0))


def _launched(launch) -> bool:
    """Whether launch() launched: False where it raised _RowOutgrowsGrid, which it does before any launch."""
    try:
        launch()
    except _RowOutgrowsGrid:
        return False
    return True


def _run_forward_plan(y, x, plan, align):
    """Launch plan's path for the forward. A row longer than its grid holds at once is cut into as many segments as
    run at once where the path streams its segments from global memory (tile-stream: they may be any length), and
    takes OUTGROWN_FORWARD_PLAN where it cannot be (round 163)."""
    try:
        _launch_forward_path(y, x, plan, align)
    except _RowOutgrowsGrid as outgrown:
        if not (plan.path == "tile-stream"
                and _launched(lambda: _launch_forward_path(y, x, plan, align, outgrown.programs))):
            _launch_forward_path(y, x, OUTGROWN_FORWARD_PLAN, align)


def _launch_forward_path(y, x, plan, align, max_segments=0):
    """Launch plan's path for the forward (_RowOutgrowsGrid, before any launch, where its grid cannot hold a row);
    max_segments caps a tile-stream row's segments (0: no cap)."""
    n_rows, n_cols = x.shape
    log2 = _log2_exp(x)
    if plan.path == "rows":
        _forward_rows(y, x, plan.rows_per_program, plan.num_warps, align, load_evict=ROWS_LOAD_EVICT, log2=log2)
    elif plan.path == "rows-lanes":
        _forward_rows_lanes(y, x, plan.rows_per_program, plan.num_warps)
    elif plan.path == "row-tiles":
        _forward_row_tiles(y, x, plan.block_size, plan.num_warps, align, log2, plan.keep_input, plan.maxnreg,
                           vector_edges=True)
    elif plan.path == "online":
        n_programs = min(n_rows, plan.programs_per_sm * _sm_count(x.device))
        _forward_online(y, x, plan.block_size, plan.num_warps, n_programs, align)
    elif plan.path == "tile":
        _forward_tile_online(y, x, plan.rows_per_program, plan.num_warps, plan.programs_per_sm, align, plan.unroll,
                             log2, vector_edges=plan.partial_vectors, edges_apart=plan.edges_apart)
    elif plan.path == "exchange":
        _forward_exchange(y, x, plan.block_size, plan.num_warps, plan.programs_per_sm, align)
    elif plan.path == "tma-stream":
        _gluon_softmax().tma_stream_forward(y, x, plan.rows_per_program, plan.num_warps, plan.segment_bytes,
                                            _max_polls(), plan.tile_loop, launch=_launch,
                                            programs_per_sm=plan.programs_per_sm, aligned=plan.aligned, lag=plan.lag,
                                            rows_dynamic=plan.rows_dynamic)
    else:
        _forward_tile_stream(y, x, plan.rows_per_program, plan.num_warps, plan.programs_per_sm, plan.segment_bytes,
                             align, plan.unroll, log2, one_warp_from=plan.one_warp_from,
                             shorter_segment_bytes=plan.shorter_segment_bytes, max_segments=max_segments)


def _run_backward_plan(dx, y, dy, plan, align):
    """Launch plan's path for the backward; a row longer than its grid holds at once is cut as in _run_forward_plan
    on stream, and takes OUTGROWN_BACKWARD_PLAN where it cannot be."""
    try:
        _launch_backward_path(dx, y, dy, plan, align)
    except _RowOutgrowsGrid as outgrown:
        if not (plan.path == "stream"
                and _launched(lambda: _launch_backward_path(dx, y, dy, plan, align, outgrown.programs))):
            _launch_backward_path(dx, y, dy, OUTGROWN_BACKWARD_PLAN, align)


def _launch_backward_path(dx, y, dy, plan, align, max_segments=0):
    """Launch plan's path for the backward (_RowOutgrowsGrid, before any launch, where its grid cannot hold a row);
    max_segments caps a stream row's segments (0: no cap)."""
    n_rows, n_cols = y.shape
    if plan.path == "rows":
        _backward_rows(dx, y, dy, plan.rows_per_program, plan.num_warps, align)
    elif plan.path == "online":
        n_programs = min(n_rows, plan.programs_per_sm * _sm_count(y.device))
        _backward_online(dx, y, dy, plan.block_size, plan.num_warps, n_programs, align)
    elif plan.path == "exchange":
        _backward_exchange(dx, y, dy, plan.block_size, plan.num_warps, plan.programs_per_sm, align)
    elif plan.path == "tma-stream":
        _gluon_softmax().tma_stream_backward(dx, y, dy, plan.rows_per_program, plan.num_warps, plan.segment_bytes,
                                             _max_polls(), plan.maxnreg, launch=_launch,
                                             programs_per_sm=plan.programs_per_sm, fill_rounds=plan.fill_rounds,
                                             register_tiles=plan.register_tiles, lag=plan.lag)
    else:
        _backward_stream(dx, y, dy, plan.block_size, plan.num_warps, plan.programs_per_sm, plan.num_stages,
                         plan.segment_bytes, align, one_warp_from=plan.one_warp_from, slot_lanes=plan.slot_lanes,
                         maxnreg=plan.maxnreg, max_segments=max_segments)


def softmax_forward(x: torch.Tensor) -> torch.Tensor:
    """Softmax over the last dim of a 2-D tensor, on the SOFTMAX_PLANS path for its shape."""
    x = _as_rows(x, "x")
    y = _new_output(*x.shape, x)
    if x.numel():
        n_rows, n_cols = x.shape
        align = _forward_align(y, x)
        plan = _select_plan("forward", n_rows, n_cols, x.element_size(), x.device, align, _tma_stream_eligible(x))
        _run_forward_plan(y, x, plan, align)
    return y


def _backward_operands(y: torch.Tensor, dy: torch.Tensor):
    """Check (y, dy) for a backward and return them with unit column strides plus a fresh dx."""
    y, dy = _as_rows(y, "y"), _as_rows(dy, "dy")
    if y.shape != dy.shape or y.dtype != dy.dtype:
        raise ValueError(f"y {tuple(y.shape)} {y.dtype} and dy {tuple(dy.shape)} {dy.dtype} must match")
    return y, dy, _new_output(*y.shape, y)


def softmax_backward(y: torch.Tensor, dy: torch.Tensor) -> torch.Tensor:
    """Gradient of softmax given its output y and upstream gradient dy, on the SOFTMAX_PLANS path."""
    y, dy, dx = _backward_operands(y, dy)
    if y.numel():
        align = _backward_align(dx, y, dy)
        tma = _tma_stream_eligible(y, "backward") and _tma_stream_eligible(dy, "backward")
        _run_backward_plan(dx, y, dy, _select_plan("backward", *y.shape, y.element_size(), y.device, align, tma), align)
    return dx


def single_block_forward(x: torch.Tensor) -> torch.Tensor:
    """Seed kernel: one program per row, BLOCK_SIZE = next_power_of_2(n_cols) <= 65536."""
    return _single_block(x, load_cache="", store_cache="")


def single_block_cached_forward(x: torch.Tensor) -> torch.Tensor:
    """Seed kernel with seed 003's cache modifiers: .ca loads, .cs stores."""
    return _single_block(x, load_cache=".ca", store_cache=".cs")


def _single_block(x, load_cache, store_cache):
    """One program per row with calculate_settings' block and warps, no vector-alignment hint."""
    x = _as_rows(x, "x")
    num_warps = calculate_settings(x.shape[1])[1]
    y = _new_output(*x.shape, x)
    if x.numel():
        _forward_rows(y, x, 1, num_warps, 1, load_cache, store_cache)
    return y


def online_forward(x: torch.Tensor) -> torch.Tensor:
    """Seed 003's online softmax: one program per row, ONLINE_BLOCK_SIZE columns per step."""
    x = _as_rows(x, "x")
    y = _new_output(*x.shape, x)
    if x.numel():
        _forward_online(y, x, ONLINE_BLOCK_SIZE, calculate_settings(ONLINE_BLOCK_SIZE)[1], x.shape[0], 1)
    return y


def online_autotuned_forward(x: torch.Tensor) -> torch.Tensor:
    """online_forward with BLOCK_SIZE and num_warps autotuned per n_cols (seed 003's grid)."""
    x = _as_rows(x, "x")
    y = _new_output(*x.shape, x)
    if x.numel():
        n_rows, n_cols = x.shape
        _launch(_online_fwd_autotuned_kernel, (n_rows,), y, x, x.stride(0), y.stride(0), n_rows, n_cols,
                ALIGN=1)
    return y


def single_block_backward(y: torch.Tensor, dy: torch.Tensor) -> torch.Tensor:
    """Seed backward: one program per row holding y and dy, n_cols <= 65536."""
    y, dy, dx = _backward_operands(y, dy)
    num_warps = calculate_settings(y.shape[1])[1]
    if y.numel():
        _backward_rows(dx, y, dy, 1, num_warps, 1)
    return dx


def online_backward(y: torch.Tensor, dy: torch.Tensor) -> torch.Tensor:
    """Multi-block backward: one program per row, two passes of ONLINE_BLOCK_SIZE steps."""
    y, dy, dx = _backward_operands(y, dy)
    if y.numel():
        _backward_online(dx, y, dy, ONLINE_BLOCK_SIZE, calculate_settings(ONLINE_BLOCK_SIZE)[1],
                         y.shape[0], 1)
    return dx


# The one-HBM-pass exchange kernels as a variant of their own, for every dtype and row length
# up to 1M columns, whichever path the dispatcher picks for the shape (the table: one band).
EXCHANGE_FORWARD_PLAN = Plan("forward", 1048576, 0, 0, "exchange", 0, 4096, 8, 4)
EXCHANGE_BACKWARD_PLAN = Plan("backward", 1048576, 0, 0, "exchange", 0, 4096, 8, 2)
# A row that a stream path's grid cannot hold at once even cut into as many segments as run at once (which
# _run_forward_plan and _run_backward_plan try first, round 163; a cut whose new compile runs fewer programs an SM)
# runs on the online path, one program a row in two passes over it, which never waits on another program.
OUTGROWN_FORWARD_PLAN = Plan("forward", math.inf, 0, 0, "online", 0, ONLINE_BLOCK_SIZE, 8, 1)
OUTGROWN_BACKWARD_PLAN = Plan("backward", math.inf, 0, 0, "online", 0, 8192, 32, 1)


def exchange_forward(x: torch.Tensor) -> torch.Tensor:
    """The one-pass split-row forward (chunks in registers, partials exchanged) on any shape."""
    x = _as_rows(x, "x")
    y = _new_output(*x.shape, x)
    if x.numel():
        _run_forward_plan(y, x, EXCHANGE_FORWARD_PLAN, _forward_align(y, x))
    return y


def exchange_backward(y: torch.Tensor, dy: torch.Tensor) -> torch.Tensor:
    """The one-pass split-row backward (y, dy chunks in registers, sum(y * dy) exchanged)."""
    y, dy, dx = _backward_operands(y, dy)
    if y.numel():
        _run_backward_plan(dx, y, dy, EXCHANGE_BACKWARD_PLAN, _backward_align(dx, y, dy))
    return dx


KERNEL_VARIANTS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "softmax": softmax_forward,
    "single_block": single_block_forward,
    "single_block_cached": single_block_cached_forward,
    "online": online_forward,
    "online_autotuned": online_autotuned_forward,
    "exchange": exchange_forward,
}

BACKWARD_VARIANTS: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "softmax_backward": softmax_backward,
    "single_block_backward": single_block_backward,
    "online_backward": online_backward,
    "exchange_backward": exchange_backward,
}


def _read(obj, name):
    """obj.name, or obj[name] for dict-like metadata, or None (names drift between Triton versions)."""
    try:
        return obj[name] if isinstance(obj, dict) else getattr(obj, name, None)
    except Exception:
        return None


def _block_lanes(kwargs: dict):
    """Elements of one program's block, from its launch (or autotuned) constexprs: BLOCK_SIZE; a tile step's
    TILE_ROWS x VEC; a row-tiles row's N_TILES x TILE. None where a kernel has none of these."""
    if kwargs.get("BLOCK_SIZE"):
        return kwargs["BLOCK_SIZE"]
    if kwargs.get("TILE_ROWS") and kwargs.get("VEC"):
        return kwargs["TILE_ROWS"] * kwargs["VEC"]
    if kwargs.get("N_TILES") and kwargs.get("TILE"):
        return kwargs["N_TILES"] * kwargs["TILE"]
    if kwargs.get("TILE"):  # tma-stream: one tile of a segment held in shared memory
        return kwargs["TILE"]
    return None


def _kernel_facts(kernel, handle, launch_kwargs, grid=None) -> dict:
    """Register, spill, shared-memory and launch facts of one compiled kernel: with its grid (programs), where it
    was a tuple, and the compile-time integers and flags it was launched with (its tiles, slots, cuts)."""
    metadata = _read(handle, "metadata")
    block_size = _block_lanes({**(_read(_read(kernel, "best_config"), "kwargs") or {}), **launch_kwargs})
    return {
        "grid": list(grid) if isinstance(grid, tuple) else None,
        "constexprs": {key: value for key, value in sorted(launch_kwargs.items())
                       if key.isupper() and isinstance(value, (bool, int))},
        "kernel": _read(handle, "name") or _read(kernel, "__name__"),
        "n_regs": _read(handle, "n_regs"),
        "n_spills": _read(handle, "n_spills"),
        "shared_bytes": _read(metadata, "shared"),
        "num_warps": _read(metadata, "num_warps"),
        "num_stages": _read(metadata, "num_stages"),
        "block_size": block_size,
    }


def compile_facts(fn_name: str, x: torch.Tensor) -> list[dict]:
    """Run the named variant once on x and describe each kernel it launched ([] under the interpreter).

    fn_name is a KERNEL_VARIANTS key (optionally with "_forward") or a BACKWARD_VARIANTS key; a
    backward runs on y = softmax_forward(x) and a random dy.
    """
    global _launch_log
    if _interpreting():
        return []
    name = fn_name.removesuffix("_forward")
    if name in KERNEL_VARIANTS:
        run = functools.partial(KERNEL_VARIANTS[name], x)
    elif fn_name in BACKWARD_VARIANTS:
        y = softmax_forward(x)
        run = functools.partial(BACKWARD_VARIANTS[fn_name], y, torch.randn_like(y))
    else:
        raise KeyError(f"unknown variant {fn_name!r}; known: {sorted(KERNEL_VARIANTS) + sorted(BACKWARD_VARIANTS)}")
    _launch_log = []
    try:
        run()
        launches = _launch_log
    finally:
        _launch_log = None
    return [_kernel_facts(kernel, handle, kwargs, grid) for kernel, handle, kwargs, grid in launches
            if handle is not None]


# ----------------------------------------------------------------------------------------------
# Layer 3: autograd and the public drop-in
# ----------------------------------------------------------------------------------------------


class _Softmax(torch.autograd.Function):
    """Row softmax of a 2-D tensor with the Triton backward."""

    @staticmethod
    def forward(ctx, x):
        y = softmax_forward(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, dy):
        (y,) = ctx.saved_tensors
        return softmax_backward(y, dy)


def softmax(x: torch.Tensor, dim: int = -1, dtype: torch.dtype | None = None) -> torch.Tensor:
    """Drop-in for torch.softmax(x, dim, dtype=dtype) on float16/bfloat16/float32 CUDA tensors, with autograd: as in
    torch, dtype (one of those three) casts x before the softmax, so the result has that dtype."""
    if dtype is not None:
        if dtype not in _SUPPORTED_DTYPES:
            raise TypeError(f"dtype={dtype} is not supported; softmax supports float16, bfloat16 and float32")
        if isinstance(x, torch.Tensor):
            x = x.to(dtype)  # differentiable: the gradient reaches x in its own dtype
    _check_tensor(x, "x")
    n_dims = max(x.dim(), 1)  # a 0-d tensor has one softmax dim, -1 or 0, as in torch
    if not -n_dims <= dim < n_dims:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n_dims}, {n_dims - 1}], "
                         f"but got {dim})")
    dim %= n_dims
    # softmax dim last, everything else flattened into rows (Liger-Kernel style)
    moved = x.reshape(1) if x.dim() == 0 else x.movedim(dim, -1)
    rows = moved.reshape(math.prod(moved.shape[:-1]), moved.shape[-1])
    y = _Softmax.apply(rows).reshape(moved.shape)
    return y.reshape(()) if x.dim() == 0 else y.movedim(-1, dim)
