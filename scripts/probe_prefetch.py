"""Probe: tile-stream with its next tile's load issued before this tile's arithmetic (round 10).

Exploration for tuning SOFTMAX_PLANS, not evidence (run artifacts come only from build.py --run).
tile-stream's loops load a [TILE_ROWS, VEC] tile, then reduce it (pass 1) or write it (pass 2);
a warp has no load in flight while it computes. Here each loop carries the next tile, loaded
before the current one is used (double-buffering in registers). Every variant is checked against
float64 on every element first, then timed like build.py --run, beside a copy of the same bytes.

    python scripts/probe_prefetch.py [long|mid]   # on a CUDA machine; $OUT/probe_prefetch.json
"""
import sys
from pathlib import Path

import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from kernels import triton_softmax as sm  # noqa: E402
from kernels.triton_softmax import (_await_row, _combine_partials, _holds_last_block, _pack,  # noqa: E402
                                    _segment_item, _tile_edge, _vector_online)
from probe_long_rows import (forward_configs_probe, launch_tile_stream_like, run_probes,  # noqa: E402
                             tile_stream_forward)


@triton.jit
def _prefetch_max_sum(input_ptr, in_base, first_col, n_cols, n_blocks, first_block, end_block,
                      TILE_ROWS: tl.constexpr, VEC: tl.constexpr):
    """_tile_segment_max_sum with tile block + 1 loaded before tile block is reduced."""
    tile = tl.arange(0, TILE_ROWS)[:, None] * VEC + tl.arange(0, VEC)[None, :]
    vec_max = tl.full([TILE_ROWS], float("-inf"), tl.float32)
    vec_sum = tl.zeros([TILE_ROWS], tl.float32)
    lo = tl.maximum(first_block, 1)
    hi = tl.minimum(end_block, n_blocks - 1)
    x_next = tl.load(input_ptr + in_base + lo * (TILE_ROWS * VEC) + tile, mask=lo < hi, eviction_policy="evict_last")
    for block in range(lo, hi):
        x = x_next
        x_next = tl.load(input_ptr + in_base + (block + 1) * (TILE_ROWS * VEC) + tile,
                         mask=block + 1 < hi, eviction_policy="evict_last")
        vec_max, vec_sum = _vector_online(vec_max, vec_sum, x.to(tl.float32))
    if first_block == 0:
        offsets, mask = _tile_edge(first_col, n_cols, 0, TILE_ROWS, VEC)
        x = tl.load(input_ptr + in_base + offsets, mask=mask, other=float("-inf"))
        vec_max, vec_sum = _vector_online(vec_max, vec_sum, x.to(tl.float32))
    if _holds_last_block(first_block, end_block, n_blocks):
        offsets, mask = _tile_edge(first_col, n_cols, n_blocks - 1, TILE_ROWS, VEC)
        x = tl.load(input_ptr + in_base + offsets, mask=mask, other=float("-inf"))
        vec_max, vec_sum = _vector_online(vec_max, vec_sum, x.to(tl.float32))
    segment_max = tl.max(vec_max, axis=0)
    safe_max = tl.where(segment_max == float("-inf"), 0.0, segment_max)
    return segment_max, tl.sum(vec_sum * tl.exp(vec_max - safe_max), axis=0)


