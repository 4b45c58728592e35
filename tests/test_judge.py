"""Verdict logic on synthetic artifacts: clear win, clear loss, overlap, failed correctness, suspect figures."""
import pytest

from kernellab import judge
from kernellab.content import load_experiment
from labfixtures import REPO, artifact, result, winning_results

EXPERIMENT = load_experiment(REPO / "site_src" / "experiments" / "row-softmax-fusion.yaml")


def verdict_of(results, **kw):
    """The verdict of one fixture run."""
    return judge.judge_run(EXPERIMENT, artifact("r1", results, **kw))


def test_clear_win_is_supported():
    v = verdict_of(winning_results())
    assert v.verdict == "supported"
    assert {c.state for c in v.comparisons} == {"win"}
    assert v.comparisons[0].speedup == pytest.approx(1.5, rel=0.03)
    assert v.comparisons[0].low < v.comparisons[0].speedup < v.comparisons[0].high


def test_clear_loss_is_rejected():
    v = verdict_of(winning_results(candidate_ms=0.015, baseline_ms=0.010))
    assert v.verdict == "rejected"


def test_one_dtype_losing_rejects_the_every_dtype_claim():
    results = winning_results()
    results[3] = result("triton-fused-row-softmax", "float32", 0.060, seed=3)  # fp32 now 2x slower
    assert verdict_of(results).verdict == "rejected"


def test_overlapping_spread_is_inconclusive():
    # 1% apart with +-20% noise: the interval must cross 1.0.
    results = [result("torch-baseline", d, 0.0101, spread=0.2, seed=1 + i) for i, d in enumerate(["float16", "float32"])]
    results += [result("triton-fused-row-softmax", d, 0.0100, spread=0.2, seed=5 + i) for i, d in enumerate(["float16", "float32"])]
    v = verdict_of(results)
    assert v.verdict == "inconclusive"
    assert all(c.low < 1.0 < c.high for c in v.comparisons)


def test_failed_correctness_is_invalid_and_has_no_timing():
    results = winning_results()
    results[1] = result("triton-fused-row-softmax", "float16", 0.01, status="failed")
    v = verdict_of(results)
    assert v.verdict == "invalid"
    assert "correctness" in v.comparisons[0].note


def test_missing_dtype_is_inconclusive_and_empty_run_is_not_run():
    assert verdict_of(winning_results()[:2]).verdict == "inconclusive"
    assert verdict_of([]).verdict == "not run"


def test_bandwidth_above_copy_ceiling_is_suspect_and_never_support():
    v = verdict_of(winning_results(), copy_gbs=100.0)
    assert v.verdict == "inconclusive"
    assert {c.state for c in v.comparisons} == {"suspect"}
    assert "above the run's copy bandwidth" in v.comparisons[0].note


def test_bandwidth_within_the_ceilings_margin_is_plausible_and_past_it_suspect():
    """The copy ceiling is a measurement of torch's copy kernel, which other kernels beat by up
    to half a percent: a figure within SUSPECT_CEILING_MARGIN of it is plausible."""
    run = {"copy_bandwidth": {"gbs": 1000.0}}
    result = {"pass": "forward", "profile": "p", "gbs": 1000.0 * (1 + judge.SUSPECT_CEILING_MARGIN) * 0.999}
    assert judge.is_suspect(result, run) == ""
    result["gbs"] = 1000.0 * (1 + judge.SUSPECT_CEILING_MARGIN) * 1.001
    assert "more than 1% above the run's copy bandwidth 1000 GB/s" in judge.is_suspect(result, run)


def test_implausible_speedup_is_suspect():
    v = verdict_of(winning_results(candidate_ms=0.001, baseline_ms=0.020), copy_gbs=1e9)
    assert {c.state for c in v.comparisons} == {"suspect"}


def test_swapped_timings_flip_the_verdict():
    swapped = [dict(r, profile={"torch-baseline": "triton-fused-row-softmax",
                                "triton-fused-row-softmax": "torch-baseline"}[r["profile"]])
               for r in winning_results()]
    assert verdict_of(winning_results()).verdict == "supported"
    assert verdict_of(swapped).verdict == "rejected"


def test_median_interval_brackets_the_median():
    median, lo, hi = judge.median_interval([float(i) for i in range(1, 102)])
    assert median == 51.0 and lo < median < hi
    assert (lo, hi) == (39.0, 63.0)  # 97.5% distribution-free ranks for n=101


def test_decision_problems_name_the_mismatch():
    v = judge.judge_run(EXPERIMENT, artifact("r1", winning_results()))
    verdicts = {"row-softmax-fusion": {v.device_key: v}}
    ok = {"id": 1, "title": "t", "status": "accepted", "source_path": "d.md",
          "rests_on": [{"experiment": "row-softmax-fusion", "device": v.device, "origin": "measured", "expects": "supported"}]}
    stale = dict(ok, rests_on=[dict(ok["rests_on"][0], expects="rejected")])
    missing = dict(ok, rests_on=[dict(ok["rests_on"][0], device="Other GPU")])
    superseded = dict(stale, status="superseded")
    assert judge.decision_problems([ok, superseded], verdicts) == []
    [(d, msg)] = judge.decision_problems([stale], verdicts)
    assert "expects rejected" in msg and "makes it supported" in msg
    [(d, msg)] = judge.decision_problems([missing], verdicts)
    assert "no run of it exists" in msg


def _rank_sum_p(a, b):
    """Mann-Whitney's two-sided p-value from average ranks of the pooled samples, the textbook way."""
    import math

    pooled = sorted(a + b)
    rank = {}
    i = 0
    while i < len(pooled):
        j = i
        while j < len(pooled) and pooled[j] == pooled[i]:
            j += 1
        rank[pooled[i]] = (i + 1 + j) / 2
        i = j
    n1, n2, n = len(a), len(b), len(a) + len(b)
    u1 = sum(rank[x] for x in a) - n1 * (n1 + 1) / 2
    ties = sum(pooled.count(v) ** 3 - pooled.count(v) for v in set(pooled))
    variance = n1 * n2 / 12 * ((n + 1) - ties / (n * (n - 1)))
    if variance <= 0:
        return 1.0
    z = (abs(u1 - n1 * n2 / 2) - 0.5) / math.sqrt(variance)
    return math.erfc(max(z, 0.0) / math.sqrt(2))


def test_mann_whitney_matches_the_rank_sum_formula_ties_included():
    import random

    from kernellab import stats

    rng = random.Random(5)
    for _ in range(300):
        digits = rng.choice([1, 2, 6])  # few digits: many ties
        a = [round(rng.uniform(0, 1), digits) for _ in range(rng.randint(1, 40))]
        b = [round(rng.uniform(0, 1.2), digits) for _ in range(rng.randint(1, 40))]
        assert stats.mann_whitney_p(a, b) == pytest.approx(_rank_sum_p(a, b), rel=1e-12, abs=1e-15)
    assert stats.mann_whitney_p([1.0] * 5, [1.0] * 5) == 1.0


def test_medians_and_intervals_come_back_as_plain_floats():
    median, lo, hi = judge.median_interval([3, 1, 2, 5, 4])
    assert (median, lo, hi) == (3.0, 1.0, 5.0) and all(type(v) is float for v in (median, lo, hi))
