"""Probe (round 168): the tma-stream backward finishing each item one step late, both items in shared memory.

Exploration, not evidence. Round 167 measured what the exchange costs the H200's one-program fp32 backward at 1M:
10.5% (92.5% of the ceiling without it, 83% with it). While a program waits for its row's other segments its shared
memory is full and nothing of its SM's share of HBM moves. Here a program holds two items at once, each in its own
group of SLOTS slot pairs (half the shared memory each): it runs the next item's pass 1 (its tiles loaded during the
last item's pass 2) and publishes it before it waits for this item's siblings, so that one pass 1 stands between
publishing an item and needing its row's total. Round 28 tried the lag on tile-stream, whose lagged segment had left
L2 by its second pass; here it stays in shared memory. The price: half the bytes an item, so twice the segments a row
(fp32 1M: 74 or 86 segments against the table's 29). Against the table (triton_softmax.softmax_backward), three fresh
inputs a shape, every output checked against float64 first.

    python scripts/probe_tma_lag.py           # on a Hopper GPU; $OUT/probe_tma_lag.json
    python scripts/probe_tma_lag.py compile   # no GPU: registers and spills of each variant, sm_90
"""
import re
import sys
from pathlib import Path

import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from kernels import gluon_softmax as gs  # noqa: E402
from kernels.gluon_softmax import (  # noqa: E402
    _await_slots, _anywhere, _cta_barrier, _global_segment_dot, _issue_pair, _item_span, _missing, _new_barriers,
    _pack_dot, _tile, _tile_offsets)

MAX_POLLS = 1 << 22
# (slots a group, vectors a thread, warps): 16 KB tiles on 8 warps, 3 a group (6 of the 7 pairs the table holds);
# 8 KB tiles on 8 and on 4 warps, 7 a group (all 14 pairs)
VARIANTS = [(3, 4, 8), (7, 2, 8), (7, 4, 4)]
SHAPES = [(1048576, "float32"), (786432, "float32"), (524288, "float32"), (2097152, "float32"),
          (131072, "float32"), (1048576, "float16")]


