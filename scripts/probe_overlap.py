"""Probe: does tile-stream run faster when one loop does pass 1 of a program's next item beside pass 2 of its
last? (notes/kernels.md, round 34: prediction written before the probe)

Today each (row, segment) item reads its segment from HBM (pass 1), publishes its partial and waits for its
row's other segments, then re-reads the segment from L2 and writes it (pass 2): on each SM the HBM traffic is
reads only, then writes only, and pass 1 is latency-bound. `_overlap_fwd_kernel` is tile-stream with one loop
per item in which step k loads tile k of this item from HBM (pass 1) and tile k from the end of the last item
(pass 2, from L2), and writes that one. The last item's statistics were known before the loop; this item's
partial is published and its siblings waited for after it, as today. So each step has HBM reads and writes
in flight, as a copy does.

Exploration for tuning SOFTMAX_PLANS, not evidence: every variant is checked against float64 on every element,
then timed as build.py --run times (CUDA-graph replays, L2 flushed), beside a copy of the same bytes.

    python scripts/probe_overlap.py [check] [forward] [half]   # forward on a CUDA machine: $OUT/probe_overlap.json
    TRITON_INTERPRET=1 python scripts/probe_overlap.py check   # small shapes on the CPU interpreter
"""
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from probe_long_rows import forward_configs_probe, plan_forward, run_probes  # noqa: E402
from kernels import triton_softmax as sm  # noqa: E402
from kernels.triton_softmax import (LOG2E, _combine_partials, _guard_scale, _normalized,  # noqa: E402
                                    _holds_last_block, _load_edge, _pack, _prefetch_l2, _prefetch_next_item,
                                    _row_partials, _segment_item, _tile_segment_max_sum, _vector_online)

NS = [131072, 262144, 524288, 777777, 1048576]
DTYPES = ["float32", "float16", "bfloat16"]


@triton.jit
def _write_tile(output_ptr, input_ptr, out_base, in_base, offsets, row_max, inv_row_sum, LOG2: tl.constexpr,
                scale):
    """y = exp(x - row_max) * inv_row_sum for one whole interior tile, read from L2 (evict_first)."""
    x = tl.load(input_ptr + in_base + offsets, eviction_policy="evict_first").to(tl.float32)
    tl.store(output_ptr + out_base + offsets,
             _normalized(x, row_max, inv_row_sum, LOG2, scale).to(output_ptr.dtype.element_ty), cache_modifier=".cs")


