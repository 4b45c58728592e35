"""Probe (round 113): tma-stream with two or three programs an SM, each holding a shorter segment.

Exploration, not evidence. The product launches one tma-stream program an SM (one 224 KB segment of slots fills its
shared memory), so an SM runs an item's pass 1, its wait for sibling segments and its pass 2 one after another: HBM
reads for the next item are in flight only while pass 2 refills the slots. With two programs an SM of half the slots
(112 KB each: two fit the SM's 228 KB), one program's pass 1 and wait can overlap the other's pass 2, at the price of
twice the segments a row. The kernels are the product's; only the launch differs (the grid, through the launchers'
`launch` hook, and segment_bytes). Three fresh inputs a shape, alternating order, every output checked against
float64 first (probe_trials.ab_trials; a ratio over 1: the variant is faster than the dispatcher).

    python scripts/probe_tma_ctas.py [forward] [backward] [wide]   # on a Hopper GPU; $OUT/probe_tma_ctas.json
    AB_BEFORE=before_sm.py python scripts/probe_tma_ctas.py table  # the table against an older triton_softmax.py
    python scripts/probe_tma_ctas.py h200-rows                     # launches at the H200's rows still short
    python scripts/probe_tma_ctas.py fewer-segments                # odd rows in the fewest segments that fit
    python scripts/probe_tma_ctas.py h200-more                     # 4 programs of 3 slots; 3 of 8 narrow tiles
"""
import sys
from pathlib import Path

import torch
import triton

sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_long_rows import save_results, sm, warm_up_gpu  # noqa: E402
from probe_trials import ab_trials, backward_case  # noqa: E402
from kernels import gluon_softmax as gs  # noqa: E402

TILE_BYTES = 8 * 32 * 4 * 16  # 8 warps of 4 16-byte vectors: the product's tma-stream tile
MAX_POLLS = 1 << 20


def programs_per_sm(k: int, items_at: tuple):
    """A launch hook that runs k programs an SM (or as many as there are items); items_at: the argument positions
    of n_rows and n_segments."""
    def launch(kernel, grid, *args, **kwargs):
        items = args[items_at[0]] * args[items_at[1]]
        sms = torch.cuda.get_device_properties(args[0].device).multi_processor_count
        kernel[(min(k * sms, items),)](*args, **kwargs)
    return launch


def forward(k: int, slots: int, tile_loop: bool):
    """tma-stream's forward with k programs an SM of slots tiles each."""
    def run(x: torch.Tensor) -> torch.Tensor:
        y = torch.empty_like(x)
        gs.tma_stream_forward(y, x, 4, 8, slots * TILE_BYTES, MAX_POLLS, tile_loop, launch=programs_per_sm(k, (5, 7)))
        return y
    return run


def backward(k: int, slots: int, vectors_per_thread: int = 4, num_warps: int = 8, maxnreg: int = 128):
    """tma-stream's backward with k programs an SM of slots tiles of each tensor (a tile: vectors_per_thread x
    num_warps x 32 16-byte vectors, by default the table's 16 KB), registers capped at maxnreg (the table's 128)."""
    tile_bytes = vectors_per_thread * num_warps * 32 * 16

    def run(y: torch.Tensor, dy: torch.Tensor) -> torch.Tensor:
        dx = torch.empty_like(y)
        gs.tma_stream_backward(dx, y, dy, vectors_per_thread, num_warps, 2 * slots * tile_bytes, MAX_POLLS, maxnreg,
                               launch=programs_per_sm(k, (6, 8)))
        return dx
    return run


TWO_BYTE = [(131072, "float16"), (262144, "float16"), (1048576, "float16"), (262144, "bfloat16"),
            (100000, "float16")]
FP32 = [(131072, "float32"), (262144, "float32"), (1048576, "float32"), (100000, "float32")]
BACKWARD = [(131072, "float32"), (1048576, "float32"), (1048576, "float16")]
# "wide": the 2-byte rows the H100 runs short on (65,536 on the tile kernel, 777,777 on tile-stream), fp32 777,777,
# and four programs an SM too
WIDE_SHAPES = [(65536, "float16"), (65536, "bfloat16"), (777777, "float16"), (777777, "float32")]
FORWARD_LAUNCHES = ((1, 14, True), (2, 7, True), (2, 7, False), (3, 4, True))

def capped_forward(k: int, slots: int, vectors_per_thread: int = 4, num_warps: int = 8, part_rows: int = 0,
                   tile_loop: bool = True, aligned: bool = False):
    """The product's launch of k programs an SM of slots tiles each, as a tile loop unless told otherwise (registers
    capped at the share); a tile is vectors_per_thread x num_warps x 32 16-byte vectors (by default the table's
    16 KB), part_rows and aligned as gs.tma_stream_forward takes them."""
    tile_bytes = vectors_per_thread * num_warps * 32 * 16

    def run(x: torch.Tensor) -> torch.Tensor:
        y = torch.empty_like(x)
        gs.tma_stream_forward(y, x, vectors_per_thread, num_warps, slots * tile_bytes, MAX_POLLS, tile_loop,
                              part_rows=part_rows, programs_per_sm=k, aligned=aligned)
        return y
    return run


