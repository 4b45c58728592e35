"""Probe: long rows in one HBM pass, a row held across a thread-block cluster (notes/kernels.md, round 23).

Exploration, not evidence. With num_ctas = C a Triton program is a cluster of C CTAs: a 1-D block is
split across them and tl.max / tl.sum over it are exchanged through distributed shared memory. The
product's rows-pipelined kernel is 1-D, so it runs here unchanged with num_ctas: one row per cluster
(grid = rows, NUM_STAGES = 1: no pipelining) or persistent clusters that load the next rows into shared
memory while this one is reduced (NUM_STAGES 2-3). Every variant is checked against float64 on every
element, then timed beside the dispatcher and a copy (probe_long_rows.forward_configs_probe).

    python scripts/probe_cluster.py [cluster]   # on a CUDA machine (sm_90); $OUT/probe_cluster.json
"""
import sys
from pathlib import Path

import torch
import triton

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from kernels import triton_softmax as sm  # noqa: E402
from probe_long_rows import forward_configs_probe, run_probes  # noqa: E402

NS = [65536, 100000, 131072, 262144, 524288]
ALL = ["float16", "bfloat16", "float32"]
MAX_SHARED_PER_CTA = 227 * 1024  # sm_90's opt-in limit per block
MAX_VALUES_PER_THREAD = 64       # fp32 values a thread holds; 64 already leaves no room at 32 warps


def cluster_forward(ctas: int, warps: int, stages: int, persistent: bool):
    """A forward callable: the rows-pipelined kernel on clusters of `ctas` CTAs of `warps` warps."""
    def run(x):
        y = torch.empty_like(x)
        n_rows, n_cols = x.shape
        align = sm._vector_align(x.element_size(), n_cols, x.stride(0), y.stride(0))
        log2 = sm._log2_exp(x)
        clusters = sm._sm_count(x.device) // ctas * (2 if warps <= 16 else 1)
        grid = (min(n_rows, clusters) if persistent else n_rows,)
        sm._launch(sm._rows_pipelined_fwd_kernel, grid, y, x, x.stride(0), y.stride(0), n_rows, n_cols,
                   BLOCK_SIZE=triton.next_power_of_2(n_cols), ALIGN=align, NUM_STAGES=stages, LOG2=log2,
                   GUARD=sm._log2_guard(x, log2), num_warps=warps, num_ctas=ctas)
        return y
    return run


def cluster_variants(n: int, elem_bytes: int) -> list:
    """(label, forward) for every cluster config that holds a row of n in registers without padding past
    MAX_VALUES_PER_THREAD and whose pipeline fits shared memory."""
    variants = []
    for ctas in (2, 4, 8):
        per_cta = triton.next_power_of_2(n) // ctas
        for warps in (16, 32):
            per_thread = per_cta // (32 * warps)
            if not 8 <= per_thread <= MAX_VALUES_PER_THREAD:
                continue
            variants.append((f"cluster {ctas} x {warps} warps, a row each", cluster_forward(ctas, warps, 1, False)))
            for stages in (2, 3):
                if (stages - 1) * per_cta * elem_bytes <= MAX_SHARED_PER_CTA - 16384:
                    variants.append((f"cluster {ctas} x {warps} warps, persistent, {stages} stages",
                                     cluster_forward(ctas, warps, stages, True)))
    return variants


def cluster_probe(out: list) -> None:
    """Every cluster config against the dispatcher, per long N and dtype."""
    for n in NS:
        for dtype in ALL:
            elem_bytes = torch.tensor([], dtype=getattr(torch, dtype)).element_size()
            forward_configs_probe("cluster", [n], cluster_variants(n, elem_bytes), out, dtypes=[dtype])


if __name__ == "__main__":
    run_probes({"cluster": cluster_probe}, sys.argv[1:] or ["cluster"], "probe_cluster.json")
