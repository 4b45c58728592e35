"""Plots as SVG (matplotlib), rendered with fixed metadata so the bytes are reproducible.

A build draws scores of figures, and matplotlib spends a figure's time per artist, not per point:
an Axes alone builds tick objects of five artists each and measures them again on every draw.
So a Chart here is a Figure with one plotting area at a fixed place, drawn with a few
figure-level artists: the points of a colour in one line, the grid of an axis in one path.
"""
import functools
import hashlib
import io
import math
from pathlib import Path

import importlib.metadata

MATPLOTLIB_VERSION = importlib.metadata.version("matplotlib")
# Colour-blind-safe palette (Okabe-Ito), one colour per profile in a fixed order.
PALETTE = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442"]
STYLE = {
    "svg.hashsalt": "kernel-lab",  # stable element ids
    "svg.fonttype": "none",  # text stays text: smaller, crisp, searchable
    "font.family": "sans-serif",
    "font.size": 9,
}
GRID = {"color": "#b0b0b0", "linewidth": 0.8, "alpha": 0.3}
BAR = {"color": "#444444", "linestyle": "--", "linewidth": 1}  # a claim's bar, a copy ceiling
GOAL = {"color": "#888888", "linestyle": ":", "linewidth": 1}  # a share goal: quieter than the ceiling it is a share of
MEDIAN_COLOUR = "#ff7f0e"  # matplotlib's own box plots draw medians in this orange
TICK, TICK_PAD, LABEL_PAD, TITLE_PAD = 3.5, 3.5, 4.0, 6.0  # points, as matplotlib spaces an axes
LEGEND_FONTSIZE = 7
MAX_RUN_TICKS = 12  # labelled runs on a trend plot; the history table beside it lists every run
MARGIN = 0.05  # of the data's span, on each side, as matplotlib pads its limits


# Where rendered plots are kept between builds, keyed by a hash of their inputs; None: no cache.
CACHE_DIR: Path | None = None
_CODE_VERSION = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]


def cache_path(plot, *args) -> Path | None:
    """Where plot(*args) is kept in CACHE_DIR, or None without a cache."""
    if CACHE_DIR is None:
        return None
    key = hashlib.sha256(repr((plot.__name__, args, MATPLOTLIB_VERSION, _CODE_VERSION)).encode()).hexdigest()
    return CACHE_DIR / f"{key}.svg"


def store(path: Path | None, svg: bytes) -> bytes:
    """Keep a drawn plot at its cache path (if any) and return it."""
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{id(svg)}")
        tmp.write_bytes(svg)
        tmp.replace(path)  # atomic: a concurrent build never reads half a file
    return svg


def _size_label(n) -> str:
    """Tick label for a row length: 1K, 64K, 1M (plain text: mathtext is slow to lay out)."""
    for unit, name in ((1 << 20, "M"), (1 << 10, "K")):
        if n >= unit and n % unit == 0:
            return f"{int(n // unit)}{name}"
    return f"{n:g}"


def _number_label(value: float) -> str:
    """Tick label for a value: 0.25, 1.5, 2000 (ten significant digits hide float noise such as 0.30000000000000004)."""
    return f"{value:.10g}"


def _text_width(label: str, fontsize: float) -> float:
    """About how wide a label is, in points: digits, the widest common characters, are 0.64 em."""
    return 0.64 * fontsize * len(label)


def padded(values, margin: float = MARGIN) -> tuple:
    """(low, high) around the values with `margin` of their span on each side (or +-0.5 for one value)."""
    low, high = min(values), max(values)
    span = high - low
    return (low - margin * span, high + margin * span) if span else (low - 0.5, high + 0.5)


def value_ticks(low: float, high: float, count: int = 5) -> list:
    """Round tick values inside [low, high], at most about `count` of them."""
    from matplotlib import ticker

    values = [float(v) for v in ticker.MaxNLocator(count).tick_values(low, high)]
    return [v for v in values if low <= v <= high]


