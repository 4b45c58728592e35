"""Probe: long rows in one HBM pass, a row held across a thread-block cluster (notes/kernels.md, round 23).

Exploration, not evidence. Triton 3.8 splits a 1-D block over a cluster with num_ctas and reduces it
through distributed shared memory, but the GPU image's Triton 3.6 fails to compile any reduction with
num_ctas > 1 (TritonGPUPlanCTAPass: "parent layout must have at least rank >= 2"). So this probe compiles
an ordinary one-CTA kernel and launches it in clusters: the launcher reads the cluster size from the
compiled kernel's packed metadata (num_warps, num_ctas, shared), so a kernel specialised on CLUSTER gets
CLUSTER there. The CTAs of one cluster are consecutive program ids; each holds its slice of a row in
registers, publishes its (max, sum of exp) in global memory and meets its siblings at a cluster barrier
(release / acquire: the partials stored before it are visible after it), then scales its exp values by
exp(m - M) / S and writes them. One read and one write per element, one exp per element.

Every variant is checked against float64 on every element, then timed beside the dispatcher and a copy
(probe_long_rows.forward_configs_probe).

    python scripts/probe_cluster.py [cluster]   # on a CUDA machine (sm_90); $OUT/probe_cluster.json
"""
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from kernels import triton_softmax as sm  # noqa: E402
from probe_long_rows import forward_configs_probe, run_probes  # noqa: E402


@triton.jit
def _cluster_sync(after):
    """0, once every thread of the cluster has come here (after `after` is known); stores before are seen by
    loads after. Loads whose addresses add this 0 cannot be hoisted above it (the pipeliner would)."""
    return tl.inline_asm_elementwise(
        "barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;\n\tmov.u32 $0, 0;",
        "=r,r", [after], dtype=tl.int32, is_pure=False, pack=1)


