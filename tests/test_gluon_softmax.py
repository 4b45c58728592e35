"""kernels/gluon_softmax.py: the tma-stream path (Gluon, CUDA compute capability 9.0 or more only).

The interpreter cannot run Gluon, so on the CPU these tests check the dispatch (which tensors may take the path), the
launch arithmetic, and the kernel compiled for sm_90 through ptxas; on a Hopper GPU they check its output against
float64 on every element, for the shapes that reach each of its code paths.

CPU: TRITON_INTERPRET=1 python -m pytest tests/test_gluon_softmax.py -q
GPU: python -m pytest tests/test_gluon_softmax.py -q
"""
import importlib
import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest
import torch

from tolerances import BACKWARD_TOL, FORWARD_TOL

INTERPRETING = os.environ.get("TRITON_INTERPRET") == "1"
if not INTERPRETING and not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU, or TRITON_INTERPRET=1 (set before triton is imported)", allow_module_level=True)

sm = importlib.import_module("kernels.triton_softmax")
gs = importlib.import_module("kernels.gluon_softmax")
DEVICE = torch.device("cpu" if INTERPRETING else "cuda")
HOPPER = not INTERPRETING and torch.cuda.get_device_capability()[0] >= 9
on_hopper = pytest.mark.skipif(not HOPPER, reason="Gluon's TMA kernel runs only on a GPU of compute capability >= 9.0")
# one program an SM of 16 KB tiles (8 warps of 4 vectors): the launch the segment tests cut for
TMA_PLAN = next(plan for plan in sm.SOFTMAX_PLANS if plan.path == "tma-stream" and plan.elem_bytes in (0, 4)
                and plan.programs_per_sm == 1 and plan.num_warps == 8)
ATOL, RTOL = FORWARD_TOL[torch.float32]


def forward_launch(plan) -> tuple:
    """A forward row's launch: for tma-stream (path, programs an SM, warps, vectors a thread, KB of slots a program,
    tile loop, aligned cut), for any other path (path,)."""
    if plan.path != "tma-stream":
        return (plan.path,)
    return (plan.path, plan.programs_per_sm, plan.num_warps, plan.rows_per_program, plan.segment_bytes // 1024,
            plan.tile_loop, plan.aligned, plan.lag)


