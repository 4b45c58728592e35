"""Probe: tile-stream's L2 prefetches as one bulk prefetch a tile (cp.async.bulk.prefetch.L2, from one thread)
instead of one prefetch a 16-byte vector, at today's distances and longer ones (notes/kernels.md, round 37:
prediction written before the probe).

Each variant sets TILE_STREAM_BULK_PREFETCH, TILE_STREAM_PREFETCH (tiles ahead in pass 1) and
TILE_STREAM_WAIT_PREFETCH (tiles of the next item while waiting) for the dispatcher's own launch.

Exploration for tuning SOFTMAX_PLANS, not evidence: every variant is checked against float64 on every element,
then timed as build.py --run times (CUDA-graph replays, L2 flushed), beside a copy of the same bytes.

    python scripts/probe_bulk_prefetch.py   # on a CUDA machine; $OUT/probe_bulk_prefetch.json

It ran on commit a99f1c3, whose kernels take BULK and whose module has TILE_STREAM_BULK_PREFETCH and
_prefetch_l2_bulk; the bulk prefetch lost on the H100 and was reverted, so it runs only there.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from probe_long_rows import forward_configs_probe, run_probes, with_module  # noqa: E402
from probe_wait_prefetch import DTYPES, NS  # noqa: E402  (the same cases)
from kernels import triton_softmax as sm  # noqa: E402

# (bulk, tiles ahead in pass 1, tiles of the next item while waiting)
SETTINGS = [(True, 1, 1), (True, 2, 1), (True, 4, 1), (True, 1, 4), (True, 2, 4), (True, 1, 8), (False, 1, 1)]


def with_prefetch(fn, bulk, ahead, wait):
    """fn, run with the tile-stream prefetch constants set to (bulk, ahead, wait)."""
    return with_module(fn, TILE_STREAM_BULK_PREFETCH=bulk, TILE_STREAM_PREFETCH=ahead, TILE_STREAM_WAIT_PREFETCH=wait)


def forward_probe(out: list) -> None:
    """Copy, dispatcher and each prefetch setting, per long N and dtype."""
    variants = [(f"{'bulk' if bulk else 'per vector'}, {ahead} ahead, {wait} while waiting",
                 with_prefetch(sm.softmax_forward, bulk, ahead, wait)) for bulk, ahead, wait in SETTINGS]
    forward_configs_probe("bulk-prefetch", NS[1:], variants, out, DTYPES)


if __name__ == "__main__":
    run_probes({"forward": forward_probe}, ["forward"], "probe_bulk_prefetch.json")
