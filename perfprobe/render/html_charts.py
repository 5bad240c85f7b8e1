"""Charts for the HTML report, read from a result's own data (metrics, model.Table, model.Curve).

A probe never draws: each builder here reads what the terminal renderer shows too, and whatever
no builder claims (any curve, any matrix table) still gets a generic line chart or heat map. Builders
find their tables by title words and their columns by name, so a table that changes shape loses its
special chart but never breaks the page.

Where a chart draws metrics (cache bandwidth) or table cells that name their metric one to one (uvm:
a path's row is the metric `gbs.<path>`), a metric's repeats (model.Spread) are drawn as error bars,
min–max of the repeats like the table-read bars of falseshare and pinned, with median, MAD and n in
the hover; a figure marked unstable is drawn hollow, says why in its hover, and the legend says what
hollow means. Tables that hold no metric one to one (several thread counts or sizes per metric)
keep the min–max their own cells carry.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import plotly.graph_objects as go

from perfprobe.engine.model import Curve, Metric, ProbeResult, Table
from perfprobe.pure.units import format_bytes
from perfprobe.render.html_cells import (
    bar_marker,
    bytes_of,
    error_bars,
    finite,
    median_range,
    number,
    spread,
    spread_note,
    unstable_legend,
    value,
)

BEST_IS_HIGH = re.compile(r"GB/s|bandwidth|efficiency|speedup", re.I)
SERIES = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728")
"""plotly.js's own first colours, set explicitly so a hollow (unstable) bar keeps its series' colour."""
HEAT_SCALE: list[tuple[float, str]] = [(0.0, "#1a9850"), (0.25, "#a6d96a"), (0.5, "#fee08b"), (0.75, "#f46d43"),
                                       (1.0, "#a50026")]


@dataclass
class Chart:
    """One figure with what must stand beside it: its units, its method in one line, and the
    words that pick the findings (verdict and advice) shown next to it."""

    key: str
    title: str
    figure: go.Figure
    units: str
    method: str
    topic: tuple[str, ...] = ()


@dataclass
class Claimed:
    """Tables and curves a probe's builder already drew (the generic pass skips them)."""

    tables: set[str] = field(default_factory=set)
    curves: set[str] = field(default_factory=set)


def charts_for(result: ProbeResult) -> list[Chart]:
    """Every chart of one result: the probe's own builder first, then generic ones for the rest."""
    claimed = Claimed()
    builder = BUILDERS.get(result.probe)
    charts = builder(result, claimed) if builder else []
    for index, curve in enumerate(result.curves):
        if curve.title not in claimed.curves:
            charts.append(curve_chart(f"{result.probe}-curve{index}", curve))
    for index, table in enumerate(result.tables):
        if table.title not in claimed.tables and is_matrix(table):
            charts.append(matrix_chart(f"{result.probe}-matrix{index}", table))
    suffix = "" if result.device is None else f"-gpu{result.device}"
    for chart in charts:
        chart.key += suffix
    return charts


# --- generic charts ---------------------------------------------------------------------------

def curve_chart(key: str, curve: Curve, topic: tuple[str, ...] = ()) -> Chart:
    """A model.Curve as a line, log x where asked, with its marks as labelled dotted verticals."""
    points = [(x, y) for x, y in curve.points if finite(x) and finite(y)]
    fig = go.Figure(go.Scatter(x=[p[0] for p in points], y=[p[1] for p in points], mode="lines+markers",
                               name=curve.y_label))
    ys = [p[1] for p in points] or [0.0, 1.0]
    for x, label in curve.marks:
        _vertical(fig, x, min(ys), max(ys), label)
    _layout(fig, curve.x_label, curve.y_label, log_x=curve.log_x, log_y=curve.log_y,
            bytes_x="byte" in curve.x_label.lower(), xs=[p[0] for p in points])
    return Chart(key, curve.title, fig, f"{curve.y_label} against {curve.x_label}", curve.title, topic)


