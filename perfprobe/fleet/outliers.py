"""Outliers among peers, robustly: the median and the median absolute deviation (MAD), not mean
and standard deviation, so that the outliers themselves do not hide in the spread they inflate.

A host is an outlier on a metric when its robust z-score 0.6745·|x − median| / MAD exceeds `z_limit`
(3.5, Iglewicz and Hoaglin) *and* it lies more than `min_change` from the median: identical peers
have a MAD near zero, and a 0.5% wobble is not a fault. Groups of fewer than `min_hosts` hosts are
not judged (two hosts cannot say which one is odd).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Mapping, Sequence

Z_LIMIT = 3.5
MIN_CHANGE = 0.10
MIN_HOSTS = 3
MAD_TO_SIGMA = 0.6745


@dataclass(frozen=True)
class Spread:
    median: float
    mad: float
    n: int


@dataclass(frozen=True)
class Outlier:
    host: str
    metric: str
    unit: str
    value: float
    median: float
    mad: float
    change: float          # (value - median) / |median|
    worse: bool | None     # None where the metric has no better direction


def spread(values: Sequence[float]) -> Spread:
    median = statistics.median(values)
    return Spread(median, statistics.median(abs(v - median) for v in values), len(values))


def is_outlier(value: float, s: Spread, z_limit: float = Z_LIMIT, min_change: float = MIN_CHANGE) -> bool:
    deviation = abs(value - s.median)
    relative = deviation / abs(s.median) if s.median else (float("inf") if deviation else 0.0)
    if relative <= min_change:
        return False
    return s.mad == 0 or MAD_TO_SIGMA * deviation / s.mad > z_limit


def find(values: Mapping[str, float], metric: str, unit: str, direction: str | None,
         z_limit: float = Z_LIMIT, min_change: float = MIN_CHANGE, min_hosts: int = MIN_HOSTS) -> list[Outlier]:
    """The outliers of one metric across hosts ({host: value})."""
    if len(values) < min_hosts:
        return []
    s = spread(list(values.values()))
    found = []
    for host, value in sorted(values.items()):
        if is_outlier(value, s, z_limit, min_change):
            change = (value - s.median) / abs(s.median) if s.median else float("inf")
            worse = None if direction is None else (change < 0) == (direction == "higher")
            found.append(Outlier(host, metric, unit, value, s.median, s.mad, change, worse))
    return found
