"""Probe (round 168): the tma-stream backward finishing each item one step late, both items in shared memory.

Exploration, not evidence. Round 167 measured what the exchange costs the H200's one-program fp32 backward at 1M:
10.5% (92.5% of the ceiling without it, 83% with it). While a program waits for its row's other segments its shared
memory is full and nothing of its SM's share of HBM moves. Here a program holds two items at once, each in its own
group of SLOTS slot pairs (half the shared memory each): it runs the next item's pass 1 (its tiles loaded during the
last item's pass 2) and publishes it before it waits for this item's siblings, so that one pass 1 stands between
publishing an item and needing its row's total. Round 28 tried the lag on tile-stream, whose lagged segment had left
L2 by its second pass; here it stays in shared memory. The price: half the bytes an item, so twice the segments a row
(fp32 1M: 74 or 86 segments against the table's 29). Against the table (triton_softmax.softmax_backward), three fresh
inputs a shape, every output checked against float64 first.

    python scripts/probe_tma_lag.py           # on a Hopper GPU; $OUT/probe_tma_lag.json

The probe's kernel became gluon_softmax._tma_lag_bwd_kernel in b909673 (round 169); the probe now launches that one,
with each variant's slots, vectors and warps (its registers and spills: scripts/compile_tma.py backward --lag).
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from kernels import gluon_softmax as gs  # noqa: E402

MAX_POLLS = 1 << 22
# (slots a group, vectors a thread, warps): 16 KB tiles on 8 warps, 3 a group (6 of the 7 pairs the table holds);
# 8 KB tiles on 8 and on 4 warps, 7 a group (all 14 pairs)
VARIANTS = [(3, 4, 8), (7, 2, 8), (7, 4, 4)]
SHAPES = [(1048576, "float32"), (786432, "float32"), (524288, "float32"), (2097152, "float32"),
          (131072, "float32"), (1048576, "float16")]


def lag_backward(slots: int, vectors: int, warps: int):
    """The lagged backward on one program an SM: two items of slots tile pairs each (tiles of warps x 32 x vectors
    16-byte vectors)."""
    import torch

    def run(y: torch.Tensor, dy: torch.Tensor) -> torch.Tensor:
        dx = torch.empty_like(y)
        tile_bytes = warps * 32 * vectors * 16
        gs.tma_stream_backward(dx, y, dy, vectors, warps, 4 * slots * tile_bytes, MAX_POLLS, lag=True)
        return dx
    return run


if __name__ == "__main__":
    import torch
    from probe_long_rows import save_results, sm, warm_up_gpu
    from probe_trials import ab_trials, backward_case
    warm_up_gpu()
    print(torch.cuda.get_device_name(), flush=True)
    results: list = []
    for variant in VARIANTS:
        label = "backward lagged, 2 x %d slots, %d vectors x %d warps" % variant
        ab_trials(label, lag_backward(*variant), SHAPES, results, baseline=sm.softmax_backward, trials=3,
                  case=backward_case)
    save_results("probe_tma_lag.json", results)