def is_matrix(table: Table) -> bool:
    """A square-ish grid whose first header reads 'row \\ column' (NUMA nodes, core to core)."""
    return bool(table.columns) and "\\" in table.columns[0] and len(table.columns) > 1


def matrix_chart(key: str, table: Table) -> Chart:
    """A matrix as a heat map coloured by each cell's distance from the best cell of its row."""
    rows = [str(row[0]) for row in table.rows]
    cols = [str(c) for c in table.columns[1:]]
    values = [[number(c) for c in row[1:]] for row in table.rows]
    fraction = table.heat == "fraction"
    high = fraction or bool(BEST_IS_HIGH.search(table.title))
    ratios = [[None if v is None or v <= 0 else 1 / min(v, 1.0) for v in row] if fraction
              else _row_ratios(row, high) for row in values]
    text = [["—" if v is None else f"{v:.3g}" for v in row] for row in values]
    fig = go.Figure(go.Heatmap(z=ratios, x=cols, y=rows, text=text, texttemplate="%{text}",
                               colorscale=HEAT_SCALE, zmin=1.0, zmax=2.0, xgap=2, ygap=2,
                               colorbar={"title": {"text": "× below expected" if fraction else "× row best"}},
                               hovertemplate="%{y} → %{x}: %{text}<extra></extra>"))
    row_title, _, col_title = table.columns[0].partition("\\")
    _layout(fig, col_title.strip(), row_title.strip())
    fig.update_yaxes(autorange="reversed", type="category")
    fig.update_xaxes(type="category")
    method = (f"{table.title}; colour: how far below the expected rate (1.0)" if fraction else
              f"{table.title}; colour: ratio to the {'highest' if high else 'lowest'} cell of its row")
    topic = (table.title.split(" ", 1)[0].lower(),) + (("bandwidth", "gb/s") if high else ("latency", "remote"))
    return Chart(key, table.title, fig, _unit_of(table.title), method, topic)


# --- probe builders ---------------------------------------------------------------------------

def _cache(result: ProbeResult, claimed: Claimed) -> list[Chart]:
    charts = []
    for index, curve in enumerate(result.curves):
        if "latency" in curve.title.lower():
            claimed.curves.add(curve.title)
            charts.append(curve_chart(f"cache-latency{index}", curve, ("level", "l1", "l2", "l3", "dram")))
    series = [(kind, who) for kind in ("read", "triad") for who in ("1t", "all")]
    levels = [m.split(".")[1] for m in result.metrics if m.startswith("latency_ns.")]
    levels = [level for level in levels if any(f"{k}_gbs.{level}.{w}" in result.metrics for k, w in series)]
    fig = go.Figure()
    drawn: list[Metric | None] = []
    for colour, (kind, who) in zip(SERIES, series):
        metrics = [result.metrics.get(f"{kind}_gbs.{level}.{who}") for level in levels]
        ys = [value(m) for m in metrics]
        if any(y is not None for y in ys):
            drawn += metrics
            fig.add_bar(x=levels, y=ys, name=f"{kind}, {'1 thread' if who == '1t' else 'all threads'}",
                        error_y=error_bars(ys, metrics), marker=bar_marker(colour, metrics),
                        hovertext=[spread_note(m) for m in metrics],
                        hovertemplate="%{x}: %{y:.4g} GB/s<br>%{hovertext}<extra>%{fullData.name}</extra>")
    if fig.data:
        unstable_legend(fig, drawn)
        _layout(fig, "level (working set inside it)", "GB/s", log_y=True)
        fig.update_layout(barmode="group")
        bars = "; bars: min–max of repeats" if any(m is not None and m.spread for m in drawn) else ""
        charts.append(Chart("cache-bandwidth", "Bandwidth per cache level", fig, f"GB/s per level (log scale){bars}",
                            "streaming read and triad (a = b + s·c) over a working set inside each level, "
                            "one thread and all threads", ("bandwidth", "gb/s", "triad")))
    return charts


