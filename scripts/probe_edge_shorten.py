"""Probe (round 203): rows of partial vectors cut evenly, with their first and last segments shortened.

Exploration, not evidence. Round 198 gave the loose block (a row's head and foot, read, folded and written apart) only
to a row's first and last segments, and the odd rows gained about half of what round 196 priced the block at, as if
each row still paid it through those two items, which its other segments wait for at the exchange. The launcher's
EDGE_SHORTEN takes that share of segment_cols from a row's first and last segments and spreads it over the others
(the kernel's edge_step, _edge_shift). This times the working tree at several shares against the module at
AB_BEFORE_GLUON (the product before the change), three fresh inputs a shape at the sweep's size, every output of both
checked against float64 first (probe_trials.ab_trials; above 1: the working tree faster).

    # EDGE_SHORTEN is not in kernels/: round 203's patch (divisions, lost) applies to 76cb242's kernels/, compile_tma.py
    # and tests, round 203b's (division-free, EDGE_SHORTEN = 0.08, won; not yet swept) to 49e0280's
    git show 76cb242:kernels/gluon_softmax.py > scripts/before_gs.py
    git apply notes/probes/2026-11-27-round-203b-edge-step.patch
    AB_BEFORE_GLUON=scripts/before_gs.py python scripts/probe_edge_shorten.py 0 0.04 0.08   # $OUT/probe_edge_shorten.json
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_long_rows import save_results, warm_up_gpu  # noqa: E402
from probe_tma_instructions import before_gluon, with_gluon  # noqa: E402
from probe_trials import ab_trials  # noqa: E402

from kernels import gluon_softmax as gs  # noqa: E402
from kernels import triton_softmax as sm  # noqa: E402

# the sweep's odd rows (5 segments a row), and other rows of partial vectors on the even cut
SHAPES = [(100001, "bfloat16"), (100001, "float16"), (100001, "float32"), (65541, "bfloat16"), (200003, "float16")]


def main(shares: list) -> None:
    """Each share of EDGE_SHORTEN against the module before; saved as $OUT/probe_edge_shorten.json."""
    warm_up_gpu()
    before = with_gluon(before_gluon(), sm.softmax_forward)
    results = []
    for share in shares:
        gs.EDGE_SHORTEN = share
        ab_trials(f"edge shorten {share}", sm.softmax_forward, SHAPES, results, baseline=before, trials=3)
    save_results("probe_edge_shorten.json", results)


if __name__ == "__main__":
    main([float(share) for share in sys.argv[1:]] or [0.0, 0.04, 0.08, 0.15])
