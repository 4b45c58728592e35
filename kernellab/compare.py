"""`build.py --compare RUN_A RUN_B`: a side-by-side table of two runs with ratios and significance."""
from kernellab import stats
from kernellab.errors import BuildError


def find_run(runs: list, run_id: str) -> dict:
    """The run with this id (or file name), or a BuildError listing the known ids."""
    wanted = run_id.rsplit("/", 1)[-1].removesuffix(".json")
    for run in runs:
        if run["run_id"] == wanted:
            return run
    raise BuildError("runs/", f"no run {run_id!r}; known runs: {', '.join(r['run_id'] for r in runs)}")


def compare_runs(a: dict, b: dict) -> str:
    """Markdown table of every result the two runs share, B's median over A's, with a Mann-Whitney p."""
    keyed_b = {(r["experiment"], r["case"], r["profile"], r["dtype"], r["pass"]): r for r in b["results"]}
    lines = [f"## {a['run_id']} (A) vs {b['run_id']} (B)", "",
             f"A: {a['environment']['device']['name']}, commit {a['git']['commit'][:12]}, {_copy(a)}; "
             f"B: {b['environment']['device']['name']}, commit {b['git']['commit'][:12]}, {_copy(b)}", "",
             "| experiment | case | profile | dtype | pass | A median ms | B median ms | B/A time | p (Mann-Whitney) | |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    shared = 0
    for ra in a["results"]:
        key = (ra["experiment"], ra["case"], ra["profile"], ra["dtype"], ra["pass"])
        rb = keyed_b.get(key)
        if rb is None or not ra.get("timing") or not rb.get("timing"):
            continue
        shared += 1
        ma, mb = ra["timing"]["median_ms"], rb["timing"]["median_ms"]
        sa, sb = ra["timing"]["samples_ms"], rb["timing"]["samples_ms"]
        p = stats.mann_whitney_p(sa, sb) if sa and sb else None
        if p is None:
            mark = "no samples"
        elif p >= stats.SIGNIFICANCE:
            mark = "same within noise"
        else:
            mark = "B slower" if mb > ma else "B faster"
        lines.append(f"| {' | '.join(key)} | {ma:.4g} | {mb:.4g} | {mb / ma:.3f} | "
                     f"{'n/a' if p is None else f'{p:.2g}'} | {mark} |")
    if not shared:
        lines.append("| (no timed results in common) | | | | | | | | | |")
    lines += ["", f"{shared} results in common. Significant: p < {stats.SIGNIFICANCE}. The p-values compare the samples "
              "within each run; two runs also differ by their machine and session (in three H100 runs of one day, results "
              "whose code had not changed moved by a median of 0.1-0.2% and by up to 2%: notes/kernels.md, round 72), "
              "so a small significant difference is a lead to repeat, not yet a result."]
    return "\n".join(lines)


def _copy(run: dict) -> str:
    """The copy bandwidth a run measured beside its results, as words."""
    gbs = (run.get("copy_bandwidth") or {}).get("gbs")
    return f"copy {gbs:,.0f} GB/s" if gbs else "no copy bandwidth"
