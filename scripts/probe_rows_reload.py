"""Probe (round 86): a general kernel of Inductor's form for fp32 rows of 1,024-8,192.

Exploration, not evidence. Round 85 (scripts/probe_inductor_code.py bare) found Inductor's own kernel, launched by
us, 0.4-0.5% ahead of the dispatcher at fp32 2,048 and 4,096, also with the row stride at run time and (at 4,096)
with int64 row offsets; its column mask at run time cost it 16-32%. The rows kernel had been tried re-reading its
rows (round 78) and without masks (round 80), never both. This kernel does both: it reads its rows (evict_last),
takes max and sum, reads them again (evict_first, from L1) for the write; the column mask is compiled only where the
row is not a power of two (EVEN), and offsets are int32 where every element's offset fits (OFFSETS_64 otherwise).

Every variant is checked against float64 on every element, then timed on fresh inputs against the dispatcher and
against torch.compile (probe_trials.ab_trials).

    python scripts/probe_rows_reload.py   # on a CUDA machine; $OUT/probe_rows_reload.json
"""
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl
from triton.language.extra.cuda import libdevice

sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_long_rows import save_results, sm, warm_up_gpu  # noqa: E402
from probe_trials import ab_trials  # noqa: E402


@triton.jit
def _rows_reload_fwd_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols,
                            ROWS_PER_PROGRAM: tl.constexpr, BLOCK_SIZE: tl.constexpr, EVEN: tl.constexpr,
                            OFFSETS_64: tl.constexpr):
    """Softmax of ROWS_PER_PROGRAM whole rows, read twice: once for max and sum, once (from L1) for the write."""
    rows = tl.program_id(0) * ROWS_PER_PROGRAM + tl.arange(0, ROWS_PER_PROGRAM)[:, None]
    if OFFSETS_64:
        rows = rows.to(tl.int64)
    cols = tl.arange(0, BLOCK_SIZE)[None, :]
    in_ptrs = input_ptr + rows * input_row_stride + cols
    out_ptrs = output_ptr + rows * output_row_stride + cols
    if EVEN:
        x = tl.load(in_ptrs, eviction_policy="evict_last")
    else:
        mask = (rows < n_rows) & (cols < n_cols)
        x = tl.load(in_ptrs, mask=mask, other=float("-inf"), eviction_policy="evict_last")
    row_max = tl.max(x, axis=1)[:, None]
    inv_row_sum = 1.0 / tl.sum(tl.exp(x - row_max), axis=1)[:, None]
    if EVEN:
        x = tl.load(in_ptrs, eviction_policy="evict_first")
        tl.store(out_ptrs, tl.exp(x - row_max) * inv_row_sum)
    else:
        x = tl.load(in_ptrs, mask=mask, other=float("-inf"), eviction_policy="evict_first")
        tl.store(out_ptrs, tl.exp(x - row_max) * inv_row_sum, mask=mask)


