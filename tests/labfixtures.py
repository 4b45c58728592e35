"""Synthetic projects for the generator tests: a copy of site_src/ plus fixture run artifacts.

The artifacts here are test fixtures made in temporary folders, never files in runs/.
"""
import json
import random
import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEVICE = "Fixture GPU H-1"


def samples(median_ms: float, n: int = 200, spread: float = 0.02, seed: int = 0) -> list:
    """Timing samples around a median, with a small relative spread."""
    rng = random.Random(seed)
    return [round(median_ms * (1 + rng.uniform(-spread, spread)), 6) for _ in range(n)]


def timing(median_ms: float, **kw) -> dict:
    """A timing block in the artifact format."""
    s = samples(median_ms, **kw)
    ordered = sorted(s)
    return {"median_ms": ordered[len(s) // 2], "p20_ms": ordered[len(s) // 5], "p80_ms": ordered[4 * len(s) // 5],
            "min_ms": ordered[0], "max_ms": ordered[-1], "n_samples": len(s), "samples_ms": s}


def result(profile: str, dtype: str, median_ms: float, *, status="ok", case="softmax-4096x1024",
           experiment="row-softmax-fusion", copy_gbs=3000.0, spread=0.02, seed=0) -> dict:
    """One forward result at 4096x1024."""
    moved = 2 * 4096 * 1024 * (2 if dtype != "float32" else 4)
    t = timing(median_ms, spread=spread, seed=seed) if status == "ok" else None
    gbs = round(moved / (t["median_ms"] * 1e6), 3) if t else None
    return {
        "experiment": experiment, "case": case, "profile": profile, "dtype": dtype, "shape": [4096, 1024],
        "pass": "forward", "status": status, "error": None,
        "correctness": {"passed": status == "ok", "max_abs_err": 1e-4 if status == "ok" else 0.5,
                        "atol": 1e-5, "rtol": 2e-3, "n_checked": 4096 * 1024, "reference": "torch float64 on the same input"},
        "timing": t, "bytes_moved": moved, "gbs": gbs, "copy_share": round(gbs / copy_gbs, 5) if gbs else None,
    }


def artifact(run_id: str, results: list, *, device=DEVICE, started="2026-11-21T10:00:00Z", copy_gbs=3000.0,
             kernels_sha256=None) -> dict:
    """A measured run artifact holding the given results (kernels_sha256: the kernels/ it measured, if recorded)."""
    return {
        "schema_version": 2, "run_id": run_id, "origin": "measured",
        "started_utc": started, "finished_utc": started, "command": "python build.py --run",
        "git": {"commit": "0123456789abcdef0123456789abcdef01234567", "dirty": False, "kernels_sha256": kernels_sha256},
        "environment": {
            "device": {"name": device, "sm_count": 132, "memory_bytes": 80 * 2**30, "l2_bytes": 50 * 2**20, "capability": "9.0"},
            "driver": "580.0", "cuda": "13.0", "torch": "2.11.0", "triton": "3.6.0", "python": "3.12.3", "platform": "Linux",
        },
        "settings": {"timer": "triton.testing.do_bench (CUDA events)", "warmup_ms": 25, "rep_ms": 100, "l2_flushed": True, "seed": 1},
        "copy_bandwidth": {"bytes_moved": 2 * 2**30, "gbs": copy_gbs, "timing": timing(2 * 2**30 / copy_gbs / 1e6)},
        "results": results,
    }


def winning_results(candidate_ms=0.010, baseline_ms=0.015) -> list:
    """Results where the Triton kernel is clearly faster in both dtypes."""
    out = []
    for i, dtype in enumerate(["float16", "float32"]):
        out.append(result("torch-baseline", dtype, baseline_ms * (1 + i), seed=10 + i))
        out.append(result("triton-fused-row-softmax", dtype, candidate_ms * (1 + i), seed=20 + i))
    return out


def make_project(tmp: Path, runs: list = (), decisions: dict | None = None) -> Path:
    """A project root in tmp: site_src/ and templates copied from the repo, the given runs written."""
    root = tmp / "project"
    shutil.copytree(REPO / "site_src", root / "site_src")
    (root / "runs").mkdir(parents=True)
    for run in runs:
        (root / "runs" / f"{run['run_id']}.json").write_text(json.dumps(run, indent=2, sort_keys=True))
    shutil.copy(REPO / "runs" / "imported-a10g-seed-004.json", root / "runs")
    # The repo's own decisions rest on its real GPU runs, which fixture projects do not have:
    # keep only 0001, which rests on the imported A10G figures copied above.
    for p in (root / "site_src" / "decisions").glob("*.md"):
        if decisions is not None or not p.name.startswith("0001-"):
            p.unlink()
    for name, text in (decisions or {}).items():
        (root / "site_src" / "decisions" / name).write_text(text)
    return root


def decision(id_: int, device: str, expects: str, *, origin="measured", status="accepted", body="Body.") -> str:
    """A decision record resting on row-softmax-fusion on one device."""
    return (f"---\nid: {id_}\ntitle: Decision {id_}\nstatus: {status}\ndate: 2026-11-21\nrests_on:\n"
            f"  - experiment: row-softmax-fusion\n    device: {device}\n    origin: {origin}\n    expects: {expects}\n---\n\n{body}\n")
