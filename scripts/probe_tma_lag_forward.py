"""Probe (round 170): the tma-stream forward finishing each item one step late, on several launches.

Exploration, not evidence. Rounds 168-169 gave the H200's one-program backward back what its exchange cost (fp32 1M
+10-12%) by holding two items a program. Round 167 found the forward's launch (6 programs of 4 slots of 8 KB) no
faster with no exchange at all for 2-byte rows, and 3-4% faster for fp32 777,777 and 1M; but that is one launch's
ceiling. With the lag the wait stops deciding the launch, so launches the wait ruled out (one program an SM, whose
passes and wait ran one after another, rounds 113-114) can run again. This kernel is tma-stream's forward (rows of
whole view rows only: no loose elements; the tiles as a loop) holding two items a program in two groups of SLOTS
slots, item k + 1's pass 1 and partial before item k's wait. Against the table (triton_softmax.softmax_forward),
three fresh inputs a shape, every output checked against float64 first.

    python scripts/probe_tma_lag_forward.py           # on a Hopper GPU; $OUT/probe_tma_lag_forward.json
    python scripts/probe_tma_lag_forward.py compile   # no GPU: registers and spills of each launch, sm_90
    AB_BEFORE=before.py python scripts/probe_tma_lag_forward.py table   # round 171: the table's lag row against
                                                                          # the module at AB_BEFORE
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
    _anywhere, _await_slots, _combine, _cta_barrier, _exp, _global_segment_max_sum, _issue_tile, _item_span, _missing,
    _new_barriers, _online, _pack, _segment_span, _tile, _tile_offsets)

MAX_POLLS = 1 << 22
# (programs an SM, warps, vectors a thread, slots an item): every tile 8 KB; two items' slots a program
LAUNCHES = [(1, 8, 2, 14), (1, 16, 1, 14), (2, 8, 2, 7), (3, 4, 4, 4), (6, 4, 4, 2)]
SHAPES = [(65536, "bfloat16"), (131072, "float16"), (262144, "bfloat16"), (1048576, "float16"), (262144, "float32"),
          (1048576, "float32")]


@gluon.jit
def _lag_stats(smem, bars, base, phases, tile_start, n_tiles, first, end, offsets, dtype: gl.constexpr,
               TILE: gl.constexpr, VEC: gl.constexpr, layout: gl.constexpr):
    """Pass 1 of an item in slots base ..: its (max, sum of exp(x - max)) over [first, end), each tile as it lands."""
    vec_max = gl.full([TILE // VEC], float("-inf"), gl.float32, layout=gl.SliceLayout(1, layout))
    vec_sum = gl.full([TILE // VEC], 0.0, gl.float32, layout=gl.SliceLayout(1, layout))
    for t in range(n_tiles):
        mbarrier.wait(bars.index(base + t), (phases >> (base + t)) & 1)
        flat = tile_start + t * TILE + offsets
        x = gl.where((flat >= first) & (flat < end), _tile(smem, base + t, dtype, TILE, VEC, layout), float("-inf"))
        vec_max, vec_sum = _online(vec_max, vec_sum, x)
    return _combine(vec_max, vec_sum)


@gluon.jit
def _lag_fwd_kernel(output_ptr, input_ptr, in_desc, slots_ptr, n_rows, n_cols, n_segments, segment_cols, max_polls,
                    TILE: gl.constexpr, SLOTS: gl.constexpr, VEC: gl.constexpr, SEGMENTS_BLOCK: gl.constexpr,
                    NUM_WARPS: gl.constexpr):
    """Softmax of a contiguous [n_rows, n_cols] input of whole view rows, two (row, segment) items a program: item
    k + 1's pass 1 and partial before item k waits for its row; item k's pass 2 refills its group with item k + 2's
    tiles. Every item publishes (the host allocates a slot an item)."""
    dtype: gl.constexpr = in_desc.dtype
    W: gl.constexpr = in_desc.block_type.shape[1]
    layout: gl.constexpr = gl.BlockedLayout([1, VEC], [32, 1], [NUM_WARPS, 1], [1, 0])
    smem = gl.allocate_shared_memory(dtype, [2 * SLOTS] + in_desc.block_type.shape, in_desc.layout)
    bars = _new_barriers(2 * SLOTS)
    offsets = _tile_offsets(TILE, VEC, layout)
    siblings = gl.arange(0, SEGMENTS_BLOCK, layout=gl.BlockedLayout([1], [32], [NUM_WARPS], [0]))
    n_items = n_rows * n_segments
    step = gl.num_programs(0)
    item = gl.program_id(0)
    row, first, end, tile_start, n_tiles = _item_span(item, n_segments, segment_cols, n_cols, TILE, W)
    for t in range(n_tiles):
        _issue_tile(in_desc, smem.index(t), bars.index(t), tile_start + t * TILE, W)
    second = item + step
    s_row, s_first, s_end, s_tile_start, s_tiles = _item_span(second, n_segments, segment_cols, n_cols, TILE, W)
    if second < n_items:
        for t in range(s_tiles):
            _issue_tile(in_desc, smem.index(SLOTS + t), bars.index(SLOTS + t), s_tile_start + t * TILE, W)
    phases = item * 0
    seg_max, seg_sum = _lag_stats(smem, bars, 0, phases, tile_start, n_tiles, first, end, offsets, dtype, TILE, VEC,
                                  layout)
    phases = phases ^ ((1 << n_tiles) - 1)
    gl.atomic_xchg(slots_ptr + item, _pack(seg_max, seg_sum), sem="relaxed")
    base = item * 0
    for item in range(gl.program_id(0), n_items, step):
        row, first, end, tile_start, n_tiles = _item_span(item, n_segments, segment_cols, n_cols, TILE, W)
        next_base = SLOTS - base
        following = item + step
        f_row, f_first, f_end, f_tile_start, f_tiles = _item_span(following, n_segments, segment_cols, n_cols, TILE,
                                                                  W)
        if following < n_items:
            f_max, f_sum = _lag_stats(smem, bars, next_base, phases, f_tile_start, f_tiles, f_first, f_end, offsets,
                                      dtype, TILE, VEC, layout)
            phases = phases ^ (((1 << f_tiles) - 1) << next_base)
            gl.atomic_xchg(slots_ptr + following, _pack(f_max, f_sum), sem="relaxed")
        ptrs, in_row, packed, missing = _await_slots(slots_ptr, row, n_segments, siblings, max_polls)
        if _anywhere(missing, NUM_WARPS):
            for sibling in range(0, n_segments):
                if (sibling != item - row * n_segments) & _anywhere(_missing(packed, siblings, sibling), NUM_WARPS):
                    s_lo, s_hi = _segment_span(row, sibling, segment_cols, n_cols, W, False, 1)
                    s_max, s_sum = _global_segment_max_sum(input_ptr, s_lo, s_hi, offsets, TILE, VEC, layout)
                    gl.atomic_xchg(slots_ptr + row * n_segments + sibling, _pack(s_max, s_sum), sem="relaxed")
            ptrs, in_row, packed, missing = _await_slots(slots_ptr, row, n_segments, siblings, 1 << 30)
        part_max = gl.where(in_row, (packed >> 32).to(gl.int32).to(gl.float32, bitcast=True), float("-inf"))
        part_sum = packed.to(gl.int32).to(gl.float32, bitcast=True)
        row_max = gl.max(part_max, axis=0)
        inv_row_sum = 1.0 / gl.sum(gl.where(in_row, part_sum * _exp(part_max - row_max), 0.0), axis=0)
        after = item + 2 * step
        a_row, a_first, a_end, a_tile_start, a_tiles = _item_span(after, n_segments, segment_cols, n_cols, TILE, W)
        if after >= n_items:
            a_tiles = 0
        for t in range(n_tiles):  # pass 2 from this item's group; item k + 2's tile t follows tile t
            flat = tile_start + t * TILE + offsets
            y = _exp(_tile(smem, base + t, dtype, TILE, VEC, layout) - row_max) * inv_row_sum
            gl.store(output_ptr + flat.to(gl.int64), y.to(dtype), mask=(flat >= first) & (flat < end))
            if t < a_tiles:
                fence_async_shared()
                _cta_barrier()
                _issue_tile(in_desc, smem.index(base + t), bars.index(base + t), a_tile_start + t * TILE, W)
        for t in range(n_tiles, a_tiles):
            fence_async_shared()
            _cta_barrier()
            _issue_tile(in_desc, smem.index(base + t), bars.index(base + t), a_tile_start + t * TILE, W)
        base = next_base
    for i in gl.static_range(2 * SLOTS):
        mbarrier.invalidate(bars.index(i))


def cut(n_cols: int, tile: int, slots: int) -> tuple[int, int]:
    """(segments a row, columns a segment): as few segments of slots tiles as fit, as even as whole tiles allow."""
    n_segments = triton.cdiv(n_cols, slots * tile)
    return n_segments, triton.cdiv(triton.cdiv(n_cols, tile), n_segments) * tile


def lag_forward(programs: int, warps: int, vectors: int, slots: int):
    """The probe's forward on programs an SM of warps warps, two items of slots tiles each a program."""
    import torch

    def run(x: torch.Tensor) -> torch.Tensor:
        n_rows, n_cols = x.shape
        elem = x.element_size()
        tile, width = warps * 32 * vectors * 16 // elem, 512 // elem
        if n_cols % width or tile % width:
            raise SystemExit(f"{n_cols} columns: rows not of whole view rows of {width}")
        n_segments, segment_cols = cut(n_cols, tile, slots)
        layout = gs._shared_layout(elem)
        descriptor = gs.TensorDescriptor(x.view(-1, width), [x.numel() // width, width], [width, 1],
                                         [tile // width, width], layout)
        y = torch.empty_like(x)
        slots_t = torch.zeros(n_rows * n_segments, dtype=torch.int64, device=x.device)
        grid = (min(programs * gs._device_facts(x.device)[1], n_rows * n_segments),)
        cap = gs._register_share(programs, warps)
        _lag_fwd_kernel[grid](y, x, descriptor, slots_t, n_rows, n_cols, n_segments, segment_cols, MAX_POLLS,
                              TILE=tile, SLOTS=slots, VEC=16 // elem,
                              SEGMENTS_BLOCK=max(2, triton.next_power_of_2(n_segments)), NUM_WARPS=warps,
                              num_warps=warps, **({"maxnreg": cap} if cap else {}))
        return y
    return run


def offline(programs: int, warps: int, vectors: int, slots: int, dtype: str) -> dict:
    """Registers, spills and shared memory of one launch compiled for sm_90 without a GPU."""
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource
    from sass_digest import cuobjdump

    elem = 4 if dtype == "fp32" else 2
    tile, width = warps * 32 * vectors * 16 // elem, 512 // elem
    layout = f"NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth={8 * elem}, rank=2)"
    signature = {"output_ptr": "*" + dtype, "input_ptr": "*" + dtype,
                 "in_desc": f"tensordesc<{dtype}[{tile // width},{width}],{layout}>", "slots_ptr": "*i64",
                 "n_rows": "i32", "n_cols": "i32", "n_segments": "i32", "segment_cols": "i32", "max_polls": "i32"}
    constexprs = dict(TILE=tile, SLOTS=slots, VEC=16 // elem, SEGMENTS_BLOCK=128, NUM_WARPS=warps)
    signature.update(dict.fromkeys(constexprs, "constexpr"))
    cap = gs._register_share(programs, warps)
    kernel = triton.compile(GluonASTSource(fn=_lag_fwd_kernel, signature=signature, constexprs=constexprs,
                                           attrs={(i,): [["tt.divisibility", 16]] for i in (0, 1, 3)}),
                            target=GPUTarget("cuda", 90, 32),
                            options={"num_warps": warps, **({"maxnreg": cap} if cap else {})})
    used = {k: int(v) for k, v in re.findall(r"(REG|STACK|LOCAL):(\d+)", cuobjdump(kernel, "-res-usage"))}
    return {"launch": (programs, warps, vectors, slots), "dtype": dtype, "registers": used["REG"], "cap": cap,
            "local": used["LOCAL"], "shared": kernel.metadata.shared}


if __name__ == "__main__":
    if sys.argv[1:] == ["compile"]:
        for launch in LAUNCHES:
            for dtype in ("fp32", "bf16"):
                print(offline(*launch, dtype), flush=True)
        raise SystemExit(0)
    import torch
    from probe_long_rows import save_results, sm, warm_up_gpu
    from probe_trials import ab_trials, before_module
    warm_up_gpu()
    print(torch.cuda.get_device_name(), flush=True)
    results: list = []
    if sys.argv[1:] == ["table"]:  # round 171: fp32 rows of whole view rows, and controls the row does not take
        shapes = [(n, "float32") for n in (196608, 262144, 393216, 524288, 655360, 786432, 1048576, 1310720, 2097152,
                                           131072, 777777)] + [(1048576, "bfloat16")]
        ab_trials("forward, the table against AB_BEFORE's", sm.softmax_forward, shapes, results,
                  baseline=before_module().softmax_forward, trials=3)
        save_results("probe_tma_lag_forward_table.json", results)
        raise SystemExit(0)
    for launch in LAUNCHES:
        label = "forward lagged, %d programs of %d warps x %d vectors, 2 x %d slots of 8 KB" % launch
        ab_trials(label, lag_forward(*launch), SHAPES, results, trials=3)
    save_results("probe_tma_lag_forward.json", results)
