"""Experiment goals: share-of-ceiling and speedup bars judged from the runs, validated, and rendered."""
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from kernellab import judge, plots, render
from kernellab.cli import main
from kernellab.content import load_experiment
from kernellab.errors import BuildError
from labfixtures import DEVICE, REPO, artifact, make_project, result, winning_results

SEED = REPO / "site_src" / "experiments" / "row-softmax-fusion.yaml"
CANDIDATE = "triton-fused-row-softmax"
# The fixture's candidate moves 16.8 MB (fp16) in 0.010 ms and 33.6 MB (fp32) in 0.020 ms: 1,678 GB/s, so
# against a 3,000 GB/s copy it sits at 55.9% of copy, give or take its 2% spread.
SHARE = 2 * 4096 * 1024 * 2 / (0.010 * 1e6) / 3000.0


def share_goal(min_share: float, **kw) -> dict:
    """A share goal on the seed experiment's candidate."""
    return {"statement": f"At {min_share} of copy or more.", "candidate": CANDIDATE, "min_share": min_share, **kw}


def speedup_goal(min_speedup: float, **kw) -> dict:
    """A speedup goal on the seed experiment's candidate over torch.softmax."""
    return {"statement": f"At least {min_speedup}x torch.", "candidate": CANDIDATE, "baseline": "torch-baseline",
            "min_speedup": min_speedup, **kw}


def write_experiment(folder: Path, goals, extra: str = "") -> Path:
    """The seed experiment's YAML with the given goals, written as row-softmax-fusion.yaml under folder."""
    path = folder / "row-softmax-fusion.yaml"
    folder.mkdir(parents=True, exist_ok=True)
    path.write_text(SEED.read_text() + extra + yaml.safe_dump({"goals": goals}, sort_keys=False))
    return path


def goal_verdicts(tmp_path: Path, goals: list, results: list, **kw) -> list:
    """The verdict of each goal on one fixture run."""
    experiment = load_experiment(write_experiment(tmp_path, goals))
    return judge.judge_goals(experiment, artifact("r1", results, **kw))


def test_share_goal_well_above_its_bar_is_supported(tmp_path):
    [v] = goal_verdicts(tmp_path, [share_goal(0.50)], winning_results())
    assert v.verdict == "supported" and v.reason == "all 2 cases lie above 50% of copy"
    assert {c.state for c in v.comparisons} == {"win"}
    assert all(c.low < c.share < c.high and c.speedup is None for c in v.comparisons)
    assert v.comparisons[0].share == pytest.approx(SHARE, rel=0.01)


def test_share_goal_below_its_bar_is_rejected_and_counts_the_cases(tmp_path):
    [v] = goal_verdicts(tmp_path, [share_goal(0.60)], winning_results())
    assert v.verdict == "rejected"
    assert v.reason == "2 of 2 cases lie wholly below 60% of copy"
    results = winning_results()
    results[3] = result(CANDIDATE, "float32", 0.015, seed=3)  # fp32 at 74.6% of copy: clears 60%
    [v] = goal_verdicts(tmp_path, [share_goal(0.60)], results)
    assert v.reason == "1 of 2 cases lies wholly below 60% of copy"
    assert [c.state for c in v.comparisons] == ["loss", "win"]


def test_share_goal_whose_interval_crosses_its_bar_is_inconclusive(tmp_path):
    results = [result("torch-baseline", d, 0.02, seed=1 + i) for i, d in enumerate(["float16", "float32"])]
    results += [result(CANDIDATE, d, 0.010 * (1 + i), spread=0.2, seed=5 + i)
                for i, d in enumerate(["float16", "float32"])]
    [v] = goal_verdicts(tmp_path, [share_goal(round(SHARE, 3))], results)
    assert v.verdict == "inconclusive" and v.reason == "2 of 2 cases cross 55.9% of copy"
    assert all(c.state == "overlap" and c.low < 0.559 < c.high for c in v.comparisons)


