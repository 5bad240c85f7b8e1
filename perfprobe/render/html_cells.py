"""Reading numbers back out of a result's cells and metrics ('95%', '22.8 [22.7-22.9]', '64 KiB'),
and a metric's repeats (model.Spread) as plotly error bars and hover text."""

from __future__ import annotations

import math
import re
from typing import Any, Sequence

from perfprobe.engine.model import Cell, Metric

UNSTABLE_LEGEND = "hollow: unstable, left out of judgement"

SIZE = re.compile(r"^\s*([\d.]+)\s*(B|KiB|MiB|GiB|TiB)\s*$")
MEDIAN_RANGE = re.compile(r"^\s*([-\d.]+)\s*\[\s*([-\d.]+)\s*[-–]\s*([-\d.]+)\s*\]")
UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}


def finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value)


def value(metric: Metric | None) -> float | None:
    """A metric's number, None when absent, text or not finite."""
    raw = metric.value if metric is not None else None
    return float(raw) if isinstance(raw, (int, float)) and finite(raw) else None


def number(cell: Cell) -> float | None:
    """A cell as a number: numbers as they are, '95%' as 95, '22.8 [..]' as its median."""
    if isinstance(cell, bool):
        return None
    if isinstance(cell, (int, float)):
        return float(cell) if math.isfinite(cell) else None
    if isinstance(cell, str):
        found = re.match(r"^\s*([-\d.]+)", cell)
        if found:
            try:
                return float(found.group(1))
            except ValueError:
                return None
    return None


def bytes_of(cell: Cell) -> float | None:
    found = SIZE.match(str(cell)) if cell is not None else None
    return float(found.group(1)) * UNITS[found.group(2)] if found else None


def spread(cell: Cell) -> tuple[float, float] | None:
    found = re.match(r"^\s*([-\d.]+)\s*[-–]\s*([-\d.]+)\s*$", str(cell)) if cell is not None else None
    return (float(found.group(1)), float(found.group(2))) if found else None


def median_range(cell: Cell) -> tuple[float | None, float | None, float | None]:
    found = MEDIAN_RANGE.match(str(cell)) if isinstance(cell, str) else None
    if found:
        return float(found.group(1)), float(found.group(2)), float(found.group(3))
    return number(cell), None, None


def error_bars(drawn: Sequence[float | None], metrics: Sequence[Metric | None]) -> dict[str, Any] | None:
    """Plotly error bars (error_y or error_x) for values drawn from `metrics`: the min–max of each
    metric's repeats around the value drawn (asymmetric; none where a metric has no stats). None
    when no metric has stats, so charts of figures without repeats stay as they were."""
    plus: list[float | None] = []
    minus: list[float | None] = []
    for y, metric in zip(drawn, metrics):
        spread = metric.spread if metric is not None else None
        if y is None or spread is None or not (finite(spread.min) and finite(spread.max)):
            plus.append(None)
            minus.append(None)
        else:
            plus.append(max(spread.max - y, 0.0))
            minus.append(max(y - spread.min, 0.0))
    if all(p is None for p in plus):
        return None
    return {"type": "data", "symmetric": False, "array": plus, "arrayminus": minus, "thickness": 1.5, "width": 4}


def spread_note(metric: Metric | None) -> str:
    """A metric's repeats in words for a hover or a table cell: 'median 73.5, min–max 70.1–78,
    MAD 2.1, n=5', and 'unstable: WHY' where it is left out of judgement; '' for neither."""
    if metric is None:
        return ""
    parts = []
    spread = metric.spread
    if spread is not None:
        text = f"median {spread.median:.4g}, min–max {spread.min:.4g}–{spread.max:.4g}"
        if spread.mad is not None:
            text += f", MAD {spread.mad:.2g}"
        parts.append(f"{text}, n={spread.n}")
    if metric.unstable:
        parts.append(f"unstable, left out of judgement: {metric.unstable}")
    return "; ".join(parts)


def bar_marker(colour: str, metrics: Sequence[Metric | None]) -> dict[str, Any]:
    """Bars filled in their series' colour; an unstable figure's bar hollow (outline, hatched)."""
    unstable = [bool(m is not None and m.unstable) for m in metrics]
    if not any(unstable):
        return {"color": colour}
    return {"color": ["rgba(0,0,0,0)" if u else colour for u in unstable],
            "line": {"color": colour, "width": [2 if u else 0 for u in unstable]},
            "pattern": {"shape": ["/" if u else "" for u in unstable], "fgcolor": colour}}


def unstable_legend(fig: Any, metrics: Sequence[Metric | None]) -> None:
    """A legend entry saying what a hollow bar means, where the chart draws an unstable figure."""
    if any(m is not None and m.unstable for m in metrics):
        fig.add_scatter(x=[None], y=[None], mode="markers", name=UNSTABLE_LEGEND, hoverinfo="skip",
                        marker={"symbol": "square-open", "size": 12, "color": "#888", "line": {"width": 2}})
