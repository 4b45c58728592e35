"""Probe: tile-stream with its loops software-pipelined into shared memory (round 17).

Exploration for tuning SOFTMAX_PLANS, not evidence (run artifacts come only from build.py --run).
tile-stream keeps 32 KB of loads in flight per SM (32 warps x 2 vectors of 16 bytes a thread) at the
64-register cap, and stalls on them (long_scoreboard, rounds 5-7). `tl.range(num_stages=S)` makes
Triton's pipeliner issue the loads S - 1 tiles ahead as cp.async copies into shared memory: bytes in
flight without registers. (Round 4's "stream" pipelined a 1-D per-lane kernel of ~80 registers and
few warps; this keeps tile-stream's per-vector statistics and 32 warps.) Every variant is checked
against float64 on every element first, then timed like build.py --run, beside a copy of the same bytes.

    python scripts/probe_stages.py [long|tile]   # on a CUDA machine; $OUT/probe_stages.json
"""
import sys
from pathlib import Path

import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from kernels import triton_softmax as sm  # noqa: E402
from kernels.triton_softmax import (_combine_partials, _exp_scaled, _holds_last_block, _pack,  # noqa: E402
                                    _segment_item, _tile_edge, _vector_online)
from probe_long_rows import forward_configs_probe, launch_tile_stream_like, run_probes  # noqa: E402


@triton.jit
def _staged_segment_max_sum(input_ptr, in_base, first_col, n_cols, n_blocks, first_block, end_block,
                            TILE_ROWS: tl.constexpr, VEC: tl.constexpr, LOG2: tl.constexpr, STAGES: tl.constexpr):
    """_tile_segment_max_sum with its loop pipelined STAGES deep."""
    tile = tl.arange(0, TILE_ROWS)[:, None] * VEC + tl.arange(0, VEC)[None, :]
    vec_max = tl.full([TILE_ROWS], float("-inf"), tl.float32)
    vec_sum = tl.zeros([TILE_ROWS], tl.float32)
    for block in tl.range(tl.maximum(first_block, 1), tl.minimum(end_block, n_blocks - 1), num_stages=STAGES):
        x = tl.load(input_ptr + in_base + block * (TILE_ROWS * VEC) + tile, eviction_policy="evict_last")
        vec_max, vec_sum = _vector_online(vec_max, vec_sum, x.to(tl.float32), LOG2)
    if first_block == 0:
        offsets, mask = _tile_edge(first_col, n_cols, 0, TILE_ROWS, VEC)
        x = tl.load(input_ptr + in_base + offsets, mask=mask, other=float("-inf"))
        vec_max, vec_sum = _vector_online(vec_max, vec_sum, x.to(tl.float32), LOG2)
    if _holds_last_block(first_block, end_block, n_blocks):
        offsets, mask = _tile_edge(first_col, n_cols, n_blocks - 1, TILE_ROWS, VEC)
        x = tl.load(input_ptr + in_base + offsets, mask=mask, other=float("-inf"))
        vec_max, vec_sum = _vector_online(vec_max, vec_sum, x.to(tl.float32), LOG2)
    segment_max = tl.max(vec_max, axis=0)
    safe_max = tl.where(segment_max == float("-inf"), 0.0, segment_max)
    rescale = tl.exp2(vec_max - safe_max) if LOG2 else tl.exp(vec_max - safe_max)
    return segment_max, tl.sum(vec_sum * rescale, axis=0)


