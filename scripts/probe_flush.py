"""Probe: does the way L2 is flushed before each timed call change what a softmax measures?

Diagnostic, not evidence. build.py --run times with triton.testing.do_bench, which flushes L2
before every sample by writing zeros over a 256 MB buffer. That leaves up to an L2's worth of
dirty lines, and the timed kernel's own traffic evicts them: their write-back to DRAM may fall
inside the timed window. This probe times the same CUDA-graph replays under three flushes:
  write - do_bench's (zero a 256 MB buffer);
  read  - sum a 256 MB buffer (L2 left full of clean lines);
  none  - no flush (warm: the input may still sit in L2),
for the dispatcher (rows kernel, evict_last loads), the rows kernel without the hint, torch.softmax
and a copy, on L2-sized and HBM-sized shapes. Every softmax is checked against float64 first.

    python scripts/probe_flush.py      # on a CUDA machine; $OUT/probe_flush.json when OUT is set
"""
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from kernellab.measure import capture_graph, check, softmax_reference  # noqa: E402
from kernels import triton_softmax as sm  # noqa: E402
from probe_long_rows import rows_forward, run_probes  # noqa: E402

SHAPES = [(4096, 256), (4096, 1024), (16384, 1024), (65536, 2048)]  # 2-8 MB ... 256-512 MB per tensor
DTYPES = ["float16", "float32"]
REPS = 300
FLUSH_BYTES = 256 << 20


def table_rows_forward(x):
    """The rows kernel at the dispatcher's own tile for x, without the evict_last hint."""
    plan = sm._select_plan("forward", x.shape[0], x.shape[1], x.element_size(), x.device,
                           sm._forward_align(x, x))
    return rows_forward(plan.rows_per_program, plan.num_warps)(x)


def time_replays(graph, flush) -> dict:
    """Median and p20-p80 of REPS replays (us), each after flush(), timed by CUDA events around the replay (graph: a
    CUDA graph, or any callable, called directly)."""
    call = graph.replay if isinstance(graph, torch.cuda.CUDAGraph) else graph
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(REPS)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(REPS)]
    for _ in range(10):
        flush()
        call()
    for s, e in zip(starts, ends):
        flush()
        s.record()
        call()
        e.record()
    torch.cuda.synchronize()
    us = sorted(s.elapsed_time(e) * 1e3 for s, e in zip(starts, ends))
    return {"us": statistics.median(us), "p20": us[int(0.2 * (REPS - 1))], "p80": us[int(0.8 * (REPS - 1))]}


def flushes() -> dict:
    """{name: flush()} for the three protocols."""
    buf = torch.empty(FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
    buf.random_(0, 7)
    total = torch.empty((), dtype=torch.int64, device="cuda")
    return {"write": buf.zero_,  # what triton.testing.do_bench does
            "read": lambda: torch.sum(buf, dim=0, dtype=torch.int64, out=total),
            "none": lambda: None}


def flush_probe(out: list) -> None:
    """Every (shape, dtype, implementation) under every flush."""
    protocols = flushes()
    for rows, cols in SHAPES:
        for dtype in DTYPES:
            x = (torch.randn(rows, cols, device="cuda") * 2).to(getattr(torch, dtype))
            ref, scale = softmax_reference(x)
            y = torch.empty_like(x)
            impls = {"dispatcher": sm.softmax_forward, "rows, no evict hint": table_rows_forward,
                     "torch.softmax": lambda t: torch.softmax(t, -1)}
            lines = []
            for name, fn in impls.items():
                passed = check(fn(x), ref, dtype, scale)["passed"]
                graph = capture_graph(fn, (x,))
                lines += [dict(impl=name, flush=f, passed=passed, **time_replays(graph, flush))
                          for f, flush in protocols.items()]
            graph = capture_graph(lambda t: y.copy_(t), (x,))
            lines += [dict(impl="copy", flush=f, passed=True, **time_replays(graph, flush))
                      for f, flush in protocols.items()]
            moved = 2 * x.numel() * x.element_size()
            print(f"{rows}x{cols} {dtype} ({moved / 2 ** 20:.0f} MiB moved):", flush=True)
            for line in lines:
                line["gbs"] = moved / line["us"] / 1e3
                print(f"  {line['impl']:22s} flush {line['flush']:5s} {line['us']:9.2f} us "
                      f"({line['p20']:.2f}-{line['p80']:.2f}) {line['gbs']:7.0f} GB/s"
                      + ("" if line["passed"] else "  WRONG"), flush=True)
            out.append({"rows": rows, "cols": cols, "dtype": dtype, "lines": lines})
            torch.cuda.empty_cache()


# (rows, cols, dtype): the H200's short 2-byte sweep shapes at the sweep's 2^27 elements, and an fp32 one
SHARE_SHAPES = [(2048, 65536, "bfloat16"), (1024, 131072, "bfloat16"), (1342, 100001, "bfloat16"),
                (128, 1048576, "float16"), (1024, 131072, "float32")]


def share_probe(out: list) -> None:
    """Round 206: the dispatcher's share of the ceiling copy (1 GiB a tensor, called directly as measure.ceiling
    does) under do_bench's write flush and under a read flush, at SHARE_SHAPES (graph replays, as the runs time
    them), and a copy of a 2-byte sweep call's bytes (256 MiB, called directly)."""
    protocols = {k: v for k, v in flushes().items() if k != "none"}
    copies = {}
    for mib in (1024, 256):
        a = torch.randn(mib << 18, device="cuda")
        b = torch.empty_like(a)
        for f, flush in protocols.items():
            t = time_replays(lambda: b.copy_(a), flush)
            copies[(mib, f)] = 2 * a.numel() * 4 / t["us"] / 1e3
            out.append(dict(impl=f"copy {mib} MiB (direct)", flush=f, gbs=copies[(mib, f)], **t))
            print(f"copy {mib} MiB flush {f}: {t['us']:.2f} us, {copies[(mib, f)]:.0f} GB/s", flush=True)
        del a, b
    for rows, cols, dtype in SHARE_SHAPES:
        x = (torch.randn(rows, cols, device="cuda") * 2).to(getattr(torch, dtype))
        ref, scale = softmax_reference(x)
        assert check(sm.softmax_forward(x), ref, dtype, scale)["passed"], (rows, cols, dtype)
        del ref, scale
        graph = capture_graph(sm.softmax_forward, (x,))
        moved = 2 * x.numel() * x.element_size()
        for f, flush in protocols.items():
            t = time_replays(graph, flush)
            gbs = moved / t["us"] / 1e3
            line = dict(impl="dispatcher", rows=rows, cols=cols, dtype=dtype, flush=f, gbs=gbs,
                        share=gbs / copies[(1024, f)], **t)
            out.append(line)
            print(f"{rows}x{cols} {dtype} flush {f}: {t['us']:.2f} us, {gbs:.0f} GB/s, "
                  f"{100 * line['share']:.1f}% of this flush's copy", flush=True)
        del x, graph
        torch.cuda.empty_cache()


if __name__ == "__main__":
    run_probes({"flush": flush_probe, "share": share_probe}, sys.argv[1:] or ["flush"], "probe_flush.json")
