"""A curve drawn with characters: latency against working-set size is the picture people come for."""

from __future__ import annotations

import math

from perfprobe.engine.model import Curve

WIDTH, HEIGHT = 64, 14


def plot_lines(curve: Curve, width: int = WIDTH, height: int = HEIGHT) -> list[str]:
    """The curve as text lines: a y axis with labels, dots for points, '┆' for marks, an x axis."""
    points = [(x, y) for x, y in curve.points if _usable(x, curve.log_x) and _usable(y, curve.log_y)]
    if len(points) < 2:
        return [f"{curve.title}: too few points to draw"]
    xs = [_scale(x, curve.log_x) for x, _ in points]
    ys = [_scale(y, curve.log_y) for _, y in points]
    x_lo, x_hi, y_lo, y_hi = min(xs), max(xs), min(ys), max(ys)
    grid = [[" "] * width for _ in range(height)]
    for x, _label in curve.marks:  # the labels are listed under the plot, not drawn in it
        if _usable(x, curve.log_x) and x_lo <= _scale(x, curve.log_x) <= x_hi:
            column = _cell(_scale(x, curve.log_x), x_lo, x_hi, width)
            for row in grid:
                row[column] = "┆"
    for x, y in zip(xs, ys):
        grid[height - 1 - _cell(y, y_lo, y_hi, height)][_cell(x, x_lo, x_hi, width)] = "●"
    top, bottom = _unscale(y_hi, curve.log_y), _unscale(y_lo, curve.log_y)
    lines = [f"{curve.title}  ({curve.y_label} against {curve.x_label}"
             f"{', log scale' if curve.log_x else ''})"]
    for index, row in enumerate(grid):
        label = _fmt(top) if index == 0 else _fmt(bottom) if index == height - 1 else ""
        lines.append(f"{label:>9} ┤{''.join(row)}")
    lines.append(" " * 10 + "└" + "─" * width)
    lines.append(" " * 11 + _axis_labels(points[0][0], points[-1][0], width))
    if curve.marks:
        marks = ", ".join(label for _, label in curve.marks)
        lines.append(" " * 11 + f"┆ marks: {marks}")
    return lines


def _axis_labels(first: float, last: float, width: int) -> str:
    left, right = _fmt(first), _fmt(last)
    return left + " " * max(1, width - len(left) - len(right)) + right


def _usable(value: float, log: bool) -> bool:
    return value is not None and math.isfinite(value) and (value > 0 or not log)


def _scale(value: float, log: bool) -> float:
    return math.log2(value) if log else float(value)


def _unscale(value: float, log: bool) -> float:
    return 2.0 ** value if log else value


def _cell(value: float, low: float, high: float, cells: int) -> int:
    if high <= low:
        return 0
    return min(cells - 1, max(0, round((value - low) / (high - low) * (cells - 1))))


def _fmt(value: float) -> str:
    """Compact numbers; byte-like powers of two get K/M/G suffixes."""
    for size, suffix in ((1 << 30, "G"), (1 << 20, "M"), (1 << 10, "K")):
        if value >= size and value % (size // 4 or 1) == 0:
            return f"{value / size:g}{suffix}"
    return f"{value:.3g}"
