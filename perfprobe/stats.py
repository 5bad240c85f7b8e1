"""Medians and spread: every figure perfprobe shows is the median of repeats, with its spread."""

from __future__ import annotations

import statistics
from typing import Any, Mapping, Sequence, TypedDict


class Stat(TypedDict, total=False):
    """What summarize() returns, as the probes record it in their raw numbers (figures read it)."""

    median: float
    min: float
    max: float
    iqr: float
    repeats: int


def summarize(samples: Sequence[float]) -> dict[str, float]:
    """Median, min, max, interquartile range and count of `samples` (at least one)."""
    if not samples:
        raise ValueError("summarize() needs at least one sample")
    ordered = sorted(float(s) for s in samples)
    return {
        "median": statistics.median(ordered),
        "min": ordered[0],
        "max": ordered[-1],
        "iqr": _quantile(ordered, 0.75) - _quantile(ordered, 0.25),
        "repeats": len(ordered),
    }


def relative_spread(summary: Mapping[str, Any]) -> float:
    """(max - min) / median of one `summarize()` result: how far its repeats landed apart."""
    median = float(summary["median"])
    return (float(summary["max"]) - float(summary["min"])) / median if median else 0.0


def _quantile(ordered: Sequence[float], q: float) -> float:
    """Linear-interpolated quantile of already sorted values."""
    if len(ordered) == 1:
        return ordered[0]
    position = q * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)
