"""Stress (round 164): the Triton kernels' cold paths forced (max_polls 0), many launches each, counted against float64.

Exploration, not evidence. Round 161's GPU test of the stream backward's forced cold path passed while its entry was
still taken warp by warp (round 162): one passing launch says little about a race. Here every case runs REPEATS
launches on fresh inputs, each checked on every element with the tests' tolerances, and the failing launches are
counted: tile-stream's forward and stream's backward at 128 x 1M and 512 x 262,144 fp32 (many items a program), and
exchange's forward and backward at 8,192 x 4,096 and 2,048 x 32,768.

With OTHER_MODULE_PATH (another version of kernels/triton_softmax.py, as `git show REV:kernels/triton_softmax.py`
writes it) the same cases run on it too, to show that the stress catches what it is for.

    python scripts/stress_triton_cold_paths.py [REPEATS] [OTHER_MODULE_PATH]   # on a CUDA GPU; $OUT/...json
"""
import json
import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from tolerances import BACKWARD_TOL, FORWARD_TOL  # noqa: E402
import kernels.triton_softmax as sm  # noqa: E402
from sass_digest import load_module  # noqa: E402

STREAM_SHAPES = ((128, 1 << 20), (512, 262144))
EXCHANGE_SHAPES = ((8192, 4096), (2048, 32768))


def operands(n_rows: int, n_cols: int, seed: int):
    """(x, y = softmax(x), dy): randn * 3 with a random offset a row, fp32 on the GPU."""
    generator = torch.Generator(device="cuda").manual_seed(seed)
    x = (torch.randn(n_rows, n_cols, generator=generator, device="cuda") * 3
         + torch.randn(n_rows, 1, generator=generator, device="cuda") * 10)
    return x, torch.softmax(x, -1), torch.randn(n_rows, n_cols, generator=generator, device="cuda")


def forward_right(y: torch.Tensor, x: torch.Tensor) -> bool:
    """Whether y is softmax(x) within the tests' fp32 tolerance, on every element."""
    atol, rtol = FORWARD_TOL[torch.float32]
    return torch.allclose(y.double(), torch.softmax(x.double(), -1), atol=atol, rtol=rtol)


def backward_right(dx: torch.Tensor, y: torch.Tensor, dy: torch.Tensor) -> bool:
    """Whether dx is y * (dy - sum(y * dy)) within the tests' fp32 tolerance, on every element."""
    y64, dy64 = y.double(), dy.double()
    expected = y64 * (dy64 - (y64 * dy64).sum(-1, keepdim=True))
    atol_fraction, rtol = BACKWARD_TOL[torch.float32]
    return torch.allclose(dx.double(), expected, atol=atol_fraction * expected.abs().max().item(), rtol=rtol)


def stream_case(sm, op: str, n_rows: int, n_cols: int, seed: int) -> bool:
    """One forced-cold launch of the table's stream path (tile-stream forward, stream backward): right or not."""
    x, y, dy = operands(n_rows, n_cols, seed)
    plan = sm._select_plan(op, n_rows, n_cols, 4, x.device, 4, False)
    assert plan.path in ("stream", "tile-stream"), plan
    out = torch.empty_like(x)
    if op == "forward":
        sm._launch_forward_path(out, x, plan, 4)
        return forward_right(out, x)
    sm._launch_backward_path(out, y, dy, plan, 4)
    return backward_right(out, y, dy)


def exchange_case(sm, op: str, n_rows: int, n_cols: int, seed: int) -> bool:
    """One forced-cold launch of exchange: right or not."""
    x, y, dy = operands(n_rows, n_cols, seed)
    if op == "forward":
        return forward_right(sm.exchange_forward(x), x)
    return backward_right(sm.exchange_backward(y, dy), y, dy)


def main() -> None:
    """Count the failing launches of each version and case; print them and write them to $OUT."""
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    versions = {"working tree": sm}
    if len(sys.argv) > 2:
        versions["other"] = load_module(sys.argv[2], "triton_softmax_other")
    results = {"device": torch.cuda.get_device_name(), "repeats": repeats, "cases": []}
    print(results["device"], flush=True)
    for version, module in versions.items():
        module._max_polls = lambda: 0
        for case, shapes in ((stream_case, STREAM_SHAPES), (exchange_case, EXCHANGE_SHAPES)):
            for op in ("forward", "backward"):
                for n_rows, n_cols in shapes:
                    failed = sum(not case(module, op, n_rows, n_cols, seed) for seed in range(repeats))
                    line = {"version": version, "case": case.__name__, "op": op, "shape": [n_rows, n_cols],
                            "failed": failed}
                    print(line, flush=True)
                    results["cases"].append(line)
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], "stress_triton_cold_paths.json").write_text(json.dumps(results, indent=1,
                                                                                      sort_keys=True))


if __name__ == "__main__":
    main()
