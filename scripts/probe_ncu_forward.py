"""Probe helper: one dispatcher forward per case, for ncu (why 2-byte rows of 777,777 columns run 6-7 points
under those of 1M while fp32 rows do not: DRAM bytes, L2 hits, instructions, stalls; notes/kernels.md, round 40;
and odd 10,001 against 10,000 on row-tiles, round 54, with cases given as ROWSxCOLS:dtype). With --no-prefetch,
tile-stream runs without its L2 prefetch (TILE_STREAM_PREFETCH = 0): whether ncu's L1 hit rate counts the prefetches
as misses, and how much of pass 2 L1 serves (notes/kernels.md, round 97).

    ncu --kernel-name regex:_tile_stream_fwd_kernel --section SpeedOfLight --section WarpStateStats \
        --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,smsp__inst_executed.sum \
        python scripts/probe_ncu_forward.py [--no-prefetch] [13420x10001:float16 ...]
"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from kernels import triton_softmax as sm  # noqa: E402

CASES = [(173, 777777, torch.float16), (128, 1048576, torch.float16), (173, 777777, torch.float32),
         (128, 1048576, torch.float32)]

arguments = sys.argv[1:]
if "--no-prefetch" in arguments:
    arguments.remove("--no-prefetch")
    sm.TILE_STREAM_PREFETCH = 0  # read at each launch (_l2_prefetch_steps)
if arguments:
    CASES = [(int(shape.split("x")[0]), int(shape.split("x")[1]), getattr(torch, dtype))
             for shape, dtype in (arg.split(":") for arg in arguments)]

for m, n, dtype in CASES:
    x = (torch.randn(m, n, device="cuda") * 2).to(dtype)
    sm.softmax_forward(x)
    torch.cuda.synchronize()
    print(m, n, dtype, x.numel() * x.element_size() / 1e9, "GB each way", flush=True)
