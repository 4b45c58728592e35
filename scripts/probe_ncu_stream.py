"""Probe helper: run a few stream configs once each, for ncu to count DRAM bytes and L2 hits.

    ncu --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct ... \
        python scripts/probe_ncu_stream.py
"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from kernels import triton_softmax as sm  # noqa: E402
sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_long_rows import stream_forward  # noqa: E402

CASES = [(2048, 65536, torch.float16), (2048, 65536, torch.float32), (128, 1048576, torch.float16)]
CONFIGS = [(4096, 4, 8, 4, 65536), (8192, 4, 4, 3, 32768), (16384, 16, 1, 4, 262144), (8192, 4, 2, 4, 16384),
           (16384, 8, 2, 4, float("inf"))]

for m, n, dtype in CASES:
    x = torch.randn(m, n, device="cuda").to(dtype)
    for config in CONFIGS:
        fn = stream_forward(config)
        fn(x)
        torch.cuda.synchronize()
    sm.softmax_forward(x)
    torch.cuda.synchronize()
