"""Probe (round 102): tma-stream's forward for any row length and element count, with the loose elements out of the
unrolled tile loops.

Exploration, not evidence. Round 100's probe (probe_tma_odd.py) was correct on odd rows but ran at 0.22-0.40x of
tile-stream on the H100; ncu (round 101) put 71% of its cycles in instruction-fetch stalls, where the same kernel on
whole-vector rows (0.999x of the product) shows none: each of the 14 unrolled tiles of both passes carried a branch
for the tensor's tail and one for the segment's straddling vectors, and odd rows execute them, so the code the warps
run no longer fits the instruction cache. Here every tile does only what the product's does on whole-vector rows
(reduce or store the 16-byte vectors wholly inside the item), and the item's loose elements are handled once, as one
small block read from global memory:
- the head: the elements before its first whole vector (under VEC);
- the foot: those after its last whole vector inside the descriptor (under VEC);
- the tail: those past the descriptor's last whole view row (under W; the TMA fills that view row with zeros).
DYNAMIC=True also runs the tiles as a loop rather than unrolled (smaller code again; the slot is then a runtime index).
Everything else is the product's kernel, without its cold path for a grid that is not co-resident (the probe waits as
long as it takes).

    python scripts/probe_tma_loose.py            # on a CUDA machine (sm_90); writes $OUT/probe_tma_loose.json
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
from tests.tolerances import FORWARD_TOL  # noqa: E402
from kernels.gluon_softmax import (SEGMENT_BYTES, _await_slots, _combine, _cta_barrier, _exp, _issue_tile,  # noqa: E402
                                   _item_span, _loose_offsets, _new_barriers, _online, _pack, _tile, _tile_offsets,
                                   _whole)
from probe_tma_odd import whole_tile_segments  # noqa: E402


@gluon.jit
def _reduce_tile(smem, bars, i, phases, vec_max, vec_sum, tile_start, vector_starts, first, last, dtype: gl.constexpr,
                 TILE: gl.constexpr, VEC: gl.constexpr, layout: gl.constexpr):
    """Wait for tile i and fold its whole vectors into the running (max, sum) a vector."""
    mbarrier.wait(bars.index(i), (phases >> i) & 1)
    x = _tile(smem, i, dtype, TILE, VEC, layout)
    whole = _whole(tile_start + i * TILE, vector_starts, first, last, VEC)
    return _online(vec_max, vec_sum, gl.where(whole, x, float("-inf")))


@gluon.jit
def _write_tile(output_ptr, smem, i, offsets, row_max, inv_row_sum, tile_start, vector_starts, first, last,
                dtype: gl.constexpr, TILE: gl.constexpr, VEC: gl.constexpr, layout: gl.constexpr):
    """Store tile i's whole vectors of softmax (16-byte stores: the mask is one value a vector)."""
    x = _tile(smem, i, dtype, TILE, VEC, layout)
    y = (_exp(x - row_max) * inv_row_sum).to(dtype)
    tile_lo = tile_start + i * TILE
    whole = _whole(tile_lo, vector_starts, first, last, VEC)
    gl.store(output_ptr + (tile_lo + offsets).to(gl.int64), y, mask=whole & (offsets >= 0))


@gluon.jit
def _refill(in_desc, smem, bars, i, next_tile_start, TILE: gl.constexpr, W: gl.constexpr):
    """Ask the TMA for the next item's tile i into slot i, once every warp has read the slot."""
    fence_async_shared()
    _cta_barrier()
    _issue_tile(in_desc, smem.index(i), bars.index(i), next_tile_start + i * TILE, W)


