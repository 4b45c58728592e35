"""Probe: tile-stream with L2 prefetches, so that HBM reads overlap a segment's writes (round 16).

Exploration for tuning SOFTMAX_PLANS, not evidence (run artifacts come only from build.py --run).
`prefetch.global.L2` asks L2 for a line and returns at once: it holds no register, so it adds bytes
in flight without touching the 64-register budget that capped rounds 10 and 12. Two uses:
  AHEAD: pass 1, at tile `block`, prefetches tile `block + AHEAD` of the same segment;
  NEXT:  pass 2, at its k-th step, prefetches tile k of the program's next segment, so that the next
         pass 1 reads L2 while this SM writes (the two passes otherwise run one after the other).
Every variant is checked against float64 on every element first, then timed like build.py --run,
beside a copy of the same bytes. (The backward's probe of round 16 ran at commit 010fa5b, whose
stream kernel took a PREFETCH argument; it lost, and both are gone.)

    python scripts/probe_l2prefetch.py [long|tile|long16|tile16|confirm|confirm_tile ...]   # on a CUDA machine; $OUT/probe_l2prefetch.json
"""
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from kernels import triton_softmax as sm  # noqa: E402
from kernels.triton_softmax import (_combine_partials, _exp_scaled, _holds_last_block, _pack,  # noqa: E402
                                    _row_bases, _segment_item, _tile_edge, _vector_online)
from probe_long_rows import forward_configs_probe, launch_tile_stream_like, run_probes  # noqa: E402


@triton.jit
def _prefetch_l2(ptrs):
    """Ask L2 for the lines holding ptrs (a hint: no register waits on it)."""
    tl.inline_asm_elementwise("prefetch.global.L2::evict_last [$1];\n\tmov.u32 $0, 0;", "=r,l", [ptrs],
                              dtype=tl.int32, is_pure=False, pack=1)


