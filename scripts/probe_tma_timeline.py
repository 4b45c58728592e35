"""Probe (round 180): where a tma-stream forward call's time goes, item by item, and whether its programs run in step.

Exploration, not evidence. Rounds 176 and 178 split the H200's 2-byte rows' time into a cost a call (7-9 us) and a
margin (90% of copy, against fp32's 95-97%). With notes/probes/2026-11-27-round-180-timeline.patch applied (device
only), the forward stamps each (row, segment) item with %globaltimer at four points: pass 1's start (before its first
tile is waited for), its partial ready, its row's statistics known, and pass 2's stores and refills issued; and
records the SM. From them: each phase's median and 90th percentile; how many programs are in each phase over the
call (0.5 us bins), to see whether the programs move in step (every program's pass 1 at once, then every wait, so
that HBM idles between); the call's start (first item's data) and end (the last items' tail). Then the patch's
STAGGER: an SM's programs start their first loads at (place among the SM's programs) x STAGGER ns, timed against the
table on fresh inputs, every output checked against float64 first.

    patch -p1 < notes/probes/2026-11-27-round-180-timeline.patch
    python scripts/probe_tma_timeline.py      # on a Hopper GPU; $OUT/probe_tma_timeline.json

Since 59d052f (the kernel's rows_dynamic) the stamps alone are notes/probes/2026-11-27-round-186-timeline.patch
(no STAGGER; the fifth stamp is program id x 1024 + SM): apply it instead for the raw mode.
    python scripts/probe_tma_timeline.py raw  # bf16 131,072 at the sweep's 1,024 rows and at 990 (10.00 rounds of
                                              # the grid), each item's stamps kept; $OUT/probe_tma_timeline_raw.json
    python scripts/probe_tma_timeline.py raw 100000 bfloat16 1048576 bfloat16   # the sweep's rows of each
"""
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_long_rows import (check, forward_input, save_results, sm, softmax_reference, timed,  # noqa: E402
                             warm_up_gpu)
from probe_tma_no_exchange import require_patch, with_attribute  # noqa: E402
from probe_trials import ab_trials  # noqa: E402
from kernels import gluon_softmax as gs  # noqa: E402

CASES = [(131072, "bfloat16"), (65536, "float16"), (1048576, "bfloat16"), (131072, "float32")]
STAGGERS = (500, 2000)
BIN_NS = 500


def pct(values, q: float) -> float:
    """The q-quantile of values (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def stamped_call(x: torch.Tensor) -> tuple:
    """(output, [n_items, 5] stamps as a CPU tensor, grid) of one forward call with the stamps on, L2 flushed first."""
    stamps = torch.zeros(x.shape[0] * 512 * 5, dtype=torch.int64, device="cuda")
    torch.empty(256 << 20, dtype=torch.uint8, device="cuda").fill_(1)  # flush L2
    sm._launch_log = []
    gs.STAMPS = stamps
    try:
        y = sm.softmax_forward(x)
        torch.cuda.synchronize()
        grid = sm._launch_log[-1][3][0]
    finally:
        gs.STAMPS, sm._launch_log = None, None
    s = stamps.view(-1, 5).cpu()
    n_items = int((s[:, 0] != 0).nonzero().max()) + 1
    return y, s[:n_items], grid


def stamped_pair(attribute: str, label: str, summarize, out: list) -> None:
    """One stamped call of bf16 131,072 (1,024 rows) with gluon_softmax's attribute off (the table) and on (label),
    each output checked against float64 first; summarize(stamps, grid) gives each line's figures."""
    x = (torch.randn(1024, 131072, device="cuda") * 2).to(torch.bfloat16)
    ref, scale = softmax_reference(x)
    for name, value in (("table", False), (label, True)):
        setattr(gs, attribute, value)
        try:
            for _ in range(3):
                y, s, grid = stamped_call(x)
        finally:
            setattr(gs, attribute, False)
        assert check(y, ref, "bfloat16", scale)["passed"], name
        line = {"probe": f"timeline {name}", **summarize(s, grid)}
        print({k: v for k, v in line.items() if k != "programs_in_phase"}, flush=True)
        out.append(line)


