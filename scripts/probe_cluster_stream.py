"""Probe (round 83): tile-stream with a row's segments exchanging through a thread-block cluster's barrier.

Exploration, not evidence. Round 79's arithmetic put 1-3 us an item over copy rate on tile-stream, growing with a
row's segments: the publish through L2, the siblings' polling and their skew. Here the n_segments programs of a row
are one cluster (round 23's mechanism: an ordinary one-CTA kernel, launched in clusters by setting the cluster size
in its packed metadata; Triton 3.6 cannot compile cross-CTA reductions itself). A cluster walks rows; its CTA of rank
r streams segment r exactly as tile-stream does (the same pass 1 and pass 2 code, same tiles, same L2 prefetches),
stores its packed (max, sum) to a global slot, and meets its siblings at `barrier.cluster.arrive.release` /
`wait.acquire` instead of polling: the hardware barrier releases when the last sibling arrives, and the slots stored
before it are visible after it. The next item's first tiles are asked of L2 before the barrier, as tile-stream does
while it polls. Rows of up to 8 segments (the portable cluster size): 2-byte 262,144-524,288, fp32 131,072-262,144.

Every variant is checked against float64 on every element, then timed against the dispatcher on fresh inputs
(probe_trials.ab_trials).

    python scripts/probe_cluster_stream.py   # on a CUDA machine (sm_90); $OUT/probe_cluster_stream.json
"""
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_cluster import _cluster_sync, clustered  # noqa: E402
from probe_long_rows import save_results, sm, warm_up_gpu  # noqa: E402
from probe_trials import ab_trials  # noqa: E402


