"""Probe: is the exchange's wait shorter when siblings poll a per-row count instead of every slot?
(notes/kernels.md, round 31: prediction written before the probe)

Today a waiting segment re-reads all of its row's slots (a vector load by each of its 32 warps), sleeping
500 ns between re-reads on rows of 16 segments or more (round 26: the re-reads contend). With COUNT each
publisher follows its slot with a release add to a per-row count, and a waiting program re-reads only the
count: one thread's acquire load, broadcast to the program's warps, so one L2 request per program per
re-read instead of one per warp, and then reads the slots once. Sleeps of 0, 200 and 500 ns between
re-reads are tried.

Exploration for tuning SOFTMAX_PLANS, not evidence: every variant is checked against float64 on every element,
then timed as build.py --run times (CUDA-graph replays, L2 flushed), beside a copy (forward) or a
2-read-1-write add (backward) of the same bytes.

    python scripts/probe_count.py [forward] [backward]   # on a CUDA machine; $OUT/probe_count.json

The product never kept COUNT (round 31 missed): run this probe on commit d28bab9, whose kernels have it.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from probe_long_rows import (backward_configs_probe, forward_configs_probe, plan_backward,  # noqa: E402
                             plan_forward, run_probes)
from probe_wait_prefetch import DTYPES, NS  # noqa: E402  (the same cases)

SLEEPS = [0, 200, 500]


def forward_probe(out: list) -> None:
    """Dispatcher and the counted exchange per sleep, forward, per long N and dtype."""
    forward_configs_probe("count-forward", NS[1:], [(f"count, sleep {ns}", plan_forward(count=True, poll_sleep=ns))
                                                    for ns in SLEEPS], out, DTYPES)


def backward_probe(out: list) -> None:
    """Dispatcher and the counted exchange per sleep, backward, per long N and dtype."""
    backward_configs_probe("count-backward", NS, [(f"count, sleep {ns}", plan_backward(count=True, poll_sleep=ns))
                                                  for ns in SLEEPS], out, DTYPES)


if __name__ == "__main__":
    run_probes({"forward": forward_probe, "backward": backward_probe}, sys.argv[1:] or ["forward", "backward"],
               "probe_count.json")
