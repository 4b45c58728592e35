"""Probe: the stream backward's segment size (bytes of y and dy together a program streams twice), against the
dispatcher's 256 KB (notes/kernels.md, round 39: prediction written before the probe).

Exploration for tuning SOFTMAX_PLANS, not evidence: every variant is checked against float64 on every element,
then timed as build.py --run times (CUDA-graph replays, L2 flushed), beside a 2-read-1-write add of the same bytes.

    python scripts/probe_backward_segments.py   # on a CUDA machine; $OUT/probe_backward_segments.json
"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from probe_long_rows import backward_configs_probe, run_probes  # noqa: E402
from probe_wait_prefetch import DTYPES, NS  # noqa: E402  (the same cases)
from kernels import triton_softmax as sm  # noqa: E402

SEGMENT_KB = [128, 192, 384, 512]


def with_segment(segment_bytes):
    """The dispatcher's stream backward plan with another segment size."""
    def run(y, dy):
        dx = torch.empty_like(y)
        align = sm._backward_align(dx, y, dy)
        plan = sm._select_plan("backward", *y.shape, y.element_size(), y.device, align)
        sm._backward_stream(dx, y, dy, plan.block_size, plan.num_warps, plan.programs_per_sm, plan.num_stages,
                            segment_bytes, align, one_warp_from=plan.one_warp_from, slot_lanes=plan.slot_lanes,
                            maxnreg=plan.maxnreg)
        return dx
    return run


def backward_probe(out: list) -> None:
    """The ceiling, the dispatcher and each segment size, per long N and dtype."""
    backward_configs_probe("backward-segments", NS, [(f"{kb} KB segments", with_segment(kb * 1024))
                                                     for kb in SEGMENT_KB], out, DTYPES)


if __name__ == "__main__":
    run_probes({"backward": backward_probe}, ["backward"], "probe_backward_segments.json")