@triton.jit
def _prefetch_write(output_ptr, input_ptr, out_base, in_base, first_col, n_cols, n_blocks, first_block,
                    end_block, row_max, inv_row_sum, TILE_ROWS: tl.constexpr, VEC: tl.constexpr):
    """_tile_segment_write with the next tile (last to first) loaded before this one is written."""
    tile = tl.arange(0, TILE_ROWS)[:, None] * VEC + tl.arange(0, VEC)[None, :]
    lo = tl.maximum(first_block, 1)
    hi = tl.minimum(end_block, n_blocks - 1)
    x_next = tl.load(input_ptr + in_base + (hi - 1) * (TILE_ROWS * VEC) + tile, mask=lo < hi, eviction_policy="evict_first")
    for k in range(0, hi - lo):
        x = x_next
        x_next = tl.load(input_ptr + in_base + (hi - 2 - k) * (TILE_ROWS * VEC) + tile,
                         mask=k + 1 < hi - lo, eviction_policy="evict_first")
        offsets = (hi - 1 - k) * (TILE_ROWS * VEC) + tile
        tl.store(output_ptr + out_base + offsets,
                 (tl.exp(x.to(tl.float32) - row_max) * inv_row_sum).to(output_ptr.dtype.element_ty),
                 cache_modifier=".cs")
    for edge in tl.static_range(2):
        block = 0 if edge == 0 else n_blocks - 1
        if (first_block == 0) if edge == 0 else _holds_last_block(first_block, end_block, n_blocks):
            offsets, mask = _tile_edge(first_col, n_cols, block, TILE_ROWS, VEC)
            x = tl.load(input_ptr + in_base + offsets, mask=mask, other=float("-inf")).to(tl.float32)
            tl.store(output_ptr + out_base + offsets,
                     (tl.exp(x - row_max) * inv_row_sum).to(output_ptr.dtype.element_ty), mask=mask)


@triton.jit(noinline=True)
def _publish_missing(input_ptr, slots_ptr, in_base, first_col, n_cols, n_blocks, row, n_segments,
                     blocks_per_segment, TILE_ROWS: tl.constexpr, VEC: tl.constexpr, UNROLL: tl.constexpr):
    """The exchange's cold path, as a real call: publish every sibling segment still missing, computed here."""
    for sibling in range(0, n_segments):
        slot = slots_ptr + row * n_segments + sibling
        if tl.load(slot, volatile=True) == 0:
            s_first = sibling * blocks_per_segment
            s_max, s_sum = sm._tile_segment_max_sum(input_ptr, in_base, first_col, n_cols, n_blocks, s_first,
                                                    tl.minimum(s_first + blocks_per_segment, n_blocks),
                                                    TILE_ROWS, VEC, UNROLL)
            tl.atomic_xchg(slot, _pack(s_max, s_sum), sem="relaxed")


@triton.jit
def _prefetch_stream_kernel(output_ptr, input_ptr, slots_ptr, input_row_stride, output_row_stride, n_rows, n_cols,
                            n_segments, blocks_per_segment, max_polls, TILE_ROWS: tl.constexpr,
                            SEGMENTS_BLOCK: tl.constexpr, ALIGN: tl.constexpr, VEC: tl.constexpr,
                            UNROLL: tl.constexpr, PREFETCH1: tl.constexpr, PREFETCH2: tl.constexpr,
                            NOINLINE: tl.constexpr = False):
    """_tile_stream_fwd_kernel with prefetching pass 1 (PREFETCH1) and/or pass 2 (PREFETCH2)."""
    n_cols = n_cols // ALIGN * ALIGN
    input_row_stride = input_row_stride // ALIGN * ALIGN
    output_row_stride = output_row_stride // ALIGN * ALIGN
    for item in range(tl.program_id(0), n_rows * n_segments, tl.num_programs(0)):
        row, in_base, out_base, first_col, n_blocks, first_block, end_block = _segment_item(
            item, n_segments, blocks_per_segment, input_row_stride, output_row_stride, n_cols, TILE_ROWS * VEC, VEC)
        if PREFETCH1:
            segment_max, segment_sum = _prefetch_max_sum(input_ptr, in_base, first_col, n_cols, n_blocks,
                                                         first_block, end_block, TILE_ROWS, VEC)
        else:
            segment_max, segment_sum = sm._tile_segment_max_sum(input_ptr, in_base, first_col, n_cols, n_blocks,
                                                                first_block, end_block, TILE_ROWS, VEC, UNROLL)
        if SEGMENTS_BLOCK == 1:
            row_max = segment_max
            inv_row_sum = 1.0 / (segment_sum * tl.exp(segment_max - row_max))
        else:
            tl.atomic_xchg(slots_ptr + item, _pack(segment_max, segment_sum), sem="relaxed")
            if NOINLINE:
                packed, n_missing, in_row = _await_row(slots_ptr, row, n_segments, max_polls, SEGMENTS_BLOCK)
                if n_missing > 0:
                    _publish_missing(input_ptr, slots_ptr, in_base, first_col, n_cols, n_blocks, row, n_segments,
                                     blocks_per_segment, TILE_ROWS, VEC, UNROLL)
                    packed = tl.load(slots_ptr + row * n_segments + tl.arange(0, SEGMENTS_BLOCK), mask=in_row,
                                     other=-1, volatile=True)
            else:
                packed, in_row = sm._row_partials(input_ptr, slots_ptr, in_base, first_col, n_cols, n_blocks, row,
                                                  n_segments, blocks_per_segment, max_polls, SEGMENTS_BLOCK,
                                                  TILE_ROWS, VEC, UNROLL)
            row_max, inv_row_sum = _combine_partials(packed, in_row)
        if PREFETCH2:
            _prefetch_write(output_ptr, input_ptr, out_base, in_base, first_col, n_cols, n_blocks, first_block,
                            end_block, row_max, inv_row_sum, TILE_ROWS, VEC)
        else:
            sm._tile_segment_write(output_ptr, input_ptr, out_base, in_base, first_col, n_cols, n_blocks,
                                   first_block, end_block, row_max, inv_row_sum, TILE_ROWS, VEC, UNROLL)


