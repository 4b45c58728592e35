"""Probe: which part of the loose block costs odd 2-byte rows on the H200 (notes/kernels.md, round 196).

Round 195 left 100,001 3-6% behind 100,000 at the copy's size on an H200, with the loose block's width ruled out.
Each item of such a launch loads its head and foot (the elements outside its whole 16-byte vectors) from global
memory, folds them into its partial (two reductions across the warps) and stores them after the exchange. With
`notes/probes/2026-11-27-round-196-ablate.patch` applied (device only: kernels/ is not changed), gluon_softmax.ABLATE
leaves parts out: 1 the loads, 2 the stores, 4 the fold, 7 all three. Those outputs are wrong and only timed; the
product's launch (ABLATE 0) is checked against float64 on every element first, as are 100,000's rows, timed beside
it as the launch with no loose block at all. Every variant is timed twice, in reversed order the second time, as
build.py --run times (CUDA-graph replays, L2 flushed). Usage on a CUDA machine (writes $OUT/probe_loose_cost.json;
the patch is against f1e116f's kernel, that of 78992fd, before round 198's CUT and LOOSE_WHERE):
    git checkout f1e116f -- kernels/gluon_softmax.py
    git apply notes/probes/2026-11-27-round-196-ablate.patch && python scripts/probe_loose_cost.py
"""
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from probe_long_rows import run_probes, timed  # noqa: E402
from kernellab.measure import ceiling, check, softmax_reference  # noqa: E402
from kernels import gluon_softmax as gs  # noqa: E402
from kernels import triton_softmax as sm  # noqa: E402

CASES = [(100001, 1342), (100001, 5368), (777777, 173), (777777, 690)]  # (N, rows): the sweep's, the copy's size
BASELINE_COLS = {100001: 100000}  # rows of whole vectors and the same rows: no loose block
ABLATIONS = {0: "product", 1: "no loose loads", 2: "no loose stores", 4: "no fold", 7: "no loose block"}
DTYPES = ["bfloat16", "float16"]


def ablated(bits: int):
    """The dispatcher's forward with gluon_softmax.ABLATE set to bits for the call."""
    def run(x):
        saved, gs.ABLATE = gs.ABLATE, bits
        try:
            return sm.softmax_forward(x)
        finally:
            gs.ABLATE = saved
    return run


def checked(fn, x, dtype) -> None:
    """Raise unless fn(x) matches the float64 reference on every element."""
    ref, scale = softmax_reference(x)
    assert check(fn(x), ref, dtype, scale)["passed"], (x.shape, dtype)
    del ref, scale


def loose_probe(out: list) -> None:
    """GB/s of each ablation (and of the whole-vector rows beside them), two passes in reversed order."""
    assert hasattr(gs, "ABLATE"), "apply notes/probes/2026-11-27-round-196-ablate.patch first"
    ceiling_gbs = ceiling(1)["gbs"]
    print(f"ceiling (1 GiB copy, eager) {ceiling_gbs:.0f} GB/s", flush=True)
    for n, rows in CASES:
        for dtype in DTYPES:
            runs = {}
            x = (torch.randn(rows, n, device="cuda") * 2).to(getattr(torch, dtype))
            checked(ablated(0), x, dtype)
            variants = [(f"{n}: {label}", x, ablated(bits)) for bits, label in ABLATIONS.items()
                        if n in BASELINE_COLS or bits in (0, 7)]
            if n in BASELINE_COLS:
                base = (torch.randn(rows, BASELINE_COLS[n], device="cuda") * 2).to(getattr(torch, dtype))
                checked(ablated(0), base, dtype)
                variants.append((f"{BASELINE_COLS[n]}: product (no loose block)", base, ablated(0)))
            for order in (variants, variants[::-1]):
                for label, tensor, fn in order:
                    runs.setdefault(label, []).append(timed(fn, tensor)["ms"])
            print(f"{rows}x{n} {dtype}:", flush=True)
            for label, tensor, _ in variants:
                ms = statistics.median(runs[label])
                gbs = 2 * tensor.numel() * tensor.element_size() / ms / 1e6
                print(f"  {gbs:7.0f} GB/s {100 * gbs / ceiling_gbs:5.1f}% {ms * 1e3:8.1f} us  {label}  "
                      f"(passes {', '.join(f'{t * 1e3:.1f}' for t in runs[label])} us)", flush=True)
                out.append({"cols": n, "rows": rows, "dtype": dtype, "variant": label, "ms": runs[label],
                            "gbs": gbs, "share_of_1gib_copy": gbs / ceiling_gbs})
            del x
            torch.cuda.empty_cache()


if __name__ == "__main__":
    run_probes({"loose": loose_probe}, ["loose"], "probe_loose_cost.json")
