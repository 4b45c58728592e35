"""Verdicts computed from run artifacts, and decision records checked against them.

A claim says: profile `candidate` is faster than profile `baseline` by at least `min_speedup`
on every case and dtype of the experiment. Per run, each (case, dtype) gets a speedup
(baseline median / candidate median) with a confidence interval; the run's verdict follows
from the intervals. Verdicts are per device, because the answer differs by GPU.
"""
import math
from dataclasses import dataclass, field

import numpy as np  # installed with matplotlib

from kernellab import stats

# Two-sided 97.5% for each median, so the ratio interval built from both covers >= 95%.
MEDIAN_CI_Z = 2.241
# A speedup beyond this, or a bandwidth above the run's measured ceiling (see ceiling_for) by more than
# SUSPECT_CEILING_MARGIN, is a bug until explained: it is flagged and never counts as support.
SUSPECT_SPEEDUP = 10.0
# The ceiling is itself a measurement, of torch's copy kernel: its fastest samples run 0.2-0.35%
# above its median, and in every H100 sweep of 2026-11-22 Inductor's softmax moved 0.35-0.49% more
# than it (runs 20261122T073840Z to 20261122T092039Z). A figure within 1% of it is plausible; one
# further above is flagged.
SUSPECT_CEILING_MARGIN = 0.01

HOW_VERDICTS_ARE_REACHED = (
    "For each case and dtype, speedup = baseline median / candidate median, measured side by side "
    "in one run. Each median gets a distribution-free 97.5% confidence interval from the order "
    "statistics of its timing samples; the speedup interval runs from the worst to the best "
    "combination, so it covers at least 95%. Supported: every interval lies above the bar. "
    "Rejected: some interval lies wholly below it. Inconclusive: an interval crosses the bar, a "
    f"case is missing, or a figure is suspect (a speedup above {SUSPECT_SPEEDUP:.0f}x, or a bandwidth more than "
    f"{SUSPECT_CEILING_MARGIN:.0%} above the ceiling measured in the same run: a copy for a forward, two reads and "
    "one write for a backward). Invalid: a correctness check failed. "
    "Imported figures carry no samples: their point values are used as they are, and the page says so."
)


@dataclass
class Comparison:
    """The claim tested on one case and dtype of one run."""

    case: str
    dtype: str
    state: str  # win | loss | overlap | invalid | missing | suspect
    speedup: float | None = None
    low: float | None = None
    high: float | None = None
    method: str = ""  # order-statistics | point | reported
    note: str = ""


@dataclass
class Verdict:
    """The verdict one run earns for one experiment's claim."""

    experiment: str
    device: str
    origin: str
    run_id: str
    verdict: str
    comparisons: list = field(default_factory=list)
    reason: str = ""

    @property
    def device_key(self) -> tuple:
        """Runs are grouped by device name and by origin (imported figures stand apart)."""
        return (self.device, self.origin)


def _memo(table: dict, obj, compute):
    """compute(obj), remembered for this very object; holding it keeps its id from being reused.

    Loaded artifacts are never changed, and a build asks the same questions of a run many times
    (every page and plot of its experiment, and the runs before and after it).
    """
    hit = table.get(id(obj))
    if hit is None or hit[0] is not obj:
        hit = table[id(obj)] = (obj, compute(obj))
    return hit[1]


_SORTED: dict = {}
_INDEXES: dict = {}
_EXPERIMENTS: dict = {}


def forget() -> None:
    """Drop every memo, and with them the runs they hold: a caller that goes on (the tests) has no
    use for them, and a process that ends need not free them one by one at exit."""
    for table in (_SORTED, _INDEXES, _EXPERIMENTS, _JUDGED):
        table.clear()


def sorted_samples(samples: list) -> "np.ndarray":
    """The samples in order, as a numpy array, sorted once per list however often they are judged
    (numpy sorts a list of floats, conversion included, in half the time sorted() takes)."""
    return _memo(_SORTED, samples, lambda samples: np.sort(np.asarray(samples, dtype=float)))


def median_interval(samples: list) -> tuple:
    """Median of the samples with a distribution-free ~97.5% interval (order statistics)."""
    ordered = sorted_samples(samples)
    n = len(ordered)
    median = stats.median_of_sorted(ordered)
    half_width = MEDIAN_CI_Z * math.sqrt(n) / 2
    lo = max(0, math.floor(n / 2 - half_width) - 1)
    hi = min(n - 1, math.ceil(n / 2 + half_width))
    return float(median), float(ordered[lo]), float(ordered[hi])


