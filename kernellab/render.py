"""Turn loaded, judged content into site files: {relative path: bytes}. Nothing is written here."""
import functools
import html
import re
from pathlib import Path

from jinja2 import Environment, FileSystemBytecodeCache, FileSystemLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from kernellab import judge, parallel, plots
from kernellab.artifacts import SCHEMA_PATH
from kernellab.content import Content
from kernellab.sanitize import render_markdown
from kernellab.source import kernel_source, kernels_digest
from kernels.profiles import PROFILES

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"
VERDICT_ORDER = ("supported", "rejected", "inconclusive", "invalid", "not run")


def slugify(text: str) -> str:
    """Lower-case words joined by '-', for anchors and file names."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def fmt_ms(value) -> str:
    """Milliseconds with four significant digits."""
    return "n/a" if value is None else f"{value:.4g} ms"


def fmt_gbs(value) -> str:
    """GB/s, whole numbers."""
    return "n/a" if value is None else f"{value:,.0f} GB/s"


def fmt_pct(value) -> str:
    """A share as a percentage."""
    return "n/a" if value is None else f"{100 * value:.1f}%"


def fmt_x(value) -> str:
    """A ratio such as a speedup."""
    return "n/a" if value is None else f"{value:.3f}\u00d7"


def fmt_bytes(value) -> str:
    """Bytes in GiB or MiB."""
    if value is None:
        return "n/a"
    return f"{value / 2**30:.1f} GiB" if value >= 2**30 else f"{value / 2**20:.1f} MiB"


# Where compiled templates are kept between builds (Jinja checks their source); None: no cache.
CACHE_DIR: Path | None = None
PAGE_TEMPLATES = ("index.html", "experiment.html", "decision.html", "run.html", "kernel.html")


def make_env() -> Environment:
    """The Jinja2 environment: autoescaping everything, undefined names are errors."""
    if CACHE_DIR is not None:
        CACHE_DIR.mkdir(parents=True, exist_ok=True)
    env = Environment(
        loader=FileSystemLoader(str(TEMPLATES)),
        autoescape=select_autoescape(["html"]),
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        # Compiling the templates takes a fifth of a second; from the cache, a hundredth.
        bytecode_cache=FileSystemBytecodeCache(str(CACHE_DIR)) if CACHE_DIR else None,
    )
    env.filters.update(ms=fmt_ms, gbs=fmt_gbs, pct=fmt_pct, x=fmt_x, bytes=fmt_bytes, slug=slugify,
                       markdown=lambda text: Markup(render_markdown(text)))
    env.globals.update(profiles=PROFILES, how_verdicts=judge.HOW_VERDICTS_ARE_REACHED, ceiling_for=judge.ceiling_for,
                       how_goals=judge.HOW_GOALS_ARE_REACHED,
                       headline=headline, result_rows=result_rows, kernel_fact_rows=kernel_fact_rows)
    return env


def compile_templates() -> None:
    """Compile every page template into CACHE_DIR, for a build that has not yet come to its pages."""
    if CACHE_DIR is not None:
        env = make_env()
        for name in PAGE_TEMPLATES:
            env.get_template(name)


def device_label(device: str, origin: str) -> str:
    """How a device group is named on the page."""
    return f"{device} (imported)" if origin == "imported" else device


def headline(verdict) -> str:
    """The index's one-line figure for a verdict: the worst and best speedup of the claim."""
    measured = sorted((c for c in verdict.comparisons if c.speedup is not None), key=lambda c: c.speedup)
    if not measured:
        return ""
    worst, best = measured[0], measured[-1]
    if len(measured) == 1:
        return f"speedup {fmt_x(worst.speedup)} ({worst.dtype})"
    return (f"speedup {fmt_x(worst.speedup)} ({worst.case}, {worst.dtype}) to {fmt_x(best.speedup)} "
            f"over {len(measured)} cases")


