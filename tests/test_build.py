"""Build the site from fixture artifacts into temp folders and assert on the pages."""
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kernellab.cli import main
from kernellab.site import SiteWriter
from labfixtures import DEVICE, REPO, artifact, decision, make_project, winning_results

WIN = artifact("20261121T100000Z-fixture", winning_results())


def build(root: Path, *extra) -> int:
    """Run build.py's main on a project root, writing into root/public."""
    return main(["--root", str(root), "--out", str(root / "public"), *extra])


def read(root: Path, rel: str) -> str:
    """A generated page as text."""
    return (root / "public" / rel).read_text(encoding="utf-8")


def text_of(html: str) -> str:
    """Visible text with tags removed and white space folded."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_builds_the_seed_page_with_verdicts_numbers_and_links(tmp_path):
    root = make_project(tmp_path, [WIN], {"0001-win.md": decision(1, DEVICE, "supported"),
                                          "0002-a10g.md": decision(2, "NVIDIA A10G", "rejected", origin="imported")})
    assert build(root) == 0
    page = read(root, "experiments/row-softmax-fusion.html")
    text = text_of(page)
    for section in ["Evidence verdict", "Evidence boundary", "Why it matters", "Result evidence", "Decision links",
                    "Cases", "Run profiles", "Metrics", "How to run", "Project", "Focus", "Run shape"]:
        assert section in text, section
    assert "Does the current Triton fused row-softmax kernel beat PyTorch" in text
    # Per-device verdicts: the fixture GPU wins, the imported A10G figures are rejected.
    assert re.search(rf"{DEVICE}\s*</a>\s*</th>\s*<td><span class=\"badge badge-supported\">supported", page)
    assert re.search(r"NVIDIA A10G \(imported\)\s*</a>\s*</th>\s*<td><span class=\"badge badge-rejected\">rejected", page)
    # The numbers: medians from the artifact, the imported figures, the speedup and copy share.
    r16 = WIN["results"][1]
    assert f"{r16['timing']['median_ms']:.4g} ms" in text
    assert f"{r16['gbs']:,.0f} GB/s" in text
    assert f"{100 * r16['copy_share']:.1f}%" in text
    assert "0.05018 ms" in text and "0.06554 ms" in text and "0.825×" in text
    assert "Imported figures, not measured by this lab" in text
    assert 'href="../decisions/0001-win.html"' in page
    assert "python build.py --run --experiment row-softmax-fusion" in text
    decision_page = read(root, "decisions/0001-win.html")
    assert 'href="../experiments/row-softmax-fusion.html"' in decision_page
    run_page = text_of(read(root, f"runs/{WIN['run_id']}.html"))
    for fact in ["Fixture GPU H-1", "132", "2.11.0", "3.6.0", "python build.py --run", "0123456789abcdef"]:
        assert fact in run_page
    assert json.loads(read(root, f"runs/{WIN['run_id']}.json"))["run_id"] == WIN["run_id"]
    index = read(root, "index.html")
    assert "badge-supported" in index and "badge-rejected" in index
    assert 'href="experiments/row-softmax-fusion.html"' in index


def test_every_relative_link_resolves(tmp_path):
    root = make_project(tmp_path, [WIN], {"0001-win.md": decision(1, DEVICE, "supported")})
    assert build(root) == 0
    public = root / "public"
    for page in public.rglob("*.html"):
        for target in re.findall(r'(?:href|src)="([^"#]+)', page.read_text()):
            if target == "data:,":  # the empty favicon
                continue
            assert not re.match(r"^[a-z]+:", target) and not target.startswith("/"), (page, target)
            assert (page.parent / target).resolve().exists(), (page, target)


def test_swapped_timings_flip_the_verdict_and_check_names_the_decision(tmp_path, capsys):
    swap = {"torch-baseline": "triton-fused-row-softmax", "triton-fused-row-softmax": "torch-baseline"}
    swapped = dict(WIN, results=[dict(r, profile=swap[r["profile"]]) for r in WIN["results"]])
    root = make_project(tmp_path, [swapped], {"0001-win.md": decision(1, DEVICE, "supported")})
    assert build(root, "--check") == 1
    out = capsys.readouterr().out
    assert "site_src/decisions/0001-win.md" in out
    assert "expects supported" in out and "makes it rejected" in out
    assert build(root) == 1
    assert not (root / "public").exists()


def test_check_passes_and_prints_markdown_summary(tmp_path, capsys):
    root = make_project(tmp_path, [WIN], {"0001-win.md": decision(1, DEVICE, "supported")})
    assert build(root, "--check") == 0
    out = capsys.readouterr().out
    assert out.startswith("## Kernel Lab evidence check")
    assert f"| row-softmax-fusion | {DEVICE} | supported |" in out


def test_same_inputs_same_bytes(tmp_path):
    root = make_project(tmp_path, [WIN])
    assert build(root) == 0
    first = {p.relative_to(root / "public"): p.read_bytes() for p in (root / "public").rglob("*") if p.is_file()}
    assert build(root) == 0
    second = {p.relative_to(root / "public"): p.read_bytes() for p in (root / "public").rglob("*") if p.is_file()}
    assert first == second


BAD_INPUTS = {
    "malformed experiment YAML": ("site_src/experiments/row-softmax-fusion.yaml", "title: [unclosed\n", "not valid YAML"),
    "unknown profile": ("site_src/experiments/row-softmax-fusion.yaml", None, "unknown profile 'torch-magic'"),
    "decision naming unknown experiment": ("site_src/decisions/0009-x.md",
                                           decision(9, DEVICE, "supported").replace("experiment: row-softmax-fusion", "experiment: nope"),
                                           "names unknown experiment 'nope'"),
    "malformed JSON artifact": ("runs/broken.json", "{not json", "not valid JSON"),
    "unknown schema version": ("runs/future.json", None, "unknown schema_version 99"),
    "artifact missing a key": ("runs/partial.json", None, "missing key 'results'"),
    "decision without front matter": ("site_src/decisions/0008-y.md", "# no front matter\n", "YAML front matter"),
}


def break_input(root: Path, case: str) -> tuple:
    """Write BAD_INPUTS[case] into the project; return (the broken file, the expected message)."""
    rel, text, message = BAD_INPUTS[case]
    path = root / rel
    if case == "unknown profile":
        text = path.read_text().replace("  - torch-naive\n", "  - torch-magic\n")
    elif case == "unknown schema version":
        text = json.dumps(dict(WIN, run_id="future", schema_version=99))
    elif case == "artifact missing a key":
        text = json.dumps({k: v for k, v in dict(WIN, run_id="partial").items() if k != "results"})
    path.write_text(text)
    return rel, message


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_names_file_and_problem_and_leaves_public_alone(tmp_path, capsys, case):
    root = make_project(tmp_path, [WIN])
    assert build(root) == 0
    before = {p: p.read_bytes() for p in (root / "public").rglob("*") if p.is_file()}
    rel, message = break_input(root, case)
    assert build(root) == 1
    err = capsys.readouterr().err
    assert rel in err and message in err, err
    after = {p: p.read_bytes() for p in (root / "public").rglob("*") if p.is_file()}
    assert after == before


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_check_fails_on_bad_input_with_the_file_named(tmp_path, capsys, case):
    root = make_project(tmp_path, [WIN])
    rel, message = break_input(root, case)
    assert build(root, "--check") == 1
    err = capsys.readouterr().err
    assert rel in err and message in err, err


def test_supersedes_links_must_agree_both_ways_and_render_both_ways(tmp_path, capsys):
    old = decision(1, DEVICE, "supported").replace("status: accepted", "status: superseded\nsuperseded_by: [2]")
    new = decision(2, DEVICE, "supported").replace("status: accepted", "status: accepted\nsupersedes: [1]")
    root = make_project(tmp_path, [WIN], {"0001-old.md": old, "0002-new.md": new})
    assert build(root) == 0
    assert 'href="0002-new.html"' in read(root, "decisions/0001-old.html")
    assert 'href="0001-old.html"' in read(root, "decisions/0002-new.html")
    (root / "site_src/decisions/0002-new.md").write_text(decision(2, DEVICE, "supported"))
    assert build(root, "--check") == 1
    assert "0002-new.md: decision 1 says it is superseded by this one" in capsys.readouterr().err


def test_decision_markdown_is_sanitised(tmp_path):
    body = ('<script>alert("x")</script>\n\n<img src=x onerror="alert(1)"> [click](javascript:alert(1)) '
            '<a href="https://example.org" onclick="evil()">ok</a> {{ "{{" }} 7*7 }}')
    root = make_project(tmp_path, [WIN], {"0001-win.md": decision(1, DEVICE, "supported", body=body)})
    assert build(root) == 0
    page = read(root, "decisions/0001-win.html")
    assert "<script>alert" not in page and "onerror" not in page and "onclick" not in page
    assert "javascript:" not in page
    assert 'href="https://example.org"' in page


def test_template_variables_are_escaped(tmp_path):
    root = make_project(tmp_path, [WIN])
    exp = root / "site_src/experiments/row-softmax-fusion.yaml"
    exp.write_text(exp.read_text().replace("title: Row Softmax Fusion", 'title: "<b onmouseover=x>Row</b>"'))
    assert build(root) == 0
    page = read(root, "experiments/row-softmax-fusion.html")
    assert "<b onmouseover" not in page and "&lt;b onmouseover=x&gt;Row&lt;/b&gt;" in page


def test_writer_refuses_a_path_twice_and_paths_outside(tmp_path):
    with SiteWriter(tmp_path / "public") as w:
        w.add("index.html", b"a")
        with pytest.raises(ValueError, match="twice"):
            w.add("index.html", b"b")
        with pytest.raises(ValueError, match="outside"):
            w.add("../x.html", b"c")
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # never committed: nothing left behind


def test_writer_swaps_the_site_in_whole_or_not_at_all(tmp_path):
    out = tmp_path / "public"
    out.mkdir()
    (out / "old.html").write_text("old")
    with pytest.raises(RuntimeError):
        with SiteWriter(out) as w:
            w.add("index.html", b"new")
            raise RuntimeError("the build failed half way")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["public"] and (out / "old.html").read_text() == "old"
    with SiteWriter(out) as w:
        w.add("index.html", b"new")
        w.add("a/b.svg", b"<svg/>")
        w.commit()
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*")) == ["a", "a/b.svg", "index.html"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["public"]


def test_run_without_gpu_fails_clearly_and_writes_nothing(tmp_path):
    pytest.importorskip("torch")
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    root = make_project(tmp_path, [])
    before = sorted(p.name for p in (root / "runs").iterdir())
    proc = subprocess.run([sys.executable, str(REPO / "build.py"), "--root", str(root), "--run"],
                          capture_output=True, text=True)
    assert proc.returncode != 0
    assert "needs a CUDA GPU" in proc.stderr and "Nothing was written to runs/" in proc.stderr
    assert sorted(p.name for p in (root / "runs").iterdir()) == before
    assert not (root / "public").exists()


def test_committed_runs_build_and_check(tmp_path):
    """The repo's own site_src/ and runs/ must build and pass the decision check."""
    assert main(["--root", str(REPO), "--out", str(tmp_path / "public")]) == 0
    assert main(["--root", str(REPO), "--check"]) == 0
    # each bandwidth table and plot names the ceiling its shares are of: the backward's is not a copy
    backward = (tmp_path / "public" / "experiments" / "backward-pass.html").read_text()
    forward = (tmp_path / "public" / "experiments" / "softmax-bandwidth-sweep.html").read_text()
    assert "share of two-reads-one-write bandwidth" in backward and "share of copy bandwidth" not in backward
    assert "share of copy bandwidth" in forward and "two-reads-one-write" not in forward
    # issue 3's goals are shown in the verdict section, beside the claim, whatever they come to
    assert 'id="h-goal-2"' in forward.split('id="h-boundary"')[0] and 'id="h-goal-1"' in backward
    legends = [p.read_text() for p in (tmp_path / "public" / "experiments" / "backward-pass").glob("*-bandwidth-*.svg")]
    assert legends and all("two-reads-one-write ceiling" in svg and "copy ceiling" not in svg for svg in legends)