def speedup_interval(baseline: dict, candidate: dict) -> tuple:
    """(speedup, low, high, method) for baseline time / candidate time."""
    if "reported_speedup" in candidate:
        value = candidate["reported_speedup"]["value"]
        return value, value, value, "reported"
    if baseline.get("timing") is None or candidate.get("timing") is None:
        return None
    b_samples, c_samples = baseline["timing"]["samples_ms"], candidate["timing"]["samples_ms"]
    if len(b_samples) >= 5 and len(c_samples) >= 5:
        b_med, b_lo, b_hi = median_interval(b_samples)
        c_med, c_lo, c_hi = median_interval(c_samples)
        return b_med / c_med, b_lo / c_hi, b_hi / c_lo, "order-statistics"
    value = baseline["timing"]["median_ms"] / candidate["timing"]["median_ms"]
    return value, value, value, "point"


def ceiling_for(run: dict, pass_: str):
    """(name, measured bandwidth) of the ceiling for a pass: copy for forward, 2-read-1-write for backward."""
    three = run.get("three_tensor_bandwidth")
    if pass_ == "backward" and three:
        return "two-reads-one-write bandwidth", three
    return "copy bandwidth", run.get("copy_bandwidth")


def is_suspect(result: dict, run: dict) -> str:
    """Why a result's figure is physically implausible, or '' if it is not."""
    name, ceiling = ceiling_for(run, result["pass"])
    if ceiling and result.get("gbs") and result["gbs"] > ceiling["gbs"] * (1 + SUSPECT_CEILING_MARGIN):
        return (f"{result['profile']} reports {result['gbs']:.0f} GB/s, more than {SUSPECT_CEILING_MARGIN:.0%} above "
                f"the run's {name} {ceiling['gbs']:.0f} GB/s")
    return ""


def results_index(run: dict) -> dict:
    """Results of a run keyed by (experiment, case, profile, dtype, pass) (built once per run)."""
    return _memo(_INDEXES, run, lambda run: {
        (r["experiment"], r["case"], r["profile"], r["dtype"], r["pass"]): r for r in run["results"]})


def compare(experiment: dict, run: dict, case: str, dtype: str, index: dict) -> Comparison:
    """Test the claim on one case and dtype of one run."""
    claim = experiment["claim"]
    key = (experiment["slug"], case)
    baseline = index.get((*key, claim["baseline"], dtype, claim["pass"]))
    candidate = index.get((*key, claim["candidate"], dtype, claim["pass"]))
    reported = (candidate or {}).get("reported_speedup")
    if reported and reported["baseline"] == claim["baseline"] and candidate["status"] == "ok":
        value = reported["value"]  # imported: the source gives the ratio, not the timings
        return Comparison(case, dtype, _state(value, value, claim["min_speedup"]), value, value, value, "reported")
    if baseline is None or candidate is None:
        return Comparison(case, dtype, "missing", note="not measured in this run")
    for role, r in (("baseline", baseline), ("candidate", candidate)):
        if r["status"] != "ok":
            why = "failed its correctness check" if r["status"] == "failed" else f"raised an error: {r['error']}"
            return Comparison(case, dtype, "invalid", note=f"{role} {r['profile']} {why}")
    speedup, low, high, method = speedup_interval(baseline, candidate)
    suspect = is_suspect(candidate, run) or is_suspect(baseline, run)
    if speedup > SUSPECT_SPEEDUP:
        suspect = f"speedup {speedup:.2f}x is more than {SUSPECT_SPEEDUP:.0f}x"
    if suspect:
        return Comparison(case, dtype, "suspect", speedup, low, high, method, suspect)
    return Comparison(case, dtype, _state(low, high, claim["min_speedup"]), speedup, low, high, method)


def _state(low: float, high: float, bar: float) -> str:
    """win if the whole interval clears the bar, loss if it lies wholly below, else overlap."""
    return "win" if low > bar else "loss" if high < bar else "overlap"


_JUDGED: dict = {}  # (id(experiment), id(run)) -> (experiment, run, verdict): a build judges each pair once


def judge_run(experiment: dict, run: dict) -> Verdict:
    """The verdict one run earns for an experiment's claim (memoised on the two objects)."""
    key = (id(experiment), id(run))
    hit = _JUDGED.get(key)
    if hit is not None and hit[0] is experiment and hit[1] is run:
        return hit[2]
    verdict = _judge_run(experiment, run)
    _JUDGED[key] = (experiment, run, verdict)  # holding both keeps their ids from being reused
    return verdict


