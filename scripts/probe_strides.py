"""Probe: do the backward's long rows lose to the strides of their concurrent streams? (notes/kernels.md)

Exploration, not evidence. probe_polls.py found fp32 rows of 1M columns waiting no longer for their
siblings than rows of 131,072, yet 35% slower; ncu saw the same bytes and twice the wait per load. At 1M
the 128 programs stream 4 rows 4 MB apart, 32 segments 128 KB apart in each; this probe moves those
strides: rows 256 bytes longer than their columns (padded storage, same values), and segments of 3 or 5
blocks (96 or 160 KB a tensor) instead of 4. Each variant is checked on every element, then timed beside
the dispatcher and the 2-read-1-write add (backward_configs_probe).

    python scripts/probe_strides.py   # on a CUDA machine; $OUT/probe_strides.json
"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from kernels import triton_softmax as sm  # noqa: E402
from probe_long_rows import backward_configs_probe, run_probes  # noqa: E402

PAD_BYTES = 256
_padded = {}


def padded(t: torch.Tensor) -> torch.Tensor:
    """t's values in storage whose rows are PAD_BYTES longer (made once per tensor)."""
    key = (t.data_ptr(), tuple(t.shape), t.dtype)
    if key not in _padded:
        wide = torch.empty(t.shape[0], t.shape[1] + PAD_BYTES // t.element_size(), dtype=t.dtype, device=t.device)
        wide[:, :t.shape[1]] = t
        _padded[key] = wide[:, :t.shape[1]]
    return _padded[key]


def stream(segment_blocks: int, pad: bool):
    """A backward callable: the dispatcher's stream launch with segments of segment_blocks blocks."""
    def run(y, dy):
        if pad:
            y, dy = padded(y), padded(dy)
        dx = torch.empty_like(y)
        plan = sm._select_plan("backward", *y.shape, y.element_size(), y.device, 1)
        align = sm._vector_align(y.element_size(), y.shape[1], dx.stride(0), y.stride(0), dy.stride(0))
        segment = segment_blocks * plan.block_size * 2 * y.element_size()
        sm._backward_stream(dx, y, dy, plan.block_size, plan.num_warps, plan.programs_per_sm, plan.num_stages,
                            segment, align)
        return dx
    return run


VARIANTS = [("4 blocks (product)", stream(4, False)), ("4 blocks, padded rows", stream(4, True)),
            ("3 blocks", stream(3, False)), ("5 blocks", stream(5, False)), ("3 blocks, padded rows", stream(3, True))]


def strides_probe(out: list) -> None:
    """Each variant at rows of 131,072 and 1M columns, fp32 and fp16."""
    backward_configs_probe("strides", [131072, 1048576], VARIANTS, out, ["float32", "float16"])
    _padded.clear()


if __name__ == "__main__":
    run_probes({"strides": strides_probe}, sys.argv[1:] or ["strides"], "probe_strides.json")
