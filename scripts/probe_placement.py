"""Probe (round 128, prepared): does one input's placement set a sweep shape's share of copy?

Exploration, not evidence. The sweep times each shape on one input, made with the item's seed after the same
allocations in every run, so a shape's buffers may land in the same place each time. On the H100, bf16 2048 x 65,536
ran at 89.3-89.6% of copy in four sweeps, 0.8 points under fp16 on the same kernel, while six fresh inputs of each in
round 122 ran them at the same speed (2,704-2,722 GB/s, about 90.4%). This measures the sweep's own path
(`kernellab.measure.measure_item`: checked on every element, then CUDA-graph replays, L2 flushed) on six inputs a
shape, each after a spacer of a different size so that it lands elsewhere, and reports each one's share of the copy
ceiling measured at the start of the same call.

    python scripts/probe_placement.py   # on a CUDA GPU; $OUT/probe_placement.json
"""
import json
import os
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from kernellab import measure  # noqa: E402

SHAPES = [(2048, 65536, "bfloat16"), (2048, 65536, "float16"), (173, 777777, "bfloat16"), (173, 777777, "float16")]
TRIALS = 6

if __name__ == "__main__":
    measure.warm_up_gpu()
    copy = measure.ceiling(1)["gbs"]
    torch.cuda.empty_cache()
    print(torch.cuda.get_device_name(), f"copy {copy:.0f} GB/s", flush=True)
    lines = []
    for rows, cols, dtype in SHAPES:
        item = measure.WorkItem("softmax-bandwidth-sweep", f"n{cols}", rows, cols, "triton-fused-row-softmax", dtype,
                                "forward")
        shares = []
        for trial in range(TRIALS):
            spacer = torch.empty((trial * 37 + 5) << 20, dtype=torch.uint8, device="cuda")  # moves the next buffers
            result = measure.measure_item(item, measure.SEED + 7919 * trial, copy)
            assert result["status"] == "ok", result["error"] or result["correctness"]
            shares.append(result["copy_share"])
            del spacer
            torch.cuda.empty_cache()
        line = {"shape": [rows, cols], "dtype": dtype, "copy_gbs": copy, "shares": shares,
                "median_share": statistics.median(shares), "spread": max(shares) - min(shares)}
        print(f"{rows}x{cols} {dtype}: " + " ".join(f"{100 * s:.2f}" for s in shares)
              + f"  median {100 * line['median_share']:.2f}%", flush=True)
        lines.append(line)
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], "probe_placement.json").write_text(json.dumps(
            {"device": torch.cuda.get_device_name(), "results": lines}, indent=1))
