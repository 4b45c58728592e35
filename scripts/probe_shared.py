"""Probe: do long rows gain when a row's first pass is shared out on demand? (notes/kernels.md, round 29:
prediction written before the probe)

Round 27: without the exchange the long rows stream up to 38% faster; round 28: a later wait costs L2 what it
saves. `_tile_shared_fwd_kernel` attacks the wait itself: a row's programs take its chunks from a counter
until none is left, so they finish the first pass within a chunk of one another, then publish, wait for the
row's done count and write a fixed share. Chunks of 1, 2 and 4 tiles (32 KB each at 2 vectors x 32 warps)
are tried beside the dispatcher's tile-stream.

Exploration for tuning SOFTMAX_PLANS, not evidence: every variant is checked against float64 on every
element, then timed as build.py --run times (CUDA-graph replays, L2 flushed), beside a copy of the same bytes.

    python scripts/probe_shared.py [forward]   # on a CUDA machine; $OUT/probe_shared.json

The product never kept tile-shared (round 29 missed): run this probe on commit 2d9a519, whose kernels have it.
"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from kernels import triton_softmax as sm  # noqa: E402
from probe_long_rows import forward_configs_probe, run_probes  # noqa: E402

NS = [131072, 262144, 524288, 1048576]
DTYPES = ["float32", "float16", "bfloat16"]
CHUNK_TILES = [1, 2, 4]


def shared_forward(segment_bytes: int, chunk_tiles: int):
    """The tile-stream plan's tiles (2 vectors x 32 warps, 1 program per SM) shared out in chunks."""
    def run(x):
        y = torch.empty_like(x)
        align = sm._vector_align(x.element_size(), x.shape[1], x.stride(0), y.stride(0))
        sm._forward_tile_shared(y, x, 2, 32, 1, segment_bytes, chunk_tiles, align, log2=sm._log2_exp(x))
        return y
    return run


def forward_probe(out: list) -> None:
    """Dispatcher and tile-shared per chunk size, per long N and dtype."""
    variants = [(f"shared 256 KB, chunk {c}", shared_forward(262144, c)) for c in CHUNK_TILES]
    variants += [("shared 512 KB, chunk 2", shared_forward(524288, 2))]
    forward_configs_probe("shared-forward", NS, variants, out, DTYPES)


if __name__ == "__main__":
    run_probes({"forward": forward_probe}, sys.argv[1:] or ["forward"], "probe_shared.json")
