"""Probe: the whole-rows forward under a register cap, for more programs an SM (notes/kernels.md, round 25).

Exploration, not evidence. probe_facts.py found float16 rows of 16,384 columns at 51 registers (two 16-warp
programs an SM) where bfloat16 takes 40 (three), and the H200 runs them at 93.5% and 97.5% of copy; float32
rows of 8,200 (16,384 lanes) take 56 registers. Each variant here is the product's _rows_fwd_kernel, launched
as _forward_rows launches it, with a maxnreg cap and/or other warps; every one is checked against float64
on every element, then timed beside the dispatcher and a copy (forward_configs_probe).

    python scripts/probe_rows_regs.py [regs]   # on a CUDA machine; $OUT/probe_rows_regs.json
"""
import sys
from pathlib import Path

import torch
import triton

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from kernels import triton_softmax as sm  # noqa: E402
from probe_long_rows import forward_configs_probe, run_probes  # noqa: E402


def capped_rows_forward(rows_per_program: int, warps: int, maxnreg=None):
    """A forward callable: the dispatcher's rows launch at this tile, registers capped at maxnreg."""
    def run(x):
        y = torch.empty_like(x)
        n_rows, n_cols = x.shape
        log2 = sm._log2_exp(x)
        cap = {"maxnreg": maxnreg} if maxnreg else {}
        sm._launch(sm._rows_fwd_kernel, (triton.cdiv(n_rows, rows_per_program),), y, x, x.stride(0), y.stride(0),
                   n_rows, n_cols, ROWS_PER_PROGRAM=rows_per_program, BLOCK_SIZE=triton.next_power_of_2(n_cols),
                   ALIGN=sm._vector_align(x.element_size(), n_cols, x.stride(0), y.stride(0)), LOAD_CACHE="",
                   STORE_CACHE="", LOAD_EVICT=sm.ROWS_LOAD_EVICT, LOG2=log2, GUARD=sm._log2_guard(x, log2),
                   num_warps=warps, **cap)
        return y
    return run


VARIANTS = [(1, 16, None), (1, 16, 48), (1, 16, 40), (1, 16, 32), (1, 32, None), (1, 32, 32), (2, 32, None)]


def regs_probe(out: list) -> None:
    """Capped and re-tiled rows kernels at 16,384 (all dtypes), 8,200 and 12,800 (float32)."""
    variants = [(f"rows {r}x{w}w" + (f" maxnreg {m}" if m else ""), capped_rows_forward(r, w, m)) for r, w, m in VARIANTS]
    forward_configs_probe("rows-regs", [16384], variants, out, ["float16", "bfloat16", "float32"])
    forward_configs_probe("rows-regs", [8200, 12800], variants, out, ["float32"])


if __name__ == "__main__":
    run_probes({"regs": regs_probe}, sys.argv[1:] or ["regs"], "probe_rows_regs.json")
