"""Probe: whole rows on a persistent grid that fetches the next row while it finishes this one.

Round 9 of notes/kernels.md. The rows kernel launches one program per row; from 12,800 2-byte
columns up, one or two programs fill an SM, so each SM loads a row, then reduces it, then writes
it, and its loads are idle during the last two steps (H200: 73-81% of copy; H100: 93-97%). Here a
program strides over rows and the next row's load is issued before this row is reduced and
written, either by Triton's software pipeliner (`tl.range(num_stages=S)`: cp.async into shared
memory; the product's `_rows_pipelined_fwd_kernel` since round 9) or by hand, in registers.

Exploration, not evidence: it prints a table (and writes $OUT/probe_rows_pipelined.json when OUT
is set). Every variant is checked against float64 on every element, then timed as build.py --run
times (probe_long_rows.py's harness), beside a copy of the same bytes. Usage on a CUDA machine:
    python scripts/probe_rows_pipelined.py [mid|short32|band|short2|padding|evict ...]
"""
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from probe_long_rows import forward_configs_probe, rows_forward, run_probes, tile_unrolled_forward  # noqa: E402

from kernels import triton_softmax as sm  # noqa: E402


@triton.jit
def _rows_prefetch_fwd_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols,
                              BLOCK_SIZE: tl.constexpr, ALIGN: tl.constexpr):
    """Whole rows on a persistent grid; the next row is loaded into registers (in the input's type)
    before this one is reduced and written."""
    n_cols = n_cols // ALIGN * ALIGN
    input_row_stride = input_row_stride // ALIGN * ALIGN
    output_row_stride = output_row_stride // ALIGN * ALIGN
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    step = tl.num_programs(0)
    first = tl.program_id(0)
    upcoming = tl.load(input_ptr + tl.cast(first, tl.int64) * input_row_stride + cols, mask=mask & (first < n_rows),
                       other=float("-inf"))
    for row in tl.range(first, n_rows, step):
        x = upcoming.to(tl.float32)
        following = row + step
        upcoming = tl.load(input_ptr + tl.cast(following, tl.int64) * input_row_stride + cols,
                           mask=mask & (following < n_rows), other=float("-inf"))
        numerator = tl.exp(x - tl.max(x, axis=0))
        y = numerator * (1.0 / tl.sum(numerator, axis=0))
        tl.store(output_ptr + tl.cast(row, tl.int64) * output_row_stride + cols, y.to(output_ptr.dtype.element_ty),
                 mask=mask)


def pipelined_forward(warps, programs_per_sm, stages, load_evict=""):
    """A forward callable for the pipelined kernel (stages 0: the hand-written register prefetch)."""
    def run(x):
        y = torch.empty_like(x)
        n_rows, n_cols = x.shape
        grid = (min(n_rows, programs_per_sm * sm._sm_count(x.device)),)
        align = sm._vector_align(x.element_size(), n_cols, x.stride(0), y.stride(0))
        common = dict(BLOCK_SIZE=triton.next_power_of_2(n_cols), ALIGN=align, num_warps=warps)
        if stages:
            sm._launch(sm._rows_pipelined_fwd_kernel, grid, y, x, x.stride(0), y.stride(0), n_rows, n_cols,
                       NUM_STAGES=stages, LOAD_EVICT=load_evict, **common)
        else:
            sm._launch(_rows_prefetch_fwd_kernel, grid, y, x, x.stride(0), y.stride(0), n_rows, n_cols, **common)
        return y
    return run


# (warps, programs per SM, stages; 0 = register prefetch)
MID_CONFIGS = [(32, 1, 1), (32, 1, 2), (32, 1, 3), (32, 1, 4), (32, 1, 0), (16, 2, 2), (16, 2, 0), (16, 1, 2), (16, 1, 0)]
MID_NS = [12800, 16384, 24000, 32768]
SHORT32_CONFIGS = [(8, 2, 2), (8, 4, 2), (16, 1, 2), (16, 2, 2), (8, 2, 0), (16, 1, 0), (8, 4, 3), (4, 4, 2)]
SHORT32_NS = [2048, 4096, 8192, 16384]