@triton.jit
def _nan_max(a, b):
    """max of a and b that gives NaN if either is NaN (Inductor's triton_helpers.maximum)."""
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def _rows_lanes_fwd_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride,
                           ROWS_PER_PROGRAM: tl.constexpr, BLOCK_SIZE: tl.constexpr, OFFSETS_64: tl.constexpr,
                           STORE_CACHE: tl.constexpr = "", STORE_EVICT: tl.constexpr = ""):
    """Inductor's form, for rows of exactly BLOCK_SIZE columns and a multiple of ROWS_PER_PROGRAM rows (no mask):
    each lane's (max, sum) combined with its element online, then reduced across the row; the row read again
    (from L1) for the write; libdevice's exp and a true division, as Inductor emits. STORE_CACHE, STORE_EVICT: the
    store's cache modifier and eviction policy (round 189; Inductor's store has neither)."""
    rows = tl.program_id(0) * ROWS_PER_PROGRAM + tl.arange(0, ROWS_PER_PROGRAM)[:, None]
    if OFFSETS_64:
        rows = rows.to(tl.int64)
    cols = tl.arange(0, BLOCK_SIZE)[None, :]
    in_ptrs = input_ptr + rows * input_row_stride + cols
    x = tl.load(in_ptrs, eviction_policy="evict_last")
    lane_max = _nan_max(tl.full([ROWS_PER_PROGRAM, BLOCK_SIZE], float("-inf"), tl.float32), x)
    lane_scale = tl.where(lane_max == float("-inf"), 1.0, libdevice.exp(float("-inf") - lane_max))
    x_scale = tl.where(lane_max == float("-inf"), 1.0, libdevice.exp(x - lane_max))
    lane_sum = 0.0 * lane_scale + x_scale
    row_max = tl.reduce(lane_max, 1, _nan_max)[:, None]
    delta = tl.where(row_max == float("-inf"), 0.0, lane_max - row_max)
    row_sum = tl.sum(lane_sum * libdevice.exp(delta), 1)[:, None]
    x = tl.load(in_ptrs, eviction_policy="evict_first")
    tl.store(output_ptr + rows * output_row_stride + cols, libdevice.exp(x - row_max) / row_sum,
             cache_modifier=STORE_CACHE, eviction_policy=STORE_EVICT)


