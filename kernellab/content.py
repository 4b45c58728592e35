"""Load everything the site is built from, and check it fits together before anything renders.

site_src/experiments/<slug>.yaml   one experiment: question, cases, profiles, claim, goals, boundary
site_src/decisions/<NNNN>-<slug>.md a decision record: YAML front matter + Markdown body
runs/<run_id>.json                 one run artifact (see artifacts.py)
"""
import datetime
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from kernellab.artifacts import read_artifact
from kernellab.errors import BuildError
from kernellab.parallel import load_runs
from kernels.profiles import PROFILES

DTYPES = ("float16", "bfloat16", "float32")
DECISION_STATUSES = ("proposed", "accepted", "rejected", "deprecated", "superseded")
VERDICTS = ("supported", "rejected", "inconclusive", "invalid", "not run")
SLUG = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
DECISION_FILE = re.compile(r"^(\d{4})-([a-z0-9]+(?:-[a-z0-9]+)*)\.md$")


@dataclass
class Content:
    """Everything loaded and cross-checked, ready to judge."""

    experiments: dict  # slug -> experiment dict, in file-name order
    decisions: list  # decision dicts, by id
    runs: list  # artifact dicts, oldest first
    root: Path = field(default=Path("."))


# libyaml's safe loader where PyYAML was built with it (its wheels are): the same values, 8x sooner.
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _read_yaml(path: Path, text: str):
    """Parse YAML text, naming the file on error."""
    try:
        return yaml.load(text, Loader=_SAFE_LOADER)
    except yaml.YAMLError as exc:
        raise BuildError(path, f"not valid YAML: {exc}") from None


def _require(mapping, keys, path, where=""):
    """Raise if mapping is not a dict holding every key."""
    if not isinstance(mapping, dict):
        raise BuildError(path, f"{where or 'the file'} must be a mapping")
    missing = [k for k in keys if k not in mapping]
    if missing:
        raise BuildError(path, f"{where + ': ' if where else ''}missing {', '.join(missing)}")


def _text(value, path, where) -> str:
    """A required non-empty string."""
    if not isinstance(value, str) or not value.strip():
        raise BuildError(path, f"{where} must be a non-empty string")
    return value.strip()


def _string_list(value, path, where) -> list:
    """A non-empty list of non-empty strings."""
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v for v in value):
        raise BuildError(path, f"{where} must be a non-empty list of strings")
    return list(value)


def load_experiment(path: Path) -> dict:
    """Parse and validate one experiment file."""
    data = _read_yaml(path, path.read_text(encoding="utf-8"))
    _require(data, ["title", "question", "project", "focus", "why_it_matters", "cases",
                    "profiles", "dtypes", "metrics", "claim", "boundary"], path)
    slug = path.stem
    if not SLUG.match(slug):
        raise BuildError(path, f"file name {slug!r} is not a slug (lower-case words joined by '-')")
    for key in ("title", "question", "project", "focus", "why_it_matters"):
        data[key] = _text(data[key], path, key)
    if not isinstance(data["cases"], list) or not data["cases"]:
        raise BuildError(path, "cases must be a non-empty list")
    case_ids = set()
    for i, case in enumerate(data["cases"]):
        _require(case, ["id", "rows", "cols", "description"], path, f"cases[{i}]")
        if not isinstance(case["id"], str) or not SLUG.match(case["id"]) or case["id"] in case_ids:
            raise BuildError(path, f"cases[{i}].id must be a unique slug, got {case['id']!r}")
        case_ids.add(case["id"])
        for dim in ("rows", "cols"):
            if not isinstance(case[dim], int) or isinstance(case[dim], bool) or case[dim] < 1:
                raise BuildError(path, f"cases[{i}].{dim} must be a positive integer")
    profiles = _string_list(data["profiles"], path, "profiles")
    for pid in profiles:
        if pid not in PROFILES:
            raise BuildError(path, f"unknown profile {pid!r}; known profiles: {', '.join(sorted(PROFILES))}")
    for dtype in _string_list(data["dtypes"], path, "dtypes"):
        if dtype not in DTYPES:
            raise BuildError(path, f"unknown dtype {dtype!r}; use {', '.join(DTYPES)}")
    _string_list(data["metrics"], path, "metrics")
    passes = data.setdefault("passes", ["forward"])
    if not set(_string_list(passes, path, "passes")) <= {"forward", "backward"}:
        raise BuildError(path, "passes may hold only 'forward' and 'backward'")
    if not isinstance(data.setdefault("details", ""), str):
        raise BuildError(path, "details must be Markdown text")
    context = (path, profiles, case_ids, passes, [c["id"] for c in data["cases"]])
    claim = data["claim"]
    _require(claim, ["statement", "candidate", "baseline", "min_speedup"], path, "claim")
    if "min_share" in claim:  # decisions rest on the claim, which is a speedup: a share bar is a goal
        raise BuildError(path, "claim takes min_speedup only; set a min_share bar as one of the goals")
    _check_test(claim, "claim", *context)
    goals = data.setdefault("goals", [])
    if not isinstance(goals, list):
        raise BuildError(path, "goals must be a list")
    for i, goal in enumerate(goals):
        _check_goal(goal, f"goals[{i}]", *context)
    _require(data["boundary"], ["shows", "does_not_show"], path, "boundary")
    data["slug"] = slug
    data["source_path"] = str(path)
    return data