def _falseshare(result: ProbeResult, claimed: Claimed) -> list[Chart]:
    fig = go.Figure()
    for table in result.tables:
        kind = table.title.split(" ", 1)[0]
        if "updates" not in table.title or "spacing" not in table.columns[:1]:
            continue
        claimed.tables.add(table.title)
        for col, name in enumerate(table.columns):
            found = re.match(r"ns/update \((.+)\)", name)
            if not found:
                continue
            spread_i = _column_index(table, f"min-max ({found.group(1)})")
            points = [(bytes_of(row[0]), number(row[col]), spread(row[spread_i]) if spread_i else None)
                      for row in table.rows]
            points = [p for p in points if p[0] is not None and p[1] is not None]
            _line_with_spread(fig, f"{kind}, {found.group(1)}", points)
    if not fig.data:
        return []
    line = value(result.metrics.get("coherency_line_bytes"))
    ys = [y for trace in fig.data for y in trace.y if y is not None]
    if line:
        _vertical(fig, float(line), min(ys), max(ys), f"line {int(line)} B")
    _layout(fig, "spacing between counters (bytes)", "ns per update", log_x=True, log_y=True, bytes_x=True,
            xs=[x for trace in fig.data for x in trace.x if x is not None])
    return [Chart("falseshare-spacing", "False sharing: cost by counter spacing", fig,
                  "ns per update (log) against spacing in bytes (log); bars: min–max of repeats",
                  "each thread updates its own counter, counters N bytes apart; median of repeats",
                  ("spacing", "pad", "counters", "scale"))]


def _pinned(result: ProbeResult, claimed: Claimed) -> list[Chart]:
    table = _find_table(result, "copy bandwidth")
    if table is None or table.columns[:1] != ("size",):
        return []
    claimed.tables.add(table.title)
    claimed.curves.update(c.title for c in result.curves if "by copy size" in c.title)
    fig = go.Figure()
    for col, name in enumerate(table.columns[1:], start=1):
        points = [(bytes_of(row[0]), *median_range(row[col])) for row in table.rows]
        _line_with_spread(fig, name, [(x, y, (lo, hi)) for x, y, lo, hi in points if x and y is not None])
    rate = value(result.metrics.get("link.rate_gbs"))
    xs = [x for trace in fig.data for x in trace.x]
    if rate:
        fig.add_scatter(x=[min(xs), max(xs)], y=[rate, rate], mode="lines", name=f"link rate {rate:.1f} GB/s",
                        line={"dash": "dash", "color": "#888"})
    _layout(fig, "copy size (bytes)", "GB/s", log_x=True, bytes_x=True, xs=xs)
    return [Chart("pinned-bandwidth", "Pinned against pageable bandwidth by copy size", fig,
                  "GB/s against copy size in bytes (log); bars: min–max of repeats; dashed: the link's rate",
                  "cudaMemcpyAsync timed with CUDA events, median of repeats per size and direction",
                  ("pinned", "pageable", "link", "gb/s"))]


def _streams(result: ProbeResult, claimed: Claimed) -> list[Chart]:
    table = _find_table(result, "pipelines")
    cells = _sweep_cells(table) if table is not None else {}
    if table is None or not cells:
        return []
    claimed.tables.add(table.title)
    chunks, streams = sorted({k[0] for k in cells}), sorted({k[1] for k in cells})
    best_at = (value(result.metrics.get("best.chunks")), value(result.metrics.get("best.streams")))
    z = [[cells[(n, s)][1] if (n, s) in cells else None for s in streams] for n in chunks]
    text = [[("★ best<br>" if (n, s) == best_at else "") + cells[(n, s)][0] if (n, s) in cells else ""
             for s in streams] for n in chunks]
    scale = [(1.0 - p, colour) for p, colour in reversed(HEAT_SCALE)]
    fig = go.Figure(go.Heatmap(z=z, x=[f"{s:g}" for s in streams], y=[f"{n:g}" for n in chunks], text=text,
                               texttemplate="%{text}", colorscale=scale, zmin=0, zmax=100,
                               xgap=2, ygap=2, colorbar={"title": {"text": "% of ideal"}},
                               hovertemplate="%{y} chunks, %{x} streams: %{text}<extra></extra>"))
    if best_at in cells:
        row, col = chunks.index(int(best_at[0] or 0)), streams.index(int(best_at[1] or 0))
        fig.add_shape(type="rect", x0=col - 0.5, x1=col + 0.5, y0=row - 0.5, y1=row + 0.5,
                      line={"width": 4, "color": "#1d2330"})
    _layout(fig, "streams", "chunks")
    fig.update_xaxes(type="category")
    fig.update_yaxes(type="category")
    return [Chart("streams-sweep", "Chunks × streams: overlap against the ideal", fig,
                  "colour: % of the ideal pipeline time; text: ms (median) and efficiency",
                  "H2D → kernel → D2H in chunks round-robin over streams, timed with CUDA events",
                  ("best", "chunks", "streams", "pipeline"))]