def mid_probe(out: list) -> None:
    """2-byte rows of 12,800-32,768 columns (fp32 too, where a row fits the shared memory)."""
    variants = [(f"pipelined {c}", pipelined_forward(*c)) for c in MID_CONFIGS]
    forward_configs_probe("rows-pipelined", MID_NS, variants, out, dtypes=["float16", "bfloat16", "float32"])


def short32_probe(out: list) -> None:
    """fp32 rows of 2K-16K, where Inductor stays 0.4-1.3% ahead on the H100."""
    variants = [(f"pipelined {c}", pipelined_forward(*c)) for c in SHORT32_CONFIGS]
    forward_configs_probe("rows-pipelined-fp32", SHORT32_NS, variants, out, dtypes=["float32"])


# Rows of 3K-16K 2-byte columns, the H200's last shapes below 90% of copy there (12,800: 80-81%,
# 16,384 fp16 and 3,000 bf16: about 89-90%): several pipelined programs per SM, 3-4 stages.
SHORT2_CONFIGS = [(16, 2, 3), (16, 2, 4), (8, 4, 3), (8, 2, 3), (16, 1, 3), (8, 3, 3), (4, 4, 3), (16, 2, 0)]
SHORT2_NS = [3000, 12800, 16384]


def short2_probe(out: list) -> None:
    """2-byte rows of 3K-16K columns: several pipelined programs per SM."""
    variants = [(f"pipelined {c}", pipelined_forward(*c)) for c in SHORT2_CONFIGS]
    forward_configs_probe("rows-pipelined-short", SHORT2_NS, variants, out, dtypes=["float16", "bfloat16"])


# Where in 8k-16k does fetching the next row pay? (12,800 on the H200: +8-11%; 16,384: -3%)
PADDING_NS = [8200, 9000, 10240, 11264, 12800, 14336, 15360, 16384]


def padding_probe(out: list) -> None:
    """2-byte rows of 8k-16k columns, padded to 16,384 lanes by both kernels: pipelined against rows."""
    variants = [("pipelined (8, 2, 3)", pipelined_forward(8, 2, 3)), ("pipelined (16, 2, 3)", pipelined_forward(16, 2, 3))]
    forward_configs_probe("rows-pipelined-padding", PADDING_NS, variants, out, dtypes=["float16", "bfloat16"])


# The rows kernel gained 1-4% from evict_last loads (round 9): the pipelined one too?
EVICT_NS = [10000, 12800, 32768]


def evict_probe(out: list) -> None:
    """The table's pipelined configs with and without evict_last loads, and the rows kernel with them."""
    variants = [(f"pipelined {c} {e or '-'}", pipelined_forward(*c, load_evict=e))
                for c in [(16, 2, 3), (32, 1, 3)] for e in ("", "evict_last")]
    variants += [("rows (1, 16) evict_last", rows_forward(1, 16, "", "", "evict_last")),
                 ("rows (1, 32) evict_last", rows_forward(1, 32, "", "", "evict_last"))]
    forward_configs_probe("rows-pipelined-evict", EVICT_NS, variants, out, dtypes=["float16", "bfloat16"])


BAND_NS = [28001, 30000, 32768]


def band_probe(out: list) -> None:
    """The band the table gives the pipelined kernel (2-byte, 28,001-32,768), against the kernels
    on either side of it: the tile kernel (to 28,000) and the rows kernel (before round 9)."""
    variants = [("pipelined (32, 1, 3)", pipelined_forward(32, 1, 3)), ("tile (1, 16, 4, 2)", tile_unrolled_forward((1, 16, 4, 2))),
                ("rows (1, 32)", rows_forward(1, 32))]
    forward_configs_probe("rows-pipelined-band", BAND_NS, variants, out, dtypes=["float16", "bfloat16"])


PROBES = {"mid": mid_probe, "short32": short32_probe, "band": band_probe, "short2": short2_probe,
          "padding": padding_probe, "evict": evict_probe}


def main() -> None:
    """Run the probes named on the command line (default: mid, short32)."""
    run_probes(PROBES, sys.argv[1:] or ["mid", "short32"], "probe_rows_pipelined.json")


if __name__ == "__main__":
    main()
