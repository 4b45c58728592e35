"""Probe (round 179): tma-stream's forward with pass 2 through TMA stores (gluon_softmax.TMA_STORE, _put_tile, of
notes/probes/2026-11-27-round-179-tma-store.patch, applied on the device only: it lost 1-3.5%, so the product has no
such switch).

Exploration, not evidence. The H200's 2-byte forward rows from 65,536 columns read 81-88% of copy; rounds 167-178
ruled out the exchange, the lag, register-held segments, the exps and the slots' memset. Pass 2 still stores each
tile from registers; here a tile wholly inside its item is written back into its slot and stored by the TMA. Both the
table's output and the variant's are checked against float64 on every element (the variant is exact, not a timing
stub), then timed on three fresh inputs a shape, alternating which runs first (probe_trials.ab_trials). The lagged
launches (the H200's fp32 rows past 131,072) do not take the switch and stand as controls.

    patch -p1 < notes/probes/2026-11-27-round-179-tma-store.patch
    python scripts/probe_tma_store.py       # on a Hopper GPU; $OUT/probe_tma_store.json
"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_long_rows import save_results, sm, warm_up_gpu  # noqa: E402
from probe_tma_no_exchange import launched, require_patch, with_attribute  # noqa: E402
from probe_trials import ab_trials, forward_case  # noqa: E402
from kernels import gluon_softmax as gs  # noqa: E402

# the H200's short 2-byte rows (whole view rows, off them, and edges inside tiles), then fp32 controls
SHAPES = [(65536, "bfloat16"), (131072, "bfloat16"), (262144, "float16"), (1048576, "bfloat16"), (100000, "float16"),
          (100001, "bfloat16"), (777777, "float16"), (131072, "float32"), (777777, "float32")]


if __name__ == "__main__":
    require_patch("TMA_STORE", "2026-11-27-round-179-tma-store.patch")
    warm_up_gpu()
    print(torch.cuda.get_device_name(), flush=True)
    variant = with_attribute(sm.softmax_forward, gs, "TMA_STORE", True)
    results: list = []
    for n, dtype in SHAPES:
        m, args, *_ = forward_case(n, dtype)
        print(n, dtype, launched(variant, args), flush=True)
        del args
    ab_trials("tma-store", variant, SHAPES, results, trials=3)
    save_results("probe_tma_store.json", results)