def test_share_interval_comes_from_the_candidates_median_interval():
    r = result(CANDIDATE, "float16", 0.010, spread=0.1, seed=9)
    run = artifact("r1", [r])
    share, low, high, method = judge.share_interval(r, run)
    median, t_low, t_high = judge.median_interval(r["timing"]["samples_ms"])
    assert method == "order-statistics" and share == r["gbs"] / 3000.0
    assert (low, high) == (share * median / t_high, share * median / t_low) and low < share < high
    # Too few samples for an interval: the point value, as for speedups.
    few = dict(r, timing=dict(r["timing"], samples_ms=r["timing"]["samples_ms"][:3]))
    assert judge.share_interval(few, run) == (share, share, share, "point")


def test_share_above_the_ceiling_is_suspect_never_support(tmp_path):
    [v] = goal_verdicts(tmp_path, [share_goal(0.50)], winning_results(), copy_gbs=1000.0)
    assert v.verdict == "inconclusive" and v.reason == "2 of 2 cases are suspect"
    assert {c.state for c in v.comparisons} == {"suspect"}
    assert "above the run's copy bandwidth 1000 GB/s" in v.comparisons[0].note
    # Within the ceiling's margin it is plausible, and then judged.
    [v] = goal_verdicts(tmp_path, [share_goal(0.50)], winning_results(), copy_gbs=SHARE * 3000.0 / 1.005)
    assert v.verdict == "supported"


def test_missing_and_failed_candidates(tmp_path):
    [v] = goal_verdicts(tmp_path, [share_goal(0.50)], winning_results()[:2])
    assert v.verdict == "inconclusive" and v.reason == "1 of 2 cases was not measured"
    [v] = goal_verdicts(tmp_path, [share_goal(0.50)], [])
    assert v.verdict == "not run" and v.reason == "this run has no results for the goal"
    results = winning_results()
    results[1] = result(CANDIDATE, "float16", 0.01, status="failed")
    [v] = goal_verdicts(tmp_path, [share_goal(0.50)], results)
    assert v.verdict == "invalid" and "correctness" in v.comparisons[0].note
    assert v.reason == "1 of 2 cases fails a correctness check, so no timing counts"


def test_a_run_without_a_ceiling_says_so(tmp_path):
    run = artifact("r1", winning_results())
    run["copy_bandwidth"] = None
    for r in run["results"]:
        r["copy_share"] = None
    experiment = load_experiment(write_experiment(tmp_path, [share_goal(0.5)]))
    [v] = judge.judge_goals(experiment, run)
    assert v.verdict == "not run" and v.reason == "no bandwidth against a ceiling measured in this run"


def test_backward_share_goal_is_of_the_two_reads_one_write_ceiling(tmp_path):
    extra = "passes: [forward, backward]\n"
    experiment = load_experiment(write_experiment(tmp_path, [share_goal(0.5, **{"pass": "backward"})], extra))
    backward = [dict(r, **{"pass": "backward"}) for r in winning_results()]
    run = artifact("r1", backward)
    run["three_tensor_bandwidth"] = {"bytes_moved": 3 * 2**30, "gbs": 2000.0, "timing": None}
    [v] = judge.judge_goals(experiment, run)
    assert v.comparisons[0].share == pytest.approx(backward[1]["gbs"] / 2000.0)
    assert v.verdict == "supported" and v.reason == "all 2 cases lie above 50% of two-reads-one-write"


def test_speedup_goal_is_judged_as_the_claim_is(tmp_path):
    experiment = load_experiment(write_experiment(tmp_path, [speedup_goal(1.0), speedup_goal(2.0)]))
    run = artifact("r1", winning_results())
    claim = judge.judge_run(experiment, run)
    same, higher = judge.judge_goals(experiment, run)
    assert same.comparisons == claim.comparisons and same.verdict == claim.verdict == "supported"
    assert higher.verdict == "rejected" and higher.reason == "2 of 2 cases lie wholly below 2x"
    assert [c.speedup for c in higher.comparisons] == [c.speedup for c in claim.comparisons]
    # The claim keeps its own verdict whatever the goals say.
    assert judge.judge_run(experiment, run) is claim