def _sweep_cells(table: Table) -> dict[tuple[float, float], tuple[str, float | None]]:
    """(chunks, streams) → (cell text, efficiency %) from the pipelines table; {} if its shape differs."""
    index = [_column_index(table, n) for n in ("chunks", "streams", "ms", "efficiency")]
    if None in index:
        return {}
    chunks_i, streams_i, ms_i, eff_i = (i or 0 for i in index)
    cells = {}
    for row in table.rows:
        key, ms = (number(row[chunks_i]), number(row[streams_i])), median_range(row[ms_i])[0]
        if key[0] is not None and key[1] is not None and ms is not None:
            cells[(key[0], key[1])] = (f"{ms:.3g} ms<br>{row[eff_i]}", number(row[eff_i]))
    return cells


def _uvm(result: ProbeResult, claimed: Claimed) -> list[Chart]:
    charts = []
    for index, word in enumerate(("gpu reads", "cpu reads")):
        table = _find_table(result, word)
        if table is None:
            continue
        path_i, gbs_i, x_i = (_column_index(table, n) for n in ("path", "GB/s", "× copy"))
        if path_i is None or gbs_i is None:
            continue
        claimed.tables.add(table.title)
        paths = [str(row[path_i]) for row in table.rows]
        gbs = [number(row[gbs_i]) for row in table.rows]
        metrics = [result.metrics.get(f"gbs.{path}") for path in paths]  # a row is its path's metric
        labels = [f"{number(row[x_i]):.2g}× copy" if x_i is not None and number(row[x_i]) is not None else ""
                  for row in table.rows]
        fig = go.Figure(go.Bar(x=gbs, y=paths, orientation="h", text=labels, textposition="auto",
                               marker=bar_marker("#4878a8", metrics), name="GB/s",
                               error_x=error_bars(gbs, metrics), hovertext=[spread_note(m) for m in metrics],
                               hovertemplate="%{y}: %{x:.4g} GB/s<br>%{hovertext}<extra></extra>"))
        unstable_legend(fig, metrics)
        _layout(fig, "GB/s (log)", "", log_x=True)
        fig.update_yaxes(autorange="reversed", type="category")
        fig.update_layout(height=max(260, 42 * len(paths)))
        bars = "; bars: min–max of repeats" if any(m is not None and m.spread for m in metrics) else ""
        charts.append(Chart(f"uvm-paths{index}", table.title, fig,
                            f"GB/s per path (log); label: × explicit copy{bars}",
                            "same kernel or host read on every path, median of repeats",
                            ("on demand", "prefetch", "zero-copy", "advise", "copy")))
    return charts


BUILDERS: dict[str, Callable[[ProbeResult, Claimed], list[Chart]]] = {
    "cache": _cache, "falseshare": _falseshare, "pinned": _pinned, "streams": _streams, "uvm": _uvm}


# --- helpers ----------------------------------------------------------------------------------

