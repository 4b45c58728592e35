"""Probe (round 172, prepared; not run): 2-byte long rows cut into segments held in registers, as row-tiles holds a row.

Exploration, not evidence. Round 167 found the H200's 2-byte forward rows from 65,536 columns held by tma-stream's
passes, not its exchange: with no exchange at all they still ran at 82-85% of copy, and no launch with the lag did
better (round 170). The row-tiles kernel, which holds a whole 2-byte row of up to 57,344 columns in registers in its
own type (two programs of 8 warps an SM, 128 registers a thread), runs bf16 40,000 at 95% of copy on the H200: a packed
max, one exp an element for the sum, and one FMA and exp an element for the write, with the row's loads all in flight
at once. This kernel cuts a row into segments of up to segment_cols columns, each held that way by one program of a
persistent grid, and exchanges the segments' (max, sum) through slots as the exchange kernel does (its cold path too,
for a grid that is not co-resident). Rows of whole 16-byte vectors only; the exponent is taken in log2 units, which
holds for inputs under about 1e38 in magnitude (the table's kernels guard bf16 rows beyond it; this probe does not).

    TRITON_INTERPRET=1 python scripts/probe_segment_tiles.py check   # no GPU: every output against float64
    python scripts/probe_segment_tiles.py                            # on a CUDA GPU; $OUT/probe_segment_tiles.json

Offline (sm_90, Triton 3.8), under each launch's register share: 128 registers at 32,768 columns on 2 programs (stack
144 bytes bf16, 40 fp16), 64 at 16,384 on 4 (80 bytes), 128 at 49,152 (88 bytes): some spills sit in the loads'
part, so a first step on a GPU is to look for a spill-free form (row-tiles' own kernel keeps 57,344 columns under 128).

Prediction, written before any run (for the next session with device time, on an H200): segments of 32,768 columns on
two programs of 8 warps an SM run bf16 and fp16 65,536 at 88-93% of copy (against the table's 85.8-86.3%), 100,000 in
two segments of 50,000 near 65,536's rate, and 262,144-1M (8-32 segments) at 84-90%, where each item waits for more
siblings with its registers full; segments of 16,384 columns on four programs an SM between the two. If 65,536 and
100,000 gain 3% or more over the table, a table row for the H200's 2-byte rows of 65,536-131,072 follows.
"""
import os
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from kernels.triton_softmax import LOG2E, _anywhere, _await_row, _combine_partials, _pack, _widen_kept  # noqa: E402

# (columns a segment, warps, programs an SM, lanes a tile): 32,768 columns as 8 tiles of 4,096 lanes on 8 warps (64
# registers a thread for the segment in its own type, as row-tiles at 32,768), and 16,384 on 4 programs
LAUNCHES = [(32768, 8, 2, 4096), (16384, 8, 4, 4096), (49152, 8, 2, 4096), (16384, 4, 4, 2048)]
COMPILED: dict = {}
SHAPES = [(65536, "bfloat16"), (65536, "float16"), (100000, "bfloat16"), (100000, "float16"), (131072, "bfloat16"),
          (262144, "float16"), (1048576, "bfloat16")]


@triton.jit
def _merge(run_max, run_sum, x):
    """The running (max, sum of exp(x - max)) of a segment with one more tile x (float32, -inf where masked)."""
    tile_max = tl.max(x, axis=0)
    new_max = tl.maximum(run_max, tile_max)
    safe_max = tl.where(new_max == float("-inf"), 0.0, new_max)
    return new_max, run_sum * tl.exp(run_max - safe_max) + tl.sum(tl.exp(x - safe_max), axis=0)


