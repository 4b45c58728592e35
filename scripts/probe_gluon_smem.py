"""Probe (round 65): the tile kernel with each row's head held in shared memory between its passes, in Gluon.

Exploration, not evidence. Round 63 found that pass 2 of the tile kernel re-reads rows from L2 and that once 132
rows of 256 KB are in flight (33 MB of the H100's 50 MB L2) 5-6% of those re-reads go to HBM again; round 64 held the
head in registers instead and lost, because fewer warps fit. Shared memory costs no warps: one 32-warp program an SM
keeps up to KEPT tiles of its row there (in the input's type) from pass 1 to pass 2, and only the rest of the row
waits in L2. Triton has no user-managed shared memory; Gluon (triton.experimental.gluon) has. Gluon kernels do not
run under TRITON_INTERPRET, so this stays a probe until it wins.

Every variant is checked against float64 on every element first, then timed beside the dispatcher and a copy, as
probe_long_rows does. Rows must be whole 16-byte vectors with 16-byte-aligned rows (asserted). Usage on a CUDA
machine: python scripts/probe_gluon_smem.py [smem|smem_long|barrier]; $OUT/probe_gluon_smem.json.
"""
import sys
from pathlib import Path

import torch
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from kernels import triton_softmax as sm  # noqa: E402
from probe_long_rows import forward_configs_probe, run_probes  # noqa: E402

LOG2E: gl.constexpr = gl.constexpr(1.4426950408889634)


@gluon.jit
def _online_step(vec_max, vec_sum, x):
    """One step of the running (max * log2(e), sum of exp) per vector (row) of a float32 [vectors, VEC] tile."""
    new_max = gl.maximum(vec_max, gl.max(x, axis=1) * LOG2E)
    safe_max = gl.where(new_max == float("-inf"), 0.0, new_max)  # a vector of only -inf keeps sum 0
    terms = gl.exp2(gl.fma(x, LOG2E, -gl.expand_dims(safe_max, 1)))
    return new_max, vec_sum * gl.exp2(vec_max - safe_max) + gl.sum(terms, axis=1)


@gluon.jit
def _write_tile(output_row, x, offsets, n_cols, row_max, inv_row_sum):
    """Store exp(x - m) * inv_row_sum of one float32 tile, row_max = m * log2(e)."""
    y = gl.exp2(gl.fma(x, LOG2E, -row_max)) * inv_row_sum
    gl.store(output_row + offsets, y.to(output_row.dtype.element_ty), mask=offsets < n_cols, cache_modifier=".cs")


