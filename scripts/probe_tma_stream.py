"""Probe (round 98): tile-stream with each segment held in shared memory, loaded by the Tensor Memory Accelerator.

Exploration, not evidence. Round 97 found that L1 already serves 91-93% of pass 2 and that the L2 prefetch, which
hides latency, is worth 1-15%: what bounds the long rows is how few bytes the first pass keeps in flight through
registers, and the wait for a row's other segments, during which an SM reads nothing. Here one program an SM keeps
its whole segment (up to SLOTS tiles) in shared memory: one thread asks the TMA for every tile of the segment at once
(the bytes in flight are bounded by shared memory, not by registers), the warps reduce each tile as it lands, publish
the segment's (max, sum), wait for the row's others as tile-stream does, then normalise from shared memory and store.
As soon as every warp has read tile i of this item, tile i of the program's next item is asked for, so the next
item's reads are in flight while this item writes, and they wait in shared memory while it waits for its siblings.

Gluon (triton.experimental.gluon) kernels do not run under TRITON_INTERPRET, so this stays a probe unless it wins.
Rows must be contiguous with a 16-byte-aligned base; any N (a 1-D descriptor over the whole tensor: a tile may start
anywhere, and the TMA fills past the tensor's end with zeros, which the masks drop). No guard for rows whose scaled
maximum overflows (the probe's inputs are randn * 2).

    python scripts/probe_tma_stream.py [trials|configs]     # on a CUDA machine (sm_90); $OUT/probe_tma_stream.json
"""
import sys
from pathlib import Path

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier, tma
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

sys.path.insert(0, str(Path(__file__).resolve().parent))

LOG2E: gl.constexpr = gl.constexpr(1.4426950408889634)
SHARED_BYTES = 220 * 1024  # of the 227 KB a program may take, with room for the barriers


@gluon.jit
def _pack(hi, lo):
    """Two float32 scalars as one int64 (hi in the upper word); never 0 for a finished segment (its max is finite
    or -inf, whose bits are not 0)."""
    return ((hi.to(gl.int32, bitcast=True).to(gl.int64) << 32)
            | (lo.to(gl.int32, bitcast=True).to(gl.int64) & 0xFFFFFFFF))


@gluon.jit
def _issue_item(in_desc, smem, bars, item, n_items, n_segments, tiles_per_segment, n_cols,
                TILE: gl.constexpr, SLOTS: gl.constexpr):
    """Ask the TMA for every tile of item (if it exists) into slots 0, 1, ...; each slot's barrier counts its bytes."""
    if item < n_items:
        row = item // n_segments
        seg_start = (item - row * n_segments) * tiles_per_segment * TILE
        n_tiles = gl.cdiv(gl.minimum(seg_start + tiles_per_segment * TILE, n_cols) - seg_start, TILE)
        base = row * n_cols + seg_start
        for i in gl.static_range(SLOTS):
            if i < n_tiles:
                mbarrier.expect(bars.index(i), in_desc.block_type.nbytes)
                tma.async_copy_global_to_shared(in_desc, [base + i * TILE], bars.index(i), smem.index(i))


