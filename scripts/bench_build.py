"""How long does a build take from many run artifacts? `python scripts/bench_build.py [N] [--repeat K] [--keep]`.

Makes N synthetic measured artifacts (fixtures in a temporary folder, never in runs/) spread over
the real experiments in site_src/ and two devices, every case, profile and dtype with 300 timing
samples, then times `build.py` on them twice, as a user runs it: cold (no .cache/, as in a fresh
clone: every artifact validated, every plot drawn) and warm (both reused, as in a rebuild).
--repeat K does that K times and prints the median and the range of each (a shared machine's
speed drifts by tens of percent from minute to minute, so one build says little).
--keep leaves the project in /tmp/bench-root for profiling.
"""
import argparse
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from kernellab.artifacts import dumps  # noqa: E402
from kernellab.content import load_experiment  # noqa: E402
from kernellab.measure import BYTES_PER_ELEMENT, TENSORS_MOVED, timing_stats  # noqa: E402


def synthetic_run(i: int, experiments: list, rng: random.Random) -> dict:
    """One artifact: every case/profile/dtype of one experiment, timings drawn at random."""
    exp = experiments[i % len(experiments)]
    device = ("Bench GPU A", "Bench GPU B")[i % 2]
    results = []
    for case in exp["cases"]:
        for profile in exp["profiles"]:
            for dtype in exp["dtypes"]:
                for pass_ in exp["passes"]:
                    moved = TENSORS_MOVED[pass_] * case["rows"] * case["cols"] * BYTES_PER_ELEMENT[dtype]
                    median = moved / 3e9 * rng.uniform(1.05, 3.0)  # ms: 1.05-3x the time at 3 TB/s
                    timing = timing_stats([median * rng.uniform(0.97, 1.05) for _ in range(300)])
                    gbs = moved / timing["median_ms"] / 1e6
                    results.append({
                        "experiment": exp["slug"], "case": case["id"], "profile": profile, "dtype": dtype,
                        "shape": [case["rows"], case["cols"]], "pass": pass_, "status": "ok", "error": None,
                        "correctness": {"passed": True, "max_abs_err": 1e-4, "atol": 1e-7, "rtol": 1e-3,
                                        "n_checked": case["rows"] * case["cols"], "reference": "synthetic"},
                        "timing": timing, "bytes_moved": moved, "gbs": round(gbs, 3), "copy_share": round(gbs / 4000, 5),
                    })
    copy = {"bytes_moved": 2 << 30, "gbs": 4000.0, "timing": timing_stats([0.537] * 10)}
    return {
        "schema_version": 2, "run_id": f"2026{i:06d}-bench", "origin": "measured",
        "started_utc": f"2026-11-{1 + i // 10:02d}T00:{i % 60:02d}:00Z", "finished_utc": None,
        "command": "scripts/bench_build.py (synthetic)", "git": {"commit": f"{i:040x}", "dirty": False, "kernels_sha256": None},
        "environment": {"device": {"name": device, "sm_count": 132, "memory_bytes": None, "l2_bytes": None,
                                   "capability": "9.0"}, "driver": None, "cuda": None, "torch": None,
                        "triton": None, "python": None, "platform": None},
        "settings": {"timer": "synthetic", "warmup_ms": None, "rep_ms": None, "l2_flushed": None, "seed": i},
        "copy_bandwidth": copy, "three_tensor_bandwidth": dict(copy, bytes_moved=3 << 30),
        "results": results,
    }


def timed_build(root: Path) -> float:
    """Seconds for one `python build.py` on root, as a user runs it."""
    start = time.perf_counter()
    subprocess.run([sys.executable, str(REPO / "build.py"), "--root", str(root), "--out", str(root / "public")],
                   check=True, capture_output=True)
    return time.perf_counter() - start


def cold_and_warm(root: Path) -> tuple:
    """(cold, warm) seconds: a build with no .cache/, then a rebuild."""
    shutil.rmtree(root / ".cache", ignore_errors=True)
    return timed_build(root), timed_build(root)


def spread(seconds: list) -> str:
    """'4.2 s' for one time; 'median 4.2 s (3.9-4.6)' for several."""
    if len(seconds) == 1:
        return f"{seconds[0]:.1f} s"
    return f"median {statistics.median(seconds):.1f} s ({min(seconds):.1f}-{max(seconds):.1f})"


def main(n: int, repeat: int, keep: bool) -> None:
    """Build N synthetic artifacts and print cold and warm build times."""
    rng = random.Random(0)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        shutil.copytree(REPO / "site_src", root / "site_src")
        (root / "runs").mkdir()
        experiments = [load_experiment(p) for p in sorted((root / "site_src" / "experiments").glob("*.yaml"))]
        for i in range(n):
            run = synthetic_run(i, experiments, rng)
            (root / "runs" / f"{run['run_id']}.json").write_text(dumps(run))  # as build.py --run writes them
        for d in (root / "site_src" / "decisions").glob("*.md"):
            d.unlink()  # the real decisions name real devices
        size = sum(p.stat().st_size for p in (root / "runs").iterdir()) / 2**20
        if keep:
            shutil.copytree(root, "/tmp/bench-root", dirs_exist_ok=True)
        times = [cold_and_warm(root) for _ in range(repeat)]
        pages = sum(1 for _ in (root / "public").rglob("*.html"))
        print(f"{n} artifacts ({size:.0f} MiB), {pages} pages: cold build {spread([t[0] for t in times])}, "
              f"warm build {spread([t[1] for t in times])}" + (f" over {repeat} builds each" if repeat > 1 else ""))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n", nargs="?", type=int, default=200, help="synthetic run artifacts (default 200)")
    parser.add_argument("--repeat", type=int, default=1, metavar="K", help="cold and warm builds to time, K of each")
    parser.add_argument("--keep", action="store_true", help="leave the project in /tmp/bench-root")
    args = parser.parse_args()
    main(args.n, max(1, args.repeat), args.keep)