@gluon.jit
def _smem_tile_fwd_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols,
                          TILE_ROWS: gl.constexpr, VEC: gl.constexpr, NUM_WARPS: gl.constexpr, KEPT: gl.constexpr,
                          UNROLL: gl.constexpr, BARRIER: gl.constexpr = True, RESERVE: gl.constexpr = 0):
    """Two-pass online softmax of rows program_id, program_id + num_programs, ... in [TILE_ROWS, VEC] tiles; the
    first KEPT tiles of a row wait in shared memory for pass 2, the rest in L2 (pass 2 reads those first, last tile
    first, as the tile kernel does). Each thread reads back from shared memory only what it stored there."""
    layout: gl.constexpr = gl.BlockedLayout([1, VEC], [32, 1], [NUM_WARPS, 1], [1, 0])
    # one allocation a slot: the compiler's barrier analysis cannot tell slots of one allocation apart, and puts a
    # barrier of all 32 warps before every store to it
    slots = ()
    for i in gl.static_range(KEPT):
        slots = slots + (gl.allocate_shared_memory(input_ptr.dtype.element_ty, [TILE_ROWS, VEC],
                                                   gl.SwizzledSharedLayout(1, 1, 1, [1, 0])),)
    if RESERVE > 0:  # shared memory taken but never read (the probe's measure of what it takes from L1)
        reserved = gl.allocate_shared_memory(input_ptr.dtype.element_ty, [RESERVE, TILE_ROWS, VEC],
                                             gl.SwizzledSharedLayout(1, 1, 1, [1, 0]))
        reserved.index(RESERVE - 1).store(gl.full([TILE_ROWS, VEC], 0.0, input_ptr.dtype.element_ty, layout=layout))
    n_cols = n_cols // VEC * VEC
    input_row_stride = input_row_stride // VEC * VEC
    output_row_stride = output_row_stride // VEC * VEC
    tile = (gl.expand_dims(gl.arange(0, TILE_ROWS, layout=gl.SliceLayout(1, layout)), 1) * VEC
            + gl.expand_dims(gl.arange(0, VEC, layout=gl.SliceLayout(0, layout)), 0))
    n_blocks = gl.cdiv(n_cols, TILE_ROWS * VEC)
    kept_blocks = gl.minimum(n_blocks, KEPT)
    for row_idx in range(gl.program_id(0), n_rows, gl.num_programs(0)):
        input_row = input_ptr + row_idx.to(gl.int64) * input_row_stride
        output_row = output_ptr + row_idx.to(gl.int64) * output_row_stride
        vec_max = gl.full([TILE_ROWS], float("-inf"), gl.float32, layout=gl.SliceLayout(1, layout))
        vec_sum = gl.full([TILE_ROWS], 0.0, gl.float32, layout=gl.SliceLayout(1, layout))
        # one barrier a row: every warp has read its previous row's slots before any overwrites them (without it
        # the compiler puts one before each slot's store, whose guard it cannot see through)
        if BARRIER:  # off only for the probe's measure of the barrier itself (KEPT 0)
            gl.thread_barrier()
        # the head has no branches (a slot past the row's end reads nothing and adds -inf, which changes no sum), so
        # the compiler may issue its loads ahead of the steps that use them; the next slot's load is written first
        x_next = gl.load(input_row + tile, mask=tile < n_cols, other=float("-inf"))
        for block in gl.static_range(KEPT):
            x = x_next
            if block + 1 < KEPT:
                offsets = (block + 1) * (TILE_ROWS * VEC) + tile
                x_next = gl.load(input_row + offsets, mask=offsets < n_cols, other=float("-inf"))
            slots[block].store(x)
            vec_max, vec_sum = _online_step(vec_max, vec_sum, x.to(gl.float32))
        for block in tl.range(kept_blocks, n_blocks, loop_unroll_factor=UNROLL):
            offsets = block * (TILE_ROWS * VEC) + tile
            x = gl.load(input_row + offsets, mask=offsets < n_cols, other=float("-inf"), eviction_policy="evict_last")
            vec_max, vec_sum = _online_step(vec_max, vec_sum, x.to(gl.float32))
        row_max = gl.max(vec_max, axis=0)
        # vectors that saw only -inf add 0 * exp2(-inf) = 0; a fully -inf row gives NaN, as in torch
        inv_row_sum = 1.0 / gl.sum(vec_sum * gl.exp2(vec_max - row_max), axis=0)
        for k in tl.range(0, n_blocks - kept_blocks, loop_unroll_factor=UNROLL):
            block = n_blocks - 1 - k
            offsets = block * (TILE_ROWS * VEC) + tile
            x = gl.load(input_row + offsets, mask=offsets < n_cols, other=float("-inf"), eviction_policy="evict_first")
            _write_tile(output_row, x.to(gl.float32), offsets, n_cols, row_max, inv_row_sum)
        for k in gl.static_range(KEPT):  # a slot past the row's end holds -inf, and its stores are masked off
            x = slots[KEPT - 1 - k].load(layout)
            _write_tile(output_row, x.to(gl.float32), (KEPT - 1 - k) * (TILE_ROWS * VEC) + tile, n_cols, row_max,
                        inv_row_sum)


