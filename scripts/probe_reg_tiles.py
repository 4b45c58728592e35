"""Probe (round 152): the one-program backward's segments made longer by a block of each tensor held in registers.

Exploration, not evidence. The tma-stream backward on one program an SM holds each (row, segment) item's y and dy in
shared memory (7 slots of 16 KB each on the H200) from their load to dx's write, and cannot ask for the next item
while it waits for the row's other segments: each item pays that wait and the first tile's latency once. One program
an SM leaves the register file (256 KB, as much as shared memory) almost unused, so this kernel holds REG more
elements of each tensor in registers (a [REG / VEC, VEC] block, loaded with plain 16-byte loads beside the TMA's
tiles): segments grow by REG, rows take fewer of them, and each item's fixed costs are spread over more bytes. The
register block comes first in a segment; its dx is written first, and the next item's block is asked for right
after, while the shared-memory tiles are written. Only rows of whole tiles (the host checks). Against the table
(triton_softmax.softmax_backward), three fresh inputs a shape, every output checked against float64 first.

    python scripts/probe_reg_tiles.py           # on a Hopper GPU; $OUT/probe_reg_tiles.json
    python scripts/probe_reg_tiles.py even      # round 153: segments cut evenly in whole vectors
    python scripts/probe_reg_tiles.py unseen    # round 154: 2 and 4 register tiles at lengths no round had timed
    python scripts/probe_reg_tiles.py ahead     # round 157: the next item's block asked for before the wait
    python scripts/probe_reg_tiles.py long      # round 158: 2 and 4 register tiles at 1.4M-4M columns
    python scripts/probe_reg_tiles.py compile   # no GPU: registers and spills of each variant, sm_90
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
from kernels.gluon_softmax import (_cta_barrier, _issue_pair, _new_barriers, _pack_dot, _row_dot_of,  # noqa: E402
                                   _segment_span, _tile, _tile_offsets)

MAX_POLLS = 1 << 22
# (register tiles, shared-memory slots, vectors a thread, warps): tiles of 16 KB on 8 warps of 4 vectors, as the
# H200's table; 2 or 4 tiles of each tensor in registers (32 or 64 registers a thread a tensor, fp32)
VARIANTS = [(2, 7, 4, 8), (4, 7, 4, 8), (4, 6, 4, 8)]
# round 153: the segments cut evenly in whole vectors (True), beside round 152's best whole-tile cut
EVEN_VARIANTS = [(4, 7, 4, 8, False), (4, 7, 4, 8, True), (2, 7, 4, 8, True)]
EVEN_SHAPES = [(1048576, "float32"), (786432, "float32"), (1310720, "float32"), (2097152, "float32")]
# round 157: (register tiles, slots, vectors, warps, even, ahead): 2 + 7 with the next item's block asked for before
# the wait, beside 2 + 7 without (the table's launch on the H200)
AHEAD_VARIANTS = [(2, 7, 4, 8, False, True), (2, 7, 4, 8, False, False)]
AHEAD_SHAPES = [(n, "float32") for n in (1048576, 786432, 589824, 1310720, 2097152)] + [(1048576, "bfloat16")]
# round 158: rows past 1,310,720 columns, where 4 register tiles gained most on both GPUs
LONG_SHAPES = [(n, "float32") for n in (1441792, 1572864, 1835008, 2097152, 2621440, 3145728, 4194304)]
# round 154: whole-tile cuts at fp32 lengths of whole 16 KB tiles no round had timed, and 1M again
UNSEEN_SHAPES = [(n, "float32") for n in (589824, 655360, 720896, 851968, 917504, 983040, 1048576, 1179648,
                                          1572864)]
SHAPES = [(1048576, "float32"), (786432, "float32"), (2097152, "float32"), (524288, "float32"),
          (1310720, "float32")]


@gluon.jit
def _reg_span(item, n_segments, segment_cols, n_cols, REG: gl.constexpr, TILE: gl.constexpr, W: gl.constexpr):
    """(row, first, end, the first shared-memory tile's flat index, its tiles): the segment's first REG elements are
    the registers', the rest the tiles', from first + REG rounded down to a view row of W elements."""
    row = item // n_segments
    first, end = _segment_span(row, item - row * n_segments, segment_cols, n_cols, W, False, 1)
    tile_start = gl.minimum(first + REG, end) // W * W
    return row, first, end, tile_start, gl.where(first + REG < end, gl.cdiv(end - tile_start, TILE), 0)


@gluon.jit
def _reg_bwd_kernel(grad_input_ptr, output_ptr, grad_output_ptr, y_desc, dy_desc, slots_ptr, n_rows, n_cols,
                    n_segments, segment_cols, max_polls, TILE: gl.constexpr, SLOTS: gl.constexpr, VEC: gl.constexpr,
                    SEGMENTS_BLOCK: gl.constexpr, NUM_WARPS: gl.constexpr, REG: gl.constexpr,
                    AHEAD: gl.constexpr = False):
    """gluon_softmax._tma_stream_bwd_kernel with each segment's first REG elements of y and dy held in registers;
    AHEAD (round 157): the next item's block is asked for into a second set of registers before the wait for the
    row's siblings, not after it."""
    dtype: gl.constexpr = y_desc.dtype
    W: gl.constexpr = y_desc.block_type.shape[1]
    layout: gl.constexpr = gl.BlockedLayout([1, VEC], [32, 1], [NUM_WARPS, 1], [1, 0])
    y_smem = gl.allocate_shared_memory(dtype, [SLOTS] + y_desc.block_type.shape, y_desc.layout)
    dy_smem = gl.allocate_shared_memory(dtype, [SLOTS] + dy_desc.block_type.shape, dy_desc.layout)
    bars = _new_barriers(SLOTS)
    n_cols = n_cols // VEC * VEC
    segment_cols = segment_cols // VEC * VEC  # whole vectors (the host's cut)
    offsets = _tile_offsets(TILE, VEC, layout)
    reg_offsets = _tile_offsets(REG, VEC, layout)
    siblings = gl.arange(0, SEGMENTS_BLOCK, layout=gl.BlockedLayout([1], [32], [NUM_WARPS], [0]))
    n_items = n_rows * n_segments
    step = gl.num_programs(0)
    item = gl.program_id(0)
    row, first, end, tile_start, n_tiles = _reg_span(item, n_segments, segment_cols, n_cols, REG, TILE, W)
    for i in gl.static_range(SLOTS):
        if (i < n_tiles) & (item < n_items):
            _issue_pair(y_desc, dy_desc, y_smem.index(i), dy_smem.index(i), bars.index(i), tile_start + i * TILE, W)
    reg_flat = first + reg_offsets
    reg_mask = (reg_flat < end) & (item < n_items)
    reg_y = gl.load(output_ptr + reg_flat.to(gl.int64), mask=reg_mask, other=0.0)
    reg_dy = gl.load(grad_output_ptr + reg_flat.to(gl.int64), mask=reg_mask, other=0.0)
    phases = item * 0
    for item in range(gl.program_id(0), n_items, step):
        row, first, end, tile_start, n_tiles = _reg_span(item, n_segments, segment_cols, n_cols, REG, TILE, W)
        reg_dot = gl.sum(gl.sum(reg_y.to(gl.float32) * reg_dy.to(gl.float32), axis=1), axis=0)
        vec_dot = gl.full([TILE // VEC], 0.0, gl.float32, layout=gl.SliceLayout(1, layout))
        for i in gl.static_range(SLOTS):
            if i < n_tiles:
                mbarrier.wait(bars.index(i), (phases >> i) & 1)
                flat = tile_start + i * TILE + offsets
                product = _tile(y_smem, i, dtype, TILE, VEC, layout) * _tile(dy_smem, i, dtype, TILE, VEC, layout)
                vec_dot += gl.sum(gl.where((flat >= first + REG) & (flat < end), product, 0.0), axis=1)
        phases = phases ^ ((1 << n_tiles) - 1)
        row_dot = gl.sum(vec_dot, axis=0) + reg_dot
        if AHEAD:
            ahead_item = item + step
            ahead_row = ahead_item // n_segments
            ahead_first, ahead_end = _segment_span(ahead_row, ahead_item - ahead_row * n_segments, segment_cols,
                                                   n_cols, W, False, 1)
            ahead_flat = ahead_first + reg_offsets
            ahead_mask = (ahead_flat < ahead_end) & (ahead_item < n_items)
            ahead_y = gl.load(output_ptr + ahead_flat.to(gl.int64), mask=ahead_mask, other=0.0)
            ahead_dy = gl.load(grad_output_ptr + ahead_flat.to(gl.int64), mask=ahead_mask, other=0.0)
        if n_segments > 1:
            gl.atomic_xchg(slots_ptr + item, _pack_dot(row_dot), sem="relaxed")
            row_dot = _row_dot_of(output_ptr, grad_output_ptr, slots_ptr, row, item, n_segments, segment_cols, n_cols,
                                  siblings, max_polls, offsets, TILE, VEC, layout, NUM_WARPS)
        next_item = item + step
        next_row, next_first, next_end, next_tile_start, next_tiles = _reg_span(
            next_item, n_segments, segment_cols, n_cols, REG, TILE, W)
        if next_item >= n_items:
            next_tiles = 0
        # pass 2: the registers' block first, then its next item's block asked for while the tiles are written
        reg_flat = first + reg_offsets
        reg_dx = reg_y.to(gl.float32) * (reg_dy.to(gl.float32) - row_dot)
        gl.store(grad_input_ptr + reg_flat.to(gl.int64), reg_dx.to(dtype), mask=reg_flat < end)
        if AHEAD:
            reg_y = ahead_y
            reg_dy = ahead_dy
        else:
            next_flat = next_first + reg_offsets
            next_mask = (next_flat < next_end) & (next_item < n_items)
            reg_y = gl.load(output_ptr + next_flat.to(gl.int64), mask=next_mask, other=0.0)
            reg_dy = gl.load(grad_output_ptr + next_flat.to(gl.int64), mask=next_mask, other=0.0)
        for i in gl.static_range(SLOTS):
            if i < n_tiles:
                flat = tile_start + i * TILE + offsets
                y = _tile(y_smem, i, dtype, TILE, VEC, layout)
                dx = y * (_tile(dy_smem, i, dtype, TILE, VEC, layout) - row_dot)
                gl.store(grad_input_ptr + flat.to(gl.int64), dx.to(dtype), mask=(flat >= first + REG) & (flat < end))
            if i < next_tiles:
                fence_async_shared()
                _cta_barrier()
                _issue_pair(y_desc, dy_desc, y_smem.index(i), dy_smem.index(i), bars.index(i),
                            next_tile_start + i * TILE, W)
    for i in gl.static_range(SLOTS):
        mbarrier.invalidate(bars.index(i))


def cut(n_cols: int, tile: int, reg_tiles: int, slots: int, width: int, vec: int, even: bool) -> tuple[int, int]:
    """(segments a row, columns a segment): rows of whole tiles in as few segments of reg_tiles + slots tiles as
    fit, as even as whole tiles allow, or (even) as even as whole vectors allow, the tiles' part starting up to a
    view row before the registers' end."""
    row_tiles = n_cols // tile
    n_segments = triton.cdiv(row_tiles, reg_tiles + slots)
    if not even:
        return n_segments, triton.cdiv(row_tiles, n_segments) * tile
    while True:
        cols = triton.cdiv(triton.cdiv(n_cols, n_segments), vec) * vec
        if triton.cdiv(cols - reg_tiles * tile + width - vec, tile) <= slots and triton.cdiv(n_cols, cols) == n_segments:
            return n_segments, cols
        n_segments += 1


def reg_backward(reg_tiles: int, slots: int, vectors: int, warps: int, even: bool = False, ahead: bool = False):
    """The probe's backward: reg_tiles tiles of each tensor in registers and slots in shared memory a segment."""
    import torch

    def run(y: torch.Tensor, dy: torch.Tensor) -> torch.Tensor:
        n_rows, n_cols = y.shape
        elem = y.element_size()
        tile, width = warps * 32 * vectors * 16 // elem, gs._view_width(y)
        if n_cols % tile or tile % width:
            raise SystemExit(f"{n_cols} columns: not whole tiles of {tile}")
        n_segments, segment_cols = cut(n_cols, tile, reg_tiles, slots, width, 16 // elem, even)
        layout = gs._shared_layout(elem)

        def descriptor(u):
            return gs.TensorDescriptor(u.view(-1, width), [u.numel() // width, width], [width, 1],
                                       [tile // width, width], layout)
        dx = torch.empty_like(y)
        slots_t = torch.zeros(max(1, n_rows * n_segments), dtype=torch.int64, device=y.device)
        grid = (min(gs._device_facts(y.device)[1], n_rows * n_segments),)
        _reg_bwd_kernel[grid](dx, y, dy, descriptor(y), descriptor(dy), slots_t, n_rows, n_cols, n_segments,
                              segment_cols, MAX_POLLS, TILE=tile, SLOTS=slots, VEC=16 // elem,
                              SEGMENTS_BLOCK=max(2, triton.next_power_of_2(n_segments)), NUM_WARPS=warps,
                              REG=reg_tiles * tile, AHEAD=ahead, num_warps=warps)
        return dx
    return run


def offline(reg_tiles: int, slots: int, vectors: int, warps: int, dtype: str = "fp32", ahead: bool = False) -> dict:
    """Registers and spills of one variant compiled for sm_90 without a GPU (as scripts/compile_tma.py)."""
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
    constexprs = dict(TILE=tile, SLOTS=slots, VEC=16 // elem, SEGMENTS_BLOCK=32, NUM_WARPS=warps,
                      REG=reg_tiles * tile, AHEAD=ahead)
    signature.update(dict.fromkeys(constexprs, "constexpr"))
    kernel = triton.compile(GluonASTSource(fn=_reg_bwd_kernel, signature=signature, constexprs=constexprs,
                                           attrs={(i,): [["tt.divisibility", 16]] for i in (0, 1, 2, 5)}),
                            target=GPUTarget("cuda", 90, 32), options={"num_warps": warps})
    used = {k: int(v) for k, v in re.findall(r"(REG|STACK|LOCAL):(\d+)", cuobjdump(kernel, "-res-usage"))}
    return {"variant": (reg_tiles, slots, vectors, warps, ahead), "registers": used["REG"], "local": used["LOCAL"],
            "shared": kernel.metadata.shared}


if __name__ == "__main__":
    if sys.argv[1:] == ["compile"]:
        for variant in VARIANTS:
            print(offline(*variant), flush=True)
        for variant in AHEAD_VARIANTS:
            print(offline(*variant[:4], ahead=variant[5]), flush=True)
        raise SystemExit(0)
    import torch
    from probe_long_rows import save_results, sm, warm_up_gpu
    from probe_trials import ab_trials, backward_case
    warm_up_gpu()
    print(torch.cuda.get_device_name(), flush=True)
    results: list = []
    # mode: (variants, shapes); a variant is reg_backward's arguments: register tiles, slots, vectors, warps[, even[,
    # ahead]]
    modes = {"": (VARIANTS, SHAPES), "even": (EVEN_VARIANTS, EVEN_SHAPES), "ahead": (AHEAD_VARIANTS, AHEAD_SHAPES),
             "unseen": ([(2, 7, 4, 8), (4, 7, 4, 8)], UNSEEN_SHAPES), "long": ([(4, 7, 4, 8), (2, 7, 4, 8)], LONG_SHAPES)}
    variants, shapes = modes[" ".join(sys.argv[1:])]
    for variant in variants:
        label = "backward, %d register tiles + %d slots of 16 KB, %d vectors x %d warps" % variant[:4]
        label += "".join(f", {name} {value}" for name, value in zip(("even", "ahead"), variant[4:]))
        ab_trials(label, reg_backward(*variant), shapes, results, baseline=sm.softmax_backward, trials=3,
                  case=backward_case)
    save_results("probe_reg_tiles", results)
