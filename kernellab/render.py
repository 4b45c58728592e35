"""Turn loaded, judged content into site files: {relative path: bytes}. Nothing is written here."""
import re
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

from kernellab import judge
from kernellab.artifacts import SCHEMA_PATH
from kernellab.content import Content
from kernellab.sanitize import render_markdown
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


def make_env() -> Environment:
    """The Jinja2 environment: autoescaping everything, undefined names are errors."""
    env = Environment(
        loader=FileSystemLoader(str(TEMPLATES)),
        autoescape=select_autoescape(["html"]),
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(ms=fmt_ms, gbs=fmt_gbs, pct=fmt_pct, x=fmt_x, bytes=fmt_bytes, slug=slugify)
    env.globals.update(profiles=PROFILES, how_verdicts=judge.HOW_VERDICTS_ARE_REACHED)
    return env


def device_label(device: str, origin: str) -> str:
    """How a device group is named on the page."""
    return f"{device} (imported)" if origin == "imported" else device


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


def experiment_view(experiment: dict, runs: list, decisions: list) -> dict:
    """Everything the experiment page shows."""
    groups = []
    for (device, origin), history in judge.verdict_history(experiment, runs).items():
        headline = history[-1]
        run = next(r for r in runs if r["run_id"] == headline.run_id)
        groups.append({
            "device": device, "origin": origin, "label": device_label(device, origin),
            "anchor": slugify(device_label(device, origin)), "verdict": headline, "run": run,
            "cards": result_cards(experiment, run), "history": history,
        })
    # Measured evidence first, imported figures after it.
    groups.sort(key=lambda g: (g["origin"] != "measured", g["device"]))
    linked = [d for d in decisions if any(ref["experiment"] == experiment["slug"] for ref in d["rests_on"])]
    return {"experiment": experiment, "groups": groups, "decisions": linked}


def page(env: Environment, template: str, root: str, **context) -> bytes:
    """Render one template to bytes; `root` is the relative path back to the site root."""
    return env.get_template(template).render(root=root, **context).encode("utf-8")


def render_site(content: Content, problems: list) -> dict:
    """All site files as {relative path: bytes}."""
    env = make_env()
    verdicts = judge.current_verdicts(content.experiments, content.runs)
    decisions = [dict(d, html=render_markdown(d["body"])) for d in content.decisions]
    stale = {}
    for d, message in problems:
        stale.setdefault(d["id"], []).append(message)
    files = {}
    exp_views = [experiment_view(e, content.runs, decisions) for e in content.experiments.values()]
    files["index.html"] = page(env, "index.html", "", experiments=exp_views, decisions=decisions,
                               runs=content.runs, stale=stale, verdict_order=VERDICT_ORDER)
    for view in exp_views:
        files[f"experiments/{view['experiment']['slug']}.html"] = page(
            env, "experiment.html", "../", stale=stale, **view)
    for d in decisions:
        evidence = [(ref, verdicts.get(ref["experiment"], {}).get((ref["device"], ref["origin"])))
                    for ref in d["rests_on"]]
        files[f"decisions/{d['slug']}.html"] = page(
            env, "decision.html", "../", decision=d, evidence=evidence, experiments=content.experiments,
            decisions={x["id"]: x for x in decisions}, stale=stale.get(d["id"], []))
    for run in content.runs:
        files[f"runs/{run['run_id']}.html"] = page(env, "run.html", "../", run=run,
                                                    experiments=content.experiments)
        files[f"runs/{run['run_id']}.json"] = Path(run["source_path"]).read_bytes()
    files["schema/run-artifact.schema.json"] = SCHEMA_PATH.read_bytes()
    files["assets/style.css"] = (TEMPLATES / "style.css").read_bytes()
    return files
