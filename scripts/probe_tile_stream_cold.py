"""Probe (round 162): where tile-stream's forced cold path (max_polls 0) goes wrong on a Hopper GPU.

Exploration, not evidence. Round 161 left the forward's forced cold path failing the float64 check at 128 x 1M and
512 x 262,144 fp32 on both GPUs, while the interpreter runs it right. For each launch, with the product's kwargs
and with one CUDA-only feature switched off at a time: the slots' (max, sum) against each segment's true ones, and
each segment's output against float64 (median out/ref ratio, worst relative error), summed over rows. Then the
module again with tl.debug_barrier() at the places PATCHES names (the second call of round 162). On the CPU (under
TRITON_INTERPRET=1) it runs small shapes, to check the probe itself.

    PROBE_VARIANTS=1 python scripts/probe_tile_stream_cold.py    # on a Hopper GPU: the VARIANTS, then PATCHES
    python scripts/probe_tile_stream_cold.py                     # PATCHES only
"""
import json
import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import kernels.triton_softmax as sm  # noqa: E402
from sass_digest import load_module  # noqa: E402

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"  # cpu: under TRITON_INTERPRET=1, to check the probe itself
SHAPES = ((128, 1 << 20), (512, 262144), (3, 1 << 20)) if DEVICE == "cuda" else ((3, 20000), (4, 40000))

VARIANTS = {  # name: kwargs forced on the tile-stream kernel's launch
    "product": {},
    "no-l2-prefetch": {"PREFETCH": 0},
    "no-wait-prefetch": {"WAIT_PREFETCH": 0},
    "no-poll-sleep": {"POLL_SLEEP": 0},
    "no-write-pairs": {"WRITE_PAIRS": False},
    "unroll-1": {"UNROLL": 1},
    "num-stages-1": {"num_stages": 1},  # no software pipelining of the tile loops' loads
    "none-of-them": {"PREFETCH": 0, "WAIT_PREFETCH": 0, "POLL_SLEEP": 0, "WRITE_PAIRS": False, "UNROLL": 1,
                     "num_stages": 1},
}


SOURCE = Path(__file__).resolve().parent.parent / "kernels" / "triton_softmax.py"
BARRIER = "tl.debug_barrier()\n"
SIBLING_TOP = "            slot = slots_ptr + row * n_segments + sibling\n"
AFTER_XCHG = "                tl.atomic_xchg(slot, _pack(s_max, s_sum), sem=\"relaxed\")\n"
AFTER_AWAIT = "        packed = _await_row(slots_ptr, row, n_segments, 1 << 30, SEGMENTS_BLOCK)[0]\n"
SEGMENT_MAX = "    segment_max = tl.max(vec_max, axis=0)\n"
PATCHES = {  # name: (function, anchor line in it, indent of the barrier inserted after it), ...
    "barrier-sibling-top": (("_row_partials", SIBLING_TOP, 12),),
    "barrier-after-xchg": (("_row_partials", AFTER_XCHG, 16),),
    "barrier-after-await": (("_row_partials", AFTER_AWAIT, 8),),
    "barriers-all": (("_row_partials", SIBLING_TOP, 12), ("_row_partials", AFTER_XCHG, 16),
                     ("_row_partials", AFTER_AWAIT, 8)),
    "barrier-after-segment-max": (("_tile_segment_max_sum", SEGMENT_MAX, 4),),
}


def patched_module(name: str):
    """kernels/triton_softmax.py with tl.debug_barrier() after the anchors of PATCHES[name]."""
    text = SOURCE.read_text()
    for function, anchor, indent in PATCHES[name]:
        start = text.index(f"def {function}(")
        end = text.index("@triton.jit", start)
        body = text[start:end]
        assert body.count(anchor) == 1, anchor
        text = text[:start] + body.replace(anchor, anchor + " " * indent + BARRIER) + text[end:]
    path = Path("/tmp", f"triton_softmax_{name.replace('-', '_')}.py")
    path.write_text(text)
    return load_module(str(path), f"triton_softmax_{name.replace('-', '_')}")


