"""Probe (round 100, prepared): tma-stream's forward for rows the product leaves on tile-stream because the TMA view
does not divide them: odd rows (100,001 and 777,777 columns) and element counts 64 does not divide.

Exploration, not evidence. kernels/gluon_softmax.py views a tensor as [numel / W, W] (W: 512 bytes of elements), so
it takes only tensors whose element count W (or W / 2) divides, and its stores mask element by element, which splits
a 16-byte store into four (fp32) wherever N is odd. Here:
- the descriptor covers the whole view rows only ([numel // W, W]); the TMA fills the one partial view row at the
  tensor's end with zeros, and the tile that reaches it reads those few elements from global memory instead;
- each tile is stored in two parts: the 16-byte vectors wholly inside the segment with one mask a vector (so the
  compiler keeps 16-byte stores), and, only in a segment's first and last tile, the vectors that straddle its ends
  element by element.
Everything else is the product's kernel (its helpers are imported), without its cold path for a grid that is not
co-resident (the probe waits as long as it takes: max_polls 2^30).

    python scripts/probe_tma_odd.py      # on a CUDA machine (sm_90); writes probe_tma_odd.json
"""
import sys
from pathlib import Path

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from kernels.gluon_softmax import (SEGMENT_BYTES, _await_slots, _combine, _cta_barrier, _exp, _issue_tile,  # noqa: E402
                                   _item_span, _new_barriers, _online, _pack, _segments, _tile, _tile_offsets)


@gluon.jit
def _tile_values(smem, i, input_ptr, flat, tile_lo, covered, numel, dtype: gl.constexpr, TILE: gl.constexpr,
                 VEC: gl.constexpr, layout: gl.constexpr):
    """Tile i as float32; the elements past the descriptor's last whole view row (covered) from global memory."""
    x = _tile(smem, i, dtype, TILE, VEC, layout)
    if tile_lo + TILE > covered:
        tail = gl.load(input_ptr + flat.to(gl.int64), mask=(flat >= covered) & (flat < numel), other=0.0)
        x = gl.where(flat >= covered, tail.to(gl.float32), x)
    return x


