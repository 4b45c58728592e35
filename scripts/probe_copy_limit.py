"""Probe (round 207): how fast can any kernel read and write fp32 on this GPU? The H100's tie with torch.compile.

Exploration, not evidence. On the H100 the dispatcher and torch.compile both run fp32 rows of 2,048-8,192 columns at
100.4-100.5% of the ceiling copy (rounds 87, 189, 205), a tie no form of the kernel has broken. If no copy of the same
bytes runs faster than they do, the tie is the GPU's limit and no softmax can show >= 1x there beyond noise. Triton
copies of the sweep's fp32 size (2^27 elements, 512 MiB a tensor) at several tiles, load and store policies, one
program a tile or a persistent grid, beside torch's `copy_` (called directly, as measure.ceiling does), the dispatcher
and torch.compile at fp32 2,048 on the same bytes. Every copy checked bit for bit, every softmax against float64;
all timed the way the runs time the ceiling (measure.bench, called directly), five trials in alternating order.

    python scripts/probe_copy_limit.py   # on a CUDA machine; $OUT/probe_copy_limit.json
"""
import statistics
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from kernellab.measure import bench, check, softmax_reference  # noqa: E402
from probe_long_rows import save_results, sm, warm_up_gpu  # noqa: E402

ELEMENTS = 1 << 27


@triton.jit
def vector_load(ptrs, ASM: tl.constexpr):
    """fp32 values at ptrs, four consecutive elements of a thread read by one asm load (their layout must hold four
    consecutive elements a thread: every output is checked). Round 205's loads with an L2 fill size."""
    return tl.inline_asm_elementwise(ASM, "=r,=r,=r,=r,l,l,l,l", [ptrs], dtype=tl.float32, is_pure=True, pack=4)


@triton.jit
def _copy_block(output_ptr, input_ptr, block, BLOCK_SIZE: tl.constexpr, LOAD_EVICT: tl.constexpr,
                STORE_CACHE: tl.constexpr, STORE_EVICT: tl.constexpr, ASM: tl.constexpr):
    """output = input on block's BLOCK_SIZE elements, read by tl.load or (ASM) by vector_load."""
    offsets = block.to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    if ASM == "":
        x = tl.load(input_ptr + offsets, eviction_policy=LOAD_EVICT)
    else:
        x = vector_load(input_ptr + offsets, ASM)
    tl.store(output_ptr + offsets, x, cache_modifier=STORE_CACHE, eviction_policy=STORE_EVICT)


@triton.jit
def _copy_kernel(output_ptr, input_ptr, n_blocks, BLOCK_SIZE: tl.constexpr, LOAD_EVICT: tl.constexpr,
                 STORE_CACHE: tl.constexpr, STORE_EVICT: tl.constexpr, PERSISTENT: tl.constexpr, ASM: tl.constexpr):
    """output = input in BLOCK_SIZE blocks: block program_id (PERSISTENT: blocks program_id, + num_programs, ...)."""
    if PERSISTENT:
        for block in range(tl.program_id(0), n_blocks, tl.num_programs(0)):
            _copy_block(output_ptr, input_ptr, block, BLOCK_SIZE, LOAD_EVICT, STORE_CACHE, STORE_EVICT, ASM)
    else:
        _copy_block(output_ptr, input_ptr, tl.program_id(0), BLOCK_SIZE, LOAD_EVICT, STORE_CACHE, STORE_EVICT, ASM)


def triton_copy(block: int, warps: int, load_evict: str = "", store_cache: str = "", store_evict: str = "",
                persistent: int = 0, asm: str = ""):
    """A copy callable (persistent: programs an SM, 0 for one program a block; asm: vector_load's load, "" for
    tl.load)."""
    def run(y, x):
        n_blocks = x.numel() // block
        programs = n_blocks
        if persistent:  # asks the driver only here, so that the copy runs under the interpreter too
            programs = min(n_blocks, persistent * torch.cuda.get_device_properties(x.device).multi_processor_count)
        grid = (programs,)
        _copy_kernel[grid](y, x, n_blocks, BLOCK_SIZE=block, LOAD_EVICT=load_evict, STORE_CACHE=store_cache,
                           STORE_EVICT=store_evict, PERSISTENT=bool(persistent), ASM=asm, num_warps=warps)
    return run


