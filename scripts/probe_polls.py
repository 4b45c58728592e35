"""Probe: how long the backward's long-row segments wait for their siblings (notes/kernels.md, after round 25).

Exploration, not evidence. A copy of kernels/triton_softmax.py whose stream backward counts, per (row,
segment) item, the re-reads of its row's slots before every sibling had published (one L2 round trip each),
and stores the count in a second half of the slots tensor. Prints the mean, median, p90 and max per case,
and the dispatcher's own time for the same call beside the counted one (the count adds a store per item).

    python scripts/probe_polls.py   # on a CUDA machine; $OUT/probe_polls.json
"""
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from kernels import triton_softmax as sm  # noqa: E402
from probe_ab import rewritten  # noqa: E402
from probe_long_rows import save_results, timed  # noqa: E402


def counted_await_source() -> str:
    """The product's _await_row as _await_row_counted, which also returns how many re-reads it took."""
    source = Path(sm.__file__).read_text()
    body = source[source.index("@triton.jit\ndef _await_row("):source.index("@triton.jit\ndef _combine_partials")]
    assert body.count("    return packed, n_missing, in_row\n") == 1
    return body.replace("def _await_row(", "def _await_row_counted(").replace(
        "    return packed, n_missing, in_row\n", "    return packed, n_missing, in_row, polls\n")


AWAIT_CALL = ("            packed, n_missing, in_row = _await_row(slots_ptr, row, n_segments, max_polls, SEGMENTS_BLOCK, "
              "POLL_SLEEP)\n")
EDITS = [
    ("@triton.jit\ndef _combine_partials(", counted_await_source() + "@triton.jit\ndef _combine_partials("),
    (AWAIT_CALL, AWAIT_CALL.replace("in_row = _await_row(", "in_row, polls = _await_row_counted(")
     + "            tl.store(slots_ptr + n_rows * n_segments + item, polls.to(tl.int64))\n"),
    ("    slots = torch.zeros(n_rows * n_segments if n_segments > 1 else 1, dtype=torch.int64, device=y.device)\n",
     "    global last_slots\n"
     "    slots = torch.zeros(2 * n_rows * n_segments if n_segments > 1 else 1, dtype=torch.int64, device=y.device)\n"
     "    last_slots = slots\n"),
]
CASES = [(1024, 131072), (128, 1048576)]


def main() -> None:
    """Polls per item and times, per case and dtype."""
    counted = rewritten("triton_softmax_polls", EDITS)
    out = []
    for rows, cols in CASES:
        for dtype in (torch.float32, torch.float16):
            y = sm.softmax_forward(torch.randn(rows, cols, device="cuda").to(dtype))
            dy = torch.randn_like(y)
            ms_product = timed(sm.softmax_backward, y, dy)["ms"]
            ms_counted = timed(counted.softmax_backward, y, dy)["ms"]
            counted.softmax_backward(y, dy)
            torch.cuda.synchronize()
            slots = counted.last_slots
            polls = slots[slots.numel() // 2:].float()
            q = torch.quantile(polls, torch.tensor([0.5, 0.9], device=polls.device)).tolist()
            line = {"rows": rows, "cols": cols, "dtype": str(dtype), "items": polls.numel(),
                    "n_segments": polls.numel() // rows, "polls_mean": polls.mean().item(), "polls_median": q[0],
                    "polls_p90": q[1], "polls_max": polls.max().item(),
                    "share_waiting": (polls > 0).float().mean().item(), "ms_product": ms_product,
                    "ms_counted": ms_counted}
            out.append(line)
            print(json.dumps(line), flush=True)
    save_results("probe_polls.json", out)


if __name__ == "__main__":
    main()