@triton.jit
def _prefetch_tile(input_ptr, in_base, block, TILE_ROWS: tl.constexpr, VEC: tl.constexpr, STRIDE: tl.constexpr):
    """Prefetch tile `block` of a row: one address every STRIDE elements."""
    _prefetch_l2(input_ptr + in_base + block * (TILE_ROWS * VEC) + tl.arange(0, TILE_ROWS * VEC // STRIDE) * STRIDE)


@triton.jit
def _pf_segment_max_sum(input_ptr, in_base, first_col, n_cols, n_blocks, first_block, end_block,
                        TILE_ROWS: tl.constexpr, VEC: tl.constexpr, LOG2: tl.constexpr, AHEAD: tl.constexpr,
                        STRIDE: tl.constexpr):
    """_tile_segment_max_sum, prefetching AHEAD tiles ahead (0: none)."""
    tile = tl.arange(0, TILE_ROWS)[:, None] * VEC + tl.arange(0, VEC)[None, :]
    vec_max = tl.full([TILE_ROWS], float("-inf"), tl.float32)
    vec_sum = tl.zeros([TILE_ROWS], tl.float32)
    lo = tl.maximum(first_block, 1)
    hi = tl.minimum(end_block, n_blocks - 1)
    for block in range(lo, hi):
        if AHEAD > 0:
            _prefetch_tile(input_ptr, in_base, tl.minimum(block + AHEAD, hi - 1), TILE_ROWS, VEC, STRIDE)
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
def _pf_segment_write(output_ptr, input_ptr, out_base, in_base, first_col, n_cols, n_blocks, first_block,
                      end_block, row_max, inv_row_sum, next_in_base, next_lo, next_hi, TILE_ROWS: tl.constexpr,
                      VEC: tl.constexpr, LOG2: tl.constexpr, NEXT: tl.constexpr, STRIDE: tl.constexpr):
    """_tile_segment_write; with NEXT, step k prefetches tile next_lo + k of the next segment."""
    tile = tl.arange(0, TILE_ROWS)[:, None] * VEC + tl.arange(0, VEC)[None, :]
    lo = tl.maximum(first_block, 1)
    hi = tl.minimum(end_block, n_blocks - 1)
    for k in range(0, hi - lo):
        if NEXT:
            if next_lo + k < next_hi:
                _prefetch_tile(input_ptr, next_in_base, next_lo + k, TILE_ROWS, VEC, STRIDE)
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
def _pf_stream_kernel(output_ptr, input_ptr, slots_ptr, input_row_stride, output_row_stride, n_rows, n_cols,
                      n_segments, blocks_per_segment, max_polls, TILE_ROWS: tl.constexpr,
                      SEGMENTS_BLOCK: tl.constexpr, ALIGN: tl.constexpr, VEC: tl.constexpr, LOG2: tl.constexpr,
                      AHEAD: tl.constexpr, NEXT: tl.constexpr, STRIDE: tl.constexpr):
    """_tile_stream_fwd_kernel (no bfloat16 guard: the probe's inputs are finite) with L2 prefetches."""
    n_cols = n_cols // ALIGN * ALIGN
    input_row_stride = input_row_stride // ALIGN * ALIGN
    output_row_stride = output_row_stride // ALIGN * ALIGN
    for item in range(tl.program_id(0), n_rows * n_segments, tl.num_programs(0)):
        row, in_base, out_base, first_col, n_blocks, first_block, end_block = _segment_item(
            item, n_segments, blocks_per_segment, input_row_stride, output_row_stride, n_cols, TILE_ROWS * VEC, VEC)
        segment_max, segment_sum = _pf_segment_max_sum(input_ptr, in_base, first_col, n_cols, n_blocks, first_block,
                                                       end_block, TILE_ROWS, VEC, LOG2, AHEAD, STRIDE)
        if SEGMENTS_BLOCK == 1:
            row_max = segment_max
            inv_row_sum = 1.0 / (segment_sum * tl.exp(segment_max - row_max))
        else:
            tl.atomic_xchg(slots_ptr + item, _pack(segment_max, segment_sum), sem="relaxed")
            packed, in_row = sm._row_partials(input_ptr, slots_ptr, in_base, first_col, n_cols, n_blocks, row,
                                              n_segments, blocks_per_segment, max_polls, SEGMENTS_BLOCK, TILE_ROWS,
                                              VEC, 1, LOG2)
            row_max, inv_row_sum = _combine_partials(packed, in_row, LOG2)
        # the program's next item: its segment's interior tiles, for pass 2 to prefetch
        next_item = item + tl.num_programs(0)
        next_in_base, _, _, _ = _row_bases(next_item // n_segments, input_row_stride, output_row_stride, n_cols,
                                           TILE_ROWS * VEC, VEC)
        next_first = (next_item % n_segments) * blocks_per_segment
        next_lo = tl.maximum(next_first, 1)
        next_hi = tl.where(next_item < n_rows * n_segments,
                           tl.minimum(tl.minimum(next_first + blocks_per_segment, n_blocks), n_blocks - 1), 0)
        _pf_segment_write(output_ptr, input_ptr, out_base, in_base, first_col, n_cols, n_blocks, first_block,
                          end_block, row_max, inv_row_sum, next_in_base, next_lo, next_hi, TILE_ROWS, VEC, LOG2,
                          NEXT, STRIDE)


@triton.jit
def _pf_tile_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols,
                    TILE_ROWS: tl.constexpr, VEC: tl.constexpr, ALIGN: tl.constexpr, UNROLL: tl.constexpr,
                    LOG2: tl.constexpr, AHEAD: tl.constexpr, NEXT: tl.constexpr, STRIDE: tl.constexpr):
    """_tile_online_fwd_kernel (no bfloat16 guard) with L2 prefetches: AHEAD tiles ahead in pass 1; with
    NEXT, pass 2's k-th step prefetches tile k of the program's next row."""
    n_cols = n_cols // ALIGN * ALIGN
    input_row_stride = input_row_stride // ALIGN * ALIGN
    output_row_stride = output_row_stride // ALIGN * ALIGN
    n_blocks = tl.cdiv(n_cols, TILE_ROWS * VEC)
    tile = tl.arange(0, TILE_ROWS)[:, None] * VEC + tl.arange(0, VEC)[None, :]
    for row_idx in range(tl.program_id(0), n_rows, tl.num_programs(0)):
        row_idx = tl.cast(row_idx, tl.int64)
        input_row = input_ptr + row_idx * input_row_stride
        output_row = output_ptr + row_idx * output_row_stride
        vec_max = tl.full([TILE_ROWS], float("-inf"), tl.float32)
        vec_sum = tl.zeros([TILE_ROWS], tl.float32)
        for block in tl.range(0, n_blocks, loop_unroll_factor=UNROLL):
            if AHEAD > 0:
                _prefetch_tile(input_row, 0, tl.minimum(block + AHEAD, n_blocks - 2), TILE_ROWS, VEC, STRIDE)
            offsets = block * (TILE_ROWS * VEC) + tile
            x = tl.load(input_row + offsets, mask=offsets < n_cols, other=float("-inf"),
                        eviction_policy="evict_last").to(tl.float32)
            vec_max, vec_sum = _vector_online(vec_max, vec_sum, x, LOG2)
        row_max = tl.max(vec_max, axis=0)
        rescale = tl.exp2(vec_max - row_max) if LOG2 else tl.exp(vec_max - row_max)
        inv_row_sum = 1.0 / tl.sum(vec_sum * rescale, axis=0)
        next_row = input_row + tl.num_programs(0).to(tl.int64) * input_row_stride
        next_blocks = tl.where(row_idx + tl.num_programs(0) < n_rows, n_blocks - 1, 0)
        for block in tl.range(0, n_blocks, loop_unroll_factor=UNROLL):
            if NEXT:
                if block < next_blocks:
                    _prefetch_tile(next_row, 0, block, TILE_ROWS, VEC, STRIDE)
            offsets = (n_blocks - 1 - block) * (TILE_ROWS * VEC) + tile
            mask = offsets < n_cols
            x = tl.load(input_row + offsets, mask=mask, other=float("-inf"),
                        eviction_policy="evict_first").to(tl.float32)
            numerator = _exp_scaled(x, row_max) if LOG2 else tl.exp(x - row_max)
            tl.store(output_row + offsets, (numerator * inv_row_sum).to(output_row.dtype.element_ty),
                     mask=mask, cache_modifier=".cs")


def pf_tile_forward(config):
    """A forward callable for the tile kernel at (vectors, warps, unroll, AHEAD, NEXT, stride bytes), 1 program an SM."""
    vectors, warps, unroll, ahead, next_row, stride = config

    def run(x):
        y = torch.empty_like(x)
        n_rows, n_cols = x.shape
        align = sm._vector_align(x.element_size(), n_cols, x.stride(0), y.stride(0))
        sm._launch(_pf_tile_kernel, (min(n_rows, sm._sm_count(x.device)),), y, x, x.stride(0), y.stride(0), n_rows,
                   n_cols, TILE_ROWS=32 * warps * vectors, VEC=16 // x.element_size(), ALIGN=align, UNROLL=unroll,
                   LOG2=x.element_size() == 2, AHEAD=ahead, NEXT=next_row, STRIDE=stride // x.element_size(),
                   num_warps=warps, maxnreg=65536 // (warps * 32) // 8 * 8)
        return y
    return run


def pf_forward(config):
    """A forward callable for (segment bytes, prefetch distance in pass 1, next segment in pass 2, stride)."""
    segment_bytes, ahead, next_segment, stride = config
    vectors, warps, progs = 2, 32, 1

    def run(x):
        return launch_tile_stream_like(_pf_stream_kernel, x, vectors, warps, progs, segment_bytes,
                                       LOG2=x.element_size() == 2, AHEAD=ahead, NEXT=next_segment,
                                       STRIDE=stride // x.element_size())
    return run


# (segment bytes, AHEAD tiles, NEXT, prefetch stride in bytes). (262144, 0, False, 16) is the
# dispatcher's tile-stream; the 128 KB segments keep current + next segment of every SM under L2.
PF_CONFIGS = [
    (262144, 0, False, 16), (262144, 1, False, 128), (262144, 2, False, 128), (262144, 4, False, 128),
    (262144, 2, False, 16), (262144, 0, True, 128), (262144, 2, True, 128), (131072, 0, True, 128),
    (131072, 2, True, 128), (131072, 1, False, 128),
]
# Second run: a 128-byte stride puts 256 addresses on 1,024 threads, so each line is asked for four
# times; a 16-byte stride gives every thread its own two vectors, as its loads do.
PF16_CONFIGS = [
    (262144, 0, False, 16), (262144, 1, False, 16), (262144, 2, False, 16), (262144, 4, False, 16),
    (262144, 0, True, 16), (262144, 2, True, 16), (131072, 0, True, 16), (131072, 2, True, 16),
    (131072, 2, False, 16),
]
LONG_NS = [131072, 262144, 777777, 1048576]


def variants(configs):
    """(label, forward) per config (the dispatcher's line is the product's tile-stream past 131,072)."""
    return [(f"l2prefetch {c}", pf_forward(c)) for c in configs]


# (vectors, warps, unroll, AHEAD, NEXT, stride bytes); (2, 32, 4, 0, False, 16) is the dispatcher's
# tile kernel at 65,536 columns (2-byte rows to 131,072 use unroll 2).
PF_TILE_CONFIGS = [
    (2, 32, 4, 0, False, 16), (2, 32, 4, 2, False, 128), (2, 32, 4, 0, True, 128), (2, 32, 4, 2, True, 128),
    (2, 32, 2, 0, False, 16), (2, 32, 2, 2, False, 128), (2, 32, 2, 0, True, 128), (2, 32, 2, 2, True, 128),
    (2, 32, 1, 4, True, 128),
]
PF16_TILE_CONFIGS = [
    (2, 32, 4, 0, False, 16), (2, 32, 4, 2, False, 16), (2, 32, 4, 0, True, 16), (2, 32, 4, 2, True, 16),
    (2, 32, 2, 0, True, 16), (2, 32, 2, 2, True, 16),
]
TILE_NS = [65536, 100000]
# Third run: the two winners of the H200, on both GPUs. AHEAD 1 and 2 on tile-stream; and the tile kernel
# (whole rows a program, unrolled 4x) for fp32 rows past 65,536, which the H200 ran 5% faster than
# tile-stream at 100,000 (400 KB rows: 132 of them fill 53 MB, about L2).
CONFIRM_CONFIGS = [(262144, 0, False, 16), (262144, 1, False, 16), (262144, 2, False, 16), (262144, 0, True, 16)]
CONFIRM_TILE_CONFIGS = [(2, 32, 4, 0, False, 16), (2, 32, 2, 0, False, 16), (2, 32, 4, 1, False, 16)]


def tile_variants(configs):
    """(label, forward) per tile config."""
    return [(f"l2prefetch tile {c}", pf_tile_forward(c)) for c in configs]


ALL = ["float16", "bfloat16", "float32"]
PROBES = {"tile": lambda out: forward_configs_probe("l2prefetch-tile", TILE_NS, tile_variants(PF_TILE_CONFIGS), out, ALL),
          "long": lambda out: forward_configs_probe("l2prefetch", LONG_NS, variants(PF_CONFIGS), out, ALL),
          "tile16": lambda out: forward_configs_probe("l2prefetch16-tile", TILE_NS, tile_variants(PF16_TILE_CONFIGS),
                                                      out, ALL),
          "confirm": lambda out: forward_configs_probe("l2prefetch-confirm", LONG_NS, variants(CONFIRM_CONFIGS), out, ALL),
          "confirm_tile": lambda out: forward_configs_probe("l2prefetch-confirm-tile", [81920, 100000, 131072],
                                                            tile_variants(CONFIRM_TILE_CONFIGS), out, ["float32"]),
          "long16": lambda out: forward_configs_probe("l2prefetch16", LONG_NS, variants(PF16_CONFIGS), out, ALL)}


if __name__ == "__main__":
    run_probes(PROBES, sys.argv[1:] or ["long"], "probe_l2prefetch.json")
