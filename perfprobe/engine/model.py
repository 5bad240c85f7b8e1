"""Results as data: what a probe found, kept apart from how it was measured and how it is shown.

Everything here is a frozen dataclass of plain values, so results can be rendered as a table, written
as JSON, recorded, and compared in tests without any kernel or terminal involved.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Mapping, Sequence, Union

Cell = Union[str, int, float, None]


class Verdict(str, Enum):
    """A probe's or finding's outcome. Ordered by severity: the worst one decides the exit code."""

    PASS = "pass"
    SKIP = "skip"
    WARN = "warn"
    ERROR = "error"

    @property
    def severity(self) -> int:
        return _SEVERITY[self]


_SEVERITY = {Verdict.PASS: 0, Verdict.SKIP: 1, Verdict.WARN: 2, Verdict.ERROR: 3}
SCHEMA_VERSION = 2
"""The report JSON's schema version (perfprobe/schema/report.schema.json): written and read back.
2: metrics carry their repeats' statistics (`stats`) and an `unstable` mark; reports their `disturbance`."""


def host_name(host: Mapping[str, Any]) -> str | None:
    """The name a host goes by in every output (Prometheus, JUnit, HTML, the fleet): the Slurm node
    name under Slurm (what `scontrol` drains), else the hostname; None when the report has neither."""
    name = host.get("slurm_node") or host.get("hostname")
    return str(name) if name else None


def worst(verdicts: Sequence[Verdict], default: Verdict = Verdict.PASS) -> Verdict:
    """The most severe verdict of `verdicts` (`default` when there are none)."""
    return max(verdicts, key=lambda v: v.severity, default=default)


SHARED_LLC, APART, MOVED = "shared LLC", "apart", "moved"
"""Spread.placement: the threads shared a last-level cache, sat on two, or moved between the two."""


def placement_of(stats: Mapping[str, Any]) -> str | None:
    """Spread.placement from a figure's statistics (a summary, a report's `stats`), None without."""
    value = stats.get("placement")
    return value if isinstance(value, str) and value else None


@dataclass(frozen=True)
class Spread:
    """The repeats behind one timed figure: how many, their median, extremes and robust spread
    (MAD: median absolute deviation; IQR), and the samples themselves (at most stats.MAX_SAMPLES),
    in the figure's unit. `compare` tests two runs' samples against each other."""

    n: int
    median: float
    min: float
    max: float
    mad: float | None = None
    iqr: float | None = None
    samples: tuple[float, ...] = ()
    trials: bool = False
    """Each sample is an independent trial (a buffer of its own), not a repeat over one buffer."""
    placement: str | None = None
    """Where the figure's threads sat while it was timed, where a probe can tell and it moves the
    figure (the cache probe's all-thread DRAM read: SHARED_LLC, APART or MOVED, from a handoff
    timed before and after it). compare does not judge a figure between two placements."""

    @property
    def relative_mad(self) -> float | None:
        """MAD over the median: the repeats' robust relative spread (None without a MAD)."""
        if self.mad is None or not self.median:
            return None
        return abs(self.mad / self.median)


@dataclass(frozen=True)
class Metric:
    """One measured number with its unit (`ns`, `GB/s`, `bytes`, `ratio`, `count`, …).

    A timed figure carries its repeats (`spread`); one that stayed unstable after a re-measurement
    (its repeats disagree, or it breaks a physical relation) carries `unstable`, the reason, and is
    judged by nobody: not the verdict, not compare, not the fleet, not the health check."""

    value: float | int | str | None
    unit: str
    spread: Spread | None = None
    unstable: str | None = None


@dataclass(frozen=True)
class Finding:
    """One judgement: what was seen (`message`) and what to do about it (`advice`, may be empty)."""

    verdict: Verdict
    message: str
    advice: str = ""
    confirm: tuple[str, ...] = ()
    """The measurement keys a timing-based finding rests on: a `warn` with keys is re-measured
    (the probe's `remeasure(ctx, raw, keys)`) and judged again before it is issued (confirm.py)."""
    figure: float | None = None
    """The number the finding rests on, kept beside the re-measured one in `confirmation`."""
    confirmation: Mapping[str, Any] | None = None
    """After a re-measurement: the keys, the first and second message and figure, and `confirmed`."""


