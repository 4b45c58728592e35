"""Probe: is it the exchange between a row's segments that holds rows of 1M columns 35% below rows of
131,072? (notes/kernels.md, round 27: prediction written before the probe)

Exploration, not evidence, and deliberately WRONG output: a copy of kernels/triton_softmax.py whose stream
backward and tile-stream forward skip the exchange, each segment taking its own partial as its row's. The
work per segment and every memory access but the slots stay as they are. The copy's results are not
checked (they cannot be right); it is only timed, beside the dispatcher and a copy or a 2-read-1-write add,
on CUDA-graph replays with L2 flushed (probe_long_rows.timed).

    python scripts/probe_no_exchange.py   # on a CUDA machine; $OUT/probe_no_exchange.json
"""
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from kernels import triton_softmax as sm  # noqa: E402
from probe_ab import rewritten  # noqa: E402
from probe_long_rows import ELEMENTS, save_results, timed, warm_up_gpu  # noqa: E402

EDITS = [("        if SEGMENTS_BLOCK > 1:\n", "        if SEGMENTS_BLOCK < 0:  # probe: no exchange\n"),
         ("        if SEGMENTS_BLOCK == 1:\n", "        if SEGMENTS_BLOCK > 0:  # probe: no exchange\n")]
NS = [131072, 262144, 1048576]


def main() -> None:
    """GB/s of the dispatcher and of the no-exchange copy, forward and backward, per N and dtype."""
    warm_up_gpu()
    alone = rewritten("triton_softmax_no_exchange", EDITS)
    out = []
    for n in NS:
        for dtype in (torch.float32, torch.float16):
            x = (torch.randn(ELEMENTS // n, n, device="cuda") * 2).to(dtype)
            y = sm.softmax_forward(x)
            dy = torch.randn_like(y)
            dx = torch.empty_like(y)
            fwd_bytes, bwd_bytes = 2 * x.numel() * x.element_size(), 3 * x.numel() * x.element_size()
            line = {"rows": x.shape[0], "cols": n, "dtype": str(dtype),
                    "copy": fwd_bytes / timed(lambda: dx.copy_(x))["ms"] / 1e6,
                    "add": bwd_bytes / timed(lambda: torch.add(y, dy, out=dx))["ms"] / 1e6,
                    "forward": fwd_bytes / timed(sm.softmax_forward, x)["ms"] / 1e6,
                    "forward_no_exchange": fwd_bytes / timed(alone.softmax_forward, x)["ms"] / 1e6,
                    "backward": bwd_bytes / timed(sm.softmax_backward, y, dy)["ms"] / 1e6,
                    "backward_no_exchange": bwd_bytes / timed(alone.softmax_backward, y, dy)["ms"] / 1e6}
            out.append(line)
            print(json.dumps({k: round(v) if isinstance(v, float) else v for k, v in line.items()}), flush=True)
            torch.cuda.empty_cache()
    save_results("probe_no_exchange.json", out)


if __name__ == "__main__":
    main()
