"""Probe (round 182): tma-stream's forward with whole rows handed to groups of programs from a counter
(gluon_softmax.ROWS_DYNAMIC: _claim, _posted_row).

Exploration, not evidence. Round 180 found the H200's programs ending in the order of their launch waves over a
call's last 25-30 us; round 181 found that a row spread over every wave loses 5-14% (each row then waits for its
slowest segment). Here a row's segments stay on one group of consecutive programs (of one wave, as now), but the
groups take their rows from a counter, so that fast groups take more rows and the groups end together. The first of
a group's programs to finish pass 1 of a row claims the group's next row (a compare-and-swap on the group's box, an
add on the counter, a post); its siblings read it after their wait, before pass 2 asks for its tiles. With
notes/probes/2026-11-27-round-180-timeline.patch and notes/probes/2026-11-27-round-182-rows-dynamic.patch applied
(device only; the stamps' fifth field is then program id x 1024 + SM), this stamps one call of bf16 131,072 each
way, then times the table against ROWS_DYNAMIC on fresh inputs, every output of both checked against float64 first.

    patch -p1 < notes/probes/2026-11-27-round-180-timeline.patch
    patch -p1 < notes/probes/2026-11-27-round-182-rows-dynamic.patch
    python scripts/probe_rows_dynamic.py        # on a Hopper GPU; $OUT/probe_rows_dynamic.json
    python scripts/probe_rows_dynamic.py rows   # the same at 2 and 4 times the sweep's rows (fewer shapes)

Since the product took it (the table's rows_dynamic, with no patch applied):

    python scripts/probe_rows_dynamic.py table  # the table against the table with rows_dynamic off
    python scripts/probe_rows_dynamic.py shrink # the table against its own launch on a grid cut to whole groups,
                                                # with the counter (round 187)

Round 190: one stamped call of each, at bf16 100,000 and fp16 100,001 (the sweep's rows), where round 187's cut grid
with the counter gained nothing; with notes/probes/2026-11-27-round-190-timeline.patch applied (round 186's stamps on
c23c1c0's launcher):

    patch -p1 < notes/probes/2026-11-27-round-190-timeline.patch
    python scripts/probe_rows_dynamic.py shrink_timeline   # $OUT/probe_rows_dynamic_shrink_timeline.json
"""
import statistics
import sys
from collections import defaultdict
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_long_rows import ELEMENTS, check, save_results, sm, softmax_reference, warm_up_gpu  # noqa: E402
from probe_tma_no_exchange import require_patch, with_attribute  # noqa: E402
from probe_tma_timeline import pct, stamped_pair  # noqa: E402
from probe_trials import ab_trials  # noqa: E402
from kernels import gluon_softmax as gs  # noqa: E402

FORWARD = [(65536, "bfloat16"), (131072, "bfloat16"), (262144, "float16"), (1048576, "bfloat16"),
           (100000, "float16"), (100001, "bfloat16"), (777777, "float16"), (131072, "float32"), (777777, "float32")]


