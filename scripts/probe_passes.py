"""Probe: which pass of tile-stream holds long rows back? Each pass timed on its own.

Diagnostic, not evidence. On the shapes where tile-stream stops at 60-80% of copy it times:
  pass1   - the reading pass alone (segment max and sum, written to a slot; 1 tensor of HBM reads);
  pass2   - the writing pass alone, from HBM rather than L2 (y = exp(x); a copy's traffic);
  full    - tile-stream as the dispatcher runs it;
  unrolled pass 1 - tile-stream with pass 1's loop unrolled 2x or 4x and pass 2's not,
and a device copy of the same bytes. If pass 1 alone falls well short of the copy's rate, the
reading pass (loads in flight) is the limit; if pass 2 does, the write side is.
Every full variant is checked against float64 on every element first.

    python scripts/probe_passes.py     # on a CUDA machine; $OUT/probe_passes.json when OUT is set
"""
import json
import os
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from kernels import triton_softmax as sm  # noqa: E402
from kernels.triton_softmax import (_combine_partials, _pack, _row_partials,  # noqa: E402
                                    _tile_segment_max_sum, _tile_segment_write)

VECTORS, WARPS, PROGRAMS, SEGMENT = 2, 32, 1, 262144  # the dispatcher's tile-stream config


@triton.jit
def _pass1_kernel(input_ptr, slots_ptr, input_row_stride, n_rows, n_cols, n_segments, blocks_per_segment,
                  TILE_ROWS: tl.constexpr, VEC: tl.constexpr, UNROLL: tl.constexpr):
    """Pass 1 alone: each (row, segment) item's (max, sum) into its slot."""
    for item in range(tl.program_id(0), n_rows * n_segments, tl.num_programs(0)):
        row, in_base, out_base, first_col, n_blocks, first_block, end_block = sm._segment_item(
            item, n_segments, blocks_per_segment, input_row_stride, input_row_stride, n_cols, TILE_ROWS * VEC, VEC)
        m, s = _tile_segment_max_sum(input_ptr, in_base, first_col, n_cols, n_blocks, first_block, end_block,
                                     TILE_ROWS, VEC, UNROLL)
        tl.store(slots_ptr + item, _pack(m, s))


@triton.jit
def _pass2_kernel(output_ptr, input_ptr, input_row_stride, n_rows, n_cols, n_segments, blocks_per_segment,
                  TILE_ROWS: tl.constexpr, VEC: tl.constexpr, UNROLL: tl.constexpr):
    """Pass 2 alone: y = exp(x) over each item, read from HBM."""
    for item in range(tl.program_id(0), n_rows * n_segments, tl.num_programs(0)):
        row, in_base, out_base, first_col, n_blocks, first_block, end_block = sm._segment_item(
            item, n_segments, blocks_per_segment, input_row_stride, input_row_stride, n_cols, TILE_ROWS * VEC, VEC)
        _tile_segment_write(output_ptr, input_ptr, out_base, in_base, first_col, n_cols, n_blocks, first_block,
                            end_block, 0.0, 1.0, TILE_ROWS, VEC, UNROLL)


@triton.jit
def _split_unroll_kernel(output_ptr, input_ptr, slots_ptr, input_row_stride, output_row_stride, n_rows, n_cols,
                         n_segments, blocks_per_segment, max_polls, TILE_ROWS: tl.constexpr,
                         SEGMENTS_BLOCK: tl.constexpr, VEC: tl.constexpr, UNROLL1: tl.constexpr,
                         UNROLL2: tl.constexpr):
    """tile-stream (contiguous rows, no fallback tuning) with each pass's unroll set apart."""
    for item in range(tl.program_id(0), n_rows * n_segments, tl.num_programs(0)):
        row, in_base, out_base, first_col, n_blocks, first_block, end_block = sm._segment_item(
            item, n_segments, blocks_per_segment, input_row_stride, output_row_stride, n_cols, TILE_ROWS * VEC, VEC)
        m, s = _tile_segment_max_sum(input_ptr, in_base, first_col, n_cols, n_blocks, first_block, end_block,
                                     TILE_ROWS, VEC, UNROLL1)
        tl.atomic_xchg(slots_ptr + item, _pack(m, s), sem="relaxed")
        packed, in_row = _row_partials(input_ptr, slots_ptr, in_base, first_col, n_cols, n_blocks, row, n_segments,
                                       blocks_per_segment, max_polls, SEGMENTS_BLOCK, TILE_ROWS, VEC, UNROLL1)
        row_max, inv_row_sum = _combine_partials(packed, in_row)
        _tile_segment_write(output_ptr, input_ptr, out_base, in_base, first_col, n_cols, n_blocks, first_block,
                            end_block, row_max, inv_row_sum, TILE_ROWS, VEC, UNROLL2)