@triton.jit
def _staged_segment_write(output_ptr, input_ptr, out_base, in_base, first_col, n_cols, n_blocks, first_block,
                          end_block, row_max, inv_row_sum, TILE_ROWS: tl.constexpr, VEC: tl.constexpr,
                          LOG2: tl.constexpr, STAGES: tl.constexpr):
    """_tile_segment_write with its loop pipelined STAGES deep."""
    tile = tl.arange(0, TILE_ROWS)[:, None] * VEC + tl.arange(0, VEC)[None, :]
    lo = tl.maximum(first_block, 1)
    hi = tl.minimum(end_block, n_blocks - 1)
    for k in tl.range(0, hi - lo, num_stages=STAGES):
        offsets = (hi - 1 - k) * (TILE_ROWS * VEC) + tile
        x = tl.load(input_ptr + in_base + offsets, eviction_policy="evict_first").to(tl.float32)
        numerator = _exp_scaled(x, row_max) if LOG2 else tl.exp(x - row_max)
        tl.store(output_ptr + out_base + offsets,
                 (numerator * inv_row_sum).to(output_ptr.dtype.element_ty), cache_modifier=".cs")
    for edge in tl.static_range(2):
        block = 0 if edge == 0 else n_blocks - 1
        if (first_block == 0) if edge == 0 else _holds_last_block(first_block, end_block, n_blocks):
            offsets, mask = _tile_edge(first_col, n_cols, block, TILE_ROWS, VEC)
            x = tl.load(input_ptr + in_base + offsets, mask=mask, other=float("-inf")).to(tl.float32)
            numerator = _exp_scaled(x, row_max) if LOG2 else tl.exp(x - row_max)
            tl.store(output_ptr + out_base + offsets,
                     (numerator * inv_row_sum).to(output_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _staged_stream_kernel(output_ptr, input_ptr, slots_ptr, input_row_stride, output_row_stride, n_rows, n_cols,
                          n_segments, blocks_per_segment, max_polls, TILE_ROWS: tl.constexpr,
                          SEGMENTS_BLOCK: tl.constexpr, ALIGN: tl.constexpr, VEC: tl.constexpr, LOG2: tl.constexpr,
                          STAGES1: tl.constexpr, STAGES2: tl.constexpr):
    """_tile_stream_fwd_kernel (no bfloat16 guard: the probe's inputs are finite) with pipelined loops."""
    n_cols = n_cols // ALIGN * ALIGN
    input_row_stride = input_row_stride // ALIGN * ALIGN
    output_row_stride = output_row_stride // ALIGN * ALIGN
    for item in range(tl.program_id(0), n_rows * n_segments, tl.num_programs(0)):
        row, in_base, out_base, first_col, n_blocks, first_block, end_block = _segment_item(
            item, n_segments, blocks_per_segment, input_row_stride, output_row_stride, n_cols, TILE_ROWS * VEC, VEC)
        segment_max, segment_sum = _staged_segment_max_sum(input_ptr, in_base, first_col, n_cols, n_blocks,
                                                           first_block, end_block, TILE_ROWS, VEC, LOG2, STAGES1)
        if SEGMENTS_BLOCK == 1:
            row_max = segment_max
            inv_row_sum = 1.0 / (segment_sum * tl.exp(segment_max - row_max))
        else:
            tl.atomic_xchg(slots_ptr + item, _pack(segment_max, segment_sum), sem="relaxed")
            packed, in_row = sm._row_partials(input_ptr, slots_ptr, in_base, first_col, n_cols, n_blocks, row,
                                              n_segments, blocks_per_segment, max_polls, SEGMENTS_BLOCK, TILE_ROWS,
                                              VEC, 1, LOG2)
            row_max, inv_row_sum = _combine_partials(packed, in_row, LOG2)
        _staged_segment_write(output_ptr, input_ptr, out_base, in_base, first_col, n_cols, n_blocks, first_block,
                              end_block, row_max, inv_row_sum, TILE_ROWS, VEC, LOG2, STAGES2)


def staged_forward(config):
    """A forward callable for (vectors a thread, warps, segment bytes, stages of pass 1, stages of pass 2)."""
    vectors, warps, segment_bytes, stages1, stages2 = config

    def run(x):
        return launch_tile_stream_like(_staged_stream_kernel, x, vectors, warps, 1, segment_bytes,
                                       LOG2=x.element_size() == 2, STAGES1=stages1, STAGES2=stages2)
    return run


# (vectors a thread, warps, segment bytes, stages pass 1, stages pass 2). (2, 32, 262144, 1, 1) is the
# dispatcher's tile-stream (without the prefetch); 3 stages of 32 KB tiles are 64 KB of shared memory.
STAGED_CONFIGS = [
    (2, 32, 262144, 1, 1), (2, 32, 262144, 2, 1), (2, 32, 262144, 3, 1), (2, 32, 262144, 4, 1),
    (2, 32, 262144, 3, 3), (1, 32, 262144, 3, 1), (1, 32, 262144, 5, 1), (2, 16, 262144, 3, 1),
    (4, 16, 262144, 3, 1),
]
LONG_NS = [131072, 262144, 777777, 1048576]


def variants():
    """(label, forward) per config."""
    return [(f"staged {c}", staged_forward(c)) for c in STAGED_CONFIGS]


PROBES = {"long": lambda out: forward_configs_probe("staged", LONG_NS, variants(), out,
                                                     ["float16", "bfloat16", "float32"])}


if __name__ == "__main__":
    run_probes(PROBES, sys.argv[1:] or ["long"], "probe_stages.json")
