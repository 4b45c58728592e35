"""The command line behind build.py: run, check, build."""
import argparse
import contextlib
import gc
import io
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from kernellab import judge, parallel
from kernellab.artifacts import write_artifact
from kernellab.compare import compare_runs, find_run
from kernellab.content import DTYPES, load_content
from kernellab.errors import BuildError
from kernellab.render import device_label, early_plots, goal_label, kernels_state, render_files
from kernellab.source import kernels_digest
from kernellab.site import SiteWriter

ROOT = Path(__file__).resolve().parent.parent


def parse_args(argv: list) -> argparse.Namespace:
    """Parse build.py's options."""
    p = argparse.ArgumentParser(
        prog="build.py",
        description="Kernel Lab: render the evidence site from site_src/ and runs/ into public/ "
                    "(default), or run the benchmarks on a CUDA GPU first (--run).")
    p.add_argument("--run", action="store_true", help="measure on this machine's CUDA GPU, store the run in runs/, then build")
    p.add_argument("--check", action="store_true", help="validate everything and check decisions against the evidence; write nothing")
    p.add_argument("--base", metavar="REF", help="with --check: also list verdicts that changed against this git ref")
    p.add_argument("--compare", nargs=2, metavar=("RUN_A", "RUN_B"), help="print a side-by-side table of two runs; write nothing")
    p.add_argument("--experiment", action="append", default=[], metavar="SLUG", help="with --run: only this experiment (repeatable)")
    p.add_argument("--dtype", action="append", default=[], choices=DTYPES, help="with --run: only this dtype (repeatable)")
    p.add_argument("--profile", action="append", default=[], metavar="ID", help="with --run: only this profile (repeatable)")
    p.add_argument("--with-profiling", action="store_true", help="with --run: also profile each Triton result once with Nsight Compute (ncu), where it is installed")
    p.add_argument("--rows", type=int, help="with --run and --cols: measure this custom rows x cols case instead of the experiment's cases")
    p.add_argument("--cols", type=int, help="see --rows")
    p.add_argument("--root", type=Path, default=ROOT, help="project root holding site_src/ and runs/ (default: this checkout)")
    p.add_argument("--out", type=Path, help="output folder (default: ROOT/public)")
    args = p.parse_args(argv)
    if (args.rows is None) != (args.cols is None):
        p.error("--rows and --cols go together")
    if args.rows is not None and (args.rows < 1 or args.cols < 1):
        p.error("--rows and --cols must be positive")
    if not args.run and (args.experiment or args.dtype or args.profile or args.rows or args.with_profiling):
        p.error("--experiment, --dtype, --profile, --rows, --cols and --with-profiling go with --run")
    if sum(map(bool, (args.run, args.check, args.compare))) > 1:
        p.error("--run, --check and --compare do not go together")
    if args.base and not args.check:
        p.error("--base goes with --check")
    return args


def base_verdicts(root: Path, ref: str) -> dict:
    """Verdicts as they stood at a git ref: its site_src/ and runs/, judged by today's code."""
    with tempfile.TemporaryDirectory() as tmp:
        try:
            tar = subprocess.run(["git", "-C", str(root), "archive", "--format=tar", ref],
                                 capture_output=True, check=True).stdout
        except (OSError, subprocess.CalledProcessError) as exc:
            stderr = getattr(exc, "stderr", b"") or b""
            raise BuildError(f"--base {ref}", f"git cannot read that ref: {stderr.decode().strip() or exc}") from None
        with tarfile.open(fileobj=io.BytesIO(tar)) as archive:
            archive.extractall(tmp, filter="data")
        base = load_content(Path(tmp))
        return judge.current_verdicts(base.experiments, base.runs)


def verdict_changes(before: dict, after: dict) -> list:
    """[(experiment, device label, before, after)] wherever a headline verdict differs."""
    changes = []
    for slug in sorted(set(before) | set(after)):
        keys = set(before.get(slug, {})) | set(after.get(slug, {}))
        for device, origin in sorted(keys):
            old = before.get(slug, {}).get((device, origin))
            new = after.get(slug, {}).get((device, origin))
            old_v, new_v = (old.verdict if old else "not run"), (new.verdict if new else "not run")
            if old_v != new_v:
                changes.append((slug, device_label(device, origin), old_v, new_v))
    return changes


