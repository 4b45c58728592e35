"""Probe: does the slot vector's width, or a 64-register cap on the backward, change the stream kernels' speed?
(notes/kernels.md, round 35: prediction written before the probe)

The stream kernels hold a row's slots in a vector of SEGMENTS_BLOCK lanes (16 by default, one lane per thread
where one warp re-reads them: Plan.one_warp_from). An offline compile put the 2-byte backward's spills in that
choice, and the backward launch sets no maxnreg where the forward's sets 64. Each variant here overrides
_slot_polling's result for the dispatcher's own launch, so only the width and the cap change.

Exploration for tuning SOFTMAX_PLANS, not evidence: every variant is checked against float64 on every element,
then timed as build.py --run times (CUDA-graph replays, L2 flushed), beside a copy (forward) or a 2-read-1-write
add (backward); the GPU's register and spill counts are printed with each line.

    python scripts/probe_slots.py [forward] [backward] [lanes]   # on a CUDA machine; $OUT/probe_slots.json

It ran at ae70a55, when every plan's slot vector had 16 lanes at least. Since 7177864 the 2-byte backward's plan
asks for 32 (Plan.slot_lanes) and caps it at 64 registers, so its "dispatcher" lines are the probe's "32 lanes,
cap 64" of then.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from probe_long_rows import backward_configs_probe, forward_configs_probe, run_probes, with_module  # noqa: E402
from probe_wait_prefetch import DTYPES, NS  # noqa: E402  (the same cases)
from kernels import triton_softmax as sm  # noqa: E402

_DISPATCHER_POLLING = sm._slot_polling
_DISPATCHER_LAUNCH = sm._launch


def with_polling(fn, lanes=None, one_warp=False, maxnreg=None):
    """fn, run with the stream launchers' slot vector at `lanes` (None: the plan's), or one lane per thread, and
    the launch's maxnreg set to maxnreg (None: the plan's; 0: none)."""
    def polling(x, n_segments, num_warps, one_warp_from, plan_lanes=16):
        return _DISPATCHER_POLLING(x, n_segments, num_warps, n_segments if one_warp else one_warp_from,
                                   lanes or plan_lanes)

    def launch(kernel, grid, *args, **kwargs):
        if maxnreg is not None:
            kwargs.pop("maxnreg", None)
            kwargs.update({"maxnreg": maxnreg} if maxnreg else {})
        _DISPATCHER_LAUNCH(kernel, grid, *args, **kwargs)

    return with_module(fn, _slot_polling=polling, _launch=launch)


def variants(fn, capped: bool) -> list:
    """(label, callable) per slot vector width, with the 64-register cap where the launch lacks one."""
    cap = None if capped else 64
    lines = [("16 lanes, cap 64", with_polling(fn, lanes=16, maxnreg=64))] if not capped else []
    lines += [(f"{lanes} lanes" + ("" if capped else ", cap 64"), with_polling(fn, lanes=lanes, maxnreg=cap))
              for lanes in (32, 64)]
    lines += [("one warp" + ("" if capped else ", cap 64"), with_polling(fn, one_warp=True, maxnreg=cap)),
              ("dispatcher's launch", with_polling(fn))]
    return lines


def lanes_probe(out: list) -> None:
    """The 2-byte backward with a 32-lane slot vector, with and without the 64-register cap (second run)."""
    fn = sm.softmax_backward
    backward_configs_probe("slots-lanes", NS, [("32 lanes", with_polling(fn, lanes=32, maxnreg=0)),
                                               ("32 lanes, cap 64", with_polling(fn, lanes=32, maxnreg=64))],
                           out, DTYPES[1:])


def forward_probe(out: list) -> None:
    """Dispatcher and the slot widths, forward, per long N and dtype (the launch is capped at 64 already)."""
    forward_configs_probe("slots-forward", NS[1:], variants(sm.softmax_forward, capped=True), out, DTYPES)


def backward_probe(out: list) -> None:
    """Dispatcher, its 64-register cap and the slot widths, backward, per long N and dtype."""
    backward_configs_probe("slots-backward", NS, variants(sm.softmax_backward, capped=False), out, DTYPES)


if __name__ == "__main__":
    run_probes({"forward": forward_probe, "backward": backward_probe, "lanes": lanes_probe}, sys.argv[1:] or ["backward", "forward"],
               "probe_slots.json")
