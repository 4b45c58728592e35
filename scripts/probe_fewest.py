"""Probe (round 204): 2-byte rows off view rows of 65,537-131,072 columns in their fewest segments.

Exploration, not evidence. The table's 2-byte launch for these rows (4 programs an SM, 6 slots of 8 KB tiles, both
GPUs) cut them into as many segments as whole tiles of one slot less would (_segments), so that rows such as 65,541
took 4 segments of 4 tiles where 3 of 5.3 fit the slots at any offset: each SM then holds 131 KB of a row in flight
rather than 175. The working tree's table (fewest_segments) takes the fewest that fit, where the items still outnumber
the programs. This times the working tree's dispatcher against the module at AB_BEFORE (the table before), three fresh
inputs a shape at the sweep's size, every output of both checked against float64 first (probe_trials.ab_trials; above
1: the working tree faster), then says whether the round's rule, written before the run, ships it. Round 204 took
every such row (it missed: whole-vector rows lost); round 204b rows of partial vectors only, timed on rows no round
had timed (ROUND_204B).

    git show 44abfc9:kernels/triton_softmax.py > scripts/before_sm.py   # the table before round 204
    git apply notes/probes/2026-11-27-round-204b-fewest-segments.patch   # round 204b's kernels/ and tests
    AB_BEFORE=scripts/before_sm.py python scripts/probe_fewest.py h200   # Hopper; $OUT/probe_fewest.json; exit 0: ship

Neither round met its rule (notes/kernels.md), so kernels/ does not hold the change; the patch (against 44abfc9)
does, with its CPU and GPU tests.
"""
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_long_rows import save_results, warm_up_gpu  # noqa: E402
from probe_trials import ab_trials, before_module  # noqa: E402

from kernels import triton_softmax as sm  # noqa: E402

# Round 204: rows whose cut changes, and two sweep rows whose cut does not (the controls). It missed its rule:
# whole-vector rows (97,000, 125,000) lost; round 204b takes the fewest segments for rows of partial vectors only.
ROUND_204 = ([(65541, "bfloat16"), (65541, "float16"), (70001, "bfloat16"), (90001, "bfloat16"), (97000, "float16"),
              (110001, "bfloat16"), (125000, "bfloat16")], [(100001, "bfloat16"), (100000, "float16")], 1.02)
# Round 204b: rows of partial vectors no round had timed, in each band of counts (4 -> 3 segments: 66,001, 71,003;
# 5 -> 4: 85,001, 95,001; 6 -> 5: 105,003, 118,001; 7 -> 6: 123,001); controls: round 204's whole-vector losers
# (now cut as before) and the sweep's 100,001.
ROUND_204B = ([(66001, "bfloat16"), (71003, "float16"), (85001, "bfloat16"), (95001, "float16"), (105003, "bfloat16"),
               (118001, "float16"), (123001, "bfloat16")],
              [(97000, "float16"), (125000, "bfloat16"), (100001, "bfloat16")], 1.015)
TARGETS, CONTROLS, H200_MEDIAN_GAIN = ROUND_204B
# The rule (notes/kernels.md, written before each run), per GPU: ship where no target loses more than 0.5% and no
# control moves more than 0.7% (the runs' spread), and on the H200 the targets' median gains H200_MEDIAN_GAIN.
MIN_TARGET, CONTROL_BAND = 0.995, 0.007


def ships(results: list, gpu: str) -> bool:
    """The round's rule on the probe's lines."""
    medians = {(line["cols"], line["dtype"]): line["median_ratio"] for line in results}
    targets = [medians[shape] for shape in TARGETS]
    controls = [medians[shape] for shape in CONTROLS]
    return (min(targets) >= MIN_TARGET and all(abs(c - 1) <= CONTROL_BAND for c in controls)
            and (gpu != "h200" or statistics.median(targets) >= H200_MEDIAN_GAIN))


def main(gpu: str) -> int:
    """The A/B, saved as $OUT/probe_fewest.json; exit status 0 where the rule ships the change, else 1."""
    warm_up_gpu()
    before = before_module()
    results = []
    ab_trials("fewest segments (working tree) against the table before", sm.softmax_forward, TARGETS + CONTROLS,
              results, baseline=before.softmax_forward, trials=3)
    verdict = ships(results, gpu)
    results.append({"rule": f"round 204b on the {gpu}", "ships": verdict})
    save_results("probe_fewest.json", results)
    print("round 204b ships" if verdict else "round 204b does not ship", flush=True)
    return 0 if verdict else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