def test_swapping_the_committed_h200_timings_fails_decision_0002(tmp_path, capsys):
    """On the real evidence: swap torch and Triton in the H200 headline run and --check must object."""
    root = tmp_path / "repo"
    shutil.copytree(REPO / "site_src", root / "site_src")
    shutil.copytree(REPO / "runs", root / "runs")
    assert main(["--root", str(root), "--check"]) == 0
    capsys.readouterr()
    headline = max(p for p in (root / "runs").glob("*-nvidia-h200.json")
                   if '"row-softmax-fusion"' in p.read_text())
    run = json.loads(headline.read_text())
    swap = {"torch-baseline": "triton-fused-row-softmax", "triton-fused-row-softmax": "torch-baseline"}
    for r in run["results"]:
        if r["experiment"] == "row-softmax-fusion":
            r["profile"] = swap.get(r["profile"], r["profile"])
    headline.write_text(json.dumps(run))
    assert main(["--root", str(root), "--check"]) == 1
    out = capsys.readouterr().out
    assert "| row-softmax-fusion | NVIDIA H200 | rejected |" in out
    assert "site_src/decisions/0002-present-the-fused-softmax-as-a-win-on-hopper.md" in out
    assert "expects supported for row-softmax-fusion on NVIDIA H200" in out


def test_kernel_facts_join_compile_facts_and_ncu_counters_by_name():
    from kernellab.render import kernel_fact_rows

    result = {"compile": [{"kernel": "_exchange_fwd_kernel", "n_regs": 63}],
              "profiling": {"tool": "ncu", "kernels": [
                  {"kernel": "void at::native::vectorized_elementwise_kernel", "dram_throughput_pct": 0.05},
                  {"kernel": "_exchange_fwd_kernel", "dram_throughput_pct": 69.1}]}}
    rows = kernel_fact_rows(result)
    assert [r["kernel"] for r in rows] == ["void at::native::vectorized_elementwise_kernel", "_exchange_fwd_kernel"]
    assert rows[1]["compile"]["n_regs"] == 63 and rows[1]["ncu"]["dram_throughput_pct"] == 69.1
    assert rows[0]["compile"] == {}