def report(out: list, probe: str, times: dict, base: str, moved: int) -> None:
    """Print and keep a line per variant: its trials' ms, median, GB/s and speed against the variant named base."""
    base_ms = statistics.median(times[base])
    for label, ms in times.items():
        median = statistics.median(ms)
        line = {"probe": probe, "variant": label, "ms": ms, "median_ms": median, "gbs": moved / median / 1e6,
                "vs_copy_": base_ms / median}
        print(f"{label:48s} {line['gbs']:6.0f} GB/s, {line['vs_copy_']:.4f} of {base}; "
              + " ".join(f"{t * 1e3:.1f}" for t in ms), flush=True)
        out.append(line)


COPIES = [
    ("copy_ (the ceiling's)", lambda y, x: y.copy_(x)),
    ("triton 4096x8w", triton_copy(4096, 8)),
    ("triton 4096x8w evict_last", triton_copy(4096, 8, "evict_last")),
    ("triton 4096x16w evict_last", triton_copy(4096, 16, "evict_last")),
    ("triton 8192x16w evict_last", triton_copy(8192, 16, "evict_last")),
    ("triton 2048x4w evict_last", triton_copy(2048, 4, "evict_last")),
    ("triton 4096x8w evict_last .cs store", triton_copy(4096, 8, "evict_last", ".cs")),
    ("triton 4096x8w evict_last evict_first store", triton_copy(4096, 8, "evict_last", "", "evict_first")),
    ("triton 4096x8w evict_first", triton_copy(4096, 8, "evict_first")),
    ("triton 4096x8w evict_last, 8 an SM persistent", triton_copy(4096, 8, "evict_last", persistent=8)),
    ("triton 4096x8w evict_last, 4 an SM persistent", triton_copy(4096, 8, "evict_last", persistent=4)),
]


def copy_limit(out: list, trials: int = 5, n: int = 2048) -> None:
    """Every copy, the dispatcher and torch.compile at fp32 n columns, on fresh tensors each trial."""
    compiled = torch.compile(lambda t: torch.softmax(t, -1), dynamic=False)
    softmaxes = [("dispatcher", sm.softmax_forward), ("torch.compile", compiled)]
    times = {label: [] for label, _ in COPIES + softmaxes}
    for trial in range(trials):
        spacer = torch.empty((trial + 1) * (7 << 20), dtype=torch.uint8, device="cuda")
        x = torch.randn(ELEMENTS // n, n, device="cuda") * 2
        ref, scale = softmax_reference(x)
        for label, fn in softmaxes:
            assert check(fn(x), ref, "float32", scale)["passed"], label
        del ref, scale
        y = torch.empty_like(x)
        order = COPIES + softmaxes
        for label, fn in (order if trial % 2 == 0 else order[::-1]):
            if (label, fn) in softmaxes:
                times[label].append(bench(lambda: fn(x))["median_ms"])
            else:
                y.fill_(float("nan"))
                fn(y, x)
                assert torch.equal(y, x), label
                times[label].append(bench(lambda: fn(y, x))["median_ms"])
        del x, y, spacer
        torch.cuda.empty_cache()
    report(out, f"fp32, {ELEMENTS} elements", times, "copy_ (the ceiling's)", 2 * ELEMENTS * 4)


if __name__ == "__main__":
    warm_up_gpu()
    print(torch.cuda.get_device_name(), torch.__version__, triton.__version__, flush=True)
    results = []
    copy_limit(results)
    save_results("probe_copy_limit.json", results)
