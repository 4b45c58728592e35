"""Probe helper: run a few tile-stream configs once each, for ncu to count DRAM bytes and L2 hits.

    ncu --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct ... \
        python scripts/probe_ncu_stream.py
"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from kernels import triton_softmax as sm  # noqa: E402
sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_long_rows import tile_stream_forward  # noqa: E402

CASES = [(2048, 65536, torch.float16), (2048, 65536, torch.float32), (128, 1048576, torch.float16)]
# (vectors per thread, warps, programs per SM, segment bytes, unroll)
CONFIGS = [(2, 32, 1, 262144, 1), (2, 32, 1, 131072, 1), (2, 32, 1, 524288, 1), (2, 16, 2, 262144, 1)]

for m, n, dtype in CASES:
    x = torch.randn(m, n, device="cuda").to(dtype)
    for config in CONFIGS:
        fn = tile_stream_forward(config)
        fn(x)
        torch.cuda.synchronize()
    sm.softmax_forward(x)
    torch.cuda.synchronize()
