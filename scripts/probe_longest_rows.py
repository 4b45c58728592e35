"""Probe (rounds 158-159, 163): the dispatcher on fp32 rows of 3M-16M columns, where a row may outgrow what the grid
holds (since round 163 cut into as many segments as run at once: the kernel launched and its segments are logged).

Exploration, not evidence. A row cut into more segments than the persistent grid has programs waits on siblings that
are not running, and each waiting program computes their partials from global memory (round 158: the H100's fp32
backward at 3,145,728 and 4,194,304 columns ran at 32-39 GB/s). For each shape: the table's path and its segments,
every element checked against float64, the median time of the dispatcher and its GB/s, and the share of a torch copy
of 2^27 fp32 elements timed in the same process.

    python scripts/probe_longest_rows.py    # on a CUDA GPU; $OUT/probe_longest_rows.json
"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_long_rows import check, save_results, sm, timed, warm_up_gpu  # noqa: E402
from probe_trials import backward_case, forward_case  # noqa: E402

SHAPES = [("backward", 3145728), ("backward", 4194304), ("backward", 8388608), ("backward", 16777216),
          ("forward", 6291456), ("forward", 8388608), ("forward", 16777216)]


if __name__ == "__main__":
    warm_up_gpu()
    device = torch.cuda.get_device_name()
    source = torch.randn(1 << 27, device="cuda")
    copy_gbs = 2 * source.numel() * 4 / timed(lambda: source.clone())["ms"] / 1e6
    print(device, f"copy {copy_gbs:.0f} GB/s", flush=True)
    results = []
    for op, n in SHAPES:
        case = backward_case if op == "backward" else forward_case
        m, args, moved, ref, scale = case(n, "float32")
        fn = sm.softmax_backward if op == "backward" else sm.softmax_forward
        sm._launch_log = []
        passed = check(fn(*args), ref, "float32", scale)["passed"]
        launched = [(getattr(kernel, "fn", kernel).__name__, kwargs.get("SEGMENTS_BLOCK"), list(grid))
                    for kernel, _, kwargs, grid in sm._launch_log]
        sm._launch_log = None
        tma = sm._tma_stream_eligible(args[0], op)
        plan = sm._select_plan(op, m, n, 4, args[0].device, 4, tma)
        ms = timed(fn, *args)["ms"]
        line = {"op": op, "cols": n, "rows": m, "path": plan.path, "launched": launched, "passed": passed, "ms": ms,
                "gbs": moved / ms / 1e6, "copy_gbs": copy_gbs}
        print(line, flush=True)
        results.append(line)
        del args, ref
        torch.cuda.empty_cache()
    # the cold path of stream and tile-stream on rows the grid holds: every program computes its siblings' partials
    # from global memory (max_polls 0), as a row outgrowing the grid made them do
    sm._max_polls = lambda: 0
    for op, n in (("backward", 1 << 20), ("forward", 1 << 20), ("backward", 262144), ("forward", 262144)):
        case = backward_case if op == "backward" else forward_case
        m, args, moved, ref, scale = case(n, "float32")
        plan = sm._select_plan(op, m, n, 4, args[0].device, 4, False)
        out = torch.empty_like(args[0])
        if op == "backward":
            sm._launch_backward_path(out, *args, plan, 4)
        else:
            sm._launch_forward_path(out, *args, plan, 4)
        line = {"op": op, "cols": n, "rows": m, "path": plan.path, "cold_path": True,
                "passed": check(out, ref, "float32", scale)["passed"]}
        print(line, flush=True)
        results.append(line)
    save_results("probe_longest_rows", results)
