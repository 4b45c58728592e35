"""Probe: registers, spills and programs an SM of every kernel the dispatcher launches on the sweep's shapes.

Exploration, not evidence: an audit for shapes whose kernel sits just past an occupancy step (round 24 found
the backward's 16-warp program at 80 registers, one program an SM, where 64 fit two). For each case of the
bandwidth sweep (forward) and of the backward-pass experiment, and each dtype, it runs the dispatcher once
(kernels.triton_softmax.compile_facts) and prints each kernel's facts, with the programs of that size that
the registers allow on one SM.

    python scripts/probe_facts.py   # on a CUDA machine; $OUT/probe_facts.json
"""
import sys
from pathlib import Path

import torch
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from kernels import triton_softmax as sm  # noqa: E402
sys.path.insert(0, str(ROOT / "scripts"))
from probe_long_rows import save_results  # noqa: E402

REGISTERS_PER_SM = 65536
THREADS_PER_SM = 2048


def programs_by_registers(n_regs: int, num_warps: int) -> int:
    """Programs of num_warps warps at n_regs registers a thread that one SM's registers and threads hold."""
    per_warp = -(-n_regs * 32 // 256) * 256  # registers are allocated per warp in units of 256
    return min(REGISTERS_PER_SM // (per_warp * num_warps), THREADS_PER_SM // (32 * num_warps))


def cases(experiment: str) -> list:
    """(rows, cols) of an experiment's cases."""
    spec = yaml.safe_load((ROOT / "site_src" / "experiments" / f"{experiment}.yaml").read_text())
    return [(case["rows"], case["cols"]) for case in spec["cases"]]


def main() -> None:
    """Facts per (pass, shape, dtype), printed and saved."""
    out = []
    for fn_name, experiment in (("softmax", "softmax-bandwidth-sweep"), ("softmax_backward", "backward-pass")):
        for rows, cols in cases(experiment):
            for dtype in (torch.float16, torch.bfloat16, torch.float32):
                x = torch.randn(rows, cols, device="cuda").to(dtype)
                for fact in sm.compile_facts(fn_name, x):
                    fact = dict(fact, programs_by_registers=programs_by_registers(fact["n_regs"], fact["num_warps"]),
                                fn=fn_name, rows=rows, cols=cols, dtype=str(dtype).removeprefix("torch."))
                    out.append(fact)
                    print(f"{fn_name:17} {rows:>7}x{cols:<8} {fact['dtype']:9} {fact['kernel']:28} "
                          f"{fact['n_regs']:4} regs {fact['n_spills']:3} spills {fact['num_warps']:3} warps "
                          f"{fact['programs_by_registers']} prog/SM  shared {fact['shared_bytes']}", flush=True)
                del x
                torch.cuda.empty_cache()
    save_results("probe_facts.json", out, "facts")


if __name__ == "__main__":
    main()