@triton.jit
def _overlap_fwd_kernel(output_ptr, input_ptr, slots_ptr, input_row_stride, output_row_stride, n_rows, n_cols,
                        n_segments, blocks_per_segment, max_polls, TILE_ROWS: tl.constexpr,
                        SEGMENTS_BLOCK: tl.constexpr, ALIGN: tl.constexpr, VEC: tl.constexpr,
                        UNROLL: tl.constexpr, LOG2: tl.constexpr = False, GUARD: tl.constexpr = False,
                        PREFETCH: tl.constexpr = 0, LINE: tl.constexpr = False, POLL_SLEEP: tl.constexpr = 0,
                        WAIT_PREFETCH: tl.constexpr = 0, VECTOR_EDGES: tl.constexpr = False):
    """tile-stream with item j's pass 1 and item j - 1's pass 2 in one loop (see the module docstring)."""
    n_cols = n_cols // ALIGN * ALIGN
    input_row_stride = input_row_stride // ALIGN * ALIGN
    output_row_stride = output_row_stride // ALIGN * ALIGN
    BLOCK: tl.constexpr = TILE_ROWS * VEC
    tile = tl.arange(0, TILE_ROWS)[:, None] * VEC + tl.arange(0, VEC)[None, :]
    n_items = n_rows * n_segments
    zero = tl.program_id(0) * 0
    # the last item, whose pass 2 runs in this item's loop: bases, tiles, statistics (none at first)
    p_in_base = zero.to(tl.int64)
    p_out_base = zero.to(tl.int64)
    p_first_col = zero
    p_n_blocks = zero
    p_first_block = zero
    p_end_block = zero
    p_max = zero.to(tl.float32)
    p_inv = zero.to(tl.float32)
    p_scale = zero.to(tl.float32) + LOG2E
    # one round more than the items, to write the last item
    for item in range(tl.program_id(0), n_items + tl.num_programs(0), tl.num_programs(0)):
        has_item = item < n_items
        row, in_base, out_base, first_col, n_blocks, first_block, end_block = _segment_item(
            tl.minimum(item, n_items - 1), n_segments, blocks_per_segment, input_row_stride, output_row_stride,
            n_cols, BLOCK, VEC, LINE)
        end_block = tl.where(has_item, end_block, first_block)
        lo = tl.maximum(first_block, 1)
        hi = tl.minimum(end_block, n_blocks - 1)
        n_reads = tl.maximum(hi - lo, 0)
        p_hi = tl.minimum(p_end_block, p_n_blocks - 1)
        n_writes = tl.maximum(p_hi - tl.maximum(p_first_block, 1), 0)
        n_both = tl.minimum(n_reads, n_writes)
        vec_max = tl.full([TILE_ROWS], float("-inf"), tl.float32)
        vec_sum = tl.zeros([TILE_ROWS], tl.float32)
        for k in tl.range(0, n_both, loop_unroll_factor=UNROLL):
            if PREFETCH > 0:
                _prefetch_l2(input_ptr + in_base + tl.minimum(lo + k + PREFETCH, hi - 1) * BLOCK
                             + tl.arange(0, TILE_ROWS) * VEC)
            x = tl.load(input_ptr + in_base + (lo + k) * BLOCK + tile, eviction_policy="evict_last")
            _write_tile(output_ptr, input_ptr, p_out_base, p_in_base, (p_hi - 1 - k) * BLOCK + tile, p_max, p_inv,
                        LOG2, p_scale)
            vec_max, vec_sum = _vector_online(vec_max, vec_sum, x.to(tl.float32), LOG2)
        for k in tl.range(n_both, n_reads, loop_unroll_factor=UNROLL):
            if PREFETCH > 0:
                _prefetch_l2(input_ptr + in_base + tl.minimum(lo + k + PREFETCH, hi - 1) * BLOCK
                             + tl.arange(0, TILE_ROWS) * VEC)
            x = tl.load(input_ptr + in_base + (lo + k) * BLOCK + tile, eviction_policy="evict_last")
            vec_max, vec_sum = _vector_online(vec_max, vec_sum, x.to(tl.float32), LOG2)
        for k in tl.range(n_both, n_writes, loop_unroll_factor=UNROLL):
            _write_tile(output_ptr, input_ptr, p_out_base, p_in_base, (p_hi - 1 - k) * BLOCK + tile, p_max, p_inv,
                        LOG2, p_scale)
        # the last item's edge tiles (masked), then this item's
        for edge in tl.static_range(2):
            block = 0 if edge == 0 else p_n_blocks - 1
            if (p_first_block == 0) & (p_end_block > 0) if edge == 0 else _holds_last_block(
                    p_first_block, p_end_block, p_n_blocks):
                x, offsets, mask = _load_edge(input_ptr, p_in_base, p_first_col, n_cols, block, TILE_ROWS, VEC, False)
                tl.store(output_ptr + p_out_base + offsets,
                         _normalized(x, p_max, p_inv, LOG2, p_scale).to(output_ptr.dtype.element_ty), mask=mask)
        for edge in tl.static_range(2):  # this item's edge tiles, if it holds them
            if ((first_block == 0) & has_item) if edge == 0 else _holds_last_block(first_block, end_block, n_blocks):
                x, _, _ = _load_edge(input_ptr, in_base, first_col, n_cols, 0 if edge == 0 else n_blocks - 1,
                                     TILE_ROWS, VEC, False)
                vec_max, vec_sum = _vector_online(vec_max, vec_sum, x, LOG2)
        segment_max = tl.max(vec_max, axis=0)
        safe_max = tl.where(segment_max == float("-inf"), 0.0, segment_max)
        rescale = tl.exp2(vec_max - safe_max) if LOG2 else tl.exp(vec_max - safe_max)
        segment_sum = tl.sum(vec_sum * rescale, axis=0)
        row_max = segment_max
        # times exp(0) = 1, or exp(-inf - -inf) = NaN for a fully -inf row (as torch gives), in either domain
        inv_row_sum = 1.0 / (segment_sum * tl.exp(segment_max - row_max))
        if SEGMENTS_BLOCK > 1:
            if has_item:
                tl.atomic_xchg(slots_ptr + item, _pack(segment_max, segment_sum), sem="relaxed")
                if WAIT_PREFETCH > 0:
                    _prefetch_next_item(input_ptr, item + tl.num_programs(0), n_items, n_segments,
                                        blocks_per_segment, input_row_stride, output_row_stride, n_cols, BLOCK,
                                        VEC, LINE, WAIT_PREFETCH)
                packed, in_row = _row_partials(input_ptr, slots_ptr, in_base, first_col, n_cols, n_blocks, row,
                                               n_segments, blocks_per_segment, max_polls, SEGMENTS_BLOCK, TILE_ROWS,
                                               VEC, UNROLL, LOG2, POLL_SLEEP)
                row_max, inv_row_sum = _combine_partials(packed, in_row, LOG2)
        scale = zero.to(tl.float32) + LOG2E
        if GUARD:  # a row whose scaled max is infinite (see LOG2E): its statistics again, from every segment
            natural = (tl.abs(row_max) == float("inf")) & has_item
            if natural:
                row_max, row_sum = _tile_segment_max_sum(input_ptr, in_base, first_col, n_cols, n_blocks, 0, n_blocks,
                                                         TILE_ROWS, VEC, UNROLL)
                inv_row_sum = 1.0 / row_sum
            scale = _guard_scale(natural)
        p_in_base = in_base
        p_out_base = out_base
        p_first_col = first_col
        p_n_blocks = n_blocks
        p_first_block = first_block
        p_end_block = end_block
        p_max = row_max
        p_inv = inv_row_sum
        p_scale = scale


