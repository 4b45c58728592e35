"""Probe: what does Inductor's softmax kernel do at fp32 rows of 2K-16K, where it stays 0.4-1.2%
ahead of the dispatcher on the H100? Prints the Triton source Inductor generates for each shape
(its launch config is in the decorator), then times Inductor, the dispatcher and the rows kernel
at the tiles Inductor's heuristics name, side by side. Diagnostic, not evidence.

    python scripts/probe_inductor.py [rows] [tile] [source]   # on a CUDA machine; $OUT/probe_inductor.txt
"""
import os
import re
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from kernels import triton_softmax as sm  # noqa: E402

NS = [2048, 4096, 8192, 16384]


@triton.jit
def _two_pass_rows_kernel(output_ptr, input_ptr, n_cols, BLOCK: tl.constexpr, FIRST: tl.constexpr,
                          SECOND: tl.constexpr):
    """Inductor's shape of softmax: one program per contiguous row, a running (max, sum) per lane
    over BLOCK-column steps, then a second pass (re-read, from L2) that writes exp(x - max) / sum."""
    row = tl.program_id(0).to(tl.int64) * n_cols
    cols = tl.arange(0, BLOCK)
    lane_max = tl.full([BLOCK], float("-inf"), tl.float32)
    lane_sum = tl.zeros([BLOCK], tl.float32)
    for start in tl.range(0, n_cols, BLOCK):
        x = tl.load(input_ptr + row + start + cols, mask=start + cols < n_cols, other=float("-inf"),
                    eviction_policy=FIRST).to(tl.float32)
        new_max = tl.maximum(lane_max, x)
        safe = tl.where(new_max == float("-inf"), 0.0, new_max)
        lane_sum = lane_sum * tl.exp(lane_max - safe) + tl.exp(x - safe)
        lane_max = new_max
    row_max = tl.max(lane_max, axis=0)
    inv = 1.0 / tl.sum(lane_sum * tl.exp(lane_max - row_max), axis=0)
    for start in tl.range(0, n_cols, BLOCK):
        x = tl.load(input_ptr + row + start + cols, mask=start + cols < n_cols, other=float("-inf"),
                    eviction_policy=SECOND).to(tl.float32)
        tl.store(output_ptr + row + start + cols, (tl.exp(x - row_max) * inv).to(output_ptr.dtype.element_ty),
                 mask=start + cols < n_cols)


def two_pass(block, warps, first="evict_last", second="evict_first"):
    """A forward callable: _two_pass_rows_kernel with this block and warps (contiguous input)."""
    def run(x):
        y = torch.empty_like(x)
        _two_pass_rows_kernel[(x.shape[0],)](y, x, x.shape[1], BLOCK=block, FIRST=first, SECOND=second,
                                             num_warps=warps)
        return y
    return run


TWO_PASS = [(1024, 4), (2048, 4), (2048, 8), (1024, 8), (4096, 8), (512, 4), (2048, 16), (4096, 16)]
# (vectors per thread, warps, programs per SM, unroll) for the tile kernel
TILES = [(1, 4, 8, 1), (1, 8, 4, 1), (2, 4, 8, 1), (1, 8, 8, 1), (2, 8, 4, 1), (1, 16, 4, 1), (2, 8, 4, 2),
         (1, 4, 16, 1), (2, 16, 2, 2), (1, 32, 2, 1)]
MODES = sys.argv[1:] or ["rows", "tile"]


def main() -> None:
    """For each N: Inductor's kernel source (abridged to its decorator and body), then timings."""
    import probe_long_rows as p
    from torch._inductor.utils import run_and_get_code

    p.warm_up_gpu()
    report = []
    for n in NS:
        m, x, moved, ref, scale = p.forward_input(n, "float32")
        torch._dynamo.reset()
        compiled = torch.compile(lambda t: torch.softmax(t, -1))
        _, codes = run_and_get_code(compiled, x)
        kernels = [c for code in codes for c in re.findall(r"@triton_heuristics.*?\n(?=\n\n)", code, re.S)]
        if "source" in MODES or not sys.argv[1:]:
            report.append(f"==== N={n}: {len(kernels)} kernel(s)\n" + "\n".join(kernels))
        y = torch.empty_like(x)
        copy_ms = p.timed(lambda: y.copy_(x))["ms"]
        lines = [p.row("copy (graph)", {"ms": copy_ms, "p20": None, "p80": None}, moved, copy_ms),
                 p.row("torch.compile", p.timed(compiled, x), moved, copy_ms),
                 p.row("dispatcher", p.timed(sm.softmax_forward, x), moved, copy_ms)]
        variants = [(f"rows {r}x{w}w", p.rows_forward(r, w)) for r, w in ((1, 4), (1, 8), (1, 16), (2, 4), (2, 8), (4, 8))
                    if r * n <= 64 * 32 * w and "rows" in MODES]
        # the tile kernel: two passes like Inductor's, one running (max, sum) per 16-byte vector
        variants += [(f"tile {c}", p.tile_unrolled_forward(c)) for c in TILES if "tile" in MODES]
        variants += [(f"two-pass {b} cols x {w}w", two_pass(b, w)) for b, w in TWO_PASS if "twopass" in MODES and b <= n]
        if "twopass" in MODES:
            variants.append(("two-pass 2048 x 8w, no eviction hints", two_pass(2048, 8, "", "")))
        lines += p.checked_and_timed(variants, (x,), ref, scale, "float32", moved, copy_ms)
        p.report("inductor", m, n, "float32", lines, [])
        report.append("\n".join(f"  {l['gbs']:7.0f} GB/s {l['ms'] * 1e3:9.1f} us  {l['variant']}"
                                for l in sorted(lines, key=lambda r: r["ms"])))
    text = "\n\n".join(report)
    print(text)
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], "probe_inductor.txt").write_text(text)


if __name__ == "__main__":
    main()
