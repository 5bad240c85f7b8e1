"""A fleet judged against itself: hosts grouped by hardware signature, outliers per key metric,
hosts whose report is missing, unreadable, errored or skipped where their peers measured."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from perfprobe.fleet import metrics as m
from perfprobe.fleet.compare import report_reference
from perfprobe.fleet.outliers import MIN_CHANGE, Z_LIMIT, Outlier, find
from perfprobe.fleet.reports import Loaded, Rejected, numeric_metrics, result_key, source_stem, verdicts
from perfprobe.fleet.signature import label, same_hardware, signature

MEASURED = ("pass", "warn")


@dataclass(frozen=True)
class NotMeasured:
    host: str
    probe: str
    verdict: str           # "error", "skip", or "absent" (the report has no such result)
    reason: str


@dataclass
class Group:
    signature: dict[str, Any]
    hosts: list[str] = field(default_factory=list)
    reports: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    outliers: list[Outlier] = field(default_factory=list)
    not_measured: list[NotMeasured] = field(default_factory=list)

    @property
    def label(self) -> str:
        return label(self.signature)


@dataclass
class Fleet:
    groups: list[Group]
    missing: list[str]             # expected hosts with no report at all
    rejected: list[Rejected]       # inputs that could not be read as reports
    notes: list[str]

    @property
    def problems(self) -> int:
        return (sum(len(g.outliers) + len(g.not_measured) for g in self.groups)
                + len(self.missing) + len(self.rejected))


def judge(reports: Sequence[Loaded], rejected: Sequence[Rejected] = (), expected: Sequence[str] = (),
          patterns: tuple[str, ...] | None = None, z_limit: float = Z_LIMIT,
          min_change: float = MIN_CHANGE) -> Fleet:
    """Group, then judge each group; nothing given is left out of the result."""
    notes: list[str] = []
    named = _unique_names(reports, notes)
    groups = _group(named)
    for group in groups:
        group.outliers = _outliers(group, patterns, z_limit, min_change)
        group.not_measured = _not_measured(group)
        if len(group.hosts) < 3:
            notes.append(f"{group.label}: {len(group.hosts)} host(s), too few to name outliers "
                         "(3 or more needed); their figures are shown side by side")
    seen = {name for name, _ in named} | {source_stem(r.source) for r in rejected}
    missing = [host for host in expected if host not in seen]
    return Fleet(groups, missing, list(rejected), notes)


def _unique_names(reports: Sequence[Loaded], notes: list[str]) -> list[tuple[str, Loaded]]:
    """Each report under its host's name; a second report of the same host keeps its source."""
    named: list[tuple[str, Loaded]] = []
    taken: set[str] = set()
    for report in reports:
        name = report.name
        if name in taken:
            notes.append(f"two reports name host {name}: the one from {report.source} is shown as "
                         f"'{name} ({report.source})'")
            name = f"{name} ({report.source})"
        taken.add(name)
        named.append((name, report))
    return named


def _group(named: Sequence[tuple[str, Loaded]]) -> list[Group]:
    groups: list[Group] = []
    for name, report in named:
        sig = signature(report.data.get("host") or {})
        group = next((g for g in groups if same_hardware(g.signature, sig)), None)
        if group is None:
            group = Group(sig)
            groups.append(group)
        group.hosts.append(name)
        group.reports[name] = report.data
    return groups


def _outliers(group: Group, patterns: tuple[str, ...] | None, z_limit: float, min_change: float) -> list[Outlier]:
    """Per key metric, the hosts that stand out from their peers; a figure that records where its
    threads sat (stats.placement) among the peers whose threads sat alike, since the placement
    alone moved it 1.7x on the EPYC guest (docs/probes/cache.md, "Where the threads sat")."""
    by_metric: dict[tuple[str, str | None], dict[str, float]] = {}
    units: dict[str, str] = {}
    for host, report in group.reports.items():
        placements = {key: figure.placement for key, figure in report_reference(report).items()}
        for key, (value, unit) in numeric_metrics(report).items():
            if m.is_key(key, unit, patterns):
                by_metric.setdefault((key, placements.get(key)), {})[host] = value
                units[key] = unit
    found: list[Outlier] = []
    for key, placement in sorted(by_metric, key=lambda k: (k[0], k[1] or "")):
        found += find(by_metric[(key, placement)], key, units[key], m.better(key, units[key]), z_limit, min_change)
    return found


def _not_measured(group: Group) -> list[NotMeasured]:
    """A result that is error or skip (or absent) on a host where a peer measured it."""
    per_host = {host: verdicts(report) for host, report in group.reports.items()}
    measured = {key for v in per_host.values() for key, verdict in v.items() if verdict in MEASURED}
    out = []
    for host, report in group.reports.items():
        reasons = {result_key(r): r.get("summary", "") for r in report.get("results") or []}
        for key in sorted(measured):
            verdict = per_host[host].get(key, "absent")
            if verdict not in MEASURED:
                reason = reasons.get(key) or "no such result in this host's report"
                out.append(NotMeasured(host, key, verdict, str(reason)))
    return out
