"""Probe (round 177): what the zeroed slots cost each tma-stream call: a memset node before every kernel.

Exploration, not evidence. Round 176 found the H200's 2-byte rows 2.3-2.4 points closer to copy with twice the sweep's
rows: about 3.7 us a call that does not grow with the rows, 2.6% of a 2-byte call (135 us) and half that of an fp32
one. Each tma-stream call allocates its slots with torch.zeros, which puts a memset before the kernel (a node of its
own in the sweep's CUDA graph). This times the table against the same calls with the slots allocated once, outside
the timed call, and never zeroed again: after the first call every partial is stale, so the variant's outputs are
wrong and its programs never wait (round 167: no wait at all changed the 2-byte rows by -3% to +1%). The table is
checked against float64 first; the variant is timed only. It also times a graph of the memset alone.

    python scripts/probe_slots_memset.py   # on a Hopper GPU; $OUT/probe_slots_memset.json

Round 188 asks the question again without stale slots: the table against the table with one more memset of the same
kind before it (16,384 int64), every output checked, so the difference is what one memset node costs a call.

    python scripts/probe_slots_memset.py extra   # $OUT/probe_slots_memset_extra.json
"""
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_long_rows import check, save_results, sm, timed, warm_up_gpu  # noqa: E402
from probe_tma_no_exchange import launched, with_attribute  # noqa: E402
from probe_trials import ab_trials, forward_case  # noqa: E402
from kernels import gluon_softmax as gs  # noqa: E402

SHAPES = [(65536, "bfloat16"), (100000, "float16"), (131072, "bfloat16"), (262144, "float16"), (1048576, "bfloat16"),
          (131072, "float32"), (1048576, "float32")]


class _StaleSlots:
    """torch, but int64 zeros (the slots) come from a buffer zeroed once per shape."""

    def __init__(self):
        self.buffers: dict = {}

    def __getattr__(self, name):
        return getattr(torch, name)

    def zeros(self, size, dtype=None, device=None):
        if dtype is not torch.int64:
            return torch.zeros(size, dtype=dtype, device=device)
        if size not in self.buffers:
            self.buffers[size] = torch.zeros(size, dtype=dtype, device=device)
        return self.buffers[size]


def with_extra_memset(fn):
    """fn after a memset of 16,384 int64 zeros, as each call's slots take."""
    def run(*args):
        torch.zeros(16384, dtype=torch.int64, device="cuda")
        return fn(*args)
    return run


if __name__ == "__main__":
    warm_up_gpu()
    print(torch.cuda.get_device_name(), flush=True)
    results: list = []
    if sys.argv[1:] == ["extra"]:
        ab_trials("one more memset", with_extra_memset(sm.softmax_forward), SHAPES + [(4096, "bfloat16")], results,
                  trials=3)
        save_results("probe_slots_memset_extra.json", results)
        sys.exit(0)
    for n, dtype in SHAPES:
        ratios, gbs, memset_us = [], [], []
        for trial in range(3):
            spacer = torch.empty((trial + 1) * (7 << 20), dtype=torch.uint8, device="cuda")
            m, args, moved, ref, scale = forward_case(n, dtype)
            assert check(sm.softmax_forward(*args), ref, dtype, scale)["passed"], (n, dtype)
            proxy = _StaleSlots()
            variant = with_attribute(sm.softmax_forward, gs, "torch", proxy)  # its slots from proxy
            kernels = launched(variant, args)
            pair = [("table", sm.softmax_forward), ("variant", variant)]
            times = dict((name, timed(fn, *args)["ms"]) for name, fn in (pair if trial % 2 == 0 else pair[::-1]))
            ratios.append(times["table"] / times["variant"])
            gbs.append((moved / times["table"] / 1e6, moved / times["variant"] / 1e6))
            for size in proxy.buffers:  # the memset alone, as the table's call makes it
                memset_us.append(1000 * timed(lambda: torch.zeros(size, dtype=torch.int64, device="cuda"))["ms"])
            del args, ref, scale, spacer, proxy, variant
            torch.cuda.empty_cache()
        line = {"cols": n, "dtype": dtype, "rows": m, "kernels": kernels, "ratios": ratios,
                "median_ratio": statistics.median(ratios), "gbs_table_variant": gbs, "memset_us": memset_us}
        print(f"{m}x{n} {dtype} [{' '.join(kernels)}]: stale-slots/table median {line['median_ratio']:.4f}, GB/s "
              + " ".join(f"{t:.0f}/{v:.0f}" for t, v in gbs) + " memset alone "
              + " ".join(f"{u:.2f}" for u in memset_us) + " us", flush=True)
        results.append(line)
        save_results("probe_slots_memset.json", results)
