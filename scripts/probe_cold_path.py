"""Probe (round 104): what the forward's max_polls-0 launch publishes and writes, segment by segment, against torch.

Exploration, not evidence. scripts/stress_cold_path.py found round 104's forward failing every max_polls-0 launch
(round 103's failed none). For one 3 x 1M float32 launch of each version: each slot's (max, sum) against the
segment's true ones, and each segment's output against float64 (its median out/ref ratio and its worst error).

    python scripts/probe_cold_path.py OTHER_MODULE_PATH     # on a Hopper GPU
"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from stress_cold_path import load_module, sm  # noqa: E402


def report(gs, name: str, n_cols: int = 1 << 20) -> None:
    """Print the slots and per-segment errors of one max_polls-0 forward."""
    x = torch.randn(3, n_cols, generator=torch.Generator(device="cuda").manual_seed(0), device="cuda") * 3
    plan = sm._select_plan("forward", 3, n_cols, 4, x.device, 1, True)
    y = torch.empty_like(x)
    seen = {}

    def launch(kernel, grid, *args, **kwargs):
        seen.update(args=args, kwargs=kwargs, grid=grid)
        kernel[grid](*args, **kwargs)
    gs.tma_stream_forward(y, x, plan.rows_per_program, plan.num_warps, plan.segment_bytes, 0, launch=launch)
    torch.cuda.synchronize()
    args, kwargs = seen["args"], seen["kwargs"]
    slots, n_segments, tiles = args[3], args[6], args[7]
    span = tiles * kwargs["TILE"]
    ref = torch.softmax(x.double(), -1)
    print(f"{name}: grid {seen['grid']}, {n_segments} segments of {span}, constexprs "
          f"{ {k: v for k, v in kwargs.items() if k != 'num_warps'} }", flush=True)
    bits = slots.view(3, n_segments).cpu()
    for row in range(3):
        worst = []
        for seg in range(n_segments):
            part = x[row, seg * span:(seg + 1) * span].double()
            true_max = part.max()
            true_sum = torch.exp(part - true_max).sum()
            packed = int(bits[row, seg])
            got_max = torch.tensor([(packed >> 32) & 0xFFFFFFFF], dtype=torch.int64).to(torch.int32).view(torch.float32)
            got_sum = torch.tensor([packed & 0xFFFFFFFF], dtype=torch.int64).to(torch.int32).view(torch.float32)
            out, want = y[row, seg * span:(seg + 1) * span].double(), ref[row, seg * span:(seg + 1) * span]
            ratio = (out / want).median().item()
            err = ((out - want).abs() / want.abs()).max().item()
            worst.append(f"{seg}:{float(got_max) - true_max.item():+.1e}/{float(got_sum) / true_sum.item() - 1:+.1e}"
                         f"/r{ratio - 1:+.1e}/e{err:.1e}")
        print(f"  row {row}: seg:dmax/dsum-rel/out-ratio/max-rel-err " + " ".join(worst), flush=True)


if __name__ == "__main__":
    print(torch.cuda.get_device_name(), flush=True)
    report(load_module(str(Path(__file__).resolve().parent.parent / "kernels" / "gluon_softmax.py"),
                       "gluon_softmax_working_tree"), "working tree")
    report(load_module(sys.argv[1], "gluon_softmax_other"), "other")
