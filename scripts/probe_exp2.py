"""Probe: the product's kernels with exp(x - m) computed as exp2(x * log2(e) - m * log2(e)) (round 15).

Exploration, not evidence. tl.exp(x - m) compiles to a subtraction, a multiplication by log2(e)
and ex2; written as exp2(x * log2(e) - m * log2(e)) the first two become one FMA per element (m *
log2(e) is per row). The H200's 2-byte rows are issue-bound (rounds 5, 7, 9), so one instruction
less per element may show there. This probe times the dispatcher as committed against the same
module with that one rewrite, shape by shape in one process, both checked against float64 on every
element first. It measures the speed only: the rewrite's rounding (m * log2(e) is rounded once per
row) needs its own care before any product change (notes/kernels.md, round 15).

    python scripts/probe_exp2.py     # on a CUDA machine; $OUT/probe_exp2.json when OUT is set
"""
import importlib.util
import sys
import tempfile
from pathlib import Path


sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from kernels import triton_softmax as sm  # noqa: E402
from probe_long_rows import forward_configs_probe, run_probes  # noqa: E402

LOG2E = "1.4426950408889634"
REWRITES = [  # (the product's text, the rewrite): every hot exp(x - max) of the forward paths
    ("tl.exp(x - tl.max(x, axis=1)[:, None])", f"tl.exp2(x * {LOG2E} - (tl.max(x, axis=1) * {LOG2E})[:, None])"),
    ("tl.exp(x - tl.max(x, axis=0))", f"tl.exp2(x * {LOG2E} - tl.max(x, axis=0) * {LOG2E})"),
    ("tl.exp(x - safe_max[:, None])", f"tl.exp2(x * {LOG2E} - (safe_max * {LOG2E})[:, None])"),
    ("tl.exp(x - row_max)", f"tl.exp2(x * {LOG2E} - row_max * {LOG2E})"),
]


def exp2_module():
    """The product module with REWRITES applied, imported from a temporary file."""
    source = Path(sm.__file__).read_text()
    for old, new in REWRITES:
        assert old in source, old
        source = source.replace(old, new)
    path = Path(tempfile.mkdtemp()) / "triton_softmax_exp2.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("triton_softmax_exp2", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


NS = [1024, 4096, 8192, 8200, 10000, 12800, 16384, 24000, 32768, 65536, 131072, 262144, 1048576]


def exp2_probe(out: list) -> None:
    """Committed dispatcher (the probe's 'dispatcher' line) against the rewritten one, per shape."""
    fast = exp2_module()
    forward_configs_probe("exp2", NS, [("exp2 dispatcher", fast.softmax_forward)], out,
                          dtypes=["float16", "bfloat16", "float32"])


if __name__ == "__main__":
    run_probes({"exp2": exp2_probe}, ["exp2"], "probe_exp2.json")