# "table": the working tree's table (round 113) against the module at AB_BEFORE, at every sweep shape whose launch it
# changed; then the launches at shapes left as they were: 65,536 (the tile kernel) and fp32 524,288 (one program)
CHANGED = [(100000, "float16"), (100001, "float16"), (100001, "bfloat16"), (131072, "float16"), (262144, "bfloat16"),
           (524288, "float16"), (777777, "float16"), (1048576, "bfloat16"), (100000, "float32"), (100001, "float32"),
           (131072, "float32"), (262144, "float32")]
LEFT = [(65536, "float16"), (65536, "bfloat16"), (65536, "float32"), (524288, "float32")]

SEGMENTS = gs._segments  # the product's cut, which with_fewest_segments swaps out for a call


def fewest_segments(n_cols: int, tile: int, segment_bytes: int, elem_bytes: int, width: int) -> tuple:
    """gs._segments, but rows that do not start on a view row take as few segments as fit their slots wherever in a
    view row a segment starts (most tiles less width - 1 columns), not as many as most - 1 whole tiles would."""
    if n_cols % width == 0:
        return SEGMENTS(n_cols, tile, segment_bytes, elem_bytes, width)
    most, vec = max(1, segment_bytes // (tile * elem_bytes)), 16 // elem_bytes
    room = (most * tile - (width - 1)) // vec * vec
    n_segments = triton.cdiv(n_cols, room)
    segment_cols = triton.cdiv(triton.cdiv(n_cols, n_segments), vec) * vec
    return n_segments, segment_cols, triton.cdiv(segment_cols + width - 1, tile)


def with_attribute(module, name: str, value, run):
    """run with module.name set to value for the call (restored after it, whatever happens)."""
    def patched(*args):
        before = getattr(module, name)
        setattr(module, name, value)
        try:
            return run(*args)
        finally:
            setattr(module, name, before)
    return patched


def with_fewest_segments(run):
    """run with gs._segments replaced by fewest_segments for the call."""
    return with_attribute(gs, "_segments", fewest_segments, run)


if __name__ == "__main__":
    warm_up_gpu()
    print(torch.cuda.get_device_name(), flush=True)
    results = []
    which = sys.argv[1:] or ["forward", "backward"]
    if "forward" in which or "wide" in which:
        wide = "wide" in which
        for k, slots, tile_loop in FORWARD_LAUNCHES + (((4, 3, True),) if wide else ()):
            ab_trials(f"forward {k} programs an SM x {slots} slots ({'tile loop' if tile_loop else 'unrolled'})",
                      forward(k, slots, tile_loop), TWO_BYTE + FP32 + (WIDE_SHAPES if wide else []), results,
                      trials=3)
    if "backward" in which:
        for k, slots in ((2, 3),):
            ab_trials(f"backward {k} programs an SM x {slots} slots a tensor", backward(k, slots), BACKWARD, results,
                      baseline=sm.softmax_backward, trials=3, case=backward_case)
    if "table" in which:
        from probe_trials import before_module  # noqa: E402
        ab_trials("table of round 113 against the one before", sm.softmax_forward, CHANGED, results,
                  baseline=before_module().softmax_forward, trials=3)
        for k, slots in ((3, 4), (2, 7)):
            ab_trials(f"forward {k} programs an SM x {slots} slots (tile loop, capped)", capped_forward(k, slots), LEFT,
                      results, trials=3)
    if "h200-rows" in which:  # for the next round: the H200's rows the table left short
        for label, variant in (("1 x 14 tile loop", capped_forward(1, 14)), ("2 x 7 tile loop", capped_forward(2, 7)),
                               ("2 x 7 unrolled", forward(2, 7, False))):
            ab_trials(f"forward {label}", variant, [(100000, "float16"), (100001, "bfloat16"), (524288, "float32"),
                                                    (777777, "float32")], results, trials=3)
    if "fewer-segments" in which:  # the table's own launch (2 of 7 on the H100 there), cut in fewer segments
        ab_trials("table's launch in the fewest segments that fit", with_fewest_segments(sm.softmax_forward),
                  [(100000, "float16"), (100001, "bfloat16"), (100001, "float16"), (100000, "float32"),
                   (100001, "float32"), (777777, "float16")], results, trials=3)
    if "three-fewest" in which:  # 3 of 4 on rows off view rows, cut as _segments does and in the fewest segments
        odd = [(100000, "float16"), (100001, "bfloat16"), (100000, "float32")]
        ab_trials("3 x 4 (tile loop, capped)", capped_forward(3, 4), odd, results, trials=3)
        ab_trials("3 x 4 (tile loop, capped), fewest segments", with_fewest_segments(capped_forward(3, 4)), odd,
                  results, trials=3)
    if "h200-more" in which:  # against the table: four programs of 3 slots, and three of 8 half-size tiles (4 warps)
        narrow = capped_forward(3, 8, 4, 4)  # three programs an SM of 4 warps, 8 slots of 8 KB tiles each
        more = [(65536, "float16"), (131072, "float16"), (262144, "bfloat16"), (1048576, "float16"),
                (524288, "float32"), (1048576, "float32")]
        ab_trials("4 x 3 (tile loop, capped)", capped_forward(4, 3), more, results, trials=3)
        ab_trials("3 x 8 of 8 KB, 4 warps (tile loop, capped)", narrow, more, results, trials=3)
    save_results("probe_tma_ctas.json", results)
