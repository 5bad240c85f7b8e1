"""Two runs compared figure by figure: a change is a regression only when a significance test on
both sides' samples says the runs differ *and* the change is larger than the smallest that counts.

The test is Mann–Whitney U (scipy.stats.mannwhitneyu, two-sided), on the repeats each report keeps
per timed figure (`stats.samples`), as Go's benchstat and google-benchmark's compare.py do; against
a baseline, the baseline hosts' repeats pooled are the base's samples. The smallest change that
counts is the larger of `threshold` (10% by default) and three sigmas of the two sides' measured
noise: each side's samples' MAD over their median (1.4826 MAD ≈ one sigma) — for samples that are
independent trials (`stats.trials`: the cache probe's DRAM figures, one buffer each), the median's
standard error instead — and a baseline's MAD across hosts, added in quadrature — measured, never a
band set by hand. A U test alone calls a
shift that is real within two runs but not between them (two runs of one shared H200 guest: L3
latency 42 then 37 ns, each run's five repeats within 2–4%): the band keeps a figure whose repeats
spread wide from being judged to a precision its repeats do not have. A figure
with fewer than MIN_SAMPLES samples on a side cannot be tested and is not called (it is counted as
untested). An unstable figure (`unstable` in the report) is judged by nobody, nor is one whose
threads sat otherwise in the two runs (`stats.placement`: OTHER_PLACEMENT). Numbers without a
better direction (counts, bytes) that differ are listed as changed; host facts that differ are
listed beside, since they explain most regressions. By default only the key figures are judged
(metrics.KEY_METRICS); `judge_all` judges every figure. A run the report calls disturbed
(`disturbance.disturbed`) is not judged for regressions at all: the comparison says so.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence

from perfprobe.engine.model import placement_of
from perfprobe.fleet import metrics as m
from perfprobe.fleet.facts import differing

THRESHOLD = 0.10
ALPHA = 0.05
"""Two-sided significance level of the Mann–Whitney U test."""
MIN_SAMPLES = 4
"""Fewer samples a side than this cannot reach ALPHA (3 against 3: the smallest two-sided p is 0.1)."""
SPREADS = 3.0
MAD_TO_SIGMA = 1.4826
MEDIAN_SE = math.sqrt(math.pi / 2)
"""A median's standard error over the mean's, for normal samples (√(π/2) ≈ 1.2533)."""


ONE_RUN_NOTE = ("BASE is one run: its repeats show the noise within a run, not between runs, and a "
                "figure that drifts between runs (CPU memory figures on shared VMs do) can read as a "
                "regression. Gate on a baseline of several runs "
                "(perfprobe fleet RUNS/ --baseline-out B.json; compare B.json NEW)")
"""Said with every report-against-report comparison. It quotes no figure: the drift seen on the
project's hosts (docs/results/compare-stability.md) is not this host's."""


@dataclass(frozen=True)
class Figure:
    """One side of a comparison: the figure's value, unit and samples; `spread` is a baseline's
    across-host MAD (0 for a report: its samples carry its noise); `unstable` the report's reason."""

    value: float
    unit: str
    samples: tuple[float, ...] = ()
    spread: float = 0.0
    unstable: str | None = None
    trials: bool = False
    """The samples are independent trials (stats.trials): the median is judged by its standard error."""
    placement: str | None = None
    """Where the figure's threads sat while timed (stats.placement): two placements are not compared."""
    by_placement: tuple[tuple[str, "Figure"], ...] = ()
    """A baseline's figure per placement its hosts' runs were timed in (baseline `placements`): a
    run is judged against the runs whose threads sat as its own did."""

    def at(self, placement: str | None) -> "Figure | None":
        """This figure as a run timed at `placement` is judged against it: a baseline's figure of
        that placement, else the figure itself; None where its runs' threads sat otherwise."""
        if placement and self.by_placement:
            return dict(self.by_placement).get(placement)
        if placement and self.placement and placement != self.placement:
            return None
        return self


Reference = Mapping[str, Figure]


@dataclass(frozen=True)
class Change:
    metric: str
    unit: str
    base: float
    new: float
    ratio: float | None     # new / base
    band: float             # the smallest relative change that counts
    kind: str               # "regression", "improvement", "no significant change", "untested",
                            # "unstable", "other placement", "changed", "same",
                            # "not called (disturbed run)"
    advice: str = ""
    p_value: float | None = None
    samples: tuple[int, int] = (0, 0)   # how many samples each side had


@dataclass
class Comparison:
    changes: list[Change]
    facts: list[tuple[str, str, str]]
    only_base: list[str] = field(default_factory=list)
    only_new: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    disturbed: list[str] = field(default_factory=list)
    """Why either run was disturbed: when not empty, no regression is called."""

    @property
    def regressions(self) -> list[Change]:
        return [c for c in self.changes if c.kind == "regression"]

    @property
    def improvements(self) -> list[Change]:
        return [c for c in self.changes if c.kind == "improvement"]


def report_reference(report: Mapping[str, Any]) -> dict[str, Figure]:
    """{"cache:latency_ns.L1": Figure} for every numeric metric of a report, with its samples."""
    from perfprobe.fleet.reports import result_key

    out: dict[str, Figure] = {}
    for result in report.get("results") or []:
        for name, metric in (result.get("metrics") or {}).items():
            value = metric.get("value") if isinstance(metric, dict) else None
            if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
                stats = metric.get("stats") if isinstance(metric.get("stats"), dict) else {}
                samples = tuple(float(s) for s in stats.get("samples") or ()
                                if isinstance(s, (int, float)) and not isinstance(s, bool) and math.isfinite(s))
                unstable = metric.get("unstable")
                out[f"{result_key(result)}:{name}"] = Figure(float(value), str(metric.get("unit", "")), samples,
                                                             unstable=str(unstable) if unstable else None,
                                                             trials=stats.get("trials") is True,
                                                             placement=placement_of(stats))
    return out