def prefetch_forward(config):
    """A forward callable for (vectors, warps, programs per SM, segment bytes, prefetch pass 1, pass 2)."""
    vectors, warps, progs, segment_bytes, prefetch1, prefetch2, *noinline = config

    def run(x):
        return launch_tile_stream_like(_prefetch_stream_kernel, x, vectors, warps, progs, segment_bytes, UNROLL=1,
                                       PREFETCH1=prefetch1, PREFETCH2=prefetch2,
                                       NOINLINE=bool(noinline and noinline[0]))
    return run


# (vectors per thread, warps, programs per SM, segment bytes, prefetch pass 1, prefetch pass 2).
# (2, 32, 1, 256 KB) is the dispatcher's tile-stream config; 16-warp programs get 128 registers.
PREFETCH_CONFIGS = [
    (2, 32, 1, 262144, True, True), (2, 32, 1, 262144, True, False), (2, 32, 1, 262144, False, True),
    (1, 32, 1, 262144, True, True), (1, 32, 2, 131072, True, True),
    (2, 16, 1, 262144, True, True), (4, 16, 1, 262144, True, True), (4, 16, 1, 262144, False, False),
    (8, 16, 1, 262144, False, False), (4, 16, 2, 131072, True, True),
]
LONG_NS = [131072, 262144, 777777, 1048576]
MID_NS = [65536, 100000]


def variants():
    """(label, forward) per config, plus the product's tile-stream kernel at its own config."""
    return ([("tile-stream (2, 32, 1, 262144, 1)", tile_stream_forward((2, 32, 1, 262144, 1)))]
            + [(f"prefetch {c}", prefetch_forward(c)) for c in PREFETCH_CONFIGS])


# Round 12: 64 warps an SM need 32 registers; the exchange's cold path, inlined, makes the
# 1-vector, 2-program config spill 14-16. As a real call it may not.
NOINLINE_CONFIGS = [
    (1, 32, 2, 131072, False, False, True), (1, 32, 2, 131072, True, True, True),
    (1, 32, 2, 65536, False, False, True), (2, 32, 1, 262144, False, False, True),
    (1, 16, 4, 65536, False, False, True), (1, 32, 2, 131072, False, False, False),
]


def noinline_variants():
    """(label, forward) per round-12 config, and the product's tile-stream."""
    return ([("tile-stream (2, 32, 1, 262144, 1)", tile_stream_forward((2, 32, 1, 262144, 1)))]
            + [(f"noinline {c}", prefetch_forward(c)) for c in NOINLINE_CONFIGS])


PROBES = {"noinline": lambda out: forward_configs_probe("noinline", LONG_NS, noinline_variants(), out),
          "long": lambda out: forward_configs_probe("prefetch", LONG_NS, variants(), out),
          "mid": lambda out: forward_configs_probe("prefetch-mid", MID_NS, variants(), out)}


if __name__ == "__main__":
    run_probes(PROBES, sys.argv[1:] or ["long"], "probe_prefetch.json")
