"""Probe: the stream backward's segment size (bytes of y and dy together a program streams twice), against the
dispatcher's 256 KB (notes/kernels.md, round 39: prediction written before the probe).

Exploration for tuning SOFTMAX_PLANS, not evidence: every variant is checked against float64 on every element,
then timed as build.py --run times (CUDA-graph replays, L2 flushed), beside a 2-read-1-write add of the same bytes.

    python scripts/probe_backward_segments.py [backward|long]   # on a CUDA machine; $OUT/probe_backward_segments.json
"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from probe_long_rows import backward_configs_probe, run_probes  # noqa: E402
from probe_wait_prefetch import DTYPES, NS  # noqa: E402  (the same cases)
from kernels import triton_softmax as sm  # noqa: E402

SEGMENT_KB = [128, 192, 384, 512]


def with_stream(block, segment_bytes, num_warps=None, programs_per_sm=None):
    """The dispatcher's stream backward plan with another block ('half', 'twice' the plan's, or None), segment size,
    and warps and programs an SM (None: the plan's)."""
    def run(y, dy):
        dx = torch.empty_like(y)
        align = sm._backward_align(dx, y, dy)
        plan = sm._select_plan("backward", *y.shape, y.element_size(), y.device, align)
        block_size = {None: plan.block_size, "half": plan.block_size // 2, "twice": plan.block_size * 2}[block]
        warps, programs = num_warps or plan.num_warps, programs_per_sm or plan.programs_per_sm
        # the plan's cap where it has one, rescaled to the programs an SM (the plan's own at its own shape)
        maxnreg = plan.maxnreg and min(255, 65536 // (programs * warps * 32) // 8 * 8)
        sm._backward_stream(dx, y, dy, block_size, warps, programs, plan.num_stages, segment_bytes, align,
                            one_warp_from=plan.one_warp_from, slot_lanes=plan.slot_lanes, maxnreg=maxnreg)
        return dx
    return run


def backward_probe(out: list) -> None:
    """The ceiling, the dispatcher and each segment size, per long N and dtype."""
    backward_configs_probe("backward-segments", NS, [(f"{kb} KB segments", with_stream(None, kb * 1024))
                                                     for kb in SEGMENT_KB], out, DTYPES)


# Round 69: the backward's rows of 524,288-1M columns (2-byte 84-85% of the ceiling on the H100, fp32 79%), other block
# and segment shapes than the table's: (label, block elements or None for the plan's, segment bytes, warps, programs
# an SM). Every launch keeps the plan's other settings (slot lanes, one-warp re-reads, register cap).
LONG_SHAPES = [("320 KB segments (5 blocks)", None, 327680, 32, 1),
               ("blocks of half, 256 KB segments", "half", 262144, 32, 1),
               ("blocks of half, 224 KB segments", "half", 229376, 32, 1),
               ("blocks of twice, 256 KB segments", "twice", 262144, 32, 1),
               ("two 16-warp programs an SM, 128 KB segments", None, 131072, 16, 2)]


def long_probe(out: list) -> None:
    """LONG_SHAPES against the dispatcher, 524,288 and 1M columns, all three dtypes."""
    backward_configs_probe("backward-long", [1048576, 524288], [(label, with_stream(*shape))
                                                                 for label, *shape in LONG_SHAPES], out, DTYPES)


if __name__ == "__main__":
    run_probes({"backward": backward_probe, "long": long_probe}, sys.argv[1:] or ["backward"],
               "probe_backward_segments.json")