def _layout(fig: go.Figure, x_title: str, y_title: str, *, log_x: bool = False, log_y: bool = False,
            bytes_x: bool = False, xs: Sequence[float] = ()) -> None:
    """Shared look; colours come from the page's scheme (the page's script sets them)."""
    fig.update_layout(template="none", height=360, margin={"l": 70, "r": 20, "t": 20, "b": 60},
                      paper_bgcolor="rgba(0,0,0,0)", plot_bgcolor="rgba(0,0,0,0)",
                      legend={"orientation": "h", "y": -0.22}, font={"family": "system-ui, sans-serif", "size": 12})
    fig.update_xaxes(title_text=x_title, type="log" if log_x else None, automargin=True)
    fig.update_yaxes(title_text=y_title, type="log" if log_y else None, automargin=True)
    if bytes_x and log_x and xs:
        ticks = _byte_ticks(min(xs), max(xs))
        fig.update_xaxes(tickvals=ticks, ticktext=[format_bytes(t) for t in ticks])
    for axis, log in (("x", log_x and not bytes_x), ("y", log_y)):
        values = [v for trace in fig.data for v in (getattr(trace, axis) or ()) if finite(v) and v > 0]
        if log and values:
            ticks = _decade_ticks(min(values), max(values))
            (fig.update_xaxes if axis == "x" else fig.update_yaxes)(tickvals=ticks, ticktext=[f"{t:g}" for t in ticks])


def _byte_ticks(low: float, high: float) -> list[float]:
    """Powers of two between low and high, thinned to at most ~10 ticks."""
    if low <= 0 or high <= 0:
        return []
    first, last = math.floor(math.log2(low)), math.ceil(math.log2(high))
    step = max(1, math.ceil((last - first) / 10))
    return [float(2 ** e) for e in range(first, last + 1, step)]


def _decade_ticks(low: float, high: float) -> list[float]:
    """1-2-5 ticks per decade between low and high (plotly's own log ticks read '2 5 10 2 5 100')."""
    ticks = [m * 10.0 ** e for e in range(math.floor(math.log10(low)) - 1, math.ceil(math.log10(high)) + 1)
             for m in (1, 2, 5)]
    inside = [t for t in ticks if low / 1.5 <= t <= high * 1.5]
    return inside if len(inside) <= 12 else [t for t in inside if str(t).startswith("1")]


def _vertical(fig: go.Figure, x: float, y_low: float, y_high: float, label: str) -> None:
    fig.add_scatter(x=[x, x], y=[y_low, y_high], mode="lines+text", text=["", label], textposition="top right",
                    line={"dash": "dot", "color": "#999", "width": 1}, showlegend=False, hoverinfo="skip")


def _line_with_spread(fig: go.Figure, name: str, points: Sequence[tuple[Any, Any, Any]]) -> None:
    """A line with asymmetric error bars from (x, median, (low, high) or None) points."""
    plus = [(p[2][1] - p[1]) if p[2] and p[2][1] is not None else 0 for p in points]
    minus = [(p[1] - p[2][0]) if p[2] and p[2][0] is not None else 0 for p in points]
    fig.add_scatter(x=[p[0] for p in points], y=[p[1] for p in points], mode="lines+markers", name=name,
                    error_y={"type": "data", "symmetric": False, "array": plus, "arrayminus": minus,
                             "thickness": 1})


def _find_table(result: ProbeResult, word: str) -> Table | None:
    return next((t for t in result.tables if word in t.title.lower()), None)


def _column_index(table: Table, name: str) -> int | None:
    return table.columns.index(name) if name in table.columns else None


def _row_ratios(row: Sequence[float | None], high: bool) -> list[float | None]:
    positive = [v for v in row if v is not None and v > 0]
    if not positive:
        return [None] * len(row)
    best = max(positive) if high else min(positive)
    return [None if v is None or v <= 0 else (best / v if high else v / best) for v in row]


def _unit_of(title: str) -> str:
    found = re.search(r"\b(ns|GB/s|µs|ms)\b", title)
    return found.group(1) if found else "as in the table's title"