def rows_lanes(rows_per_program: int, num_warps: int, store_cache: str = "", store_evict: str = ""):
    """A forward callable: the Inductor-form kernel above at this tile (rows of a power of two columns only)."""
    def run(x):
        y = torch.empty_like(x)
        n_rows, n_cols = x.shape
        assert n_cols == triton.next_power_of_2(n_cols) and n_rows % rows_per_program == 0, x.shape
        offsets_64 = max(n_rows * x.stride(0), n_rows * y.stride(0)) >= 2 ** 31
        _rows_lanes_fwd_kernel[(n_rows // rows_per_program,)](
            y, x, x.stride(0), y.stride(0), ROWS_PER_PROGRAM=rows_per_program, BLOCK_SIZE=n_cols,
            OFFSETS_64=offsets_64, STORE_CACHE=store_cache, STORE_EVICT=store_evict, num_warps=num_warps)
        return y
    return run


def rows_reload(rows_per_program: int, num_warps: int):
    """A forward callable: the kernel above at this tile."""
    def run(x):
        y = torch.empty_like(x)
        n_rows, n_cols = x.shape
        block = triton.next_power_of_2(n_cols)
        even = block == n_cols and n_rows % rows_per_program == 0
        offsets_64 = max(n_rows * x.stride(0), n_rows * y.stride(0)) >= 2 ** 31
        _rows_reload_fwd_kernel[(triton.cdiv(n_rows, rows_per_program),)](
            y, x, x.stride(0), y.stride(0), n_rows, n_cols, ROWS_PER_PROGRAM=rows_per_program, BLOCK_SIZE=block,
            EVEN=even, OFFSETS_64=offsets_64, num_warps=num_warps)
        return y
    return run


TILES = {2048: [(2, 16), (2, 8), (1, 8), (4, 16)], 4096: [(1, 16), (1, 8), (2, 16)], 1024: [(2, 8), (4, 16)],
         8192: [(1, 16), (1, 32)], 3000: [(2, 16), (1, 8)]}


def reload_tiles(out: list) -> None:
    """The kernel at several tiles against the dispatcher, then the best-looking ones against torch.compile."""
    for n, tiles in TILES.items():
        for rows, warps in tiles:
            ab_trials(f"rows reload {rows}x{warps}w vs the dispatcher", rows_reload(rows, warps), [(n, "float32")],
                      out, trials=3)
    for n, (rows, warps) in ((2048, (2, 16)), (4096, (1, 16)), (1024, (2, 8)), (8192, (1, 16))):
        torch._dynamo.reset()
        compiled = torch.compile(lambda t: torch.softmax(t, -1), dynamic=False)
        ab_trials(f"rows reload {rows}x{warps}w vs torch.compile", rows_reload(rows, warps), [(n, "float32")], out,
                  baseline=compiled, trials=3)
        ab_trials("dispatcher vs torch.compile", sm.softmax_forward, [(n, "float32")], out, baseline=compiled,
                  trials=3)


LANE_TILES = {2048: [(2, 16), (4, 16), (2, 32), (1, 16), (4, 32)], 4096: [(1, 16), (2, 16), (1, 32), (2, 32)],
              1024: [(4, 16), (8, 16), (2, 8)], 8192: [(1, 16), (1, 32)]}


def lane_tiles(out: list) -> None:
    """Round 87: the Inductor-form kernel at several tiles against torch.compile (ratio > 1: ours faster)."""
    for n, tiles in LANE_TILES.items():
        torch._dynamo.reset()
        compiled = torch.compile(lambda t: torch.softmax(t, -1), dynamic=False)
        ab_trials("dispatcher vs torch.compile", sm.softmax_forward, [(n, "float32")], out, baseline=compiled,
                  trials=3)
        for rows, warps in tiles:
            ab_trials(f"Inductor form {rows}x{warps}w vs torch.compile", rows_lanes(rows, warps), [(n, "float32")],
                      out, baseline=compiled, trials=3)


TWO_BYTE_TILES = {1024: [(2, 4), (4, 8), (2, 8)], 2048: [(2, 8), (2, 16), (1, 8)], 4096: [(1, 8), (1, 16), (2, 16)],
                  8192: [(1, 16), (1, 8)]}


def lane_tiles_two_byte(out: list) -> None:
    """Round 88: does Inductor's form lift 2-byte rows of 1,024-8,192 (98.3-98.5% of copy on the rows kernel, where
    fp32 reaches 100%)? Against the dispatcher (ratio > 1: the form is faster). Round 88 ran the module's copy of
    this kernel (kernels/triton_softmax.py at 1025360, since removed), the same code as _rows_lanes_fwd_kernel here."""
    for n, tiles in TWO_BYTE_TILES.items():
        for rows, warps in tiles:
            ab_trials(f"Inductor form {rows}x{warps}w vs the dispatcher", rows_lanes(rows, warps),
                      [(n, "float16"), (n, "bfloat16")], out, trials=2)


LANE_STORE_TILES = {2048: (2, 16), 4096: (1, 16), 8192: (1, 16)}


def lane_stores(out: list) -> None:
    """Round 189 (H100): the dispatcher (rows-lanes at 2,048 and 4,096 since this round) and the Inductor form with
    each store policy against torch.compile, five fresh inputs a width (ratio > 1: ours faster)."""
    for n, (rows, warps) in LANE_STORE_TILES.items():
        torch._dynamo.reset()
        compiled = torch.compile(lambda t: torch.softmax(t, -1), dynamic=False)
        plan = sm._select_plan("forward", (1 << 27) // n, n, 4, torch.device("cuda"), 4)
        ab_trials(f"dispatcher ({plan.path} {plan.rows_per_program}x{plan.num_warps}w) vs torch.compile",
                  sm.softmax_forward, [(n, "float32")], out, baseline=compiled)
        for cache, evict in (("", ""), (".cs", ""), ("", "evict_first")):
            ab_trials(f"Inductor form {rows}x{warps}w store {cache or '-'} {evict or '-'} vs torch.compile",
                      rows_lanes(rows, warps, cache, evict), [(n, "float32")], out, baseline=compiled)


if __name__ == "__main__":
    warm_up_gpu()
    print(torch.cuda.get_device_name(), torch.__version__, flush=True)
    results = []
    for name in sys.argv[1:] or ["reload_tiles"]:
        globals()[name](results)
    save_results("probe_rows_reload.json", results)
