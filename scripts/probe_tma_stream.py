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
Rows must be contiguous with a 16-byte-aligned base, and the tensor whole 512-byte view rows: the descriptor views it
as [numel / W, W] (W = 512 bytes of elements) and a tile is one box of such rows, so one TMA request a tile (Triton
puts a CTA barrier before each). Any N: a segment's first tile starts at the view row that holds its first element,
and the masks drop what lies outside the segment. No guard for rows whose scaled
maximum overflows (the probe's inputs are randn * 2).

    python scripts/probe_tma_stream.py [trials] [warps] [single] [h100] [product] [backward]   # CUDA sm_90; writes
    # probe_tma_stream.json (copied to $OUT by the device command)
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
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
# the helpers the product kept as the probe wrote them (its kernel here keeps the probe's log2 domain and knobs)
from kernels.gluon_softmax import _await_slots, _issue_tile, _item_span, _pack  # noqa: E402

LOG2E: gl.constexpr = gl.constexpr(1.4426950408889634)
SHARED_BYTES = 220 * 1024  # of the 227 KB a program may take, with room for the barriers
MOST_SHARED = 225 * 1024  # 14 tiles of 16 KB and the barriers: the most a program may take


@gluon.jit
def _issue_item(in_desc, smem, bars, item, n_items, n_segments, segment_cols, n_cols,
                TILE: gl.constexpr, SLOTS: gl.constexpr, W: gl.constexpr, first_slot):
    """Ask the TMA for every tile of item (if it exists) into slots first_slot, first_slot + 1, ... (at most SLOTS);
    each slot's barrier counts its bytes."""
    if item < n_items:
        row, first, end, tile_start, n_tiles = _item_span(item, n_segments, segment_cols, n_cols, TILE, W)
        for i in gl.static_range(SLOTS):
            if i < n_tiles:
                _issue_tile(in_desc, smem.index(first_slot + i), bars.index(first_slot + i), tile_start + i * TILE, W)


@gluon.jit
def _tma_stream_fwd_kernel(output_ptr, in_desc, slots_ptr, n_rows, n_cols, n_segments, segment_cols, max_polls,
                           TILE: gl.constexpr, SLOTS: gl.constexpr, VEC: gl.constexpr, ALIGN: gl.constexpr,
                           SEGMENTS_BLOCK: gl.constexpr, NUM_WARPS: gl.constexpr, NEXT_EARLY: gl.constexpr,
                           DOUBLE: gl.constexpr = False):
    """Two-pass online softmax of (row, segment) items program_id, program_id + num_programs, ...; a segment is at most
    SLOTS tiles of TILE elements (boxes of the input viewed as [numel / W, W]), all held in shared memory from its load
    to its write. NEXT_EARLY: tile i of the next item is asked for as soon as tile i of this one is written (else:
    after the whole segment is written). DOUBLE: two halves of SLOTS // 2 slots, items alternating between them, each
    item's tiles asked for when the item two before it is written, so a whole item's reads are in flight while this
    one is reduced, waits and is written."""
    dtype: gl.constexpr = in_desc.dtype
    W: gl.constexpr = in_desc.block_type.shape[1]
    layout: gl.constexpr = gl.BlockedLayout([1, VEC], [32, 1], [NUM_WARPS, 1], [1, 0])
    vectors: gl.constexpr = gl.SwizzledSharedLayout(1, 1, 1, [1, 0])
    smem = gl.allocate_shared_memory(dtype, [SLOTS] + in_desc.block_type.shape, in_desc.layout)  # unswizzled boxes
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
    HALF: gl.constexpr = SLOTS // 2 if DOUBLE else SLOTS
    _issue_item(in_desc, smem, bars, gl.program_id(0), n_items, n_segments, segment_cols, n_cols, TILE, HALF,
                W, 0)
    if DOUBLE:
        _issue_item(in_desc, smem, bars, gl.program_id(0) + step, n_items, n_segments, segment_cols, n_cols,
                    TILE, HALF, W, HALF)
    phases = gl.program_id(0) * 0  # bit i: the phase slot i's barrier completes next
    first_slot = gl.program_id(0) * 0  # DOUBLE: 0 and HALF in turn
    for item in range(gl.program_id(0), n_items, step):
        row, first, end, tile_start, n_tiles = _item_span(item, n_segments, segment_cols, n_cols, TILE, W)
        vec_max = gl.full([TILE // VEC], float("-inf"), gl.float32, layout=gl.SliceLayout(1, layout))
        vec_sum = gl.full([TILE // VEC], 0.0, gl.float32, layout=gl.SliceLayout(1, layout))
        for i in gl.static_range(HALF):  # pass 1: each tile as it lands
            if i < n_tiles:
                mbarrier.wait(bars.index(first_slot + i), (phases >> (first_slot + i)) & 1)
                x = smem.index(first_slot + i)._reinterpret(dtype, [TILE // VEC, VEC], vectors).load(layout)
                x = x.to(gl.float32)
                flat = tile_start + i * TILE + offsets
                x = gl.where((flat >= first) & (flat < end), x, float("-inf"))
                new_max = gl.maximum(vec_max, gl.max(x, axis=1) * LOG2E)
                safe_max = gl.where(new_max == float("-inf"), 0.0, new_max)  # a vector of only -inf keeps sum 0
                terms = gl.exp2(gl.fma(x, LOG2E, -gl.expand_dims(safe_max, 1)))
                vec_sum = vec_sum * gl.exp2(vec_max - safe_max) + gl.sum(terms, axis=1)
                vec_max = new_max
        phases = phases ^ (((1 << n_tiles) - 1) << first_slot)
        seg_max = gl.max(vec_max, axis=0)
        safe_seg_max = gl.where(seg_max == float("-inf"), 0.0, seg_max)
        seg_sum = gl.sum(vec_sum * gl.exp2(vec_max - safe_seg_max), axis=0)
        if n_segments == 1:
            row_max = seg_max
            inv_row_sum = 1.0 / (seg_sum * gl.exp2(seg_max - row_max))  # NaN for a fully -inf row, as torch
        else:
            gl.atomic_xchg(slots_ptr + item, _pack(seg_max, seg_sum), sem="relaxed")
            ptrs, in_row, packed, missing = _await_slots(slots_ptr, row, n_segments, siblings, max_polls)
            part_max = gl.where(in_row, (packed >> 32).to(gl.int32).to(gl.float32, bitcast=True), float("-inf"))
            part_sum = packed.to(gl.int32).to(gl.float32, bitcast=True)
            row_max = gl.max(part_max, axis=0)
            inv_row_sum = 1.0 / gl.sum(gl.where(in_row, part_sum * gl.exp2(part_max - row_max), 0.0), axis=0)
        next_item = item + step
        next_row, next_first, next_end, next_tile_start, next_tiles = _item_span(next_item, n_segments,
                                                                                 segment_cols, n_cols, TILE, W)
        if next_item >= n_items:
            next_tiles = 0
        for i in gl.static_range(HALF):  # pass 2, from shared memory; the next item's tile i follows tile i
            if i < n_tiles:
                x = smem.index(first_slot + i)._reinterpret(dtype, [TILE // VEC, VEC], vectors).load(layout)
                x = x.to(gl.float32)
                y = gl.exp2(gl.fma(x, LOG2E, -row_max)) * inv_row_sum
                flat = tile_start + i * TILE + offsets
                gl.store(output_ptr + flat.to(gl.int64), y.to(dtype), mask=(flat >= first) & (flat < end))
            if NEXT_EARLY:
                if i < next_tiles:
                    fence_async_shared()
                    gl.thread_barrier()  # every warp has read slot i
                    _issue_tile(in_desc, smem.index(i), bars.index(i), next_tile_start + i * TILE, W)
        if DOUBLE:
            fence_async_shared()
            gl.thread_barrier()  # every warp has read this half
            _issue_item(in_desc, smem, bars, next_item + step, n_items, n_segments, segment_cols, n_cols, TILE,
                        HALF, W, first_slot)
            first_slot = HALF - first_slot
        elif not NEXT_EARLY:
            fence_async_shared()
            gl.thread_barrier()
            _issue_item(in_desc, smem, bars, next_item, n_items, n_segments, segment_cols, n_cols, TILE, SLOTS,
                        W, 0)
    for i in gl.static_range(SLOTS):
        mbarrier.invalidate(bars.index(i))


def _sms() -> int:
    """The current GPU's SM count."""
    return torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count


def tma_stream_forward(num_warps: int = 32, vectors_per_thread: int = 1, segment_bytes: int = SHARED_BYTES,
                       next_early: bool = True, double: bool = False, max_polls: int = 1 << 30):
    """A forward callable: rows in segments of at most segment_bytes held in shared memory (see the kernel)."""
    def forward(x: torch.Tensor) -> torch.Tensor:
        m, n = x.shape
        elem = x.element_size()
        vec = 16 // elem
        width = 512 // elem  # a view row of 512 bytes: 256 fp16 or 128 fp32 elements
        assert x.is_contiguous() and x.data_ptr() % 16 == 0 and x.numel() % width == 0, "probe: see the docstring"
        tile = num_warps * 32 * vectors_per_thread * vec
        spare = 0 if n % width == 0 else 1  # a segment that starts inside a view row may take one tile more
        halves = 2 if double else 1
        slots = max(1, min(segment_bytes // halves // (tile * elem) - spare, triton.cdiv(n, tile)))
        n_segments = triton.cdiv(triton.cdiv(n, tile), slots)
        tiles_per_segment = triton.cdiv(triton.cdiv(n, tile), n_segments)  # even segments
        y = torch.empty_like(x)
        partials = torch.zeros(m * n_segments, dtype=torch.int64, device=x.device)
        layout = gl.NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=elem * 8, rank=2)
        view = x.view(-1, width)
        in_desc = TensorDescriptor(view, list(view.shape), list(view.stride()), [tile // width, width], layout)
        grid = min(_sms(), m * n_segments)
        _tma_stream_fwd_kernel[(grid,)](y, in_desc, partials, m, n, n_segments, tiles_per_segment * tile, max_polls,
                                        TILE=tile, SLOTS=halves * (tiles_per_segment + spare), VEC=vec,
                                        ALIGN=vec if n % vec == 0 else 1,
                                        SEGMENTS_BLOCK=max(2, triton.next_power_of_2(n_segments)),
                                        NUM_WARPS=num_warps, NEXT_EARLY=next_early and not double, DOUBLE=double,
                                        num_warps=num_warps)
        return y
    return forward


def small_checks() -> list:
    """Every config on small irregular shapes (odd N, one column, a row of one segment, rows of many segments, -inf
    masking, a fully masked row), against float64; raises on the first wrong element."""
    from probe_long_rows import check
    lines = []
    for dtype in ("float32", "float16", "bfloat16"):
        for m, n in ((256, 1), (256, 1000), (128, 8200), (256, 100001), (4, 262144), (128, 65536), (256, 300001),
                     (2, 1048576)):
            x = (torch.randn(m, n, device="cuda") * 2).to(getattr(torch, dtype))
            if n > 4:
                x[0, ::3] = float("-inf")
                x[-1, :] = float("-inf") if m > 2 else x[-1, :]
            ref = torch.softmax(x.double(), dim=-1)
            for label, forward in CONFIGS + WARPS_CONFIGS + SINGLE_CONFIGS:
                got = forward(x)
                both_nan = torch.isnan(got) & torch.isnan(ref)
                rtol = {"float32": 1e-4, "float16": 2e-3, "bfloat16": 1.6e-2}[dtype]  # about 2^-13 and two output ulps
                err = ((got.double() - ref).abs() - (rtol * ref.abs() + 1e-6)).masked_fill(both_nan, -1)
                ok = bool((err <= 0).all())
                lines.append({"check": label, "dtype": dtype, "shape": [m, n], "passed": ok})
                assert ok, (label, dtype, m, n, float(err.max()))
    print("small checks passed:", len(lines), flush=True)
    return lines


CONFIGS = [("tma 32w, two halves of 104 KB", tma_stream_forward(double=True)),
           ("tma 16w x2, two halves of 104 KB", tma_stream_forward(num_warps=16, vectors_per_thread=2, double=True)),
           ("tma 32w, two halves of 64 KB", tma_stream_forward(double=True, segment_bytes=128 * 1024 + 8192)),
           ("tma 32w x1, next early", tma_stream_forward())]
WARPS_CONFIGS = [("tma 8w x4, two halves of 104 KB",
                  tma_stream_forward(num_warps=8, vectors_per_thread=4, double=True)),
                 ("tma 4w x8, two halves of 104 KB",
                  tma_stream_forward(num_warps=4, vectors_per_thread=8, double=True)),
                 ("tma 16w x2, one segment of 208 KB, next early", tma_stream_forward(num_warps=16,
                                                                                      vectors_per_thread=2))]


SINGLE_CONFIGS = [("tma 8w x4, one segment of 224 KB, next early",
                   tma_stream_forward(num_warps=8, vectors_per_thread=4, segment_bytes=MOST_SHARED)),
                  ("tma 16w x2, one segment of 224 KB, next early",
                   tma_stream_forward(num_warps=16, vectors_per_thread=2, segment_bytes=MOST_SHARED)),
                  ("tma 8w x2, one segment of 224 KB, next early",
                   tma_stream_forward(num_warps=8, vectors_per_thread=2, segment_bytes=MOST_SHARED)),
                  ("tma 8w x4, one segment of 208 KB, next early",
                   tma_stream_forward(num_warps=8, vectors_per_thread=4))]


def single_probe(out: list) -> None:
    """One segment of 208-224 KB a program, the next item's tiles asked for as this one's are written, on fewer warps
    (the warps trials: 16 warps on one segment won at fp32 131,072-1M)."""
    from probe_trials import ab_trials
    shapes = [(131072, "float32"), (262144, "float32"), (524288, "float32"), (1048576, "float32"),
              (262144, "float16"), (1048576, "float16"), (262144, "bfloat16"), (65536, "float16"),
              (65536, "float32"), (131072, "float16")]
    for label, forward in SINGLE_CONFIGS:
        ab_trials(label, forward, shapes, out, trials=2)


def product_probe(out: list) -> None:
    """The product's tma-stream path (kernels/gluon_softmax.py, through the dispatcher) against the dispatcher with it
    off (tile-stream), on the float32 sweep shapes it takes."""
    from probe_trials import ab_trials, sm

    def tile_stream(x):
        eligible, sm._tma_stream_eligible = sm._tma_stream_eligible, lambda x, op="forward": False
        try:
            return sm.softmax_forward(x)
        finally:
            sm._tma_stream_eligible = eligible
    shapes = [(n, "float32") for n in (100000, 131072, 262144, 524288, 1048576)]
    ab_trials("product tma-stream", sm.softmax_forward, shapes, out, baseline=tile_stream, trials=2)


def backward_probe(out: list) -> None:
    """Round 99: the backward on tma-stream's plan (kernels/gluon_softmax.py, _tma_stream_bwd_kernel: y and dy of each
    segment in shared memory) against the dispatcher's backward, on fresh inputs, every output checked."""
    from kernels import gluon_softmax as gs
    from probe_trials import ab_trials, backward_case

    def tma_backward(warps, vectors):
        def backward(y, dy):
            assert gs.tma_backward_eligible(y) and gs.tma_backward_eligible(dy)
            dx = torch.empty_like(y)
            gs.tma_stream_backward(dx, y, dy, vectors, warps, gs.SEGMENT_BYTES, 4096)
            return dx
        return backward
    shapes = [(n, dtype) for dtype in ("float32", "float16", "bfloat16") for n in (65536, 131072, 1048576)]
    for warps, vectors in ((8, 4), (16, 2)):
        ab_trials(f"tma backward {warps}w x{vectors}", tma_backward(warps, vectors), shapes, out,
                  baseline=sm_backward(), trials=2, case=backward_case)


def sm_backward():
    """The dispatcher's backward (probe_trials' module)."""
    from probe_trials import sm
    return sm.softmax_backward


def h100_probe(out: list) -> None:
    """The H200's best (8 warps x 4 vectors, one segment of 224 KB) and 16 x 2 on an H100."""
    from probe_trials import ab_trials
    shapes = [(131072, "float32"), (262144, "float32"), (524288, "float32"), (1048576, "float32"),
              (262144, "float16"), (1048576, "float16"), (262144, "bfloat16")]
    for label, forward in SINGLE_CONFIGS[:2]:
        ab_trials(label, forward, shapes, out, trials=2)


def warps_probe(out: list) -> None:
    """Fewer warps, more vectors a thread (the first trials: 16 warps beat 32), on the shapes that split."""
    from probe_trials import ab_trials
    shapes = [(131072, "float32"), (262144, "float32"), (1048576, "float32"), (262144, "float16"),
              (1048576, "float16"), (262144, "bfloat16"), (65536, "float16"), (65536, "float32")]
    for label, forward in WARPS_CONFIGS:
        ab_trials(label, forward, shapes, out, trials=2)


def trials_probe(out: list) -> None:
    """Each config against the dispatcher, three fresh inputs per shape (probe_trials.ab_trials)."""
    from probe_trials import IN_FLIGHT_SHAPES, ab_trials
    from probe_long_rows import ELEMENTS
    shapes = IN_FLIGHT_SHAPES + [(65536, "float16"), (131072, "float16"), (65536, "float32")]
    shapes = [(n, dtype) for n, dtype in shapes if ELEMENTS // n * n % (128 if dtype == "float32" else 256) == 0]
    for label, forward in CONFIGS[:-1]:
        ab_trials(label, forward, shapes, out, trials=3)


if __name__ == "__main__":
    from probe_long_rows import save_results, warm_up_gpu
    warm_up_gpu()
    print(torch.cuda.get_device_name(), torch.__version__, triton.__version__, flush=True)
    which = sys.argv[1:] or ["trials"]
    results = [] if set(which) <= {"product", "backward"} else small_checks()
    probes = {"trials": trials_probe, "warps": warps_probe, "single": single_probe, "h100": h100_probe,
              "product": product_probe, "backward": backward_probe}
    for name, probe in probes.items():  # in this order, whatever the order asked
        if name in which:
            probe(results)
    save_results("probe_tma_stream.json", results)
