"""The persistent grids' rounds for the long sweep shapes, from SOFTMAX_PLANS alone (no GPU; notes/kernels.md,
round 57).

For each case of the bandwidth sweep from 65,536 columns and each element size: the table's path; its segments a row
(tile-stream: x blocks a segment, with EVEN_SEGMENTS as set and the cut _grid_fill chooses); the rows that one round of
one item a program takes on SMS SMs; the rounds; the cap items / (rounds x SMs x programs an SM) that idle SMs put on
the share of copy; and tile-stream's _grid_fill, which also counts the tiles a row's shorter segments leave idle while
they wait for its longest (round 72).

    python scripts/last_round.py [SMS] [L2_MB]   # default 132 SMs (the H100's and the H200's) and 50 MB (the H100's;
                                                 # 60, the H200's, takes the table's min_l2_bytes rows)
"""
import math
import sys
from pathlib import Path

import torch
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from kernels import triton_softmax as sm  # noqa: E402

SWEEP = Path(__file__).resolve().parent.parent / "site_src" / "experiments" / "softmax-bandwidth-sweep.yaml"


def rows_per_round(y, x, plan, align) -> int:
    """Rows that plan's persistent grid takes in one round of one item a program (tile, tile-stream), else 0."""
    programs = plan.programs_per_sm * sm._sm_count(x.device)
    if plan.path == "tile":
        return programs
    if plan.path == "tile-stream":
        n_segments = sm._tile_stream_layout(y, x, plan.rows_per_program, plan.num_warps, plan.programs_per_sm,
                                            plan.segment_bytes, align, plan.shorter_segment_bytes)[3]
        return programs // n_segments
    return 0


def main() -> None:
    """Print one line per long sweep case and dtype."""
    sms = int(sys.argv[1]) if len(sys.argv) > 1 else 132
    sm._sm_count = lambda device: sms
    l2_bytes = int(sys.argv[2]) << 20 if len(sys.argv) > 2 else 50 << 20
    sm._l2_bytes = lambda device: l2_bytes
    cases = [c for c in yaml.safe_load(SWEEP.read_text())["cases"] if c["cols"] >= 65536]
    print(f"{'rows x cols':>16} {'dtype':9} {'path':12} {'segments x blocks':>17} {'rows/round':>10} {'rounds':>6} "
          f"{'cap':>6} {'fill':>6}")
    for case in cases:
        for dtype in (torch.float16, torch.float32):
            x = torch.empty((case["rows"], case["cols"]), dtype=dtype, device="meta")
            y = torch.empty_like(x)
            align = sm._forward_align(y, x)
            plan = sm._select_plan("forward", *x.shape, x.element_size(), x.device, align)
            per_round = rows_per_round(y, x, plan, align)
            segments, blocks, fill = 1, "", math.nan
            if plan.path == "tile-stream":
                vec, tile_rows, line, segments, per_segment = sm._tile_stream_layout(
                    y, x, plan.rows_per_program, plan.num_warps, plan.programs_per_sm, plan.segment_bytes, align,
                    plan.shorter_segment_bytes)
                blocks = f" x {per_segment}"
                fill = sm._grid_fill(case["rows"], sm._row_blocks(case["cols"], tile_rows * vec, align, vec, line),
                                     segments, per_segment, plan.programs_per_sm * sms)
            rounds = case["rows"] / per_round if per_round else math.nan
            # items over the item slots of the rounds run, all SMs counted (a grid of 128 leaves 4 of 132 idle)
            slots = math.ceil(rounds) * sms * plan.programs_per_sm if per_round else math.nan
            cap = case["rows"] * segments / slots
            shape = f"{case['rows']:>6} x {case['cols']:<7}"
            print(f"{shape} {str(dtype)[6:]:9} {plan.path:12} {str(segments) + blocks:>17} {per_round:>10} "
                  f"{rounds:>6.2f} {cap:>6.1%} {fill:>6.1%}")


if __name__ == "__main__":
    main()
