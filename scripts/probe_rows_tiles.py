"""Probe: which rows-path tile (rows per program x warps) is fastest for short rows on this GPU?

Exploration for tuning SOFTMAX_PLANS, not evidence: it prints a table and stores nothing. Each
variant is checked against float64 first, then timed like build.py --run (CUDA-graph replays
under triton.testing.do_bench, L2 flushed), next to torch.softmax in the same process.
Usage on a CUDA machine: python scripts/probe_rows_tiles.py
"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from kernellab.measure import bench, capture_graph, check, softmax_reference, warm_up_gpu  # noqa: E402
from kernels import triton_softmax as sm  # noqa: E402

SHAPES = [(4096, 256), (4096, 512)]
TILES = [(rows, warps) for rows in (2, 4, 8, 16, 32) for warps in (1, 2, 4)]


def timed(fn, x) -> float:
    """Median ms of fn(x) as build.py --run times it."""
    graph = capture_graph(fn, (x,))
    return bench(graph.replay if graph is not None else (lambda: fn(x)))["median_ms"]


def main() -> None:
    """Print, per shape and dtype, torch's time and the five fastest correct tiles."""
    warm_up_gpu()
    for rows, cols in SHAPES:
        for dtype in ("float16", "float32"):
            x = (torch.randn(rows, cols, device="cuda") * 2).to(getattr(torch, dtype))
            ref, scale = softmax_reference(x)
            torch_ms = timed(lambda t: torch.softmax(t, -1), x)
            results = []
            for rpp, warps in TILES:
                def run(t, rpp=rpp, warps=warps):
                    y = torch.empty_like(t)
                    sm._forward_rows(y, t, rpp, warps, sm._vector_align(t.element_size(), cols, t.stride(0), y.stride(0)))
                    return y
                if not check(run(x), ref, dtype, scale)["passed"]:
                    results.append((float("inf"), rpp, warps, "WRONG"))
                    continue
                results.append((timed(run, x), rpp, warps, ""))
            plan = sm._select_plan("forward", rows, cols, x.element_size(), x.device)
            results.sort()
            best = ", ".join(f"{r}x{w}w {t * 1e3:.2f}us{bad}" for t, r, w, bad in results[:5])
            print(f"{rows}x{cols} {dtype}: torch {torch_ms * 1e3:.2f} us; table {plan.rows_per_program}x{plan.num_warps}w; best {best}")


if __name__ == "__main__":
    main()
