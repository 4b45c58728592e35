"""Probe (round 165): what round 162's one-decision cold-path entry costs the hot path, in an A/B on fresh inputs.

Exploration, not evidence. The sweeps after round 162 read the H100's 2-byte backward at 131,072 (stream) 1.7-2.5
points under the seven runs before; sweeps an hour apart differ by about a point. Here the working tree's dispatcher
and the one at AB_BEFORE (5404ec3's kernels/triton_softmax.py, before round 162) alternate on 5 fresh inputs a shape,
each output checked against float64 first: 2-byte 131,072 (stream on the H100), and fp32 1M (tma-stream, whose
kernel round 162 did not touch: a control).

    AB_BEFORE=/tmp/before.py python scripts/probe_barrier_cost.py    # on a CUDA GPU; $OUT/probe_barrier_cost.json
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_long_rows import save_results, sm, warm_up_gpu  # noqa: E402
from probe_trials import ab_trials, backward_case, before_module  # noqa: E402

SHAPES = [(131072, "bfloat16"), (131072, "float16"), (1048576, "float32")]

if __name__ == "__main__":
    warm_up_gpu()
    out = []
    # ratio = working tree's time / AB_BEFORE's: above 1, the working tree is slower
    ab_trials("round-162-entry", before_module().softmax_backward, SHAPES, out, baseline=sm.softmax_backward,
              case=backward_case)
    save_results("probe_barrier_cost", out)
