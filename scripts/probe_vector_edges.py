"""Probe: tile-stream's edge tiles in whole 16-byte vectors (TILE_STREAM_VECTOR_EDGES), and tile-stream instead of
the tile kernel for rows that are not whole vectors (notes/kernels.md, round 41: prediction written before the probe).

Exploration for tuning SOFTMAX_PLANS, not evidence: every variant is checked against float64 on every element,
then timed as build.py --run times (CUDA-graph replays, L2 flushed), beside a copy of the same bytes.

    python scripts/probe_vector_edges.py [stream] [tile] [edge] [segments] [knobs] [tile-edges] [edges-apart]
    # on a CUDA machine; $OUT/probe_vector_edges.json

"stream" and "tile" ran on commit 234aab7's kernels (vector edges off by default then); "edge" ran on 57463bf, whose
kernels have TILE_STREAM_EDGE_PREFETCH (round 42, not adopted: it runs only there).
"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from probe_long_rows import forward_configs_probe, run_probes, with_module  # noqa: E402
from kernels import triton_softmax as sm  # noqa: E402

DTYPES = ["float16", "bfloat16", "float32"]
STREAM_NS = [777777, 262147]       # odd N on tile-stream
TILE_NS = [40001, 65535, 100001, 131071]  # odd N that the table gives the tile kernel (2-byte to 131,072)


def tile_stream(vector_edges=None, segment_bytes=262144, vectors=2, unroll=1, prefetch=True):
    """tile-stream as the table's long rows run it (2 vectors a thread, 32 warps, 256 KB segments, one tile of L2
    prefetch), with the edges, segment size, vectors, unroll or prefetch asked for instead."""
    def run(x):
        y = torch.empty_like(x)
        sm._forward_tile_stream(y, x, vectors, 32, 1, segment_bytes, sm._forward_align(y, x), unroll, sm._log2_exp(x),
                                one_warp_from=2 if x.element_size() == 2 else 0, vector_edges=vector_edges)
        return y
    return run if prefetch else with_module(run, TILE_STREAM_PREFETCH=0)


VARIANTS = [("tile-stream, vector edges", tile_stream(True)), ("tile-stream, element edges", tile_stream(False))]


def stream_probe(out: list) -> None:
    """Copy, dispatcher (tile-stream, element edges) and tile-stream with vector edges, at odd N."""
    forward_configs_probe("vector-edges-stream", STREAM_NS, VARIANTS[:1], out, DTYPES)


def tile_probe(out: list) -> None:
    """Copy, dispatcher (the tile kernel, for 2-byte rows to 131,072 and all rows to 65,536) and tile-stream."""
    forward_configs_probe("vector-edges-tile", TILE_NS, VARIANTS, out, DTYPES)


def edge_probe(out: list) -> None:
    """Copy, dispatcher and the dispatcher with its odd rows' edge tiles prefetched (round 42)."""
    forward_configs_probe("edge-prefetch", [100001, 131071, 777777, 65535], [
        ("edge prefetch", with_module(sm.softmax_forward, TILE_STREAM_EDGE_PREFETCH=True)),
        ("dispatcher's launch", with_module(sm.softmax_forward, TILE_STREAM_EDGE_PREFETCH=False))], out, DTYPES)


def knobs_probe(out: list) -> None:
    """Round 45, continued: which of tile-stream's differences from the tile kernel makes a one-segment row slow."""
    variants = [("tile-stream as the table", tile_stream()), ("unroll 2", tile_stream(unroll=2)),
                ("no L2 prefetch", tile_stream(prefetch=False)),
                ("unroll 2, no L2 prefetch", tile_stream(unroll=2, prefetch=False)),
                ("1 vector a thread", tile_stream(vectors=1))]
    forward_configs_probe("one-segment", [100000, 100001], variants, out, ["float16", "bfloat16"])


def segments_probe(out: list) -> None:
    """Round 45: odd 2-byte rows of ~100k columns are one 256 KB segment, no exchange and no next-item prefetch;
    smaller segments split them (the aligned 100,000 beside, on the tile kernel and on tile-stream)."""
    variants = [(f"tile-stream, {b // 1024} KB segments", tile_stream(segment_bytes=b))
                for b in (262144, 131072, 98304, 65536)]
    forward_configs_probe("odd-segments", [100001, 100000, 131071, 65537], variants, out, ["float16", "bfloat16"])
    forward_configs_probe("odd-segments", [100001], variants, out, ["float32"])


def tile_kernel(vectors=2, unroll=2, vector_edges=True, edges_apart=False):
    """The tile kernel (32 warps, one program an SM) with rows that are not whole vectors read in whole vectors, and
    with edges_apart its edge tiles after unmasked inner ones."""
    def run(x):
        y = torch.empty_like(x)
        sm._forward_tile_online(y, x, vectors, 32, 1, sm._forward_align(y, x), unroll, sm._log2_exp(x),
                                vector_edges=vector_edges, edges_apart=edges_apart)
        return y
    return run


def edges_apart_probe(out: list) -> None:
    """Round 50: the tile kernel's inner tiles unmasked, its edge tiles after them (EDGES_APART), odd and aligned
    rows, with 1 vector a thread unrolled 4x for the aligned 2-byte rows as well."""
    odd_2byte = [("edges apart, 1 vector, unroll 4", tile_kernel(1, 4, edges_apart=True)),
                 ("edges apart, 2 vectors, unroll 2", tile_kernel(2, 2, edges_apart=True))]
    forward_configs_probe("edges-apart", [40001, 65535, 100001, 131071], odd_2byte, out, ["float16", "bfloat16"])
    aligned_2byte = [("1 vector, unroll 4", tile_kernel(1, 4)),
                     ("edges apart, 1 vector, unroll 4", tile_kernel(1, 4, edges_apart=True)),
                     ("edges apart, 2 vectors, unroll 2", tile_kernel(2, 2, edges_apart=True)),
                     ("edges apart, 2 vectors, unroll 4", tile_kernel(2, 4, edges_apart=True))]
    forward_configs_probe("edges-apart", [65536, 100000, 131072], aligned_2byte, out, ["float16", "bfloat16"])
    forward_configs_probe("edges-apart", [50001, 65535], [("edges apart, 2 vectors, unroll 2", tile_kernel(
        2, 2, edges_apart=True))], out, ["float32"])
    forward_configs_probe("edges-apart", [65536], [("edges apart, 2 vectors, unroll 4", tile_kernel(
        2, 4, edges_apart=True))], out, ["float32"])


def tile_edges_probe(out: list) -> None:
    """Round 48: odd rows of 40k-131k columns on the tile kernel with whole-vector accesses (the dispatcher, since
    round 48), against tile-stream's one-segment rows (the table before), with the aligned rows beside them."""
    variants = [("tile-stream (the table before)", tile_stream()),
                ("tile, vector edges, 2 vectors, unroll 2", tile_kernel(unroll=2)),
                ("tile, vector edges, 1 vector, unroll 4", tile_kernel(vectors=1, unroll=4))]
    forward_configs_probe("tile-edges", [40001, 65535, 100001, 131071], variants, out, ["float16", "bfloat16"])
    forward_configs_probe("tile-edges", [100000], [], out, ["float16"])
    forward_configs_probe("tile-edges", [50001, 65535], variants, out, ["float32"])


if __name__ == "__main__":
    run_probes({"stream": stream_probe, "tile": tile_probe, "edge": edge_probe, "segments": segments_probe,
                "knobs": knobs_probe, "tile-edges": tile_edges_probe, "edges-apart": edges_apart_probe},
               sys.argv[1:] or ["stream", "tile"],
               "probe_vector_edges.json")