def result_cards(experiment: dict, run: dict) -> list:
    """One card per (case, dtype, profile) of the headline run, with speedup vs the claim's baseline."""
    index = judge.results_index(run)
    claim = experiment["claim"]
    cards = []
    for case in experiment["cases"]:
        for dtype in experiment["dtypes"]:
            baseline = index.get((experiment["slug"], case["id"], claim["baseline"], dtype, claim["pass"]))
            for pid in experiment["profiles"]:
                r = index.get((experiment["slug"], case["id"], pid, dtype, claim["pass"]))
                if r is None:
                    continue
                speedup = None
                if pid != claim["baseline"] and r["status"] == "ok" and (baseline or {}).get("status", "ok") == "ok":
                    speedup = judge.speedup_interval(baseline or {}, r)
                cards.append({"case": case["id"], "dtype": dtype, "profile": pid, "result": r,
                              "speedup": speedup, "suspect": judge.is_suspect(r, run)})
    return cards


def bandwidth_table(experiment: dict, run: dict, dtype: str) -> dict:
    """{profile: [(n_cols, gbs, copy_share), ...]} for one dtype of a run, by row length."""
    index = judge.results_index(run)
    table = {}
    for pid in experiment["profiles"]:
        points = []
        for case in experiment["cases"]:
            r = index.get((experiment["slug"], case["id"], pid, dtype, experiment["claim"]["pass"]))
            if r and r["status"] == "ok" and r["gbs"] is not None:
                points.append((case["cols"], r["gbs"], r["copy_share"]))
        if points:
            table[pid] = sorted(points)
    return table


def bandwidth_rows(table: dict, ns: list) -> list:
    """[(n, [(n, gbs, copy_share) or None per profile])]: the bandwidth table by row length, looked up
    here once rather than searched per cell in the template."""
    by_n = {pid: {} for pid in table}
    for pid, points in table.items():
        for point in points:
            by_n[pid].setdefault(point[0], point)
    return [(n, [by_n[pid].get(n) for pid in table]) for n in ns]


def group_plots(experiment: dict, run: dict, verdict, label: str, anchor: str) -> list:
    """The plots of one device's headline run: {path, job, alt, caption, kind, ...}; job is
    (plot function, arguments), drawn later (see plots.Plotter)."""
    figures = run_plots(experiment, run, label, anchor)
    bandwidth = [f for f in figures if f["kind"] == "bandwidth"]
    return bandwidth + speedup_plot(experiment, verdict, label, anchor) + [f for f in figures if f["kind"] != "bandwidth"]


def run_plots(experiment: dict, run: dict, label: str, anchor: str) -> list:
    """The plots of a headline run that need no verdict: bandwidth against N, latency distribution."""
    slug, out = experiment["slug"], []
    if len({c["cols"] for c in experiment["cases"]}) >= 3:
        ceiling_name, ceiling = judge.ceiling_for(run, experiment["claim"]["pass"])
        ceiling_gbs = (ceiling or {}).get("gbs")
        short_name = ceiling_name.removesuffix(" bandwidth")  # "copy", "two-reads-one-write"
        goals = plotted_goals(experiment, ceiling_name, ceiling_gbs)
        for dtype in experiment["dtypes"]:
            table = bandwidth_table(experiment, run, dtype)
            if not table:
                continue
            ns = sorted({p[0] for points in table.values() for p in points})
            out.append({
                "kind": "bandwidth", "dtype": dtype, "table": table, "rows": bandwidth_rows(table, ns),
                "ceiling_gbs": ceiling_gbs, "ceiling_name": ceiling_name, "goals": goals,
                "path": f"experiments/{slug}/{anchor}-bandwidth-{dtype}.svg",
                "job": (plots.bandwidth_vs_n, ({p: [(n, g) for n, g, _ in pts] for p, pts in table.items()},
                                               ceiling_gbs, f"{label}, {dtype}", short_name, goals)),
                "alt": f"Line plot of GB/s against row length N for each profile in {dtype} on {label}, "
                       f"with the {short_name} ceiling as a dashed line{goal_words(goals)}; "
                       "the numbers are in the table beside it.",
                "caption": f"Throughput against row length, {dtype}",
            })
    groups = [(f"{r['profile']} {r['dtype']}", r["timing"]["samples_ms"]) for r in run["results"]
              if r["experiment"] == slug and r["status"] == "ok" and r.get("timing") and r["timing"]["samples_ms"]]
    if groups and len(experiment["cases"]) == 1:
        out.append({
            "kind": "latency", "path": f"experiments/{slug}/{anchor}-latency.svg",
            "job": (plots.latency_distribution, (groups, label)),
            "alt": f"Box plots of the timing samples per profile and dtype on {label}; medians and p20-p80 are in the result cards.",
            "caption": "Latency distribution from the timing samples",
        })
    return out


