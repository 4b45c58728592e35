"""Probe: how fast does HBM move data in one direction only? Reads alone, writes alone, a copy.

Diagnostic, not evidence. tile-stream's passes run one after the other on each SM, and the SMs
run them nearly in step (a row's segments wait for one another), so HBM sees mostly reads, then
mostly writes. If reads alone or writes alone move fewer bytes per second than a copy does, two
phases in step are capped below copy speed however fast each pass is made.

Timed like build.py --run (do_bench over CUDA-graph replays, L2 flushed before each sample):
  copy       y.copy_(x)                     read N bytes, write N bytes
  read-only  torch.amax(x, dim=1)           read N bytes (output: one value per 4,096)
  write-only y.fill_(1.0)                   write N bytes
over 1 GiB, 256 MiB and 64 MiB, fp32.

    python scripts/probe_phases.py      # on a CUDA machine; $OUT/probe_phases.json when OUT is set
"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from probe_long_rows import run_probes, timed  # noqa: E402

SIZES = [1 << 30, 1 << 28, 1 << 26]


def phases_probe(out: list) -> None:
    """GB/s of a copy, a read-only and a write-only kernel per size."""
    for size in SIZES:
        x = torch.randn(size // 4 // 4096, 4096, device="cuda")
        y = torch.empty_like(x)
        ops = {"copy": (lambda: y.copy_(x), 2 * size), "read-only": (lambda: torch.amax(x, dim=1), size),
               "write-only": (lambda: y.fill_(1.0), size)}
        lines = []
        for name, (op, moved) in ops.items():
            t = timed(lambda _: op(), None)
            lines.append({"op": name, "bytes": moved, **t, "gbs": moved / t["ms"] / 1e6})
        print(f"{size >> 20} MiB:", flush=True)
        for line in lines:
            print(f"  {line['op']:10s} {line['ms'] * 1e3:9.1f} us  {line['gbs']:7.0f} GB/s", flush=True)
        out.append({"bytes": size, "lines": lines})
        torch.cuda.empty_cache()


if __name__ == "__main__":
    run_probes({"phases": phases_probe}, ["phases"], "probe_phases.json")
