"""Probe (round 132, prepared): does the persistent grid's last round hold the 2-byte rows back?

Exploration, not evidence. On 6 programs an SM of 4 slots of 8 KB, every 2-byte row of whole view rows in the sweep
(2^27 elements) is cut into 8,192 segments of 16,384 columns, which 6 x 132 = 792 programs take in 10.34 rounds: in
the last round a third of the programs work. fp32 rows make 16,384 segments, 20.7 rounds. If each program runs at a
fixed speed (latency-bound), the tail costs 2-byte rows 1 - 10.34 / 11 = 6% and fp32 1.5%, about the gap between
them on the H200. This measures the sweep's own path (`kernellab.measure.measure_item`: every element checked
against float64, then CUDA-graph replays with L2 flushed) at row counts whose segments fill whole rounds and at
ones that leave a part round, and reports each one's share of the copy ceiling measured at the start of the call.

    python scripts/probe_grid_tail.py   # on a CUDA GPU; $OUT/probe_grid_tail.json

Round 176 ran it on an H200, with 20 rounds and twice the sweep's rows added for the 2-byte rows; round 178 the
same for fp32 rows (`python scripts/probe_grid_tail.py float32`).
"""
import json
import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from kernellab import measure  # noqa: E402

PROGRAMS_PER_SM = 6  # the table's launch at these rows on both GPUs (6 of 4 of 8 KB)
SEGMENT_BYTES = 32768
# rounds of the grid to fill, by element size (None: the sweep's own rows, 2^27 elements)
# ("double": twice the sweep's rows, 2^28 elements; round 176)
ROUNDS = {2: (10.0, None, 10.5, 11.0, 20.0, "double"), 4: (20.0, None, 20.5, 21.0, 40.0, "double")}


def rows_for(rounds, cols: int, elem_bytes: int, programs: int) -> int:
    """Rows whose segments fill rounds rounds of the grid (the sweep's rows where rounds is None)."""
    if rounds is None or rounds == "double":
        return (1 << (28 if rounds == "double" else 27)) // cols
    segments_a_row = cols * elem_bytes // SEGMENT_BYTES
    return round(rounds * programs / segments_a_row)


if __name__ == "__main__":
    measure.warm_up_gpu()
    copy = measure.ceiling(1)["gbs"]
    torch.cuda.empty_cache()
    programs = PROGRAMS_PER_SM * torch.cuda.get_device_properties(0).multi_processor_count
    print(torch.cuda.get_device_name(), f"copy {copy:.0f} GB/s, {programs} programs", flush=True)
    lines = []
    only = sys.argv[1:]  # dtypes to run (all where none given)
    for cols, dtype in ((131072, "bfloat16"), (65536, "float16"), (131072, "float32"), (262144, "float32")):
        if only and dtype not in only:
            continue
        elem_bytes = torch.empty(0, dtype=getattr(torch, dtype)).element_size()
        for rounds in ROUNDS[elem_bytes]:
            rows = rows_for(rounds, cols, elem_bytes, programs)
            items = rows * (cols * elem_bytes // SEGMENT_BYTES)
            item = measure.WorkItem("softmax-bandwidth-sweep", f"n{cols}", rows, cols, "triton-fused-row-softmax",
                                    dtype, "forward")
            result = measure.measure_item(item, measure.SEED, copy)
            assert result["status"] == "ok", result["error"] or result["correctness"]
            line = {"shape": [rows, cols], "dtype": dtype, "items": items, "rounds": items / programs,
                    "copy_gbs": copy, "share": result["copy_share"]}
            print(f"{rows}x{cols} {dtype}: {items} segments, {items / programs:.2f} rounds, "
                  f"{100 * result['copy_share']:.2f}% of copy", flush=True)
            lines.append(line)
            torch.cuda.empty_cache()
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], "probe_grid_tail.json").write_text(json.dumps(
            {"device": torch.cuda.get_device_name(), "results": lines}, indent=1))
