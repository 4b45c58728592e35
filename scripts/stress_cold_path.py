"""Stress: the tma-stream kernels' cold path (max_polls 0: every program computes the partials its siblings have not
published from global memory) run many times, for kernels/gluon_softmax.py and, to compare, another version of it.

Exploration, not evidence. One H100 run of tests/test_gluon_softmax.py once failed the backward's max_polls-0 test:
a segment's dx off by about one segment's partial dot. Each launch here is checked against float64 with the tests'
tolerances; the script counts the failing launches of each version.

    python scripts/stress_cold_path.py [OTHER_MODULE_PATH] [REPEATS]   # on a Hopper GPU
"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from tolerances import BACKWARD_TOL, FORWARD_TOL  # noqa: E402
import kernels.triton_softmax as sm  # noqa: E402
from sass_digest import load_module  # noqa: E402


def forward_fails(gs, n_cols: int, seed: int) -> bool:
    """Whether one max_polls-0 forward of 3 x n_cols float32 misses float64 anywhere."""
    x = torch.randn(3, n_cols, generator=torch.Generator(device="cuda").manual_seed(seed), device="cuda") * 3
    plan = sm._select_plan("forward", 3, n_cols, 4, x.device, 1, True)
    y = torch.empty_like(x)
    gs.tma_stream_forward(y, x, plan.rows_per_program, plan.num_warps, plan.segment_bytes, 0)
    atol, rtol = FORWARD_TOL[torch.float32]
    return not torch.allclose(y.double(), torch.softmax(x.double(), -1), atol=atol, rtol=rtol)


def backward_fails(gs, seed: int) -> bool:
    """Whether one max_polls-0 backward of 3 x 1M float32 misses float64 anywhere."""
    generator = torch.Generator(device="cuda").manual_seed(seed)
    y = torch.softmax(torch.randn(3, 1 << 20, generator=generator, device="cuda") * 3, -1)
    dy = torch.randn(3, 1 << 20, generator=generator, device="cuda")
    plan = sm._select_plan("backward", 3, 1 << 20, 4, y.device, 4, True)
    dx = torch.empty_like(y)
    gs.tma_stream_backward(dx, y, dy, plan.rows_per_program, plan.num_warps, plan.segment_bytes, 0, plan.maxnreg)
    y64, dy64 = y.double(), dy.double()
    expected = y64 * (dy64 - (y64 * dy64).sum(-1, keepdim=True))
    atol_fraction, rtol = BACKWARD_TOL[torch.float32]
    return not torch.allclose(dx.double(), expected, atol=atol_fraction * expected.abs().max().item(), rtol=rtol)


def main() -> None:
    """Count failing launches per version and case."""
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    versions = {"working tree": str(Path(__file__).resolve().parent.parent / "kernels" / "gluon_softmax.py")}
    if len(sys.argv) > 1 and sys.argv[1] != "-":
        versions["other"] = sys.argv[1]
    print(torch.cuda.get_device_name(), flush=True)
    for name, path in versions.items():
        gs = load_module(path, f"gluon_softmax_{name.replace(' ', '_')}")
        for case, fails in (("forward 1M", lambda s: forward_fails(gs, 1 << 20, s)),
                            ("forward 777,777", lambda s: forward_fails(gs, 777777, s)),
                            ("backward 1M", lambda s: backward_fails(gs, s))):
            failed = sum(fails(seed) for seed in range(repeats))
            print(f"{name}: {case}: {failed} of {repeats} launches failed", flush=True)


if __name__ == "__main__":
    main()
