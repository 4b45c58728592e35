"""Probe (round 205): loads that ask L2 for 256-byte fills (PTX `ld.global.L2::256B`, SASS `LDG.E.LTC256B.128`).

Exploration, not evidence. Triton emits plain `ld.global.v4` (SASS `LDG.E.128`, no prefetch size) for every load of
the product's register kernels and of torch.compile's kernels alike; the L2 prefetch-size qualifier asks L2 to fill
256 bytes on a miss. No round has tried it (notes/kernels.md, round 205). Two parts, every output checked first:

- copy: a 1 GiB float32 copy (measure.ceiling's size) as torch's `copy_` (the forward's ceiling), a Triton copy
  with plain loads, and the same with 256- and 128-byte fills; the Triton copies checked bit for bit.
- lanes: fp32 rows of 2,048, 4,096 and 8,192 columns (the sweep's 2^27 elements), the dispatcher and Inductor's form
  (the product's rows-lanes kernel) with its first read as 256-byte fills, each against torch.compile on fresh
  inputs (probe_trials.ab_trials: ratio > 1, ours faster), and the variant against the dispatcher.

    python scripts/probe_prefetch_size.py [copy] [lanes]   # on a CUDA machine; $OUT/probe_prefetch_size.json
"""
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl
from triton.language.extra.cuda import libdevice

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from kernels.triton_softmax import _nan_max  # noqa: E402
from probe_copy_limit import report, triton_copy, vector_load  # noqa: E402
from probe_long_rows import save_results, sm, timed, warm_up_gpu  # noqa: E402
from probe_trials import ab_trials  # noqa: E402

# one 16-byte vector of four 32-bit words per thread (pack=4); the fill size is the only difference between them
LOADS = {
    "plain": "ld.global.v4.b32 {$0,$1,$2,$3}, [$4];",
    "256B": "ld.global.L2::256B.v4.b32 {$0,$1,$2,$3}, [$4];",
    "128B": "ld.global.L2::128B.v4.b32 {$0,$1,$2,$3}, [$4];",
    "L1 evict_last 256B": "ld.global.L1::evict_last.L2::256B.v4.b32 {$0,$1,$2,$3}, [$4];",
}


@triton.jit
def _lanes_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, ROWS_PER_PROGRAM: tl.constexpr,
                  BLOCK_SIZE: tl.constexpr, ASM: tl.constexpr):
    """kernels/triton_softmax._rows_lanes_fwd_kernel (int32 offsets, libdevice exps) with its first read as ASM."""
    rows = tl.program_id(0) * ROWS_PER_PROGRAM + tl.arange(0, ROWS_PER_PROGRAM)[:, None]
    cols = tl.arange(0, BLOCK_SIZE)[None, :]
    input_ptrs = input_ptr + rows * input_row_stride + cols
    if ASM == "":
        x = tl.load(input_ptrs, eviction_policy="evict_last")
    else:
        x = vector_load(input_ptrs, ASM)
    lane_max = _nan_max(tl.full([ROWS_PER_PROGRAM, BLOCK_SIZE], float("-inf"), tl.float32), x)
    no_max = lane_max == float("-inf")
    lane_sum = (0.0 * tl.where(no_max, 1.0, libdevice.exp(float("-inf") - lane_max))
                + tl.where(no_max, 1.0, libdevice.exp(x - lane_max)))
    row_max = tl.reduce(lane_max, 1, _nan_max)[:, None]
    row_sum = tl.sum(lane_sum * libdevice.exp(tl.where(row_max == float("-inf"), 0.0, lane_max - row_max)), 1)[:, None]
    x = tl.load(input_ptrs, eviction_policy="evict_first")
    tl.store(output_ptr + rows * output_row_stride + cols, libdevice.exp(x - row_max) / row_sum)


def lanes(asm: str, rows_per_program: int, warps: int):
    """A forward callable: _lanes_kernel at this tile (rows of a power of two columns, a multiple of the tile)."""
    def run(x):
        y = torch.empty_like(x)
        n_rows, n_cols = x.shape
        assert n_rows % rows_per_program == 0 and n_cols == triton.next_power_of_2(n_cols)
        assert n_rows * max(x.stride(0), y.stride(0)) < 2 ** 31
        _lanes_kernel[(n_rows // rows_per_program,)](y, x, x.stride(0), y.stride(0), ROWS_PER_PROGRAM=rows_per_program,
                                                     BLOCK_SIZE=n_cols, ASM=asm, num_warps=warps)
        return y
    return run


def copy(out: list, trials: int = 5) -> None:
    """torch's copy_ and the Triton copies of 1 GiB float32, alternating order, each Triton copy checked bit for bit."""
    variants = [("torch copy_", lambda y, x: y.copy_(x)), ("triton plain tl.load", triton_copy(4096, 8))]
    variants += [(f"triton asm {name}", triton_copy(4096, 8, asm=asm)) for name, asm in LOADS.items()]
    times = {label: [] for label, _ in variants}
    for trial in range(trials):
        spacer = torch.empty((trial + 1) * (7 << 20), dtype=torch.uint8, device="cuda")
        x = torch.randn(1 << 28, device="cuda")
        for label, fn in (variants if trial % 2 == 0 else variants[::-1]):
            y = torch.full_like(x, float("nan"))
            fn(y, x)
            assert torch.equal(y, x), label
            times[label].append(timed(fn, y, x)["ms"])
            del y
        del x, spacer
        torch.cuda.empty_cache()
    report(out, "copy 1 GiB float32", times, "torch copy_", 2 * (1 << 30))


TILES = {2048: (2, 16), 4096: (1, 16), 8192: (1, 16)}  # the product's rows-lanes tiles (8,192: round 189's probe)


def lanes_vs_compile(out: list) -> None:
    """At each width: the dispatcher, the form with plain and 256-byte first reads against torch.compile; then the
    256-byte form against the dispatcher."""
    for n, (rows, warps) in TILES.items():
        torch._dynamo.reset()
        compiled = torch.compile(lambda t: torch.softmax(t, -1), dynamic=False)
        ab_trials("dispatcher vs torch.compile", sm.softmax_forward, [(n, "float32")], out, baseline=compiled)
        ab_trials(f"form {rows}x{warps}w evict_last vs torch.compile", lanes("", rows, warps), [(n, "float32")], out,
                  baseline=compiled)
        for name in ("256B", "L1 evict_last 256B"):
            ab_trials(f"form {rows}x{warps}w {name} vs torch.compile", lanes(LOADS[name], rows, warps),
                      [(n, "float32")], out, baseline=compiled)
        ab_trials(f"form {rows}x{warps}w 256B vs the dispatcher", lanes(LOADS["256B"], rows, warps), [(n, "float32")],
                  out)


if __name__ == "__main__":
    warm_up_gpu()
    print(torch.cuda.get_device_name(), torch.__version__, triton.__version__, flush=True)
    results = []
    for part in sys.argv[1:] or ["copy", "lanes"]:
        {"copy": copy, "lanes": lanes_vs_compile}[part](results)
    save_results("probe_prefetch_size.json", results)