def plotted_goals(experiment: dict, ceiling_name: str, ceiling_gbs) -> tuple:
    """((bar in words, GB/s), ...) of the share goals of the bandwidth plot's pass, against its ceiling.

    A tuple of tuples: it is part of a plot's arguments, which key the plot cache by their repr.
    """
    if not ceiling_gbs:  # no ceiling measured (imported figures): no line to take a share of
        return ()
    goals = [g for g in experiment.get("goals", [])
             if judge.is_share_test(g) and g["pass"] == experiment["claim"]["pass"]]
    return tuple((judge.bar_text(g, ceiling_name), g["min_share"] * ceiling_gbs) for g in goals)


def goal_words(goals: tuple) -> str:
    """The plotted goals for a plot's alt text: " and the goal (90% of copy) as a dotted line", or ""."""
    if not goals:
        return ""
    bars = ", ".join(bar for bar, _ in goals)
    return f" and the goal ({bars}) as a dotted line" if len(goals) == 1 else f" and the goals ({bars}) as dotted lines"


def speedup_plot(experiment: dict, verdict, label: str, anchor: str) -> list:
    """The speedup per case and dtype of a verdict, with intervals: one plot, or none without speedups."""
    rows = [(f"{c.case} {c.dtype}", c.speedup, c.low, c.high) for c in verdict.comparisons if c.speedup is not None]
    if not rows:
        return []
    return [{
        "kind": "speedup", "path": f"experiments/{experiment['slug']}/{anchor}-speedup.svg",
        "job": (plots.speedup_intervals, (rows, experiment["claim"]["min_speedup"], label)),
        "alt": f"Speedup of {experiment['claim']['candidate']} over {experiment['claim']['baseline']} per case and "
               f"dtype on {label}, with confidence intervals and the bar; the numbers are in the claim table.",
        "caption": "Speedup per case and dtype, with its interval",
    }]


def early_plots(content: Content) -> dict:
    """{path: job} of the plots that need no verdict, for a build to start drawing before it judges."""
    jobs = {}
    for experiment in content.experiments.values():
        for (device, origin), run in judge.headline_runs(experiment, content.runs).items():
            label = device_label(device, origin)
            jobs.update((p["path"], p["job"]) for p in run_plots(experiment, run, label, slugify(label)))
    return jobs


def history_rows(experiment: dict, history: list, runs_by_id: dict) -> list:
    """One row per run of a device, oldest first, with regressions against the run before."""
    rows = []
    for i, v in enumerate(history):
        run = runs_by_id[v.run_id]
        found = judge.regressions(experiment, runs_by_id[history[i - 1].run_id], run) if i else []
        rows.append({"verdict": v, "run": run, "regressions": found,
                     "speedups": [c for c in v.comparisons if c.speedup is not None]})
    return rows