@triton.jit
def _read_only_kernel(input_ptr, slots_ptr, input_row_stride, n_rows, n_cols, n_segments, blocks_per_segment,
                      TILE_ROWS: tl.constexpr, VEC: tl.constexpr, WORK: tl.constexpr):
    """Pass 1's loads with less work per element: WORK 0 sums x, 1 takes its max, 2 is _vector_online
    but with the max taken in the input's own type before converting (exact: a max only selects)."""
    tile = tl.arange(0, TILE_ROWS)[:, None] * VEC + tl.arange(0, VEC)[None, :]
    for item in range(tl.program_id(0), n_rows * n_segments, tl.num_programs(0)):
        row, in_base, out_base, first_col, n_blocks, first_block, end_block = sm._segment_item(
            item, n_segments, blocks_per_segment, input_row_stride, input_row_stride, n_cols, TILE_ROWS * VEC, VEC)
        acc = tl.zeros([TILE_ROWS], tl.float32)
        vec_max = tl.full([TILE_ROWS], float("-inf"), tl.float32)
        for block in tl.range(tl.maximum(first_block, 1), tl.minimum(end_block, n_blocks - 1)):
            x = tl.load(input_ptr + in_base + block * (TILE_ROWS * VEC) + tile, eviction_policy="evict_last")
            if WORK == 0:
                acc += tl.sum(x.to(tl.float32), axis=1)
            elif WORK == 1:
                vec_max = tl.maximum(vec_max, tl.max(x, axis=1).to(tl.float32))
            else:
                new_max = tl.maximum(vec_max, tl.max(x, axis=1).to(tl.float32))
                safe_max = tl.where(new_max == float("-inf"), 0.0, new_max)
                acc = acc * tl.exp(vec_max - safe_max) + tl.sum(tl.exp(x.to(tl.float32) - safe_max[:, None]), axis=1)
                vec_max = new_max
        tl.store(slots_ptr + item, _pack(tl.max(vec_max, axis=0), tl.sum(acc, axis=0)))


def read_only(work):
    """Pass 1's reading with less work per element (see _read_only_kernel)."""
    def run(x):
        vec, tile_rows, n_segments, per_segment, grid = layout(x)
        slots = torch.empty(x.shape[0] * n_segments, dtype=torch.int64, device=x.device)
        _read_only_kernel[(grid,)](x, slots, x.stride(0), x.shape[0], x.shape[1], n_segments, per_segment,
                                   TILE_ROWS=tile_rows, VEC=vec, WORK=work, num_warps=WARPS)
        return slots
    return run


def work_probe(out: list) -> None:
    """Is pass 1 bound by its work per element? Reads with a sum, a max, the max in the input type,
    and pass 1 as it is, at 2-byte and fp32 rows."""
    import probe_long_rows as p

    for n in (262144, 1048576):
        for dtype in ("float16", "bfloat16", "float32"):
            m, x, moved, ref, scale = p.forward_input(n, dtype)
            half = moved / 2
            lines = [p.row("pass1 as it is", p.timed(pass1(1), x), half, 1.0)]
            for work, label in ((0, "sum only"), (1, "max only"), (2, "pass1, max in input type")):
                lines.append(p.row(f"reads: {label}", p.timed(read_only(work), x), half, 1.0))
            p.report("work", m, n, dtype, lines, out)


def layout(x):
    """(vec, tile rows, n_segments, blocks per segment, grid) of the dispatcher's tile-stream config."""
    n_rows, n_cols = x.shape
    vec = 16 // x.element_size()
    tile_rows = 32 * WARPS * VECTORS
    segment = sm._few_rows_segment(SEGMENT, n_rows, n_cols * x.element_size(), PROGRAMS * sm._sm_count(x.device))
    n_segments, per_segment = sm._stream_segments(n_cols, x.element_size(), tile_rows * vec, segment, vec, vec)
    grid = PROGRAMS * sm._sm_count(x.device) // n_segments * n_segments
    return vec, tile_rows, n_segments, per_segment, max(n_segments, min(n_rows * n_segments, grid))


def pass1(unroll):
    """Pass 1 alone (returns the slots, which nothing checks)."""
    def run(x):
        vec, tile_rows, n_segments, per_segment, grid = layout(x)
        slots = torch.empty(x.shape[0] * n_segments, dtype=torch.int64, device=x.device)
        _pass1_kernel[(grid,)](x, slots, x.stride(0), x.shape[0], x.shape[1], n_segments, per_segment,
                               TILE_ROWS=tile_rows, VEC=vec, UNROLL=unroll, num_warps=WARPS)
        return slots
    return run


def pass2(unroll):
    """Pass 2 alone, from HBM."""
    def run(x):
        vec, tile_rows, n_segments, per_segment, grid = layout(x)
        y = torch.empty_like(x)
        _pass2_kernel[(grid,)](y, x, x.stride(0), x.shape[0], x.shape[1], n_segments, per_segment,
                               TILE_ROWS=tile_rows, VEC=vec, UNROLL=unroll, num_warps=WARPS)
        return y
    return run


