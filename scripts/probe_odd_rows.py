"""Probe: what odd 2-byte rows pay on the H200 once a call is long (notes/kernels.md, round 192).

Round 191 ran 2-byte rows at the copy's own bytes (2^29 elements a tensor): 100,000 columns reached 91.6-92.4% of
copy, 100,001 only 86.1-88.5%, where the sweep's 2^27 elements has them within half a point. This times the
dispatcher on rows of 100,000 to 100,008 columns (16, 2, 4, 8 and 16 bytes of alignment) and 777,777 against
777,784, at both sizes, to say whether the cost follows the rows' alignment (loose elements read and written apart)
or something else.

Exploration, not evidence: every call is checked against float64 on every element first, then timed as
build.py --run times (CUDA-graph replays, L2 flushed), beside a copy of the same bytes and the 1 GiB copy that sets
the sweep's ceiling, in the same process (graph replays of a copy run slower than the sweep's eager copy: round 192).
"tail" (round 193) times 100,000-column rows with and without the launch's block of loose elements. Usage on a CUDA
machine (writes $OUT/probe_odd_rows.json):
    python scripts/probe_odd_rows.py [odd] [tail]
"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from probe_long_rows import checked_and_timed, report, row, run_probes, timed  # noqa: E402
from kernellab.measure import ceiling, softmax_reference  # noqa: E402
from kernels import triton_softmax as sm  # noqa: E402

WIDTHS = [100000, 100001, 100002, 100004, 100008, 777777, 777784]
SIZES = {"sweep": 1 << 27, "copy": 1 << 29}  # elements a tensor: the sweep's, and the ceiling copy's bytes in 2 bytes
DTYPES = ["bfloat16", "float16"]


def plan_of(x) -> str:
    """The SOFTMAX_PLANS row the dispatcher takes for x, in a few words."""
    n_rows, n_cols = x.shape
    align = sm._vector_align(x.element_size(), n_cols, x.stride(0), x.stride(0))
    plan = sm._select_plan("forward", n_rows, n_cols, x.element_size(), x.device, align,
                           sm._tma_stream_eligible(x))
    return (f"{plan.path} {plan.programs_per_sm} programs, {int(plan.segment_bytes)} B, align {align}"
            f"{', aligned cut' if plan.aligned else ''}{', counter' if plan.rows_dynamic else ''}")


def odd_probe(out: list) -> None:
    """Copy of the same bytes, then the dispatcher (checked first), per width, size and dtype; shares of both copies."""
    ceiling_gbs = ceiling(1)["gbs"]  # the sweep's own ceiling: the 1 GiB copy, timed eagerly
    for size, elements in SIZES.items():
        for n in WIDTHS:
            for dtype in DTYPES:
                m = elements // n
                x = (torch.randn(m, n, device="cuda") * 2).to(getattr(torch, dtype))
                moved = 2 * x.numel() * x.element_size()
                ref, scale = softmax_reference(x)
                y = torch.empty_like(x)
                copy_ms = timed(lambda: y.copy_(x))["ms"]
                lines = [row("copy of the same bytes", {"ms": copy_ms, "p20": None, "p80": None}, moved, copy_ms)]
                lines += checked_and_timed([(f"dispatcher: {plan_of(x)}", sm.softmax_forward)], (x,), ref, scale,
                                           dtype, moved, copy_ms)
                for line in lines:
                    line["share_of_1gib_copy"] = line["gbs"] / ceiling_gbs
                    line["variant"] += f" ({100 * line['share_of_1gib_copy']:.1f}% of the 1 GiB copy)"
                report(f"odd-{size}", m, n, dtype, lines, out)
                del x, y, ref, scale
                torch.cuda.empty_cache()


def tail_probe(out: list) -> None:
    """Round 193: the dispatcher on a tensor with and without the loose block, by taking its first rows that are
    whole view rows (LOOSE = 0) or one row fewer than such a count (LOOSE > 0); GB/s of each, same tensor."""
    for rows, fewer in ((1342, 1336), (5368, 5367)):
        for dtype in DTYPES:
            x = (torch.randn(rows, 100000, device="cuda") * 2).to(getattr(torch, dtype))
            lines = []
            for m in (rows, fewer):
                part = x[:m]
                ref, scale = softmax_reference(part)
                moved = 2 * part.numel() * part.element_size()
                lines += checked_and_timed([(f"{m} rows: {plan_of(part)}, {loose_block(part)}",
                                             sm.softmax_forward)], (part,), ref, scale, dtype, moved, 1.0)
                del ref, scale
            report("tail", rows, 100000, dtype, lines, out)
            del x
            torch.cuda.empty_cache()


def loose_block(x) -> str:
    """What tma_stream_forward gives x's unlagged launch for the elements outside the view's whole vectors: "LOOSE"
    (rows of partial vectors: a block every item), "TAIL" (whole vectors, the tensor not whole view rows: since round
    194 only the item that holds them; before it, LOOSE) or "none"."""
    from kernels import gluon_softmax
    if x.shape[1] % (16 // x.element_size()):
        return "LOOSE"
    return "none" if gluon_softmax._view_width(x) else "TAIL"


if __name__ == "__main__":
    run_probes({"odd": odd_probe, "tail": tail_probe}, sys.argv[1:] or ["odd"], "probe_odd_rows.json")