@triton.jit
def _cluster_fwd_kernel(output_ptr, input_ptr, maxes_ptr, sums_ptr, input_row_stride, output_row_stride,
                        n_rows, n_cols, chunk, CLUSTER: tl.constexpr, BLOCK_SIZE: tl.constexpr,
                        ALIGN: tl.constexpr, LOG2: tl.constexpr, NUM_STAGES: tl.constexpr):
    """Softmax of rows split over the CTAs of clusters of CLUSTER; a cluster walks rows cluster, cluster + clusters, ..."""
    n_cols = n_cols // ALIGN * ALIGN
    input_row_stride = input_row_stride // ALIGN * ALIGN
    output_row_stride = output_row_stride // ALIGN * ALIGN
    rank = tl.program_id(0) % CLUSTER
    first_col = rank * chunk
    cols = first_col + tl.arange(0, BLOCK_SIZE)
    mask = cols < tl.minimum(first_col + chunk, n_cols)
    scale = LOG2E if LOG2 else 1.0
    for row in tl.range(tl.program_id(0) // CLUSTER, n_rows, tl.num_programs(0) // CLUSTER, num_stages=NUM_STAGES):
        row64 = tl.cast(row, tl.int64)
        x = tl.load(input_ptr + row64 * input_row_stride + cols, mask=mask, other=float("-inf")).to(tl.float32)
        local_max = tl.max(x, axis=0) * scale
        # a slice of -inf only (masked, or past the row's end) adds 0 to the sum, not NaN
        numerator = tl.where(local_max == float("-inf"), 0.0, tl.exp2(tl.fma(x, scale, -local_max))) if LOG2 \
            else tl.where(local_max == float("-inf"), 0.0, tl.exp(x - local_max))
        slot = row64 * CLUSTER + rank
        tl.store(maxes_ptr + slot, local_max)
        tl.store(sums_ptr + slot, tl.sum(numerator, axis=0))
        siblings = row64 * CLUSTER + tl.arange(0, CLUSTER) + _cluster_sync(local_max)
        maxes = tl.load(maxes_ptr + siblings, volatile=True)
        row_max = tl.max(maxes, axis=0)
        # a row of -inf: row_max = -inf, so every factor is NaN, as torch gives
        row_sum = tl.sum(tl.load(sums_ptr + siblings, volatile=True) * tl.exp2(maxes - row_max), axis=0) if LOG2 \
            else tl.sum(tl.load(sums_ptr + siblings, volatile=True) * tl.exp(maxes - row_max), axis=0)
        factor = (tl.exp2(local_max - row_max) if LOG2 else tl.exp(local_max - row_max)) / row_sum
        tl.store(output_ptr + row64 * output_row_stride + cols, (numerator * factor).to(output_ptr.dtype.element_ty),
                 mask=mask)


LOG2E = sm.LOG2E
MAX_CLUSTER = 16  # 16 is a non-portable cluster size; the launcher allows it when num_ctas == 16


def clustered(handle, cluster: int):
    """handle, launched from now on in clusters of `cluster` CTAs (grid x cluster CTAs in all)."""
    num_warps, _, shared = handle.packed_metadata
    handle.packed_metadata = (num_warps, cluster, shared)
    return handle


def cluster_forward(cluster: int, warps: int, clusters_per_gpu: int = 0, stages: int = 1):
    """A forward callable: rows split over clusters of `cluster` CTAs of `warps` warps; one row per cluster
    (clusters_per_gpu 0) or a persistent grid of that many clusters, software-pipelined over `stages`
    (Triton 3.6's pipeliner cannot predicate the barrier's inline asm: stages > 1 do not compile)."""
    def run(x):
        y = torch.empty_like(x)
        n_rows, n_cols = x.shape
        align = sm._vector_align(x.element_size(), n_cols, x.stride(0), y.stride(0))
        chunk = triton.cdiv(triton.cdiv(n_cols, cluster), 64) * 64
        maxes = torch.empty(n_rows * cluster, dtype=torch.float32, device=x.device)
        sums = torch.empty_like(maxes)
        grid = (min(n_rows, clusters_per_gpu) if clusters_per_gpu else n_rows,)
        args = (y, x, maxes, sums, x.stride(0), y.stride(0), n_rows, n_cols, chunk)
        kwargs = dict(CLUSTER=cluster, BLOCK_SIZE=triton.next_power_of_2(chunk), ALIGN=align, LOG2=sm._log2_exp(x),
                      NUM_STAGES=stages, num_warps=warps)
        # compile (and clusterise) before the first launch, so that no launch runs unclustered
        handle = _cluster_fwd_kernel.warmup(*args, grid=grid, **kwargs)
        if handle.packed_metadata[1] != cluster:
            clustered(handle, cluster)
        sm._launch(_cluster_fwd_kernel, grid, *args, **kwargs)
        return y
    return run


NS = [65536, 100000, 131072, 262144, 524288]
ALL = ["float16", "bfloat16", "float32"]


def cluster_variants(n: int) -> list:
    """(label, forward) for cluster configs whose slices are 16-32 values a thread (64 registers at 32 warps)."""
    variants = []
    for cluster in (2, 4, 8, 16):
        per_cta = triton.next_power_of_2(triton.cdiv(n, cluster))
        for warps in (8, 16, 32):
            if not 16 <= per_cta // (32 * warps) <= 32:
                continue
            per_sm = 2 if warps <= 16 else 1
            variants.append((f"cluster {cluster} x {warps} warps, a row each", cluster_forward(cluster, warps)))
            variants.append((f"cluster {cluster} x {warps} warps, persistent",
                             cluster_forward(cluster, warps, 132 // cluster * per_sm)))
    return variants


def cluster_probe(out: list) -> None:
    """Every cluster config against the dispatcher, per long N and dtype."""
    for n in NS:
        for dtype in ALL:
            forward_configs_probe("cluster", [n], cluster_variants(n), out, dtypes=[dtype])


if __name__ == "__main__":
    run_probes({"cluster": cluster_probe}, sys.argv[1:] or ["cluster"], "probe_cluster.json")