GOAL_ERRORS = {
    "unknown profile": ([share_goal(0.9, candidate="torch-magic")],
                        "goals[0].candidate 'torch-magic' is not one of this experiment's profiles"),
    "unknown baseline": ([speedup_goal(1.0, baseline="triton-online")],
                         "goals[0].baseline 'triton-online' is not one of this experiment's profiles"),
    "both bars": ([share_goal(0.9, min_speedup=1.0)], "goals[0] must set exactly one of min_speedup"),
    "neither bar": ([{"statement": "s", "candidate": CANDIDATE}], "goals[0] must set exactly one of min_speedup"),
    "zero share": ([share_goal(0)], "goals[0].min_share must be a positive number"),
    "negative speedup": ([speedup_goal(1.0), speedup_goal(-1)], "goals[1].min_speedup must be a positive number"),
    "share as text": ([share_goal("90%")], "goals[0].min_share must be a positive number"),
    "share above 1": ([share_goal(90)], "goals[0].min_share must be at most 1"),
    "unknown case": ([share_goal(0.9, cases=["n1024"])], "goals[0].cases names unknown case 'n1024'"),
    "unknown pass": ([share_goal(0.9, **{"pass": "backward"})],
                     "goals[0].pass 'backward' is not one of this experiment's passes"),
    "speedup without baseline": ([{"statement": "s", "candidate": CANDIDATE, "min_speedup": 1.0}],
                                 "goals[0]: a min_speedup goal needs a baseline"),
    "share with baseline": ([share_goal(0.9, baseline="torch-baseline")], "goals[0]: a min_share goal has no baseline"),
    "misspelt key": ([share_goal(0.9, case=["softmax-4096x1024"])], "goals[0]: unknown key 'case'"),
    "no statement": ([{"candidate": CANDIDATE, "min_share": 0.9}], "goals[0]: missing statement"),
    "not a list": ({"candidate": CANDIDATE}, "goals must be a list"),
    "not a mapping": (["90% of copy"], "goals[0] must be a mapping"),
}


@pytest.mark.parametrize("case", sorted(GOAL_ERRORS))
def test_bad_goals_are_refused_naming_the_file_and_the_problem(tmp_path, case):
    goals, message = GOAL_ERRORS[case]
    path = write_experiment(tmp_path, goals)
    with pytest.raises(BuildError) as caught:
        load_experiment(path)
    assert str(caught.value).startswith(f"{path}: ") and message in str(caught.value)


def test_the_claim_takes_no_share_bar(tmp_path):
    path = tmp_path / "row-softmax-fusion.yaml"
    path.write_text(SEED.read_text().replace("  min_speedup: 1.0\n", "  min_speedup: 1.0\n  min_share: 0.9\n"))
    with pytest.raises(BuildError, match=re.escape(f"{path}: claim takes min_speedup only")):
        load_experiment(path)


def test_a_bad_goal_fails_the_build_with_the_file_named(tmp_path, capsys):
    root = make_project(tmp_path, [artifact("20261121T100000Z-fixture", winning_results())])
    write_experiment(root / "site_src" / "experiments", [share_goal(1.5)])
    assert main(["--root", str(root), "--out", str(root / "public")]) == 1
    err = capsys.readouterr().err
    assert "site_src/experiments/row-softmax-fusion.yaml: goals[0].min_share must be at most 1" in err
    assert not (root / "public").exists()


def goal_project(tmp_path: Path) -> Path:
    """A fixture project whose seed experiment has a met goal, a missed share goal and a missed speedup goal."""
    results = winning_results()
    results[3] = result(CANDIDATE, "float32", 0.015, seed=3)  # fp32 at 74.6% of copy
    root = make_project(tmp_path, [artifact("20261121T100000Z-fixture", results)])
    write_experiment(root / "site_src" / "experiments", [
        share_goal(0.5), share_goal(0.6, statement="At <b>60%</b> of copy."), speedup_goal(1.6)])
    return root


