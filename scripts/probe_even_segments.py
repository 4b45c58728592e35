"""Probe (round 108): tma-stream's even segments for rows that start inside view rows, against the whole-tile segments
they replaced.

Exploration, not evidence. The dispatcher (this working tree's kernels/gluon_softmax.py) against another version of
that module launched with the same table plan, on fresh inputs a shape, alternating which goes first, every output
checked against float64 (probe_trials.ab_trials). A ratio over 1: the working tree is faster.

    git show HEAD:kernels/gluon_softmax.py > before_gluon.py
    python scripts/probe_even_segments.py before_gluon.py     # on a Hopper GPU; writes $OUT/probe_even_segments.json
"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_long_rows import save_results, sm, warm_up_gpu  # noqa: E402
from probe_trials import ab_trials  # noqa: E402
from sass_digest import load_module  # noqa: E402

# fp32 rows that start inside view rows (the change), the power-of-two controls (cut as before), and 2-byte
# 100,001 (one segment, now 13 slots where it had 14).
SHAPES = [(n, "float32") for n in (100000, 100001, 777777, 131072, 1 << 20)] + [(100001, "float16")]


def with_module(gs, **options):
    """The forward through gs.tma_stream_forward with the table's plan for x (the dispatcher's tma-stream call) and
    options (keyword arguments of that version's tma_stream_forward)."""
    def forward(x: torch.Tensor) -> torch.Tensor:
        plan = sm._select_plan("forward", *x.shape, x.element_size(), x.device, sm._forward_align(x, x), True)
        assert plan.path == "tma-stream", plan
        y = torch.empty_like(x)
        gs.tma_stream_forward(y, x, plan.rows_per_program, plan.num_warps, plan.segment_bytes, sm._max_polls(),
                              plan.tile_loop, **options)
        return y
    return forward


if __name__ == "__main__":
    warm_up_gpu()
    print(torch.cuda.get_device_name(), flush=True)
    before = with_module(load_module(sys.argv[1], "gluon_softmax_before"))
    results = []
    ab_trials("even segments (working tree) against whole tiles", sm.softmax_forward, SHAPES, results,
              baseline=before, trials=3)
    save_results("probe_even_segments.json", results)
