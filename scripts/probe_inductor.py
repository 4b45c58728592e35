"""Probe: what does Inductor's softmax kernel do at fp32 rows of 2K-16K, where it stays 0.4-1.2%
ahead of the dispatcher on the H100? Prints the Triton source Inductor generates for each shape
(its launch config is in the decorator), then times Inductor, the dispatcher and the rows kernel
at the tiles Inductor's heuristics name, side by side. Diagnostic, not evidence.

    python scripts/probe_inductor.py      # on a CUDA machine; $OUT/probe_inductor.txt when OUT is set
"""
import os
import re
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from kernels import triton_softmax as sm  # noqa: E402

NS = [2048, 4096, 8192, 16384]


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
        report.append(f"==== N={n}: {len(kernels)} kernel(s)\n" + "\n".join(kernels))
        y = torch.empty_like(x)
        copy_ms = p.timed(lambda: y.copy_(x))["ms"]
        lines = [p.row("copy (graph)", {"ms": copy_ms, "p20": None, "p80": None}, moved, copy_ms),
                 p.row("torch.compile", p.timed(compiled, x), moved, copy_ms),
                 p.row("dispatcher", p.timed(sm.softmax_forward, x), moved, copy_ms)]
        variants = [(f"rows {r}x{w}w", p.rows_forward(r, w)) for r, w in ((1, 4), (1, 8), (1, 16), (2, 4), (2, 8), (4, 8))
                    if r * n <= 64 * 32 * w]
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
