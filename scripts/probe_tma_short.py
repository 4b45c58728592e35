"""Probe (round 136): tma-stream on short fp32 rows (1,024-8,192), one segment a row, against torch.compile.

Exploration, not evidence. On the H100, torch.compile's kernel stays 0.3-0.5% ahead of the dispatcher's rows kernel at
fp32 2,048 and 4,096 (both at 99.6-100.3% of copy; rounds 77-88 found no form of the rows kernel that passes it).
The rows kernel holds each row in registers and has nothing in flight while it reduces and writes; tma-stream holds a
program's row in shared memory and asks for the next row's tiles as this row's are written, with many programs an SM.
Here every row is one segment (no exchange between programs). Baseline: torch.compile, compiled for each N (ratio > 1:
the variant is faster); the dispatcher is timed against it too, in the same process. Three fresh inputs a shape,
every output checked against float64 first (probe_trials.ab_trials).

    python scripts/probe_tma_short.py    # on a Hopper GPU; $OUT/probe_tma_short.json
"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_long_rows import save_results, sm, warm_up_gpu  # noqa: E402
from probe_tma_ctas import capped_forward as launch  # noqa: E402  (programs, slots, vectors, warps, part_rows)
from probe_trials import ab_trials  # noqa: E402

# N -> (label, programs an SM, slots, vectors a thread, warps): a tile is vectors x warps x 32 x 16 bytes, and slots x
# tile bytes hold one whole row; programs x slots x tile within the SM's shared memory, programs x warps within 64
LAUNCHES = {
    1024: [("4 KB tiles, 1 slot, 8 programs", 8, 1, 2, 4), ("4 KB tiles, 1 slot, 16 programs", 16, 1, 2, 4)],
    2048: [("8 KB tiles, 1 slot, 8 programs", 8, 1, 4, 4), ("8 KB tiles, 1 slot, 12 programs", 12, 1, 4, 4),
           ("8 KB tiles, 1 slot, 16 programs", 16, 1, 4, 4), ("4 KB tiles, 2 slots, 8 programs", 8, 2, 2, 4),
           ("8 KB tiles on 8 warps, 1 slot, 8 programs", 8, 1, 2, 8)],
    4096: [("8 KB tiles, 2 slots, 6 programs", 6, 2, 4, 4), ("8 KB tiles, 2 slots, 8 programs", 8, 2, 4, 4),
           ("8 KB tiles, 2 slots, 12 programs", 12, 2, 4, 4), ("16 KB tiles, 1 slot, 6 programs", 6, 1, 4, 8),
           ("16 KB tiles, 1 slot, 8 programs", 8, 1, 4, 8)],
    8192: [("8 KB tiles, 4 slots, 4 programs", 4, 4, 4, 4), ("8 KB tiles, 4 slots, 6 programs", 6, 4, 4, 4),
           ("16 KB tiles, 2 slots, 4 programs", 4, 2, 4, 8), ("16 KB tiles, 2 slots, 6 programs", 6, 2, 4, 8)],
}


def main() -> None:
    """Each N: torch.compile against the dispatcher, then against each tma-stream launch."""
    warm_up_gpu()
    results = []
    for n, launches in LAUNCHES.items():
        torch._dynamo.reset()
        compiled = torch.compile(lambda t: torch.softmax(t, -1))
        ab_trials("dispatcher vs torch.compile", sm.softmax_forward, [(n, "float32")], results, baseline=compiled,
                  trials=3)
        for label, k, slots, vectors, warps in launches:
            ab_trials(f"tma-stream {label} vs torch.compile", launch(k, slots, vectors, warps), [(n, "float32")],
                      results, baseline=compiled, trials=3)
    save_results("probe_tma_short.json", results)


if __name__ == "__main__":
    main()