def text_of(html: str) -> str:
    """Visible text with tags removed and white space folded."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_goals_render_with_their_failures_listed_and_the_decisions_unmoved(tmp_path):
    root = goal_project(tmp_path)
    assert main(["--root", str(root), "--out", str(root / "public")]) == 0
    page = (root / "public" / "experiments" / "row-softmax-fusion.html").read_text()
    verdict_section = page.split('id="h-verdict"', 1)[1].split('id="h-boundary"', 1)[0]
    goals = verdict_section.split('id="goals"', 1)[1]
    text = text_of(goals)
    assert "Goal 1: At 0.5 of copy or more." in text and "Goal 3: At least 1.6x torch." in text
    assert "At &lt;b&gt;60%&lt;/b&gt; of copy." in goals and "<b>60%" not in page  # escaped
    missed = goals.split('id="h-goal-2"', 1)[1].split('id="h-goal-3"', 1)[0]
    assert re.search(rf"{DEVICE}\s*</a>\s*</th>\s*<td><span class=\"badge badge-rejected\">rejected", missed)
    assert "1 of 2 cases lies wholly below 60% of copy" in text_of(missed)
    # The failing pair is listed with its figure, outside any <details>; the passing one is counted.
    assert re.search(r"Wholly below the bar \(1\): softmax-4096x1024 float16 5[56]\.\d% \[", text_of(missed))
    assert "<details" not in missed and "1 of 2 cases clear the bar." in text_of(missed)
    speedup = text_of(goals.split('id="h-goal-3"', 1)[1])
    assert re.search(r"Wholly below the bar \(1\): softmax-4096x1024 float16 1\.5\d{2}× \[", speedup)
    assert "Wholly below the bar (2): softmax-4096x1024 float16 0.766× (point value" in speedup  # the A10G
    met = text_of(goals.split('id="h-goal-1"', 1)[1].split('id="h-goal-2"', 1)[0])
    assert "Wholly below" not in met and "2 of 2 cases clear the bar." in met and "supported" in met
    # The imported A10G run states no ceiling: the share goals cannot be judged on it, and say why.
    assert "no bandwidth against a ceiling measured in this run" in text
    index = (root / "public" / "index.html").read_text()
    card = index.split('href="experiments/row-softmax-fusion.html"', 1)[1].split("</li>\n</ul>", 1)[0]
    assert 'href="experiments/row-softmax-fusion.html#h-goal-2">Goal 2</a>' in index
    assert re.search(r"≥ 60% of copy:</span> <span class=\"badge badge-rejected\">rejected</span> "
                     rf"<span class=\"meta\">{DEVICE}</span>", index), card
    assert main(["--root", str(root), "--check"]) == 0  # goals never fail the build


def test_a_site_with_goals_builds_to_the_same_bytes_in_another_process(tmp_path):
    root = goal_project(tmp_path)
    assert main(["--root", str(root), "--out", str(tmp_path / "first")]) == 0
    subprocess.run([sys.executable, str(REPO / "build.py"), "--root", str(root), "--out", str(tmp_path / "second")],
                   check=True, capture_output=True)
    first, second = ({p.relative_to(tmp_path / name): p.read_bytes() for p in (tmp_path / name).rglob("*")
                      if p.is_file()} for name in ("first", "second"))
    assert first == second
    page = first[Path("experiments/row-softmax-fusion.html")].decode()
    assert " at 0x" not in page and "Goal 3" in page


SWEEP = REPO / "site_src" / "experiments" / "softmax-bandwidth-sweep.yaml"


def sweep_run() -> dict:
    """A run of the sweep's candidate at three row lengths in float16, against a 3,000 GB/s copy."""
    return artifact("20261121T100000Z-sweep", [
        result(CANDIDATE, "float16", 0.010 * (1 + i / 10), case=case, experiment="softmax-bandwidth-sweep", seed=i)
        for i, case in enumerate(["n1024", "n4096", "n65536"])])


def bandwidth_plot(experiment: dict) -> dict:
    """The float16 bandwidth plot of the sweep run for an experiment, with its SVG drawn."""
    [figure] = [f for f in render.run_plots(experiment, sweep_run(), "GPU", "gpu") if f["kind"] == "bandwidth"]
    plot, args = figure["job"]
    return dict(figure, svg=plot(*args).decode())


def horizontal_line_ys(svg: str, colour: str) -> list:
    """The y of each horizontal line stroked in a colour inside the plotting area (legend samples are not clipped)."""
    ys = []
    for d, style in re.findall(r'<path d="([^"]+)" clip-path="[^"]+" style="([^"]+)"', svg):
        points = re.findall(r"([\d.]+) ([\d.]+)", d)
        if f"stroke: {colour}" in style and len(points) == 2 and points[0][1] == points[1][1]:
            ys.append(float(points[0][1]))
    return ys