GOAL_KEYS = {"statement", "candidate", "baseline", "min_speedup", "min_share", "pass", "cases"}


def _check_goal(goal, where, path, profiles, case_ids, passes, all_cases) -> None:
    """Validate one goal: a speedup goal (baseline, min_speedup) or a share goal (min_share), in place."""
    _require(goal, ["statement", "candidate"], path, where)
    unknown = sorted(set(goal) - GOAL_KEYS)
    if unknown:
        raise BuildError(path, f"{where}: unknown key {unknown[0]!r}; a goal takes {', '.join(sorted(GOAL_KEYS))}")
    if ("min_speedup" in goal) == ("min_share" in goal):
        raise BuildError(path, f"{where} must set exactly one of min_speedup (with a baseline) and min_share")
    if "min_speedup" in goal and "baseline" not in goal:
        raise BuildError(path, f"{where}: a min_speedup goal needs a baseline")
    if "min_share" in goal and "baseline" in goal:
        raise BuildError(path, f"{where}: a min_share goal has no baseline (its bar is the run's ceiling)")
    goal["statement"] = _text(goal["statement"], path, f"{where}.statement")
    _check_test(goal, where, path, profiles, case_ids, passes, all_cases)


def _check_test(test, where, path, profiles, case_ids, passes, all_cases) -> None:
    """Validate a claim's or goal's profiles, bar, pass and cases, filling in pass and cases."""
    for role in ("candidate", "baseline"):
        if role in test and test[role] not in profiles:
            raise BuildError(path, f"{where}.{role} {test[role]!r} is not one of this experiment's profiles")
    bar = "min_share" if "min_share" in test else "min_speedup"
    value = test[bar]
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not value > 0:
        raise BuildError(path, f"{where}.{bar} must be a positive number")
    if bar == "min_share" and value > 1:
        raise BuildError(path, f"{where}.min_share must be at most 1 (a share of the ceiling), got {value!r}")
    test.setdefault("pass", "forward")
    test.setdefault("cases", list(all_cases))
    unknown_cases = [c for c in _string_list(test["cases"], path, f"{where}.cases") if c not in case_ids]
    if unknown_cases:
        raise BuildError(path, f"{where}.cases names unknown case {unknown_cases[0]!r}")
    if test["pass"] not in passes:
        raise BuildError(path, f"{where}.pass {test['pass']!r} is not one of this experiment's passes")


def split_front_matter(path: Path, text: str):
    """Split '---' YAML front matter from a Markdown body."""
    match = re.match(r"\A---\s*\n(.*?)\n---\s*(?:\n|\Z)(.*)\Z", text, re.S)
    if not match:
        raise BuildError(path, "a decision record must start with YAML front matter between '---' lines")
    return _read_yaml(path, match.group(1)), match.group(2)