@gluon.jit
def _tma_stream_fwd_kernel(output_ptr, in_desc, slots_ptr, n_rows, n_cols, n_segments, tiles_per_segment, max_polls,
                           TILE: gl.constexpr, SLOTS: gl.constexpr, VEC: gl.constexpr, ALIGN: gl.constexpr,
                           SEGMENTS_BLOCK: gl.constexpr, NUM_WARPS: gl.constexpr, NEXT_EARLY: gl.constexpr):
    """Two-pass online softmax of (row, segment) items program_id, program_id + num_programs, ...; a segment is at most
    SLOTS tiles of TILE elements, all held in shared memory from its load to its write. NEXT_EARLY: tile i of the next
    item is asked for as soon as tile i of this one is written (else: after the whole segment is written)."""
    dtype: gl.constexpr = in_desc.dtype
    layout: gl.constexpr = gl.BlockedLayout([1, VEC], [32, 1], [NUM_WARPS, 1], [1, 0])
    vectors: gl.constexpr = gl.SwizzledSharedLayout(1, 1, 1, [1, 0])
    smem = gl.allocate_shared_memory(dtype, [SLOTS, TILE], in_desc.layout)
    bars = gl.allocate_shared_memory(gl.int64, [SLOTS, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(SLOTS):
        mbarrier.init(bars.index(i), count=1)
    n_cols = n_cols // ALIGN * ALIGN  # tells the compiler what the launch checked (16-byte vectors when ALIGN = VEC)
    offsets = (gl.expand_dims(gl.arange(0, TILE // VEC, layout=gl.SliceLayout(1, layout)), 1) * VEC
               + gl.expand_dims(gl.arange(0, VEC, layout=gl.SliceLayout(0, layout)), 0))
    slot_layout: gl.constexpr = gl.BlockedLayout([1], [32], [NUM_WARPS], [0])
    siblings = gl.arange(0, SEGMENTS_BLOCK, layout=slot_layout)
    n_items = n_rows * n_segments
    step = gl.num_programs(0)
    _issue_item(in_desc, smem, bars, gl.program_id(0), n_items, n_segments, tiles_per_segment, n_cols, TILE, SLOTS)
    phases = gl.program_id(0) * 0  # bit i: the phase slot i's barrier completes next
    for item in range(gl.program_id(0), n_items, step):
        row = item // n_segments
        seg_start = (item - row * n_segments) * tiles_per_segment * TILE
        seg_end = gl.minimum(seg_start + tiles_per_segment * TILE, n_cols)
        n_tiles = gl.cdiv(seg_end - seg_start, TILE)
        vec_max = gl.full([TILE // VEC], float("-inf"), gl.float32, layout=gl.SliceLayout(1, layout))
        vec_sum = gl.full([TILE // VEC], 0.0, gl.float32, layout=gl.SliceLayout(1, layout))
        for i in gl.static_range(SLOTS):  # pass 1: each tile as it lands
            if i < n_tiles:
                mbarrier.wait(bars.index(i), (phases >> i) & 1)
                x = smem.index(i)._reinterpret(dtype, [TILE // VEC, VEC], vectors).load(layout).to(gl.float32)
                x = gl.where(seg_start + i * TILE + offsets < seg_end, x, float("-inf"))
                new_max = gl.maximum(vec_max, gl.max(x, axis=1) * LOG2E)
                safe_max = gl.where(new_max == float("-inf"), 0.0, new_max)  # a vector of only -inf keeps sum 0
                terms = gl.exp2(gl.fma(x, LOG2E, -gl.expand_dims(safe_max, 1)))
                vec_sum = vec_sum * gl.exp2(vec_max - safe_max) + gl.sum(terms, axis=1)
                vec_max = new_max
        phases = phases ^ ((1 << n_tiles) - 1)
        seg_max = gl.max(vec_max, axis=0)
        safe_seg_max = gl.where(seg_max == float("-inf"), 0.0, seg_max)
        seg_sum = gl.sum(vec_sum * gl.exp2(vec_max - safe_seg_max), axis=0)
        if n_segments == 1:
            row_max = seg_max
            inv_row_sum = 1.0 / (seg_sum * gl.exp2(seg_max - row_max))  # NaN for a fully -inf row, as torch
        else:
            gl.atomic_xchg(slots_ptr + item, _pack(seg_max, seg_sum), sem="relaxed")
            ptrs = slots_ptr + row * n_segments + siblings
            in_row = siblings < n_segments
            packed = gl.load(ptrs, mask=in_row, other=-1, volatile=True)
            polls = 0
            while (gl.sum((packed == 0).to(gl.int32), axis=0) > 0) & (polls < max_polls):
                packed = gl.load(ptrs, mask=in_row, other=-1, volatile=True)
                polls += 1
            part_max = gl.where(in_row, (packed >> 32).to(gl.int32).to(gl.float32, bitcast=True), float("-inf"))
            part_sum = packed.to(gl.int32).to(gl.float32, bitcast=True)
            row_max = gl.max(part_max, axis=0)
            inv_row_sum = 1.0 / gl.sum(gl.where(in_row, part_sum * gl.exp2(part_max - row_max), 0.0), axis=0)
        out_base = output_ptr + row.to(gl.int64) * n_cols + seg_start
        next_item = item + step
        for i in gl.static_range(SLOTS):  # pass 2, from shared memory; the next item's tile i follows tile i
            if i < n_tiles:
                x = smem.index(i)._reinterpret(dtype, [TILE // VEC, VEC], vectors).load(layout).to(gl.float32)
                y = gl.exp2(gl.fma(x, LOG2E, -row_max)) * inv_row_sum
                gl.store(out_base + i * TILE + offsets, y.to(dtype), mask=seg_start + i * TILE + offsets < seg_end)
            if NEXT_EARLY:
                if next_item < n_items:
                    next_row = next_item // n_segments
                    next_start = (next_item - next_row * n_segments) * tiles_per_segment * TILE
                    next_tiles = gl.cdiv(gl.minimum(next_start + tiles_per_segment * TILE, n_cols) - next_start, TILE)
                    if i < next_tiles:
                        fence_async_shared()
                        gl.thread_barrier()  # every warp has read slot i
                        mbarrier.expect(bars.index(i), in_desc.block_type.nbytes)
                        tma.async_copy_global_to_shared(in_desc, [next_row * n_cols + next_start + i * TILE],
                                                        bars.index(i), smem.index(i))
        if not NEXT_EARLY:
            fence_async_shared()
            gl.thread_barrier()
            _issue_item(in_desc, smem, bars, next_item, n_items, n_segments, tiles_per_segment, n_cols, TILE, SLOTS)
    for i in gl.static_range(SLOTS):
        mbarrier.invalidate(bars.index(i))


def _sms() -> int:
    """The current GPU's SM count."""
    return torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count


def tma_stream_forward(num_warps: int = 32, vectors_per_thread: int = 1, segment_bytes: int = SHARED_BYTES,
                       next_early: bool = True, max_polls: int = 1 << 30):
    """A forward callable: rows in segments of at most segment_bytes held in shared memory (see the kernel)."""
    def forward(x: torch.Tensor) -> torch.Tensor:
        assert x.dim() == 2 and x.is_contiguous() and x.data_ptr() % 16 == 0, "probe: contiguous, aligned rows"
        m, n = x.shape
        elem = x.element_size()
        vec = 16 // elem
        tile = num_warps * 32 * vectors_per_thread * vec
        slots = max(1, min(segment_bytes // (tile * elem), triton.cdiv(n, tile)))
        n_segments = triton.cdiv(triton.cdiv(n, tile), slots)
        tiles_per_segment = triton.cdiv(triton.cdiv(n, tile), n_segments)  # even segments
        y = torch.empty_like(x)
        partials = torch.zeros(m * n_segments, dtype=torch.int64, device=x.device)
        layout = gl.NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=elem * 8, rank=1)
        flat = x.view(-1)
        in_desc = TensorDescriptor(flat, [flat.numel()], [1], [tile], layout)
        grid = min(_sms(), m * n_segments)
        _tma_stream_fwd_kernel[(grid,)](y, in_desc, partials, m, n, n_segments, tiles_per_segment, max_polls,
                                        TILE=tile, SLOTS=tiles_per_segment, VEC=vec, ALIGN=vec if n % vec == 0 else 1,
                                        SEGMENTS_BLOCK=max(2, triton.next_power_of_2(n_segments)),
                                        NUM_WARPS=num_warps, NEXT_EARLY=next_early, num_warps=num_warps)
        return y
    return forward


def small_checks() -> list:
    """Every config on small irregular shapes (odd N, one column, a row of one segment, rows of many segments, -inf
    masking, a fully masked row), against float64; raises on the first wrong element."""
    from probe_long_rows import check
    lines = []
    for dtype in ("float32", "float16", "bfloat16"):
        for m, n in ((3, 1), (5, 1000), (7, 8200), (4, 100001), (3, 262144), (2, 777777), (1, 1048576)):
            x = (torch.randn(m, n, device="cuda") * 2).to(getattr(torch, dtype))
            if n > 4:
                x[0, ::3] = float("-inf")
                x[-1, :] = float("-inf") if m > 2 else x[-1, :]
            ref = torch.softmax(x.double(), dim=-1)
            for label, forward in CONFIGS:
                got = forward(x)
                both_nan = torch.isnan(got) & torch.isnan(ref)
                err = ((got.double() - ref).abs() - (2e-3 * ref.abs() + 1e-6)).masked_fill(both_nan, -1)
                ok = bool((err <= 0).all())
                lines.append({"check": label, "dtype": dtype, "shape": [m, n], "passed": ok})
                assert ok, (label, dtype, m, n, float(err.max()))
    print("small checks passed:", len(lines), flush=True)
    return lines


CONFIGS = [("tma 32w x1, next early", tma_stream_forward()),
           ("tma 32w x1, next after", tma_stream_forward(next_early=False)),
           ("tma 16w x2, next early", tma_stream_forward(num_warps=16, vectors_per_thread=2)),
           ("tma 32w x1, 112 KB segments", tma_stream_forward(segment_bytes=112 * 1024))]


def trials_probe(out: list) -> None:
    """Each config against the dispatcher, three fresh inputs per shape (probe_trials.ab_trials)."""
    from probe_trials import IN_FLIGHT_SHAPES, ab_trials
    shapes = IN_FLIGHT_SHAPES + [(65536, "float16"), (100000, "float16"), (131072, "float16"), (65536, "float32"),
                                 (100001, "bfloat16")]
    for label, forward in CONFIGS:
        ab_trials(label, forward, shapes, out, trials=3)


if __name__ == "__main__":
    from probe_long_rows import save_results, warm_up_gpu
    warm_up_gpu()
    print(torch.cuda.get_device_name(), torch.__version__, triton.__version__, flush=True)
    results = small_checks()
    which = sys.argv[1:] or ["trials"]
    if "trials" in which:
        trials_probe(results)
    save_results("probe_tma_stream.json", results)