def unpack(bits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(max, sum) float32 halves of packed int64 slots (max in the high word)."""
    hi = (bits >> 32).to(torch.int32).view(torch.float32)
    lo = (bits & 0xFFFFFFFF).to(torch.int32).view(torch.float32)
    return hi, lo


def report(n_rows: int, n_cols: int, max_polls: int, overrides: dict, sm=sm) -> dict:
    """One tile-stream forward of n_rows x n_cols fp32 with overrides (by module sm), checked segment by segment."""
    x = torch.randn(n_rows, n_cols, generator=torch.Generator(device=DEVICE).manual_seed(11), device=DEVICE) * 3
    plan = sm._select_plan("forward", n_rows, n_cols, 4, x.device, 4, False)
    y = torch.empty_like(x)
    seen = {}

    def launch(kernel, grid, *args, **kwargs):
        kwargs = {**kwargs, **overrides}
        seen.update(args=args, kwargs=kwargs, grid=grid)
        kernel[grid](*args, **kwargs)
    real_launch, real_polls = sm._launch, sm._max_polls
    sm._launch, sm._max_polls = launch, (lambda: max_polls)
    try:
        if DEVICE == "cuda":
            sm._launch_forward_path(y, x, plan, 4)
        else:  # the CPU's plan is not tile-stream: small segments, so that rows cut in several
            sm._forward_tile_stream(y, x, 1, 4, 1, 16384, 4)
        if DEVICE == "cuda":
            torch.cuda.synchronize()
    finally:
        sm._launch, sm._max_polls = real_launch, real_polls
    args, kwargs = seen["args"], seen["kwargs"]
    n_segments, blocks = args[7], args[8]
    span = blocks * kwargs["TILE_ROWS"] * kwargs["VEC"]
    ref = torch.softmax(x.double(), -1)
    rel = ((y.double() - ref).abs() / ref.abs())
    out = {"plan": plan._asdict(), "grid": list(seen["grid"]), "n_segments": n_segments, "span": span,
           "kwargs": {k: v for k, v in kwargs.items()}, "max_rel_err": rel.max().item(),
           "rows_wrong": int((rel.amax(1) > 1e-4).sum().item())}
    got_max, got_sum = unpack(args[2].view(n_rows, n_segments))
    parts = x.double()
    seg_rows = []
    for seg in range(n_segments):
        part = parts[:, seg * span:(seg + 1) * span]
        true_max = part.amax(1)
        true_sum = torch.exp(part - true_max[:, None]).sum(1)
        ratio = (y[:, seg * span:(seg + 1) * span].double() / ref[:, seg * span:(seg + 1) * span])
        seg_rows.append({"segment": seg,
                         "slot_max_err": (got_max[:, seg].double() - true_max).abs().max().item(),
                         "slot_sum_rel_err": (got_sum[:, seg].double() / true_sum - 1).abs().max().item(),
                         "rows_off": int(((ratio.median(1).values - 1).abs() > 1e-4).sum().item()),
                         "worst_ratio": (ratio.median(1).values - 1).abs().max().item(),
                         "within_segment_spread": (ratio.amax(1) / ratio.amin(1) - 1).max().item()})
    out["segments"] = seg_rows
    return out


def main() -> None:
    """Every variant at both failing shapes, forced cold and hot; JSON to $OUT or stdout."""
    results = {"device": torch.cuda.get_device_name() if DEVICE == "cuda" else "cpu", "runs": []}
    for n_rows, n_cols in SHAPES if os.environ.get("PROBE_VARIANTS") else ():
        for name, overrides in VARIANTS.items():
            for max_polls in ((0, sm.EXCHANGE_MAX_POLLS) if name == "product" else (0,)):
                r = report(n_rows, n_cols, max_polls, overrides)
                r.update(shape=[n_rows, n_cols], variant=name, max_polls=max_polls)
                results["runs"].append(r)
                bad = [s["segment"] for s in r["segments"] if s["rows_off"]]
                slots = [s["segment"] for s in r["segments"] if s["slot_sum_rel_err"] > 1e-4 or s["slot_max_err"]]
                print(f"{n_rows}x{n_cols} {name:17s} polls {max_polls:5d}: grid {r['grid']} segs {r['n_segments']}"
                      f" rows wrong {r['rows_wrong']:4d} max rel {r['max_rel_err']:.2e}; segments off {bad[:12]};"
                      f" slots off {slots[:12]}", flush=True)
    for name in PATCHES:
        module = patched_module(name)
        for n_rows, n_cols in SHAPES[:2]:
            for repeat in range(2):
                r = report(n_rows, n_cols, 0, {}, module)
                r.update(shape=[n_rows, n_cols], variant=name, max_polls=0, repeat=repeat)
                results["runs"].append(r)
                bad = [s["segment"] for s in r["segments"] if s["rows_off"]]
                print(f"{n_rows}x{n_cols} {name:20s} #{repeat}: rows wrong {r['rows_wrong']:4d} max rel"
                      f" {r['max_rel_err']:.2e}; segments off {bad[:12]}", flush=True)
    text = json.dumps(results, indent=1, sort_keys=True, default=str)
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], "tile_stream_cold.json").write_text(text)


if __name__ == "__main__":
    main()
