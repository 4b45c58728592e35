"""Verdicts computed from run artifacts, and decision records checked against them.

A claim says: profile `candidate` is faster than profile `baseline` by at least `min_speedup`
on every case and dtype of the experiment. Per run, each (case, dtype) gets a speedup
(baseline median / candidate median) with a confidence interval; the run's verdict follows
from the intervals. Verdicts are per device, because the answer differs by GPU.

Goals are further bars an experiment sets itself, judged the same way but resting no decision:
a speedup goal is a claim of its own; a share goal asks that the candidate's bandwidth reach
`min_share` of the ceiling measured in the same run (see ceiling_for).
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
NOT_MEASURED = "not measured in this run"  # why a (case, dtype) is missing, unless something else is said

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
HOW_GOALS_ARE_REACHED = (
    "A speedup goal is judged as the claim is. A share goal takes, for each case and dtype, the candidate's "
    "GB/s over the ceiling measured in the same run; its interval is the share scaled by the candidate's "
    "median over the ends of that median's 97.5% interval (a slower end gives a lower share). The words are "
    "the claim's: supported when every interval lies above the bar, rejected when one lies wholly below it. "
    "Goals show where the project stands against its own targets; no decision rests on them."
)


@dataclass
class Comparison:
    """A claim or goal tested on one case and dtype of one run."""

    case: str
    dtype: str
    state: str  # win | loss | overlap | invalid | missing | suspect
    speedup: float | None = None
    low: float | None = None  # of the speedup, or of the share for a share goal
    high: float | None = None
    method: str = ""  # order-statistics | point | reported
    note: str = ""
    share: float | None = None  # a share goal's figure: bandwidth / the run's ceiling

    @property
    def value(self):
        """The figure tested against the bar: the speedup, or the share of the ceiling."""
        return self.share if self.speedup is None else self.speedup


@dataclass
class Verdict:
    """The verdict one run earns for one experiment's claim, or for one of its goals."""

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


CEILING_NAMES = {"forward": "copy bandwidth", "backward": "two-reads-one-write bandwidth"}


def ceiling_for(run: dict, pass_: str):
    """(name, measured bandwidth) of the ceiling for a pass: copy for forward, 2-read-1-write for backward."""
    three = run.get("three_tensor_bandwidth")
    if pass_ == "backward" and three:
        return CEILING_NAMES["backward"], three
    return CEILING_NAMES["forward"], run.get("copy_bandwidth")


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


def compare_speedup(test: dict, slug: str, run: dict, case: str, dtype: str, index: dict) -> Comparison:
    """Test a speedup bar (the claim, or a speedup goal) on one case and dtype of one run."""
    key = (slug, case)
    baseline = index.get((*key, test["baseline"], dtype, test["pass"]))
    candidate = index.get((*key, test["candidate"], dtype, test["pass"]))
    reported = (candidate or {}).get("reported_speedup")
    if reported and reported["baseline"] == test["baseline"] and candidate["status"] == "ok":
        value = reported["value"]  # imported: the source gives the ratio, not the timings
        return Comparison(case, dtype, _state(value, value, test["min_speedup"]), value, value, value, "reported")
    if baseline is None or candidate is None:
        return Comparison(case, dtype, "missing", note=NOT_MEASURED)
    invalid = _invalid(case, dtype, baseline=baseline, candidate=candidate)
    if invalid:
        return invalid
    speedup, low, high, method = speedup_interval(baseline, candidate)
    suspect = is_suspect(candidate, run) or is_suspect(baseline, run)
    if speedup > SUSPECT_SPEEDUP:
        suspect = f"speedup {speedup:.2f}x is more than {SUSPECT_SPEEDUP:.0f}x"
    if suspect:
        return Comparison(case, dtype, "suspect", speedup, low, high, method, suspect)
    return Comparison(case, dtype, _state(low, high, test["min_speedup"]), speedup, low, high, method)


def compare_share(test: dict, slug: str, run: dict, case: str, dtype: str, index: dict) -> Comparison:
    """Test a share goal on one case and dtype of one run: the candidate's bandwidth over the run's ceiling."""
    candidate = index.get((slug, case, test["candidate"], dtype, test["pass"]))
    if candidate is None:
        return Comparison(case, dtype, "missing", note=NOT_MEASURED)
    invalid = _invalid(case, dtype, candidate=candidate)
    if invalid:
        return invalid
    interval = share_interval(candidate, run)
    if interval is None:
        return Comparison(case, dtype, "missing", note="no bandwidth against a ceiling measured in this run")
    share, low, high, method = interval
    suspect = is_suspect(candidate, run)
    if suspect:
        return Comparison(case, dtype, "suspect", low=low, high=high, method=method, note=suspect, share=share)
    return Comparison(case, dtype, _state(low, high, test["min_share"]), low=low, high=high, method=method,
                      share=share)


def share_interval(result: dict, run: dict):
    """(share, low, high, method) of a result's bandwidth over its pass's ceiling, or None without both.

    The ceiling is one figure for the run, so the interval comes from the result's own median
    interval: a slower median (t_high) gives a lower share, a faster one (t_low) a higher.
    """
    _, ceiling = ceiling_for(run, result["pass"])
    if ceiling and ceiling.get("gbs") and result.get("gbs"):
        share = result["gbs"] / ceiling["gbs"]
    elif result.get("copy_share") is not None:
        share = result["copy_share"]  # imported: the source states the share, not the ceiling
    else:
        return None
    samples = (result.get("timing") or {}).get("samples_ms") or []
    if len(samples) >= 5:
        median, t_low, t_high = median_interval(samples)
        return share, share * median / t_high, share * median / t_low, "order-statistics"
    return share, share, share, "point"


