"""Probe: whole rows held as K equal tiles, combined element by element before one max and one sum reduction
(notes/kernels.md, round 43: prediction written before the probe). The rows kernel pads a row to next_pow2(N)
lanes; here only the last tile is padded, so 2-byte rows of 8,200-28,000 columns do about the work per byte of
8,192 and 16,384.

"dispatch" and "keep" compare against the rows-pipelined path, which session 37 removed from the product (no table
row had taken it since round 49): run them, and scripts/probe_rows_pipelined.py, at commit 99cb0c2.

"tiles" and "more" ran (commits 7a2ba71, f77f0d6) on this probe's own copy of the kernel, which the product then
took as _row_tiles_fwd_kernel with the bfloat16 guard added; the probe now launches the product's kernel.

Exploration for tuning SOFTMAX_PLANS, not evidence: every variant is checked against float64 on every element,
then timed as build.py --run times (CUDA-graph replays, L2 flushed), beside a copy of the same bytes.

    python scripts/probe_row_tiles.py [tiles] [more] [dispatch] [compile] [odd] [odd32] [keep] [edges] [edges-more]
    # on a CUDA machine; writes $OUT/probe_row_tiles.json
"""
import sys
from pathlib import Path

import torch
import triton

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from probe_long_rows import (checked_and_timed, compile_reference_lines, forward_configs_probe,  # noqa: E402
                             forward_input, report, rows_forward, run_probes, with_module)
from kernels import triton_softmax as sm  # noqa: E402

TWO_BYTE_NS = [8200, 10000, 12800, 14336, 16384, 20000, 24000, 28000]
FP32_NS = [10000, 24000]
# (TILE lanes, warps, load eviction policy); the rows kernel loads with evict_last (ROWS_LOAD_EVICT)
CONFIGS = [(1024, 4, ""), (2048, 8, ""), (4096, 16, ""), (2048, 4, ""), (4096, 8, ""), (8192, 16, ""), (8192, 32, ""),
           (16384, 32, ""), (4096, 8, "evict_last"), (4096, 16, "evict_last"), (8192, 16, "evict_last")]
MORE_TWO_BYTE_NS = [3000, 6000, 9000, 30000, 40000, 50000, 65536]
MORE_FP32_NS = [3000, 12800, 20000, 28000]
MAX_VALUES_PER_THREAD = 128  # fp32 values a thread holds; past this the kernel spills


def row_tiles_forward(tile, warps, load_evict="", keep_input=False, maxnreg=0, vector_edges=False):
    """A forward callable for one (TILE, warps, load eviction policy) config of the row-tiles kernel, its row held
    in x's own type with keep_input, under maxnreg registers a thread if given, rows that are not whole vectors read
    in whole vectors with vector_edges."""
    def run(x):
        y = torch.empty_like(x)
        sm._forward_row_tiles(y, x, tile, warps, sm._forward_align(y, x), sm._log2_exp(x), keep_input, maxnreg,
                              vector_edges)
        return y
    return with_module(run, ROW_TILES_LOAD_EVICT=load_evict)


def variants(n, element_size):
    """(label, callable) per config whose vectors are 16 bytes or more and whose row fits the registers."""
    out = []
    for tile, warps, evict in CONFIGS:
        per_thread = tile // (warps * 32)
        n_tiles = triton.cdiv(n, tile)
        if per_thread * element_size >= 16 and n_tiles * per_thread <= MAX_VALUES_PER_THREAD:
            label = f"row-tiles {n_tiles} x {tile}, {warps} warps" + (f", {evict}" if evict else "")
            out.append((label, row_tiles_forward(tile, warps, evict)))
    return out


def tiles_probe(out: list) -> None:
    """Copy, dispatcher and every row-tiles config, 2-byte rows of 8,200-28,000 and two fp32 rows."""
    for dtypes, ns in ((["float16", "bfloat16"], TWO_BYTE_NS), (["float32"], FP32_NS)):
        for n in ns:
            forward_configs_probe("row-tiles", [n], variants(n, 4 if dtypes == ["float32"] else 2), out, dtypes)