def split_unroll(unroll1, unroll2):
    """tile-stream with pass 1 unrolled unroll1 times and pass 2 unroll2 times."""
    def run(x):
        vec, tile_rows, n_segments, per_segment, grid = layout(x)
        y = torch.empty_like(x)
        slots = torch.zeros(x.shape[0] * n_segments, dtype=torch.int64, device=x.device)
        _split_unroll_kernel[(grid,)](y, x, slots, x.stride(0), y.stride(0), x.shape[0], x.shape[1], n_segments,
                                      per_segment, sm._max_polls(), TILE_ROWS=tile_rows,
                                      SEGMENTS_BLOCK=sm._segments_block(n_segments), VEC=vec, UNROLL1=unroll1,
                                      UNROLL2=unroll2, num_warps=WARPS)
        return y
    return run


def real_without_maxnreg(unroll):
    """The dispatcher's tile-stream launch, but with no maxnreg (32 warps cap registers at 64 anyway)."""
    def run(x):
        y = torch.empty_like(x)
        n_rows, n_cols = x.shape
        align = sm._vector_align(x.element_size(), n_cols, x.stride(0), y.stride(0))
        vec, tile_rows, n_segments, per_segment, grid = layout(x)
        slots = torch.zeros(n_rows * n_segments if n_segments > 1 else 1, dtype=torch.int64, device=x.device)
        sm._launch(sm._tile_stream_fwd_kernel, (grid,), y, x, slots, x.stride(0), y.stride(0), n_rows, n_cols,
                   n_segments, per_segment, sm._max_polls(), TILE_ROWS=tile_rows,
                   SEGMENTS_BLOCK=sm._segments_block(n_segments), ALIGN=align, VEC=vec, UNROLL=unroll,
                   num_warps=WARPS)
        return y
    return run


def real_against_split(out: list) -> None:
    """fp32 only: the dispatcher's own tile-stream launch (unroll 1 and 2) beside the split kernel,
    in one process. The sweep did not show the split kernel's unroll gain (round 6)."""
    import probe_long_rows as p

    for n in (131072, 262144, 1048576):
        m, x, moved, ref, scale = p.forward_input(n, "float32")
        variants = [(f"real tile-stream unroll {u}", p.tile_stream_forward((VECTORS, WARPS, PROGRAMS, SEGMENT, u)))
                    for u in (1, 2)]
        variants += [(f"split unroll {u1} {u2}", split_unroll(u1, u2)) for u1, u2 in ((1, 1), (2, 2))]
        variants += [(f"real tile-stream unroll {u} without maxnreg", real_without_maxnreg(u)) for u in (1, 2)]
        lines = [p.row("dispatcher", p.timed(sm.softmax_forward, x), moved, 1.0)]
        lines += p.checked_and_timed(variants, (x,), ref, scale, "float32", moved, 1.0)
        p.report("real", m, n, "float32", lines, out)


def main() -> None:
    """Time each pass, the full kernel and the split unrolls per shape; the shares are of the copy."""
    import probe_long_rows as p

    p.warm_up_gpu()
    out = []
    if sys.argv[1:] in (["real"], ["work"]):
        (real_against_split if sys.argv[1] == "real" else work_probe)(out)
        if os.environ.get("OUT"):
            Path(os.environ["OUT"], f"probe_passes_{sys.argv[1]}.json").write_text(json.dumps(out, indent=2))
        return
    for n in (131072, 262144, 1048576):
        for dtype in ("float16", "float32"):
            m, x, moved, ref, scale = p.forward_input(n, dtype)
            y = torch.empty_like(x)
            copy_ms = p.timed(lambda: y.copy_(x))["ms"]
            half = moved / 2
            lines = [p.row("copy", {"ms": copy_ms, "p20": None, "p80": None}, moved, copy_ms),
                     p.row("dispatcher", p.timed(sm.softmax_forward, x), moved, copy_ms)]
            for unroll in (1, 2, 4):
                t = p.timed(pass1(unroll), x)
                lines.append(dict(p.row(f"pass1 alone (reads only), unroll {unroll}", t, half, copy_ms),
                                  note="GB/s of reads alone; copy_share = copy time / this time"))
                lines.append(p.row(f"pass2 alone (from HBM), unroll {unroll}", p.timed(pass2(unroll), x), moved, copy_ms))
            variants = [(f"tile-stream unroll pass1 {u1} pass2 {u2}", split_unroll(u1, u2))
                        for u1, u2 in ((1, 1), (2, 1), (4, 1), (2, 2), (4, 2))]
            lines += p.checked_and_timed(variants, (x,), ref, scale, dtype, moved, copy_ms)
            p.report("passes", m, n, dtype, lines, out)
            torch.cuda.empty_cache()
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], "probe_passes.json").write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