def smem_tile_launch(y, x, kept, vectors_per_thread=2, num_warps=32, unroll=2, barrier=True, reserve=0):
    """Launch _smem_tile_fwd_kernel on one program an SM; returns the compiled kernel."""
    n_rows, n_cols = x.shape
    vec = 16 // x.element_size()
    assert n_cols % vec == 0 and x.stride(0) % vec == 0 and y.stride(0) % vec == 0 and x.stride(1) == 1
    n_programs = min(n_rows, sm._sm_count(x.device))
    return _smem_tile_fwd_kernel[(n_programs,)](y, x, x.stride(0), y.stride(0), n_rows, n_cols,
                                                TILE_ROWS=32 * num_warps * vectors_per_thread, VEC=vec,
                                                NUM_WARPS=num_warps, KEPT=kept, UNROLL=unroll, BARRIER=barrier,
                                                RESERVE=reserve, num_warps=num_warps)


def smem_tile_forward(kept, vectors_per_thread=2, num_warps=32, unroll=2, barrier=True, reserve=0):
    """A forward callable for forward_configs_probe: KEPT tiles of each row in shared memory."""
    def forward(x):
        y = torch.empty_like(x)
        smem_tile_launch(y, x, kept, vectors_per_thread, num_warps, unroll, barrier, reserve)
        return y
    return forward


def kept_tiles(n_cols: int, elem_bytes: int, budget: int, vectors_per_thread=2, num_warps=32) -> int:
    """Tiles of a row that fit `budget` bytes of shared memory (at most the row's own)."""
    tile_bytes = 32 * num_warps * vectors_per_thread * 16
    return max(1, min(budget // tile_bytes, -(-n_cols * elem_bytes // tile_bytes)))


def smem_variants(n: int, elem_bytes: int) -> list:
    """(label, forward) per shared-memory budget, and none kept (Gluon's code against Triton's)."""
    variants = [("gluon smem 0", smem_tile_forward(0))]
    for budget in (32768, 98304, 196608):
        k = kept_tiles(n, elem_bytes, budget)
        variants.append((f"gluon smem {k} x 32 KB", smem_tile_forward(k)))
    return variants


def smem_probe(out: list) -> None:
    """The tile kernel's band (2-byte 65,536-131,072, fp32 32,768-65,536), Gluon with 32-192 KB kept, per N."""
    for dtype, ns in (("float16", [65536, 98304, 131072]), ("bfloat16", [131072]), ("float32", [49152, 65536])):
        for n in ns:
            forward_configs_probe("gluon-smem", [n], smem_variants(n, 4 if dtype == "float32" else 2), out, [dtype])


def smem_long_probe(out: list) -> None:
    """Past the tile kernel's band (tile-stream rows), one program a row, 192 KB kept: for what it shows."""
    for dtype, ns in (("float16", [262144]), ("float32", [131072])):
        for n in ns:
            forward_configs_probe("gluon-smem-long", [n], [("gluon smem 6 x 32 KB", smem_tile_forward(6))], out,
                                  [dtype])


def barrier_probe(out: list) -> None:
    """What the head's one barrier a row costs alone (Gluon's tile loop, no slot, with and without it), and what
    shared memory taken but unused costs (L1 and shared memory are one 256 KB array an SM)."""
    variants = [("gluon smem 0", smem_tile_forward(0, barrier=False)),
                ("gluon smem 0, a barrier a row", smem_tile_forward(0)),
                ("gluon smem 0, unroll 4", smem_tile_forward(0, unroll=4, barrier=False)),
                ("gluon smem 0, 32 KB reserved", smem_tile_forward(0, barrier=False, reserve=1)),
                ("gluon smem 0, 96 KB reserved", smem_tile_forward(0, barrier=False, reserve=3)),
                ("gluon smem 0, 192 KB reserved", smem_tile_forward(0, barrier=False, reserve=6))]
    for dtype, ns in (("float16", [65536, 131072]), ("float32", [65536])):
        forward_configs_probe("gluon-barrier", ns, variants, out, [dtype])


if __name__ == "__main__":
    run_probes({"smem": smem_probe, "smem_long": smem_long_probe, "barrier": barrier_probe}, sys.argv[1:] or ["smem"],
               "probe_gluon_smem.json")
