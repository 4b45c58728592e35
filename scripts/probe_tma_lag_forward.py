"""Probe (round 170): the tma-stream forward finishing each item one step late, on several launches.

Exploration, not evidence. Rounds 168-169 gave the H200's one-program backward back what its exchange cost (fp32 1M
+10-12%) by holding two items a program. Round 167 found the forward's launch (6 programs of 4 slots of 8 KB) no
faster with no exchange at all for 2-byte rows, and 3-4% faster for fp32 777,777 and 1M; but that is one launch's
ceiling. With the lag the wait stops deciding the launch, so launches the wait ruled out (one program an SM, whose
passes and wait ran one after another, rounds 113-114) can run again. This kernel is tma-stream's forward (rows of
whole view rows only: no loose elements; the tiles as a loop) holding two items a program in two groups of SLOTS
slots, item k + 1's pass 1 and partial before item k's wait. Against the table (triton_softmax.softmax_forward),
three fresh inputs a shape, every output checked against float64 first.

    python scripts/probe_tma_lag_forward.py           # on a Hopper GPU; $OUT/probe_tma_lag_forward.json
    AB_BEFORE=before.py python scripts/probe_tma_lag_forward.py table   # round 171: the table's lag row against
                                                                          # the module at AB_BEFORE
    python scripts/probe_tma_lag_forward.py loose     # round 173: rows off view rows (loose elements, ALIGNED cut)
    AB_BEFORE=before.py python scripts/probe_tma_lag_forward.py table-loose   # round 173: the table's new rows

The probe's kernel became gluon_softmax._tma_lag_fwd_kernel in 72d9540 (round 171); the probe now launches that one,
on each launch's programs, warps, vectors and slots (its registers and spills: scripts/compile_tma.py forward --lag).
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from kernels import gluon_softmax as gs  # noqa: E402

MAX_POLLS = 1 << 22
# (programs an SM, warps, vectors a thread, slots an item): every tile 8 KB; two items' slots a program
LAUNCHES = [(1, 8, 2, 14), (1, 16, 1, 14), (2, 8, 2, 7), (3, 4, 4, 4), (6, 4, 4, 2)]
SHAPES = [(65536, "bfloat16"), (131072, "float16"), (262144, "bfloat16"), (1048576, "float16"), (262144, "float32"),
          (1048576, "float32")]


# round 173: fp32 rows off view rows past 131,072 (777,777 the sweep's), on the table's lag launch with and without
# the ALIGNED cut, and on fewer programs of more slots an item
LOOSE_LAUNCHES = [(6, 4, 4, 2, True), (6, 4, 4, 2, False), (4, 4, 4, 3, True), (3, 4, 4, 4, True)]
LOOSE_SHAPES = [(n, "float32") for n in (777777, 500000, 1000003, 200003, 300000)]


def lag_forward(programs: int, warps: int, vectors: int, slots: int, aligned: bool = False):
    """The lagged forward on programs an SM of warps warps, two items of slots tiles each a program; aligned: rows
    off view rows cut so that only a row's first segment straddles one."""
    import torch

    def run(x: torch.Tensor) -> torch.Tensor:
        y = torch.empty_like(x)
        tile_bytes = warps * 32 * vectors * 16
        gs.tma_stream_forward(y, x, vectors, warps, 2 * slots * tile_bytes, MAX_POLLS, True, programs_per_sm=programs,
                              aligned=aligned, lag=True)
        return y
    return run


if __name__ == "__main__":
    import torch
    from probe_long_rows import save_results, sm, warm_up_gpu
    from probe_trials import ab_trials, before_module
    warm_up_gpu()
    print(torch.cuda.get_device_name(), flush=True)
    results: list = []
    if sys.argv[1:] == ["table"]:  # round 171: fp32 rows of whole view rows, and controls the row does not take
        shapes = [(n, "float32") for n in (196608, 262144, 393216, 524288, 655360, 786432, 1048576, 1310720, 2097152,
                                           131072, 777777)] + [(1048576, "bfloat16")]
        ab_trials("forward, the table against AB_BEFORE's", sm.softmax_forward, shapes, results,
                  baseline=before_module().softmax_forward, trials=3)
        save_results("probe_tma_lag_forward_table.json", results)
        raise SystemExit(0)
    if sys.argv[1:] == ["table-loose"]:  # round 173: fp32 rows off view rows, and controls the new rows do not take
        shapes = [(n, "float32") for n in (262148, 300000, 393219, 500000, 777777, 1000003, 200003, 1048576)]
        ab_trials("forward, the table against AB_BEFORE's", sm.softmax_forward, shapes + [(777777, "bfloat16")],
                  results, baseline=before_module().softmax_forward, trials=3)
        save_results("probe_tma_lag_loose_table.json", results)
        raise SystemExit(0)
    if sys.argv[1:] == ["loose"]:
        for launch in LOOSE_LAUNCHES:
            label = "forward lagged, %d programs of %d warps x %d vectors, 2 x %d slots of 8 KB, aligned %s" % launch
            ab_trials(label, lag_forward(*launch), LOOSE_SHAPES, results, trials=3)
            save_results("probe_tma_lag_loose.json", results)
        raise SystemExit(0)
    for launch in LAUNCHES:
        label = "forward lagged, %d programs of %d warps x %d vectors, 2 x %d slots of 8 KB" % launch
        ab_trials(label, lag_forward(*launch), SHAPES, results, trials=3)
    save_results("probe_tma_lag_forward.json", results)
