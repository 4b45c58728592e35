"""Probe: do long rows gain when each (row, segment) item is finished one step late? (notes/kernels.md,
round 28: prediction written before the probe)

Round 27 measured the exchange between a row's segments as the cost at 1M columns: without it (wrong
output, timed only) the backward ran 38% faster on the H200. With LAG = 1 a program publishes its item's
partial, runs the next item's first pass, and only then waits for the first item's siblings and writes it,
so siblings get a whole segment's pass of slack. Two segments per program are then live in L2, so smaller
segments are tried beside the planned 256 KB.

Exploration for tuning SOFTMAX_PLANS, not evidence: every variant is checked against float64 on every
element, then timed as build.py --run times (CUDA-graph replays, L2 flushed), beside a copy (forward) or a
2-read-1-write add (backward) of the same bytes.

    python scripts/probe_lag.py [forward] [backward] [long]   # on a CUDA machine; $OUT/probe_lag.json

The product never kept LAG (round 28 missed): run this probe on commit 748d2c2, whose kernels have it.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from kernels import triton_softmax as sm  # noqa: E402
from probe_long_rows import (backward_configs_probe, forward_configs_probe, run_probes,  # noqa: E402
                             stream_backward, tile_stream_forward)

NS = [131072, 262144, 524288, 1048576]
DTYPES = ["float32", "float16", "bfloat16"]
SEGMENTS = [262144, 131072, 65536]


def lag_forward(segment_bytes: int, lag: int):
    """The planned tile-stream config (2 vectors x 32 warps, 1 program per SM) with segment_bytes and lag."""
    run = tile_stream_forward((2, 32, 1, segment_bytes, 1))
    return lambda x: run(x, log2=sm._log2_exp(x), lag=lag)  # log2 as the dispatcher


def lag_backward(block_bytes: int, segment_bytes: int, lag: int):
    """The planned stream backward config (32 KB blocks, 32 warps, 1 program per SM) with segment_bytes and lag."""
    run = stream_backward((block_bytes, 32, 1, 1, segment_bytes))
    return lambda y, dy: run(y, dy, lag=lag)


def variants(make) -> list:
    """(label, callable) per (segment bytes, lag): lag at every segment size, no lag at the smaller ones."""
    return [(f"segment {s // 1024} KB lag {lag}", make(s, lag)) for s in SEGMENTS for lag in (1, 0)
            if lag or s != SEGMENTS[0]]


def forward_probe(out: list) -> None:
    """Dispatcher and tile-stream with and without lag, per long N and dtype."""
    forward_configs_probe("lag-forward", NS, variants(lag_forward), out, DTYPES)


def backward_probe(out: list) -> None:
    """Dispatcher and stream backward with and without lag, per long N and dtype."""
    backward_configs_probe("lag-backward", NS, variants(lambda s, lag: lag_backward(32768, s, lag)), out, DTYPES)


def long_probe(out: list) -> None:
    """The one variant that gained on the H200 (128 KB, lag 1) at 524,288 and 1M, forward and backward."""
    forward_configs_probe("lag-forward", NS[2:], [("segment 128 KB lag 1", lag_forward(131072, 1))], out, DTYPES)
    backward_configs_probe("lag-backward", NS[2:], [("segment 128 KB lag 1", lag_backward(32768, 131072, 1))], out,
                           DTYPES)


if __name__ == "__main__":
    run_probes({"forward": forward_probe, "backward": backward_probe, "long": long_probe},
               sys.argv[1:] or ["forward", "backward"], "probe_lag.json")
