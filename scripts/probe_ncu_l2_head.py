"""Probe helper (round 81): the table's tile-stream forward, then round 81's longer segments with their head read
around L1, one launch each per case, for ncu: do the heads come back from DRAM in pass 2 (DRAM reads over 1.0x of
the input)? Runs at commit dca20bb, whose kernel takes L1_BLOCKS; with `priority` (round 82) at c3a4cc0.

    ncu --kernel-name regex:_tile_stream_fwd_kernel --metrics dram__bytes_read.sum,dram__bytes_write.sum,\
lts__t_sector_hit_rate.pct,gpu__time_duration.sum python scripts/probe_ncu_l2_head.py
"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_trials import l2_head_forward  # noqa: E402
from probe_long_rows import sm  # noqa: E402

CASES = [(512, 262144, torch.float16, 8, 7), (512, 262144, torch.float32, 8, 7), (512, 262144, torch.float32, 11, 7)]
PRIORITY = "priority" in sys.argv[1:]  # round 82: only the heads prefetched with L2's evict-last priority

for m, n, dtype, blocks, l1_blocks in CASES:
    x = (torch.randn(m, n, device="cuda") * 2).to(dtype)
    print(m, n, dtype, x.numel() * x.element_size() / 1e9, "GB each way: the table, then", blocks, "tiles with",
          l1_blocks, "in L1", flush=True)
    sm.softmax_forward(x)
    l2_head_forward(blocks, l1_blocks, head_priority=PRIORITY)(x)
    torch.cuda.synchronize()