@gluon.jit
def _lag_pass1(y_smem, dy_smem, bars, base, phases, tile_start, n_tiles, first, end, offsets, dtype: gl.constexpr,
               TILE: gl.constexpr, SLOTS: gl.constexpr, VEC: gl.constexpr, layout: gl.constexpr):
    """sum(y * dy) over an item's tiles in slots base .. base + n_tiles - 1, each as it lands."""
    vec_dot = gl.full([TILE // VEC], 0.0, gl.float32, layout=gl.SliceLayout(1, layout))
    for i in gl.static_range(SLOTS):
        if i < n_tiles:
            mbarrier.wait(bars.index(base + i), (phases >> (base + i)) & 1)
            flat = tile_start + i * TILE + offsets
            product = (_tile(y_smem, base + i, dtype, TILE, VEC, layout)
                       * _tile(dy_smem, base + i, dtype, TILE, VEC, layout))
            vec_dot += gl.sum(gl.where((flat >= first) & (flat < end), product, 0.0), axis=1)
    return gl.sum(vec_dot, axis=0)


@gluon.jit
def _lag_issue(y_desc, dy_desc, y_smem, dy_smem, bars, base, tile_start, n_tiles, SLOTS: gl.constexpr,
               TILE: gl.constexpr, W: gl.constexpr):
    """Ask the TMA for an item's tiles into slots base .. base + n_tiles - 1."""
    for i in gl.static_range(SLOTS):
        if i < n_tiles:
            _issue_pair(y_desc, dy_desc, y_smem.index(base + i), dy_smem.index(base + i), bars.index(base + i),
                        tile_start + i * TILE, W)


@gluon.jit
def _lag_bwd_kernel(grad_input_ptr, output_ptr, grad_output_ptr, y_desc, dy_desc, slots_ptr, n_rows, n_cols,
                    n_segments, segment_cols, max_polls, TILE: gl.constexpr, SLOTS: gl.constexpr, VEC: gl.constexpr,
                    SEGMENTS_BLOCK: gl.constexpr, NUM_WARPS: gl.constexpr):
    """gluon_softmax._tma_stream_bwd_kernel (without register tiles) holding two items: item k + 1's pass 1 runs, and
    its partial is published, before item k waits for its row's total; item k's pass 2 then refills its group with
    item k + 2's tiles. Every item publishes, one segment a row too (the host allocates a slot an item)."""
    dtype: gl.constexpr = y_desc.dtype
    W: gl.constexpr = y_desc.block_type.shape[1]
    layout: gl.constexpr = gl.BlockedLayout([1, VEC], [32, 1], [NUM_WARPS, 1], [1, 0])
    y_smem = gl.allocate_shared_memory(dtype, [2 * SLOTS] + y_desc.block_type.shape, y_desc.layout)
    dy_smem = gl.allocate_shared_memory(dtype, [2 * SLOTS] + dy_desc.block_type.shape, dy_desc.layout)
    bars = _new_barriers(2 * SLOTS)
    n_cols = n_cols // VEC * VEC
    segment_cols = segment_cols // VEC * VEC
    offsets = _tile_offsets(TILE, VEC, layout)
    siblings = gl.arange(0, SEGMENTS_BLOCK, layout=gl.BlockedLayout([1], [32], [NUM_WARPS], [0]))
    n_items = n_rows * n_segments
    step = gl.num_programs(0)
    item = gl.program_id(0)  # the grid is at most n_items programs: every program has a first item
    row, first, end, tile_start, n_tiles = _item_span(item, n_segments, segment_cols, n_cols, TILE, W)
    _lag_issue(y_desc, dy_desc, y_smem, dy_smem, bars, 0, tile_start, n_tiles, SLOTS, TILE, W)
    second = item + step
    s_row, s_first, s_end, s_tile_start, s_tiles = _item_span(second, n_segments, segment_cols, n_cols, TILE, W)
    if second < n_items:
        _lag_issue(y_desc, dy_desc, y_smem, dy_smem, bars, SLOTS, s_tile_start, s_tiles, SLOTS, TILE, W)
    phases = item * 0  # bit i: the phase slot i's barrier completes next
    dot = _lag_pass1(y_smem, dy_smem, bars, 0, phases, tile_start, n_tiles, first, end, offsets, dtype, TILE, SLOTS,
                     VEC, layout)
    phases = phases ^ ((1 << n_tiles) - 1)
    gl.atomic_xchg(slots_ptr + item, _pack_dot(dot), sem="relaxed")
    base = item * 0  # the group of the item whose pass 2 is next
    for item in range(gl.program_id(0), n_items, step):
        row, first, end, tile_start, n_tiles = _item_span(item, n_segments, segment_cols, n_cols, TILE, W)
        next_base = SLOTS - base
        following = item + step
        f_row, f_first, f_end, f_tile_start, f_tiles = _item_span(following, n_segments, segment_cols, n_cols, TILE,
                                                                  W)
        if following < n_items:  # the lag: the next item's pass 1 and partial before this item's wait
            f_dot = _lag_pass1(y_smem, dy_smem, bars, next_base, phases, f_tile_start, f_tiles, f_first, f_end,
                               offsets, dtype, TILE, SLOTS, VEC, layout)
            phases = phases ^ (((1 << f_tiles) - 1) << next_base)
            gl.atomic_xchg(slots_ptr + following, _pack_dot(f_dot), sem="relaxed")
        ptrs, in_row, packed, missing = _await_slots(slots_ptr, row, n_segments, siblings, max_polls)
        if _anywhere(missing, NUM_WARPS):
            row_first = row * n_cols
            for sibling in range(0, n_segments):
                if (sibling != item - row * n_segments) & _anywhere(_missing(packed, siblings, sibling), NUM_WARPS):
                    s_first = row_first + sibling * segment_cols
                    s_dot = _global_segment_dot(output_ptr, grad_output_ptr, s_first,
                                                gl.minimum(s_first + segment_cols, row_first + n_cols), offsets,
                                                TILE, VEC, layout)
                    gl.atomic_xchg(slots_ptr + row * n_segments + sibling, _pack_dot(s_dot), sem="relaxed")
            ptrs, in_row, packed, missing = _await_slots(slots_ptr, row, n_segments, siblings, 1 << 30)
        row_dot = gl.sum(gl.where(in_row, packed.to(gl.int32).to(gl.float32, bitcast=True), 0.0), axis=0)
        after = item + 2 * step
        a_row, a_first, a_end, a_tile_start, a_tiles = _item_span(after, n_segments, segment_cols, n_cols, TILE, W)
        if after >= n_items:
            a_tiles = 0
        for i in gl.static_range(SLOTS):  # pass 2 from this item's group; item k + 2's tile i follows tile i
            if i < n_tiles:
                flat = tile_start + i * TILE + offsets
                y = _tile(y_smem, base + i, dtype, TILE, VEC, layout)
                dx = y * (_tile(dy_smem, base + i, dtype, TILE, VEC, layout) - row_dot)
                gl.store(grad_input_ptr + flat.to(gl.int64), dx.to(dtype), mask=(flat >= first) & (flat < end))
            if i < a_tiles:
                fence_async_shared()
                _cta_barrier()  # every warp has read slot base + i
                _issue_pair(y_desc, dy_desc, y_smem.index(base + i), dy_smem.index(base + i), bars.index(base + i),
                            a_tile_start + i * TILE, W)
        base = next_base
    for i in gl.static_range(2 * SLOTS):
        mbarrier.invalidate(bars.index(i))


def cut(n_cols: int, tile: int, slots: int) -> tuple[int, int]:
    """(segments a row, columns a segment): rows of whole tiles in as few segments of slots tiles as fit, as even as
    whole tiles allow."""
    n_segments = triton.cdiv(n_cols, slots * tile)
    return n_segments, triton.cdiv(triton.cdiv(n_cols, tile), n_segments) * tile


def lag_backward(slots: int, vectors: int, warps: int):
    """The probe's backward: two items of slots tile pairs each held by one program an SM."""
    import torch

    def run(y: torch.Tensor, dy: torch.Tensor) -> torch.Tensor:
        n_rows, n_cols = y.shape
        elem = y.element_size()
        tile, width = warps * 32 * vectors * 16 // elem, gs._view_width(y)
        if n_cols % width or tile % width:
            raise SystemExit(f"{n_cols} columns: rows not of whole view rows of {width}")
        n_segments, segment_cols = cut(n_cols, tile, slots)
        layout = gs._shared_layout(elem)

        def descriptor(u):
            return gs.TensorDescriptor(u.view(-1, width), [u.numel() // width, width], [width, 1],
                                       [tile // width, width], layout)
        dx = torch.empty_like(y)
        slots_t = torch.zeros(n_rows * n_segments, dtype=torch.int64, device=y.device)
        grid = (min(gs._device_facts(y.device)[1], n_rows * n_segments),)
        _lag_bwd_kernel[grid](dx, y, dy, descriptor(y), descriptor(dy), slots_t, n_rows, n_cols, n_segments,
                              segment_cols, MAX_POLLS, TILE=tile, SLOTS=slots, VEC=16 // elem,
                              SEGMENTS_BLOCK=max(2, triton.next_power_of_2(n_segments)), NUM_WARPS=warps,
                              num_warps=warps)
        return dx
    return run


def offline(slots: int, vectors: int, warps: int, dtype: str = "fp32") -> dict:
    """Registers, spills and shared memory of one variant compiled for sm_90 without a GPU."""
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource
    from sass_digest import cuobjdump

    elem = 4 if dtype == "fp32" else 2
    tile, width = warps * 32 * vectors * 16 // elem, 512 // elem
    layout = f"NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth={8 * elem}, rank=2)"
    desc, pointer = f"tensordesc<{dtype}[{tile // width},{width}],{layout}>", "*" + dtype
    signature = {"grad_input_ptr": pointer, "output_ptr": pointer, "grad_output_ptr": pointer, "y_desc": desc,
                 "dy_desc": desc, "slots_ptr": "*i64", "n_rows": "i32", "n_cols": "i32", "n_segments": "i32",
                 "segment_cols": "i32", "max_polls": "i32"}
    constexprs = dict(TILE=tile, SLOTS=slots, VEC=16 // elem, SEGMENTS_BLOCK=128, NUM_WARPS=warps)
    signature.update(dict.fromkeys(constexprs, "constexpr"))
    kernel = triton.compile(GluonASTSource(fn=_lag_bwd_kernel, signature=signature, constexprs=constexprs,
                                           attrs={(i,): [["tt.divisibility", 16]] for i in (0, 1, 2, 5)}),
                            target=GPUTarget("cuda", 90, 32), options={"num_warps": warps})
    used = {k: int(v) for k, v in re.findall(r"(REG|STACK|LOCAL):(\d+)", cuobjdump(kernel, "-res-usage"))}
    return {"variant": (slots, vectors, warps), "dtype": dtype, "registers": used["REG"], "local": used["LOCAL"],
            "shared": kernel.metadata.shared}


if __name__ == "__main__":
    if sys.argv[1:] == ["compile"]:
        for variant in VARIANTS:
            for dtype in ("fp32", "fp16"):
                print(offline(*variant, dtype=dtype), flush=True)
        raise SystemExit(0)
    import torch
    from probe_long_rows import save_results, sm, warm_up_gpu
    from probe_trials import ab_trials, backward_case
    warm_up_gpu()
    print(torch.cuda.get_device_name(), flush=True)
    results: list = []
    for variant in VARIANTS:
        label = "backward lagged, 2 x %d slots, %d vectors x %d warps" % variant
        ab_trials(label, lag_backward(*variant), SHAPES, results, baseline=sm.softmax_backward, trials=3,
                  case=backward_case)
    save_results("probe_tma_lag.json", results)
