"""Probe (rounds 118-127): tma-stream launches of finer tiles, more programs an SM, at rows under 90% of copy.

Exploration, not evidence. On the H200, three programs an SM of 8 slots of 8 KB tiles (4 warps) ran 2-byte rows of
777,777-1M 2.5-5% faster than the table's 3 x 4 of 16 KB (rounds 116-117): a slot is refilled after half the work.
This times, against the table (the dispatcher), at the H100's 2-byte rows under or on the 90% bar (65,536, 100,000,
100,001, 777,777) and two controls (524,288, 1M):
  - 3 x 8 of 8 KB on 4 warps (4 vectors a thread) and on 8 warps (2 vectors a thread);
  - 2 x 14 of 8 KB on 4 warps (rows off view rows in 2 segments of 13 tiles, where 2 x 7 cuts 3 of 5);
  - the table's 2 x 7 with an item's last tile asked for in boxes of 8 view rows (part_rows 8; the tile loop keeps
    one box of 16 KB, a 3-segment 100,000 row's last tile holding 7% of it).
Three fresh inputs a shape, alternating order, every output checked against float64 first (probe_trials.ab_trials; a
ratio over 1: the variant is faster).

    python scripts/probe_tma_narrow.py        # on a Hopper GPU; $OUT/probe_tma_narrow.json
    python scripts/probe_tma_narrow.py h200   # round 119: 3 x 8 of 8 KB on 4 and 8 warps at the H200's 2-byte rows
    python scripts/probe_tma_narrow.py finer  # round 120: 4 KB tiles, and 4 programs, at the H100's last rows
    python scripts/probe_tma_narrow.py four   # round 121: 4 programs of 6 slots of 8 KB, 4 and 8 warps, all shapes
    python scripts/probe_tma_narrow.py five   # round 121b: 5 x 5 and 6 x 4 of 8 KB on 4 warps at the H200's 100,000
    python scripts/probe_tma_narrow.py whole  # round 123: 4 x 6 and 5 x 5 of 8 KB at whole view rows, 2-byte and fp32
    python scripts/probe_tma_narrow.py rest   # round 124: 5 x 5 and 6 x 4 of 8 KB at the H200's other short rows
    python scripts/probe_tma_narrow.py most   # round 125: 6 x 4 at the longest rows, 7 x 3 and 8 x 3 of 8 KB
    python scripts/probe_tma_narrow.py unseen # round 126: 6 x 4 and 5 x 5 at shapes no sweep has (a rule's check)
    python scripts/probe_tma_narrow.py backward  # round 127: the backward on more programs of 8 KB tiles
    python scripts/probe_tma_narrow.py aligned   # round 129: rows off view rows cut on view rows, either GPU
    python scripts/probe_tma_narrow.py eight     # round 133: 6 programs on 8 warps of 2 vectors (or 1: 4 KB tiles)
    python scripts/probe_tma_narrow.py whole_rounds  # round 135: a grid of whole rows (no row across two rounds)
    python scripts/probe_tma_narrow.py sleep     # round 134: a sleep before each re-read of the slots (16+ segments);
                                                 # first: git apply the round-166 patch (round 134's, ported)
    python scripts/probe_tma_narrow.py dynamic   # round 137: items taken from a counter (its patch applied first)
    python scripts/probe_tma_narrow.py prefetch  # round 140: L2 asked for the next item while a segment waits;
                                                 # PREFETCH_TILES=1,2 tiles from its end; its patch applied first
"""
import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_long_rows import save_results, sm, warm_up_gpu  # noqa: E402
from probe_tma_ctas import capped_forward as launch  # noqa: E402  (programs, slots, vectors, warps, part_rows)
from probe_tma_ctas import backward, with_attribute  # noqa: E402
from probe_tma_no_exchange import require_patch  # noqa: E402
from probe_trials import ab_trials, backward_case  # noqa: E402
from kernels import gluon_softmax as gs  # noqa: E402

TABLE_LAUNCH = sm._launch


def whole_rows_grid(fn):
    """fn with its tma-stream launches' persistent grid cut to a multiple of the row's segments (where a row has
    fewer segments than the grid has programs), so that each round of the grid takes whole rows."""
    def launch(kernel, grid, *args, **kwargs):
        if kernel not in (gs._tma_stream_fwd_kernel, gs._tma_stream_bwd_kernel):
            return TABLE_LAUNCH(kernel, grid, *args, **kwargs)
        n_segments = args[7] if kernel is gs._tma_stream_fwd_kernel else args[8]
        programs = grid[0] // n_segments * n_segments if n_segments <= grid[0] else grid[0]
        return TABLE_LAUNCH(kernel, (programs,), *args, **kwargs)
    return with_attribute(sm, "_launch", launch, fn)


