"""Probe (round 122): launches for the H100's last forward shapes under or on the 90% bar.

Exploration, not evidence. After round 120 the H100 leaves bf16 2048 x 65,536 at 89.3-89.6% of copy (the tile kernel:
2 vectors a thread, 32 warps, one program an SM, unrolled 4x, edge tiles apart) and 173 x 777,777 on the line (bf16
89.8-90.0%, 2 x 7 of 16 KB tiles on 8 warps; fp32 89.9-91.1%, one program of 14 slots, unrolled). fp16 runs the same
kernels 0.5-1 point higher. This times, against the dispatcher:
  - at 2-byte 65,536, the tile kernel's launch knobs one at a time: two programs of 16 warps, 4 vectors on 16 warps,
    unrolled 2x, edge tiles not apart; and tma-stream 2 x 7 of 16 KB tiles on 16 warps of 2 vectors;
  - at 2-byte 777,777, the table's 2 x 7 on 16 warps of 2 vectors (the same 16 KB tile: round 118 found 8 warps beat
    4 on the H100 for 8 KB tiles) and the table's 2 x 7 unrolled;
  - at fp32 777,777, the table's one program of 14 slots on 16 warps of 2 vectors, and 2 x 7 of the same.
Three fresh inputs a shape, alternating order, every output checked against float64 first (probe_trials.ab_trials; a
ratio over 1: the variant is faster).

    python scripts/probe_h100_last.py   # on a Hopper GPU; $OUT/probe_h100_last.json
"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_long_rows import save_results, sm, warm_up_gpu  # noqa: E402
from probe_tma_ctas import capped_forward  # noqa: E402
from probe_trials import ab_trials  # noqa: E402


def tile(vectors_per_thread: int, num_warps: int, programs_per_sm: int, unroll: int, edges_apart: bool):
    """The product's tile kernel under one launch (log2 exps for 2-byte rows, as the dispatcher takes them)."""
    def run(x: torch.Tensor) -> torch.Tensor:
        y = torch.empty_like(x)
        sm._forward_tile_online(y, x, vectors_per_thread, num_warps, programs_per_sm, sm._forward_align(y, x),
                                unroll, sm._log2_exp(x), vector_edges=False, edges_apart=edges_apart)
        return y
    return run


SIXTY_FOUR_K = [(65536, "bfloat16"), (65536, "float16")]
LONG_TWO_BYTE = [(777777, "bfloat16"), (777777, "float16")]
LONG_FP32 = [(777777, "float32")]

if __name__ == "__main__":
    warm_up_gpu()
    print(torch.cuda.get_device_name(), flush=True)
    results = []
    ab_trials("tile 2 x 16 warps, 2 programs, unroll 4, edges apart", tile(2, 16, 2, 4, True), SIXTY_FOUR_K, results,
              trials=3)
    ab_trials("tile 4 x 16 warps, 1 program, unroll 2, edges apart", tile(4, 16, 1, 2, True), SIXTY_FOUR_K, results,
              trials=3)
    ab_trials("tile 2 x 32 warps, 1 program, unroll 2, edges apart", tile(2, 32, 1, 2, True), SIXTY_FOUR_K, results,
              trials=3)
    ab_trials("tile 2 x 32 warps, 1 program, unroll 4, edges inside", tile(2, 32, 1, 4, False), SIXTY_FOUR_K,
              results, trials=3)
    ab_trials("tma 2 x 7 of 16 KB, 16 warps of 2 vectors", capped_forward(2, 7, 2, 16), SIXTY_FOUR_K + LONG_TWO_BYTE,
              results, trials=3)
    ab_trials("tma 2 x 7 of 16 KB, 8 warps of 4 vectors, unrolled", capped_forward(2, 7, tile_loop=False),
              LONG_TWO_BYTE, results, trials=3)
    ab_trials("tma 1 x 14 of 16 KB, 16 warps of 2 vectors, unrolled", capped_forward(1, 14, 2, 16, tile_loop=False),
              LONG_FP32, results, trials=3)
    ab_trials("tma 2 x 7 of 16 KB, 16 warps of 2 vectors (fp32)", capped_forward(2, 7, 2, 16), LONG_FP32, results,
              trials=3)
    save_results("probe_h100_last.json", results)
