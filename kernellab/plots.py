"""Plots as SVG (matplotlib), rendered with fixed metadata so the bytes are reproducible."""
import hashlib
import io
from pathlib import Path

import importlib.metadata

MATPLOTLIB_VERSION = importlib.metadata.version("matplotlib")
# matplotlib 3.10 renamed boxplot's vert=False to orientation="horizontal".
HORIZONTAL = ({"orientation": "horizontal"} if tuple(map(int, MATPLOTLIB_VERSION.split(".")[:2])) >= (3, 10)
              else {"vert": False})


def _pyplot():
    """matplotlib.pyplot on the Agg backend, imported on first use: a warm build draws nothing."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot

    return matplotlib.pyplot
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


# Where rendered plots are kept between builds, keyed by a hash of their inputs; None: no cache.
CACHE_DIR: Path | None = None
_CODE_VERSION = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]


def cached(plot, *args) -> bytes:
    """plot(*args), reused from CACHE_DIR when the same inputs were plotted by the same code before.

    Plots are pure functions of their inputs, so a rebuild only draws what changed: matplotlib
    takes ~0.1 s a figure, which dominates a build otherwise.
    """
    if CACHE_DIR is None:
        return plot(*args)
    key = hashlib.sha256(repr((plot.__name__, args, MATPLOTLIB_VERSION, _CODE_VERSION)).encode()).hexdigest()
    path = CACHE_DIR / f"{key}.svg"
    if path.exists():
        return path.read_bytes()
    svg = plot(*args)
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{id(svg)}")
    tmp.write_bytes(svg)
    tmp.replace(path)  # atomic: a concurrent build never reads half a file
    return svg


def _size_label(n, _pos=None) -> str:
    """Tick label for a row length: 1K, 64K, 1M (plain text: mathtext is slow to lay out)."""
    for unit, name in ((1 << 20, "M"), (1 << 10, "K")):
        if n >= unit and n % unit == 0:
            return f"{int(n // unit)}{name}"
    return f"{n:g}"


def to_svg(fig) -> bytes:
    """Serialise a figure as SVG with no date or tool metadata."""
    buf = io.BytesIO()
    fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    _pyplot().close(fig)
    return buf.getvalue()


def bandwidth_vs_n(series: dict, copy_gbs, title: str) -> bytes:
    """GB/s against row length N, one line per profile, the copy ceiling as a dashed line.

    series: {profile: [(n_cols, gbs), ...]}
    """
    plt = _pyplot()
    from matplotlib import ticker

    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(7, 3.6))
        # Fixed margins: one draw per figure (a layout engine or a tight bbox would draw twice).
        # The legend sits right of the axes: inside, it hides the lines it names.
        fig.subplots_adjust(left=0.09, right=0.7, bottom=0.13, top=0.92)
        for i, (profile, points) in enumerate(series.items()):
            points = sorted(points)
            ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", markersize=3,
                     color=PALETTE[i % len(PALETTE)], linestyle=("-", "--")[i // len(PALETTE) % 2],
                     label=profile)
        if copy_gbs:
            ax.axhline(copy_gbs, color="#444444", linestyle="--", linewidth=1, label=f"copy ceiling {copy_gbs:,.0f} GB/s")
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(ticker.FuncFormatter(_size_label))
        ax.xaxis.set_minor_locator(ticker.NullLocator())
        ax.set_xlabel("row length N (columns)")
        ax.set_ylabel("GB/s")
        ax.set_ylim(bottom=0)
        ax.set_title(title)
        ax.legend(fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        return to_svg(fig)


def speedup_intervals(rows: list, bar: float, title: str) -> bytes:
    """Speedup per (label) with its interval as an error bar, and the claim's bar.

    rows: [(label, speedup, low, high), ...]
    """
    plt = _pyplot()
    with plt.rc_context(STYLE):
        height = 0.9 + 0.3 * max(2, len(rows))
        fig, ax = plt.subplots(figsize=(7, height))
        fig.subplots_adjust(left=0.3, right=0.98, bottom=0.55 / height, top=1 - 0.3 / height)
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
    plt = _pyplot()
    with plt.rc_context(STYLE):
        height = 0.9 + 0.35 * max(2, len(groups))
        fig, ax = plt.subplots(figsize=(7, height))
        fig.subplots_adjust(left=0.36, right=0.98, bottom=0.55 / height, top=1 - 0.3 / height)
        ax.boxplot([g[1] for g in groups], showfliers=False, widths=0.6, **HORIZONTAL)
        ax.set_yticks(range(1, len(groups) + 1), [g[0] for g in groups])
        ax.set_xlabel("latency per call, ms (box: quartiles; whiskers: 1.5 IQR; outliers hidden)")
        ax.set_title(title)
        return to_svg(fig)


def speedup_trend(series: dict, ticks: list, bar: float, title: str) -> bytes:
    """Speedup across runs, one line per (case, dtype), with intervals and the claim's bar.

    series: {label: [(run_index, speedup, low, high), ...]}
    """
    plt = _pyplot()
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(7, 3.2))
        fig.subplots_adjust(left=0.1, right=0.98, bottom=0.22, top=0.92)
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