def _judge_run(experiment: dict, run: dict) -> Verdict:
    """The verdict one run earns for an experiment's claim."""
    index = results_index(run)
    comparisons = [
        compare(experiment, run, case, dtype, index)
        for case in experiment["claim"]["cases"] for dtype in experiment["dtypes"]
    ]
    states = {c.state for c in comparisons}
    bar = experiment["claim"]["min_speedup"]
    if states == {"missing"}:
        verdict, reason = "not run", "this run has no results for the claim"
    elif "invalid" in states:
        verdict, reason = "invalid", "a correctness check failed, so no timing counts"
    elif "loss" in states:
        verdict, reason = "rejected", f"a speedup interval lies wholly below {bar:g}x"
    elif states == {"win"}:
        verdict, reason = "supported", f"every speedup interval lies above {bar:g}x"
    else:
        parts = {"overlap": f"an interval crosses {bar:g}x", "missing": "a case was not measured",
                 "suspect": "a figure is suspect"}
        verdict, reason = "inconclusive", "; ".join(parts[s] for s in sorted(states) if s in parts)
    device = run["environment"]["device"]["name"]
    return Verdict(experiment["slug"], device, run["origin"], run["run_id"], verdict, comparisons, reason)


def runs_for(experiment: dict, runs: list) -> list:
    """The runs that hold results for this experiment, oldest first."""
    return [r for r in runs if experiment["slug"] in experiments_in(r)]


def experiments_in(run: dict) -> frozenset:
    """The experiments a run holds results for (found once per run)."""
    return _memo(_EXPERIMENTS, run, lambda run: frozenset(r["experiment"] for r in run["results"]))


def verdict_history(experiment: dict, runs: list) -> dict:
    """{(device, origin): [Verdict, ...] oldest first} for one experiment."""
    history = {}
    for run in runs_for(experiment, runs):
        v = judge_run(experiment, run)
        history.setdefault(v.device_key, []).append(v)
    return dict(sorted(history.items()))


def headline_runs(experiment: dict, runs: list) -> dict:
    """{(device, origin): latest run} for one experiment, found without judging (see verdict_history)."""
    latest = {}
    for run in runs_for(experiment, runs):
        latest[(run["environment"]["device"]["name"], run["origin"])] = run
    return dict(sorted(latest.items()))


def current_verdicts(experiments: dict, runs: list) -> dict:
    """{slug: {(device, origin): latest Verdict}}: the headline per device."""
    return {
        slug: {key: vs[-1] for key, vs in verdict_history(exp, runs).items()}
        for slug, exp in experiments.items()
    }


CHECKED_STATUSES = ("proposed", "accepted")


def decision_problems(decisions: list, verdicts: dict) -> list:
    """[(decision, message)] for each live decision the current evidence does not support."""
    problems = []
    for d in decisions:
        if d["status"] not in CHECKED_STATUSES:
            continue
        for ref in d["rests_on"]:
            key = (ref["device"], ref["origin"])
            current = verdicts.get(ref["experiment"], {}).get(key)
            label = f"{ref['experiment']} on {ref['device']}" + (" (imported)" if ref["origin"] == "imported" else "")
            if current is None:
                problems.append((d, f"expects {ref['expects']} for {label}, but no run of it exists"))
            elif current.verdict != ref["expects"]:
                problems.append((d, f"expects {ref['expects']} for {label}, but run {current.run_id} "
                                    f"makes it {current.verdict} ({current.reason})"))
    return problems


def regressions(experiment: dict, earlier: dict, later: dict) -> list:
    """The claim's (case, dtype) pairs where the candidate got significantly slower from one run to the next."""
    claim = experiment["claim"]
    before, after = results_index(earlier), results_index(later)
    found = []
    for case in claim["cases"]:
        for dtype in experiment["dtypes"]:
            key = (experiment["slug"], case, claim["candidate"], dtype, claim["pass"])
            a, b = before.get(key), after.get(key)
            if not (a and b and a.get("timing") and b.get("timing")):
                continue
            # In order already: the medians and ranks inside then cost a pass, not a sort.
            if stats.significantly_slower(sorted_samples(a["timing"]["samples_ms"]),
                                          sorted_samples(b["timing"]["samples_ms"])):
                found.append(f"{case} {dtype}: {a['timing']['median_ms']:.4g} -> {b['timing']['median_ms']:.4g} ms")
    return found
