"""Probe: the forward's tile launches with ptxas's register cap dropped, raised or lowered, and tile-stream
unrolled twice without a cap (notes/kernels.md, round 38: prediction written before the probe).

Each variant rewrites the maxnreg of the dispatcher's own launch (sm._launch), so the kernel, its grid and its
constexprs stay the dispatcher's. Exploration for tuning SOFTMAX_PLANS, not evidence: every variant is checked
against float64 on every element, then timed as build.py --run times (CUDA-graph replays, L2 flushed), beside a
copy of the same bytes; the GPU's register and spill counts are printed with each line.

    python scripts/probe_uncapped.py   # on a CUDA machine; $OUT/probe_uncapped.json
"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from probe_long_rows import forward_configs_probe, run_probes, with_module  # noqa: E402
from kernels import triton_softmax as sm  # noqa: E402

SHAPES = {8200: ["float16", "bfloat16"], 24000: ["float16", "bfloat16"], 65536: ["float32", "float16", "bfloat16"],
          262144: ["float32", "float16", "bfloat16"], 1048576: ["float32", "float16", "bfloat16"]}
_DISPATCHER_LAUNCH = sm._launch


def with_cap(fn, cap):
    """fn, run with every launch's maxnreg replaced by cap(maxnreg) (None drops it)."""
    def launch(kernel, grid, *args, **kwargs):
        if "maxnreg" in kwargs:
            new = cap(kwargs.pop("maxnreg"))
            if new is not None:
                kwargs["maxnreg"] = new
        _DISPATCHER_LAUNCH(kernel, grid, *args, **kwargs)

    return with_module(fn, _launch=launch)


def tile_stream_unrolled(x):
    """The dispatcher's tile-stream plan, its loops unrolled twice."""
    y = torch.empty_like(x)
    align = sm._forward_align(y, x)
    plan = sm._select_plan("forward", *x.shape, x.element_size(), x.device, align)
    sm._forward_tile_stream(y, x, plan.rows_per_program, plan.num_warps, plan.programs_per_sm, plan.segment_bytes,
                            align, 2, sm._log2_exp(x), one_warp_from=plan.one_warp_from)
    return y


def forward_probe(out: list) -> None:
    """Copy, dispatcher and each cap, per shape."""
    fn = sm.softmax_forward
    for n, dtypes in SHAPES.items():
        variants = [("uncapped", with_cap(fn, lambda m: None)),
                    ("cap +8", with_cap(fn, lambda m: m + 8 if m < 64 else m)),
                    ("cap +16 (32-register programs) / 56 (64)", with_cap(fn, lambda m: m + 16 if m < 64 else 56)),
                    ("dispatcher's launch", with_cap(fn, lambda m: m))]
        if n >= 262144:
            variants.append(("tile-stream unrolled twice, uncapped", with_cap(tile_stream_unrolled, lambda m: None)))
        forward_configs_probe("uncapped", [n], variants, out, dtypes)


if __name__ == "__main__":
    run_probes({"forward": forward_probe}, ["forward"], "probe_uncapped.json")