@triton.jit
def _segment_tiles_fwd_kernel(output_ptr, input_ptr, slots_ptr, n_rows, n_cols, n_segments, segment_cols, max_polls,
                              N_TILES: tl.constexpr, TILE: tl.constexpr, SEGMENTS_BLOCK: tl.constexpr,
                              ALIGN: tl.constexpr, PTX: tl.constexpr, COLD: tl.constexpr = True):
    """Softmax of a contiguous [n_rows, n_cols] input, (row, segment) items on a persistent grid: each segment held in
    N_TILES register tiles of TILE lanes in the input's own type, its (max, sum) published to its slot, the row's
    read back once every sibling has published, then the segment written from the registers."""
    n_cols = n_cols // ALIGN * ALIGN  # rows of whole 16-byte vectors (host-checked)
    segment_cols = segment_cols // ALIGN * ALIGN
    cols = tl.arange(0, TILE)
    in_type: tl.constexpr = input_ptr.dtype.element_ty
    keep_max: tl.constexpr = in_type == tl.float16 or (in_type == tl.bfloat16 and PTX)
    for item in range(tl.program_id(0), n_rows * n_segments, tl.num_programs(0)):
        row = item // n_segments
        first = (item - row * n_segments) * segment_cols
        seg_len = tl.minimum(segment_cols, n_cols - first)
        base = row.to(tl.int64) * n_cols + first
        lane_max = tl.full([TILE], float("-inf"), in_type if keep_max else tl.float32)
        tiles = ()  # unrolled at compile time: tiles[k] holds the segment's columns [k * TILE, (k + 1) * TILE)
        for k in tl.static_range(N_TILES):
            x = tl.load(input_ptr + base + k * TILE + cols, mask=k * TILE + cols < seg_len, other=float("-inf"))
            if keep_max and in_type == tl.bfloat16:  # two lanes an instruction, as float16's compiles
                lane_max = tl.inline_asm_elementwise("max.bf16x2 $0, $1, $2;", "=r,r,r", [lane_max, x],
                                                     dtype=tl.bfloat16, is_pure=True, pack=2)
            elif keep_max:
                lane_max = tl.maximum(lane_max, x)
            else:
                lane_max = tl.maximum(lane_max, x.to(tl.float32))
            tiles = tiles + (x,)
        seg_max = tl.max(lane_max, axis=0).to(tl.float32)
        scaled_max = tl.where(seg_max == float("-inf"), 0.0, seg_max) * LOG2E
        lane_sum = tl.zeros([TILE], tl.float32)
        for k in tl.static_range(N_TILES):
            lane_sum += tl.exp2(tiles[k].to(tl.float32) * LOG2E - scaled_max)
        seg_sum = tl.sum(lane_sum, axis=0)
        if n_segments > 1:
            # never 0: a finite max has sum >= 1, and -inf's bits are not 0
            tl.atomic_xchg(slots_ptr + item, _pack(seg_max, seg_sum), sem="relaxed")
            packed, n_missing, in_row = _await_row(slots_ptr, row, n_segments, max_polls, SEGMENTS_BLOCK)
            if COLD and _anywhere(n_missing > 0):  # COLD False: the grid must be co-resident (no cold path)
                # siblings not running (not co-resident, or the sequential interpreter): their partials from the
                # input, published so that later siblings need not
                for sibling in range(0, n_segments):
                    slot = slots_ptr + row * n_segments + sibling
                    if _anywhere(tl.load(slot, volatile=True) == 0):
                        s_first = sibling * segment_cols
                        s_len = tl.minimum(segment_cols, n_cols - s_first)
                        s_max = tl.max(tl.full([TILE], float("-inf"), tl.float32), axis=0)
                        s_sum = tl.sum(tl.zeros([TILE], tl.float32), axis=0)
                        for start in range(0, s_len, TILE):
                            s_x = tl.load(input_ptr + row.to(tl.int64) * n_cols + s_first + start + cols,
                                          mask=start + cols < s_len, other=float("-inf")).to(tl.float32)
                            s_max, s_sum = _merge(s_max, s_sum, s_x)
                        tl.atomic_xchg(slot, _pack(s_max, s_sum), sem="relaxed")
                packed = _await_row(slots_ptr, row, n_segments, 1 << 30, SEGMENTS_BLOCK)[0]
            row_max, inv_row_sum = _combine_partials(packed, in_row)
        else:
            row_max = seg_max
            inv_row_sum = 1.0 / seg_sum  # a fully -inf row: 1 / 0, and the write's -inf - -inf gives NaN, as torch
        # y = exp2(x log2(e) - (max log2(e) + log2(sum))): one FMA and one exp an element; the tiles widened again,
        # by operations the compiler cannot merge with the sum's widening, so that they stay live across the
        # exchange in their own type (row-tiles' _widen_kept: half the registers)
        shift = row_max * LOG2E - tl.log2(inv_row_sum)
        opaque_zero = (n_cols // (n_cols + 1)).to(tl.int16)  # 0 (n_cols >= 0), which no compiler can fold
        for k in tl.static_range(N_TILES):
            y = tl.exp2(_widen_kept(tiles[k], PTX, opaque_zero) * LOG2E - shift)
            tl.store(output_ptr + base + k * TILE + cols, y.to(in_type), mask=k * TILE + cols < seg_len)


def segment_tiles_forward(segment_cols: int, num_warps: int, programs_per_sm: int, tile: int, max_polls: int = 4096,
                          cold: bool = True):
    """The probe's forward: rows cut into segments of segment_cols columns (whole tiles of tile lanes), one program a
    segment at a time on a persistent grid of programs_per_sm programs an SM."""
    def run(x: torch.Tensor) -> torch.Tensor:
        n_rows, n_cols = x.shape
        align = 16 // x.element_size()
        if n_cols % align or not x.is_contiguous():
            raise SystemExit(f"{n_cols} columns: the probe takes contiguous rows of whole 16-byte vectors")
        n_segments = triton.cdiv(n_cols, segment_cols)
        seg = triton.cdiv(triton.cdiv(n_cols, n_segments), align) * align  # as even as whole vectors allow
        y = torch.empty_like(x)
        slots = torch.zeros(max(1, n_rows * n_segments), dtype=torch.int64, device=x.device)
        if x.is_cuda:
            sms = torch.cuda.get_device_properties(x.device).multi_processor_count
            grid = (min(programs_per_sm * sms, n_rows * n_segments),)
            options = dict(num_warps=num_warps, maxnreg=65536 // (programs_per_sm * num_warps * 32) // 8 * 8)
        else:
            grid, options = (min(4, n_rows * n_segments),), {}
        compiled = _segment_tiles_fwd_kernel[grid](y, x, slots, n_rows, n_cols, n_segments, seg, max_polls,
                                        N_TILES=triton.cdiv(seg, tile), TILE=tile,
                                        SEGMENTS_BLOCK=max(2, triton.next_power_of_2(n_segments)), ALIGN=align,
                                        PTX=x.is_cuda, COLD=cold, **options)
        key = (x.dtype, segment_cols, num_warps, programs_per_sm, tile, cold)
        if x.is_cuda and key not in COMPILED:  # registers and spills, once a launch and dtype
            COMPILED[key] = (compiled.n_regs, compiled.n_spills)
            print(f"{key}: {compiled.n_regs} registers, {compiled.n_spills} spilled", flush=True)
        return y
    return run


def check() -> None:
    """Every output against float64 under the interpreter: one segment, several with a short last one, more items
    than programs, -inf masks and a fully -inf row, in fp16 and bf16."""
    from tolerances import FORWARD_TOL
    generator = torch.Generator().manual_seed(0)
    for n_rows, n_cols, dtype in [(3, 64, torch.float16), (5, 200, torch.bfloat16), (9, 136, torch.float16),
                                  (4, 64, torch.bfloat16)]:
        x = (torch.randn(n_rows, n_cols, generator=generator) * 3 + 5).to(dtype)
        x[0, ::5] = float("-inf")
        x[-1] = float("-inf")
        for segment_cols, tile in ((64, 32), (48, 16), (24, 8)):
            y = segment_tiles_forward(segment_cols, 4, 2, tile)(x)
            atol, rtol = FORWARD_TOL[dtype]
            torch.testing.assert_close(y.double(), torch.softmax(x.double(), -1), atol=atol, rtol=rtol, equal_nan=True)
            print(f"{n_rows} x {n_cols} {dtype}, segments of {segment_cols} in tiles of {tile}: every element within "
                  "FORWARD_TOL", flush=True)


if __name__ == "__main__":
    if sys.argv[1:] == ["check"]:
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
        check()
        raise SystemExit(0)
    from probe_long_rows import save_results, sm, warm_up_gpu
    from probe_trials import ab_trials
    warm_up_gpu()
    print(torch.cuda.get_device_name(), flush=True)
    results: list = []
    cold = os.environ.get("COLD", "1") == "1"  # COLD=0: no cold path (round 172b: the cold path spilled)
    for launch in LAUNCHES:
        label = "forward, segments of %d columns in registers, %d warps, %d programs an SM, tiles of %d" % launch
        ab_trials(label + ("" if cold else ", no cold path"), segment_tiles_forward(*launch, cold=cold), SHAPES,
                  results, trials=3)
        save_results("probe_segment_tiles.json", results + [{"compiled": str(COMPILED)}])  # kept if a later launch fails
