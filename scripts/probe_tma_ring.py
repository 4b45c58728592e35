"""Probe (round 107): tma-stream's forward with its slots as a ring, so that the next item's first tiles load during
this item's first pass and its wait for siblings.

Exploration, not evidence. Round 106's ncu put the H200's fp32 tma-stream rows' largest stall on the slots' re-reads:
a program waits for its row's other segments with its shared memory full of its own segment, so its SM reads nothing
then. Here a segment takes at most SLOTS - LOOKAHEAD tiles, and the slots form a ring: an item's tiles sit in the
slots after the previous item's, the free slots take the next item's first tiles as soon as this item starts, and each
slot this item's second pass frees takes the next tile of the next item. Whole-vector rows whose element count the
view row width divides only (as the product's LOOSE 0), a tile loop (runtime slot index), no cold path.

    python scripts/probe_tma_ring.py            # on a CUDA machine (sm_90); writes $OUT/probe_tma_ring.json
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
                                   _item_span, _new_barriers, _online, _pack, _tile, _tile_offsets,
                                   _view_width)
from probe_tma_odd import whole_tile_segments  # noqa: E402


@gluon.jit
def _tma_ring_fwd_kernel(output_ptr, input_ptr, in_desc, slots_ptr, n_rows, n_cols, n_segments, segment_cols,
                         TILE: gl.constexpr, SLOTS: gl.constexpr, VEC: gl.constexpr, SEGMENTS_BLOCK: gl.constexpr,
                         NUM_WARPS: gl.constexpr):
    """The product's tma-stream forward (LOOSE 0, tile loop) with the slots as a ring (module docstring)."""
    dtype: gl.constexpr = in_desc.dtype
    W: gl.constexpr = in_desc.block_type.shape[1]
    layout: gl.constexpr = gl.BlockedLayout([1, VEC], [32, 1], [NUM_WARPS, 1], [1, 0])
    smem = gl.allocate_shared_memory(dtype, [SLOTS] + in_desc.block_type.shape, in_desc.layout)
    bars = _new_barriers(SLOTS)
    n_cols = n_cols // VEC * VEC
    offsets = _tile_offsets(TILE, VEC, layout)
    siblings = gl.arange(0, SEGMENTS_BLOCK, layout=gl.BlockedLayout([1], [32], [NUM_WARPS], [0]))
    n_items = n_rows * n_segments
    step = gl.num_programs(0)
    item = gl.program_id(0)
    row, first, end, tile_start, n_tiles = _item_span(item, n_segments, segment_cols, n_cols, TILE, W)
    if item >= n_items:
        n_tiles = 0
    for t in range(n_tiles):  # the first item's tiles into slots 0, 1, ...
        _issue_tile(in_desc, smem.index(t), bars.index(t), tile_start + t * TILE, W)
    head = item * 0  # the slot of this item's first tile
    issued = n_tiles  # tiles of this item already asked for
    phases = item * 0  # bit s: the phase slot s's barrier completes next
    for item in range(gl.program_id(0), n_items, step):
        row, first, end, tile_start, n_tiles = _item_span(item, n_segments, segment_cols, n_cols, TILE, W)
        for t in range(issued, n_tiles):  # what the last item's second pass had no slot for
            s = (head + t) % SLOTS
            _issue_tile(in_desc, smem.index(s), bars.index(s), tile_start + t * TILE, W)
        next_item = item + step
        next_row, next_first, next_end, next_tile_start, next_tiles = _item_span(
            next_item, n_segments, segment_cols, n_cols, TILE, W)
        if next_item >= n_items:
            next_tiles = 0
        next_head = (head + n_tiles) % SLOTS
        early = gl.minimum(SLOTS - n_tiles, next_tiles)  # the next item's tiles in the slots this item leaves free
        fence_async_shared()
        _cta_barrier()  # every warp is done with the last item's slots
        for j in range(early):
            s = (next_head + j) % SLOTS
            _issue_tile(in_desc, smem.index(s), bars.index(s), next_tile_start + j * TILE, W)
        vec_max = gl.full([TILE // VEC], float("-inf"), gl.float32, layout=gl.SliceLayout(1, layout))
        vec_sum = gl.full([TILE // VEC], 0.0, gl.float32, layout=gl.SliceLayout(1, layout))
        for t in range(n_tiles):  # pass 1: each tile as it lands
            s = (head + t) % SLOTS
            mbarrier.wait(bars.index(s), (phases >> s) & 1)
            phases = phases ^ (1 << s)
            flat = tile_start + t * TILE + offsets
            x = gl.where((flat >= first) & (flat < end), _tile(smem, s, dtype, TILE, VEC, layout), float("-inf"))
            vec_max, vec_sum = _online(vec_max, vec_sum, x)
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
        for t in range(n_tiles):  # pass 2; each freed slot takes the next item's next tile
            s = (head + t) % SLOTS
            flat = tile_start + t * TILE + offsets
            y = _exp(_tile(smem, s, dtype, TILE, VEC, layout) - row_max) * inv_row_sum
            gl.store(output_ptr + flat.to(gl.int64), y.to(dtype), mask=(flat >= first) & (flat < end))
            if early + t < next_tiles:
                fence_async_shared()
                _cta_barrier()
                _issue_tile(in_desc, smem.index(s), bars.index(s), next_tile_start + (early + t) * TILE, W)
        issued = gl.minimum(early + n_tiles, next_tiles)
        head = next_head
    for s in gl.static_range(SLOTS):
        mbarrier.invalidate(bars.index(s))


def tma_ring_forward(x: torch.Tensor, lookahead: int = 2, num_warps: int = 8, vectors_per_thread: int = 4,
                     programs: int = 0):
    """The probe's forward: contiguous [rows, N] of whole vectors whose element count a view row width divides
    (programs: the grid, where not 0; fewer programs than a row has segments would wait forever)."""
    n_rows, n_cols = x.shape
    elem = x.element_size()
    vec, width = 16 // elem, _view_width(x)
    assert x.is_contiguous() and x.data_ptr() % 16 == 0 and n_cols % vec == 0 and width, "probe: see the docstring"
    tile = num_warps * 32 * vectors_per_thread * vec
    slots_total = SEGMENT_BYTES // (tile * elem)
    spare = 0 if n_cols % width == 0 else 1
    n_segments, tiles_per_segment = whole_tile_segments(n_cols, tile, SEGMENT_BYTES - lookahead * tile * elem, elem,
                                                        spare)
    y = torch.empty_like(x)
    slots = torch.zeros(max(1, n_rows * n_segments), dtype=torch.int64, device=x.device)
    layout = gl.NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=elem * 8, rank=2)
    view = x.view(-1, width)
    in_desc = TensorDescriptor(view, list(view.shape), list(view.stride()), [tile // width, width], layout)
    grid = programs or min(torch.cuda.get_device_properties(x.device).multi_processor_count, n_rows * n_segments)
    _tma_ring_fwd_kernel[(grid,)](y, x, in_desc, slots, n_rows, n_cols, n_segments, tiles_per_segment * tile,
                                  TILE=tile, SLOTS=slots_total, VEC=vec,
                                  SEGMENTS_BLOCK=max(2, triton.next_power_of_2(n_segments)), NUM_WARPS=num_warps,
                                  num_warps=num_warps)
    return y


if __name__ == "__main__":
    from probe_long_rows import save_results, warm_up_gpu
    from probe_trials import ab_trials
    warm_up_gpu()
    print(torch.cuda.get_device_name(), torch.__version__, triton.__version__, flush=True)
    checks = ((131072, torch.float32), (1 << 20, torch.float32), (262144, torch.float16), (65536, torch.float32))
    for n, dtype in checks:
        for lookahead in (0, 2, 4):
            x = torch.randn(5, n, device="cuda").to(dtype) * 3
            torch.testing.assert_close(tma_ring_forward(x, lookahead).double(), torch.softmax(x.double(), -1),
                                       atol=1e-7, rtol=1e-3 if dtype != torch.float32 else 1e-5)
    print("checks passed", flush=True)
    results = []
    shapes = [(n, "float32") for n in (131072, 262144, 524288, 1048576)] + [(262144, "float16"), (1048576, "float16")]
    for lookahead in (0, 2, 4):
        ab_trials(f"tma ring, lookahead {lookahead}", lambda x, k=lookahead: tma_ring_forward(x, k), shapes, results,
                  trials=2)
    save_results("probe_tma_ring.json", results)
