"""Probe (round 181): a row's segments spread over programs of every launch wave (gluon_softmax.MIX, _first_item).

Exploration, not evidence. Round 180's timeline found the programs an SM holds finishing in the order they were
launched: on the H200's bf16 131,072 forward (6 programs an SM, 10 items each at 990 rows), the first wave's
programs finish at a median 108 us and the sixth wave's at 133 us, so the call's last quarter runs on ever fewer
programs. A row's segments are consecutive items, taken by consecutive program ids, which are launched in the same
wave; so every row is all-early or all-late. With notes/probes/2026-11-27-round-180-timeline.patch and
notes/probes/2026-11-27-round-181-mix.patch applied (device only), MIX transposes the program ids, so that a row's
segments go to programs of different waves. This times the table against MIX on fresh inputs, forward and backward,
every output of both checked against float64 first, then stamps one MIX call of bf16 131,072 as round 180 did.

    patch -p1 < notes/probes/2026-11-27-round-180-timeline.patch
    patch -p1 < notes/probes/2026-11-27-round-181-mix.patch
    python scripts/probe_mix.py        # on a Hopper GPU; $OUT/probe_mix.json
"""
import statistics
import sys
from collections import defaultdict
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_long_rows import save_results, sm, warm_up_gpu  # noqa: E402
from probe_tma_no_exchange import require_patch, with_attribute  # noqa: E402
from probe_tma_timeline import stamped_pair, summary  # noqa: E402
from probe_trials import ab_trials, backward_case  # noqa: E402
from kernels import gluon_softmax as gs  # noqa: E402

FORWARD = [(65536, "bfloat16"), (131072, "bfloat16"), (262144, "float16"), (1048576, "bfloat16"),
           (100000, "float16"), (100001, "bfloat16"), (777777, "float16"), (131072, "float32"), (777777, "float32"),
           (1048576, "float32")]
BACKWARD = [(131072, "bfloat16"), (1048576, "float16"), (131072, "float32"), (1048576, "float32")]


def ends_by_wave(s: torch.Tensor, grid: int, waves: int) -> list:
    """Median end (us) of the programs of each launch wave (program id // (grid / waves))."""
    t0 = int(s[:, 0].min())
    ends = defaultdict(list)
    for program in range(grid):
        ends[program // (grid // waves)].append(max(int(v) for v in s[program::grid, 3]) - t0)
    return [round(statistics.median(v) / 1000, 1) for _, v in sorted(ends.items())]


def timeline(out: list) -> None:
    """One stamped call of bf16 131,072 (1,024 rows), table and MIX."""
    stamped_pair("MIX", "mix", lambda s, grid: {**summary(s, grid), "ends_by_wave_us": ends_by_wave(s, grid, 6)}, out)


if __name__ == "__main__":
    require_patch("MIX", "2026-11-27-round-181-mix.patch")
    warm_up_gpu()
    print(torch.cuda.get_device_name(), flush=True)
    results: list = []
    timeline(results)
    save_results("probe_mix.json", results)
    ab_trials("mix forward", with_attribute(sm.softmax_forward, gs, "MIX", True), FORWARD, results, trials=3)
    save_results("probe_mix.json", results)
    ab_trials("mix backward", with_attribute(sm.softmax_backward, gs, "MIX", True), BACKWARD, results, trials=3,
              baseline=sm.softmax_backward, case=backward_case)
    save_results("probe_mix.json", results)
