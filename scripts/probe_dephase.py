"""Probe: tile-stream with half of its programs one pass behind the other half (round 13).

Exploration for tuning SOFTMAX_PLANS, not evidence (run artifacts come only from build.py --run).
In tile-stream every program reads a segment (pass 1), waits for its row's other segments, then
re-reads it from L2 and writes it (pass 2). A row's segments wait for one another and all
programs start together, so the whole GPU reads, then writes, then reads: HBM sees one direction
at a time. Here the programs of the second half of the grid run their pass 2 one item late
(pass 1 of item k, then pass 2 of item k - 1), so that while one half reads from HBM the other
writes to it, as a copy does. A row's segments all fall in one half, so no row waits on the other.
Every variant is checked against float64 on every element first, then timed like build.py --run.

    python scripts/probe_dephase.py     # on a CUDA machine; $OUT/probe_dephase.json when OUT is set
"""
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from kernels import triton_softmax as sm  # noqa: E402
from kernels.triton_softmax import (_combine_partials, _pack, _row_partials,  # noqa: E402
                                    _tile_segment_max_sum, _tile_segment_write)
from probe_long_rows import forward_configs_probe, run_probes, tile_stream_forward  # noqa: E402
from probe_passes import _item_span  # noqa: E402  (row, bases, first and end block of an item)


@triton.jit
def _dephased_stream_kernel(output_ptr, input_ptr, slots_ptr, input_row_stride, output_row_stride, n_rows, n_cols,
                            n_segments, blocks_per_segment, max_polls, TILE_ROWS: tl.constexpr,
                            SEGMENTS_BLOCK: tl.constexpr, ALIGN: tl.constexpr, VEC: tl.constexpr,
                            UNROLL: tl.constexpr, DEPHASE: tl.constexpr):
    """tile-stream (n_segments > 1) where, with DEPHASE, the grid's second half writes one item late."""
    n_cols = n_cols // ALIGN * ALIGN
    input_row_stride = input_row_stride // ALIGN * ALIGN
    output_row_stride = output_row_stride // ALIGN * ALIGN
    pid = tl.program_id(0)
    n_programs = tl.num_programs(0)
    n_items = n_rows * n_segments
    n_steps = tl.cdiv(n_items - pid, n_programs)
    lag = 0
    if DEPHASE:  # the second half of the grid writes one step late, so it takes one step more
        lag = tl.where(pid >= n_programs // 2, n_programs, 0)
        n_steps += (lag > 0).to(tl.int32)
    for k in range(0, n_steps):
        item = pid + k * n_programs
        if item < n_items:  # pass 1 of this item: its segment's (max, sum), published
            row, in_base, out_base, first_col, n_blocks, first_block, end_block = _item_span(
                item, n_segments, blocks_per_segment, input_row_stride, output_row_stride, n_cols, TILE_ROWS, VEC)
            segment_max, segment_sum = _tile_segment_max_sum(input_ptr, in_base, first_col, n_cols, n_blocks,
                                                             first_block, end_block, TILE_ROWS, VEC, UNROLL)
            tl.atomic_xchg(slots_ptr + item, _pack(segment_max, segment_sum), sem="relaxed")
        done = item - lag  # pass 2 of this item (or, lagging, of the one before)
        if (done >= pid) & (done < n_items):
            row, in_base, out_base, first_col, n_blocks, first_block, end_block = _item_span(
                done, n_segments, blocks_per_segment, input_row_stride, output_row_stride, n_cols, TILE_ROWS, VEC)
            packed, in_row = _row_partials(input_ptr, slots_ptr, in_base, first_col, n_cols, n_blocks, row, n_segments,
                                           blocks_per_segment, max_polls, SEGMENTS_BLOCK, TILE_ROWS, VEC, UNROLL)
            row_max, inv_row_sum = _combine_partials(packed, in_row)
            _tile_segment_write(output_ptr, input_ptr, out_base, in_base, first_col, n_cols, n_blocks, first_block,
                                end_block, row_max, inv_row_sum, TILE_ROWS, VEC, UNROLL)


def dephased_forward(config):
    """A forward callable for (vectors per thread, warps, programs per SM, segment bytes, dephase)."""
    vectors, warps, progs, segment_bytes, dephase = config

    def run(x):
        y = torch.empty_like(x)
        n_rows, n_cols = x.shape
        align = sm._vector_align(x.element_size(), n_cols, x.stride(0), y.stride(0))
        vec = sm._exchange_vec(x.element_size(), x, y)
        tile_rows = 32 * warps * vectors
        n_segments, blocks_per_segment = sm._stream_segments(n_cols, x.element_size(), tile_rows * vec,
                                                             segment_bytes, align, vec)
        if n_segments == 1:  # this kernel always exchanges: two half-row segments
            n_segments, blocks_per_segment = 2, triton.cdiv(blocks_per_segment, 2)
        slots = torch.zeros(n_rows * n_segments, dtype=torch.int64, device=x.device)
        args = (y, x, slots, x.stride(0), y.stride(0), n_rows, n_cols, n_segments, blocks_per_segment,
                sm._max_polls())
        maxnreg = min(255, 65536 // (progs * warps * 32) // 8 * 8)
        kwargs = dict(TILE_ROWS=tile_rows, SEGMENTS_BLOCK=sm._segments_block(n_segments), ALIGN=align, VEC=vec,
                      UNROLL=1, DEPHASE=dephase, num_warps=warps, maxnreg=maxnreg)
        # Both halves publish pass 1 of step k at step k (only the late half's pass 2 lags), so a row
        # may span the halves; a grid of whole rows keeps a row's segments in one step.
        n_programs = sm._persistent_programs(_dephased_stream_kernel, args, kwargs, n_rows * n_segments, n_segments,
                                             progs, x.device)
        sm._launch(_dephased_stream_kernel, (n_programs,), *args, **kwargs)
        return y
    return run


# (vectors per thread, warps, programs per SM, segment bytes, dephase); (2, 32, 1, 256 KB) is the
# dispatcher's tile-stream config. A lagging program holds two segments in L2: 128 KB ones keep the
# grid's footprint near 25 MB.
DEPHASE_CONFIGS = [(2, 32, 1, 262144, False), (2, 32, 1, 262144, True), (2, 32, 1, 131072, False),
                   (2, 32, 1, 131072, True), (2, 32, 1, 65536, True)]
NS = [131072, 262144, 777777, 1048576]


def variants():
    """(label, forward) per config, and the product's tile-stream."""
    return ([("tile-stream (2, 32, 1, 262144, 1)", tile_stream_forward((2, 32, 1, 262144, 1)))]
            + [(f"dephase {c}", dephased_forward(c)) for c in DEPHASE_CONFIGS])


if __name__ == "__main__":
    run_probes({"dephase": lambda out: forward_configs_probe("dephase", NS, variants(), out)}, ["dephase"],
               "probe_dephase.json")