def log2_ticks(low: float, high: float, count: int = 6) -> list:
    """Powers of two inside [low, high], every k-th so that at most `count` remain."""
    powers = [2 ** k for k in range(math.ceil(math.log2(low)), math.floor(math.log2(high)) + 1)]
    return powers[::max(1, math.ceil(len(powers) / count))]


def run_ticks(n_runs: int, limit: int = MAX_RUN_TICKS) -> list:
    """At most `limit` evenly spaced run positions, counted back from the latest so it is always one."""
    stride = max(1, math.ceil(n_runs / limit))
    return list(range(n_runs - 1, -1, -stride))[::-1]


def _polyline(pieces) -> tuple:
    """(xs, ys) of many separate polylines joined by NaN, which breaks a line: one SVG path for all.

    pieces: [[(x, y), ...], ...].
    """
    xs, ys = [], []
    for piece in pieces:
        if xs:
            xs.append(math.nan)
            ys.append(math.nan)
        xs += [p[0] for p in piece]
        ys += [p[1] for p in piece]
    return xs, ys


def to_svg(fig) -> bytes:
    """Serialise a figure as SVG with no date or tool metadata."""
    buf = io.BytesIO()
    fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    return buf.getvalue()


class Chart:
    """A figure with one plotting area at a fixed place (no layout pass), drawn in data coordinates.

    size: (width, height) in inches; area: (left, bottom, right, top) as fractions of the figure;
    x_range, y_range: the data limits of the area. Only the left and bottom spines are drawn.
    """

    def __init__(self, size: tuple, area: tuple, x_range: tuple, y_range: tuple, *, log2_x: bool = False):
        from matplotlib.figure import Figure
        from matplotlib.scale import LogTransform
        from matplotlib.transforms import Affine2D, Bbox, BboxTransform, IdentityTransform, TransformedBbox
        from matplotlib.transforms import blended_transform_factory as blend

        self.fig = Figure(figsize=size)
        self.size, self.area = size, Bbox.from_extents(*area)
        self.x_range, self.y_range = x_range, y_range
        scaled = [math.log2(x) for x in x_range] if log2_x else list(x_range)
        scale = blend(LogTransform(2) if log2_x else IdentityTransform(), IdentityTransform())
        limits = Bbox.from_extents(scaled[0], y_range[0], scaled[1], y_range[1])
        self.to_figure = scale + BboxTransform(limits, self.area)  # data to fractions of the figure
        self.data = self.to_figure + self.fig.transFigure
        self.clip = TransformedBbox(self.area, self.fig.transFigure)
        self.points = Affine2D().scale(1 / 72) + self.fig.dpi_scale_trans  # from the figure's lower left corner
        # Grid lines, and the spines with the tick marks, in fractions of the figure: one path each.
        self.grid = []
        self.ink = [[(area[0], area[3]), (area[0], area[1]), (area[2], area[1])]]

    def line(self, xs, ys, *, clip: bool = True, transform=None, **style):
        """A Line2D through (xs, ys), in data coordinates unless a transform is given."""
        from matplotlib.lines import Line2D

        line = Line2D(xs, ys, transform=transform or self.data, **style)
        if clip:
            line.set_clip_box(self.clip)
        else:
            line.set_clip_on(False)
        self.fig.add_artist(line)
        return line

    def hline(self, y: float, **style) -> None:
        """A line across the area at y."""
        self.line(list(self.x_range), [y, y], **style)

    def vlines(self, xs: list, **style) -> None:
        """Lines from bottom to top of the area at each x, as one path."""
        low, high = self.y_range
        self.line(*_polyline([(x, low), (x, high)] for x in xs), **style)

    def text(self, x: float, y: float, label: str, transform, **style) -> None:
        """A text on the figure: a Label where it draws the same bytes as matplotlib's Text, else a Text."""
        if FAST_LABELS and "$" not in label and "\n" not in label:  # no mathtext, one line: what Label draws
            self.fig.add_artist(_label_class()(x, y, label, transform, **style))
        else:  # added as an artist too, so that texts keep their order whichever kind each is
            from matplotlib.text import Text

            self.fig.add_artist(Text(x, y, label, transform=transform, **style))

    def axis(self, which: str, positions: list, labels: list, *, rotation: float = 0, title: str = "") -> None:
        """Grid lines, tick marks, tick labels and the title of the x or y axis; positions in data coordinates."""
        from matplotlib.transforms import ScaledTranslation
        from matplotlib.transforms import blended_transform_factory as blend

        x = which == "x"
        area, fontsize = self.area, STYLE["font.size"]
        width, height = self.size
        # Along the axis: data coordinates; across it: fractions of the figure, offsets in points.
        along = blend(self.data, self.fig.transFigure) if x else blend(self.fig.transFigure, self.data)
        if positions:
            spots = self.to_figure.transform([(p, self.y_range[0]) if x else (self.x_range[0], p) for p in positions])
            out = TICK / 72 / (height if x else width)  # the tick length as a fraction of the figure
            for f in spots[:, 0 if x else 1].tolist():
                self.grid.append([(f, area.y0), (f, area.y1)] if x else [(area.x0, f), (area.x1, f)])
                self.ink.append([(f, area.y0), (f, area.y0 - out)] if x else [(area.x0, f), (area.x0 - out, f)])
        pad = (TICK + TICK_PAD) / 72  # inches from the spine to a tick label
        inches = self.fig.dpi_scale_trans
        shifted = along + (ScaledTranslation(0, -pad, inches) if x else ScaledTranslation(-pad, 0, inches))
        for position, label in zip(positions, labels):
            self.text(position if x else area.x0, area.y0 if x else position, label, shifted, rotation=rotation,
                      ha="center" if x and not rotation else "right", va="top" if x else "center")
        if title and x:
            depth = pad + (1.25 * fontsize + LABEL_PAD) / 72
            self.text((area.x0 + area.x1) / 2, area.y0, title, self.fig.transFigure + ScaledTranslation(0, -depth, inches),
                      ha="center", va="top")
        elif title:
            depth = pad + (max((_text_width(label, fontsize) for label in labels), default=0) + LABEL_PAD) / 72
            self.text(area.x0, (area.y0 + area.y1) / 2, title, self.fig.transFigure + ScaledTranslation(-depth, 0, inches),
                      ha="right", va="center", rotation=90)

    def title(self, title: str) -> None:
        """The title, centred over the area."""
        from matplotlib.transforms import ScaledTranslation

        area = self.area
        self.text((area.x0 + area.x1) / 2, area.y1, title,
                  self.fig.transFigure + ScaledTranslation(0, TITLE_PAD / 72, self.fig.dpi_scale_trans),
                  ha="center", va="baseline", fontsize="large")

    def legend(self, entries: list) -> None:
        """A legend right of the area, at its top: a sample of each line, then its label.

        entries: [(label, colour, linestyle, linewidth)]. Outside the area it hides none of the
        lines it names; spaced as matplotlib spaces its own.
        """
        from matplotlib.collections import LineCollection

        size, (width, height) = LEGEND_FONTSIZE, self.size
        left = 72 * width * (self.area.x1 + 0.01 * self.area.width) + 0.4 * size
        top = 72 * height * self.area.y1 - 0.4 * size
        rows = [top - (i + 0.5) * 1.7 * size for i in range(len(entries))]  # a line of text and 0.5 em between
        self.fig.add_artist(LineCollection([[(left, y), (left + 2 * size, y)] for y in rows], transform=self.points,
                                           colors=[e[1] for e in entries], linestyles=[e[2] for e in entries],
                                           linewidths=[e[3] for e in entries]))
        for (label, *_), y in zip(entries, rows):
            self.text(left + 2.8 * size, y, label, self.points, fontsize=size, va="center")

    def svg(self) -> bytes:
        """The figure as SVG, grid lines beneath the data and the spines above it."""
        figure = self.fig.transFigure
        if self.grid:
            self.line(*_polyline(self.grid), transform=figure, clip=False, zorder=1, **GRID)
        self.line(*_polyline(self.ink), transform=figure, clip=False, color="black", linewidth=0.8, zorder=2.5)
        return to_svg(self.fig)


