"""Plots: the same inputs draw the same bytes, and a long history keeps its labels few."""
import re

import pytest

from kernellab import plots


def test_run_ticks_are_few_and_always_include_the_latest_run():
    assert plots.run_ticks(5) == [0, 1, 2, 3, 4]
    for n in (12, 13, 100, 1000):
        ticks = plots.run_ticks(n)
        assert len(ticks) <= plots.MAX_RUN_TICKS and ticks[-1] == n - 1 and ticks == sorted(set(ticks))


def test_a_trend_of_many_runs_labels_a_dozen_and_marks_every_regression():
    n = 200
    series = {"case float16": [(i, 1.0 + i / n, 0.98 + i / n, 1.02 + i / n) for i in range(n)]}
    ticks = [f"c{i:06d}{' !' if i % 50 == 7 else ''}" for i in range(n)]
    svg = plots.speedup_trend(series, ticks, [i for i in range(n) if i % 50 == 7], 1.0, "GPU").decode()
    labels = re.findall(r">c(\d{6})", svg)
    assert 0 < len(labels) <= plots.MAX_RUN_TICKS and labels[-1] == f"{n - 1:06d}"
    assert svg.count("stroke-dasharray") >= 2  # the bar (dashed) and the regressions (dotted)
    assert svg == plots.speedup_trend(series, ticks, [i for i in range(n) if i % 50 == 7], 1.0, "GPU").decode()


def test_every_plot_names_what_it_shows():
    svg = plots.bandwidth_vs_n({"triton": [(1024, 900.0), (4096, 1500.0), (65536, 2000.0)],
                                "torch": [(1024, 700.0), (4096, 1400.0), (65536, 1900.0)]}, 3000.0, "GPU, float16").decode()
    for text in ("GPU, float16", "GB/s", "row length N (columns)", "triton", "torch", "copy ceiling 3,000 GB/s", "1K", "64K"):
        assert f">{text}<" in svg, text
    svg = plots.bandwidth_vs_n({"triton": [(1024, 900.0), (65536, 2000.0)]}, 3000.0, "GPU, float16",
                               "two-reads-one-write").decode()
    assert ">two-reads-one-write ceiling 3,000 GB/s<" in svg and "copy ceiling" not in svg
    svg = plots.speedup_intervals([("a float16", 1.2, 1.1, 1.3), ("b float32", 0.9, 0.85, 0.95)], 1.05, "GPU").decode()
    assert ">a float16<" in svg and ">b float32<" in svg and "the bar, 1.05x" in svg
    svg = plots.latency_distribution([("torch float16", [0.01, 0.011, 0.012, 0.013, 0.02])], "GPU").decode()
    assert ">torch float16<" in svg and "latency per call, ms" in svg


def test_text_sizes_shared_across_figures_draw_the_same_bytes(monkeypatch):
    """plots shares matplotlib's text measurements between figures (each savefig has a new
    renderer, whose own cache starts empty): the bytes must be those of matplotlib alone."""
    import matplotlib.text

    def draw():
        return (plots.bandwidth_vs_n({"triton": [(1024, 900.0), (65536, 2000.0)]}, 3000.0, "GPU, float16")
                + plots.speedup_trend({"c float16": [(0, 1.1, 1.0, 1.2), (1, 1.2, 1.1, 1.3)]}, ["a", "b !"], [1], 1.0, "GPU"))

    shared = draw()
    assert getattr(matplotlib.text._get_text_metrics_with_cache, "shared", False)
    assert plots._TEXT_METRICS  # sizes were remembered
    original = matplotlib.text._get_text_metrics_with_cache.__wrapped__
    monkeypatch.setattr(plots, "_share_text_metrics", lambda: None)
    monkeypatch.setattr(matplotlib.text, "_get_text_metrics_with_cache", original)
    assert draw() == shared


def test_a_plot_asked_for_twice_is_drawn_once():
    drawn = []
    plotter = plots.Plotter()
    job = (lambda *args: drawn.append(args) or b"<svg/>", ("x",))
    plotter.submit({"a.svg": job})
    plotter.submit({"a.svg": job, "b.svg": job})
    assert plotter.results() == {"a.svg": b"<svg/>", "b.svg": b"<svg/>"} and len(drawn) == 2


def test_labels_draw_the_bytes_of_matplotlib_text(monkeypatch):
    """plots draws its texts as Labels (a cheap single-line artist): every kind of plot, with
    rotated tick labels, a larger title, a legend and a label with a dollar sign (left to Text, as
    mathtext), must come out byte for byte as with matplotlib's own Text."""
    def draw():
        return [
            plots.bandwidth_vs_n({"triton": [(1024, 900.0), (65536, 2000.0)], "torch": [(1024, 700.0), (777777, 1.5e3)]},
                                 3000.0, "GPU, float16", "copy", (("90% of copy", 2700.0),)),
            plots.speedup_intervals([("a float16", 1.2, 1.1, 1.3), ("costs $5 and $6", 0.9, 0.85, 0.95)], 1.05, "GPU"),
            plots.latency_distribution([("torch float16", [0.01, 0.011, 0.012, 0.013, 0.02])], "GPU <b>&amp;</b>"),
            plots.speedup_trend({"c float16": [(0, 1.1, 1.0, 1.2), (1, 1.2, 1.1, 1.3)]}, ["a", "b !"], [1], 1.0, "GPU"),
        ]

    assert plots.FAST_LABELS
    fast = draw()
    monkeypatch.setattr(plots, "FAST_LABELS", False)
    assert draw() == fast


def area_right(svg: str) -> float:
    """Where the plotting area ends, in points: the right end of the bottom spine (drawn top, corner, right)."""
    return float(re.search(r'<path d="M [\d.]+ [\d.]+\s+L [\d.]+ [\d.]+\s+L ([\d.]+) [\d.]+\s+M', svg)[1])


def test_a_long_goal_label_narrows_the_plot_so_the_legend_stays_in_the_figure():
    series = {"triton-fused-row-softmax": [(1024, 2500.0), (65536, 2600.0)]}
    short = plots.bandwidth_vs_n(series, 3000.0, "GPU", "copy", (("90% of copy", 2700.0),)).decode()
    long = plots.bandwidth_vs_n(series, 3000.0, "GPU", "two-reads-one-write",
                                (("85% of two-reads-one-write", 2550.0),)).decode()
    figure_width = 72 * 7
    for svg in (short, long):
        label = re.search(r'x="([\d.]+)"[^>]*>(goal: [^<]+)<', svg)
        end = float(label[1]) + plots._legend_text_width(label[2], plots.LEGEND_FONTSIZE)
        assert end < figure_width - plots.LEGEND_EDGE, label[2]
    assert area_right(short) == pytest.approx(0.64 * figure_width) and area_right(long) < area_right(short)
