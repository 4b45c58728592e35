"""Probe: where a tile-stream item's time goes: first pass, wait for the row's other segments, second pass
(notes/kernels.md, round 32: a measurement, no change proposed yet).

Exploration, not evidence. A copy of kernels/triton_softmax.py whose tile-stream forward stamps each (row,
segment) item three times, with the SM's %clock64 and the GPU's %globaltimer: when its first pass starts,
when that pass's (max, sum) is ready (just before it is published) and when its row's statistics are known
(the wait over). Each stamp's inline PTX takes a value of the step before it as input, so it cannot be
issued earlier. The second pass runs from the third stamp to the program's next first stamp. The stamps go
to a tail of the slots tensor; the copy's output is checked against float64 like any variant, and the
product's own time is printed beside the stamped one (the stamps add 6 stores an item).

Per case it reports medians and 90th percentiles of: first pass, wait, second pass (us); the spread of a
row's publish times (last - first); the wait's two parts, the last sibling's publish after one's own (skew)
and the time from the last publish to the wait's end (latency).

    python scripts/probe_timeline.py   # on a CUDA machine; $OUT/probe_timeline.json
"""
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from kernels import triton_softmax as sm  # noqa: E402
from kernellab.measure import check, softmax_reference  # noqa: E402
from probe_ab import rewritten  # noqa: E402
from probe_long_rows import ELEMENTS, save_results, timed, warm_up_gpu  # noqa: E402

STAMP = '''@triton.jit
def _stamp(times_ptr, slot, after):
    """Probe: %clock64 and %globaltimer at times_ptr[2 slot], [2 slot + 1], issued after `after` is known."""
    clock = tl.inline_asm_elementwise("mov.u64 $0, %clock64;", "=l,r", [after], dtype=tl.int64, is_pure=False,
                                      pack=1)
    now = tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l,r", [after], dtype=tl.int64, is_pure=False,
                                    pack=1)
    tl.store(times_ptr + 2 * slot, clock)
    tl.store(times_ptr + 2 * slot + 1, now)


'''
KERNEL = "@triton.jit\ndef _tile_stream_fwd_kernel("
LOOP = ("    output_row_stride = output_row_stride // ALIGN * ALIGN\n"
        "    for item in range(tl.program_id(0), n_rows * n_segments, tl.num_programs(0)):\n")
PUBLISH = "            tl.atomic_xchg(slots_ptr + item, _pack(segment_max, segment_sum), sem=\"relaxed\")\n"
COMBINED = "            row_max, inv_row_sum = _combine_partials(packed, in_row, LOG2)\n"
ALLOC = ("    slots = torch.zeros(n_rows * n_segments if n_segments > 1 else 1, dtype=torch.int64, device=x.device)\n"
         "    args = (y, x, slots,")
EDITS = [
    (KERNEL, STAMP + KERNEL),
    (LOOP, LOOP + "        times = slots_ptr + n_rows * n_segments + 6 * item\n"
                  "        _stamp(times, 0, item)\n"),
    (PUBLISH, "            _stamp(times, 1, segment_sum.to(tl.int32, bitcast=True))\n" + PUBLISH),
    (COMBINED, COMBINED + "            _stamp(times, 2, inv_row_sum.to(tl.int32, bitcast=True))\n"),
    (ALLOC, "    global last_slots, last_n_programs\n"
            "    slots = torch.zeros(7 * n_rows * n_segments, dtype=torch.int64, device=x.device)\n"
            "    last_slots = slots\n"
            "    args = (y, x, slots,"),
    ("    _launch(kernel, (n_programs,), *args, **kwargs)\n",
     "    last_n_programs = n_programs\n    _launch(kernel, (n_programs,), *args, **kwargs)\n"),
]
CASES = [(1024, 131072), (512, 262144), (128, 1048576)]  # fp16 131,072 runs on the tile kernel: no stamps


def quantiles(t: torch.Tensor) -> dict:
    """Median and 90th percentile of t, in microseconds (t in nanoseconds)."""
    q = torch.quantile(t.double(), torch.tensor([0.5, 0.9], dtype=torch.float64, device=t.device)) / 1e3
    return {"median_us": round(q[0].item(), 3), "p90_us": round(q[1].item(), 3)}


def timeline(stamped, n_rows: int) -> dict:
    """The per-item phases of the stamped copy's last launch."""
    slots = stamped.last_slots
    n_items = slots.numel() // 7
    n_segments = n_items // n_rows
    stamps = slots[n_items:].view(n_items, 3, 2)
    clock, now = stamps[:, :, 0], stamps[:, :, 1]
    programs = stamped.last_n_programs
    first = now[:, 1] - now[:, 0]
    wait = now[:, 2] - now[:, 1]
    # second pass: from the wait's end to the same program's next item's start
    nxt = torch.arange(n_items, device=slots.device) + programs
    has_next = nxt < n_items
    second = now[nxt[has_next], 0] - now[has_next, 2]
    published = now[:, 1].view(n_rows, n_segments)
    last_publish = published.max(dim=1, keepdim=True).values.expand(-1, n_segments).reshape(-1)
    ns_per_cycle = ((now[:, 2] - now[:, 0]).double().sum() / (clock[:, 2] - clock[:, 0]).double().sum()).item()
    return {"n_segments": n_segments, "programs": programs, "ns_per_cycle": round(ns_per_cycle, 4),
            "first_pass": quantiles(first), "first_pass_by_clock": quantiles((clock[:, 1] - clock[:, 0]) * ns_per_cycle),
            "wait": quantiles(wait), "second_pass": quantiles(second),
            "row_publish_spread": quantiles(published.max(dim=1).values - published.min(dim=1).values),
            "skew": quantiles(last_publish - now[:, 1]), "latency": quantiles(now[:, 2] - last_publish),
            "globaltimer_distinct_ns": sorted({int(v) % 1000 for v in now[:64, 0].tolist()})[:8]}


def main() -> None:
    """Phases per case and dtype, beside the product's and the stamped copy's times."""
    warm_up_gpu()
    stamped = rewritten("triton_softmax_timeline", EDITS)
    out = []
    for rows, cols in CASES:
        for dtype in (torch.float32, torch.float16):
            x = (torch.randn(ELEMENTS // cols, cols, device="cuda") * 2).to(dtype)
            ref, scale = softmax_reference(x)
            passed = check(stamped.softmax_forward(x), ref, str(dtype).split(".")[-1], scale)["passed"]
            moved = 2 * x.numel() * x.element_size()
            line = {"rows": x.shape[0], "cols": cols, "dtype": str(dtype), "passed": passed,
                    "product_gbs": round(moved / timed(sm.softmax_forward, x)["ms"] / 1e6),
                    "stamped_gbs": round(moved / timed(stamped.softmax_forward, x)["ms"] / 1e6)}
            stamped.last_slots = None  # set again only if this case runs on tile-stream
            stamped.softmax_forward(x)
            torch.cuda.synchronize()
            if stamped.last_slots is not None and stamped.last_slots.numel() > 1:
                line.update(timeline(stamped, x.shape[0]))
            out.append(line)
            print(json.dumps(line), flush=True)
            torch.cuda.empty_cache()
    save_results("probe_timeline.json", out)


if __name__ == "__main__":
    main()