def trend_plot(experiment: dict, rows: list, label: str, anchor: str) -> dict:
    """Speedup per (case, dtype) across the runs of one device."""
    series = {}
    for i, row in enumerate(rows):
        for c in row["speedups"]:
            series.setdefault(f"{c.case} {c.dtype}", []).append((i, c.speedup, c.low, c.high))
    ticks = [f"{row['run']['git']['commit'][:7]}{' !' if row['regressions'] else ''}" for row in rows]
    regressed = [i for i, row in enumerate(rows) if row["regressions"]]
    labelled = len(plots.run_ticks(len(rows)))
    return {
        "kind": "trend", "path": f"experiments/{experiment['slug']}/{anchor}-trend.svg",
        "job": (plots.speedup_trend, (series, ticks, regressed, experiment["claim"]["min_speedup"], label)),
        "alt": f"Speedup per case and dtype across the {len(rows)} runs on {label}, oldest first, "
               "with a dotted line at each run that regressed; the numbers are in the history table.",
        "caption": "Speedup over time, one point per run (commit"
                   + ("" if labelled == len(rows) else f" of {labelled} of them")
                   + "; '!' and a dotted line mark a regression)",
    }


def kernels_state(run: dict, current) -> str:
    """Whether run measured the kernels/ of this site (current: its digest): "same", "other", "unrecorded" (no
    digest on one side), or "imported"."""
    if run["origin"] == "imported":
        return "imported"
    recorded = run["git"].get("kernels_sha256")
    if recorded is None or current is None:
        return "unrecorded"
    return "same" if recorded == current else "other"


def experiment_view(experiment: dict, runs: list, decisions: list, current_kernels=None) -> dict:
    """Everything the experiment page shows but its history (see add_history); current_kernels: the digest of this
    site's kernels/, to say which headline runs measured other kernels."""
    groups = []
    for (device, origin), history in judge.verdict_history(experiment, runs).items():
        headline = history[-1]
        run = next(r for r in runs if r["run_id"] == headline.run_id)
        label, anchor = device_label(device, origin), slugify(device_label(device, origin))
        groups.append({
            "device": device, "origin": origin, "label": label, "anchor": anchor,
            "verdict": headline, "run": run, "kernels": kernels_state(run, current_kernels),
            "cards": result_cards(experiment, run), "verdicts": history,
            "plots": group_plots(experiment, run, headline, label, anchor),
        })
    # Measured evidence first, imported figures after it.
    groups.sort(key=lambda g: (g["origin"] != "measured", g["device"]))
    linked = [d for d in decisions if any(ref["experiment"] == experiment["slug"] for ref in d["rests_on"])]
    return {"experiment": experiment, "groups": groups, "decisions": linked, "goals": goal_views(experiment, groups)}


def goal_views(experiment: dict, groups: list) -> list:
    """Per goal: its bar in words, and per device group the headline run's verdict and what falls short."""
    views = []
    for goal in experiment.get("goals", []):
        rows = [dict(goal_outcome(judge.judge_test(experiment, goal, g["run"])), group=g) for g in groups]
        views.append({"goal": goal, "share": judge.is_share_test(goal), "label": goal_label(goal), "rows": rows,
                      "ceiling": judge.CEILING_NAMES[goal["pass"]]})
    return views


def goal_label(goal: dict) -> str:
    """A goal's bar in a few words, for the index: "≥ 90% of copy", "≥ 1× torch-compile"."""
    if judge.is_share_test(goal):
        return f"\u2265 {judge.bar_text(goal)}"
    return f"\u2265 {goal['min_speedup']:g}\u00d7 {goal['baseline']}"


def goal_outcome(verdict) -> dict:
    """A goal's verdict on one run, its comparisons sorted by outcome: the failures are listed, the wins counted."""
    by_state = {}
    for c in verdict.comparisons:
        by_state.setdefault(c.state, []).append(c)
    return {"verdict": verdict, "below": by_state.get("loss", []), "crossing": by_state.get("overlap", []),
            "unjudged": [c for c in verdict.comparisons if c.state in ("invalid", "missing", "suspect")],
            "n_clear": len(by_state.get("win", [])), "total": len(verdict.comparisons)}