def more_probe(out: list) -> None:
    """As tiles_probe, at the row lengths around that band (short padded rows, 30,000-65,536, fp32 12,800-28,000)."""
    for dtypes, ns in ((["float16", "bfloat16"], MORE_TWO_BYTE_NS), (["float32"], MORE_FP32_NS)):
        for n in ns:
            forward_configs_probe("row-tiles", [n], variants(n, 4 if dtypes == ["float32"] else 2), out, dtypes)


# The table before round 43 (commit 7a2ba71): its rows for 4,097-65,536 columns, the row-tiles rows taken out
PREVIOUS_BAND = [
    sm.Plan("forward", 8192, 0, 0, "rows", 1, 0, 16, 0),
    sm.Plan("forward", 9728, 2, 2, "tile", 1, 0, 8, 8, 0, 0, 2, True),
    sm.Plan("forward", 14336, 2, 2, "rows-pipelined", 1, 0, 16, 2, 3, 0, 1, True),
    sm.Plan("forward", 16384, 0, 0, "rows", 1, 0, 16, 0),
    sm.Plan("forward", 28000, 2, 2, "tile", 1, 0, 16, 4, 0, 0, 2, True),
    sm.Plan("forward", 32768, 2, 2, "rows-pipelined", 1, 0, 32, 1, 3, 0, 1, True),
    sm.Plan("forward", 32768, 0, 0, "rows", 1, 0, 32, 0),
]


def previous_plans():
    """SOFTMAX_PLANS as it was before the row-tiles rows: PREVIOUS_BAND in place of 4,097-32,768."""
    plans = list(sm.SOFTMAX_PLANS)
    first = next(i for i, p in enumerate(plans) if p.op == "forward" and p.max_cols > 4096)
    last = max(i for i, p in enumerate(plans) if p.op == "forward" and p.max_cols <= 57344)
    return tuple(plans[:first] + PREVIOUS_BAND + plans[last + 1:])


DISPATCH_TWO_BYTE_NS = [6000, 8200, 10000, 12800, 20000, 24000, 28000, 40000, 50000, 56000]
DISPATCH_FP32_NS = [20000, 24000, 40000]


def dispatch_probe(out: list) -> None:
    """The dispatcher (row-tiles rows in the table) against the table before them, and against row-tiles loads
    without evict_last; for fp32 40,000 also row-tiles on 32 warps (the table's tile kernel there)."""
    variants = [("previous table", with_module(sm.softmax_forward, SOFTMAX_PLANS=previous_plans())),
                ("row-tiles loads without evict_last", with_module(sm.softmax_forward, ROW_TILES_LOAD_EVICT=""))]
    forward_configs_probe("row-tiles-dispatch", DISPATCH_TWO_BYTE_NS, variants, out, ["float16", "bfloat16"])
    forward_configs_probe("row-tiles-dispatch", DISPATCH_FP32_NS[:2], variants, out, ["float32"])
    forward_configs_probe("row-tiles-dispatch", DISPATCH_FP32_NS[2:], variants[:1] + [
        ("row-tiles 5 x 8192, 32 warps, evict_last", row_tiles_forward(8192, 32, "evict_last"))], out, ["float32"])


# fp32 rows where torch.compile's kernel stays 0.4-0.5% ahead on the H100 (both at 99-100% of copy): the rows
# kernel on 16 warps, which row-tiles' one-tile configs suggested (fp32 3,000 on the H100: +0.5% over the table)
COMPILE_NS = [2048, 4096, 8192]
COMPILE_ROWS = [(1, 16), (2, 16), (1, 4), (4, 16)]  # (rows per program, warps); the table's 2 x 8 / 1 x 8 beside


