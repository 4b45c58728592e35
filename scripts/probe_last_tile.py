"""Probe (round 111): how an item's last tile is asked for, against round 108's whole box beside the tile it follows.

Exploration, not evidence. Round 110 asked for the last tile's view rows one box each, after pass 2's loop, and lost
1-4% where round 109 said a whole box's over-read costs up to 1.8 points. This separates the two changes: part_rows
32 (fp32: one whole box, after pass 2's loop: the move alone; round 111 ran it as 0, then the whole box), 8 and 4
(a few boxes of a quarter or an eighth of a tile) and 1 (round 110), each against another version of
kernels/gluon_softmax.py on the table's plan, three fresh inputs a shape, alternating which goes first, every output
checked (probe_trials.ab_trials). A ratio over 1: the working tree is faster.

    git show <round 108 commit>:kernels/gluon_softmax.py > before_gluon.py
    python scripts/probe_last_tile.py before_gluon.py [PART_ROWS ...]   # on a Hopper GPU; $OUT/probe_last_tile.json
"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_even_segments import SHAPES, with_module  # noqa: E402
from probe_long_rows import save_results, warm_up_gpu  # noqa: E402
from probe_trials import ab_trials  # noqa: E402
from sass_digest import load_module  # noqa: E402
from kernels import gluon_softmax as gs  # noqa: E402

if __name__ == "__main__":
    warm_up_gpu()
    print(torch.cuda.get_device_name(), flush=True)
    before = with_module(load_module(sys.argv[1], "gluon_softmax_before"))
    results = []
    for part_rows in [int(a) for a in sys.argv[2:]] or (32, 8, 4, 1):
        ab_trials(f"last tile in boxes of {part_rows} view rows against round 108",
                  with_module(gs, part_rows=part_rows), SHAPES, results, baseline=before, trials=3)
    save_results("probe_last_tile.json", results)
