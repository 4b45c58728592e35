"""Probe: tile-stream as two 16-warp programs an SM instead of one of 32 warps, so that one program can read
while the other waits for its row's siblings (notes/kernels.md, round 36: prediction written before the probe).

Exploration for tuning SOFTMAX_PLANS, not evidence: every variant is checked against float64 on every element,
then timed as build.py --run times (CUDA-graph replays, L2 flushed), beside a copy of the same bytes.

    python scripts/probe_two_programs.py   # on a CUDA machine; $OUT/probe_two_programs.json
"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from probe_long_rows import forward_configs_probe, run_probes  # noqa: E402
from probe_wait_prefetch import DTYPES, NS  # noqa: E402  (the same cases)
from kernels import triton_softmax as sm  # noqa: E402

# (vectors a thread, warps, programs an SM, segment bytes)
CONFIGS = [(2, 16, 2, 131072), (2, 16, 2, 262144), (4, 16, 2, 131072)]


def tile_stream(vectors, warps, programs_per_sm, segment_bytes):
    """The dispatcher's tile-stream launch (its unroll and slot polling) with another program shape."""
    def run(x):
        y = torch.empty_like(x)
        align = sm._forward_align(y, x)
        plan = sm._select_plan("forward", *x.shape, x.element_size(), x.device, align)
        sm._forward_tile_stream(y, x, vectors, warps, programs_per_sm, segment_bytes, align, plan.unroll,
                                sm._log2_exp(x), one_warp_from=plan.one_warp_from)
        return y
    return run


def forward_probe(out: list) -> None:
    """Copy, dispatcher and each program shape, per long N and dtype."""
    forward_configs_probe("two-programs", NS[1:], [(f"tile-stream {c}", tile_stream(*c)) for c in CONFIGS], out,
                          DTYPES)


if __name__ == "__main__":
    run_probes({"forward": forward_probe}, ["forward"], "probe_two_programs.json")