def test_the_bandwidth_plot_draws_a_share_goal_as_a_dotted_line_at_its_share_of_the_ceiling():
    figure = bandwidth_plot(load_experiment(SWEEP))
    assert figure["goals"] == (("90% of copy", 0.9 * 3000.0),)
    svg = figure["svg"]
    assert ">goal: 90% of copy (2,700 GB/s)<" in svg and ">copy ceiling 3,000 GB/s<" in svg
    assert "the goal (90% of copy) as a dotted line" in figure["alt"]
    [ceiling], [goal] = horizontal_line_ys(svg, plots.BAR["color"].lower()), horizontal_line_ys(svg, "#888888")
    # Zero GB/s lies on the bottom spine: the goal's height over it is 90% of the ceiling's.
    zero = 72 * 3.6 * (1 - 0.13)
    assert (zero - goal) / (zero - ceiling) == pytest.approx(0.9, abs=1e-4)
    assert bandwidth_plot(load_experiment(SWEEP))["svg"] == svg  # the same bytes again


def test_the_bandwidth_plot_has_no_goal_line_without_a_share_goal_of_its_pass():
    experiment = load_experiment(SWEEP)
    share, speedup = experiment["goals"]
    for goals in ([], [speedup], [dict(share, **{"pass": "backward"})]):
        figure = bandwidth_plot(dict(experiment, goals=goals))
        assert figure["goals"] == () and "goal" not in figure["alt"]
        assert "goal:" not in figure["svg"] and horizontal_line_ys(figure["svg"], "#888888") == []
        assert ">copy ceiling 3,000 GB/s<" in figure["svg"]


def test_the_bandwidth_table_names_the_goal_beside_the_ceiling(tmp_path):
    root = make_project(tmp_path, [sweep_run()])
    assert main(["--root", str(root), "--out", str(root / "public")]) == 0
    page = (root / "public" / "experiments" / "softmax-bandwidth-sweep.html").read_text()
    assert ("<caption>GB/s and share of copy bandwidth (3,000 GB/s), float16; goal: 90% of copy (2,700 GB/s)"
            "</caption>") in page
    svg = next((root / "public" / "experiments" / "softmax-bandwidth-sweep").glob("*-bandwidth-float16.svg"))
    assert ">goal: 90% of copy (2,700 GB/s)<" in svg.read_text()


def test_check_lists_each_goals_verdict_per_device_and_fails_on_none(tmp_path, capsys):
    root = goal_project(tmp_path)
    assert main(["--root", str(root), "--check"]) == 0
    out = capsys.readouterr().out
    claims, goals = out.split("### Goals (a missed goal fails no check)\n\n", 1)
    assert f"| row-softmax-fusion | {DEVICE} | supported |" in claims
    run = "20261121T100000Z-fixture"
    assert goals.startswith("| Experiment | Goal | Device | Verdict | Run |\n|---|---|---|---|---|\n"
                            f"| row-softmax-fusion | 1: ≥ 50% of copy | {DEVICE} | supported | {run} |\n"
                            "| row-softmax-fusion | 1: ≥ 50% of copy | NVIDIA A10G (imported) | not run | "
                            "imported-a10g-seed-004 |\n"
                            f"| row-softmax-fusion | 2: ≥ 60% of copy | {DEVICE} | rejected | {run} |\n"
                            "| row-softmax-fusion | 2: ≥ 60% of copy | NVIDIA A10G (imported) | not run | "
                            "imported-a10g-seed-004 |\n"
                            f"| row-softmax-fusion | 3: ≥ 1.6× torch-baseline | {DEVICE} | rejected | {run} |\n"
                            "| row-softmax-fusion | 3: ≥ 1.6× torch-baseline | NVIDIA A10G (imported) | rejected | "
                            "imported-a10g-seed-004 |\n\n")
    # Without goals on the experiments that have runs, there is no goals table.
    root = make_project(tmp_path / "plain", [artifact(run, winning_results())])
    assert main(["--root", str(root), "--check"]) == 0
    assert "Goals" not in capsys.readouterr().out
