"""Probe: row-tiles on a persistent grid whose loop the software pipeliner stages, so that the next rows' tiles
load into shared memory (cp.async) while this row is reduced and written (notes/kernels.md, round 44: prediction
written before the probe). Round 43 left 2-byte rows of 32,769-57,344 columns on one 16-warp row-tiles program an
SM (115-128 registers), which loads, reduces and writes in turn: the H200 runs 40,000 at 78-82% of copy. Round 9's
rows-pipelined did this for whole power-of-two rows (32,768: 73-76% to 86-89% on the H200), but pads 40,000 to
65,536 lanes, whose stages do not fit shared memory.

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
from kernels.triton_softmax import LOG2E, _exp_scaled  # noqa: E402

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
    cols = tl.arange(0, TILE)
    for row in tl.range(tl.program_id(0), n_rows, tl.num_programs(0), num_stages=NUM_STAGES):
        row64 = tl.cast(row, tl.int64)
        input_row = input_ptr + row64 * input_row_stride
        output_row = output_ptr + row64 * output_row_stride
        tiles = ()
        lane_max = tl.full([TILE], float("-inf"), tl.float32)
        for k in tl.static_range(N_TILES):
            if k == N_TILES - 1:
                x = tl.load(input_row + k * TILE + cols, mask=k * TILE + cols < n_cols, other=float("-inf"))
            else:
                x = tl.load(input_row + k * TILE + cols)
            x = x.to(tl.float32)
            lane_max = tl.maximum(lane_max, x)
            tiles = tiles + (x,)
        row_max = tl.max(lane_max, axis=0)
        scaled_max = row_max * LOG2E
        lane_sum = tl.zeros([TILE], tl.float32)
        numerators = ()
        for k in tl.static_range(N_TILES):
            numerator = _exp_scaled(tiles[k], scaled_max) if LOG2 else tl.exp(tiles[k] - row_max)
            lane_sum += numerator
            numerators = numerators + (numerator,)
        inv_row_sum = 1.0 / tl.sum(lane_sum, axis=0)
        for k in tl.static_range(N_TILES):
            y = (numerators[k] * inv_row_sum).to(output_ptr.dtype.element_ty)
            if k == N_TILES - 1:
                tl.store(output_row + k * TILE + cols, y, mask=k * TILE + cols < n_cols)
            else:
                tl.store(output_row + k * TILE + cols, y)


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
        variants = [(f"pipelined {triton.cdiv(n, t)} x {t}, {w} warps, {p}/SM, {s} stages", pipelined_forward(t, w, p, s))
                    for t, w, p, s in CONFIGS if fits(n, t, p, s)]
        forward_configs_probe("row-tiles-pipelined", [n], variants, out, ["float16", "bfloat16"])


if __name__ == "__main__":
    run_probes({"pipelined": pipelined_probe}, sys.argv[1:] or ["pipelined"], "probe_row_tiles_pipelined.json")
