"""The fleet page: hosts × headline figures (each probe declares its own), grouped by hardware,
coloured by distance from the group median.

Distance is robust: |value - median| over the median absolute deviation (scaled to a standard
deviation, 1.4826 × MAD) with a floor of 2% of the median, so identical hosts do not turn noise into
outliers. A host beyond 3.5 of those is an outlier; outlying hosts come first. A figure its report
marks unstable is judged by nobody: it is left out of the median, the distances and the outliers,
and its cell reads "unstable" beside the value.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import plotly.graph_objects as go

from perfprobe.engine import registry
from perfprobe.engine.model import ProbeResult, Report, Verdict, host_name
from perfprobe.render.html_page import badge, caption, esc, findings_list, part, table_html

UNITS_NOTE = "each metric in its own unit (text); colour: distance from the group median in robust deviations"
OUTLIER = 3.5
FLOOR = 0.02
DISTANCE_SCALE = [[0.0, "#e8f3ea"], [0.3, "#fee08b"], [0.6, "#f46d43"], [1.0, "#a50026"]]


@dataclass
class Host:
    label: str
    report: Report
    values: dict[str, tuple[float, str]]  # column → (value, unit)
    unstable: dict[str, tuple[float, str, str]] = field(default_factory=dict)  # column → (value, unit, why)


def signature(host: Mapping[str, Any]) -> str:
    """Hardware that should perform alike: CPU model and count, memory (GiB), GPU model and count."""
    cpu, cpus, memory = part(host, "cpu"), part(host, "cpus"), part(host, "memory")
    total = memory.get("total_bytes")
    gpus = [g.get("name", "?") for g in host.get("gpus") or [] if isinstance(g, dict)]
    parts = [str(cpu.get("model") or "unknown CPU"), f"{len(cpus.get('online') or [])} CPUs"]
    if isinstance(total, (int, float)):
        parts.append(f"{round(total / (1 << 30))} GiB")
    if gpus:
        parts.append(f"{len(gpus)} × {gpus[0]}")
    return ", ".join(parts)


def key_values(report: Report) -> dict[str, tuple[float, str]]:
    """The key figures of a report, by column name ('probe[GPU n] metric'); unstable ones left out."""
    return {column: (value, unit) for column, (value, unit, why) in _key_figures(report).items() if not why}


def unstable_values(report: Report) -> dict[str, tuple[float, str, str]]:
    """The key figures a report marks unstable: column → (value, unit, why)."""
    return {column: figure for column, figure in _key_figures(report).items() if figure[2]}


def _key_figures(report: Report) -> dict[str, tuple[float, str, str]]:
    values: dict[str, tuple[float, str, str]] = {}
    for result in report.results:
        wanted = headline(result.probe) or tuple(result.metrics)[:4]
        for name in wanted:
            metric = result.metrics.get(name)
            if metric is not None and isinstance(metric.value, (int, float)) and not isinstance(metric.value, bool):
                values[f"{_probe_name(result)} {name}"] = (float(metric.value), metric.unit, metric.unstable or "")
    return values


def headline(probe: str) -> tuple[str, ...]:
    """The figures a probe's columns head with: its declared headline (declared.py); () for a probe
    this installation does not register (a report from another version: its first four metrics)."""
    return registry.declaration(probe).headline if probe in registry.PROBE_MODULES else ()


def distances(hosts: Sequence[Host], columns: Sequence[str]) -> dict[tuple[str, str], float]:
    """Signed robust distance from the group median, per (host label, column)."""
    out: dict[tuple[str, str], float] = {}
    for column in columns:
        present = [h.values[column][0] for h in hosts if column in h.values]
        if len(present) < 2:
            continue
        median = statistics.median(present)
        mad = statistics.median(abs(v - median) for v in present) * 1.4826
        scale = max(mad, FLOOR * abs(median)) or 1.0
        for host in hosts:
            if column in host.values:
                out[(host.label, column)] = (host.values[column][0] - median) / scale
    return out


def fleet_body(reports: Sequence[tuple[str, Report]],
               chart_html: Callable[[str, go.Figure], str]) -> tuple[str, str]:
    """(header, body) HTML of the fleet page."""
    groups: dict[str, list[Host]] = {}
    for label, report in _unique(reports):
        groups.setdefault(signature(report.host), []).append(
            Host(label, report, key_values(report), unstable_values(report)))
    header = (f"<h1>perfprobe fleet: {len(reports)} reports, {len(groups)} hardware group"
              f"{'s' if len(groups) != 1 else ''}</h1><p class=\"summary\">Each group is compared with its own "
              f"median; colour: robust distance (MAD) from it; outliers (beyond {OUTLIER}) first.</p>")
    body = [_group_section(index, name, hosts, chart_html) for index, (name, hosts) in enumerate(groups.items())]
    return header, "".join(body)


def _group_section(index: int, name: str, hosts: list[Host], chart_html: Callable[[str, go.Figure], str]) -> str:
    columns = sorted({c for h in hosts for c in (*h.values, *h.unstable)})
    dist = distances(hosts, columns)
    worst = {h.label: max((abs(dist.get((h.label, c), 0.0)) for c in columns), default=0.0) for h in hosts}
    hosts = sorted(hosts, key=lambda h: (-worst[h.label], -h.report.verdict.severity, h.label))
    parts = [f'<section class="result fleet-group" id="group{index}"><h2>{esc(name)}: {len(hosts)} host'
             f"{'s' if len(hosts) != 1 else ''}</h2>"]
    if columns:
        figure = _heatmap(hosts, columns, dist)
        method = f"median and median absolute deviation per metric over the {len(hosts)} hosts of this group"
        outliers = [(h, c) for h in hosts for c in columns if abs(dist.get((h.label, c), 0.0)) > OUTLIER]
        parts.append(f'<figure data-chart="fleet{index}"><div class="chart">{chart_html(f"fleet{index}", figure)}'
                     f"</div><figcaption>{caption('Hosts × key figures', UNITS_NOTE, method)}"
                     f"{_outlier_notes(outliers, dist)}</figcaption>"
                     f"</figure>")
    parts.append(_host_table(hosts, columns, dist))
    parts.append(_unstable(hosts))
    parts.append(_missing(hosts))
    parts.append("</section>")
    return "".join(parts)


def _heatmap(hosts: list[Host], columns: list[str], dist: dict[tuple[str, str], float]) -> go.Figure:
    z = [[min(abs(dist[(h.label, c)]), 2 * OUTLIER) if (h.label, c) in dist else None for c in columns]
         for h in hosts]
    text = [[_cell(h, c, dist) for c in columns] for h in hosts]
    fig = go.Figure(go.Heatmap(z=z, x=columns, y=[h.label for h in hosts], text=text, texttemplate="%{text}",
                               colorscale=DISTANCE_SCALE, zmin=0, zmax=2 * OUTLIER, xgap=2, ygap=2,
                               colorbar={"title": {"text": "MADs"}},
                               hovertemplate="%{y}<br>%{x}: %{text}<extra></extra>"))
    fig.update_layout(template="none", height=max(260, 60 + 34 * len(hosts)), paper_bgcolor="rgba(0,0,0,0)",
                      plot_bgcolor="rgba(0,0,0,0)", margin={"l": 20, "r": 20, "t": 10, "b": 20},
                      font={"family": "system-ui, sans-serif", "size": 11})
    fig.update_xaxes(type="category", tickangle=-35, automargin=True, side="top")
    fig.update_yaxes(type="category", autorange="reversed", automargin=True)
    return fig


def _cell(host: Host, column: str, dist: dict[tuple[str, str], float]) -> str:
    if column in host.unstable:
        return f"{host.unstable[column][0]:.3g} unstable"
    if column not in host.values:
        return "—"
    value, _unit = host.values[column]
    return f"{value:.3g}" + (" ⚠" if abs(dist.get((host.label, column), 0.0)) > OUTLIER else "")


def _outlier_notes(outliers: list[tuple[Host, str]], dist: dict[tuple[str, str], float]) -> str:
    if not outliers:
        return f"<p>verdict: {badge(Verdict.PASS)} no host is beyond {OUTLIER} deviations of its group</p>"
    items = []
    for host, column in outliers[:8]:
        value, unit = host.values[column]
        probe = column.split(" ", 1)[0].split("[", 1)[0]
        advice = next((f for r in host.report.results if r.probe == probe for f in r.findings
                       if f.advice and f.verdict is not Verdict.PASS), None)
        items.append(f"<li><b>{esc(host.label)}</b>: {esc(column)} = {value:.3g} {esc(unit)} "
                     f"({dist[(host.label, column)]:+.1f} deviations from the median)"
                     + (f'<span class="advice">{esc(advice.advice)}</span>' if advice else "") + "</li>")
    return f"<p>verdict: {badge(Verdict.WARN)} {len(outliers)} outlying figure(s)</p><ul class=\"findings\">{''.join(items)}</ul>"


def _host_table(hosts: list[Host], columns: list[str], dist: dict[tuple[str, str], float]) -> str:
    rows, classes = [], []
    for host in hosts:
        advice = next((f.advice for r in host.report.results for f in r.findings
                       if f.advice and f.verdict is not Verdict.PASS), "")
        cells = [esc(host.label), badge(host.report.verdict)]
        cells += [esc(_cell(host, c, dist)) for c in columns] + [esc(advice)]
        rows.append(cells)
        levels = [_level(dist.get((host.label, c))) for c in columns]
        classes.append(["", ""] + levels + ["advice-cell"])
    units = {c: next((h.values[c][1] for h in hosts if c in h.values), None)
             or next(h.unstable[c][1] for h in hosts if c in h.unstable) for c in columns}
    head = ["host", "verdict"] + [f"{c} ({units[c]})" for c in columns] + ["first advice"]
    return (f"<details open><summary>Hosts (outliers first)</summary><div class=\"wide\">"
            f"{table_html('', head, rows, classes)}</div></details>")


def _unstable(hosts: list[Host]) -> str:
    """Key figures left out of the comparison because their report marks them unstable."""
    items = "".join(f"<li><b>{esc(h.label)}</b> {esc(column)} = {value:.3g} {esc(unit)} — {esc(why)}</li>"
                    for h in hosts for column, (value, unit, why) in sorted(h.unstable.items()))
    return (f'<div class="unstable" data-unstable="fleet"><h3>Left out of the comparison: unstable figures</h3>'
            f"<ul>{items}</ul></div>") if items else ""


def _missing(hosts: list[Host]) -> str:
    """Hosts whose probes erred or skipped where a peer measured."""
    measured = {(r.probe, r.device) for h in hosts for r in h.report.results if r.verdict in (Verdict.PASS, Verdict.WARN)}
    notes = []
    for host in hosts:
        for result in host.report.results:
            if result.verdict in (Verdict.ERROR, Verdict.SKIP) and (result.probe, result.device) in measured:
                notes.append((host.label, result))
    if not notes:
        return ""
    items = "".join(f"<li><b>{esc(label)}</b> {esc(_probe_name(r))}: {findings_list(r.findings)}</li>" for label, r in notes)
    return f"<h3>Missing where peers measured</h3><ul>{items}</ul>"


def _level(distance: float | None) -> str:
    if distance is None:
        return ""
    size = abs(distance)
    return "d3" if size > 2 * OUTLIER else "d2" if size > OUTLIER else "d1" if size > OUTLIER / 2 else ""


def _probe_name(result: ProbeResult) -> str:
    return result.probe if result.device is None else f"{result.probe}[GPU{result.device}]"


def _unique(reports: Sequence[tuple[str, Report]]) -> list[tuple[str, Report]]:
    """Label each report by its host name where it has one, else by its file name; keep labels unique."""
    seen: dict[str, int] = {}
    out = []
    for label, report in reports:
        name = host_name(report.host) or label
        seen[name] = seen.get(name, 0) + 1
        out.append((name if seen[name] == 1 else f"{name} ({label})", report))
    return out