@triton.jit
def _cluster_stream_fwd_kernel(output_ptr, input_ptr, slots_ptr, input_row_stride, output_row_stride, n_rows,
                               n_cols, blocks_per_segment, TILE_ROWS: tl.constexpr, CLUSTER: tl.constexpr,
                               ALIGN: tl.constexpr, VEC: tl.constexpr, LOG2: tl.constexpr, PREFETCH: tl.constexpr,
                               LINE: tl.constexpr, WAIT_PREFETCH: tl.constexpr, VECTOR_EDGES: tl.constexpr,
                               WRITE_PAIRS: tl.constexpr, SLOTS: tl.constexpr):
    """Tile-stream's items, a row a cluster of CLUSTER CTAs (one segment each), exchanged at a cluster barrier."""
    n_cols = n_cols // ALIGN * ALIGN
    input_row_stride = input_row_stride // ALIGN * ALIGN
    output_row_stride = output_row_stride // ALIGN * ALIGN
    rank = tl.program_id(0) % CLUSTER
    n_clusters = tl.num_programs(0) // CLUSTER
    for row in range(tl.program_id(0) // CLUSTER, n_rows, n_clusters):
        item = row * CLUSTER + rank
        _, in_base, out_base, first_col, n_blocks, first_block, end_block = sm._segment_item(
            item, CLUSTER, blocks_per_segment, input_row_stride, output_row_stride, n_cols, TILE_ROWS * VEC, VEC,
            LINE)
        segment_max, segment_sum = sm._tile_segment_max_sum(input_ptr, in_base, first_col, n_cols, n_blocks,
                                                            first_block, end_block, TILE_ROWS, VEC, 1, LOG2,
                                                            PREFETCH, VECTOR_EDGES)
        tl.store(slots_ptr + item, sm._pack(segment_max, segment_sum))
        if WAIT_PREFETCH > 0:
            sm._prefetch_next_item(input_ptr, item + tl.num_programs(0), n_rows * CLUSTER, CLUSTER,
                                   blocks_per_segment, input_row_stride, output_row_stride, n_cols, TILE_ROWS * VEC,
                                   VEC, LINE, WAIT_PREFETCH)
        siblings = tl.arange(0, SLOTS)  # SLOTS: CLUSTER to a power of two
        in_row = siblings < CLUSTER
        # the barrier's 0 is added to the addresses, so that the loads cannot be hoisted above it
        packed = tl.load(slots_ptr + row * CLUSTER + siblings + _cluster_sync(segment_sum), mask=in_row, other=-1,
                         volatile=True)
        row_max, inv_row_sum = sm._combine_partials(packed, in_row, LOG2)
        sm._tile_segment_write(output_ptr, input_ptr, out_base, in_base, first_col, n_cols, n_blocks, first_block,
                               end_block, row_max, inv_row_sum, TILE_ROWS, VEC, 1, LOG2, sm.LOG2E, VECTOR_EDGES,
                               WRITE_PAIRS=WRITE_PAIRS)


def cluster_stream_forward(clusters_per_gpu: int = 0, fewer_clusters: int = 0):
    """A forward callable: the table's tile-stream cut (2 vectors x 32 warps, one CTA an SM), a row a cluster; a
    persistent grid of clusters_per_gpu clusters (0: SMs // segments, less fewer_clusters)."""
    def run(x):
        y = torch.empty_like(x)
        n_rows, n_cols = x.shape
        align = sm._vector_align(x.element_size(), n_cols, x.stride(0), y.stride(0))
        plan = sm._select_plan("forward", n_rows, n_cols, x.element_size(), x.device, align)
        assert plan.path == "tile-stream", plan
        vec, tile_rows, line, n_segments, blocks_per_segment = sm._tile_stream_layout(
            y, x, plan.rows_per_program, plan.num_warps, plan.programs_per_sm, plan.segment_bytes, align,
            plan.shorter_segment_bytes)
        assert 2 <= n_segments <= 8, n_segments
        log2 = sm._log2_exp(x)
        slots = torch.zeros(n_rows * n_segments, dtype=torch.int64, device=x.device)
        grid = ((clusters_per_gpu or sm._sm_count(x.device) // n_segments - fewer_clusters) * n_segments,)
        args = (y, x, slots, x.stride(0), y.stride(0), n_rows, n_cols, blocks_per_segment)
        kwargs = dict(TILE_ROWS=tile_rows, CLUSTER=n_segments, ALIGN=align, VEC=vec, LOG2=log2,
                      PREFETCH=sm._l2_prefetch_steps(x), LINE=line,
                      WAIT_PREFETCH=sm._wait_prefetch_blocks(x, n_segments),
                      VECTOR_EDGES=sm._vector_edges(align, vec),
                      WRITE_PAIRS=sm._write_pairs(sm.TILE_WRITE_PAIRS, n_cols, x.element_size()),
                      SLOTS=triton.next_power_of_2(n_segments), num_warps=plan.num_warps, maxnreg=64)
        # compile (and clusterise) before the first launch, so that no launch runs unclustered
        handle = _cluster_stream_fwd_kernel.warmup(*args, grid=grid, **kwargs)
        if handle.packed_metadata[1] != n_segments:
            clustered(handle, n_segments)
        _cluster_stream_fwd_kernel[grid](*args, **kwargs)
        return y
    return run


SHAPES = [(262144, "float16"), (262144, "bfloat16"), (393216, "float16"), (524288, "float16"), (131072, "float32"),
          (262144, "float32"), (300000, "float16"), (200000, "float32")]


def cluster_stream(out: list) -> None:
    """The cluster exchange against the dispatcher (ratio > 1: the cluster kernel is faster)."""
    ab_trials("cluster exchange", cluster_stream_forward(), SHAPES, out, trials=3)


def cluster_placement(out: list) -> None:
    """The same with fewer clusters, should SMs // segments clusters not all be co-resident (a GPC holds whole
    clusters only: 3-CTA clusters on GPCs of 16-18 SMs leave SMs idle, and the clusters left over run a second
    wave)."""
    for fewer in (1, 2, 4, 8):
        ab_trials(f"cluster exchange, {fewer} fewer clusters", cluster_stream_forward(fewer_clusters=fewer),
                  SHAPES[:2] + SHAPES[4:6], out, trials=2)


if __name__ == "__main__":
    warm_up_gpu()
    print(torch.cuda.get_device_name(), torch.__version__, flush=True)
    results = []
    probes = sys.argv[1:] or ["cluster_stream"]
    for name in probes:
        globals()[name](results)
    save_results("probe_cluster_stream.json", results)
