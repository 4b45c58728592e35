"""Probe (round 174): tma-stream's forward with its exps replaced by their arguments, to see whether the exp work is
what holds the H200's 2-byte rows under 90% of copy.

Exploration, not evidence. Rounds 167 and 170 found the H200's 2-byte forward rows from 65,536 columns (82-88% of
copy) no faster with no exchange at all and on no launch with the lag, so what holds them is in the passes; round 138
found the exp unit (MUFU) the busiest pipe there (55% of its peak over the whole kernel), round 117 found 13% fewer
other instructions worth nothing. This times the table against the same launch with gluon_softmax.CHEAP set
(notes/probes/2026-11-26-round-174-cheap-math.patch, applied on the device only): 1 replaces pass 1's exp of each
element by its argument, 2 pass 2's, 3 both (a wrong output, timed only; every other instruction, load and store
stays). The table's output is checked against float64 on every element first; the variant's is wrong by design and
never checked, but the kernels it launches are recorded. Three fresh inputs a shape, alternating which runs first.

    patch -p1 < notes/probes/2026-11-26-round-174-cheap-math.patch
    python scripts/probe_tma_cheap_math.py       # on a Hopper GPU; $OUT/probe_tma_cheap_math.json

Round 175 times the data path alone with notes/probes/2026-11-26-round-175-data-path.patch (which holds round 174's
too): CHEAP 4, pass 1 takes only the max and pass 2 stores each tile as it is (no conversion, no arithmetic); 8, pass
1 only waits for each tile. Rows still exchange their (max, sum) as in the product.

    patch -p1 < notes/probes/2026-11-26-round-175-data-path.patch
    python scripts/probe_tma_cheap_math.py 4 8   # $OUT/probe_tma_cheap_math.json
"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_long_rows import save_results, sm, warm_up_gpu  # noqa: E402
from probe_tma_no_exchange import require_patch, trials, with_attribute  # noqa: E402
from probe_trials import forward_case  # noqa: E402
from kernels import gluon_softmax as gs  # noqa: E402

SHAPES = [(65536, "bfloat16"), (100000, "float16"), (131072, "bfloat16"), (262144, "float16"), (1048576, "bfloat16"),
          (777777, "float16"), (131072, "float32"), (1048576, "float32")]


if __name__ == "__main__":
    require_patch("CHEAP", "2026-11-26-round-174-cheap-math.patch (or round 175's)")
    warm_up_gpu()
    print(torch.cuda.get_device_name(), flush=True)
    results: list = []
    for level in [int(arg) for arg in sys.argv[1:]] or (3, 1, 2):
        trials(f"CHEAP {level}", sm.softmax_forward, SHAPES, forward_case, results,
               variant=with_attribute(sm.softmax_forward, gs, "CHEAP", level))
        save_results("probe_tma_cheap_math.json", results)