def compile_probe(out: list) -> None:
    """fp32 2,048-8,192: torch.compile, the dispatcher and rows-kernel tiles of 16 warps, evict_last loads."""
    for n in COMPILE_NS:
        m, x, moved, ref, scale = forward_input(n, "float32")
        copy_ms, lines = compile_reference_lines(x, moved)
        variants = [(f"rows {rpp}x{warps}w evict_last", rows_forward(rpp, warps, "", "", "evict_last"))
                    for rpp, warps in COMPILE_ROWS if rpp * n <= 64 * 32 * warps]
        variants.append((f"row-tiles 2 x {n // 2}, 8 warps", row_tiles_forward(n // 2, 8, "evict_last")))
        lines += checked_and_timed(variants, (x,), ref, scale, "float32", moved, copy_ms)
        report("compile", m, n, "float32", lines, out)


ODD_TWO_BYTE_NS = [6001, 10001, 12801, 20001, 24001, 28001]


def odd_probe(out: list) -> None:
    """Rows that are not whole 16-byte vectors (ALIGN 1), which the table leaves on the rows kernel: row-tiles
    at the table's configs against it."""
    variants = [("row-tiles 4096 x 8 warps, evict_last", row_tiles_forward(4096, 8, "evict_last")),
                ("row-tiles 2048 x 8 warps, evict_last", row_tiles_forward(2048, 8, "evict_last"))]
    forward_configs_probe("row-tiles-odd", ODD_TWO_BYTE_NS, variants, out, ["float16", "bfloat16"])
    forward_configs_probe("row-tiles-odd", [20001], [
        ("row-tiles 4096 x 16 warps, evict_last", row_tiles_forward(4096, 16, "evict_last"))], out, ["float32"])


def odd32_probe(out: list) -> None:
    """fp32 rows to 16,384 columns that are not whole vectors, which the table leaves on the rows kernel (the H200
    runs 10,001 at 88% of copy there): row-tiles configs against it."""
    variants = [(f"row-tiles {tile} x {warps} warps, evict_last", row_tiles_forward(tile, warps, "evict_last"))
                for tile, warps in ((1024, 4), (2048, 8), (4096, 16), (4096, 8))]
    forward_configs_probe("row-tiles-odd32", [3001, 6001, 10001, 12801], variants, out, ["float32"])


def rows_pipelined_forward(x):
    """rows-pipelined as the table ran 2-byte rows of 28,001-32,768 before round 49 (32 warps, 3 stages)."""
    y = torch.empty_like(x)
    sm._forward_rows_pipelined(y, x, 32, 1, 3, sm._forward_align(y, x), sm._log2_exp(x))
    return y


def keep_probe(out: list) -> None:
    """Round 49: 2-byte rows of 24k-57k held in their own type, two programs an SM (the dispatcher, since round 49),
    against the table's paths before it: row-tiles in float32 tiles, one program an SM, and rows-pipelined."""
    variants = [("row-tiles 4096 x 8 warps (float32 tiles)", row_tiles_forward(4096, 8, "evict_last")),
                ("row-tiles 8192 x 16 warps (float32 tiles)", row_tiles_forward(8192, 16, "evict_last")),
                ("rows-pipelined", rows_pipelined_forward),
                ("kept, 4096 x 8 warps, 128 registers", row_tiles_forward(4096, 8, "evict_last", True, 128)),
                ("kept, 4096 x 8 warps, 64 registers", row_tiles_forward(4096, 8, "evict_last", True, 64)),
                ("kept, 8192 x 16 warps, 64 registers", row_tiles_forward(8192, 16, "evict_last", True, 64))]
    forward_configs_probe("keep", [24000, 28000, 32768, 40000, 50000, 57344], variants, out, ["float16", "bfloat16"])


def edges_probe(out: list) -> None:
    """Round 50: rows that are not whole vectors on row-tiles read from their first 16-byte-aligned element in whole
    vectors, against the table's element-wise row-tiles (to 28,001) and its rows and tile kernels beyond."""
    element = ("row-tiles 2048 x 8 warps (the table)", row_tiles_forward(2048, 8, "evict_last"))
    vector = [("vector edges, 2048 x 8 warps", row_tiles_forward(2048, 8, "evict_last", vector_edges=True)),
              ("vector edges, 4096 x 8 warps", row_tiles_forward(4096, 8, "evict_last", vector_edges=True))]
    capped = ("vector edges, 2048 x 8 warps, 128 registers",
              row_tiles_forward(2048, 8, "evict_last", maxnreg=128, vector_edges=True))
    kept = ("vector edges, kept, 4096 x 8 warps, 128 registers",
            row_tiles_forward(4096, 8, "evict_last", True, 128, True))
    forward_configs_probe("row-tiles-edges", [6001, 10001, 12801, 20001], [element] + vector, out,
                          ["float16", "bfloat16"])
    forward_configs_probe("row-tiles-edges", [24001, 28001], [element, vector[0], capped, kept], out,
                          ["float16", "bfloat16"])
    forward_configs_probe("row-tiles-edges", [30001, 40001, 50001], [kept], out, ["float16", "bfloat16"])
    forward_configs_probe("row-tiles-edges", [3001, 10001], [element, vector[0]], out, ["float32"])


def edges_more_probe(out: list) -> None:
    """Round 50, after the H200's first probe: odd 2-byte rows of 12k-24k, where vector edges at 3 programs an SM or
    fewer lost, with the row kept in its type or capped at 64 registers (4 programs an SM); whole-vector 2-byte rows
    kept at 64 registers ("Next" 2); odd fp32 rows of 40k-50k on row-tiles of 8,192 lanes on 32 warps."""
    variants = [("row-tiles 2048 x 8 warps (the table)", row_tiles_forward(2048, 8, "evict_last")),
                ("vector edges, 2048 x 8 warps, 64 registers", row_tiles_forward(2048, 8, "evict_last", False, 64, True)),
                ("vector edges, kept, 2048 x 8 warps, 64 registers",
                 row_tiles_forward(2048, 8, "evict_last", True, 64, True)),
                ("vector edges, kept, 4096 x 8 warps, 64 registers",
                 row_tiles_forward(4096, 8, "evict_last", True, 64, True)),
                ("vector edges, kept, 4096 x 8 warps, 128 registers",
                 row_tiles_forward(4096, 8, "evict_last", True, 128, True)),
                ("vector edges, 4096 x 8 warps", row_tiles_forward(4096, 8, "evict_last", vector_edges=True))]
    forward_configs_probe("row-tiles-edges-more", [12801, 16001, 20001, 24001], variants, out, ["float16", "bfloat16"])
    forward_configs_probe("row-tiles-edges-more", [12800, 20000, 24000], [
        ("kept, 4096 x 8 warps, 64 registers", row_tiles_forward(4096, 8, "evict_last", True, 64)),
        ("kept, 2048 x 8 warps, 64 registers", row_tiles_forward(2048, 8, "evict_last", True, 64))], out,
        ["float16", "bfloat16"])
    forward_configs_probe("row-tiles-edges-more", [40001, 50001], [
        ("row-tiles 8192 x 32 warps", row_tiles_forward(8192, 32, "evict_last")),
        ("vector edges, 8192 x 32 warps", row_tiles_forward(8192, 32, "evict_last", vector_edges=True))], out,
        ["float32"])


if __name__ == "__main__":
    run_probes({"tiles": tiles_probe, "more": more_probe, "dispatch": dispatch_probe, "compile": compile_probe,
                "odd": odd_probe, "odd32": odd32_probe, "keep": keep_probe, "edges": edges_probe,
                "edges-more": edges_more_probe}, sys.argv[1:] or ["tiles"],
               "probe_row_tiles.json")
