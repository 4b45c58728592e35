"""Plots as SVG (matplotlib), rendered with fixed metadata so the bytes are reproducible."""
import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)

# matplotlib 3.10 renamed boxplot's vert=False to orientation="horizontal".
HORIZONTAL = {"orientation": "horizontal"} if tuple(map(int, matplotlib.__version__.split(".")[:2])) >= (3, 10) else {"vert": False}
# Colour-blind-safe palette (Okabe-Ito), one colour per profile in a fixed order.
PALETTE = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442"]
STYLE = {
    "svg.hashsalt": "kernel-lab",  # stable element ids
    "svg.fonttype": "none",  # text stays text: smaller, crisp, searchable
    "font.family": "sans-serif",
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
}


def to_svg(fig) -> bytes:
    """Serialise a figure as SVG with no date or tool metadata."""
    buf = io.BytesIO()
    fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None}, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def bandwidth_vs_n(series: dict, copy_gbs, title: str) -> bytes:
    """GB/s against row length N, one line per profile, the copy ceiling as a dashed line.

    series: {profile: [(n_cols, gbs), ...]}
    """
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(7, 3.6))
        for i, (profile, points) in enumerate(series.items()):
            points = sorted(points)
            ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", markersize=3,
                     color=PALETTE[i % len(PALETTE)], label=profile)
        if copy_gbs:
            ax.axhline(copy_gbs, color="#444444", linestyle="--", linewidth=1, label=f"copy ceiling {copy_gbs:,.0f} GB/s")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("row length N (columns)")
        ax.set_ylabel("GB/s")
        ax.set_ylim(bottom=0)
        ax.set_title(title)
        ax.legend(fontsize=7, frameon=False, loc="lower right")
        return to_svg(fig)


def speedup_intervals(rows: list, bar: float, title: str) -> bytes:
    """Speedup per (label) with its interval as an error bar, and the claim's bar.

    rows: [(label, speedup, low, high), ...]
    """
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(7, 0.5 + 0.32 * max(2, len(rows))))
        ys = list(range(len(rows)))[::-1]
        for y, (label, value, low, high) in zip(ys, rows):
            colour = PALETTE[2] if low > bar else PALETTE[1] if high < bar else PALETTE[4]
            ax.errorbar([value], [y], xerr=[[value - low], [high - value]], fmt="o", color=colour, capsize=3)
        ax.axvline(bar, color="#444444", linestyle="--", linewidth=1)
        ax.set_yticks(ys, [r[0] for r in rows])
        ax.set_xlabel(f"speedup (baseline time / candidate time); dashed line: the bar, {bar:g}x")
        ax.set_title(title)
        return to_svg(fig)


def latency_distribution(groups: list, title: str) -> bytes:
    """Box plot of timing samples, one box per (label, samples)."""
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(7, 0.6 + 0.35 * max(2, len(groups))))
        ax.boxplot([g[1] for g in groups], showfliers=False, widths=0.6, **HORIZONTAL)
        ax.set_yticks(range(1, len(groups) + 1), [g[0] for g in groups])
        ax.set_xlabel("latency per call, ms (box: quartiles; whiskers: 1.5 IQR; outliers hidden)")
        ax.set_title(title)
        return to_svg(fig)


def speedup_trend(series: dict, ticks: list, bar: float, title: str) -> bytes:
    """Speedup across runs, one line per (case, dtype), with intervals and the claim's bar.

    series: {label: [(run_index, speedup, low, high), ...]}
    """
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(7, 3.2))
        for i, (label, points) in enumerate(sorted(series.items())):
            xs = [p[0] for p in points]
            ys = [p[1] for p in points]
            err = [[p[1] - p[2] for p in points], [p[3] - p[1] for p in points]]
            ax.errorbar(xs, ys, yerr=err, marker="o", markersize=3, capsize=2,
                        color=PALETTE[i % len(PALETTE)], label=label)
        ax.axhline(bar, color="#444444", linestyle="--", linewidth=1)
        ax.set_xticks(range(len(ticks)), ticks, rotation=30, ha="right")
        ax.set_ylabel("speedup")
        ax.set_title(title)
        if len(series) <= 8:
            ax.legend(fontsize=7, frameon=False)
        return to_svg(fig)