def _style():
    """The rc context every plot is drawn (and saved) in."""
    import matplotlib

    _share_text_metrics()
    return matplotlib.rc_context(STYLE)


_TEXT_METRICS: dict = {}  # (renderer class, text, font, ismath, dpi) -> (width, height, descent)


def _share_text_metrics() -> None:
    """Let every figure reuse the text sizes measured for the figures before it.

    matplotlib keeps its cache of text sizes per renderer, and each savefig makes a new renderer,
    so every figure measured its tick labels afresh with FreeType: a quarter of a cold build's
    drawing time. The sizes depend only on the renderer's class, the text, the font and the dpi,
    which key this cache. Done once per process; the bytes drawn are the same (a test compares).
    """
    import matplotlib.text

    measure = getattr(matplotlib.text, "_get_text_metrics_with_cache", None)
    if measure is None or getattr(measure, "shared", False):  # a matplotlib without it: nothing to share
        return

    def shared(renderer, text, fontprop, ismath, dpi):
        """matplotlib's measure of one text, remembered across renderers."""
        kind = type(getattr(renderer, "_renderer", renderer))  # savefig wraps the SVG renderer
        key = (kind, text, fontprop.copy(), ismath, dpi)  # a copy: FontProperties is mutable
        size = _TEXT_METRICS.get(key)
        if size is None:
            size = _TEXT_METRICS[key] = measure(renderer, text, fontprop, ismath, dpi)
        return size

    shared.shared, shared.__wrapped__ = True, measure
    matplotlib.text._get_text_metrics_with_cache = shared


