"""The HTML report: one self-contained file with a chart per curve and matrix, for people to look at.

`write(report, path)` is what `perfprobe report --html` and every measuring command's `--html` call.
plotly is imported here only, so the CLI stays quick to start (`perfprobe --help` never loads it).
Each chart comes from perfprobe.render.html_charts (read from the result's own data) and stands beside
its units, its method, and the verdict and advice of the findings it shows. Figures marked unstable
are listed under the summary and in their result's section (left out of judgement, with why), and
the metrics table gives every timed figure's repeats.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from perfprobe.engine.model import Finding, Metric, ProbeResult, Report, Verdict
from perfprobe.errors import UsageError
from perfprobe.render import figure_name, unstable_figures
from perfprobe.render.html_page import badge, caption, esc, findings_list, host_items, host_line, page, table_html


def write(report: Report, path: Path) -> None:
    """Write `report` as one HTML file at `path` (UsageError, one line, when it cannot be written)."""
    _save(path, render(report))


def write_fleet(reports: Sequence[tuple[str, Report]], path: Path) -> None:
    """Write the fleet page for (label, report) pairs: hosts × key figures, outliers first."""
    from perfprobe.render.html_fleet import fleet_body

    plotly = _plotly()
    header, body = fleet_body(reports, _chart_html)
    _save(path, page(f"perfprobe fleet: {len(reports)} reports", header, body, plotly.offline.get_plotlyjs()))


def render(report: Report) -> str:
    """The page as a string."""
    plotly = _plotly()
    names = dict(host_items(report.host))
    who = names.get("host") or names.get("CPU") or "this host"
    header = (f"<h1>perfprobe report: {esc(who)} {badge(report.verdict)}</h1>{host_line(report.host)}"
              f'<p class="summary">perfprobe {esc(report.perfprobe_version)} · {len(report.results)} results · '
              f"{report.duration_s:.1f} s</p>")
    body = [summary_table(report), unstable_list(report.results, "report")] + [result_section(r) for r in report.results]
    return page(f"perfprobe report: {who}", header, "".join(body), plotly.offline.get_plotlyjs())


def summary_table(report: Report) -> str:
    rows = []
    for result in report.results:
        advice = next((f.advice for f in result.findings if f.advice and f.verdict is not Verdict.PASS), "")
        rows.append([f'<a href="#{_anchor(result)}">{esc(_name(result))}</a>', badge(result.verdict),
                     esc(result.key_figure), esc(advice)])
    return "<h2>Summary</h2>" + table_html("", ("probe", "verdict", "key figure", "first advice"), rows)


def result_section(result: ProbeResult) -> str:
    from perfprobe.render.html_charts import charts_for

    parts = [f'<section class="result" id="{_anchor(result)}" data-probe="{esc(result.probe)}">'
             f"<h2>{esc(_name(result))} {badge(result.verdict)}</h2>"
             f'<p class="summary">{esc(result.summary)}</p>', unstable_list((result,), "result")]
    for chart in charts_for(result):
        beside = _findings_for(result.findings, chart.topic)
        parts.append(
            f'<figure data-chart="{esc(chart.key)}"><div class="chart">{_chart_html(chart.key, chart.figure)}</div>'
            f"<figcaption>{caption(chart.title, chart.units, chart.method)}"
            f'<p>verdict: {badge(_worst(beside, result.verdict))}</p>{findings_list(beside)}</figcaption></figure>')
    parts.append("<h3>Findings</h3>" + (findings_list(result.findings) or "<p>none</p>"))
    if result.metrics:
        parts.append(_metrics_table(result))
    for table in result.tables:
        rows = [[esc(_fmt(c)) for c in row] for row in table.rows]
        parts.append(f"<details open><summary>{esc(table.title)}</summary>"
                     f"<div class=\"wide\">{table_html(table.title, table.columns, rows)}</div></details>")
    parts.append("</section>")
    return "".join(parts)


def unstable_list(results: Sequence[ProbeResult], where: str) -> str:
    """The figures left out of judgement as unstable, each with its value and why ('' for none)."""
    rows = unstable_figures(results)
    if not rows:
        return ""
    items = "".join(f"<li><b>{esc(figure_name(r, name) if where == 'report' else name)}</b> = "
                    f"{esc(_fmt(m.value))} {esc(m.unit)} — {esc(m.unstable)}</li>" for r, name, m in rows)
    return (f'<div class="unstable" data-unstable="{where}"><h3>Left out of judgement: {len(rows)} unstable '
            f"figure{'s' if len(rows) != 1 else ''}</h3><ul>{items}</ul></div>")


def _metrics_table(result: ProbeResult) -> str:
    """metric | value | unit, and where any metric is timed or unstable: its repeats and the mark."""
    noted = any(m.spread is not None or m.unstable for m in result.metrics.values())
    columns = ("metric", "value", "unit") + (("± MAD", "min–max", "n", "unstable") if noted else ())
    rows = [[esc(name), esc(_fmt(m.value)), esc(m.unit)] + (_spread_cells(m) if noted else [])
            for name, m in result.metrics.items()]
    return (f"<details><summary>Metrics ({len(rows)})</summary>"
            f"{table_html('', columns, rows)}</details>")


def _spread_cells(metric: Metric) -> list[str]:
    spread = metric.spread
    cells = ["", "", ""] if spread is None else [
        "" if spread.mad is None else esc(f"±{spread.mad:.2g}"), esc(f"{spread.min:.4g}–{spread.max:.4g}"),
        esc(spread.n)]
    return cells + [esc(metric.unstable or "")]


def _findings_for(findings: tuple[Finding, ...], topic: tuple[str, ...]) -> list[Finding]:
    """The findings a chart shows: those naming its topic; else the worst ones (never nothing)."""
    picked = [f for f in findings if any(word in (f.message + " " + f.advice).lower() for word in topic)]
    if picked:
        return picked
    worst = max((f.verdict.severity for f in findings), default=0)
    return [f for f in findings if f.verdict.severity == worst][:3]


def _worst(findings: list[Finding], default: Verdict) -> Verdict:
    return max((f.verdict for f in findings), key=lambda v: v.severity, default=default)


def _chart_html(key: str, figure: object) -> str:
    import plotly.io as pio

    return str(pio.to_html(figure, include_plotlyjs=False, full_html=False, div_id=f"chart-{key}",
                           config={"displaylogo": False, "responsive": True}))


def _name(result: ProbeResult) -> str:
    return result.probe if result.device is None else f"{result.probe} (GPU {result.device})"


def _anchor(result: ProbeResult) -> str:
    return result.probe if result.device is None else f"{result.probe}-gpu{result.device}"


def _fmt(value: object) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1e6 else f"{value:,.0f}"
    return str(value)


def _plotly() -> Any:
    try:
        import plotly.offline
    except ImportError as exc:
        raise UsageError("--html: the plotly package is missing; reinstall perfprobe (pip install perfprobe)") from exc
    return plotly


def _save(path: Path, text: str) -> None:
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"--html {path}: cannot write ({exc.strerror or exc})") from exc