def overlap_forward(vectors=None, segment=None, **options):
    """The dispatcher's tile-stream plan, launched with the overlapped kernel (and vectors a thread, segment bytes,
    if given)."""
    def run(x):
        y = torch.empty_like(x)
        align = sm._forward_align(y, x)
        plan = sm._select_plan("forward", *x.shape, x.element_size(), x.device, align)
        sm._forward_tile_stream(y, x, vectors or plan.rows_per_program, plan.num_warps, plan.programs_per_sm,
                                segment or plan.segment_bytes, align, plan.unroll, sm._log2_exp(x),
                                one_warp_from=plan.one_warp_from, kernel=_overlap_fwd_kernel, **options)
        return y
    return run


VARIANTS = [("overlap", overlap_forward()), ("overlap, 1 vector a thread", overlap_forward(vectors=1)),
            ("overlap, no wait prefetch", overlap_forward(wait_prefetch=0)),
            ("dispatcher's kernel", plan_forward())]
# second run: half the segment, so that the grid's live bytes (last item's rest + this item's start, 256 KB a
# program in the first run) are what tile-stream's are on average
VARIANTS_HALF = [("overlap, 128 KB segments", overlap_forward(segment=131072)),
                 ("overlap, 1 vector a thread, 128 KB segments", overlap_forward(vectors=1, segment=131072)),
                 ("overlap, 64 KB segments", overlap_forward(segment=65536))]


def forward_probe(out: list) -> None:
    """Copy, dispatcher and the overlapped variants, per long N and dtype."""
    forward_configs_probe("overlap-forward", NS, VARIANTS, out, DTYPES)


def half_probe(out: list) -> None:
    """Copy, dispatcher and the overlapped kernel on smaller segments, per long N and dtype."""
    forward_configs_probe("overlap-half", NS[1:], VARIANTS_HALF, out, DTYPES[:2])


def check_probe(out: list) -> None:
    """Every element of the overlapped kernel against float64, on shapes small enough for the interpreter:
    rows of 1-5 segments, misaligned starts, -inf masks, a fully -inf row, more items than programs."""
    device = "cuda" if torch.cuda.is_available() else "cpu"
    for dtype in DTYPES:
        for n_rows, n_cols, vectors, warps, segment in [(3, 1000, 1, 1, 256), (5, 2999, 1, 2, 512), (4, 777, 2, 1, 512),
                                                        (2, 64, 1, 1, 256), (7, 4096, 1, 2, 1024),
                                                        (3, 3000, 1, 1, 2048)]:
            x = (torch.randn(n_rows, n_cols + 3, device=device) * 3).to(getattr(torch, dtype))[:, 3:]
            x[0, ::3] = float("-inf")
            x[-1] = float("-inf")
            y = torch.empty_like(x)
            align = sm._forward_align(y, x)
            sm._forward_tile_stream(y, x, vectors, warps, 1, segment, align, 1, sm._log2_exp(x),
                                    kernel=_overlap_fwd_kernel)
            ref = torch.softmax(x.double(), dim=-1)
            tol = {"float32": 1e-5, "float16": 2e-3, "bfloat16": 1.6e-2}[dtype]
            passed = torch.allclose(y.double(), ref, rtol=tol, atol=tol * 1e-3, equal_nan=True)
            print(f"check {dtype} {n_rows}x{n_cols}: {'ok' if passed else 'WRONG'}", flush=True)
            out.append({"kind": "check", "dtype": dtype, "shape": [n_rows, n_cols], "passed": passed})
            assert passed, (y, ref)


if __name__ == "__main__":
    which = sys.argv[1:] or ["check", "forward"]
    if which == ["check"] and not torch.cuda.is_available():
        check_probe([])
    else:
        run_probes({"forward": forward_probe, "half": half_probe, "check": check_probe}, which, "probe_overlap.json")