def add_history(view: dict, runs_by_id: dict) -> list:
    """Add each device's run history (with regressions) to an experiment view; the trend plots it adds.

    Apart from experiment_view because regressions take a while: the other plots can be drawing meanwhile.
    """
    added = []
    for group in view["groups"]:
        group["history"] = history_rows(view["experiment"], group["verdicts"], runs_by_id)
        if len(group["history"]) > 1:
            added.append(trend_plot(view["experiment"], group["history"], group["label"], group["anchor"]))
            group["plots"].append(added[-1])
    return added


def compile_facts_of(profile_id: str, runs: list) -> list:
    """Compile facts (and ncu counters, where profiled) for a profile, from the latest run of each device
    that recorded them."""
    latest = {}
    for run in runs:
        if any(r["profile"] == profile_id and (r.get("compile") or r.get("profiling")) for r in run["results"]):
            latest[run["environment"]["device"]["name"]] = run
    rows = []
    for device, run in sorted(latest.items()):
        for r in run["results"]:
            if r["profile"] == profile_id and (r.get("compile") or r.get("profiling")):
                rows += [dict(row, device=device, run_id=run["run_id"], case=r["case"], dtype=r["dtype"],
                              shape=r["shape"], **{"pass": r["pass"]}) for row in kernel_fact_rows(r)]
    return rows


def fact_runs(runs: list) -> dict:
    """{profile: the runs that recorded compile facts or counters for it, oldest first}, in one pass."""
    found = {}
    for run in runs:
        for pid in sorted({r["profile"] for r in run["results"] if r.get("compile") or r.get("profiling")}):
            found.setdefault(pid, []).append(run)
    return found


def kernel_fact_rows(result: dict) -> list:
    """One row per kernel a result launched: compile facts joined with ncu's counters by kernel name.

    ncu also sees kernels the compiler facts do not (the memset that zeroes a buffer), so those
    rows carry counters only.
    """
    compiled = {k.get("kernel"): k for k in result.get("compile", [])}
    profiled = (result.get("profiling") or {}).get("kernels", [])
    rows, seen = [], set()
    for n in profiled:
        name = next((k for k in compiled if k and str(n.get("kernel", "")).startswith(k)), None)
        seen.add(name)
        rows.append({"kernel": name or n.get("kernel"), "compile": compiled.get(name, {}), "ncu": n})
    rows += [{"kernel": k, "compile": v, "ncu": {}} for k, v in compiled.items() if k not in seen]
    return rows


def result_rows(run: dict, experiments: dict, root: str) -> Markup:
    """The run page's results table body.

    Built here rather than in the template because it is the bulk of a large site (hundreds of
    runs of a hundred results each) and Jinja costs ten times more per cell. Every string from the
    artifact is escaped; numbers (the schema makes sure they are) are formatted, which needs none.
    """
    rows = []
    for r in run["results"]:
        head = _row_head(root, r["experiment"] in experiments, r["experiment"], r["case"], tuple(r["shape"]),
                         r["profile"], r["dtype"], r["pass"])
        status = html.escape(r["status"] + (f": {r['error']}" if r["error"] else ""))
        err = (r.get("correctness") or {}).get("max_abs_err")
        t = r.get("timing")
        if t:
            latency = fmt_ms(t["median_ms"])
            if t["p20_ms"] is not None and t["p80_ms"] is not None:
                latency += f' <span class="spread">p20–p80 {t["p20_ms"]:.4g}–{t["p80_ms"]:.4g}</span>'
        elif "reported_speedup" in r:
            latency = html.escape(f"{r['reported_speedup']['value']}× vs {r['reported_speedup']['baseline']} (reported)")
        else:
            latency = "n/a"
        rows.append(f"<tr>{head}<td>{status}</td><td>{'n/a' if err is None else f'{err:.3g}'}</td><td>{latency}</td>"
                    f"<td>{fmt_gbs(r['gbs'])}</td><td>{fmt_pct(r['copy_share'])}</td></tr>")
    return Markup("\n".join(rows))