FAST_LABELS = True  # False: every text is a matplotlib Text (the tests compare the two)
_LABEL_OFFSETS: dict = {}  # (renderer class, dpi, text, font, ha, va, rotation) -> Text's offset of the text from its anchor


@functools.cache
def _label_class():
    """Label, made on first use so that importing this module does not import matplotlib."""
    from matplotlib.artist import Artist
    from matplotlib.colors import to_rgba
    from matplotlib.font_manager import FontProperties
    from matplotlib.text import Text

    class Label(Artist):
        """One line of plain text, drawn as matplotlib's Text draws it, to the byte, at a fraction
        of its cost.

        A chart has a score of texts (tick labels, titles, legend entries), and a Text spends most
        of its time building itself and laying itself out on every draw: half of a plot's drawing
        time. A Label keeps only what a single line of plain text needs, and asks a Text for its
        layout once per distinct (text, font, alignment, rotation), which tick labels repeat.
        """

        zorder = 3  # as Text: drawn above the lines, in the order added

        def __init__(self, x, y, text, transform, *, ha="left", va="baseline", rotation=0, fontsize=None):
            super().__init__()
            self._x, self._y, self._text, self._ha, self._va = x, y, text, ha, va
            self._rotation = float(rotation) % 360
            self._prop = FontProperties(size=fontsize)  # resolved now, in the plot's rc context, as Text does
            self._color = to_rgba(_rc("text.color"))
            self._antialiased = _rc("text.antialiased")
            self.set_transform(transform)

        def get_unitless_position(self):
            """The anchor, in the coordinates of the transform (the SVG backend asks)."""
            return self._x, self._y

        def get_rotation_mode(self):
            """matplotlib's default rotation mode: rotate the text, then align its box."""
            return "default"

        def get_ha(self):
            """The horizontal alignment: left, center or right."""
            return self._ha

        get_horizontalalignment = get_ha

        def get_text(self):
            """The text."""
            return self._text

        def _offset(self, renderer):
            """Where Text would put the text relative to its anchor, in display units."""
            kind = type(getattr(renderer, "_renderer", renderer))
            dpi = self.get_figure(root=True).dpi
            key = (kind, dpi, self._text, self._prop, self._ha, self._va, self._rotation)
            offset = _LABEL_OFFSETS.get(key)
            if offset is None:
                text = Text(0, 0, self._text, fontproperties=self._prop, ha=self._ha, va=self._va, rotation=self._rotation)
                text.set_figure(self.get_figure(root=True))
                offset = _LABEL_OFFSETS[key] = text._get_layout(renderer)[1][0][2]
            return offset

        def draw(self, renderer):
            """Text.draw, for one line of plain text with no box around it."""
            if not self.get_visible() or not self._text:
                return
            renderer.open_group("text", self.get_gid())
            dx, dy = self._offset(renderer)
            x, y = self.get_transform().transform((self._x, self._y))
            x, y = x + dx, y + dy
            if renderer.flipy():
                y = renderer.get_canvas_width_height()[1] - y
            gc = renderer.new_gc()
            gc.set_foreground(self._color, isRGBA=True)
            gc.set_alpha(self.get_alpha())
            gc.set_url(self.get_url())
            gc.set_antialiased(self._antialiased)
            gc.set_snap(self.get_snap())
            self._set_gc_clip(gc)
            renderer.draw_text(gc, x, y, self._text, self._prop, self._rotation, ismath=False, mtext=self)
            gc.restore()
            renderer.close_group("text")
            self.stale = False

    return Label


