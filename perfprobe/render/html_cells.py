"""Reading numbers back out of a result's cells and metrics ('95%', '22.8 [22.7-22.9]', '64 KiB')."""

from __future__ import annotations

import math
import re
from typing import Any

from perfprobe.model import Cell, Metric

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
