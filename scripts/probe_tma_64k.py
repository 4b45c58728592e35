"""Probe (round 112): 2-byte rows of 65,536 columns on tma-stream against the table's "tile" kernel.

Exploration, not evidence. The H100 runs fp16 and bf16 2048 x 65,536 at 89.3-90.6% of copy on the tile kernel (two
passes, the second from L1/L2). tma-stream holds such a row (128 KB, 8 tiles, one segment, no exchange) in shared
memory from one HBM read, and loads the next row while it writes this one. Rounds 102 and 105 found 2-byte rows of
131,072 columns and more bound by their exp work on it, on the H200; 65,536 on the H100 was never timed. Both the
tile loop and the unrolled tiles, three fresh inputs each, alternating order, outputs checked (probe_trials.ab_trials;
a ratio over 1: tma-stream is faster).

    python scripts/probe_tma_64k.py       # on a Hopper GPU; writes $OUT/probe_tma_64k.json
"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_long_rows import save_results, warm_up_gpu  # noqa: E402
from probe_trials import ab_trials  # noqa: E402
from kernels import gluon_softmax as gs  # noqa: E402


def tma_forward(tile_loop: bool):
    """tma-stream's forward at the table's usual launch (8 warps of 4 vectors, 224 KB of slots)."""
    def forward(x: torch.Tensor) -> torch.Tensor:
        y = torch.empty_like(x)
        gs.tma_stream_forward(y, x, 4, 8, gs.SEGMENT_BYTES, 1 << 20, tile_loop)
        return y
    return forward


if __name__ == "__main__":
    warm_up_gpu()
    print(torch.cuda.get_device_name(), flush=True)
    results = []
    for tile_loop in (True, False):
        ab_trials(f"tma-stream ({'tile loop' if tile_loop else 'unrolled'}) against the table",
                  tma_forward(tile_loop), [(65536, "float16"), (65536, "bfloat16")], results, trials=3)
    save_results("probe_tma_64k.json", results)
