"""Probe (round 185): launches whose grid is whole groups of a row's programs, with rows taken from a counter, for
the H200's 2-byte rows that the table's counter does not reach.

Exploration, not evidence. Since round 184 the table's counter (rows_dynamic) applies only where the grid (programs
an SM x SMs) is whole groups of a row's segments: 2-byte 65,536 and 131,072 and fp32 65,536 on 6 programs an SM. The
H200's other short 2-byte rows are cut into 5 (100,000-100,001 on 4 programs of 6 slots), 16 (262,144), 32 (524,288)
or 64 (1M) segments, which 792 or 528 programs do not divide. Other launches of the same kernel do divide: 6 programs
of 4 slots cut 100,000-100,001 into 9 segments (792 = 88 x 9); 4 programs of 6 slots cut 262,144 into 11 and 524,288
into 22 (528 = 48 x 11 = 24 x 22); 6 programs of 3 slots cut 262,144 into 22 (792 = 36 x 22). This times the table
against each such launch with the counter, on fresh inputs, every output checked against float64 first, and records
each launch's segments and whether it took the counter.

    python scripts/probe_whole_groups.py       # on a Hopper GPU; $OUT/probe_whole_groups.json
"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_long_rows import save_results, sm, warm_up_gpu  # noqa: E402
from probe_trials import ab_trials  # noqa: E402
from kernels import gluon_softmax as gs  # noqa: E402

# (columns, dtype, [(programs an SM, segment bytes), ...]) on 4 warps of 4 vectors (8 KB tiles), tile loop
CASES = [(100000, "bfloat16", [(6, 32768)]), (100001, "float16", [(6, 32768)]),
         (262144, "bfloat16", [(4, 49152), (6, 24576)]), (524288, "float16", [(4, 49152)]),
         (131072, "float32", [(4, 49152), (6, 24576)])]


def launch(programs: int, segment_bytes: int, seen: dict):
    """The forward on this tma-stream launch with rows from the counter, recording what the kernel was given."""
    def record(kernel, grid, *args, **kwargs):
        seen.update(grid=grid[0], segments=args[7], rows_dynamic=kwargs["ROWS_DYNAMIC"])
        kernel[grid](*args, **kwargs)

    def run(x):
        y = torch.empty_like(x)
        gs.tma_stream_forward(y, x, 4, 4, segment_bytes, sm._max_polls(), True, launch=record,
                              programs_per_sm=programs, rows_dynamic=True)
        return y
    return run


if __name__ == "__main__":
    warm_up_gpu()
    print(torch.cuda.get_device_name(), flush=True)
    results: list = []
    for n, dtype, configs in CASES:
        for programs, segment_bytes in configs:
            seen: dict = {}
            ab_trials(f"{programs} programs of {segment_bytes // 1024} KB, rows from the counter",
                      launch(programs, segment_bytes, seen), [(n, dtype)], results, trials=3)
            results[-1]["launch"] = dict(seen)
            print("   ", seen, flush=True)
            save_results("probe_whole_groups.json", results)
