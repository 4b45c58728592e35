"""Probe (round 202): what timing one call as a CUDA-graph replay adds, against timing the same call eagerly.

Exploration, not evidence. `build.py --run` times every softmax as do_bench over CUDA-graph replays of one call (L2
flushed before each), and the copy ceiling eagerly (`out.copy_(x)` under do_bench). This times, on the same inputs:
the dispatcher's forward and torch.softmax both ways (every output checked against float64 first); a copy of 256 MiB
and of 1 GiB eagerly, as a graph of `copy_`, and as a graph and eagerly of an elementwise kernel that copies
(`torch.mul(x, 1.0, out=y)`); and a graph of one tiny kernel, for what a replay costs by itself. Usage on a CUDA
machine (writes $OUT/probe_timer.json when OUT is set):

    python scripts/probe_timer.py
"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_long_rows import forward_input, save_results, warm_up_gpu  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from kernellab.measure import bench, capture_graph, check  # noqa: E402
from kernels import triton_softmax as sm  # noqa: E402

SHAPES = [(65536, "float16"), (131072, "bfloat16"), (100001, "bfloat16"), (1048576, "bfloat16"), (131072, "float32"),
          (1024, "float16")]


def both_ways(fn, *args) -> dict:
    """Median ms of fn(*args) as graph replays and as direct calls, both under do_bench with L2 flushed."""
    graph = capture_graph(fn, args)
    replay = bench(graph.replay)["median_ms"]
    direct = bench(lambda: fn(*args))["median_ms"]
    return {"graph_ms": replay, "eager_ms": direct, "graph_minus_eager_us": round(1000 * (replay - direct), 2)}


def copies(results: list) -> None:
    """A copy of 256 MiB and of 1 GiB (fp32), each way; and a graph of one tiny kernel."""
    for n_bytes in (1 << 28, 1 << 30):
        x = torch.randn(n_bytes // 4, device="cuda")
        y = torch.empty_like(x)
        line = {"case": f"copy {n_bytes >> 20} MiB", "moved": 2 * n_bytes}
        line["copy_"] = both_ways(lambda a, b: b.copy_(a), x, y)
        line["mul kernel"] = both_ways(lambda a, b: torch.mul(a, 1.0, out=b), x, y)
        for way in ("copy_", "mul kernel"):
            line[way]["graph_gbs"] = round(2 * n_bytes / line[way]["graph_ms"] / 1e6, 1)
            line[way]["eager_gbs"] = round(2 * n_bytes / line[way]["eager_ms"] / 1e6, 1)
        print(line, flush=True)
        results.append(line)
        del x, y
    one = torch.zeros(1, device="cuda")
    line = {"case": "one tiny kernel (fill_ of one element)", **both_ways(lambda t: t.fill_(1.0), one)}
    print(line, flush=True)
    results.append(line)


def softmaxes(results: list) -> None:
    """The dispatcher's forward and torch.softmax at the sweep's size, each way, outputs checked first."""
    for n, dtype in SHAPES:
        _, x, moved, ref, scale = forward_input(n, dtype)
        line = {"case": f"{x.shape[0]}x{n} {dtype}", "moved": moved}
        for name, fn in (("dispatcher", sm.softmax_forward), ("torch.softmax", lambda t: torch.softmax(t, -1))):
            verdict = check(fn(x), ref, dtype, scale)
            assert verdict["passed"], (name, line["case"], verdict)
            line[name] = both_ways(fn, x)
            line[name]["graph_gbs"] = round(moved / line[name]["graph_ms"] / 1e6, 1)
            line[name]["eager_gbs"] = round(moved / line[name]["eager_ms"] / 1e6, 1)
        print(line, flush=True)
        results.append(line)
        del x, ref


def main() -> None:
    """Copies first, then the softmaxes; saved as $OUT/probe_timer.json."""
    warm_up_gpu()
    print(torch.cuda.get_device_name(), flush=True)
    results = []
    copies(results)
    softmaxes(results)
    save_results("probe_timer.json", results)


if __name__ == "__main__":
    main()
