"""Probe (round 109): does fp32 100,000 run under 131,072's share of copy because its rows start inside view rows?

Exploration, not evidence. The dispatcher on fp32 rows of two segments that start on a view row (98,304: 24 tiles;
100,352: 24.5; 102,400: 25) beside 100,000 (rows straddle view rows, so a segment's boxes over-read about 6%) and
131,072 (three segments, no straddle): GB/s and the share of the copy ceiling as build.py --run measures it
(kernellab.measure.ceiling; a copy of each input timed beside it moved with where torch placed the buffers: 100,000
and 131,072 came out at 112-114% of theirs, round 109), three fresh inputs a shape, every output checked first.

    python scripts/probe_row_starts.py       # on a CUDA machine; writes $OUT/probe_row_starts.json
"""
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_long_rows import check, forward_input, save_results, sm, timed, warm_up_gpu  # noqa: E402
from kernellab.measure import ceiling  # noqa: E402  (probe_long_rows puts the repository on the path)

COLUMNS = (98304, 100000, 100352, 102400, 131072)


if __name__ == "__main__":
    warm_up_gpu()
    print(torch.cuda.get_device_name(), flush=True)
    copy_gbs = ceiling(1)["gbs"]
    torch.cuda.empty_cache()
    print(f"copy ceiling {copy_gbs:.0f} GB/s", flush=True)
    results = []
    for n in COLUMNS:
        shares = []
        for trial in range(3):
            spacer = torch.empty((trial + 1) * (7 << 20), dtype=torch.uint8, device="cuda")
            m, x, moved, ref, scale = forward_input(n, "float32")
            assert check(sm.softmax_forward(x), ref, "float32", scale)["passed"], n
            shares.append(moved / timed(sm.softmax_forward, x)["ms"] / 1e6 / copy_gbs)
            del x, ref, scale, spacer
            torch.cuda.empty_cache()
        line = {"cols": n, "rows": m, "dtype": "float32", "shares": shares, "median_share": statistics.median(shares),
                "starts_on_view_row": n % 128 == 0, "copy_gbs": copy_gbs}
        print(f"{m}x{n} fp32: share of copy {line['median_share']:.4f} (" + " ".join(f"{s:.4f}" for s in shares)
              + ")", flush=True)
        results.append(line)
    save_results("probe_row_starts.json", results)
