"""Probe (round 141): the SM clock, power and throttle reasons while a kernel runs back to back for a few seconds.

Exploration, not evidence. Under ncu (one launch on an idle GPU) the H200 ran bf16 1024 x 131,072 at 3.82 TB/s, 90% of
the sweep's copy, and at 1.89 GHz against fp32's 1.94 (round 131); the sweep and the probes, which run kernels back to
back, put it at 86%. If sustained 2-byte kernels, with their MUFU half busy (round 138), draw the GPU into its power
limit and lower its clock, their passes slow down where the copy's and fp32's do not. Each case runs for SECONDS
while a thread samples nvidia-smi every 100 ms; the first second is dropped (the clock settles).

    python scripts/probe_clocks.py     # on a CUDA machine; $OUT/probe_clocks.json

Since round 174 each case runs as CUDA graph replays of 20 calls, so that the host does not pace it.
"""
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_long_rows import save_results, sm, warm_up_gpu  # noqa: E402

SECONDS = 4.0
FIELDS = "clocks.sm,clocks.mem,power.draw,temperature.gpu,"
REASONS = ("clocks_event_reasons.active", "clocks_throttle_reasons.active")  # the name changed in newer drivers


def query_fields() -> str:
    """The nvidia-smi query this driver accepts: the first reasons field that answers."""
    for reasons in REASONS:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={FIELDS}{reasons}", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True)
        if out.returncode == 0 and len(out.stdout.strip().split(", ")) == 5:
            return FIELDS + reasons
    raise SystemExit("nvidia-smi answers neither throttle reasons field")
CASES = [("copy", 131072, "bfloat16"), ("softmax", 131072, "bfloat16"), ("softmax", 131072, "float32"),
         ("softmax", 4096, "bfloat16"), ("softmax", 1048576, "float16"), ("copy", 131072, "float32")]


def sample(query: str, samples: list, stop: threading.Event) -> None:
    """Append (seconds, sm MHz, mem MHz, watts, celsius, reasons) every 100 ms until stop is set."""
    start = time.monotonic()
    while not stop.is_set():
        out = subprocess.run(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True).stdout.strip().split(", ")
        if len(out) == 5:
            samples.append((time.monotonic() - start, float(out[0]), float(out[1]), float(out[2]), float(out[3]),
                            out[4]))
        time.sleep(0.1)


def graphed(op, calls: int):
    """A function replaying op calls times as one CUDA graph: eager calls of long rows are paced by the host (round
    142), which round 141's first run of this probe measured instead of the GPU."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        op()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(calls):
            op()
    return graph.replay


def run_case(query: str, kind: str, n: int, dtype: str) -> dict:
    """The case's op back to back for SECONDS (20 calls a graph replay, a sync after each), with the clock sampled
    meanwhile."""
    x = (torch.randn((1 << 27) // n, n, device="cuda") * 2).to(getattr(torch, dtype))
    y = torch.empty_like(x)
    replay = graphed((lambda: y.copy_(x)) if kind == "copy" else (lambda: sm.softmax_forward(x)), 20)
    replay()
    torch.cuda.synchronize()
    samples, stop = [], threading.Event()
    sampler = threading.Thread(target=sample, args=(query, samples, stop))
    sampler.start()
    calls, start = 0, time.monotonic()
    events = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
    events[0].record()
    while time.monotonic() - start < SECONDS:
        replay()
        calls += 20
        torch.cuda.synchronize()
    events[1].record()
    torch.cuda.synchronize()
    stop.set()
    sampler.join()
    settled = [s for s in samples if s[0] >= 1.0] or samples
    gbs = calls * 2 * x.numel() * x.element_size() / (events[0].elapsed_time(events[1]) * 1e6)
    line = {"case": f"{kind} {x.shape[0]}x{n} {dtype}", "calls": calls, "gbs_back_to_back": round(gbs),
            "sm_mhz_median": statistics.median(s[1] for s in settled), "sm_mhz_min": min(s[1] for s in settled),
            "mem_mhz_median": statistics.median(s[2] for s in settled),
            "watts_median": statistics.median(s[3] for s in settled), "celsius_max": max(s[4] for s in settled),
            "reasons": sorted({s[5] for s in settled})}
    print(line, flush=True)
    return line


if __name__ == "__main__":
    warm_up_gpu()
    print(torch.cuda.get_device_name(), flush=True)
    query = query_fields()
    save_results("probe_clocks.json", [run_case(query, *case) for case in CASES])