@pytest.mark.parametrize("gpu_l2_mb", [0, 50, 60], ids=["this-device", "h100-l2", "h200-l2"])
def test_the_forward_rows_by_type_and_vectors(gpu_l2_mb, monkeypatch):
    """The forward's tma-stream rows (rounds 121-130), on both GPUs unless said: rows of whole view rows from 65,536
    columns take 6 programs an SM of 4 slots of 8 KB on 4 warps, as a tile loop; float32 rows off view rows 5 of 5
    (past 131,072 cut on view rows: ALIGNED); 2-byte rows off view rows past 131,072 (or with under 2 rows an SM)
    6 of 4, cut on view rows. 2-byte rows off view rows of 65,537-131,072 with 2 rows an SM or more take 4 programs
    of 6 slots of 8 KB: on 8 warps of 2 vectors on an L2 under 60 MB (the H100, round 120), on 4 warps of 4 vectors
    on the H200's (round 121). Only where the caller says the tensor is eligible: without that (the interpreter,
    other tensors) the same shapes take tile-stream or tile. The H200's fp32 rows of whole view rows past 131,072 (or of
    under 2 rows an SM) hold two items a program (lag, round 170), as do its fp32 rows off view rows past 262,144, on 4
    programs of 2 x 3 slots, cut on view rows (round 173). On this device, and as on a GPU of 132 SMs with the
    H100's L2 and with the H200's, so that CI checks both GPUs' rows."""
    assert gs.VIEW_ROW_BYTES[0] == sm.TMA_VIEW_ROW_BYTES
    if gpu_l2_mb:
        monkeypatch.setattr(sm, "_l2_bytes", lambda device: gpu_l2_mb << 20)
        monkeypatch.setattr(sm, "_sm_count", lambda device: 132)
    many = 2 * sm._sm_count(DEVICE)
    big_l2 = sm._l2_bytes(DEVICE) >= sm.L2_60_MB  # the H200; else (the interpreter too) the H100's rows
    six_4, five_4 = ("tma-stream", 6, 4, 4, 32, True, False, False), ("tma-stream", 5, 4, 4, 40, True, False, False)
    six_4_cut, five_4_cut = six_4[:-2] + (True, False), five_4[:-2] + (True, False)
    four_4, four_8 = ("tma-stream", 4, 4, 4, 48, True, False, False), ("tma-stream", 4, 8, 2, 48, True, False, False)
    four = four_4 if big_l2 else four_8
    for n_rows, n_cols, elem_bytes, align, launch, without in (
            (1024, 131072, 4, 4, six_4, "tile-stream"), (512, 262144, 4, 4, six_4, "tile-stream"),
            (1, 65664, 4, 4, six_4, "tile-stream"), (256, 524288, 4, 4, six_4, "tile-stream"),
            (1342, 100000, 4, 4, five_4, "tile-stream"), (1342, 100001, 4, 1, five_4, "tile-stream"),
            (many, 131076, 4, 4, five_4_cut, "tile-stream"), (many - 1, 100000, 4, 4, five_4, "tile-stream"),
            (32, 65540, 4, 4, five_4, "tile-stream"), (128, 1 << 20, 4, 4, six_4, "tile-stream"),
            (172, 777777, 4, 1, five_4_cut, "tile-stream"), (10**6, 524800, 4, 4, six_4, "tile-stream"),
            (10**6, 262148, 4, 4, five_4_cut, "tile-stream"),
            (many, 131072, 2, 8, six_4, "tile"), (many, 65792, 2, 8, six_4, "tile"),
            (many, 100000, 2, 8, four, "tile"), (many, 100001, 2, 1, four, "tile"),
            (128, 1 << 20, 2, 8, six_4, "tile-stream"), (172, 777777, 2, 1, six_4_cut, "tile-stream"),
            (256, 524288, 2, 8, six_4, "tile-stream"), (512, 262144, 2, 8, six_4, "tile-stream"),
            (many - 1, 100001, 2, 1, six_4_cut, "tile-stream")):
        if big_l2 and elem_bytes == 4 and launch == six_4 and (n_cols > 131072 or n_rows < many):
            launch = six_4[:-1] + (True,)  # the H200's fp32 rows of whole view rows, one step late (round 170)
        if big_l2 and elem_bytes == 4 and launch == five_4_cut and n_cols > 262144:
            launch = ("tma-stream", 4, 4, 4, 48, True, True, True)  # and its fp32 rows off view rows (round 173)
        plan = sm._select_plan("forward", n_rows, n_cols, elem_bytes, DEVICE, align, True)
        assert forward_launch(plan) == launch, (n_rows, n_cols, elem_bytes, plan)
        assert sm._select_plan("forward", n_rows, n_cols, elem_bytes, DEVICE, align).path == without
    for elem_bytes in (2, 4):  # rows of up to 65,536 columns keep the tile kernel where not eligible
        plan = sm._select_plan("forward", 10**6, 65536, elem_bytes, DEVICE, 16 // elem_bytes, True)
        assert forward_launch(plan) == six_4
        assert sm._select_plan("forward", 10**6, 65536, elem_bytes, DEVICE, 16 // elem_bytes).path == "tile"


@pytest.mark.parametrize("gpu_l2_mb", [0, 50, 60], ids=["this-device", "h100-l2", "h200-l2"])
def test_the_backward_rows_by_l2_and_type(gpu_l2_mb, monkeypatch):
    """The backward takes tma-stream from 65,536 columns in every type where the tensors are eligible, but on an L2
    under 60 MB (the H100) 2-byte rows of 65,537-262,144 keep stream, which led there (round 99). One program an SM
    holds 224 KB of slots, but on the H200 rows of whole view rows to 131,072 take 6 programs of 2 slots of 8 KB a
    tensor on 4 warps (round 127; off view rows they lost 22%, round 130). On this device, and as on the H100's L2
    and the H200's."""
    if gpu_l2_mb:
        monkeypatch.setattr(sm, "_l2_bytes", lambda device: gpu_l2_mb << 20)
    big_l2 = sm._l2_bytes(DEVICE) >= sm.L2_60_MB  # the H200: tma-stream everywhere; else (the interpreter) the H100's
    for n_cols, elem_bytes, path in ((65536, 2, "tma-stream"), (131072, 2, "stream"), (262144, 2, "stream"),
                                     (262152, 2, "tma-stream"), (1 << 20, 2, "tma-stream"), (65536, 4, "tma-stream"),
                                     (131072, 4, "tma-stream"), (1 << 20, 4, "tma-stream"), (524288, 4, "tma-stream"),
                                     (786432, 4, "tma-stream"),
                                     (100000, 4, "tma-stream"), (100000, 2, "stream"), (98304, 2, "stream")):
        path = "tma-stream" if big_l2 else path
        view_rows = n_cols * elem_bytes % sm.TMA_VIEW_ROW_BYTES == 0
        launch = (6, 4, 32768) if big_l2 and n_cols <= 131072 and view_rows else (1, 8, gs.SEGMENT_BYTES)
        if launch[0] == 1 and elem_bytes == 4 and n_cols > 524288 and not big_l2:
            launch = (1, 4, gs.SEGMENT_BYTES)  # fp32 rows past 524,288 on 8 KB tiles, cut by fill_rounds (round 148)
        # the H200's fp32 rows past 524,288: two items a program on 4 warps, each finished one step late (round 168)
        lag = big_l2 and elem_bytes == 4 and n_cols > 524288
        if lag:
            launch = (1, 4, gs.SEGMENT_BYTES)
        plan = sm._select_plan("backward", 64, n_cols, elem_bytes, DEVICE, 16 // elem_bytes, True)
        assert plan.path == path, (n_cols, plan)
        assert path == "stream" or (plan.programs_per_sm, plan.num_warps, plan.segment_bytes) == launch, (n_cols, plan)
        assert path == "stream" or (plan.register_tiles, plan.fill_rounds, plan.lag) == (
            0, launch[1] == 4 and not big_l2, lag), (n_cols, plan)
        assert sm._select_plan("backward", 64, n_cols, elem_bytes, DEVICE, 16 // elem_bytes).path == "stream"
    h200 = [plan for plan in sm.SOFTMAX_PLANS if plan.op == "backward" and plan.min_l2_bytes == sm.L2_60_MB]
    assert [(plan.path, plan.elem_bytes, plan.max_cols, plan.num_warps, plan.register_tiles, plan.lag)
            for plan in h200[:5]] == [
        ("tma-stream", 0, 131072, 4, 0, False), ("tma-stream", 4, 524288, 8, 0, False),
        ("tma-stream", 4, float("inf"), 4, 0, True), ("tma-stream", 4, float("inf"), 8, 2, False),
        ("tma-stream", 0, float("inf"), 8, 0, False)]


def test_the_dispatcher_passes_a_rows_cut_to_the_launcher(monkeypatch):
    """A table row's tma-stream launch reaches gluon_softmax as the row has it: its programs, tile loop and cut."""
    calls = []
    launcher = types.SimpleNamespace(tma_stream_forward=lambda *args, **kwargs: calls.append((args, kwargs)))
    monkeypatch.setattr(sm, "_gluon_softmax", lambda: launcher)
    x = torch.randn(4, 1000)
    for aligned in (False, True):
        plan = sm.Plan("forward", 1000, 0, 0, "tma-stream", 4, 0, 4, 6, 0, 32768, tile_loop=True, aligned=aligned)
        sm._run_forward_plan(torch.empty_like(x), x, plan, 4)
        args, kwargs = calls[-1]
        assert args[2:5] == (4, 4, 32768) and args[6] is True
        assert (kwargs["programs_per_sm"], kwargs["aligned"], kwargs["rows_dynamic"]) == (6, aligned, False)
    sm._run_forward_plan(torch.empty_like(x), x, plan._replace(rows_dynamic=True), 4)
    assert calls[-1][1]["rows_dynamic"] is True
    launcher.tma_stream_backward = lambda *args, **kwargs: calls.append((args, kwargs))
    plan = sm.Plan("backward", 1000, 0, 0, "tma-stream", 4, 0, 4, 6, 0, 32768, whole_vectors=True)
    sm._run_backward_plan(torch.empty_like(x), x, x, plan, 4)
    args, kwargs = calls[-1]
    assert args[3:6] == (4, 4, 32768) and kwargs["programs_per_sm"] == 6 and kwargs["register_tiles"] == 0
    sm._run_backward_plan(torch.empty_like(x), x, x, plan._replace(register_tiles=2), 4)
    assert calls[-1][1]["register_tiles"] == 2 and calls[-1][1]["lag"] is False
    sm._run_backward_plan(torch.empty_like(x), x, x, plan._replace(lag=True), 4)
    assert calls[-1][1]["lag"] is True


def test_tensors_off_a_gpu_are_never_eligible():
    """A CPU tensor (the interpreter's) never asks Gluon: the dispatcher's check stops before the import's."""
    assert not sm._tma_stream_eligible(torch.ones(2, 70000))
    assert not sm._tma_stream_eligible(torch.ones(2, 70000), "backward")
    assert not gs.tma_forward_eligible(torch.ones(2, 70000)) and not gs.tma_backward_eligible(torch.ones(2, 70000))


@pytest.mark.parametrize("shape,width", [((4, 100000), 128), ((3, 100000), 0), ((16, 524292), 64), ((1, 96), 0),
                                         ((2, 65536), 128)])
def test_view_rows_are_the_widest_that_divide_the_tensor(shape, width):
    """512-byte view rows where the element count allows, 256-byte ones else, none past that (tile-stream)."""
    assert gs._view_width(torch.empty(shape)) == width


@pytest.mark.parametrize("n_cols", [65540, 100000, 100001, 131072, 229376 // 4 * 7 + 4, 524292, 777777, 777780,
                                    1 << 20])
@pytest.mark.parametrize("width", [64, 128])
def test_segments_cover_the_row_within_shared_memory(n_cols, width):
    """Segments of whole vectors tile the row; each item's boxes, at any offset a row lets it start at in a view row,
    fit its program's slots, and the slots the shared memory. Rows that start on a view row keep whole tiles; others
    take even segments (round 108), as many as whole tiles of one slot less would."""
    tile = TMA_PLAN.num_warps * 32 * TMA_PLAN.rows_per_program * 4
    n_segments, segment_cols, slots = gs._segments(n_cols, tile, gs.SEGMENT_BYTES, 4, width)
    assert segment_cols % 4 == 0 and (n_segments - 1) * segment_cols < n_cols <= n_segments * segment_cols
    assert slots * tile * 4 <= gs.SEGMENT_BYTES
    if n_cols % width == 0:
        assert segment_cols % tile == 0 and slots == segment_cols // tile
        assert n_segments == -(-(-(-n_cols // tile)) // (gs.SEGMENT_BYTES // (tile * 4)))
    else:
        last = n_cols - (n_segments - 1) * segment_cols
        assert segment_cols - last <= n_segments * 4
        assert n_segments == -(-(-(-n_cols // tile)) // (gs.SEGMENT_BYTES // (tile * 4) - 1))
    for row in range(2 * width):  # every offset a row's segments can start at in a view row
        for segment in range(n_segments):
            first = row * n_cols + segment * segment_cols
            end = row * n_cols + min((segment + 1) * segment_cols, n_cols)
            assert -(-(end - first // width * width) // tile) <= slots


@pytest.mark.parametrize("n_cols", [65537, 65540, 100000, 100001, 150001, 200003, 777777, 777780])
@pytest.mark.parametrize("elem_bytes,slots", [(2, 4), (2, 6), (2, 8), (4, 4), (4, 5)])
def test_aligned_segments_cover_the_row_within_the_slots(n_cols, elem_bytes, slots):
    """Rows off view rows cut on view rows (the kernel's ALIGNED, round 129): for rows at every offset in a view row,
    as _segment_span cuts them, a row's segments follow one another from its first column to its last, each after
    the first starts on a view row, each fits the slots (8 KB tiles), and only a row's last may be empty."""
    tile, width = 8192 // elem_bytes, 512 // elem_bytes
    n_segments, segment_cols, planned = gs._segments(n_cols, tile, slots * 8192, elem_bytes, width, aligned=True)
    assert (segment_cols, planned) == (slots * tile, slots)
    counts = set()
    for row in range(2 * width):
        row_first, lead = row * n_cols, row * n_cols % width
        edge = row_first
        for segment in range(n_segments):  # as _segment_span computes them
            first = row_first + min(max(segment * segment_cols - lead, 0), n_cols)
            end = row_first + min((segment + 1) * segment_cols - lead, n_cols)
            assert first == edge and (end > first or segment == n_segments - 1), (row, segment)
            edge = max(end, first)
            assert segment == 0 or first % width == 0 or first == row_first + n_cols
            assert -(-(end - first // width * width) // tile) <= slots
        assert edge == row_first + n_cols
        counts.add(-(-(n_cols + lead) // segment_cols))
    assert max(counts) == n_segments  # no row has a segment too few, and some row uses every one


def edge_shift(boundary: int, n_segments: int, edge_step: int) -> int:
    """gluon_softmax._edge_shift in Python (edge_step is even, so the halving is exact either way)."""
    if not 0 < boundary < n_segments:
        return 0
    return edge_step * (2 * boundary - n_segments) // 2


def cut_span(row: int, segment: int, n_segments: int, segment_cols: int, n_cols: int, vec: int, edge_step: int):
    """(first, end) of a row's segment as _segment_span computes them with CUT and edge_step."""
    row_first, lead = row * n_cols, row * n_cols % vec
    start = segment * segment_cols - lead + edge_shift(segment, n_segments, edge_step)
    stop = (segment + 1) * segment_cols - lead + edge_shift(segment + 1, n_segments, edge_step)
    first = n_cols if segment * segment_cols >= n_cols else min(max(start, 0), n_cols)
    end = n_cols if (segment + 1) * segment_cols >= n_cols else min(stop, n_cols)
    return row_first + first, row_first + end


@pytest.mark.parametrize("share", [0.0, 0.06, 0.5])
@pytest.mark.parametrize("n_cols", [65541, 65567, 100001, 100003, 150001, 200003, 777777])
@pytest.mark.parametrize("elem_bytes,slots,warps,vectors", [(2, 6, 4, 4), (2, 6, 8, 2), (2, 8, 4, 4), (4, 5, 4, 4)])
def test_vector_cut_leaves_partial_vectors_only_at_a_rows_ends(n_cols, elem_bytes, slots, warps, vectors, share,
                                                                monkeypatch):
    """Rows of partial vectors cut evenly (the kernel's CUT, round 198): for rows at every offset in a view row, as
    _segment_span computes them, a row's segments follow one another from its first column to its last, every one
    after the first starts on a 16-byte vector, so that only a row's first and last segments hold partial vectors,
    and each fits the launch's slots at its offset in a view row (65,567: the segments' columns exceed the row's by
    one, so a row's last segment takes more than segment_cols). With a row's first and last segments shortened
    (EDGE_SHORTEN, round 203b; 0.5 asks for more than the slots or the last segment allow, and _edge_step caps it),
    each is edge_step (n_segments - 2) / 2 shorter than unshortened and every segment still fits."""
    vec, width = 16 // elem_bytes, 512 // elem_bytes
    tile = warps * 32 * vectors * 16 // elem_bytes
    n_segments, segment_cols, planned = gs._segments(n_cols, tile, slots * tile * elem_bytes, elem_bytes, width)
    assert n_cols % vec and segment_cols % vec == 0 and planned <= slots
    monkeypatch.setattr(gs, "EDGE_SHORTEN", share)
    launch = types.SimpleNamespace(n_segments=n_segments, segment_cols=segment_cols,
                                   constexprs={"SLOTS": planned, "TILE": tile})
    edge_step = gs._edge_step(launch, n_cols, width, vec)
    assert edge_step % (2 * vec) == 0 and (edge_step > 0) == (share > 0 and n_segments > 2)
    longer_last = False
    for row in range(2 * width):
        row_first = row * n_cols
        edge = row_first
        for segment in range(n_segments):
            first, end = cut_span(row, segment, n_segments, segment_cols, n_cols, vec, edge_step)
            assert first == edge and end > first, (row, segment)
            edge = end
            assert first % vec == 0 or segment == 0
            assert end % vec == 0 or segment == n_segments - 1
            assert -(-(end - first // width * width) // tile) <= planned, (row, segment)
            longer_last |= end - first > segment_cols
            if segment in (0, n_segments - 1) and n_segments > 2:  # the ends: shorter than without
                plain_first, plain_end = cut_span(row, segment, n_segments, segment_cols, n_cols, vec, 0)
                assert (end - first) == (plain_end - plain_first) - edge_step * (n_segments - 2) // 2, (row, segment)
        assert edge == row_first + n_cols
    if not edge_step:
        assert longer_last == (n_segments * segment_cols - n_cols < vec - 1)


@pytest.mark.parametrize("n_cols,tile_loop,apart", [(100000, False, True), (100001, False, True),
                                                     (777777, False, False), (131072, False, False),
                                                     (1 << 20, False, False), (100000, True, False)])
def test_last_tiles_under_half_full_are_asked_for_in_parts(n_cols, tile_loop, apart):
    """Round 111: a segment's last tile under half full (fp32 100,000: 848 of 4,096 columns) comes in boxes of
    LAST_TILE_PART_ROWS view rows; fuller ones (777,777: 2,700), whole ones (powers of two) and the tile loop (it lost
    1.2% on the H200) keep one box."""
    tile, width = TMA_PLAN.num_warps * 32 * TMA_PLAN.rows_per_program * 4, 128
    _, segment_cols, _ = gs._segments(n_cols, tile, gs.SEGMENT_BYTES, 4, width)
    part_rows = gs._last_tile_part_rows(segment_cols, tile, width, tile_loop)
    assert part_rows == (gs.LAST_TILE_PART_ROWS if apart else tile // width)


# The counts rounds 145-147 measured best on an H100 (one program an SM, 132 programs, 14 slots of 8 KB a tensor):
# fp32 1M 45 of 37-46, 786,432 34 of 28-35; 2M, 1,310,720 and 524,288 keep their fewest (74, 46, 19: the largest
# frac(132 / count) already), and so do rows off view rows and rows of one segment.
@pytest.mark.parametrize("n_cols,count", [(1 << 20, 45), (786432, 34), (1 << 21, 74), (1310720, 46), (524288, 19),
                                          (131072, 5), (100000, None), (16384, 1)])
def test_filled_segments_take_the_count_whose_rounds_end_short_of_a_row(n_cols, count):
    tile, width, programs = 2048, 128, 132
    fewest = gs._segments(n_cols, tile, gs.SEGMENT_BYTES // 2, 4, width)
    filled = gs._filled_segments(n_cols, tile, gs.SEGMENT_BYTES // 2, 4, width, programs)
    if count is None:  # off view rows: untouched
        assert filled == fewest
        return
    assert filled[0] == count
    if count == fewest[0]:
        assert filled == fewest  # the fewest keep their cut of whole tiles
    else:
        n_segments, segment_cols, slots = filled
        assert segment_cols % 4 == 0 and (n_segments - 1) * segment_cols < n_cols <= n_segments * segment_cols
        assert slots <= gs.SEGMENT_BYTES // 2 // (tile * 4) and slots * tile >= segment_cols + width - 4
        fraction = programs % n_segments / n_segments
        for other in range(fewest[0], int(fewest[0] * gs.FILL_SPREAD) + 1):
            assert programs % other / other <= fraction


def test_fill_rounds_applies_only_where_the_items_outnumber_the_programs(monkeypatch):
    """A grid of one round (2 rows of 37 segments on 132 programs) has no rounds to fill: it keeps the fewest."""
    monkeypatch.setattr(gs, "_device_facts", lambda device: (90, 132))
    for n_rows, count in ((2, 37), (40, 45)):
        shape = gs._launch_shape(torch.empty(n_rows, 1 << 20), 4, 4, gs.SEGMENT_BYTES // 2, 128, tensors=2,
                                 fill_rounds=True)
        assert shape.n_segments == count and shape.grid == (min(132, n_rows * count),)
        assert shape.constexprs["SLOTS"] == (14 if count == 37 else 12)


# Rows of whole 16 KB fp32 tiles on 2 register tiles + 7 slots (round 154): 1M in 29 segments of 9 tiles (the last
# of 4); 593,920 (145 tiles) leaves a last segment of one tile, shorter than the registers' block; 524,288 x 2-byte
# (tiles of 8,192) in 8 of 8; 1M fp32 in 8 KB tiles in 32 of 16; rows that are not whole tiles keep _segments' cut,
# and so does register_tiles 0.
@pytest.mark.parametrize("n_cols,tile,elem_bytes,expected", [
    (1 << 20, 4096, 4, (29, 36864, 7)), (593920, 4096, 4, (17, 36864, 7)), (589824, 4096, 4, (16, 36864, 7)),
    (524288, 8192, 2, (8, 65536, 6)), (1 << 20, 2048, 4, (32, 32768, 14)), (1000000, 4096, 4, None)])
def test_register_cut_holds_two_tiles_a_segment_in_registers(n_cols, tile, elem_bytes, expected):
    cut = gs._register_cut(n_cols, tile, gs.SEGMENT_BYTES // 2, elem_bytes, 2)
    assert cut == expected
    assert gs._register_cut(n_cols, tile, gs.SEGMENT_BYTES // 2, elem_bytes, 0) is None
    if cut:
        n_segments, segment_cols, slots = cut
        assert segment_cols % tile == 0 and (n_segments - 1) * segment_cols < n_cols <= n_segments * segment_cols
        assert slots * tile * elem_bytes <= gs.SEGMENT_BYTES // 2 and segment_cols == (slots + 2) * tile
        assert n_segments == -(-n_cols // ((gs.SEGMENT_BYTES // 2 // (tile * elem_bytes) + 2) * tile))  # the fewest


def test_register_tiles_reach_the_kernel_only_where_the_cut_applies(monkeypatch):
    """REG is passed (register_tiles x the tile) for rows of whole tiles; other rows keep _segments' launch, no REG."""
    monkeypatch.setattr(gs, "_device_facts", lambda device: (90, 132))
    shape = gs._launch_shape(torch.empty(40, 1 << 20), 4, 8, gs.SEGMENT_BYTES // 2, 128, tensors=2, register_tiles=2)
    assert (shape.n_segments, shape.constexprs["SLOTS"], shape.constexprs["REG"]) == (29, 7, 8192)
    for n_cols in (1000064, 1 << 20):
        register_tiles = 2 if n_cols != 1 << 20 else 0
        shape = gs._launch_shape(torch.empty(4, n_cols), 4, 8, gs.SEGMENT_BYTES // 2, 128, tensors=2,
                                 register_tiles=register_tiles)
        assert "REG" not in shape.constexprs
        assert shape.n_segments == gs._segments(n_cols, 4096, gs.SEGMENT_BYTES // 2, 4, 128)[0]


def test_a_lagged_backward_row_counts_half_the_slots_an_item(monkeypatch):
    """With lag a program's slots hold two items, so a row takes twice the segments, and a row whose segments
    outnumber the grid does not fit (fp32 1M: 74 segments of 7 tiles of 8 KB; 2M: 147 > 132) and goes to the
    table's next row, the register tiles (on the H200's L2)."""
    args = ("backward", 64, 1 << 20, 4, 4, 4, gs.SEGMENT_BYTES, 1, 132)
    assert gs.fits_grid(*args, lag=True) and gs.fits_grid(*args)
    monkeypatch.setattr(gs, "_device_facts", lambda device: (90, 132))
    shape = gs._launch_shape(torch.empty(64, 1 << 20), 4, 4, gs.SEGMENT_BYTES // 4, 128, tensors=4)
    assert (shape.n_segments, shape.constexprs["SLOTS"]) == (74, 7)
    long_args = ("backward", 64, 1 << 21, 4, 4, 4, gs.SEGMENT_BYTES, 1, 132)
    assert not gs.fits_grid(*long_args, lag=True) and gs.fits_grid(*long_args)
    monkeypatch.setattr(sm, "_interpreting", lambda: False)
    monkeypatch.setattr(sm, "_gluon_softmax", lambda: gs)
    monkeypatch.setattr(sm, "_sm_count", lambda device: 132)
    monkeypatch.setattr(sm, "_l2_bytes", lambda device: sm.L2_60_MB)
    assert sm._select_plan("backward", 64, 1 << 20, 4, DEVICE, 4, True).lag
    plan = sm._select_plan("backward", 64, 1 << 21, 4, DEVICE, 4, True)
    assert (plan.lag, plan.register_tiles) == (False, 2)


def test_the_lagged_forward_compiles_without_spills():
    """The H200's lagged forward (round 170) compiles for sm_90 with nothing spilled under its 6 programs' register
    share, in fp32 and bf16, with loose elements and the ALIGNED cut too (round 173), and 6 programs' slots fit an
    SM."""
    plan = next(plan for plan in sm.SOFTMAX_PLANS if plan.lag and plan.op == "forward")
    tile = plan.num_warps * 32 * plan.rows_per_program * 16
    env = {key: value for key, value in os.environ.items() if key != "TRITON_INTERPRET"}
    for dtype, loose in (("fp32", []), ("bf16", []), ("fp32", ["--loose", "--aligned"])):
        command = [sys.executable, "scripts/compile_tma.py", "forward", dtype, "--programs",
                   str(plan.programs_per_sm), "--warps", str(plan.num_warps), "--vectors", str(plan.rows_per_program),
                   "--slots", str(plan.segment_bytes // 2 // tile), "--lag", *loose]
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600,
                              cwd=Path(__file__).resolve().parent.parent)
        assert done.returncode == 0, done.stderr[-2000:]
        facts = json.loads(done.stdout)
        assert facts["stack"] == 0 and facts["local"] == 0 and facts["registers"] <= facts["register_cap"], facts
        assert plan.programs_per_sm * (facts["shared"] + gs.PROGRAM_RESERVED_BYTES) <= gs.SM_SHARED_BYTES, facts


def test_the_lagged_backward_compiles_without_spills():
    """The H200's lagged backward (round 168) compiles for sm_90 with nothing spilled, in fp32 and bf16, its two
    items' slots within one program's shared memory."""
    plan = next(plan for plan in sm.SOFTMAX_PLANS if plan.lag and plan.op == "backward")
    slots = plan.segment_bytes // 4 // (plan.num_warps * 32 * plan.rows_per_program * 16)
    env = {key: value for key, value in os.environ.items() if key != "TRITON_INTERPRET"}
    for dtype in ("fp32", "bf16"):
        command = [sys.executable, "scripts/compile_tma.py", "backward", dtype, "--programs", "1", "--warps",
                   str(plan.num_warps), "--vectors", str(plan.rows_per_program), "--slots", str(slots), "--lag"]
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600,
                              cwd=Path(__file__).resolve().parent.parent)
        assert done.returncode == 0, done.stderr[-2000:]
        facts = json.loads(done.stdout)
        assert facts["stack"] == 0 and facts["local"] == 0 and facts["registers"] <= 255, facts
        assert facts["shared"] <= gs.SM_SHARED_BYTES - gs.PROGRAM_RESERVED_BYTES, facts


def test_the_register_tiles_backward_compiles_without_spills():
    """The H200's fp32 backward of 2 register tiles + 7 slots of 16 KB (round 154) compiles for sm_90 with nothing
    spilled, within a thread's 255 registers and one program's share of the SM's, and the same TMA loads as without."""
    plan = next(plan for plan in sm.SOFTMAX_PLANS if plan.register_tiles)
    slots = plan.segment_bytes // 2 // (plan.num_warps * 32 * plan.rows_per_program * 16)
    env = {key: value for key, value in os.environ.items() if key != "TRITON_INTERPRET"}
    command = [sys.executable, "scripts/compile_tma.py", "backward", "fp32", "--programs", "1", "--warps",
               str(plan.num_warps), "--vectors", str(plan.rows_per_program), "--slots", str(slots), "--maxnreg",
               str(plan.maxnreg), "--register-tiles", str(plan.register_tiles)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600,
                          cwd=Path(__file__).resolve().parent.parent)
    assert done.returncode == 0, done.stderr[-2000:]
    facts = json.loads(done.stdout)
    assert facts["stack"] == 0 and facts["local"] == 0, facts
    assert facts["registers"] * plan.num_warps * 32 <= gs.SM_REGISTERS and facts["registers"] <= 255, facts
    assert facts["tma_loads"] == 4 * slots and facts["vector_stores"] >= slots + 2, facts


# Round 158: rows cut into more segments than the grid has programs wait on siblings that are not running, and ran 75x
# slower (the H100's fp32 backward at 3,145,728 and 4,194,304 columns). fill_rounds never cuts past the programs
# (3,145,728: 110, not 137); the H100's 8 KB launch cuts 4,194,304 into 147 (too many), the H200's register cut into
# 114; the forward's 6 programs an SM of 32 KB hold rows to 6,488,064 fp32 columns (792 segments).
@pytest.mark.parametrize("op,n_cols,vectors,warps,segment_bytes,programs_per_sm,fill,registers,segments", [
    ("backward", 1 << 20, 4, 4, gs.SEGMENT_BYTES, 1, True, 0, 45),
    ("backward", 3145728, 4, 4, gs.SEGMENT_BYTES, 1, True, 0, 110),
    ("backward", 4194304, 4, 4, gs.SEGMENT_BYTES, 1, True, 0, 147),
    ("backward", 4194304, 4, 8, gs.SEGMENT_BYTES, 1, False, 2, 114),
    ("forward", 6291456, 4, 4, 32768, 6, False, 0, 768), ("forward", 8388608, 4, 4, 32768, 6, False, 0, 1024)])
def test_fits_grid_counts_a_rows_segments_against_the_programs(op, n_cols, vectors, warps, segment_bytes,
                                                                programs_per_sm, fill, registers, segments):
    n_rows, elem = (1 << 27) // n_cols, 4
    tile = warps * 32 * vectors * 16 // elem
    per_tensor = segment_bytes // (2 if op == "backward" else 1)
    cut = gs._cut(n_rows, n_cols, tile, per_tensor, elem, gs._forward_width(n_rows, n_cols, elem), False, fill,
                  registers, programs_per_sm * 132)
    assert cut[0] == segments
    fits = gs.fits_grid(op, n_rows, n_cols, elem, vectors, warps, segment_bytes, programs_per_sm, 132,
                        fill_rounds=fill, register_tiles=registers)
    assert fits == (segments <= programs_per_sm * 132)


@pytest.mark.parametrize("gpu_l2_mb", [50, 60], ids=["h100-l2", "h200-l2"])
def test_rows_too_long_for_the_grid_leave_tma_stream(gpu_l2_mb, monkeypatch):
    """On a GPU of 132 SMs (not the interpreter, where programs run one after another and the check is off), a row
    whose tma-stream cut would outnumber the programs takes the next row of the table: the H100's fp32 backward at
    4,194,304 columns stream, the H200's (its register cut: 114 segments) still tma-stream; 5,000,000, not whole
    tiles, stream on both; the forward at 8,388,608 fp32 columns tile-stream, at 6,291,456 tma-stream."""
    monkeypatch.setattr(sm, "_l2_bytes", lambda device: gpu_l2_mb << 20)
    monkeypatch.setattr(sm, "_sm_count", lambda device: 132)
    monkeypatch.setattr(sm, "_interpreting", lambda: False)
    h200 = gpu_l2_mb == 60
    for op, n_cols, path in (("backward", 3145728, "tma-stream"), ("backward", 4194304, "tma-stream" if h200 else
                                                                     "stream"),
                             ("backward", 5000000, "stream"), ("forward", 6291456, "tma-stream"),
                             ("forward", 8388608, "tile-stream")):
        plan = sm._select_plan(op, (1 << 27) // n_cols, n_cols, 4, DEVICE, 4, True)
        assert plan.path == path, (op, n_cols, plan)


@pytest.mark.parametrize("op,dtype,rows,programs,warps,vectors", [
    ("forward", "bf16", "loose", 4, 8, 2), ("forward", "fp16", "whole", 4, 8, 2),  # the H100's, to 131,072
    ("forward", "bf16", "loose", 4, 4, 4), ("forward", "fp16", "whole", 4, 4, 4),  # the H200's, to 131,072
    ("forward", "fp32", "loose", 5, 4, 4), ("forward", "fp32", "whole", 5, 4, 4),
    ("forward", "fp16", "whole", 6, 4, 4), ("forward", "fp32", "whole", 6, 4, 4),  # whole view rows only
    ("backward", "fp32", "whole", 1, 8, 4), ("backward", "fp16", "whole", 1, 8, 4),
    ("backward", "fp32", "whole", 1, 4, 4),
    ("backward", "fp32", "whole", 6, 4, 4), ("backward", "bf16", "whole", 6, 4, 4)], ids=str)
def test_tma_stream_compiles_for_hopper_without_spills(op, dtype, rows, programs, warps, vectors):
    """The table's launches compile for sm_90 with nothing spilled, within a Hopper program's 227 KB of shared memory,
    and, where several programs share an SM (round 113), within its share of the SM's registers (the launch's cap)
    and of its shared memory; one TMA load a tile of each tensor (for the first item, and for the next as each slot
    frees; a tile loop has one for the first item's tiles a slot and one in each pass's loop), 16-byte stores; for
    the forward, with and without the block of loose elements (rows of partial vectors, or a tail past the last
    whole view row). The unrolled forward may ask for an item's last tile apart (round 111): one box, or a loop of
    part boxes and one of boxes aimed out of the tensor, in two places (the first item, the next), each place's loops
    to 1-8 loads."""
    elem = 4 if dtype == "fp32" else 2
    plan = next(plan for plan in sm.SOFTMAX_PLANS if plan.path == "tma-stream" and plan.op == op
                and plan.elem_bytes in (0, elem) and plan.programs_per_sm == programs and plan.num_warps == warps
                and plan.rows_per_program == vectors and not plan.aligned)
    tensors, tile_bytes = 1 if op == "forward" else 2, warps * 32 * vectors * 16
    slots = plan.segment_bytes // tensors // tile_bytes
    assert slots * tile_bytes * tensors * programs <= 14 * 16384
    env = {key: value for key, value in os.environ.items() if key != "TRITON_INTERPRET"}
    command = [sys.executable, "scripts/compile_tma.py", op, dtype, "--programs", str(programs), "--warps", str(warps),
               "--vectors", str(vectors), "--slots", str(slots), "--maxnreg", str(plan.maxnreg)]
    command += ["--loose"] * (rows == "loose") + ["--tile-loop"] * plan.tile_loop + ["--aligned"] * plan.aligned
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600,
                          cwd=Path(__file__).resolve().parent.parent)
    assert done.returncode == 0, done.stderr[-2000:]
    facts = json.loads(done.stdout)
    registers, shared, tma_loads, vector_stores = (facts[key] for key in ("registers", "shared", "tma_loads",
                                                                          "vector_stores"))
    assert facts["stack"] == 0 and facts["local"] == 0, done.stdout  # spills would show as stack or local memory
    assert 0 < registers <= facts["register_cap"] and shared <= 227 * 1024
    assert programs * (shared + gs.PROGRAM_RESERVED_BYTES) <= gs.SM_SHARED_BYTES, done.stdout
    assert programs * registers * warps * 32 <= gs.SM_REGISTERS, done.stdout
    if op == "backward":
        assert tma_loads == 2 * tensors * slots and vector_stores >= slots, done.stdout
    elif plan.tile_loop:  # a 16-byte store a thread for each of its vectors of a tile
        assert (tma_loads, vector_stores) == (slots + 2, vectors), done.stdout
    else:
        whole_tiles = 2 * (slots - 1) + 2
        assert whole_tiles + 2 <= tma_loads <= whole_tiles + 16 and vector_stores >= slots, done.stdout


@pytest.mark.parametrize("dtype", ["bf16", "fp16", "fp32"])
def test_the_forward_taking_rows_from_a_counter_compiles_without_spills(dtype):
    """The table's rows_dynamic launch (6 programs of 4 slots of 8 KB on 4 warps, tile loop, whole view rows; round
    182) compiles for sm_90 under its share of the registers with nothing spilled, with the tile loop's TMA loads and
    a 16-byte store a thread for each of its vectors of a tile, like the same launch without the counter."""
    plan = next(plan for plan in sm.SOFTMAX_PLANS if plan.rows_dynamic)
    assert (plan.path, plan.programs_per_sm, plan.num_warps, plan.rows_per_program, plan.segment_bytes,
            plan.tile_loop, plan.view_rows) == ("tma-stream", 6, 4, 4, 32768, True, True)
    env = {key: value for key, value in os.environ.items() if key != "TRITON_INTERPRET"}
    command = [sys.executable, "scripts/compile_tma.py", "forward", dtype, "--programs", "6", "--warps", "4",
               "--vectors", "4", "--slots", "4", "--tile-loop", "--rows-dynamic"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600,
                          cwd=Path(__file__).resolve().parent.parent)
    assert done.returncode == 0, done.stderr[-2000:]
    facts = json.loads(done.stdout)
    assert facts["stack"] == 0 and facts["local"] == 0 and 0 < facts["registers"] <= facts["register_cap"], facts
    assert (facts["tma_loads"], facts["vector_stores"]) == (4 + 2, 4), facts


@pytest.mark.parametrize("dtype,rows,programs,slots,warps,vectors", [
    ("bf16", "loose", 6, 4, 4, 4), ("fp16", "whole", 6, 4, 4, 4), ("fp32", "loose", 5, 5, 4, 4),
    ("fp32", "whole", 5, 5, 4, 4), ("fp16", "whole", 4, 6, 2, 8)], ids=str)
def test_aligned_launches_compile_without_spills(dtype, rows, programs, slots, warps, vectors):
    """The forward cut on view rows (ALIGNED, round 129; the table's 6 of 4 and 5 of 5, and the H100's 4 of 6 on 8
    warps) compiles for sm_90 under its share of the registers with
    nothing spilled, a tile loop's TMA loads and a 16-byte store a thread for each of its vectors of a tile."""
    env = {key: value for key, value in os.environ.items() if key != "TRITON_INTERPRET"}
    command = [sys.executable, "scripts/compile_tma.py", "forward", dtype, "--programs", str(programs), "--warps",
               str(warps), "--vectors", str(vectors), "--slots", str(slots), "--tile-loop", "--aligned"]
    done = subprocess.run(command + ["--loose"] * (rows == "loose"), env=env, capture_output=True, text=True,
                          timeout=600, cwd=Path(__file__).resolve().parent.parent)
    assert done.returncode == 0, done.stderr[-2000:]
    facts = json.loads(done.stdout)
    assert facts["stack"] == 0 and facts["local"] == 0 and facts["registers"] <= facts["register_cap"], facts
    assert (facts["tma_loads"], facts["vector_stores"]) == (slots + 2, vectors), facts


def forward_checked(x: torch.Tensor, expect_tma: bool) -> None:
    """softmax_forward(x) against float64 on every element, after checking which path the dispatcher takes."""
    align = sm._forward_align(x, x)
    plan = sm._select_plan("forward", *x.shape, x.element_size(), x.device, align, sm._tma_stream_eligible(x))
    assert (plan.path == "tma-stream") == expect_tma, plan
    atol, rtol = FORWARD_TOL[x.dtype]
    torch.testing.assert_close(sm.softmax_forward(x).double(), torch.softmax(x.double(), -1), atol=atol, rtol=rtol,
                               equal_nan=True)


def long_rows(n_rows: int, n_cols: int, seed: int = 0, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """randn * 3 with a random offset a row (distinct maxima, never zeros), in dtype on the GPU."""
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(n_rows, n_cols, generator=generator) * 3 + torch.randn(n_rows, 1, generator=generator) * 10
    return x.to(dtype).to(DEVICE)


# Why each shape: 32 x 65,540 (two segments a row, the fewest past the tile kernel's band; segments start inside view
# rows: the spare tile); 2 x 100,000 (a tail: 512-byte view rows do not divide 200,000, so its last 64 elements are
# read apart); 2 x 262,144 (2 rows of 5 segments: fewer items than SMs, programs without an item); 300 x 131,072 (more
# items than SMs: programs loop and reuse their slots, so the barriers' phases turn); 16 x 524,292 (the spare tile);
# 1 x 1M (19 segments, the widest slot vector); odd rows (partial vectors at both ends of every segment but row 0's
# first): 3 x 100,001, 5 x 777,777, 7 x 65,541 (the fewest columns), 1 x 200,003 (a tail); 1 x 122,885 (its last
# tile starts exactly at the last whole view row: a box wholly past the descriptor, which the TMA fills with zeros);
# 2-byte rows of partial vectors on the tile loop: 300 x 100,001 fp16, 300 x 65,537 bf16; even segments (round 108) of
# rows that start inside view rows, with more items than SMs: 300 x 100,000 (two of 50,000), 40 x 777,777 (14 a row).
# Several programs an SM (round 114): 200 x 131,072 bf16 (3 of 4 slots, more items than programs), 8 x 777,777 fp16
# (2 of 7, partial vectors), 4 x 524,288 fp32 (3 of 4, 32 segments a row).
@on_hopper
@pytest.mark.parametrize("n_rows,n_cols,dtype", [
    (32, 65540, torch.float32), (2, 100000, torch.float32), (2, 262144, torch.float32), (300, 131072, torch.float32),
    (16, 524292, torch.float32), (1, 1 << 20, torch.float32), (3, 100001, torch.float32),
    (5, 777777, torch.float32), (7, 65541, torch.float32), (1, 200003, torch.float32), (1, 122885, torch.float32),
    (300, 100001, torch.float16), (300, 65537, torch.bfloat16), (300, 100000, torch.float32),
    (40, 777777, torch.float32), (200, 131072, torch.bfloat16), (8, 777777, torch.float16),
    (4, 524288, torch.float32)], ids=str)
def test_tma_stream_matches_float64(n_rows, n_cols, dtype):
    forward_checked(long_rows(n_rows, n_cols, dtype=dtype), expect_tma=True)


@on_hopper
def test_two_byte_rows_off_view_rows_take_their_gpus_row():
    """300 x 100,000 fp16 (whole vectors, not whole view rows): 8 KB tiles, 4 programs on 8 warps on an L2 under 60 MB
    (the H100) and 4 on 4 warps on the H200's, each where the other lost (rounds 118-121); right on both."""
    x = long_rows(300, 100000, dtype=torch.float16)
    plan = sm._select_plan("forward", *x.shape, 2, x.device, 8, True)
    h200 = sm._l2_bytes(x.device) >= sm.L2_60_MB
    assert (plan.programs_per_sm, plan.num_warps) == ((4, 4) if h200 else (4, 8)), plan
    forward_checked(x, expect_tma=True)


# Both GPUs' 8 KB tiles (3 programs of 8 slots on 4 warps, 4 of 6 on 8 or on 4, 5 of 5 and 6 of 4 on 4) on either
# GPU, waiting for siblings and with no wait at all (the cold path, as in the test above): rows of partial vectors
# (300 x 100,001 fp16 and fp32; 8 x 777,777 bf16, 14-39 segments a row; 64 x 65,567 bf16, whose rows' last segments
# run past segment_cols under round 198's cut; 40 x 100,003 fp16), of whole vectors off view rows (300 x 100,000
# bf16 and fp32: even segments) and of whole view rows (4 x 1M fp16: 32-64 segments).
@on_hopper
@pytest.mark.parametrize("programs,slots,vectors,warps", [(3, 8, 4, 4), (4, 6, 2, 8), (4, 6, 4, 4), (5, 5, 4, 4),
                                                         (6, 4, 4, 4)])
@pytest.mark.parametrize("n_rows,n_cols,dtype", [(300, 100001, torch.float16), (8, 777777, torch.bfloat16),
                                                 (300, 100000, torch.bfloat16), (4, 1 << 20, torch.float16),
                                                 (300, 100001, torch.float32), (300, 100000, torch.float32),
                                                 (64, 65567, torch.bfloat16), (40, 100003, torch.float16)], ids=str)
def test_narrow_tiles_match_float64(n_rows, n_cols, dtype, programs, slots, vectors, warps):
    launch_checked(long_rows(n_rows, n_cols, seed=3, dtype=dtype), programs, slots, vectors, warps, aligned=False)


# A row's first and last segments shortened on the even cut (EDGE_SHORTEN, round 203b), by a share and by more than the
# slots allow (capped): rows of partial vectors of 4, 5 and 10 segments on the H200's launch (4 of 6 on 4 warps), the
# last segments of 65,567 run past segment_cols; waiting for siblings and with no wait at all (the cold path reads a
# missing sibling's segment as _segment_span cuts it, shift included).
@on_hopper
@pytest.mark.parametrize("share", [0.08, 0.5])
@pytest.mark.parametrize("n_rows,n_cols,dtype", [(300, 100001, torch.float16), (300, 100001, torch.float32),
                                                 (64, 65567, torch.bfloat16), (40, 100003, torch.float16),
                                                 (20, 200003, torch.bfloat16)], ids=str)
def test_shortened_row_ends_match_float64(n_rows, n_cols, dtype, share, monkeypatch):
    monkeypatch.setattr(gs, "EDGE_SHORTEN", share)
    launch_checked(long_rows(n_rows, n_cols, seed=5, dtype=dtype), 4, 6, 4, 4, aligned=False)


def launch_checked(x: torch.Tensor, programs: int, slots: int, vectors: int, warps: int, aligned: bool,
                   equal_nan: bool = False) -> None:
    """One tma-stream launch of 8 KB-slot programs (a tile loop) against float64 on every element, waiting for
    siblings and with no wait at all (the cold path); equal_nan: NaN where float64 has NaN (rows of only -inf)."""
    atol, rtol = FORWARD_TOL[x.dtype]
    for max_polls in (sm._max_polls(), 0):
        y = torch.empty_like(x)
        gs.tma_stream_forward(y, x, vectors, warps, slots * 8192, max_polls, True, programs_per_sm=programs,
                              aligned=aligned)
        torch.testing.assert_close(y.double(), torch.softmax(x.double(), -1), atol=atol, rtol=rtol,
                                   equal_nan=equal_nan)


# Rows off view rows cut on view rows (ALIGNED, round 129), with every slot a segment: rows of partial vectors (300 x
# 100,001 fp16 and fp32, 8 x 777,777 bf16, 7 x 65,541 fp32, 1 x 200,003 fp32: a tail past the last whole view row),
# of whole vectors (300 x 100,000 bf16: rows at many offsets, some with an empty last segment), waiting for siblings
# and with no wait at all (the cold path reads a missing sibling's segment as _segment_span cuts it).
@on_hopper
@pytest.mark.parametrize("programs,slots,vectors,warps", [(6, 4, 4, 4), (5, 5, 4, 4), (4, 6, 4, 4), (3, 8, 4, 4),
                                                         (4, 6, 2, 8)])
@pytest.mark.parametrize("n_rows,n_cols,dtype", [(300, 100001, torch.float16), (8, 777777, torch.bfloat16),
                                                 (300, 100000, torch.bfloat16), (300, 100001, torch.float32),
                                                 (7, 65541, torch.float32), (1, 200003, torch.float32)], ids=str)
def test_aligned_segments_match_float64(n_rows, n_cols, dtype, programs, slots, vectors, warps):
    launch_checked(long_rows(n_rows, n_cols, seed=4, dtype=dtype), programs, slots, vectors, warps, aligned=True)


@on_hopper
@pytest.mark.parametrize("n_cols,dtype,aligned,loose_where", [
    (100001, torch.bfloat16, False, True), (100000, torch.bfloat16, False, False),
    (200003, torch.float16, True, False), (777777, torch.bfloat16, True, True), (131072, torch.float16, True, False)],
    ids=str)
def test_the_loose_block_runs_only_where_it_pays(n_cols, dtype, aligned, loose_where):
    """LOOSE_WHERE (round 198): the block only in items with loose elements for rows of partial vectors cut evenly
    (100,001: only a row's first and last items have any) and for rows cut on view rows into 16 segments or more
    (777,777: 48 on 6 programs of 4 slots); rows of 13 (200,003) keep it in every item, rows of whole vectors have
    none. Right either way."""
    x = long_rows(8, n_cols, seed=7, dtype=dtype)
    launched = []
    gs.tma_stream_forward(torch.empty_like(x), x, 4, 4, 4 * 8192, sm._max_polls(), True, programs_per_sm=6,
                          aligned=aligned, launch=lambda kernel, grid, *args, **kwargs: launched.append(kwargs))
    (kwargs,) = launched
    assert kwargs["LOOSE_WHERE"] == loose_where, kwargs
    launch_checked(x, 6, 4, 4, 4, aligned=aligned)


# Rows of whole vectors in a tensor no view row width divides (round 193): the last elements, past the descriptor's
# last whole view row, are read and written apart by the one item that holds them (TAIL), the tiles bounded at the
# view's end, and no item carries the block of loose elements. 3 x 100,000 in each dtype (224 elements past the view
# in 2-byte types, 96 in fp32), the sweep's 1,342 x 100,000 bf16 (192) and 5 x 65,544 fp16 (40); -inf in the tail,
# and a last row of only -inf; on both GPUs' 8 KB-slot launches, waiting for siblings and with no wait at all (the
# cold path reads a missing sibling's segment from global memory, its tail included).
TAIL_SHAPES = [(3, 100000, torch.float32), (3, 100000, torch.float16), (3, 100000, torch.bfloat16),
               (1342, 100000, torch.bfloat16), (5, 65544, torch.float16)]


@on_hopper
@pytest.mark.parametrize("programs,slots,vectors,warps", [(4, 6, 4, 4), (4, 6, 2, 8), (6, 4, 4, 4)])
@pytest.mark.parametrize("n_rows,n_cols,dtype", TAIL_SHAPES, ids=str)
def test_tail_past_the_view_matches_float64(n_rows, n_cols, dtype, programs, slots, vectors, warps):
    x = long_rows(n_rows, n_cols, seed=5, dtype=dtype)
    assert n_cols % (16 // x.element_size()) == 0 and gs._view_width(x) == 0
    launch_checked(x, programs, slots, vectors, warps, aligned=False)
    x[-2, -40:] = float("-inf")  # in the tail, or just before it
    x[-1] = float("-inf")  # the row that holds the tail gives NaN, as torch
    launch_checked(x, programs, slots, vectors, warps, aligned=False, equal_nan=True)


@on_hopper
@pytest.mark.parametrize("n_rows,n_cols,dtype,tail", [(3, 100000, torch.bfloat16, 256), (4, 100000, torch.bfloat16, 0),
                                                      (3, 100001, torch.bfloat16, 0), (3, 100000, torch.float32, 128)],
                         ids=str)
def test_tail_only_where_whole_vectors_miss_the_view(n_rows, n_cols, dtype, tail):
    """TAIL (the view row's lanes) only for rows of whole vectors in a tensor no view row width divides, and then no
    loose block; whole view rows (4 x 100,000) and rows of partial vectors (3 x 100,001) as before."""
    x = long_rows(n_rows, n_cols, dtype=dtype)
    launched = []
    gs.tma_stream_forward(torch.empty_like(x), x, 4, 4, 6 * 8192, sm._max_polls(), True, programs_per_sm=4,
                          launch=lambda kernel, grid, *args, **kwargs: launched.append(kwargs))
    (kwargs,) = launched
    assert kwargs["TAIL"] == tail and (kwargs["LOOSE"] == 0 or not tail), kwargs
    assert (kwargs["LOOSE"] > 0) == (n_cols % (16 // x.element_size()) > 0), kwargs
    forward_checked(x, expect_tma=True)


@on_hopper
@pytest.mark.parametrize("n_cols", [262144, 262147])
def test_tma_stream_masks_and_extremes(n_cols):
    """-inf entries weigh 0, a row of -inf gives NaN (as torch), and values near float32's top and bottom come out
    exact: the kernel keeps its maxima in the input's units, where the log2 domain would overflow past 2.4e38. In
    whole-vector rows and in odd ones, whose loose elements take the same masks apart from the tiles."""
    x = long_rows(6, n_cols, seed=1)
    x[0, ::3] = float("-inf")
    x[1] = float("-inf")
    x[2, :1000] = 3.0e38
    x[3] = -3.0e38 + x[3]
    x[4, 200000:] = float("-inf")  # whole segments of -inf beside finite ones
    forward_checked(x, expect_tma=True)


@on_hopper
@pytest.mark.parametrize("n_cols,programs,slots,tile_loop", [(1 << 20, 1, 14, False), (777777, 1, 14, False),
                                                             (1 << 20, 3, 4, True), (777777, 2, 7, True)])
def test_tma_stream_computes_partials_its_siblings_have_not_published(n_cols, programs, slots, tile_loop):
    """With no wait at all (max_polls 0) a program computes every missing sibling's partial from global memory, the
    path that keeps a grid that is not co-resident from waiting forever: the output is the same softmax, with one
    program an SM and with several (more segments a row, registers capped)."""
    x = long_rows(3, n_cols, seed=2)
    y = torch.empty_like(x)
    gs.tma_stream_forward(y, x, TMA_PLAN.rows_per_program, TMA_PLAN.num_warps, slots * 16384, 0, tile_loop,
                          programs_per_sm=programs)
    torch.testing.assert_close(y.double(), torch.softmax(x.double(), -1), atol=ATOL, rtol=RTOL)


def test_several_programs_an_sm_share_its_registers_and_shared_memory():
    """Round 113: programs_per_sm programs cap a thread's registers at their share of the SM's 64K (in ptxas's steps
    of 8), and a launch whose slots do not fit the SM's shared memory together is refused before anything runs."""
    assert [gs._register_share(k, 8) for k in (1, 2, 3, 4)] == [0, 128, 80, 64]
    assert gs._register_share(2, 16) == 64
    x = torch.randn(2, 131072)
    for programs, slots in ((2, 8), (3, 5), (4, 4)):
        with pytest.raises(ValueError, match="do not fit"):
            gs._launch_shape(x, 4, 8, slots * 16384, 128, programs_per_sm=programs)
    with pytest.raises(ValueError, match="do not fit"):  # the backward holds two tensors' slots
        gs._launch_shape(x, 4, 8, 7 * 16384, 128, programs_per_sm=2, tensors=2)


@on_hopper
def test_tensors_the_tma_cannot_read_take_tile_stream():
    """A base off 16 bytes and rows with a gap between them: each takes tile-stream, and comes out right."""
    flat = long_rows(1, 4 * 131072 + 1, seed=3).view(-1)
    forward_checked(flat[1:].view(4, 131072), expect_tma=False)  # base 4 bytes past a 16-byte boundary
    wide = long_rows(4, 131072 + 64, seed=4)
    forward_checked(wide[:, :131072], expect_tma=False)  # row stride 131,136: not contiguous


def grad_from_output(y: torch.Tensor, dy: torch.Tensor) -> torch.Tensor:
    """dx = y * (dy - sum(y * dy)) in float64, from the y and dy the kernel reads."""
    y64, dy64 = y.double(), dy.double()
    return y64 * (dy64 - (y64 * dy64).sum(-1, keepdim=True))


def assert_grad_of(dx: torch.Tensor, y: torch.Tensor, dy: torch.Tensor) -> None:
    """dx against grad_from_output(y, dy) on every element, within BACKWARD_TOL of y's dtype (atol a fraction of the
    largest |dx|)."""
    expected = grad_from_output(y, dy)
    atol_fraction, rtol = BACKWARD_TOL[y.dtype]
    torch.testing.assert_close(dx.double(), expected, rtol=rtol, atol=atol_fraction * expected.abs().max().item())


def backward_checked(y: torch.Tensor, dy: torch.Tensor, expect_tma) -> None:
    """softmax_backward(y, dy) against float64 on every element (tolerances.BACKWARD_TOL), after checking
    the path where expect_tma says (None: either)."""
    tma = sm._tma_stream_eligible(y, "backward") and sm._tma_stream_eligible(dy, "backward")
    plan = sm._select_plan("backward", *y.shape, y.element_size(), y.device, sm._backward_align(y, y, dy), tma)
    assert expect_tma is None or (plan.path == "tma-stream") == expect_tma, plan
    assert_grad_of(sm.softmax_backward(y, dy), y, dy)


def backward_operands(n_rows: int, n_cols: int, dtype: torch.dtype, seed: int = 0):
    """y = softmax of long_rows, and a fresh randn dy, in dtype."""
    y = torch.softmax(long_rows(n_rows, n_cols, seed), -1).to(dtype)
    generator = torch.Generator().manual_seed(seed + 1)
    return y, torch.randn(n_rows, n_cols, generator=generator).to(dtype).to(DEVICE)


# Why each case: the fewest columns that take the path (65,536) in each type; rows of many segments (1M) in fp32 and
# bf16; more items than SMs (300 x 131,072 fp32); 2-byte rows the H100 leaves on stream (4 x 262,144: either path);
# segments that start inside view rows (16 x 524,296 fp16, 256-byte view rows; 300 x 100,000 fp32: even segments of
# whole vectors, round 108, with more items than SMs); fp32 rows of more items than programs, which fill_rounds cuts
# into segments of whole vectors, not whole tiles (40 x 1M: 45 segments; 48 x 786,432: 34; round 148).
@on_hopper
@pytest.mark.parametrize("n_rows,n_cols,dtype,expect_tma", [
    (16, 65536, torch.float16, True), (32, 65536, torch.bfloat16, True), (8, 65536, torch.float32, True),
    (2, 1 << 20, torch.float32, True), (2, 1 << 20, torch.bfloat16, True), (300, 131072, torch.float32, True),
    (40, 1 << 20, torch.float32, True), (48, 786432, torch.float32, True),
    (4, 262144, torch.float16, None), (16, 524296, torch.float16, True), (300, 100000, torch.float32, True)], ids=str)
def test_tma_stream_backward_matches_float64(n_rows, n_cols, dtype, expect_tma):
    backward_checked(*backward_operands(n_rows, n_cols, dtype), expect_tma)


# The H200's backward to 131,072 (round 127) on either GPU: 6 programs an SM of 2 slots of 8 KB a tensor on 4 warps,
# waiting for siblings and with no wait at all (the cold path): one segment a row, more items than programs (fp32
# 100,000 and 131,072), many segments a row (1M).
@on_hopper
@pytest.mark.parametrize("n_rows,n_cols,dtype", [(16, 65536, torch.float16), (300, 100000, torch.float32),
                                                 (1000, 131072, torch.bfloat16), (2, 1 << 20, torch.float32)], ids=str)
def test_backward_on_six_programs_matches_float64(n_rows, n_cols, dtype):
    y, dy = backward_operands(n_rows, n_cols, dtype, seed=5)
    backward_launch_checked(y, dy, 4, 4, 32768, programs_per_sm=6)


def backward_launch_checked(y, dy, vectors_per_thread, num_warps, segment_bytes, **launch) -> None:
    """gs.tma_stream_backward of (y, dy) against float64 on every element, with siblings waited for and with none
    (max_polls 0: every program computes the others' dots from global memory)."""
    for max_polls in (sm._max_polls(), 0):
        dx = torch.empty_like(y)
        gs.tma_stream_backward(dx, y, dy, vectors_per_thread, num_warps, segment_bytes, max_polls, **launch)
        assert_grad_of(dx, y, dy)


# Rows longer than the grid holds in one round of tma-stream segments (round 158): the dispatcher's backward at
# 3,145,728 fp32 columns (the H100: fill_rounds capped at the programs) and 4,194,304 (the H100: stream; the H200:
# register tiles, 114 segments), checked on every element.
@on_hopper
@pytest.mark.parametrize("n_cols", [3145728, 4194304], ids=str)
def test_the_longest_rows_backward_matches_float64(n_cols):
    y, dy = backward_operands(2, n_cols, torch.float32, seed=9)
    plan = sm._select_plan("backward", 2, n_cols, 4, DEVICE, 4, True)
    assert plan.path != "tma-stream" or sm._tma_fits("backward", plan, 2, n_cols, 4, sm._sm_count(DEVICE))
    assert_grad_of(sm.softmax_backward(y, dy), y, dy)


# Rows longer than any persistent grid of the table holds in its usual segments (round 159: the H100's stream and
# tile-stream gave wrong outputs at 8M fp32 columns, round 160 sent them to the online path): since round 163 cut into
# as many segments as run at once on the path that streams them, not online (the launch log shows which), checked on
# every element.
@on_hopper
@pytest.mark.parametrize("op", ["forward", "backward"])
def test_rows_outgrowing_every_grid_match_float64(op, monkeypatch):
    n_cols = 1 << 23
    monkeypatch.setattr(sm, "_launch_log", [])
    if op == "forward":
        x = long_rows(2, n_cols, seed=10)
        torch.testing.assert_close(sm.softmax_forward(x).double(), torch.softmax(x.double(), -1), atol=ATOL, rtol=RTOL)
    else:
        y, dy = backward_operands(2, n_cols, torch.float32, seed=10)
        assert_grad_of(sm.softmax_backward(y, dy), y, dy)
    kernels = [kernel for kernel, *_ in sm._launch_log]
    assert len(kernels) == 1 and kernels[0] not in (sm._online_fwd_kernel, sm._online_bwd_kernel), kernels


# The cold paths of the Triton kernels that exchange partials (rounds 160-162): with max_polls 0 every program computes
# its siblings' partials from global memory at once, while they publish theirs. Stream and tile-stream gave wrong
# outputs so at 262,144 and 1M columns on both GPUs, with more items than programs: each warp entered the cold path on
# its own read of the slots (and, before round 161, chose each sibling so), and the warps met at the wrong barriers.
# Exchange (4,096 and 32,768 columns: 1 and 8 chunks a row, many items a program) has the same entry.
@on_hopper
@pytest.mark.parametrize("op,n_rows,n_cols", [("forward", 128, 1 << 20), ("backward", 128, 1 << 20),
                                              ("forward", 512, 262144), ("backward", 512, 262144)], ids=str)
def test_stream_cold_paths_match_float64(op, n_rows, n_cols, monkeypatch):
    monkeypatch.setattr(sm, "_max_polls", lambda: 0)
    plan = sm._select_plan(op, n_rows, n_cols, 4, DEVICE, 4, False)
    assert plan.path in ("stream", "tile-stream"), plan
    if op == "forward":
        x = long_rows(n_rows, n_cols, seed=11)
        y = torch.empty_like(x)
        sm._launch_forward_path(y, x, plan, 4)
        torch.testing.assert_close(y.double(), torch.softmax(x.double(), -1), atol=ATOL, rtol=RTOL)
        return
    y, dy = backward_operands(n_rows, n_cols, torch.float32, seed=11)
    dx = torch.empty_like(y)
    sm._launch_backward_path(dx, y, dy, plan, 4)
    assert_grad_of(dx, y, dy)


@on_hopper
@pytest.mark.parametrize("n_rows,n_cols", [(8192, 4096), (2048, 32768)], ids=str)
def test_exchange_cold_paths_match_float64(n_rows, n_cols, monkeypatch):
    monkeypatch.setattr(sm, "_max_polls", lambda: 0)
    x = long_rows(n_rows, n_cols, seed=12)
    torch.testing.assert_close(sm.exchange_forward(x).double(), torch.softmax(x.double(), -1), atol=ATOL, rtol=RTOL)
    y, dy = backward_operands(n_rows, n_cols, torch.float32, seed=12)
    assert_grad_of(sm.exchange_backward(y, dy), y, dy)


# Register tiles (round 154) on either GPU: rows of many segments, with more items than programs (40 x 1M fp32) and
# without; a last segment shorter than the registers' block (593,920: one tile); 2-byte elements in the block (bf16);
# siblings waited for, and none (max_polls 0: every program computes the others' dots from global memory).
@on_hopper
@pytest.mark.parametrize("n_rows,n_cols,dtype", [(2, 1 << 20, torch.float32), (40, 1 << 20, torch.float32),
                                                 (5, 593920, torch.float32), (3, 1 << 20, torch.bfloat16)], ids=str)
def test_backward_with_register_tiles_matches_float64(n_rows, n_cols, dtype):
    backward_launch_checked(*backward_operands(n_rows, n_cols, dtype, seed=8), 4, 8, gs.SEGMENT_BYTES, register_tiles=2)


# The forward holding two items a program (round 170) on either GPU, on the table's 6 programs of 2 x 2 slots of 8 KB:
# rows of whole view rows of many segments with more items than programs (300 x 131,072 fp32: 4 segments; 2 x 1M:
# 64), of one segment (40 x 8,192: the carried max and sum), bf16 and fp16; -inf masks and a row of only -inf (NaN, as
# torch); siblings waited for, and none (max_polls 0).
@on_hopper
@pytest.mark.parametrize("n_rows,n_cols,dtype", [(300, 131072, torch.float32), (2, 1 << 20, torch.float32),
                                                 (40, 8192, torch.float32), (64, 262144, torch.bfloat16),
                                                 (16, 65536, torch.float16)], ids=str)
def test_forward_finished_one_step_late_matches_float64(n_rows, n_cols, dtype):
    x = long_rows(n_rows, n_cols, seed=14, dtype=dtype)
    x[0, ::7] = float("-inf")
    x[-1] = float("-inf")
    atol, rtol = FORWARD_TOL[dtype]
    for max_polls in (sm._max_polls(), 0):
        y = torch.empty_like(x)
        gs.tma_stream_forward(y, x, 4, 4, 32768, max_polls, True, programs_per_sm=6, lag=True)
        torch.testing.assert_close(y.double(), torch.softmax(x.double(), -1), atol=atol, rtol=rtol, equal_nan=True)


# The lagged forward on rows off view rows (round 173), on the table's 6 programs of 2 x 2 slots: loose elements (each
# row's head and foot outside whole vectors, the tail past the last whole view row) with the ALIGNED cut (3 x 777,777
# fp32: a row's first segment straddles a view row, later ones start on one; 20 x 777,777: more items than programs)
# and without it (3 x 777,777: every segment straddles), rows of whole vectors off view rows (4 x 100,000 fp32), 2-byte
# rows (7 x 100,001 bf16), rows of one segment with loose elements (6 x 1,003 fp16); -inf masks and a row of only -inf;
# siblings waited for, and none (max_polls 0).
@on_hopper
@pytest.mark.parametrize("n_rows,n_cols,dtype,aligned", [(3, 777777, torch.float32, True),
                                                         (20, 777777, torch.float32, True),
                                                         (3, 777777, torch.float32, False),
                                                         (4, 100000, torch.float32, True),
                                                         (7, 100001, torch.bfloat16, False),
                                                         (6, 1003, torch.float16, False)], ids=str)
def test_the_lagged_forward_off_view_rows_matches_float64(n_rows, n_cols, dtype, aligned):
    x = long_rows(n_rows, n_cols, seed=15, dtype=dtype)
    x[0, ::7] = float("-inf")
    x[0, :3] = float("-inf")  # the head's loose elements masked too
    x[-1] = float("-inf")
    atol, rtol = FORWARD_TOL[dtype]
    for max_polls in (sm._max_polls(), 0):
        y = torch.empty_like(x)
        gs.tma_stream_forward(y, x, 4, 4, 32768, max_polls, True, programs_per_sm=6, aligned=aligned, lag=True)
        torch.testing.assert_close(y.double(), torch.softmax(x.double(), -1), atol=atol, rtol=rtol, equal_nan=True)


# Whole rows from a counter (rows_dynamic, round 182), launched directly and checked to take it: the table's 6
# programs of 4 slots on rows of 2 segments (4,000 x 32,768 bf16: a grid of 6 programs an SM is always whole groups of
# 2), of 4 (3,000 x 65,536 bf16: more rows than groups, which take different numbers of rows), of 8 where the grid is
# whole groups of 8 (700 x 131,072 fp16, 900 x 65,536 fp32); 5 programs an SM on rows off view rows (1,500 x 65,537
# bf16: loose elements, 6 segments a row); -inf masks and a row of only -inf; siblings waited for, and none
# (max_polls 0: every program computes its missing siblings' partials itself).
@on_hopper
@pytest.mark.parametrize("n_rows,n_cols,dtype,programs", [(4000, 32768, torch.bfloat16, 6),
                                                          (3000, 65536, torch.bfloat16, 6),
                                                          (700, 131072, torch.float16, 6),
                                                          (900, 65536, torch.float32, 6),
                                                          (1500, 65537, torch.bfloat16, 5)], ids=str)
def test_rows_taken_from_a_counter_match_float64(n_rows, n_cols, dtype, programs):
    x = long_rows(n_rows, n_cols, seed=16, dtype=dtype)
    x[0, ::7] = float("-inf")
    x[-1] = float("-inf")
    atol, rtol = FORWARD_TOL[dtype]
    sms = torch.cuda.get_device_properties(x.device).multi_processor_count
    elem = x.element_size()
    segments = gs._cut(n_rows, n_cols, 4 * 32 * 4 * 16 // elem, 32768, elem, gs._forward_width(n_rows, n_cols, elem),
                       False, False, 0, 0)[0]
    if programs * sms % segments:
        pytest.skip(f"{programs} x {sms} programs are not whole groups of {segments}")
    for max_polls in (sm._max_polls(), 0):
        y, seen = torch.empty_like(x), {}

        def launch(kernel, grid, *args, **kwargs):
            seen.update(kwargs)
            kernel[grid](*args, **kwargs)
        gs.tma_stream_forward(y, x, 4, 4, 32768, max_polls, True, launch=launch, programs_per_sm=programs,
                              rows_dynamic=True)
        assert seen["ROWS_DYNAMIC"] is True
        torch.testing.assert_close(y.double(), torch.softmax(x.double(), -1), atol=atol, rtol=rtol, equal_nan=True)


# Two items a program, each finished one step late (round 168) on either GPU: rows of many segments with more items
# than programs (2 x 1M fp32: 74 segments; 40 x 1M) and of one segment (4 x 8,192: the carried dot, no exchange);
# segments that start inside view rows (3 x 1,000,000 fp32: 256-byte view rows, an even cut in whole vectors);
# 2-byte elements (bf16); siblings waited for, and none (max_polls 0).
@on_hopper
@pytest.mark.parametrize("n_rows,n_cols,dtype", [(2, 1 << 20, torch.float32), (40, 1 << 20, torch.float32),
                                                 (4, 8192, torch.float32), (3, 1000000, torch.float32),
                                                 (3, 1 << 20, torch.bfloat16)], ids=str)
def test_backward_finished_one_step_late_matches_float64(n_rows, n_cols, dtype):
    backward_launch_checked(*backward_operands(n_rows, n_cols, dtype, seed=13), 4, 4, gs.SEGMENT_BYTES, lag=True)


@on_hopper
def test_tma_stream_backward_computes_missing_dots_itself():
    """max_polls 0: every program computes its siblings' dots from global memory, and dx is the same."""
    y, dy = backward_operands(3, 1 << 20, torch.float32, seed=6)
    dx = torch.empty_like(y)
    plan = sm._select_plan("backward", 3, 1 << 20, 4, DEVICE, 4, True)
    gs.tma_stream_backward(dx, y, dy, plan.rows_per_program, plan.num_warps, plan.segment_bytes, 0, plan.maxnreg,
                           register_tiles=plan.register_tiles, lag=plan.lag)
    assert_grad_of(dx, y, dy)


@on_hopper
def test_backward_operands_the_tma_cannot_read_take_stream():
    """A dy with a gap between its rows (an upstream gradient's view) sends the backward to stream, right."""
    y, dy = backward_operands(4, 131072, torch.float32, seed=7)
    wide = torch.randn(4, 131072 + 64, device=DEVICE)
    wide[:, :131072] = dy
    backward_checked(y, wide[:, :131072], expect_tma=False)


def test_launch_facts_know_a_tma_tile():
    """The runs' compile facts give a tma-stream launch's block as one tile (its TILE), as they give tile-stream's."""
    assert sm._block_lanes({"TILE": 4096, "SLOTS": 14, "VEC": 4}) == 4096
    assert sm._block_lanes({"TILE_ROWS": 2048, "VEC": 4}) == 8192  # tile-stream's, unchanged


@on_hopper
def test_tma_stream_launches_are_logged_for_compile_facts():
    """A dispatcher call that takes tma-stream records its compiled kernel, so a run's results name the kernel and its
    registers and spills (sm.compile_facts)."""
    facts = sm.compile_facts("softmax_forward", long_rows(2, 262144))
    assert [fact["kernel"] for fact in facts] == ["_tma_stream_fwd_kernel"] and facts[0]["n_spills"] == 0
    facts = sm.compile_facts("softmax_backward", long_rows(2, 262144))
    assert [fact["kernel"] for fact in facts][-1] == "_tma_stream_bwd_kernel"
