"""Probe (round 167): how fast tma-stream streams with no exchange at all, the ceiling of any way to hide the wait.

Exploration, not evidence. Round 27 timed tile-stream with every segment taking its own partial as its row's (wrong
output, timed only): the exchange then cost 5-38% at 1M columns. tma-stream has replaced tile-stream on every long
row since, and the H200's misses are all on it. This times the table's launch against the same launch with the
kernels' NO_EXCHANGE (notes/probes/2026-11-26-round-167-no-exchange.patch, applied on the device only): every
segment normalised by its own (max, sum) or dot, with no slot written or read. The table's output is checked against
float64 on every element first; the variant's output is wrong by design and never checked, but the launch is
recorded, so a variant that left tma-stream would show. Three fresh inputs a shape, alternating which runs first.

    patch -p1 < notes/probes/2026-11-26-round-167-no-exchange.patch
    python scripts/probe_tma_no_exchange.py            # on a Hopper GPU; $OUT/probe_tma_no_exchange.json
    python scripts/probe_tma_no_exchange.py backward   # the backward's shapes only

The backward's switch is a bound on the segments that exchange (EXCHANGE_FROM, 2 in the product, 1 << 30 here), not a
second branch: Triton 3.6 failed to lower a constexpr branch beside the register tiles (REG) on the H200.
"""
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_long_rows import check, save_results, sm, timed, warm_up_gpu  # noqa: E402
from probe_trials import backward_case, forward_case  # noqa: E402
from kernels import gluon_softmax as gs  # noqa: E402

FORWARD = [(65536, "bfloat16"), (65536, "float16"), (100000, "bfloat16"), (100001, "float16"), (131072, "bfloat16"),
           (262144, "float16"), (524288, "bfloat16"), (1048576, "bfloat16"), (777777, "float16"),
           (131072, "float32"), (524288, "float32"), (777777, "float32"), (1048576, "float32")]
BACKWARD = [(1048576, "float32"), (1048576, "float16"), (131072, "float32")]


def with_attribute(fn, module, name: str, value):
    """fn with module.name set to value during each call, and set back after it."""
    def run(*args):
        before = getattr(module, name)
        setattr(module, name, value)
        try:
            return fn(*args)
        finally:
            setattr(module, name, before)
    return run


def require_patch(knob: str, patch: str) -> None:
    """Exit with a message unless gluon_softmax has knob, which only the round's patch in notes/probes adds."""
    if not hasattr(gs, knob):
        sys.exit(f"this probe needs notes/probes/{patch} applied (git apply --include='kernels/*')")


def no_exchange(fn):
    """fn with the tma-stream kernels launched with NO_EXCHANGE."""
    return with_attribute(fn, gs, "NO_EXCHANGE", True)


def launched(fn, args) -> list:
    """Names of the kernels one call of fn launches."""
    sm._launch_log = []
    try:
        fn(*args)
        torch.cuda.synchronize()
        return [kernel.fn.__name__ if hasattr(kernel, "fn") else str(kernel) for kernel, *_ in sm._launch_log]
    finally:
        sm._launch_log = None


def trials(label: str, table, shapes, case, out: list, n_trials: int = 3, variant=None) -> None:
    """The table against its NO_EXCHANGE form (or variant, timed only as well) on n_trials fresh inputs a shape."""
    variant = variant or no_exchange(table)
    for n, dtype in shapes:
        ratios, gbs = [], []
        for trial in range(n_trials):
            spacer = torch.empty((trial + 1) * (7 << 20), dtype=torch.uint8, device="cuda")
            m, args, moved, ref, scale = case(n, dtype)
            assert check(table(*args), ref, dtype, scale)["passed"], (label, n, dtype)
            kernels = launched(variant, args)
            pair = [("table", table), ("variant", variant)]
            times = dict((name, timed(fn, *args)["ms"]) for name, fn in (pair if trial % 2 == 0 else pair[::-1]))
            ratios.append(times["table"] / times["variant"])
            gbs.append((moved / times["table"] / 1e6, moved / times["variant"] / 1e6))
            del args, ref, scale, spacer
            torch.cuda.empty_cache()
        line = {"probe": label, "cols": n, "dtype": dtype, "rows": m, "ratios": ratios, "kernels": kernels,
                "median_ratio": statistics.median(ratios), "gbs_table_variant": gbs}
        print(f"{label} {m}x{n} {dtype} [{' '.join(kernels)}]: variant/table median {line['median_ratio']:.4f}, "
              "GB/s table/variant " + " ".join(f"{t:.0f}/{v:.0f}" for t, v in gbs), flush=True)
        out.append(line)


if __name__ == "__main__":
    require_patch("NO_EXCHANGE", "2026-11-26-round-167-no-exchange.patch")
    warm_up_gpu()
    print(torch.cuda.get_device_name(), flush=True)
    results = []
    if sys.argv[1:] != ["backward"]:
        trials("no exchange", sm.softmax_forward, FORWARD, forward_case, results)
    trials("no exchange, backward", sm.softmax_backward, BACKWARD, backward_case, results)
    save_results("probe_tma_no_exchange.json", results)