def disturbed(report: Mapping[str, Any], side: str) -> list[str]:
    """Why a report's run was disturbed ("NEW: the hypervisor took 9% …"), [] when it was not."""
    record = report.get("disturbance")
    if not isinstance(record, dict) or record.get("disturbed") is not True:
        return []
    why = [str(w) for w in record.get("why") or []] or ["the run marked itself disturbed"]
    return [f"{side}: {w}" for w in why]


def compare(base: Reference, new: Reference, base_facts: Mapping[str, str], new_facts: Mapping[str, str],
            advice: Mapping[str, str] | None = None, threshold: float = THRESHOLD,
            judge_all: bool = False, disturbed_because: Sequence[str] = ()) -> Comparison:
    """Every figure both sides have (the key figures only unless `judge_all`), judged."""
    keys = [key for key in base if key in new and (judge_all or m.is_key(key, new[key].unit))]
    changes = [judge(key, base[key], new[key], threshold, (advice or {}).get(key.split(":")[0], ""))
               for key in keys]
    if disturbed_because:
        changes = [_not_called(c) if c.kind == "regression" else c for c in changes]
    return Comparison(changes=changes, facts=differing(base_facts, new_facts),
                      only_base=sorted(set(base) - set(new)), only_new=sorted(set(new) - set(base)),
                      disturbed=list(disturbed_because))


def judge(key: str, base: Figure, new: Figure, threshold: float = THRESHOLD, advice: str = "") -> Change:
    """One figure: same, changed (no better direction), unstable, other placement, untested (too
    few samples), no significant change, or a regression / improvement (significant and beyond the
    band). Against a baseline kept per placement, the runs of the new figure's placement are the base."""
    matched = base.at(new.placement)
    base = matched or base
    b, n = base.value, new.value
    noise = math.sqrt(_side_noise(base) ** 2 + _side_noise(new) ** 2 + _relative(base.spread, b) ** 2)
    band = max(threshold, SPREADS * MAD_TO_SIGMA * noise)
    ratio = n / b if b else None
    counts = (len(base.samples), len(new.samples))
    p_value = None
    direction = m.better(key, new.unit)
    if base.unstable or new.unstable:
        kind = "unstable"
    elif matched is None:
        kind = OTHER_PLACEMENT
    elif n == b:
        kind = "same"
    elif direction is None:
        kind = "changed"
    elif min(counts) < MIN_SAMPLES:
        kind = "untested"
    else:
        p_value = significance(base.samples, new.samples)
        if ratio is None or abs(ratio - 1) <= band or p_value >= ALPHA:
            kind = "no significant change"
        else:
            worse = (ratio < 1) == (direction == "higher")
            kind = "regression" if worse else "improvement"
    return Change(key, new.unit, b, n, ratio, band, kind, advice if kind == "regression" else "",
                  p_value, counts)


OTHER_PLACEMENT = "other placement"
"""A figure whose threads sat otherwise in the two runs (one last-level cache, or two): the host
gave the runs different hardware, which no change of the figure's own says anything about. On the
2-vCPU EPYC guest the all-thread DRAM read moved 1.7x with that placement between runs, every
run's repeats agreeing (docs/results/compare-stability.md, 12-07)."""


def load_significance_test() -> None:
    """Import scipy.stats now (0.55-0.77 s on the 2-vCPU EPYC guest, 2026-12-06): the health check
    does it while its measuring child starts, not after the measurement."""
    from scipy.stats import mannwhitneyu  # noqa: F401


def significance(a: Sequence[float], b: Sequence[float]) -> float:
    """The two-sided Mann–Whitney U p-value of two samples (1.0 where every value is the same)."""
    from scipy.stats import mannwhitneyu

    if len(set(a) | set(b)) <= 1:
        return 1.0
    return float(mannwhitneyu(a, b, alternative="two-sided").pvalue)


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


def _not_called(change: Change) -> Change:
    return replace(change, kind="not called (disturbed run)", advice="")


def _side_noise(figure: Figure) -> float:
    """One side's relative noise, in MADs over the median: its samples' whole spread for repeats
    over one buffer (they agree more closely than runs do: the band must not judge the median finer
    than that), the median's standard error for independent trials (√(π/2)·σ/√n, σ ≈ 1.4826 MAD:
    each trial already shows what another run may read)."""
    relative = _relative_mad(figure.samples)
    if figure.trials and len(figure.samples) >= MIN_SAMPLES:
        return relative * MEDIAN_SE / math.sqrt(len(figure.samples))
    return relative


def _relative_mad(samples: Sequence[float]) -> float:
    """MAD over the median of `samples` (0 for fewer than MIN_SAMPLES: they are not tested anyway)."""
    if len(samples) < MIN_SAMPLES:
        return 0.0
    median = statistics.median(samples)
    mad = statistics.median(abs(v - median) for v in samples)
    return abs(mad / median) if median else 0.0


def _relative(amount: float, of: float) -> float:
    return abs(amount / of) if of else 0.0
