"""Probe (round 139): a segment's exps held in registers from pass 1 to pass 2, its slots freed before the wait.

Exploration, not evidence. Round 138 (ncu, H200) found the 2-byte forward's passes near the MUFU unit's limit (two
exps an element: pass 1's sum, pass 2's write) and a third of its stalls in the wait for a row's other segments,
while tma-stream holds each segment's input in shared memory through that wait. This kernel keeps instead
e = exp(x - m_v) in registers (m_v: the max of the element's 16-byte vector), and writes y = e * exp(m_v - M) / S:
one multiply an element and one exp a vector in pass 2. Its slots are free once pass 1 has read them, so the next
item's tiles are asked for before the wait, not after it. Only rows cut into whole segments of whole tiles (the host
checks); no cold path: the grid is sized to be co-resident (registers capped at the share of programs an SM), and a
wait that runs out of polls leaves a wrong output, which the check catches. Against the dispatcher, three fresh
inputs a shape, every output checked against float64 first (probe_trials.ab_trials).

    python scripts/probe_held_exps.py     # on a Hopper GPU; $OUT/probe_held_exps.json
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
from probe_long_rows import save_results, sm, warm_up_gpu  # noqa: E402
from probe_trials import ab_trials  # noqa: E402
from kernels.gluon_softmax import (LOG2E, _await_slots, _cta_barrier, _issue_tile, _new_barriers, _pack,  # noqa: E402
                                   _register_share, _tile_offsets)

MAX_POLLS = 1 << 22


@gluon.jit
def _row_stats(slots_ptr, item, row, n_segments, siblings, max_polls, seg_max, seg_sum):
    """(row max, 1 / row sum) from this segment's (max, sum) and, in rows of several segments, its siblings', once
    each has published to the slots (no cold path: a sibling that never publishes leaves the output wrong)."""
    if n_segments == 1:
        return seg_max, 1.0 / seg_sum
    gl.atomic_xchg(slots_ptr + item, _pack(seg_max, seg_sum), sem="relaxed")
    packed = _await_slots(slots_ptr, row, n_segments, siblings, max_polls)[2]
    in_row = siblings < n_segments
    maxima = gl.where(in_row, (packed >> 32).to(gl.int32).to(gl.float32, bitcast=True), float("-inf"))
    row_max = gl.max(maxima, axis=0)
    sums = packed.to(gl.int32).to(gl.float32, bitcast=True) * gl.exp2((maxima - row_max) * LOG2E)
    return row_max, 1.0 / gl.sum(gl.where(in_row, sums, 0.0), axis=0)


@gluon.jit
def _held_fwd_kernel(output_ptr, in_desc, slots_ptr, n_rows, n_cols, n_segments, max_polls,
                     TILE: gl.constexpr, SLOTS: gl.constexpr, VEC: gl.constexpr, SEGMENTS_BLOCK: gl.constexpr,
                     NUM_WARPS: gl.constexpr):
    """Softmax of a contiguous [n_rows, n_cols] input whose rows are n_segments segments of SLOTS whole tiles:
    each (row, segment) item's tiles land in shared memory, are read once into registers as exps, and the slots
    take the next item's tiles while the program waits for the row's other segments."""
    dtype: gl.constexpr = in_desc.dtype
    W: gl.constexpr = in_desc.block_type.shape[1]
    SEG: gl.constexpr = SLOTS * TILE
    layout: gl.constexpr = gl.BlockedLayout([1, VEC], [32, 1], [NUM_WARPS, 1], [1, 0])
    lanes: gl.constexpr = gl.BlockedLayout([1], [32], [NUM_WARPS], [0])
    smem = gl.allocate_shared_memory(dtype, [SLOTS] + in_desc.block_type.shape, in_desc.layout)
    segment = smem._reinterpret(dtype, [SEG // VEC, VEC], gl.SwizzledSharedLayout(1, 1, 1, [1, 0]))
    bars = _new_barriers(SLOTS)
    offsets = _tile_offsets(SEG, VEC, layout)
    siblings = gl.arange(0, SEGMENTS_BLOCK, layout=lanes)
    n_items = n_rows * n_segments
    step = gl.num_programs(0)
    item = gl.program_id(0)
    if item < n_items:
        for i in gl.static_range(SLOTS):
            _issue_tile(in_desc, smem.index(i), bars.index(i), item * SEG + i * TILE, W)
    phase = item * 0
    for item in range(gl.program_id(0), n_items, step):
        row = item // n_segments
        for i in gl.static_range(SLOTS):
            mbarrier.wait(bars.index(i), phase)
        x = segment.load(layout).to(gl.float32)
        fence_async_shared()
        _cta_barrier()  # every warp has read the slots: they take the next item's tiles now, before the wait
        if item + step < n_items:
            for i in gl.static_range(SLOTS):
                _issue_tile(in_desc, smem.index(i), bars.index(i), (item + step) * SEG + i * TILE, W)
        phase = phase ^ 1
        vec_max = gl.max(x, axis=1)
        vec_safe = gl.where(vec_max == float("-inf"), 0.0, vec_max)
        e = gl.exp2((x - gl.expand_dims(vec_safe, 1)) * LOG2E)
        vec_sum = gl.sum(e, axis=1)
        seg_max = gl.max(vec_max, axis=0)
        seg_safe = gl.where(seg_max == float("-inf"), 0.0, seg_max)
        seg_sum = gl.sum(vec_sum * gl.exp2((vec_max - seg_safe) * LOG2E), axis=0)
        row_max, inv_row_sum = _row_stats(slots_ptr, item, row, n_segments, siblings, max_polls, seg_max, seg_sum)
        scale = gl.exp2((vec_safe - row_max) * LOG2E) * inv_row_sum
        y = e * gl.expand_dims(scale, 1)
        gl.store(output_ptr + (item * SEG + offsets).to(gl.int64), y.to(dtype))
    for i in gl.static_range(SLOTS):
        mbarrier.invalidate(bars.index(i))


def held_forward(warps: int, vectors: int, slots: int, programs_per_sm: int):
    """A forward of the held-exps kernel: tiles of vectors x warps x 32 16-byte vectors, slots a segment, this many
    programs an SM (registers capped at their share)."""
    def run(x: torch.Tensor) -> torch.Tensor:
        n_rows, n_cols = x.shape
        elem = x.element_size()
        width, tile = 512 // elem, warps * 32 * vectors * 16 // elem
        segment = slots * tile
        assert x.is_contiguous() and n_cols % segment == 0, (n_cols, segment)
        n_segments = n_cols // segment
        layout = gl.NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=8 * elem, rank=2)
        view = x.view(-1, width)
        desc = TensorDescriptor(view, list(view.shape), list(view.stride()), [tile // width, width], layout)
        slots_t = torch.zeros(max(1, n_rows * n_segments), dtype=torch.int64, device=x.device)
        y = torch.empty_like(x)
        sms = torch.cuda.get_device_properties(x.device).multi_processor_count
        grid = (min(programs_per_sm * sms, n_rows * n_segments),)
        _held_fwd_kernel[grid](y, desc, slots_t, n_rows, n_cols, n_segments, MAX_POLLS, TILE=tile, SLOTS=slots,
                               VEC=16 // elem, SEGMENTS_BLOCK=max(2, triton.next_power_of_2(n_segments)),
                               NUM_WARPS=warps, num_warps=warps,
                               maxnreg=_register_share(programs_per_sm, warps) or None)
        return y
    return run


# (label, warps, vectors, slots, programs an SM): 2-byte segments of 8-32 KB, 32-64 exps held a thread
LAUNCHES = [("8 warps x 2 vectors, 4 slots of 8 KB, 2 programs", 8, 2, 4, 2),
            ("4 warps x 2 vectors, 4 slots of 4 KB, 4 programs", 4, 2, 4, 4),
            ("4 warps x 4 vectors, 2 slots of 8 KB, 4 programs", 4, 4, 2, 4),
            ("4 warps x 2 vectors, 2 slots of 4 KB, 6 programs", 4, 2, 2, 6),
            ("4 warps x 1 vector, 4 slots of 2 KB, 8 programs", 4, 1, 4, 8)]
SHAPES = [(65536, "bfloat16"), (131072, "float16"), (262144, "bfloat16"), (1048576, "float16"),
          (131072, "float32"), (1048576, "float32")]


if __name__ == "__main__":
    warm_up_gpu()
    results = []
    for label, warps, vectors, slots, programs in LAUNCHES:
        try:
            ab_trials(f"held exps, {label}", held_forward(warps, vectors, slots, programs), SHAPES, results, trials=3)
        except (AssertionError, RuntimeError, ValueError) as error:  # a launch that does not fit, or a wrong output
            print(f"held exps, {label}: {type(error).__name__}: {error}", flush=True)
            results.append({"probe": f"held exps, {label}", "error": f"{type(error).__name__}: {error}"})
    save_results("probe_held_exps.json", results)
