"""Probe: do the backward's long-row segments slow each other down by polling their row's slots?

Exploration, not evidence. probe_polls.py: fp32 segments at 1M columns re-read their slots as often as at
131,072 (about twice an item), yet run 35% slower; probe_strides.py: not the streams' strides. At 1M the 32
siblings of a row (all 32 warps of each) re-read the same 256 bytes of slots while others write them, where
at 131,072 four siblings do. Copies of kernels/triton_softmax.py whose _await_row sleeps between re-reads
(nanosleep, inline PTX), so fewer re-reads meet in L2. Each variant is checked on every element, then timed
beside the dispatcher (backward_configs_probe; the forward tile-stream polls the same way, so also timed).
Since round 26 the dispatcher line itself sleeps 500 ns on rows of 16 segments or more.

    python scripts/probe_backoff.py   # on a CUDA machine; $OUT/probe_backoff.json
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from probe_ab import rewritten  # noqa: E402
from probe_long_rows import backward_configs_probe, forward_configs_probe, run_probes  # noqa: E402

POLL = ("        packed = tl.load(ptrs, mask=in_row, other=-1, volatile=True)\n"
        "        n_missing = tl.sum((packed == 0).to(tl.int32), axis=0)\n"
        "        polls += 1\n")


def sleeping(ns: int):
    """The module with a nanosleep of ns before each re-read of the slots."""
    sleep = (f'        tl.inline_asm_elementwise("nanosleep.u32 {ns};\\n\\tmov.u32 $0, 0;", "=r,r", [polls], '
             f'dtype=tl.int32, is_pure=False, pack=1)\n')
    # the product's own sleep (round 26, rows of 16 segments or more) off, so that only this one acts
    return rewritten(f"triton_softmax_sleep{ns}", [(POLL, sleep + POLL), ("POLL_SLEEP_NS = 500\n", "POLL_SLEEP_NS = 0\n")])


def backoff_probe(out: list) -> None:
    """Backward and forward at 131,072 and 1M columns, with 0 (product), 100, 500 and 2000 ns sleeps."""
    modules = [(f"sleep {ns} ns", sleeping(ns)) for ns in (100, 500, 2000)]
    backward_configs_probe("backoff", [131072, 1048576], [(label, m.softmax_backward) for label, m in modules], out,
                           ["float32", "float16"])
    forward_configs_probe("backoff", [1048576], [(label, m.softmax_forward) for label, m in modules], out,
                          ["float32", "float16"])


if __name__ == "__main__":
    run_probes({"backoff": backoff_probe}, sys.argv[1:] or ["backoff"], "probe_backoff.json")
