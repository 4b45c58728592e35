"""Probe (round 71): tile-stream items finished one step late, in segments that let two fit L1.

Exploration, not evidence. Round 28 finished each item after the next item's first pass (LAG), so that a row's
siblings had a whole pass of slack before anyone waited on them, and missed: with 128-256 KB segments the lagged
segment had left the cache by its second pass. Rounds 65-66 since found that what serves pass 2 is L1 (256 KB an SM,
shared memory included), not L2: two 128 KB segments were just over it, as one 256 KB segment was before round 66.
This builds the working tree's module with a lagged copy of _tile_stream_fwd_kernel and times it in segments of 96-120
KB (two fit L1) beside the dispatcher, and the same segments without lag, every element checked against float64 first.

    python scripts/probe_lag_l1.py [lag]        # on a CUDA machine; $OUT/probe_lag_l1.json
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_ab import module_from_source  # noqa: E402
from probe_long_rows import forward_configs_probe, run_probes, sm  # noqa: E402

LAG_KERNEL = '''

@triton.jit
def _tile_stream_lag_fwd_kernel(output_ptr, input_ptr, slots_ptr, input_row_stride, output_row_stride, n_rows,
                                n_cols, n_segments, blocks_per_segment, max_polls, TILE_ROWS: tl.constexpr,
                                SEGMENTS_BLOCK: tl.constexpr, ALIGN: tl.constexpr, VEC: tl.constexpr,
                                UNROLL: tl.constexpr, LOG2: tl.constexpr = False, GUARD: tl.constexpr = False,
                                PREFETCH: tl.constexpr = 0, LINE: tl.constexpr = False, POLL_SLEEP: tl.constexpr = 0,
                                WAIT_PREFETCH: tl.constexpr = 0, VECTOR_EDGES: tl.constexpr = False,
                                WRITE_PAIRS: tl.constexpr = False):
    """_tile_stream_fwd_kernel for rows of two segments or more, each item written after the next item's first
    pass: step k publishes item k's partial, then waits for item k - 1's siblings and writes it. (WAIT_PREFETCH is
    taken and ignored: the next item's pass 1 is what runs while the siblings catch up.)"""
    n_cols = n_cols // ALIGN * ALIGN
    input_row_stride = input_row_stride // ALIGN * ALIGN
    output_row_stride = output_row_stride // ALIGN * ALIGN
    n_items = n_rows * n_segments
    for item in range(tl.program_id(0), n_items + tl.num_programs(0), tl.num_programs(0)):
        if item < n_items:
            row, in_base, out_base, first_col, n_blocks, first_block, end_block = _segment_item(
                item, n_segments, blocks_per_segment, input_row_stride, output_row_stride, n_cols, TILE_ROWS * VEC,
                VEC, LINE)
            segment_max, segment_sum = _tile_segment_max_sum(input_ptr, in_base, first_col, n_cols, n_blocks,
                                                             first_block, end_block, TILE_ROWS, VEC, UNROLL, LOG2,
                                                             PREFETCH, VECTOR_EDGES)
            tl.atomic_xchg(slots_ptr + item, _pack(segment_max, segment_sum), sem="relaxed")
        last = item - tl.num_programs(0)
        if last >= 0:
            row, in_base, out_base, first_col, n_blocks, first_block, end_block = _segment_item(
                last, n_segments, blocks_per_segment, input_row_stride, output_row_stride, n_cols, TILE_ROWS * VEC,
                VEC, LINE)
            packed, in_row = _row_partials(input_ptr, slots_ptr, in_base, first_col, n_cols, n_blocks, row,
                                           n_segments, blocks_per_segment, max_polls, SEGMENTS_BLOCK, TILE_ROWS, VEC,
                                           UNROLL, LOG2, POLL_SLEEP)
            row_max, inv_row_sum = _combine_partials(packed, in_row, LOG2)
            scale = LOG2E
            if GUARD:  # as _tile_stream_fwd_kernel
                natural = tl.abs(row_max) == float("inf")
                if natural:
                    row_max, row_sum = _tile_segment_max_sum(input_ptr, in_base, first_col, n_cols, n_blocks, 0,
                                                             n_blocks, TILE_ROWS, VEC, UNROLL)
                    inv_row_sum = 1.0 / row_sum
                scale = _guard_scale(natural)
            _tile_segment_write(output_ptr, input_ptr, out_base, in_base, first_col, n_cols, n_blocks, first_block,
                                end_block, row_max, inv_row_sum, TILE_ROWS, VEC, UNROLL, LOG2, scale, VECTOR_EDGES,
                                WRITE_PAIRS=WRITE_PAIRS)
'''

SEGMENT_KB = [96, 112, 120]


def lag_module():
    """The working tree's module with _tile_stream_lag_fwd_kernel added."""
    return module_from_source("triton_softmax_lag_l1", Path(sm.__file__).read_text() + LAG_KERNEL)


def stream_forward(module, segment_kb: int, lag: bool):
    """The table's tile-stream launch (2 vectors x 32 warps, one program an SM) in segments of segment_kb, lagged
    or not; rows of one segment run unlagged (the lagged kernel needs siblings)."""
    def run(x):
        y = module.torch.empty_like(x)
        align = module._forward_align(y, x)
        layout = module._tile_stream_layout(y, x, 2, 32, 1, segment_kb * 1024, align)
        kernel = module._tile_stream_lag_fwd_kernel if lag and layout[3] > 1 else None
        module._forward_tile_stream(y, x, 2, 32, 1, segment_kb * 1024, align, 1, module._log2_exp(x),
                                    one_warp_from=2 if x.element_size() == 2 else 0, kernel=kernel)
        return y
    return run


def lag_probe(out: list) -> None:
    """Lagged tile-stream in segments of SEGMENT_KB, and unlagged at 112 KB, against the dispatcher."""
    module = lag_module()
    variants = [(f"lag, {kb} KB segments", stream_forward(module, kb, True)) for kb in SEGMENT_KB]
    variants.append(("no lag, 112 KB segments", stream_forward(module, 112, False)))
    forward_configs_probe("lag-l1", [262144, 524288, 777777, 1048576], variants, out, ["float32"])
    forward_configs_probe("lag-l1", [262144, 524288, 1048576], variants, out, ["float16"])
    forward_configs_probe("lag-l1", [1048576], variants, out, ["bfloat16"])


if __name__ == "__main__":
    run_probes({"lag": lag_probe}, sys.argv[1:] or ["lag"], "probe_lag_l1.json")
