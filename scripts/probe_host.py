"""Probe (round 142): what one eager call of the dispatcher costs the host, path by path, and where it goes.

Exploration, not evidence. Round 141 ran the dispatcher back to back without CUDA graphs and found bf16 1024 x 131,072
at 1,603 GB/s on an H100, where the sweep (CUDA graphs) times it at 2,780: a call took 334 us of wall time for about
190 us of GPU time, so the host, not the GPU, set the pace. Here, for each path's shape on few rows (so that the GPU's
part is small), the wall time of many calls launched back to back (one sync at the end) is the host's cost a call;
torch.softmax on the same input is the reference. Then cProfile's top functions for the slowest path.

    python scripts/probe_host.py     # on a CUDA machine; $OUT/probe_host.json
"""
import cProfile
import io
import pstats
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_long_rows import save_results, sm, warm_up_gpu  # noqa: E402

CALLS = 400
# (rows, columns, dtype): the rows kernel, row-tiles, tma-stream forward (2-byte, fp32, 1M), the backward
CASES = [(64, 4096, "bfloat16"), (16, 24000, "float16"), (8, 131072, "bfloat16"), (8, 131072, "float32"),
         (2, 1048576, "float16")]


def per_call_us(fn, *args) -> float:
    """Wall microseconds a call of fn(*args) over CALLS calls launched back to back (after 20 to warm up)."""
    for _ in range(20):
        fn(*args)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(CALLS):
        fn(*args)
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / CALLS * 1e6


def profile(fn, *args) -> str:
    """cProfile's 25 costliest functions (cumulative) over CALLS calls."""
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(CALLS):
        fn(*args)
    torch.cuda.synchronize()
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(25)
    return out.getvalue()


def synchronizing(fn, *args) -> str:
    """What torch's sync debug mode says of one call of fn(*args): "" where nothing synchronizes."""
    torch.cuda.set_sync_debug_mode("error")
    try:
        fn(*args)
        return ""
    except RuntimeError as error:
        return str(error).splitlines()[0]
    finally:
        torch.cuda.set_sync_debug_mode("default")


if __name__ == "__main__":
    warm_up_gpu()
    print(torch.cuda.get_device_name(), flush=True)
    results = []
    for m, n, dtype in CASES + [(1024, 131072, "bfloat16"), (1024, 131072, "float32")]:
        x = torch.randn(m, n, device="cuda").to(getattr(torch, dtype))
        y = sm.softmax_forward(x)
        dy = torch.randn_like(y)
        torch.cuda.synchronize()
        line = {"shape": [m, n], "dtype": dtype, "forward_syncs": synchronizing(sm.softmax_forward, x),
                "backward_syncs": synchronizing(sm.softmax_backward, y, dy)}
        print(line, flush=True)
        results.append(line)
    for m, n, dtype in CASES:
        x = torch.randn(m, n, device="cuda").to(getattr(torch, dtype))
        y = sm.softmax_forward(x)
        dy = torch.randn_like(y)
        line = {"shape": [m, n], "dtype": dtype,
                "forward_us": per_call_us(sm.softmax_forward, x),
                "torch_softmax_us": per_call_us(torch.softmax, x, -1),
                "backward_us": per_call_us(sm.softmax_backward, y, dy),
                "torch_backward_us": per_call_us(torch._softmax_backward_data, dy, y, -1, x.dtype)}
        print({k: (round(v, 1) if isinstance(v, float) else v) for k, v in line.items()}, flush=True)
        results.append(line)
    x = torch.randn(8, 131072, device="cuda").to(torch.bfloat16)
    text = profile(sm.softmax_forward, x)
    print(text, flush=True)
    results.append({"profile": "forward 8 x 131,072 bf16", "text": text})
    save_results("probe_host.json", results)
