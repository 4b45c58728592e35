"""Probe (round 183): ROWS_DYNAMIC with the first loads of each row's group staggered (group g: g x STAGGER ns).

Exploration, not evidence. Round 182's counter let the H200's groups of programs end together; what is left of a
call's time over a copy's is mostly its start, when every program asks for its first segment at once, the HBM
serves the 26 MB in no order that finishes whole rows early, and the first writes wait until most of it has landed
(rows known at 7.5-14 us). Staggering the first loads by group orders the first round's rows, so that writes could
start sooner. With notes/probes/2026-11-27-round-{180-timeline,182-rows-dynamic,183-group-stagger}.patch applied
(device only), this times ROWS_DYNAMIC against ROWS_DYNAMIC with the group stagger, and the table against both, on
fresh inputs, every output checked against float64 first.

    for r in 180-timeline 182-rows-dynamic 183-group-stagger; do patch -p1 < notes/probes/2026-11-27-round-$r.patch; done
    python scripts/probe_group_stagger.py        # on a Hopper GPU; $OUT/probe_group_stagger.json
"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_long_rows import save_results, sm, warm_up_gpu  # noqa: E402
from probe_tma_no_exchange import require_patch, with_attribute  # noqa: E402
from probe_trials import ab_trials  # noqa: E402
from kernels import gluon_softmax as gs  # noqa: E402

SHAPES = [(65536, "bfloat16"), (131072, "bfloat16"), (262144, "float16"), (100001, "bfloat16")]


def with_attributes(fn, **values):
    """fn with gluon_softmax's attributes set to values during each call, and set back after it."""
    for name, value in values.items():
        fn = with_attribute(fn, gs, name, value)
    return fn


if __name__ == "__main__":
    require_patch("STAGGER_BY_GROUP", "2026-11-27-round-183-group-stagger.patch (on 180's and 182's)")
    warm_up_gpu()
    print(torch.cuda.get_device_name(), flush=True)
    results: list = []
    dynamic = with_attributes(sm.softmax_forward, ROWS_DYNAMIC=True)
    ab_trials("rows dynamic", dynamic, SHAPES, results, trials=3)
    for stagger in (30, 60, 120):
        staggered = with_attributes(sm.softmax_forward, ROWS_DYNAMIC=True, STAGGER=stagger, STAGGER_BY_GROUP=True)
        ab_trials(f"rows dynamic + group stagger {stagger} ns, against rows dynamic", staggered, SHAPES, results,
                  baseline=dynamic, trials=3)
        save_results("probe_group_stagger.json", results)