@gluon.jit
def _tma_loose_fwd_kernel(output_ptr, input_ptr, in_desc, slots_ptr, n_rows, n_cols, n_segments, segment_cols,
                          TILE: gl.constexpr, SLOTS: gl.constexpr, VEC: gl.constexpr, SEGMENTS_BLOCK: gl.constexpr,
                          NUM_WARPS: gl.constexpr, LOOSE: gl.constexpr, DYNAMIC: gl.constexpr):
    """kernels/gluon_softmax.py's _tma_stream_fwd_kernel for any row length and element count (module docstring);
    LOOSE: a power of two of at least 2 VEC + W lanes for the loose elements."""
    dtype: gl.constexpr = in_desc.dtype
    W: gl.constexpr = in_desc.block_type.shape[1]
    layout: gl.constexpr = gl.BlockedLayout([1, VEC], [32, 1], [NUM_WARPS, 1], [1, 0])
    lanes: gl.constexpr = gl.BlockedLayout([1], [32], [NUM_WARPS], [0])
    smem = gl.allocate_shared_memory(dtype, [SLOTS] + in_desc.block_type.shape, in_desc.layout)
    bars = _new_barriers(SLOTS)
    offsets = _tile_offsets(TILE, VEC, layout)
    vector_starts = gl.expand_dims(gl.arange(0, TILE // VEC, layout=gl.SliceLayout(1, layout)), 1) * VEC
    siblings = gl.arange(0, SEGMENTS_BLOCK, layout=lanes)
    n_items = n_rows * n_segments
    numel = n_rows * n_cols
    covered = numel // W * W  # elements the descriptor's whole view rows hold
    step = gl.num_programs(0)
    item = gl.program_id(0)
    row, first, end, tile_start, n_tiles = _item_span(item, n_segments, segment_cols, n_cols, TILE, W)
    for i in gl.static_range(SLOTS):
        if (i < n_tiles) & (item < n_items):
            _issue_tile(in_desc, smem.index(i), bars.index(i), tile_start + i * TILE, W)
    phases = item * 0
    for item in range(gl.program_id(0), n_items, step):
        row, first, end, tile_start, n_tiles = _item_span(item, n_segments, segment_cols, n_cols, TILE, W)
        last = gl.minimum(end, covered)
        loose, loose_mask = _loose_offsets(first, end, covered, VEC, LOOSE, lanes)
        loose_x = gl.load(input_ptr + loose.to(gl.int64), mask=loose_mask, other=float("-inf")).to(gl.float32)
        vec_max = gl.full([TILE // VEC], float("-inf"), gl.float32, layout=gl.SliceLayout(1, layout))
        vec_sum = gl.full([TILE // VEC], 0.0, gl.float32, layout=gl.SliceLayout(1, layout))
        if DYNAMIC:
            for t in range(n_tiles):
                vec_max, vec_sum = _reduce_tile(smem, bars, t, phases, vec_max, vec_sum, tile_start, vector_starts,
                                                first, last, dtype, TILE, VEC, layout)
        else:
            for i in gl.static_range(SLOTS):
                if i < n_tiles:
                    vec_max, vec_sum = _reduce_tile(smem, bars, i, phases, vec_max, vec_sum, tile_start,
                                                    vector_starts, first, last, dtype, TILE, VEC, layout)
        phases = phases ^ ((1 << n_tiles) - 1)
        tiles_max, tiles_sum = _combine(vec_max, vec_sum)
        seg_max = gl.maximum(tiles_max, gl.max(loose_x, axis=0))
        safe_max = gl.where(seg_max == float("-inf"), 0.0, seg_max)
        seg_sum = tiles_sum * _exp(tiles_max - safe_max) + gl.sum(_exp(loose_x - safe_max), axis=0)
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
        gl.store(output_ptr + loose.to(gl.int64), (_exp(loose_x - row_max) * inv_row_sum).to(dtype), mask=loose_mask)
        next_item = item + step
        next_row, next_first, next_end, next_tile_start, next_tiles = _item_span(
            next_item, n_segments, segment_cols, n_cols, TILE, W)
        if next_item >= n_items:
            next_tiles = 0
        if DYNAMIC:
            for t in range(n_tiles):
                _write_tile(output_ptr, smem, t, offsets, row_max, inv_row_sum, tile_start, vector_starts, first, last,
                            dtype, TILE, VEC, layout)
                if t < next_tiles:
                    _refill(in_desc, smem, bars, t, next_tile_start, TILE, W)
            for t in range(n_tiles, next_tiles):
                _refill(in_desc, smem, bars, t, next_tile_start, TILE, W)
        else:
            for i in gl.static_range(SLOTS):
                if i < n_tiles:
                    _write_tile(output_ptr, smem, i, offsets, row_max, inv_row_sum, tile_start, vector_starts, first,
                                last, dtype, TILE, VEC, layout)
                if i < next_tiles:
                    _refill(in_desc, smem, bars, i, next_tile_start, TILE, W)
    for i in gl.static_range(SLOTS):
        mbarrier.invalidate(bars.index(i))


def tma_loose_forward(x: torch.Tensor, num_warps: int = 8, vectors_per_thread: int = 4,
                      dynamic: bool = False) -> torch.Tensor:
    """The probe's forward: any contiguous [rows, N] on a 16-byte-aligned base, of at least one view row."""
    n_rows, n_cols = x.shape
    elem = x.element_size()
    vec, width = 16 // elem, 512 // elem
    assert x.is_contiguous() and x.data_ptr() % 16 == 0 and x.numel() >= width, "probe: see the docstring"
    tile = num_warps * 32 * vectors_per_thread * vec
    spare = 0 if n_cols % width == 0 else 1
    n_segments, tiles_per_segment = whole_tile_segments(n_cols, tile, SEGMENT_BYTES, elem, spare)
    y = torch.empty_like(x)
    slots = torch.zeros(max(1, n_rows * n_segments), dtype=torch.int64, device=x.device)
    layout = gl.NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=elem * 8, rank=2)
    view = x.view(-1)[: x.numel() // width * width].view(-1, width)
    in_desc = TensorDescriptor(view, list(view.shape), list(view.stride()), [tile // width, width], layout)
    grid = min(torch.cuda.get_device_properties(x.device).multi_processor_count, n_rows * n_segments)
    _tma_loose_fwd_kernel[(grid,)](y, x, in_desc, slots, n_rows, n_cols, n_segments, tiles_per_segment * tile,
                                   TILE=tile, SLOTS=tiles_per_segment + spare, VEC=vec,
                                   SEGMENTS_BLOCK=max(2, triton.next_power_of_2(n_segments)), NUM_WARPS=num_warps,
                                   LOOSE=triton.next_power_of_2(2 * vec + width), DYNAMIC=dynamic,
                                   num_warps=num_warps)
    return y


def checks(dynamic: bool) -> bool:
    """Odd and even rows, element counts W does not divide, -inf masks, a fully -inf row: against float64 with the
    product's tolerances."""
    ok = True
    for dtype, (atol, rtol) in FORWARD_TOL.items():
        for m, n in ((3, 100001), (5, 777777), (2, 1 << 20), (7, 65541), (1342, 100001), (1, 200003), (3, 131073)):
            x = (torch.randn(m, n, device="cuda") * 3).to(dtype)
            x[0, ::5] = float("-inf")
            if m > 2:
                x[1] = float("-inf")
            ref = torch.softmax(x.double(), -1)
            out = tma_loose_forward(x, dynamic=dynamic).double()
            bad = ~torch.isclose(out, ref, rtol=rtol, atol=atol, equal_nan=True)
            if bad.any():
                ok = False
                r, c = [int(v) for v in bad.nonzero()[0]]
                print(f"  dynamic={dynamic} {m}x{n} {dtype}: {int(bad.sum())} bad, first ({r}, {c}): "
                      f"out {out[r, c]:.6e} ref {ref[r, c]:.6e}", flush=True)
    print(f"dynamic={dynamic}: " + ("checks passed" if ok else "CHECKS FAILED"), flush=True)
    return ok


def ncu_launches() -> None:
    """One launch each, for ncu (--kernel-name regex:_tma_loose): unrolled and dynamic on fp32 100,001, fp16 131,072."""
    from probe_trials import forward_case
    for n, dtype in ((100001, "float32"), (131072, "float16")):
        _, (x,), _, _, _ = forward_case(n, dtype)
        for dynamic in (False, True):
            tma_loose_forward(x, dynamic=dynamic)
        torch.cuda.synchronize()


def warps(results: list) -> None:
    """Round 105: the product's forward as a tile loop on 2-byte rows with more warps (same 16 KB tiles: 16 warps of
    2 vectors, 32 of 1) against the dispatcher (tile-stream, "tile"), every output checked (ab_trials)."""
    from kernels import gluon_softmax as gs
    from probe_trials import ab_trials

    def forward(num_warps, vectors):
        def run(x):
            y = torch.empty_like(x)
            gs.tma_stream_forward(y, x, vectors, num_warps, gs.SEGMENT_BYTES, 1 << 20, tile_loop=True)
            return y
        return run
    shapes = [(n, dtype) for dtype in ("float16", "bfloat16") for n in (131072, 262144, 1048576)]
    for num_warps, vectors in ((8, 4), (16, 2), (32, 1)):
        ab_trials(f"product tile loop {num_warps}w x{vectors}", forward(num_warps, vectors), shapes, results,
                  trials=2)


if __name__ == "__main__":
    from probe_long_rows import save_results, warm_up_gpu
    from probe_trials import ab_trials
    if sys.argv[1:] == ["ncu"]:
        ncu_launches()
        sys.exit(0)
    if sys.argv[1:] == ["warps"]:
        warm_up_gpu()
        print(torch.cuda.get_device_name(), flush=True)
        results = []
        warps(results)
        save_results("probe_tma_warps.json", results)
        sys.exit(0)
    warm_up_gpu()
    print(torch.cuda.get_device_name(), torch.__version__, triton.__version__, flush=True)
    results = []
    for dynamic in (False, True):
        if not checks(dynamic):
            continue

        def variant(x, dynamic=dynamic):
            return tma_loose_forward(x, dynamic=dynamic)
        label = "tma loose, " + ("tile loop" if dynamic else "unrolled")
        lengths = (100001, 777777, 131072, 1048576) if dynamic else (100001, 777777)
        dtypes = ("float32", "float16", "bfloat16") if dynamic else ("float32", "float16")
        ab_trials(label, variant, [(n, dtype) for dtype in dtypes for n in lengths], results, trials=2)
    save_results("probe_tma_loose.json", results)
