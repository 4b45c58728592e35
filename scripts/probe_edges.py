"""Probe (round 197): rows of partial vectors with their heads and feet written from the tiles (EDGES), against the
module at AB_BEFORE_GLUON (the loose block), both through the dispatcher's table.

Exploration, not evidence. Round 196 found that the loose block costs odd 2-byte rows 4-6% on an H200 only as a
whole: leave out its loads, its fold or its stores and most of the cost stays; leave out all three and the rows run
as whole-vector rows do. EDGES reads nothing from global memory for an item's head and foot: pass 1 reduces them from
the tiles, pass 2 stores a vector that runs into the row's next segment whole and only the vectors across a row's
start or end element by element. Three fresh inputs a shape at the sweep's size and at the copy's (2^29 elements),
alternating order, every output of both checked against float64 first (probe_trials.ab_trials; a ratio over 1: the
working tree is faster).

    # the patch is against f1e116f's kernels/, compile_tma.py and GPU tests (the kernel of 78992fd)
    git checkout f1e116f -- kernels/gluon_softmax.py scripts/compile_tma.py tests/test_gluon_softmax.py
    cp kernels/gluon_softmax.py before_gs.py && git apply notes/probes/2026-11-27-round-197-edges.patch
    AB_BEFORE_GLUON=before_gs.py python scripts/probe_edges.py   # Hopper; $OUT/probe_edges.json

Rounds 198-200 ran it as an A/B of the working tree against the kernel before it, labelled, with N:dtype shapes
for the sweep's size alone:
    git show 78992fd:kernels/gluon_softmax.py > before_gs.py   # round 198; af4592b's for rounds 199-200
    AB_BEFORE_GLUON=before_gs.py python scripts/probe_edges.py "vector cut" [100001:bfloat16 ...]

EDGES lost (round 197, notes/kernels.md) and is not in kernels/: the patch holds it, its GPU tests and compile_tma's
--edges. Its second form (round 197b, in the patch) writes the edge vectors before pass 2's loop.
"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_long_rows import save_results, softmax_reference, warm_up_gpu  # noqa: E402
from probe_tma_instructions import before_gluon, with_gluon  # noqa: E402
from probe_trials import ab_trials, forward_case  # noqa: E402

from kernels import triton_softmax as sm  # noqa: E402

# rows of partial vectors on each unlagged tile-loop launch: 100,001 (rows off view rows, 2-byte and fp32), 777,777
# (the aligned cut), 65,541 and 200,003 (other cuts), and 100,000 as the control the change does not touch
SHAPES = [(100001, "bfloat16"), (100001, "float16"), (100001, "float32"), (777777, "bfloat16"), (777777, "float16"),
          (65541, "bfloat16"), (200003, "float16"), (100000, "bfloat16")]
COPY_SIZE = [(100001, "bfloat16"), (100001, "float16"), (777777, "bfloat16"), (777777, "float16")]


def copy_size_case(n: int, dtype: str):
    """A fresh input of 2^29 elements of n columns (the ceiling copy's bytes in 2-byte types)."""
    m = (1 << 29) // n
    x = (torch.randn(m, n, device="cuda") * 2).to(getattr(torch, dtype))
    ref, scale = softmax_reference(x)
    return m, (x,), 2 * x.numel() * x.element_size(), ref, scale


def main(label: str, shapes: list) -> None:
    """The working tree (label) against the module before at both sizes (only the sweep's for shapes given as
    N:dtype), saved as $OUT/probe_edges.json."""
    warm_up_gpu()
    print(torch.cuda.get_device_name(), flush=True)
    before = with_gluon(before_gluon(), sm.softmax_forward)
    results = []
    plan = [("sweep's", SHAPES, forward_case), ("copy's", COPY_SIZE, copy_size_case)]
    if shapes:
        plan = [("sweep's", [(int(n), dtype) for n, dtype in (shape.split(":") for shape in shapes)], forward_case)]
    for size, cases, case in plan:
        ab_trials(f"{label} (working tree) against the module before, {size} size", sm.softmax_forward, cases,
                  results, baseline=before, trials=3, case=case)
    save_results("probe_edges.json", results)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "EDGES", sys.argv[2:])
