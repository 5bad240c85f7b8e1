"""The report for people: a rich table per result, the verdict coloured, the advice under it."""

from __future__ import annotations

from typing import Any

from rich.console import Console, Group
from rich.table import Table as RichTable
from rich.text import Text

from perfprobe.model import Cell, Finding, Metric, ProbeResult, Report, Table, Verdict
from perfprobe.render.plot import plot_lines

VERDICT_STYLE = {Verdict.PASS: "bold green", Verdict.WARN: "bold yellow",
                 Verdict.SKIP: "bold blue", Verdict.ERROR: "bold red"}


def render_report(report: Report, console: Console) -> None:
    """Print every result, then (for several results) the summary table and the total time."""
    for result in report.results:
        render_result(result, console)
    if len(report.results) > 1:
        console.print(summary_table(report))
        console.print(Text.assemble("Overall: ", verdict_text(report.verdict),
                                    f"  ({report.duration_s:.1f} s in all)"))


def render_result(result: ProbeResult, console: Console) -> None:
    device = "" if result.device is None else f" (GPU {result.device})"
    console.rule(Text.assemble((f"{result.probe}{device}", "bold"), "  ", verdict_text(result.verdict)))
    console.print(Text(result.summary))
    for table in result.tables:
        console.print(data_table(table))
    for curve in result.curves:
        console.print(Text("\n".join(plot_lines(curve))))
    if result.metrics and not result.tables:
        console.print(metrics_table(result.metrics))
    if result.findings:
        console.print(findings_view(result.findings))
    console.print(Text(f"{result.duration_s:.1f} s", style="dim"))


def verdict_text(verdict: Verdict) -> Text:
    return Text(verdict.value.upper(), style=VERDICT_STYLE[verdict])


def data_table(table: Table) -> RichTable:
    view = RichTable(title=table.title, title_justify="left", show_lines=False)
    for index, column in enumerate(table.columns):
        view.add_column(column, justify="left" if index == 0 else "right")
    for row in table.rows:
        floor = _row_floor(row) if table.heat == "row" else None
        view.add_row(*[_cell_text(cell, floor) for cell in row])
    return view


def metrics_table(metrics: dict[str, Metric] | Any) -> RichTable:
    view = RichTable(title="Measured", title_justify="left")
    view.add_column("metric")
    view.add_column("value", justify="right")
    view.add_column("unit")
    for name, metric in metrics.items():
        view.add_row(Text(name), Text(_format(metric.value)), Text(metric.unit))
    return view


def findings_view(findings: tuple[Finding, ...]) -> Group:
    lines = []
    for finding in findings:
        lines.append(Text.assemble("  ", verdict_text(finding.verdict), "  ", finding.message))
        if finding.advice:
            lines.append(Text(f"        → {finding.advice}", style="cyan"))
    return Group(*lines)


def summary_table(report: Report) -> RichTable:
    view = RichTable(title="Summary", title_justify="left")
    for column in ("probe", "verdict", "key figure", "first advice"):
        view.add_column(column)
    for result in report.results:
        advice = next((f.advice for f in result.findings if f.advice and f.verdict is not Verdict.PASS), "")
        name = result.probe if result.device is None else f"{result.probe} (GPU {result.device})"
        view.add_row(Text(name), verdict_text(result.verdict), Text(result.key_figure), Text(advice))
    return view


def _row_floor(row: tuple[Cell, ...]) -> float | None:
    numbers = [c for c in row[1:] if isinstance(c, (int, float)) and c > 0]
    return min(numbers) if numbers else None


def _cell_text(cell: Cell, floor: float | None) -> Text:
    text = Text(_format(cell))
    if floor and isinstance(cell, (int, float)) and cell > 0:
        ratio = cell / floor
        text.stylize("green" if ratio <= 1.2 else "yellow" if ratio <= 1.6 else "red")
    return text


def _format(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"
    return str(value)
