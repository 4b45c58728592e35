"""Probe: row-tiles on a persistent grid whose loop the software pipeliner stages, so that the next rows' tiles
load into shared memory (cp.async) while this row is reduced and written (notes/kernels.md, round 44: prediction
written before the probe). Round 43 left 2-byte rows of 32,769-57,344 columns on one 16-warp row-tiles program an
SM (115-128 registers), which loads, reduces and writes in turn: the H200 runs 40,000 at 78-82% of copy. Round 9's
rows-pipelined did this for whole power-of-two rows (32,768: 73-76% to 86-89% on the H200), but pads 40,000 to
65,536 lanes, whose stages do not fit shared memory.

Round 44 ran a copy of the row-tiles body in this loop (commit abe6225); it now calls the product's
_row_tiles_softmax, the same code (its sm_90 PTX unchanged).

Exploration for tuning SOFTMAX_PLANS, not evidence: every variant is checked against float64 on every element,
then timed as build.py --run times (CUDA-graph replays, L2 flushed), beside a copy of the same bytes.

    python scripts/probe_row_tiles_pipelined.py   # on a CUDA machine; $OUT/probe_row_tiles_pipelined.json
"""
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from probe_long_rows import forward_configs_probe, run_probes  # noqa: E402
from kernels import triton_softmax as sm  # noqa: E402

NS = [32768, 36000, 40000, 45000, 49152]
# (TILE lanes, warps, programs an SM, stages)
CONFIGS = [(8192, 32, 1, 3), (8192, 16, 1, 3), (4096, 16, 1, 3), (8192, 32, 1, 2), (8192, 16, 2, 2), (4096, 8, 2, 3)]


@triton.jit
def _row_tiles_pipelined_fwd_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols,
                                    N_TILES: tl.constexpr, TILE: tl.constexpr, ALIGN: tl.constexpr,
                                    NUM_STAGES: tl.constexpr, LOG2: tl.constexpr):
    """The row-tiles softmax of rows program_id, program_id + num_programs, ...; NUM_STAGES >= 2 has the
    pipeliner load the next rows' tiles into shared memory while this row is reduced and written."""
    n_cols = n_cols // ALIGN * ALIGN
    input_row_stride = input_row_stride // ALIGN * ALIGN
    output_row_stride = output_row_stride // ALIGN * ALIGN
    for row in tl.range(tl.program_id(0), n_rows, tl.num_programs(0), num_stages=NUM_STAGES):
        row64 = tl.cast(row, tl.int64)
        sm._row_tiles_softmax(output_ptr + row64 * output_row_stride, input_ptr + row64 * input_row_stride, n_cols,
                              N_TILES, TILE, "", LOG2, False)


def pipelined_forward(tile, warps, programs_per_sm, stages):
    """A forward callable for one (TILE, warps, programs an SM, stages) config."""
    def run(x):
        y = torch.empty_like(x)
        n_rows, n_cols = x.shape
        sm._launch(_row_tiles_pipelined_fwd_kernel, (min(n_rows, programs_per_sm * sm._sm_count(x.device)),), y, x,
                   x.stride(0), y.stride(0), n_rows, n_cols, N_TILES=triton.cdiv(n_cols, tile), TILE=tile,
                   ALIGN=sm._forward_align(y, x), NUM_STAGES=stages, LOG2=x.element_size() == 2, num_warps=warps)
        return y
    return run


def fits(n, tile, programs_per_sm, stages, element_size=2, shared=232448 - 16384):
    """Whether stages - 1 rows of cdiv(n, tile) tiles for each program fit an SM's shared memory."""
    return programs_per_sm * (stages - 1) * triton.cdiv(n, tile) * tile * element_size <= shared


def pipelined_probe(out: list) -> None:
    """Copy, dispatcher and every config that fits, 2-byte rows of 32,768-49,152 columns."""
    for n in NS:
        variants = [(f"pipelined {triton.cdiv(n, t)} x {t}, {w} warps, {p}/SM, {s} stages",
                     pipelined_forward(t, w, p, s)) for t, w, p, s in CONFIGS if fits(n, t, p, s)]
        forward_configs_probe("row-tiles-pipelined", [n], variants, out, ["float16", "bfloat16"])


if __name__ == "__main__":
    run_probes({"pipelined": pipelined_probe}, sys.argv[1:] or ["pipelined"], "probe_row_tiles_pipelined.json")
