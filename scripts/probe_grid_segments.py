"""Probe (round 144): tma-stream rows cut into a count of segments that divides the persistent grid.

Exploration, not evidence. Item i of a tma-stream launch is (row i // n_segments, segment i % n_segments) and runs on
program i mod P. Where P is not a multiple of n_segments one row a round straddles two rounds: its first segments
wait for its last ones, which start only after their programs' items of the round. Round 135 cut the grid to a
multiple of the segments and lost the programs it removed; this keeps the grid and cuts each row into a count of
segments that divides it (segments of whole 16-byte vectors, not whole tiles: both kernels read whole tiles from the
view row a segment starts in). Only `gluon_softmax._segments`' answer changes, for the probe's call; every other
choice is the table's. Three fresh inputs a shape, alternating order, every output checked against float64 first
(probe_trials.ab_trials; a ratio over 1: the variant is faster than the table).

    python scripts/probe_grid_segments.py       # on an H100 or H200; $OUT/probe_grid_segments.json
    python scripts/probe_grid_segments.py scan  # round 145: the backward's fp32 and fp16 1M at every count that fits
    python scripts/probe_grid_segments.py scan-forward  # round 145: the forward's fp32 and bf16 1M likewise
    python scripts/probe_grid_segments.py scan-lengths  # round 145: the backward's fp32 768K, 1.25M and 2M likewise
    python scripts/probe_grid_segments.py launches      # round 146: the backward's 1M on 8 KB tiles, 1 and 2 programs
    python scripts/probe_grid_segments.py scan-8k       # round 147: counts on one program of 14 slots of 8 KB tiles
    AB_BEFORE=before.py python scripts/probe_grid_segments.py table  # round 148: the table against an older module's
    AB_BEFORE=before.py python scripts/probe_grid_segments.py unseen  # round 149: ... at fp32 rows no probe had timed
    AB_BEFORE=before.py python scripts/probe_grid_segments.py lag     # round 169: the lagged row, fp32 589,824-2M
    AB_AFTER=after.py python scripts/probe_grid_segments.py candidate  # a module's table (d49d3e6's: the H200 on 8 KB
                                                                        # tiles with fill_rounds) against the tree's
"""
import os
import sys
from pathlib import Path

import torch
import triton

sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_long_rows import save_results, sm, warm_up_gpu  # noqa: E402
from probe_ab import module_from_source  # noqa: E402
from probe_tma_ctas import backward, with_attribute  # noqa: E402
from probe_trials import ab_trials, backward_case, before_module  # noqa: E402
from kernels import gluon_softmax as gs  # noqa: E402

TABLE_SEGMENTS = gs._segments

# (direction, columns, dtype): the table's segments a row on the H200, and the counts to try. The backward runs one
# program an SM (132 in the grid), the forward six (792); every row here is whole view rows.
CASES = [
    ("backward", 1048576, "float32", 37, (44, 45)),  # 44 divides 132 (3 rows a round); 45 is the control
    ("backward", 1048576, "float16", 19, (22,)),
    ("backward", 1048576, "bfloat16", 19, (22,)),
    ("backward", 524288, "float32", 19, (22,)),
    ("backward", 262144, "float32", 10, (11,)),
    ("forward", 1048576, "float32", 128, (132, 133)),  # 132 divides 792 (6 rows a round); 133 is the control
    ("forward", 1048576, "bfloat16", 64, (66,)),
    ("forward", 524288, "float32", 64, (66,)),
    ("forward", 524288, "float16", 32, (33,)),
    ("forward", 262144, "float32", 32, (33,)),
    ("forward", 262144, "float16", 16, (18,)),
    ("forward", 131072, "float32", 16, (18,)),
]


def with_segment_count(count: int, table_count: int, run):
    """run with tma-stream rows cut into count segments of whole vectors instead of the table's table_count (checked),
    each in as few slots as its span from the view row it starts in needs (at most the table's)."""
    def segments(n_cols, tile, segment_bytes, elem_bytes, width, aligned=False):
        n_segments, segment_cols, slots = TABLE_SEGMENTS(n_cols, tile, segment_bytes, elem_bytes, width, aligned)
        if n_segments != table_count:
            raise SystemExit(f"{n_cols} columns: the table cuts {n_segments} segments, the probe expected {table_count}")
        vec = 16 // elem_bytes
        cols = triton.cdiv(triton.cdiv(n_cols, count), vec) * vec
        need = triton.cdiv(cols + width - vec, tile)  # a segment starts at most width - vec into a view row
        if triton.cdiv(n_cols, cols) != count or need > slots or aligned or n_cols % width:
            raise SystemExit(f"{n_cols} columns: {count} segments of {cols} do not fit the table's {slots} slots")
        return count, cols, need
    return with_attribute(gs, "_segments", segments, run)


