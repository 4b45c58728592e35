"""Probe: is the exchange's wait shorter when only one warp of a waiting program re-reads its row's slots?
(notes/kernels.md, round 33: prediction written before the probe)

Round 32 measured the wait's latency at 1.8-1.9 us from the last sibling's publish at 8-16 segments a row,
against ~1.0 us at 2-4: Triton holds the small slot vector (16-32 lanes) in every one of a program's 32
warps, and each warp re-reads it, so 8-16 waiting programs send 256-512 requests for one line a round. With
one_warp the vector gets a lane per thread (1,024 at 32 warps), masked to the row's segments, so only the
first warp's lanes load. Tried with the dispatcher's sleep (500 ns at 16 segments or more) and with none.

Exploration for tuning SOFTMAX_PLANS, not evidence: every variant is checked against float64 on every element,
then timed as build.py --run times (CUDA-graph replays, L2 flushed), beside a copy (forward) or a
2-read-1-write add (backward) of the same bytes.

    python scripts/probe_one_warp.py [forward] [backward]   # on a CUDA machine; $OUT/probe_one_warp.json

It ran on commit a20a935, where the launchers still took one_warp and poll_sleep and the dispatcher line
re-read from every warp; since round 33's table the dispatcher itself re-reads from one warp where it gains.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from probe_long_rows import (backward_configs_probe, forward_configs_probe, plan_backward,  # noqa: E402
                             plan_forward, run_probes)
from probe_wait_prefetch import DTYPES, NS  # noqa: E402  (the same cases)

VARIANTS = [("one warp", dict(one_warp=True)), ("one warp, no sleep", dict(one_warp=True, poll_sleep=0))]


def forward_probe(out: list) -> None:
    """Dispatcher and the one-warp re-reads, forward, per long N and dtype."""
    forward_configs_probe("one-warp-forward", NS[1:], [(label, plan_forward(**o)) for label, o in VARIANTS], out,
                          DTYPES)


def backward_probe(out: list) -> None:
    """Dispatcher and the one-warp re-reads, backward, per long N and dtype."""
    backward_configs_probe("one-warp-backward", NS, [(label, plan_backward(**o)) for label, o in VARIANTS], out,
                           DTYPES)


if __name__ == "__main__":
    run_probes({"forward": forward_probe, "backward": backward_probe}, sys.argv[1:] or ["forward", "backward"],
               "probe_one_warp.json")