def ends(s: torch.Tensor) -> dict:
    """The programs' last ends (us from the call's first stamp): quantiles, by launch wave (program id // SMs), and
    items a program."""
    t0 = int(s[:, 0].min())
    last, items = {}, defaultdict(int)
    for stamp in s.tolist():
        program = stamp[4] // 1024
        last[program] = max(last.get(program, 0), stamp[3] - t0)
        items[program] += 1
    grid = len(last)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    waves = defaultdict(list)
    for program, end in last.items():
        waves[program // sms].append(end)
    by_wave_items = defaultdict(list)
    for program, n in items.items():
        by_wave_items[program // sms].append(n)
    us = lambda v: round(v / 1000, 1)  # noqa: E731
    return {"grid": grid, "call_us": us(max(last.values())),
            "programs_done_us_p10_p50_p90_last": [us(pct(list(last.values()), q)) for q in (.1, .5, .9, 1.0)],
            "ends_by_wave_us": [us(statistics.median(v)) for _, v in sorted(waves.items())],
            "items_by_wave": [round(statistics.mean(v), 2) for _, v in sorted(by_wave_items.items())]}


def timeline(out: list) -> None:
    """One stamped call of bf16 131,072 (1,024 rows), the table's and ROWS_DYNAMIC's."""
    stamped_pair("ROWS_DYNAMIC", "rows dynamic", lambda s, grid: ends(s), out)


def rows_case(times: int):
    """probe_trials.forward_case at times the sweep's rows (2^27 elements)."""
    def case(n: int, dtype: str):
        m = times * ELEMENTS // n
        x = (torch.randn(m, n, device="cuda") * 2).to(getattr(torch, dtype))
        return (m, (x,), 2 * x.numel() * x.element_size(), *softmax_reference(x))
    return case


def without_rows_dynamic(fn):
    """fn with gluon_softmax.tma_stream_forward's rows_dynamic forced off."""
    launcher = gs.tma_stream_forward
    return with_attribute(fn, gs, "tma_stream_forward", lambda *a, **kw: launcher(*a, **{**kw, "rows_dynamic": False}))


def shrunk(fn):
    """fn with each tma-stream forward launch cut to a grid of whole groups of a row's programs, taking rows from the
    counter (its mailbox and row cap made here, as _launch_shape makes them for grids of whole groups). With a stamps
    patch applied (round 186's or 190's), the kernel's arguments after the slots are one further on."""
    launcher = gs.tma_stream_forward
    shift = 1 if hasattr(gs, "STAMPS") else 0

    def counted(y, x, *a, **kw):
        def launch(kernel, grid, *kargs, **kkw):
            kargs = list(kargs)
            n_rows, n_segments = kargs[5 + shift], kargs[7 + shift]
            groups = min(grid[0] // n_segments, n_rows)
            if kernel is gs._tma_stream_fwd_kernel and groups < n_rows and not kkw.get("ROWS_DYNAMIC"):
                cap = gs._rows_cap(n_rows, groups)
                kargs[4] = torch.zeros(n_rows * n_segments + 1 + groups * cap, dtype=torch.int64, device=x.device)
                if shift and gs.STAMPS is None:
                    kargs[5] = kargs[4]
                kargs[10 + shift], kkw["ROWS_DYNAMIC"], grid = cap, True, (groups * n_segments,)
            if sm._launch_log is not None:  # probe_tma_timeline.stamped_call reads the grid from the log
                sm._launch_log.append((kernel, None, kkw, grid))
            kernel[grid](*kargs, **kkw)
        return launcher(y, x, *a, **{**kw, "launch": launch})
    return with_attribute(fn, gs, "tma_stream_forward", counted)


def shrink_timeline(out: list, cases=((100000, "bfloat16"), (100001, "float16"))) -> None:
    """Round 190: one stamped call (after two) of the table's launch and of its cut grid with the counter, at the
    sweep's rows of each case, both outputs checked first; the programs' ends by launch wave (ends)."""
    from probe_tma_timeline import stamped_call
    for n, dtype in cases:
        x = (torch.randn(ELEMENTS // n, n, device="cuda") * 2).to(getattr(torch, dtype))
        ref, scale = softmax_reference(x)
        for name, forward in (("table", None), ("cut grid, counter", shrunk(sm.softmax_forward))):
            call = stamped_call if forward is None else with_attribute(stamped_call, sm, "softmax_forward", forward)
            for _ in range(3):
                y, s, grid = call(x)
            assert check(y, ref, dtype, scale)["passed"], (name, n, dtype)
            line = {"probe": f"timeline {name}", "cols": n, "dtype": dtype, "rows": x.shape[0], **ends(s),
                    "stamps_ns": [[int(v) - int(s[:, 0].min()) for v in r[:4]] + [int(r[4])] for r in s.tolist()]}
            print({k: v for k, v in line.items() if k != "stamps_ns"}, flush=True)
            out.append(line)
        del x, ref, scale, y
        torch.cuda.empty_cache()


def shrink(out: list) -> None:
    """Round 187: the table against its own launches cut to whole groups with the counter, at the sweep's rows and
    at four times them."""
    shapes = [(100000, "bfloat16"), (100001, "float16"), (262144, "bfloat16"), (524288, "float16"),
              (1048576, "bfloat16"), (777777, "bfloat16")]
    ab_trials("the table's launches cut to whole groups, with the counter", shrunk(sm.softmax_forward), shapes,
              out, trials=3)
    ab_trials("the same at 4 x the rows", shrunk(sm.softmax_forward), shapes[:3], out, trials=3, case=rows_case(4))


def table(out: list) -> None:
    """Round 184: the table against the table with rows_dynamic off."""
    shapes = [(65536, "bfloat16"), (131072, "float16"), (65536, "float32"), (131072, "float32"),
              (1048576, "bfloat16")]
    ab_trials("table, against the table without rows_dynamic", sm.softmax_forward, shapes, out, trials=3,
              baseline=without_rows_dynamic(sm.softmax_forward))


# Modes on the product's kernel, or on a stamps patch: (probe, results file, (knob, patch) it needs or None).
MODES = {"shrink_timeline": (shrink_timeline, "probe_rows_dynamic_shrink_timeline.json",
                             ("STAMPS", "2026-11-27-round-190-timeline.patch")),
         "shrink": (shrink, "probe_rows_dynamic_shrink.json", None),
         "table": (table, "probe_rows_dynamic_table.json", None)}


if __name__ == "__main__":
    if sys.argv[1:2] and sys.argv[1] in MODES:
        probe, file_name, patch = MODES[sys.argv[1]]
        if patch:
            require_patch(*patch)
        warm_up_gpu()
        print(torch.cuda.get_device_name(), flush=True)
        results: list = []
        probe(results)
        save_results(file_name, results)
        sys.exit(0)
    require_patch("ROWS_DYNAMIC", "2026-11-27-round-182-rows-dynamic.patch")
    warm_up_gpu()
    print(torch.cuda.get_device_name(), flush=True)
    results: list = []
    if sys.argv[1:] == ["rows"]:
        for times in (2, 4):
            ab_trials(f"rows dynamic, {times} x the rows", with_attribute(sm.softmax_forward, gs, "ROWS_DYNAMIC", True),
                      [(65536, "bfloat16"), (131072, "bfloat16"), (262144, "float16"), (131072, "float32")], results,
                      trials=3, case=rows_case(times))
            save_results("probe_rows_dynamic_rows.json", results)
        sys.exit(0)
    timeline(results)
    save_results("probe_rows_dynamic.json", results)
    ab_trials("rows dynamic", with_attribute(sm.softmax_forward, gs, "ROWS_DYNAMIC", True), FORWARD, results,
              trials=3)
    save_results("probe_rows_dynamic.json", results)