@gluon.jit
def _tma_odd_fwd_kernel(output_ptr, input_ptr, in_desc, slots_ptr, n_rows, n_cols, n_segments, tiles_per_segment,
                        TILE: gl.constexpr, SLOTS: gl.constexpr, VEC: gl.constexpr, ALIGN: gl.constexpr,
                        SEGMENTS_BLOCK: gl.constexpr, NUM_WARPS: gl.constexpr):
    """kernels/gluon_softmax.py's _tma_stream_fwd_kernel for any row length and element count (module docstring)."""
    dtype: gl.constexpr = in_desc.dtype
    W: gl.constexpr = in_desc.block_type.shape[1]
    layout: gl.constexpr = gl.BlockedLayout([1, VEC], [32, 1], [NUM_WARPS, 1], [1, 0])
    smem = gl.allocate_shared_memory(dtype, [SLOTS] + in_desc.block_type.shape, in_desc.layout)
    bars = _new_barriers(SLOTS)
    n_cols = n_cols // ALIGN * ALIGN
    offsets = _tile_offsets(TILE, VEC, layout)
    # each vector's first element, one value a vector (so the stores' mask is provably whole vectors)
    vector_starts = gl.expand_dims(gl.arange(0, TILE // VEC, layout=gl.SliceLayout(1, layout)), 1) * VEC
    siblings = gl.arange(0, SEGMENTS_BLOCK, layout=gl.BlockedLayout([1], [32], [NUM_WARPS], [0]))
    n_items = n_rows * n_segments
    numel = n_rows * n_cols
    covered = numel // W * W  # elements the descriptor's whole view rows hold
    step = gl.num_programs(0)
    item = gl.program_id(0)
    row, first, end, tile_start, n_tiles = _item_span(item, n_segments, tiles_per_segment, n_cols, TILE, W)
    for i in gl.static_range(SLOTS):
        if (i < n_tiles) & (item < n_items):
            _issue_tile(in_desc, smem.index(i), bars.index(i), tile_start + i * TILE, W)
    phases = item * 0
    for item in range(gl.program_id(0), n_items, step):
        row, first, end, tile_start, n_tiles = _item_span(item, n_segments, tiles_per_segment, n_cols, TILE, W)
        vec_max = gl.full([TILE // VEC], float("-inf"), gl.float32, layout=gl.SliceLayout(1, layout))
        vec_sum = gl.full([TILE // VEC], 0.0, gl.float32, layout=gl.SliceLayout(1, layout))
        for i in gl.static_range(SLOTS):
            if i < n_tiles:
                mbarrier.wait(bars.index(i), (phases >> i) & 1)
                tile_lo = tile_start + i * TILE
                flat = tile_lo + offsets
                x = _tile_values(smem, i, input_ptr, flat, tile_lo, covered, numel, dtype, TILE, VEC, layout)
                vec_max, vec_sum = _online(vec_max, vec_sum, gl.where((flat >= first) & (flat < end), x,
                                                                      float("-inf")))
        phases = phases ^ ((1 << n_tiles) - 1)
        seg_max, seg_sum = _combine(vec_max, vec_sum)
        if n_segments == 1:
            row_max = seg_max
            inv_row_sum = 1.0 / (seg_sum * _exp(seg_max - row_max))
        else:
            gl.atomic_xchg(slots_ptr + item, _pack(seg_max, seg_sum), sem="relaxed")
            ptrs, in_row, packed, missing = _await_slots(slots_ptr, row, n_segments, siblings, 1 << 30)
            part_max = gl.where(in_row, (packed >> 32).to(gl.int32).to(gl.float32, bitcast=True), float("-inf"))
            part_sum = packed.to(gl.int32).to(gl.float32, bitcast=True)
            row_max = gl.max(part_max, axis=0)
            inv_row_sum = 1.0 / gl.sum(gl.where(in_row, part_sum * _exp(part_max - row_max), 0.0), axis=0)
        next_item = item + step
        next_row, next_first, next_end, next_tile_start, next_tiles = _item_span(
            next_item, n_segments, tiles_per_segment, n_cols, TILE, W)
        if next_item >= n_items:
            next_tiles = 0
        for i in gl.static_range(SLOTS):
            if i < n_tiles:
                tile_lo = tile_start + i * TILE
                flat = tile_lo + offsets
                x = _tile_values(smem, i, input_ptr, flat, tile_lo, covered, numel, dtype, TILE, VEC, layout)
                y = (_exp(x - row_max) * inv_row_sum).to(dtype)
                vector_lo = tile_lo + vector_starts
                whole = (vector_lo >= first) & (vector_lo + VEC <= end)  # one value a vector: 16-byte stores
                gl.store(output_ptr + flat.to(gl.int64), y, mask=whole & (offsets >= 0))
                if (tile_lo < first) | (tile_lo + TILE > end):  # a segment's edge tile: its straddling vectors
                    gl.store(output_ptr + flat.to(gl.int64), y, mask=(flat >= first) & (flat < end) & ~whole)
            if i < next_tiles:
                fence_async_shared()
                _cta_barrier()
                _issue_tile(in_desc, smem.index(i), bars.index(i), next_tile_start + i * TILE, W)
    for i in gl.static_range(SLOTS):
        mbarrier.invalidate(bars.index(i))


def tma_odd_forward(x: torch.Tensor, num_warps: int = 8, vectors_per_thread: int = 4) -> torch.Tensor:
    """The probe's forward: any contiguous [rows, N] on a 16-byte-aligned base, of at least one view row."""
    n_rows, n_cols = x.shape
    elem = x.element_size()
    vec, width = 16 // elem, 512 // elem
    assert x.is_contiguous() and x.data_ptr() % 16 == 0 and x.numel() >= width, "probe: see the docstring"
    tile = num_warps * 32 * vectors_per_thread * vec
    spare = 0 if n_cols % width == 0 else 1
    n_segments, tiles_per_segment = _segments(n_cols, tile, SEGMENT_BYTES, elem, spare)
    y = torch.empty_like(x)
    slots = torch.zeros(max(1, n_rows * n_segments), dtype=torch.int64, device=x.device)
    layout = gl.NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=elem * 8, rank=2)
    view = x.view(-1)[: x.numel() // width * width].view(-1, width)
    in_desc = TensorDescriptor(view, list(view.shape), list(view.stride()), [tile // width, width], layout)
    grid = min(torch.cuda.get_device_properties(x.device).multi_processor_count, n_rows * n_segments)
    align = vec if n_cols % vec == 0 else 1
    _tma_odd_fwd_kernel[(grid,)](y, x, in_desc, slots, n_rows, n_cols, n_segments, tiles_per_segment, TILE=tile,
                                 SLOTS=tiles_per_segment + spare, VEC=vec, ALIGN=align,
                                 SEGMENTS_BLOCK=max(2, triton.next_power_of_2(n_segments)), NUM_WARPS=num_warps,
                                 num_warps=num_warps)
    return y


def checks() -> None:
    """Odd and even rows, element counts W does not divide, -inf masks, a fully -inf row: against float64."""
    for dtype, rtol in ((torch.float32, 1e-5), (torch.float16, 2e-3), (torch.bfloat16, 1.6e-2)):
        for m, n in ((3, 100001), (5, 777777), (2, 1 << 20), (7, 65541), (1342, 100001), (1, 200003)):
            x = (torch.randn(m, n, device="cuda") * 3).to(dtype)
            x[0, ::5] = float("-inf")
            if m > 2:
                x[1] = float("-inf")
            ref = torch.softmax(x.double(), -1)
            torch.testing.assert_close(tma_odd_forward(x).double(), ref, rtol=rtol, atol=1e-9, equal_nan=True)
    print("checks passed", flush=True)


if __name__ == "__main__":
    from probe_long_rows import save_results, warm_up_gpu
    from probe_trials import ab_trials
    warm_up_gpu()
    print(torch.cuda.get_device_name(), torch.__version__, triton.__version__, flush=True)
    checks()
    results = []
    shapes = [(n, dtype) for dtype in ("float32", "float16", "bfloat16") for n in (100001, 777777)]
    ab_trials("tma odd 8w x4", tma_odd_forward, shapes, results, trials=2)
    ab_trials("tma odd 8w x4, whole vectors (against the product's tma-stream)", tma_odd_forward,
              [(n, "float32") for n in (131072, 1048576)], results, trials=2)
    save_results("probe_tma_odd.json", results)