def test_kernel_pages_show_each_launch_grid_and_compile_time_values(tmp_path):
    """A result's compile facts name its launch: the grid's programs and the kernel's compile-time values (run
    artifacts record them since the launch log keeps the grid); facts without them leave the cells empty."""
    results = winning_results()
    for r in results:
        if r["profile"] == "triton-fused-row-softmax":
            r["compile"] = [{"kernel": "_rows_fwd_kernel", "n_regs": 40, "grid": [792],
                             "constexprs": {"ALIGN": 8, "LOG2": True, "ROWS_PER_PROGRAM": 2}}]
    root = make_project(tmp_path, [artifact("20261121T100000Z-fixture", results)])
    assert build(root) == 0
    page = read(root, "kernels/triton-fused-row-softmax.html")
    assert "<td>792</td>" in page
    assert "<code>ALIGN=8 LOG2=True ROWS_PER_PROGRAM=2</code>" in page


def test_check_base_lists_the_verdicts_that_changed_against_a_git_ref(tmp_path, capsys):
    root = make_project(tmp_path, [WIN])
    git = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(git + ["init", "-q"], check=True)
    subprocess.run(git + ["add", "."], check=True)
    subprocess.run(git + ["commit", "-qm", "base"], check=True)
    later = artifact("20261122T100000Z-fixture", winning_results(candidate_ms=0.030), started="2026-11-22T10:00:00Z")
    (root / "runs" / f"{later['run_id']}.json").write_text(json.dumps(later))
    assert build(root, "--check", "--base", "HEAD") == 0
    out = capsys.readouterr().out
    assert "### Verdicts changed against `HEAD`" in out
    assert f"| row-softmax-fusion | {DEVICE} | supported | rejected |" in out
    assert build(root, "--check", "--base", "no-such-ref") == 1
    assert "git cannot read that ref" in capsys.readouterr().err