if __name__ == "__main__":
    warm_up_gpu()
    print(torch.cuda.get_device_name(), flush=True)
    results: list = []
    # round 145: every count of segments whose even cut fits the table's 7 slots (37 itself, cut evenly, included)
    scans = {"scan": [("backward", 1048576, "float32", 37, tuple(range(37, 49))),
                      ("backward", 1048576, "float16", 19, tuple(range(19, 27)))],
             "scan-forward": [("forward", 1048576, "float32", 128, tuple(range(130, 141))),
                              ("forward", 1048576, "bfloat16", 64, tuple(range(65, 73)))],
             "scan-lengths": [("backward", 786432, "float32", 28, tuple(range(28, 40))),
                              ("backward", 1310720, "float32", 46, tuple(range(46, 58))),
                              ("backward", 2097152, "float32", 74, tuple(range(74, 86)))]}
    modes = sys.argv[1:]
    unknown = set(modes) - set(scans) - {"launches", "scan-8k", "table", "unseen", "candidate", "lag"}
    if unknown:
        raise SystemExit(f"unknown modes: {sorted(unknown)} (see the docstring)")
    if "launches" in sys.argv[1:]:  # round 146: (programs an SM, slots of 8 KB a tensor, vectors a thread, warps)
        for k, slots, vectors, warps in [(1, 14, 4, 4), (1, 14, 2, 8), (2, 6, 4, 4), (2, 6, 2, 8)]:
            ab_trials(f"backward {k} x {slots} of 8 KB a tensor, {warps} warps of {vectors} vectors",
                      backward(k, slots, vectors, warps, 128), [(1048576, "float32"), (1048576, "bfloat16")],
                      results, baseline=sm.softmax_backward, trials=3, case=backward_case)
        for count in (45, 46):  # both levers at once, at fp32 1M
            ab_trials(f"backward 1 x 14 of 8 KB a tensor, 4 warps of 4 vectors, {count} segments",
                      with_segment_count(count, 37, backward(1, 14, 4, 4, 128)), [(1048576, "float32")],
                      results, baseline=sm.softmax_backward, trials=3, case=backward_case)
    if "scan-8k" in sys.argv[1:]:  # round 147: (columns, dtype, the table's count on 8 KB tiles, counts, warps, vectors)
        for n, dtype, table_count, counts, warps, vectors in [
                (1048576, "float32", 37, range(37, 49), 4, 4), (786432, "float32", 28, range(28, 37), 4, 4),
                (2097152, "float32", 74, range(74, 79), 4, 4), (1048576, "bfloat16", 19, range(19, 25), 8, 2)]:
            for count in counts:
                ab_trials(f"backward 1 x 14 of 8 KB a tensor, {warps} warps of {vectors} vectors, {count} segments",
                          with_segment_count(count, table_count, backward(1, 14, vectors, warps, 128)), [(n, dtype)],
                          results, baseline=sm.softmax_backward, trials=3, case=backward_case)
    if "table" in sys.argv[1:]:  # round 148: fp32 backward rows on and off view rows, and a 2-byte control
        shapes = [(n, "float32") for n in (100000, 120000, 131072, 262144, 524288, 786432, 1048576, 1310720, 2097152)]
        ab_trials("backward, the table against AB_BEFORE's", sm.softmax_backward, shapes + [(1048576, "bfloat16")],
                  results, baseline=before_module().softmax_backward, trials=3, case=backward_case)
    if "unseen" in sys.argv[1:]:  # round 149: fill_rounds at whole-view-row fp32 lengths no probe had timed
        shapes = [(n, "float32") for n in (589824, 655360, 720896, 851968, 917504, 983040, 1179648, 1572864)]
        ab_trials("backward at unseen rows, the table against AB_BEFORE's", sm.softmax_backward, shapes, results,
                  baseline=before_module().softmax_backward, trials=3, case=backward_case)
    if "lag" in sys.argv[1:]:  # round 169: the lagged backward's table row at fp32 lengths past 524,288, and controls
        shapes = [(n, "float32") for n in (589824, 655360, 720896, 786432, 851968, 917504, 983040, 1000000, 1048576,
                                           1179648, 1310720, 1572864, 1835008, 2097152, 524288)]
        ab_trials("backward, the table against AB_BEFORE's", sm.softmax_backward, shapes + [(1048576, "bfloat16")],
                  results, baseline=before_module().softmax_backward, trials=3, case=backward_case)
    if "candidate" in sys.argv[1:]:  # the table of the module at AB_AFTER against the tree's, at the table's shapes
        after = module_from_source("triton_softmax_candidate", Path(os.environ["AB_AFTER"]).read_text())
        shapes = [(n, "float32") for n in (100000, 131072, 262144, 524288, 786432, 1048576, 1179648, 2097152)]
        ab_trials("backward, AB_AFTER's table against the tree's", after.softmax_backward,
                  shapes + [(1048576, "bfloat16")], results, baseline=sm.softmax_backward, trials=3,
                  case=backward_case)
    cases = [case for mode in modes for case in scans.get(mode, [])] if modes else CASES
    for direction, n, dtype, table_count, counts in cases:
        for count in counts:
            if direction == "backward":
                ab_trials(f"backward {count} segments (table {table_count})",
                          with_segment_count(count, table_count, sm.softmax_backward), [(n, dtype)], results,
                          baseline=sm.softmax_backward, trials=3, case=backward_case)
            else:
                ab_trials(f"forward {count} segments (table {table_count})",
                          with_segment_count(count, table_count, sm.softmax_forward), [(n, dtype)], results, trials=3)
    save_results("probe_grid_segments", results)