@functools.lru_cache(maxsize=4096)
def _row_head(root: str, linked: bool, experiment: str, case: str, shape: tuple, profile: str, dtype: str,
              pass_: str) -> str:
    """The first five cells of a results row, escaped: the same few hundred recur across all runs."""
    e = html.escape
    exp = e(experiment)
    exp_cell = f'<a href="{e(root)}experiments/{exp}.html">{exp}</a>' if linked else exp
    return (f"<td>{exp_cell}</td><td>{e(case)} <span class=\"meta\">{'×'.join(map(str, shape))}</span></td>"
            f"<td><code>{e(profile)}</code></td><td>{e(dtype)}</td><td>{e(pass_)}</td>")


def page(env: Environment, template: str, root: str, **context) -> bytes:
    """Render one template to bytes; `root` is the relative path back to the site root."""
    return env.get_template(template).render(root=root, **context).encode("utf-8")


def render_site(content: Content, problems: list, plotter: plots.Plotter | None = None) -> dict:
    """All site files as {relative path: bytes} (see render_files)."""
    return {path: data.read_bytes() if isinstance(data, Path) else data
            for path, data in render_files(content, problems, plotter)}


def render_files(content: Content, problems: list, plotter: plots.Plotter | None = None, fork: bool = False):
    """Yield every site file as (relative path, bytes or the Path of a file to copy as it is), pages
    first, then the plots, which `plotter` draws (in worker processes, if it has them, while the
    pages render). fork: render the run pages in a forked process meanwhile."""
    plotter = plotter or plots.Plotter()
    env = make_env()
    verdicts = judge.current_verdicts(content.experiments, content.runs)
    decisions = [dict(d, html=render_markdown(d["body"])) for d in content.decisions]
    stale = {}
    for d, message in problems:
        stale.setdefault(d["id"], []).append(message)
    current_kernels = kernels_digest()
    exp_views = [experiment_view(e, content.runs, decisions, current_kernels) for e in content.experiments.values()]
    plotter.submit({p["path"]: p["job"] for view in exp_views for group in view["groups"] for p in group["plots"]})
    runs_by_id = {r["run_id"]: r for r in content.runs}
    plotter.submit({p["path"]: p["job"] for view in exp_views for p in add_history(view, runs_by_id)})

    def run_pages() -> list:
        """[(path, bytes)] of the run pages: the bulk of a large site."""
        return [(f"runs/{run['run_id']}.html", page(env, "run.html", "../", run=run, experiments=content.experiments,
                                                     kernels=kernels_state(run, current_kernels)))
                for run in content.runs]

    forked = parallel.Forked(run_pages) if fork else None
    yield "index.html", page(env, "index.html", "", experiments=exp_views, decisions=decisions,
                             runs=content.runs, stale=stale, verdict_order=VERDICT_ORDER)
    for view in exp_views:
        yield f"experiments/{view['experiment']['slug']}.html", page(env, "experiment.html", "../", stale=stale, **view)
    for d in decisions:
        evidence = [(ref, verdicts.get(ref["experiment"], {}).get((ref["device"], ref["origin"])))
                    for ref in d["rests_on"]]
        yield f"decisions/{d['slug']}.html", page(
            env, "decision.html", "../", decision=d, evidence=evidence, experiments=content.experiments,
            decisions={x["id"]: x for x in decisions}, stale=stale.get(d["id"], []))
    for run in content.runs:
        yield f"runs/{run['run_id']}.json", Path(run["source_path"])
    with_facts = fact_runs(content.runs)
    for pid, profile in sorted(PROFILES.items()):
        yield f"kernels/{pid}.html", page(
            env, "kernel.html", "../", profile=profile, source=kernel_source(profile.forward),
            backward=kernel_source(profile.backward) if profile.backward else None,
            facts=compile_facts_of(pid, with_facts.get(pid, [])),
            experiments=[e for e in content.experiments.values() if pid in e["profiles"]])
    yield "schema/run-artifact.schema.json", SCHEMA_PATH.read_bytes()
    yield "assets/style.css", (TEMPLATES / "style.css").read_bytes()
    yield from forked.result() if forked else run_pages()
    yield from plotter.results().items()