def test_compare_prints_ratios_and_significance(tmp_path, capsys):
    slower = artifact("20261122T100000Z-fixture", winning_results(candidate_ms=0.012), started="2026-11-22T10:00:00Z")
    root = make_project(tmp_path, [WIN, slower])
    assert build(root, "--compare", WIN["run_id"], slower["run_id"]) == 0
    out = capsys.readouterr().out
    fp16 = next(line for line in out.splitlines() if "triton-fused-row-softmax | float16" in line)
    assert "| 1.200 |" in fp16 and "B slower" in fp16
    base16 = next(line for line in out.splitlines() if "torch-baseline | float16" in line)
    assert "same within noise" in base16
    assert f"copy {WIN['copy_bandwidth']['gbs']:,.0f} GB/s" in out and "a lead to repeat" in out
    assert build(root, "--compare", WIN["run_id"], "nope") == 1


def bench_project(tmp_path: Path, n_runs: int = 12) -> Path:
    """A project of synthetic runs (scripts/bench_build.py's) over three experiments, so that every
    kind of plot is drawn: GB/s against N, speedup intervals, latency boxes and trends."""
    import importlib.util
    import random

    from kernellab.content import load_experiment

    spec = importlib.util.spec_from_file_location("bench_build", REPO / "scripts" / "bench_build.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    experiments = [load_experiment(p) for p in sorted((REPO / "site_src" / "experiments").glob("*.yaml"))]
    size = lambda e: len(e["cases"]) * len(e["profiles"]) * len(e["dtypes"]) * len(e["passes"])  # noqa: E731
    single = sorted((e for e in experiments if len(e["cases"]) == 1), key=size)
    sweep = min((e for e in experiments if len({c["cols"] for c in e["cases"]}) >= 3), key=size)
    chosen = [single[0], sweep, single[-1]]
    rng = random.Random(0)
    # Three experiments and two devices: run i is of experiment i % 3 on device i % 2, so each
    # experiment has runs on both devices.
    return make_project(tmp_path, [bench.synthetic_run(i, chosen, rng) for i in range(n_runs)], decisions={})


def site_bytes(public: Path) -> dict:
    """{relative path: bytes} of a built site."""
    return {p.relative_to(public): p.read_bytes() for p in public.rglob("*") if p.is_file()}


def test_a_parallel_build_is_byte_for_byte_a_serial_one(tmp_path, monkeypatch):
    from kernellab import cli, parallel

    if not parallel.can_fork():
        pytest.skip("no fork here: builds are serial")
    root = bench_project(tmp_path)
    monkeypatch.setattr(parallel, "usable_cpus", lambda: 3)  # two drawing processes: the worker and a helper
    sites = {}
    for name, min_runs in (("serial", 10**9), ("parallel", 1), ("parallel, plots cached", 1)):
        monkeypatch.setattr(cli, "PARALLEL_MIN_RUNS", min_runs)
        if name != "parallel, plots cached":
            shutil.rmtree(root / ".cache", ignore_errors=True)
        assert main(["--root", str(root), "--out", str(tmp_path / name)]) == 0
        sites[name] = site_bytes(tmp_path / name)
    kinds = {p.name.split("-")[-1].split(".")[0] for p in sites["serial"] if p.suffix == ".svg"}
    assert {"speedup", "latency", "trend", "float16", "float32"} <= kinds, kinds
    assert sites["parallel"] == sites["serial"]
    assert sites["parallel, plots cached"] == sites["serial"]


def test_a_parallel_build_reports_the_first_bad_file_and_leaves_public_alone(tmp_path, monkeypatch, capsys):
    from kernellab import cli, parallel

    if not parallel.can_fork():
        pytest.skip("no fork here: builds are serial")
    root = bench_project(tmp_path, n_runs=6)
    monkeypatch.setattr(parallel, "usable_cpus", lambda: 2)
    monkeypatch.setattr(cli, "PARALLEL_MIN_RUNS", 1)
    assert build(root) == 0
    before = site_bytes(root / "public")
    paths = sorted((root / "runs").glob("*.json"))
    # This process reads from the first file on and the worker checks from the last one back, so
    # either may meet a broken file first: the earlier one in path order is reported.
    paths[1].write_text("{not json")
    paths[2].write_text(json.dumps({"schema_version": 1}))
    assert build(root) == 1
    err = capsys.readouterr().err
    assert f"runs/{paths[1].name}: not valid JSON" in err and paths[2].name not in err
    paths[1].write_text(json.dumps({"schema_version": 1}))
    assert build(root) == 1
    assert f"runs/{paths[1].name}: invalid run artifact" in capsys.readouterr().err
    assert site_bytes(root / "public") == before


def test_imported_share_names_its_own_ceiling(tmp_path):
    # An imported source that states a share of its copy bandwidth: the card names the copy
    # ceiling of that run, not whichever device's section came before it on the page.
    root = make_project(tmp_path, [WIN])
    path = root / "runs" / "imported-a10g-seed-004.json"
    imported = json.loads(path.read_text())
    imported["results"][0]["copy_share"] = 0.55
    path.write_text(json.dumps(imported))
    assert build(root) == 0
    page = read(root, "experiments/row-softmax-fusion.html")
    a10g = text_of(page.split('id="nvidia-a10g-imported"', 1)[1])
    assert "Share of copy bandwidth 55.0%" in a10g


def test_forked_work_comes_back_with_its_result_or_its_error():
    from kernellab import parallel

    if not parallel.can_fork():
        pytest.skip("no fork here")
    held = {"pages": ["a", "b"]}  # seen by the child without being sent
    assert parallel.Forked(lambda: [(p, p.encode()) for p in held["pages"]]).result() == [("a", b"a"), ("b", b"b")]
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        parallel.Forked(lambda: 1 / 0).result()


@pytest.mark.parametrize("broken", [[0], [5], [2, 4], [3, 5], []])
def test_loading_with_the_worker_gives_what_loading_alone_gives(tmp_path, broken):
    """Whichever process meets a broken file (the worker checks from the end, this one from the
    start), the first one in path order is the error; with none broken, the same runs."""
    from kernellab import artifacts, parallel
    from kernellab.errors import BuildError

    if not parallel.can_fork():
        pytest.skip("no fork here")
    root = bench_project(tmp_path, n_runs=6)
    paths = sorted((root / "runs").glob("*.json"))
    for k in broken:  # a schema error (only a full check finds it) or broken JSON (any reader does)
        paths[k].write_text(json.dumps({"schema_version": 1}) if k % 2 else "{not json")

    def outcome(workers):
        try:
            return parallel.load_runs(paths, artifacts.read_artifact, workers)
        except BuildError as exc:
            return str(exc)

    alone = outcome(None)
    with parallel.Workers(2, warm_up=False) as workers:
        assert outcome(workers) == alone
    assert isinstance(alone, str) == bool(broken)