# the long rows rounds 137 and 140 time: 2-byte 65,536-1M and fp32 131,072-1M, whole view rows and not
LONG_FORWARD = [(65536, "bfloat16"), (100000, "float16"), (131072, "bfloat16"), (262144, "float16"),
                (524288, "bfloat16"), (777777, "float16"), (1048576, "bfloat16"), (131072, "float32"),
                (524288, "float32"), (777777, "float32"), (1048576, "float32")]


SHORT = [(65536, "bfloat16"), (100000, "float16"), (100000, "bfloat16"), (100001, "float16"), (100001, "bfloat16"),
         (777777, "bfloat16")]
CONTROLS = [(524288, "float16"), (1048576, "bfloat16")]


if __name__ == "__main__":
    warm_up_gpu()
    print(torch.cuda.get_device_name(), flush=True)
    results = []
    if sys.argv[1:] == ["h200"]:
        rows = [(100000, "float16"), (100001, "bfloat16"), (131072, "float16"), (262144, "bfloat16"),
                (524288, "float16"), (777777, "bfloat16"), (777777, "float16"), (1048576, "float16"),
                (1048576, "bfloat16")]
        ab_trials("3 x 8 of 8 KB, 8 warps", launch(3, 8, 2, 8), rows, results, trials=3)
        ab_trials("3 x 8 of 8 KB, 4 warps", launch(3, 8, 4, 4), rows, results, trials=3)
        save_results("probe_tma_narrow.json", results)
        sys.exit(0)
    if sys.argv[1:] == ["finer"]:
        rows = [(100000, "float16"), (100000, "bfloat16"), (100001, "float16"), (100001, "bfloat16"),
                (65536, "bfloat16"), (65536, "float16"), (777777, "bfloat16")]
        ab_trials("3 x 16 of 4 KB, 8 warps of 1 vector", launch(3, 16, 1, 8), rows, results, trials=3)
        ab_trials("4 x 6 of 8 KB, 8 warps of 2 vectors", launch(4, 6, 2, 8), rows, results, trials=3)
        save_results("probe_tma_narrow.json", results)
        sys.exit(0)
    if sys.argv[1:] == ["four"]:  # round 120's H100 launch, and its 4-warp twin, on either GPU, 2-byte and fp32
        rows = [(65536, "bfloat16"), (100000, "float16"), (100001, "bfloat16"), (131072, "float16"),
                (262144, "bfloat16"), (524288, "float16"), (777777, "bfloat16"), (1048576, "float16"),
                (100001, "float32"), (262144, "float32"), (524288, "float32")]
        ab_trials("4 x 6 of 8 KB, 4 warps of 4 vectors", launch(4, 6, 4, 4), rows, results, trials=3)
        ab_trials("4 x 6 of 8 KB, 8 warps of 2 vectors", launch(4, 6, 2, 8), rows, results, trials=3)
        save_results("probe_tma_narrow.json", results)
        sys.exit(0)
    if sys.argv[1:] == ["five"]:  # more programs still, where four gained most on the H200 (rows off view rows)
        rows = [(100000, "float16"), (100000, "bfloat16"), (100001, "float16"), (100001, "bfloat16"),
                (100001, "float32"), (100000, "float32")]
        ab_trials("4 x 6 of 8 KB, 4 warps of 4 vectors", launch(4, 6, 4, 4), rows, results, trials=3)
        ab_trials("5 x 5 of 8 KB, 4 warps of 4 vectors", launch(5, 5, 4, 4), rows, results, trials=3)
        ab_trials("6 x 4 of 8 KB, 4 warps of 4 vectors", launch(6, 4, 4, 4), rows, results, trials=3)
        save_results("probe_tma_narrow.json", results)
        sys.exit(0)
    if sys.argv[1:] == ["whole"]:  # round 121's launches at the rows of whole view rows, which it did not change
        rows = [(131072, "float16"), (262144, "bfloat16"), (524288, "float16"), (131072, "float32"),
                (262144, "float32"), (524288, "float32")]
        ab_trials("4 x 6 of 8 KB, 4 warps of 4 vectors", launch(4, 6, 4, 4), rows, results, trials=3)
        ab_trials("5 x 5 of 8 KB, 4 warps of 4 vectors", launch(5, 5, 4, 4), rows, results, trials=3)
        save_results("probe_tma_narrow.json", results)
        sys.exit(0)
    if sys.argv[1:] == ["rest"]:  # five and six programs where round 123 did not look: 65,536, the longest rows
        rows = [(65536, "float16"), (777777, "bfloat16"), (1048576, "float16"), (777777, "float32"),
                (1048576, "float32")]
        ab_trials("5 x 5 of 8 KB, 4 warps of 4 vectors", launch(5, 5, 4, 4), rows, results, trials=3)
        ab_trials("6 x 4 of 8 KB, 4 warps of 4 vectors", launch(6, 4, 4, 4),
                  rows[:1] + [(131072, "float16"), (262144, "bfloat16"), (524288, "float32")], results, trials=3)
        save_results("probe_tma_narrow.json", results)
        sys.exit(0)
    if sys.argv[1:] == ["most"]:  # six programs where round 124 did not run them; seven and eight programs
        ab_trials("6 x 4 of 8 KB, 4 warps of 4 vectors", launch(6, 4, 4, 4),
                  [(1048576, "float16"), (524288, "float16"), (777777, "float32"), (1048576, "float32"),
                   (131072, "float32"), (262144, "float32")], results, trials=3)
        ab_trials("7 x 3 of 8 KB, 4 warps of 4 vectors", launch(7, 3, 4, 4),
                  [(65536, "float16"), (131072, "float16"), (262144, "bfloat16"), (524288, "float32"),
                   (777777, "float32")], results, trials=3)
        ab_trials("8 x 3 of 8 KB, 4 warps of 4 vectors", launch(8, 3, 4, 4),
                  [(131072, "float16"), (262144, "bfloat16"), (524288, "float32")], results, trials=3)
        save_results("probe_tma_narrow.json", results)
        sys.exit(0)
    if sys.argv[1:] == ["backward"]:  # the forward's lever (rounds 121-126) on the backward: y and dy a slot each
        rows = [(1048576, "float32"), (131072, "float32"), (65536, "float32"), (1048576, "float16"),
                (131072, "bfloat16")]
        for k, slots in ((3, 4), (4, 3), (5, 2), (6, 2)):
            narrow = backward(k, slots, 4, 4, gs._register_share(k, 4) or 128)  # capped at the program's share
            ab_trials(f"backward {k} x {slots} of 8 KB a tensor, 4 warps of 4 vectors", narrow, rows,
                      results, baseline=sm.softmax_backward, trials=3, case=backward_case)
        save_results("probe_tma_narrow.json", results)
        sys.exit(0)
    if sys.argv[1:] == ["aligned"]:  # segments after a row's first start on a view row, using every slot
        off = [(100000, "float16"), (100001, "bfloat16"), (777777, "bfloat16"), (777777, "float16"),
               (100000, "float32"), (100001, "float32"), (300000, "float32"), (777777, "float32")]
        if sm._l2_bytes(torch.device("cuda")) >= sm.L2_60_MB:  # the H200's launches at these rows, and 6 x 4
            variants = [("4 x 6 of 8 KB, 4 warps", 4, 6, 4, 4), ("3 x 8 of 8 KB, 4 warps", 3, 8, 4, 4),
                        ("5 x 5 of 8 KB, 4 warps", 5, 5, 4, 4), ("6 x 4 of 8 KB, 4 warps", 6, 4, 4, 4)]
        else:  # the H100's, and four programs of 8 KB on 8 warps where it runs 2 x 7 of 16 KB or one program
            variants = [("4 x 6 of 8 KB, 8 warps", 4, 6, 2, 8), ("2 x 7 of 16 KB, 8 warps", 2, 7, 4, 8),
                        ("5 x 5 of 8 KB, 4 warps", 5, 5, 4, 4), ("6 x 4 of 8 KB, 4 warps", 6, 4, 4, 4)]
        for label, k, slots, vectors, warps in variants:
            for aligned in (False, True):
                ab_trials(f"{label}{', aligned' if aligned else ''}", launch(k, slots, vectors, warps, aligned=aligned),
                          off, results, trials=3)
        save_results("probe_tma_narrow.json", results)
        sys.exit(0)
    if sys.argv[1:] == ["eight"]:  # round 133: six programs on 8 warps (40 registers), twice the warps an SM
        whole = [(65536, "bfloat16"), (131072, "float16"), (262144, "bfloat16"), (1048576, "float16"),
                 (131072, "float32"), (1048576, "float32")]
        off = [(100000, "float16"), (777777, "bfloat16"), (777777, "float32")]
        ab_trials("6 x 4 of 8 KB, 8 warps of 2 vectors", launch(6, 4, 2, 8), whole, results, trials=3)
        ab_trials("6 x 8 of 4 KB, 8 warps of 1 vector", launch(6, 8, 1, 8), whole[:4], results, trials=3)
        ab_trials("6 x 4 of 8 KB, 8 warps of 2 vectors, aligned", launch(6, 4, 2, 8, aligned=True), off, results,
                  trials=3)
        save_results("probe_tma_narrow.json", results)
        sys.exit(0)
    if sys.argv[1:] == ["whole_rounds"]:  # round 135: a grid of whole rows, so no row straddles two rounds
        forward = [(262144, "float16"), (524288, "bfloat16"), (1048576, "float16"), (777777, "bfloat16"),
                   (131072, "float32"), (262144, "float32"), (524288, "float32"), (1048576, "float32"),
                   (777777, "float32"), (131072, "bfloat16")]  # the last: 8 segments, 792 programs: a control
        ab_trials("grid of whole rows", whole_rows_grid(sm.softmax_forward), forward, results, trials=3)
        backward_rows = [(1048576, "float32"), (1048576, "float16"), (131072, "float32")]
        ab_trials("grid of whole rows, backward", whole_rows_grid(sm.softmax_backward), backward_rows, results,
                  baseline=sm.softmax_backward, trials=3, case=backward_case)
        save_results("probe_tma_narrow.json", results)
        sys.exit(0)
    if sys.argv[1:] == ["sleep"]:  # round 134: a sleep before each re-read of the slots, rows of 16 segments or more
        require_patch("POLL_SLEEP_NS", "2026-11-26-round-166-poll-sleep.patch")
        forward = [(262144, "float16"), (1048576, "bfloat16"), (777777, "float16"), (131072, "float32"),
                   (1048576, "float32"), (777777, "float32"), (131072, "bfloat16")]  # the last: 8 segments, a control
        backward_rows = [(1048576, "float32"), (1048576, "float16"), (131072, "float32"), (131072, "bfloat16")]
        for ns in (200, 500, 1000):
            ab_trials(f"poll sleep {ns} ns", with_attribute(gs, "POLL_SLEEP_NS", ns, sm.softmax_forward), forward,
                      results, trials=3)
            ab_trials(f"poll sleep {ns} ns, backward", with_attribute(gs, "POLL_SLEEP_NS", ns, sm.softmax_backward),
                      backward_rows, results, baseline=sm.softmax_backward, trials=3, case=backward_case)
        save_results("probe_tma_narrow.json", results)
        sys.exit(0)
    if sys.argv[1:] == ["dynamic"]:  # round 137: each program's items after its first taken from a counter
        require_patch("DYNAMIC_ITEMS", "2026-11-26-round-137-items-from-a-counter.patch")
        ab_trials("items from a counter", with_attribute(gs, "DYNAMIC_ITEMS", True, sm.softmax_forward),
                  LONG_FORWARD, results, trials=3)
        backward_rows = [(1048576, "float32"), (1048576, "float16"), (131072, "float32"), (131072, "bfloat16")]
        ab_trials("items from a counter, backward", with_attribute(gs, "DYNAMIC_ITEMS", True, sm.softmax_backward),
                  backward_rows, results, baseline=sm.softmax_backward, trials=3, case=backward_case)
        save_results("probe_tma_narrow.json", results)
        sys.exit(0)
    if sys.argv[1:] == ["prefetch"]:  # round 140: L2 asked for the next item's tiles while a segment waits
        require_patch("PREFETCH_NEXT_L2", "2026-11-26-round-140-prefetch-next.patch")
        for tiles in [int(t) for t in os.environ.get("PREFETCH_TILES", "4").split(",")]:
            ab_trials(f"next item's last {tiles} tiles prefetched into L2 while waiting",
                      with_attribute(gs, "PREFETCH_NEXT_L2", tiles, sm.softmax_forward), LONG_FORWARD, results,
                      trials=3)
        save_results("probe_tma_narrow.json", results)
        sys.exit(0)
    if sys.argv[1:] == ["unseen"]:  # rounds 123-125's winners where no probe has looked, before a rule is drawn
        ab_trials("6 x 4 of 8 KB, 4 warps of 4 vectors", launch(6, 4, 4, 4),
                  [(65536, "bfloat16"), (65536, "float32"), (98304, "float16"), (196608, "bfloat16"),
                   (393216, "float16"), (2097152, "bfloat16"), (98304, "float32"), (196608, "float32"),
                   (393216, "float32")], results, trials=3)
        off = [(150001, "float32"), (300000, "float32"), (600001, "float32")]
        ab_trials("5 x 5 of 8 KB, 4 warps of 4 vectors", launch(5, 5, 4, 4), off, results, trials=3)
        ab_trials("6 x 4 of 8 KB, 4 warps of 4 vectors", launch(6, 4, 4, 4), off, results, trials=3)
        save_results("probe_tma_narrow.json", results)
        sys.exit(0)
    ab_trials("3 x 8 of 8 KB, 4 warps", launch(3, 8, 4, 4), SHORT + CONTROLS, results, trials=3)
    ab_trials("3 x 8 of 8 KB, 8 warps", launch(3, 8, 2, 8), SHORT + CONTROLS, results, trials=3)
    ab_trials("2 x 14 of 8 KB, 4 warps", launch(2, 14, 4, 4), SHORT[1:5], results, trials=3)
    ab_trials("2 x 7 of 16 KB, last tile in boxes of 8 view rows", launch(2, 7, 4, 8, part_rows=8), SHORT[1:5],
              results, trials=3)
    save_results("probe_tma_narrow.json", results)
