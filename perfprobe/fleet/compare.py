"""Two runs compared metric by metric: the change as a ratio, judged against the noise.

A change is a regression only when it goes the worse way by more than the metric's noise band:
the larger of the threshold (10% by default), the run-to-run noise one healthy host shows on that
metric (metrics.KNOWN_NOISE), and three spreads of either side where the side recorded one (a
baseline's MAD, a metric's `spread`). Numbers without a better direction (counts, bytes, flags) that
differ are listed as changed; host facts that differ are listed beside, since they explain most
regressions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from perfprobe.fleet import metrics as m
from perfprobe.fleet.facts import differing

THRESHOLD = 0.10
SPREADS = 3.0
MAD_TO_SIGMA = 1.4826

Reference = Mapping[str, tuple[float, float, str]]   # metric -> (value, spread, unit)


@dataclass(frozen=True)
class Change:
    metric: str
    unit: str
    base: float
    new: float
    ratio: float | None     # new / base
    band: float             # the relative change that is still noise
    kind: str               # "regression", "improvement", "noise", "changed", "same"
    advice: str = ""


@dataclass
class Comparison:
    changes: list[Change]
    facts: list[tuple[str, str, str]]
    only_base: list[str] = field(default_factory=list)
    only_new: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def regressions(self) -> list[Change]:
        return [c for c in self.changes if c.kind == "regression"]

    @property
    def improvements(self) -> list[Change]:
        return [c for c in self.changes if c.kind == "improvement"]


def report_reference(report: Mapping[str, Any]) -> dict[str, tuple[float, float, str]]:
    """{metric: (value, spread, unit)} of a report; spread 0 where the metric recorded none."""
    from perfprobe.fleet.reports import result_key

    out: dict[str, tuple[float, float, str]] = {}
    for result in report.get("results") or []:
        for name, metric in (result.get("metrics") or {}).items():
            value = metric.get("value") if isinstance(metric, dict) else None
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                spread = metric.get("spread")
                spread = float(spread) if isinstance(spread, (int, float)) else 0.0
                out[f"{result_key(result)}:{name}"] = (float(value), spread, str(metric.get("unit", "")))
    return out


def compare(base: Reference, new: Reference, base_facts: Mapping[str, str], new_facts: Mapping[str, str],
            advice: Mapping[str, str] | None = None, threshold: float = THRESHOLD,
            spread_scale: float = 1.0) -> Comparison:
    """Every metric both sides have, judged; `spread_scale` turns a side's spread into a sigma
    (MAD_TO_SIGMA for a baseline's MAD, 1 for a recorded standard spread)."""
    changes = [judge(key, base[key], new[key], threshold, spread_scale, (advice or {}).get(key.split(":")[0], ""))
               for key in base if key in new]
    return Comparison(changes=changes, facts=differing(base_facts, new_facts),
                      only_base=sorted(set(base) - set(new)), only_new=sorted(set(new) - set(base)))


def judge(key: str, base: tuple[float, float, str], new: tuple[float, float, str], threshold: float,
          spread_scale: float = 1.0, advice: str = "") -> Change:
    (b, b_spread, unit), (n, n_spread, _) = base, new
    band = max(m.noise(key, threshold), _relative(SPREADS * spread_scale * b_spread, b),
               _relative(SPREADS * n_spread, n))
    ratio = n / b if b else None
    direction = m.better(key, unit)
    if n == b:
        kind = "same"
    elif direction is None:
        kind = "changed"
    elif ratio is None or abs(ratio - 1) <= band:
        kind = "noise"
    else:
        worse = (ratio < 1) == (direction == "higher")
        kind = "regression" if worse else "improvement"
    return Change(key, unit, b, n, ratio, band, kind, advice if kind == "regression" else "")


def probe_advice(report: Mapping[str, Any]) -> dict[str, str]:
    """{"cache": advice}: each result's advice, its worst finding's first (what the probe itself says)."""
    from perfprobe.fleet.reports import result_key

    order = {"error": 0, "warn": 1, "pass": 2, "skip": 3}
    out = {}
    for result in report.get("results") or []:
        findings = sorted(result.get("findings") or [], key=lambda f: order.get(f.get("verdict"), 4))
        text = next((f.get("advice") for f in findings if f.get("advice")), "")
        out[result_key(result)] = str(text or "")
    return out


def _relative(amount: float, of: float) -> float:
    return abs(amount / of) if of else 0.0