def load_decision(path: Path) -> dict:
    """Parse and validate one decision record (cross-references are checked later)."""
    name = DECISION_FILE.match(path.name)
    if not name:
        raise BuildError(path, "a decision file must be named NNNN-slug.md")
    meta, body = split_front_matter(path, path.read_text(encoding="utf-8"))
    _require(meta, ["id", "title", "status", "date", "rests_on"], path, "front matter")
    if meta["id"] != int(name.group(1)):
        raise BuildError(path, f"id {meta['id']!r} does not match the file number {name.group(1)}")
    if meta["status"] not in DECISION_STATUSES:
        raise BuildError(path, f"status {meta['status']!r} is not one of {', '.join(DECISION_STATUSES)}")
    if isinstance(meta["date"], datetime.date):
        meta["date"] = meta["date"].isoformat()
    meta["title"] = _text(meta["title"], path, "title")
    if not isinstance(meta["rests_on"], list) or not meta["rests_on"]:
        raise BuildError(path, "rests_on must list at least one experiment verdict")
    for i, ref in enumerate(meta["rests_on"]):
        _require(ref, ["experiment", "device", "expects"], path, f"rests_on[{i}]")
        ref.setdefault("origin", "measured")
        if ref["expects"] not in VERDICTS:
            raise BuildError(path, f"rests_on[{i}].expects {ref['expects']!r} is not one of {', '.join(VERDICTS)}")
        if ref["origin"] not in ("measured", "imported"):
            raise BuildError(path, f"rests_on[{i}].origin must be measured or imported")
    for key in ("supersedes", "superseded_by"):
        value = meta.setdefault(key, [])
        if not isinstance(value, list) or not all(isinstance(v, int) for v in value):
            raise BuildError(path, f"{key} must be a list of decision ids")
    meta["slug"] = f"{name.group(1)}-{name.group(2)}"
    meta["body"] = body
    meta["source_path"] = str(path)
    return meta


def _files(folder: Path, pattern: str) -> list:
    """Sorted files matching pattern, skipping hidden and temporary files."""
    return sorted(p for p in folder.glob(pattern) if not p.name.startswith("."))


def check_references(experiments: dict, decisions: list, runs: list) -> None:
    """Every name used across files must exist."""
    by_id = {d["id"]: d for d in decisions}
    for d in decisions:
        path = d["source_path"]
        for ref in d["rests_on"]:
            if ref["experiment"] not in experiments:
                raise BuildError(path, f"names unknown experiment {ref['experiment']!r}")
        for key in ("supersedes", "superseded_by"):
            for other in d[key]:
                if other not in by_id:
                    raise BuildError(path, f"{key} names unknown decision {other}")
    for d in decisions:  # supersedes and superseded_by must agree, both ways
        for other in d["supersedes"]:
            if d["id"] not in by_id[other]["superseded_by"]:
                raise BuildError(by_id[other]["source_path"],
                                 f"decision {d['id']} supersedes it, so superseded_by must list {d['id']}")
        for other in d["superseded_by"]:
            if d["id"] not in by_id[other]["supersedes"]:
                raise BuildError(by_id[other]["source_path"],
                                 f"decision {d['id']} says it is superseded by this one, so supersedes must list {d['id']}")
    for run in runs:
        for r in run["results"]:
            if r["experiment"] not in experiments:
                raise BuildError(run["source_path"], f"result names unknown experiment {r['experiment']!r}")
            if r["profile"] not in PROFILES:
                raise BuildError(run["source_path"], f"result names unknown profile {r['profile']!r}")


def load_content(root: Path, workers=None) -> Content:
    """Load site_src/ and runs/ under root, validating every file and every cross-reference; a
    parallel.Workers, if given, loads half the runs."""
    root = Path(root)
    exp_dir, dec_dir, runs_dir = root / "site_src" / "experiments", root / "site_src" / "decisions", root / "runs"
    if not exp_dir.is_dir():
        raise BuildError(exp_dir, "missing: the experiments folder is required")
    experiments = {}
    for path in _files(exp_dir, "*.yaml"):
        experiment = load_experiment(path)
        experiments[experiment["slug"]] = experiment
    decisions = [load_decision(p) for p in _files(dec_dir, "*.md")] if dec_dir.is_dir() else []
    ids = [d["id"] for d in decisions]
    if len(ids) != len(set(ids)):
        raise BuildError(dec_dir, "two decision records share an id")
    paths = _files(runs_dir, "*.json") if runs_dir.is_dir() else []
    runs = load_runs(paths, read_artifact, workers)
    for path, run in zip(paths, runs):
        run["source_path"] = str(path)
    runs.sort(key=lambda r: (r["started_utc"] or "", r["run_id"]))
    check_references(experiments, decisions, runs)
    return Content(experiments, sorted(decisions, key=lambda d: d["id"]), runs, root)