def _rc(key: str):
    """The current value of one rc setting."""
    import matplotlib

    return matplotlib.rcParams[key]


def bandwidth_vs_n(series: dict, ceiling_gbs, title: str, ceiling: str = "copy", goals: tuple = ()) -> bytes:
    """GB/s against row length N, one line per profile, the ceiling (named by `ceiling`) as a dashed line
    and each share goal as a dotted one.

    series: {profile: [(n_cols, gbs), ...]}; goals: ((bar in words, GB/s), ...), e.g. ("90% of copy", 2702.0)
    """
    ns = [p[0] for points in series.values() for p in points]
    log_low, log_high = padded([math.log2(n) for n in ns])
    top = max([p[1] for points in series.values() for p in points] + [ceiling_gbs or 0]) * (1 + MARGIN) or 1
    with _style():
        styles = [{"color": PALETTE[i % len(PALETTE)], "linestyle": ("-", "--")[i // len(PALETTE) % 2]}
                  for i in range(len(series))]
        entries = [(profile, style["color"], style["linestyle"], 1.5) for profile, style in zip(series, styles)]
        lines = []  # (y, style) of the horizontal lines, in the order of their legend entries
        if ceiling_gbs:
            lines.append((ceiling_gbs, BAR))
            entries.append((f"{ceiling} ceiling {ceiling_gbs:,.0f} GB/s", BAR["color"], BAR["linestyle"],
                            BAR["linewidth"]))
        for bar, gbs in goals:
            lines.append((gbs, GOAL))
            entries.append((f"goal: {bar} ({gbs:,.0f} GB/s)", GOAL["color"], GOAL["linestyle"], GOAL["linewidth"]))
        area = legend_room((0.09, 0.13, 0.64, 0.92), 7, [e[0] for e in entries])
        chart = Chart((7, 3.6), area, (2 ** log_low, 2 ** log_high), (0, top), log2_x=True)
        for points, style in zip(series.values(), styles):
            points = sorted(points)
            chart.line([p[0] for p in points], [p[1] for p in points], marker="o", markersize=3, **style)
        for y, style in lines:
            chart.hline(y, **style)
        xs = log2_ticks(2 ** log_low, 2 ** log_high)
        chart.axis("x", xs, [_size_label(n) for n in xs], title="row length N (columns)")
        ys = value_ticks(0, top)
        chart.axis("y", ys, [_number_label(v) for v in ys], title="GB/s")
        chart.title(title)
        chart.legend(entries)
        return chart.svg()


LEGEND_SLACK = 1.1  # a viewer without DejaVu Sans may draw the legend in a wider font (Verdana)
LEGEND_EDGE = 4.0  # points kept clear between the longest legend label and the figure's edge


def legend_room(area: tuple, width: float, labels: list) -> tuple:
    """The area, its right edge moved left where needed so that Chart.legend's labels end inside the figure."""
    left, bottom, right, top = area
    size = LEGEND_FONTSIZE
    longest = max((_legend_text_width(label, size) for label in labels), default=0)
    # Chart.legend puts a label's start 72 * width * (1.01 * right - 0.01 * left) + 3.2 * size points in.
    room = 1 - (3.2 * size + LEGEND_SLACK * longest + LEGEND_EDGE) / (72 * width)
    return left, bottom, min(right, (room + 0.01 * left) / 1.01), top


def _legend_text_width(label: str, size: float) -> float:
    """How wide matplotlib lays out a label in the plots' font, in points."""
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import text_to_path

    return text_to_path.get_text_width_height_descent(label, FontProperties(size=size), ismath=False)[0]


def _verdict_colour(low: float, high: float, bar: float) -> str:
    """Green when the interval clears the bar, vermilion when it lies below, orange when it crosses."""
    return PALETTE[2] if low > bar else PALETTE[1] if high < bar else PALETTE[4]


def speedup_intervals(rows: list, bar: float, title: str) -> bytes:
    """Speedup per (label) with its interval as an error bar, and the claim's bar.

    rows: [(label, speedup, low, high), ...]
    """
    height = 0.9 + 0.3 * max(2, len(rows))
    ys = list(range(len(rows)))[::-1]
    x_range = padded([v for r in rows for v in r[1:]] + [bar])
    with _style():
        chart = Chart((7, height), (0.3, 0.55 / height, 0.98, 1 - 0.3 / height), x_range,
                      (-0.5 - MARGIN * len(rows), len(rows) - 0.5 + MARGIN * len(rows)))
        by_colour = {}  # artists per colour, not per row
        for y, (_label, value, low, high) in zip(ys, rows):
            by_colour.setdefault(_verdict_colour(low, high, bar), []).append((y, value, low, high))
        for colour, points in sorted(by_colour.items()):
            # The intervals with a cap at each end, then the points.
            chart.line(*_polyline([(p[2], p[0]), (p[3], p[0])] for p in points), color=colour, marker="|",
                       markersize=6, markevery=[i for i in range(3 * len(points)) if i % 3 != 2])
            chart.line([p[1] for p in points], [p[0] for p in points], color=colour, marker="o", linestyle="none")
        chart.vlines([bar], **BAR)
        chart.axis("y", ys, [r[0] for r in rows])
        xs = value_ticks(*x_range)
        chart.axis("x", xs, [_number_label(v) for v in xs],
                   title=f"speedup (baseline time / candidate time); dashed line: the bar, {bar:g}x")
        chart.title(title)
        return chart.svg()


def latency_distribution(groups: list, title: str) -> bytes:
    """Box plot of timing samples, one box per (label, samples): box from the first to the third
    quartile, median line, whiskers to the furthest sample within 1.5 IQR, outliers hidden."""
    from matplotlib import cbook

    height = 0.9 + 0.35 * max(2, len(groups))
    boxes = cbook.boxplot_stats([g[1] for g in groups], whis=1.5)
    x_range = padded([b[k] for b in boxes for k in ("whislo", "whishi")])
    with _style():
        chart = Chart((7, height), (0.36, 0.55 / height, 0.98, 1 - 0.3 / height), x_range, (0.5, len(groups) + 0.5))
        ys = list(range(1, len(groups) + 1))
        chart.line(*_polyline([(b["q1"], y - 0.3), (b["q3"], y - 0.3), (b["q3"], y + 0.3), (b["q1"], y + 0.3),
                               (b["q1"], y - 0.3)] for b, y in zip(boxes, ys)), color="black", linewidth=1)
        chart.line(*_polyline([(b["med"], y - 0.3), (b["med"], y + 0.3)] for b, y in zip(boxes, ys)),
                   color=MEDIAN_COLOUR, linewidth=1)
        whiskers = [piece for b, y in zip(boxes, ys) for piece in (
            [(b["q1"], y), (b["whislo"], y)], [(b["q3"], y), (b["whishi"], y)],
            [(b["whislo"], y - 0.15), (b["whislo"], y + 0.15)], [(b["whishi"], y - 0.15), (b["whishi"], y + 0.15)])]
        chart.line(*_polyline(whiskers), color="black", linewidth=1)
        chart.axis("y", ys, [g[0] for g in groups])
        xs = value_ticks(*x_range)
        chart.axis("x", xs, [_number_label(v) for v in xs],
                   title="latency per call, ms (box: quartiles; whiskers: 1.5 IQR; outliers hidden)")
        chart.title(title)
        return chart.svg()


def speedup_trend(series: dict, ticks: list, regressed: list, bar: float, title: str) -> bytes:
    """Speedup across runs, one line per (case, dtype), with intervals, the claim's bar and a dotted
    line at each run that regressed.

    series: {label: [(run_index, speedup, low, high), ...]}; ticks: a label per run; regressed: run indices
    """
    named = len(series) <= len(PALETTE)  # past eight series the colours repeat and a legend names nothing
    y_range = padded([v for points in series.values() for p in points for v in p[1:]] + [bar])
    with _style():
        chart = Chart((7, 3.2), (0.1, 0.22, 0.72 if named else 0.98, 0.92), (-0.5, len(ticks) - 0.5), y_range)
        by_colour = {}  # two artists per colour, not per series
        for i, (label, points) in enumerate(sorted(series.items())):
            by_colour.setdefault(i % len(PALETTE), []).append(points)
        # Each point is a cross: its interval and a short bar of about 4 points either side, drawn as
        # one path; markers would be an SVG element each, hundreds on a long history.
        half = min(0.4, 0.009 * len(ticks))
        for colour, members in sorted(by_colour.items()):
            chart.line(*_polyline([(p[0], p[1]) for p in points] for points in members), color=PALETTE[colour])
            crosses = [piece for points in members for p in points
                       for piece in ([(p[0], p[2]), (p[0], p[3])], [(p[0] - half, p[1]), (p[0] + half, p[1])])]
            chart.line(*_polyline(crosses), color=PALETTE[colour], linewidth=1)
        chart.hline(bar, **BAR)
        if regressed:
            chart.vlines(regressed, color=BAR["color"], linestyle=":", linewidth=1)
        shown = run_ticks(len(ticks))
        chart.axis("x", shown, [ticks[i] for i in shown], rotation=30)
        ys = value_ticks(*y_range)
        chart.axis("y", ys, [_number_label(v) for v in ys], title="speedup")
        chart.title(title)
        if named:
            chart.legend([(label, PALETTE[i], "-", 1.5) for i, label in enumerate(sorted(series))])
        return chart.svg()


def draw(plot, args: tuple) -> bytes:
    """plot(*args): the task a worker process runs."""
    return plot(*args)


def warm_up() -> None:
    """Import matplotlib and draw one small figure, so that a worker's first plot costs what the others do."""
    speedup_intervals([("warm-up", 1.0, 0.9, 1.1)], 1.0, "warm-up")


class Plotter:
    """Draws the plots a build asks for: from CACHE_DIR where it can, the rest here or, given a
    parallel.Workers, in its processes while the pages render."""

    def __init__(self, workers=None):
        self.workers = workers
        self.drawn = {}  # path -> SVG bytes
        self.batches = []  # [([(path, cache path, plot, args)] to draw, future or None)]
        self.asked = set()  # paths

    def submit(self, jobs: dict) -> None:
        """Ask for {path: (plot, args)}; with workers, the drawing starts now. Asked again for a path,
        it keeps the first job."""
        missing = []
        for path, (plot, args) in jobs.items():
            if path in self.asked:  # asked for early (see render.early_plots): the same plot
                continue
            self.asked.add(path)
            key = cache_path(plot, *args)
            if key is not None and key.exists():
                self.drawn[path] = key.read_bytes()
            else:
                missing.append((path, key, plot, args))
        jobs_to_draw = [(plot, args) for _, _, plot, args in missing]
        future = self.workers.draw(jobs_to_draw) if self.workers is not None and missing else None
        self.batches.append((missing, future))

    def results(self) -> dict:
        """{path: SVG bytes} of everything asked for; the plots drawn now are cached."""
        for missing, future in self.batches:
            svgs = future.result() if future else [draw(plot, args) for _, _, plot, args in missing]
            for (path, key, _, _), svg in zip(missing, svgs):
                self.drawn[path] = store(key, svg)
        self.batches = []
        return self.drawn