@dataclass(frozen=True)
class Table:
    """A table of figures for people (the JSON carries it too).

    `heat` asks the renderer to colour numeric cells: "row", by their ratio to the smallest numeric
    cell of their row (NUMA matrices, core-to-core maps); "fraction", cells that are already a
    fraction of an expected value, 1.0 = at it (p2p pairs against their links' rate). Renderers only
    draw it, with the same bands for both: within 1.2x of the reference green, within 1.6x yellow.
    """

    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]
    heat: str | None = None


@dataclass(frozen=True)
class Curve:
    """A curve to draw in the terminal, e.g. latency against working-set size.

    `marks` are labelled vertical markers at x positions (e.g. reported cache sizes).
    """

    title: str
    x_label: str
    y_label: str
    points: tuple[tuple[float, float], ...]
    log_x: bool = True
    log_y: bool = False
    marks: tuple[tuple[float, str], ...] = ()


@dataclass(frozen=True)
class Assessment:
    """What a probe's pure `judge` returns: everything but the verdict, which the runner derives
    from the findings (the worst of them; pass when there are none)."""

    summary: str
    metrics: Mapping[str, Metric] = field(default_factory=dict)
    findings: tuple[Finding, ...] = ()
    tables: tuple[Table, ...] = ()
    curves: tuple[Curve, ...] = ()
    facts: Mapping[str, Any] = field(default_factory=dict)
    key_figure: str = ""

    @property
    def verdict(self) -> Verdict:
        return worst([f.verdict for f in self.findings])


@dataclass(frozen=True)
class ProbeResult:
    """One probe's outcome on one device (`device` is None for CPU probes)."""

    probe: str
    verdict: Verdict
    summary: str
    metrics: Mapping[str, Metric] = field(default_factory=dict)
    findings: tuple[Finding, ...] = ()
    facts: Mapping[str, Any] = field(default_factory=dict)
    duration_s: float = 0.0
    tables: tuple[Table, ...] = ()
    curves: tuple[Curve, ...] = ()
    key_figure: str = ""
    device: int | None = None
    stages_s: Mapping[str, float] = field(default_factory=dict)
    """Where `duration_s` went (engine/stages.py): seconds compiling, measuring, re-measuring and
    judging; what a `--quick` run past its budget names, and what tools/bench_speed.py tabulates."""


@dataclass(frozen=True)
class Overrun:
    """One probe (on one GPU) that took longer than its declared `--quick` budget, and where the
    time went (its stages_s)."""

    probe: str
    device: int | None
    budget_s: float
    wall_s: float
    stages_s: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class QuickBudget:
    """A `--quick` run against its time budget (engine/quick_budget.py): the sum of the declared
    budgets of the probes it measured, the run's wall time, what of it went outside the probes (host
    facts, numba's cache checked, kernels compiled ahead) and to compiling ahead, and the probes
    over their own budget. A slow run is reported, never failed: it changes no exit code."""

    budget_s: float
    wall_s: float
    outside_s: float = 0.0
    compile_ahead_s: float = 0.0
    over: tuple[Overrun, ...] = ()

    @property
    def spent_s(self) -> float:
        """What the budget is held against: the probes' time and compiling ahead (a cold cache is
        what makes a run slow); not the start-up (host facts, numba imported to check its cache),
        which would take a one-probe run of a fraction of a second past its budget every time."""
        return max(0.0, self.wall_s - self.outside_s) + self.compile_ahead_s

    @property
    def exceeded(self) -> bool:
        """Past the budget; never when nothing was budgeted (every probe skipped)."""
        return self.budget_s > 0 and self.spent_s > self.budget_s


@dataclass(frozen=True)
class Report:
    """Everything one run produced: host facts and every probe's result."""

    perfprobe_version: str
    host: Mapping[str, Any]
    results: tuple[ProbeResult, ...]
    duration_s: float = 0.0
    schema_version: int = SCHEMA_VERSION
    disturbance: Mapping[str, Any] = field(default_factory=dict)
    """How disturbed the run was (host/load.py: CPU time the hypervisor stole and other processes
    used during it) and what that did (hold-backs, unstable figures; stability.disturbance): compare
    calls no regression from a disturbed run."""
    quick_budget: QuickBudget | None = None
    """A live `--quick` run's time against its budget; None otherwise (a full run, a replay, a
    probe that declares no budget)."""

    @property
    def verdict(self) -> Verdict:
        return worst([r.verdict for r in self.results])
