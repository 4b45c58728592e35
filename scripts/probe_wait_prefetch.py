"""Probe: do long rows gain when a stream program prefetches its next item while it waits? (notes/kernels.md,
round 30: prediction written before the probe)

After publishing its partial, a tile-stream (forward) or stream (backward) program waits for its row's other
segments; round 27 put most of the 1M rows' gap in that wait. With wait_prefetch = k the program first asks
L2 (prefetch.global.L2, no registers held) for the first k blocks of its next item, so HBM keeps working
during the wait and the next first pass starts on lines already in L2. The dispatcher line is k = 0.

Exploration for tuning SOFTMAX_PLANS, not evidence: every variant is checked against float64 on every element,
then timed as build.py --run times (CUDA-graph replays, L2 flushed), beside a copy (forward) or a
2-read-1-write add (backward) of the same bytes.

    python scripts/probe_wait_prefetch.py [forward] [backward] [long] [one]   # on a CUDA machine; $OUT/probe_wait_prefetch.json

The product kept the prefetch for the forward only: the backward lines need commit 2b3b072, whose stream
backward still takes wait_prefetch (and prefetches both y and dy).
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from probe_long_rows import (backward_configs_probe, forward_configs_probe, plan_backward,  # noqa: E402
                             plan_forward, run_probes)

NS = [131072, 262144, 524288, 1048576]
DTYPES = ["float32", "float16", "bfloat16"]
BLOCKS = [2, 4, 8]


def forward_probe(out: list) -> None:
    """Dispatcher and its tile-stream with each prefetch depth, per long N and dtype."""
    forward_configs_probe("wait-prefetch-forward", NS[1:], [(f"wait prefetch {b}", plan_forward(wait_prefetch=b)) for b in BLOCKS],
                          out, DTYPES)


def backward_probe(out: list) -> None:
    """Dispatcher and its stream backward with each prefetch depth, per long N and dtype."""
    backward_configs_probe("wait-prefetch-backward", NS, [(f"wait prefetch {b}", plan_backward(wait_prefetch=b)) for b in BLOCKS],
                           out, DTYPES)


def one_probe(out: list) -> None:
    """One block, forward and backward, at every long N (the H100's check of round 30's choice)."""
    forward_configs_probe("wait-prefetch-forward", NS[1:], [("wait prefetch 1", plan_forward(wait_prefetch=1))], out, DTYPES)
    backward_configs_probe("wait-prefetch-backward", NS, [("wait prefetch 1", plan_backward(wait_prefetch=1))], out, DTYPES)


def long_probe(out: list) -> None:
    """One and two blocks, forward and backward, at 524,288 and 1M (where two blocks gained on the H200)."""
    forward_configs_probe("wait-prefetch-forward", NS[2:], [(f"wait prefetch {b}", plan_forward(wait_prefetch=b)) for b in (1, 2)],
                          out, DTYPES)
    backward_configs_probe("wait-prefetch-backward", NS[2:],
                           [(f"wait prefetch {b}", plan_backward(wait_prefetch=b)) for b in (1, 2)], out, DTYPES)


if __name__ == "__main__":
    run_probes({"forward": forward_probe, "backward": backward_probe, "long": long_probe, "one": one_probe},
               sys.argv[1:] or ["forward", "backward"], "probe_wait_prefetch.json")