def check_summary(content, problems: list, base: tuple = None) -> str:
    """A Markdown summary fit for a pull-request comment; base is (ref, verdicts at ref)."""
    verdicts = judge.current_verdicts(content.experiments, content.runs)
    lines = ["## Kernel Lab evidence check", "",
             f"{len(content.experiments)} experiments, {len(content.decisions)} decisions, {len(content.runs)} runs.", "",
             "| Experiment | Device | Verdict | Run |", "|---|---|---|---|"]
    for slug, by_device in verdicts.items():
        for (device, origin), v in by_device.items():
            lines.append(f"| {slug} | {device_label(device, origin)} | {v.verdict} | {v.run_id} |")
    lines.append("")
    lines += goal_summary(content)
    lines += other_kernels_summary(content)
    if base:
        ref, before = base
        changes = verdict_changes(before, verdicts)
        lines += [f"### Verdicts changed against `{ref}`", ""]
        if changes:
            lines += ["| Experiment | Device | Was | Now |", "|---|---|---|---|"]
            lines += [f"| {slug} | {device} | {old} | {new} |" for slug, device, old, new in changes]
        else:
            lines.append("None.")
        lines.append("")
    if problems:
        lines += ["### Decisions that need attention", ""]
        lines += [f"- `{d['source_path']}` ({d['id']:04d} {d['title']}): {message}" for d, message in problems]
    else:
        lines.append("Every proposed or accepted decision is supported by the current evidence.")
    return "\n".join(lines)


def goal_summary(content) -> list:
    """Markdown lines: each goal's verdict on the latest run per device, or none without goals. Goals fail no check."""
    rows = []
    for slug, experiment in content.experiments.items():
        for (device, origin), run in judge.headline_runs(experiment, content.runs).items():
            for i, v in enumerate(judge.judge_goals(experiment, run), 1):
                rows.append((slug, i, goal_label(experiment["goals"][i - 1]), device_label(device, origin), v))
    if not rows:
        return []
    rows.sort(key=lambda row: row[:2])  # goal by goal within an experiment, each over its devices
    lines = ["### Goals (a missed goal fails no check)", "",
             "| Experiment | Goal | Device | Verdict | Run |", "|---|---|---|---|---|"]
    lines += [f"| {slug} | {i}: {text} | {device} | {v.verdict} | {v.run_id} |" for slug, i, text, device, v in rows]
    return lines + [""]


def other_kernels_summary(content, current=None) -> list:
    """Markdown lines naming the headline runs that measured other kernels than kernels/ holds now (current: its
    digest; read from kernels/ if None), or none. They fail no check: the next run settles them."""
    current = current or kernels_digest()
    rows = [(slug, device_label(device, origin), run["run_id"], run["git"]["commit"][:12])
            for slug, experiment in content.experiments.items()
            for (device, origin), run in judge.headline_runs(experiment, content.runs).items()
            if kernels_state(run, current) == "other"]
    if not rows:
        return []
    lines = ["### Verdicts on other kernels (kernels/ changed after these runs; no check fails)", "",
             "| Experiment | Device | Run | Commit |", "|---|---|---|---|"]
    return lines + [f"| {slug} | {device} | {run_id} | `{commit}` |" for slug, device, run_id, commit in rows] + [""]


def relative(path, root: Path) -> str:
    """path relative to root where possible, for messages."""
    try:
        return str(Path(path).resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path)


def use_caches(root: Path) -> None:
    """Keep plots, artifact validations and compiled templates between builds, in ROOT/.cache (ignored by git)."""
    from kernellab import artifacts, plots, render

    artifacts.CACHE_DIR = root / ".cache" / "validated"
    plots.CACHE_DIR = root / ".cache" / "plots"
    render.CACHE_DIR = root / ".cache" / "templates"