def summary(s: torch.Tensor, grid: int) -> dict:
    """Phase medians, the call's start and end, and the programs in each phase over time."""
    t = (s[:, :4] - s[:, :4][s[:, :4] > 0].min()).tolist()
    n = len(t)
    pass1 = [r[1] - r[0] for r in t]
    wait = [r[2] - r[1] for r in t]
    pass2 = [r[3] - r[2] for r in t]
    gap = [t[i + grid][0] - t[i][3] for i in range(n - grid)]
    end = max(r[3] for r in t)
    bins = int(end // BIN_NS) + 1
    phases = {"pass1": [0] * bins, "wait": [0] * bins, "pass2": [0] * bins}
    for r in t:
        for name, lo, hi in (("pass1", r[0], r[1]), ("wait", r[1], r[2]), ("pass2", r[2], r[3])):
            for b in range(int(lo // BIN_NS), int(hi // BIN_NS) + 1):
                phases[name][b] += 1
    first_round = t[:grid]
    last_ends = sorted(max(t[i][3] for i in range(p, n, grid)) for p in range(grid))
    us = lambda v: round(v / 1000, 2)  # noqa: E731
    return {
        "items": n, "grid": grid, "call_us": us(end),
        "median_us": {k: us(statistics.median(v)) for k, v in
                      (("pass1", pass1), ("wait", wait), ("pass2", pass2), ("between", gap or [0]))},
        "p90_us": {k: us(pct(v, 0.9)) for k, v in (("pass1", pass1), ("wait", wait), ("pass2", pass2))},
        "first_round_us": {"partial_p10_p50_p90": [us(pct([r[1] for r in first_round], q)) for q in (.1, .5, .9)],
                           "known_p10_p50_p90": [us(pct([r[2] for r in first_round], q)) for q in (.1, .5, .9)]},
        "programs_done_us_p10_p50_p90_last": [us(pct(last_ends, q)) for q in (.1, .5, .9)] + [us(last_ends[-1])],
        "bins_of_ns": BIN_NS, "programs_in_phase": phases,
    }


ROUND_180_RAW = ((1024, 131072, "bfloat16"), (990, 131072, "bfloat16"))  # the sweep's rows, and 10.00 rounds


def raw(out: list, cases=ROUND_180_RAW) -> None:
    """Each item's stamps (ns from the call's first), the SM and the program, for (rows, columns, dtype) cases: by
    default two row counts of bf16 131,072."""
    for m, n, dtype in cases:
        x = (torch.randn(m, n, device="cuda") * 2).to(getattr(torch, dtype))
        ref, scale = softmax_reference(x)
        for _ in range(3):
            y, s, grid = stamped_call(x)
        assert check(y, ref, dtype, scale)["passed"], (m, n, dtype)
        t0 = int(s[:, 0].min())
        line = {"cols": n, "dtype": dtype, "rows": m, "grid": grid, **summary(s, grid),
                "stamps_ns": [[int(v) - t0 for v in r[:4]] + [int(r[4])] for r in s.tolist()]}
        print({k: v for k, v in line.items() if k not in ("programs_in_phase", "stamps_ns")}, flush=True)
        out.append(line)
        del x, ref, scale, y


if __name__ == "__main__":
    require_patch("STAMPS", "2026-11-27-round-180-timeline.patch (or round 186's)")
    warm_up_gpu()
    print(torch.cuda.get_device_name(), flush=True)
    results: list = []
    if sys.argv[1:2] == ["raw"]:  # raw [N DTYPE ...]: the sweep's rows of each, else round 180's two cases
        pairs = list(zip(sys.argv[2::2], sys.argv[3::2]))
        raw(results, [((1 << 27) // int(n), int(n), dtype) for n, dtype in pairs] or ROUND_180_RAW)
        save_results("probe_tma_timeline_raw.json", results)
        sys.exit(0)
    for n, dtype in CASES:
        m, x, moved, ref, scale = forward_input(n, dtype)
        plain_ms = timed(sm.softmax_forward, x)["ms"]
        for _ in range(3):  # compile, then settle
            y, s, grid = stamped_call(x)
        assert check(y, ref, dtype, scale)["passed"], (n, dtype)
        line = {"cols": n, "dtype": dtype, "rows": m, "plain_us": round(plain_ms * 1000, 2),
                "plain_gbs": round(moved / plain_ms / 1e6), **summary(s, grid)}
        print({k: v for k, v in line.items() if k != "programs_in_phase"}, flush=True)
        results.append(line)
        del x, ref, scale, y
        torch.cuda.empty_cache()
        save_results("probe_tma_timeline.json", results)
    for stagger in STAGGERS:
        ab_trials(f"stagger {stagger} ns", with_attribute(sm.softmax_forward, gs, "STAGGER", stagger),
                  [(n, d) for n, d in CASES], results, trials=3)
        save_results("probe_tma_timeline.json", results)
