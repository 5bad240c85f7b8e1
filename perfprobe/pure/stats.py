"""Medians and spread: every figure perfprobe shows is the median of repeats, with its spread.

`summarize` keeps the repeats themselves too (`samples`, in the order measured), so a report can
carry them and `compare` can test two runs' samples against each other (Mann–Whitney U) instead of
leaning on a noise band set by hand. `metric` turns one summary into a `model.Metric` that carries
its statistics (`model.Spread`) into the JSON.
"""

from __future__ import annotations

import statistics
from typing import Any, Callable, Literal, Mapping, Sequence, TypedDict

from perfprobe.engine.model import Metric, Spread, placement_of

MAX_SAMPLES = 64
"""Samples kept per figure. Beyond it (one latency per message, say) `samples` holds MAX_SAMPLES
evenly spaced order statistics of the repeats, and `repeats` still says how many there were."""


class Stat(TypedDict, total=False):
    """What summarize() returns, as the probes record it in their raw numbers (figures read it)."""

    median: float
    min: float
    max: float
    iqr: float
    mad: float
    repeats: int
    samples: list[float]
    trials: bool
    """The samples are independent trials (one per buffer held at once, probes/cache/trials.py),
    not repeats over one: compare judges such a median by its standard error."""


def summarize(samples: Sequence[float], trials: bool = False) -> Stat:
    """Median, min, max, interquartile range, median absolute deviation, count and the samples
    (`trials`: each sample is an independent trial, said in the summary)."""
    if not samples:
        raise ValueError("summarize() needs at least one sample")
    values = [float(s) for s in samples]
    ordered = sorted(values)
    median = statistics.median(ordered)
    kept = values if len(values) <= MAX_SAMPLES else thinned(ordered, MAX_SAMPLES)
    out: Stat = {
        "median": median,
        "min": ordered[0],
        "max": ordered[-1],
        "iqr": _quantile(ordered, 0.75) - _quantile(ordered, 0.25),
        "mad": statistics.median(abs(v - median) for v in ordered),
        "repeats": len(ordered),
        "samples": [float(f"{v:.6g}") for v in kept],
    }
    if trials:
        out["trials"] = True
    return out


def thinned(ordered: Sequence[float], most: int) -> list[float]:
    """At most `most` of already sorted values: all of them, or `most` evenly spaced order
    statistics (the first and last kept), so a long sample keeps its shape in a short list."""
    if len(ordered) <= most:
        return list(ordered)
    return [ordered[round(i * (len(ordered) - 1) / (most - 1))] for i in range(most)]


def spread_of(summary: Mapping[str, Any], scale: float = 1.0) -> Spread | None:
    """The `model.Spread` of one `summarize()` result (times `scale`, for a change of unit); None
    when it is not a summary (an old recording's bare number)."""
    if not isinstance(summary, Mapping) or not isinstance(summary.get("median"), (int, float)):
        return None
    samples = tuple(float(s) * scale for s in summary.get("samples") or ())
    median = float(summary["median"]) * scale
    mad = summary.get("mad")
    if mad is None and samples:
        mad = statistics.median(abs(s - median) for s in samples)
    low, high = float(summary.get("min", summary["median"])) * scale, float(summary.get("max", summary["median"])) * scale
    iqr = summary.get("iqr")
    return Spread(n=int(summary.get("repeats") or len(samples) or 1), median=median,
                  min=min(low, high), max=max(low, high),
                  mad=None if mad is None else abs(float(mad) * scale),
                  iqr=None if iqr is None else abs(float(iqr) * scale), samples=samples,
                  trials=summary.get("trials") is True,
                  placement=placement_of(summary))


def rate_stat(time: Mapping[str, Any], rate: Callable[[float], float], median: float) -> Stat:
    """A time's summary turned into the rate each repeat reached (`rate`: falling with time, so the
    slowest repeat gives the min), its median the figure as computed from the median time
    (`median`); repeats that took no time at all have no rate and are left out of the samples."""
    samples = [rate(float(t)) for t in time.get("samples") or () if t]
    out: Stat = {"median": median, "min": rate(float(time["max"])), "max": rate(float(time["min"])),
                 "repeats": int(time.get("repeats") or len(samples) or 1)}
    if samples:
        whole = summarize(samples)
        out["iqr"], out["samples"] = whole["iqr"], whole["samples"]
        out["mad"] = statistics.median(abs(s - median) for s in samples)
    return out


def metric(summary: Mapping[str, Any] | None, unit: str, digits: int = 2, scale: float = 1.0,
           pick: Literal["median", "min", "max"] = "median") -> Metric:
    """A Metric whose value is the summary's `pick` (the median, or the best run where a figure is
    a best: the fastest throughput run), rounded, with the repeats' statistics beside it; a figure
    with no value (None: not measured here) where there is no summary."""
    if not summary:
        return Metric(None, unit)
    return Metric(round(float(summary[pick]) * scale, digits), unit, spread=spread_of(summary, scale))


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