@contextlib.contextmanager
def loading_heap():
    """No garbage collection while loading, and what was loaded left out of later collections.

    A build loads millions of objects that live until it ends and form no cycles; each full
    collection would walk them all (half a second each time on 200 runs). main() unfreezes them.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


def load(root: Path, workers=None):
    """Load and validate everything."""
    use_caches(root)
    with loading_heap():
        content = load_content(root, workers)
    for d in content.decisions:
        d["source_path"] = relative(d["source_path"], root)
    return content


def decision_problems(content) -> list:
    """[(decision, message)] of the decisions the current verdicts do not support."""
    return judge.decision_problems(content.decisions, judge.current_verdicts(content.experiments, content.runs))


def load_and_judge(root: Path, workers=None):
    """Load and validate everything, then check decisions against the current verdicts."""
    content = load(root, workers)
    return content, decision_problems(content)


# A build of this many runs or more shares its work with a worker process: below it, forking
# one (and importing matplotlib in it) costs more than it saves.
PARALLEL_MIN_RUNS = 10


def parallel_processes(root: Path) -> int:
    """How many processes draw plots: one per CPU this process may use but one, or 0 to work alone.

    The CPU left is this process's: it judges and renders the pages, the longest chain of a
    large build. On 2 CPUs one drawing process finished the 200-run benchmark about 0.3 s sooner
    than two, which took CPU time from the pages (scripts/bench_build.py, 8 runs each).
    """
    runs = list((root / "runs").glob("*.json")) if (root / "runs").is_dir() else []
    if len(runs) < PARALLEL_MIN_RUNS or not parallel.can_fork() or parallel.usable_cpus() < 2:
        return 0
    return max(1, min(parallel.usable_cpus() - 1, parallel.MAX_PROCESSES))


def build(root: Path, out: Path) -> int:
    """Render the whole site, and swap it into out only if everything succeeded."""
    from kernellab import plots

    use_caches(root)
    processes = parallel_processes(root)
    # With no plot cache (a fresh clone) every plot is drawn: the worker imports matplotlib before
    # it starts validating. Otherwise it imports it only if some plot turns out to be missing.
    cold = not (plots.CACHE_DIR.is_dir() and any(plots.CACHE_DIR.iterdir()))
    with parallel.Workers(processes, warm_up=cold) if processes else contextlib.nullcontext() as workers:
        content = load(root, workers)
        plotter = plots.Plotter(workers)
        plotter.submit(early_plots(content))  # drawn by the worker while this process judges
        problems = decision_problems(content)
        if problems:
            for d, message in problems:
                print(f"error: {d['source_path']}: {message}", file=sys.stderr)
            print(f"build stopped: {len(problems)} decision(s) not supported by the evidence; "
                  f"{relative(out, root)}/ left as it was", file=sys.stderr)
            return 1
        with SiteWriter(out) as writer:
            for rel_path, data in render_files(content, problems, plotter, fork=workers is not None):
                writer.add(rel_path, data)
            writer.commit()
    print(f"built {len(writer.files)} files into {relative(out, root)}/ "
          f"({len(content.experiments)} experiments, {len(content.decisions)} decisions, {len(content.runs)} runs)")
    return 0


def main(argv=None, *, process_ends: bool = False) -> int:
    """Entry point: returns the process exit code. process_ends: the caller exits right after, so
    the memos are left for the exit to drop, not freed here one by one."""
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    root = args.root.resolve()
    out = (args.out or root / "public").resolve()
    try:
        if args.check:
            content, problems = load_and_judge(root)
            base = (args.base, base_verdicts(root, args.base)) if args.base else None
            print(check_summary(content, problems, base))
            return 1 if problems else 0
        if args.compare:
            content = load_content(root)
            print(compare_runs(*(find_run(content.runs, r) for r in args.compare)))
            return 0
        if args.run:
            from kernellab import measure

            content = load_content(root)  # validate inputs before spending GPU time
            unknown = [s for s in args.experiment if s not in content.experiments]
            if unknown:
                raise BuildError(root / "site_src" / "experiments", f"no experiment named {', '.join(unknown)}")
            custom = (args.rows, args.cols) if args.rows else None
            items = measure.plan(content.experiments, args.experiment, args.dtype, args.profile, custom)
            if not items:
                raise BuildError("build.py --run", "the filters leave nothing to measure")
            measure.require_gpu()
            artifact = measure.run(items, root, ["build.py", *argv], with_profiling=args.with_profiling)
            path = write_artifact(artifact, root / "runs")
            print(f"stored {relative(path, root)}")
        return build(root, out)
    except BuildError as exc:
        print(f"error: {relative(exc.path, root) if exc.path.startswith('/') else exc.path}: {exc.problem}", file=sys.stderr)
        return 1
    finally:
        if not process_ends:
            judge.forget()
            gc.unfreeze()  # a caller that goes on (the tests) gets its garbage collected again