def _invalid(case: str, dtype: str, **roles):
    """An invalid Comparison if any of the results (by role) did not pass, else None."""
    for role, r in roles.items():
        if r["status"] != "ok":
            why = "failed its correctness check" if r["status"] == "failed" else f"raised an error: {r['error']}"
            return Comparison(case, dtype, "invalid", note=f"{role} {r['profile']} {why}")
    return None


def _state(low: float, high: float, bar: float) -> str:
    """win if the whole interval clears the bar, loss if it lies wholly below, else overlap."""
    return "win" if low > bar else "loss" if high < bar else "overlap"


def is_share_test(test: dict) -> bool:
    """Whether a claim or goal sets a share of the ceiling (min_share) rather than a speedup (min_speedup)."""
    return "min_share" in test


def bar_text(test: dict, ceiling_name: str = "") -> str:
    """A test's bar in words: "1x", or "90% of copy" (the ceiling's name, without " bandwidth")."""
    if is_share_test(test):
        name = ceiling_name or CEILING_NAMES[test["pass"]]
        return f"{100 * test['min_share']:g}% of {name.removesuffix(' bandwidth')}"
    return f"{test['min_speedup']:g}x"


_JUDGED: dict = {}  # (id(experiment), id(test), id(run)) -> (experiment, test, run, verdict): each judged once


def judge_run(experiment: dict, run: dict) -> Verdict:
    """The verdict one run earns for an experiment's claim (memoised on the objects)."""
    return judge_test(experiment, experiment["claim"], run)


def judge_goals(experiment: dict, run: dict) -> list:
    """The verdict one run earns for each of an experiment's goals, in their order."""
    return [judge_test(experiment, goal, run) for goal in experiment.get("goals", [])]


def judge_test(experiment: dict, test: dict, run: dict) -> Verdict:
    """The verdict one run earns for a claim or goal of an experiment (memoised on the three objects)."""
    key = (id(experiment), id(test), id(run))
    hit = _JUDGED.get(key)
    if hit is not None and hit[0] is experiment and hit[1] is test and hit[2] is run:
        return hit[3]
    verdict = _judge(experiment, test, run)
    _JUDGED[key] = (experiment, test, run, verdict)  # holding them keeps their ids from being reused
    return verdict


def _judge(experiment: dict, test: dict, run: dict) -> Verdict:
    """The verdict one run earns for a claim or goal."""
    index = results_index(run)
    compare_one = compare_share if is_share_test(test) else compare_speedup
    comparisons = [
        compare_one(test, experiment["slug"], run, case, dtype, index)
        for case in test["cases"] for dtype in experiment["dtypes"]
    ]
    what = "goal" if test is not experiment["claim"] else "claim"
    verdict, reason = verdict_of(comparisons, bar_text(test, ceiling_for(run, test["pass"])[0]), what)
    device = run["environment"]["device"]["name"]
    return Verdict(experiment["slug"], device, run["origin"], run["run_id"], verdict, comparisons, reason)


def verdict_of(comparisons: list, bar: str, what: str = "claim") -> tuple:
    """(verdict, reason) from the comparisons of one run; the reason counts the (case, dtype) pairs."""
    counts = {}
    for c in comparisons:
        counts[c.state] = counts.get(c.state, 0) + 1
    total = len(comparisons)
    if counts.get("missing", 0) == total:
        notes = {c.note for c in comparisons}
        # Results with nothing to judge them by (a run with no ceiling) say so, not "no results".
        why = notes.pop() if len(notes) == 1 and notes != {NOT_MEASURED} else f"this run has no results for the {what}"
        return "not run", why
    if "invalid" in counts:
        k = counts["invalid"]
        return "invalid", f"{_of(k, total)} {_verb(k, 'fails', 'fail')} a correctness check, so no timing counts"
    unclear = [(s, counts[s]) for s in ("overlap", "missing", "suspect") if counts.get(s)]
    if "loss" in counts:
        clauses = [f"{_of(counts['loss'], total)} {_verb(counts['loss'], 'lies', 'lie')} wholly below {bar}"]
        return "rejected", "; ".join(clauses + [f"{k} {_unclear(s, k, bar)}" for s, k in unclear])
    if counts.get("win", 0) == total:
        return "supported", f"all {_cases(total)} lie above {bar}" if total > 1 else f"the one case lies above {bar}"
    (first, k), rest = unclear[0], unclear[1:]
    clauses = [f"{_of(k, total)} {_unclear(first, k, bar)}"] + [f"{j} {_unclear(s, j, bar)}" for s, j in rest]
    return "inconclusive", "; ".join(clauses)


def _unclear(state: str, k: int, bar: str) -> str:
    """What k comparisons in a state that keeps a verdict from being clear did, in words."""
    return {"overlap": _verb(k, f"crosses {bar}", f"cross {bar}"),
            "missing": _verb(k, "was not measured", "were not measured"),
            "suspect": _verb(k, "is suspect", "are suspect")}[state]


def _verb(k: int, one: str, many: str) -> str:
    """The verb for k things."""
    return one if k == 1 else many


def _cases(n: int) -> str:
    """'1 case' or 'n cases'."""
    return f"{n} {_verb(n, 'case', 'cases')}"


def _of(k: int, total: int) -> str:
    """'k of total cases'."""
    return f"{k} of {_cases(total)}"


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
