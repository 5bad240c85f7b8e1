"""The report for people: a rich table per result, the verdict coloured, the advice under it.

Numbers are never cut: a table wider than the terminal even with every column at its narrowest
(each number on one line) is stacked instead, one block per row: the row's first cell, then one
"column: value" line per other cell. Unknown values (None) read as one word, UNKNOWN.
"""

from __future__ import annotations

import re
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.measure import Measurement
from rich.table import Table as RichTable
from rich.text import Text

from perfprobe.model import Cell, Finding, Metric, ProbeResult, Report, Table, Verdict
from perfprobe.render.plot import WIDTH, plot_lines

UNKNOWN = "unknown"
VERDICT_STYLE = {Verdict.PASS: "bold green", Verdict.WARN: "bold yellow",
                 Verdict.SKIP: "bold blue", Verdict.ERROR: "bold red"}


def render_report(report: Report, console: Console) -> None:
    """Print every result, then (for several results) the summary table and the total time."""
    for result in report.results:
        render_result(result, console)
    if len(report.results) > 1:
        console.print(fitted(summary_table(report), console))
        console.print(Text.assemble("Overall: ", verdict_text(report.verdict),
                                    f"  ({report.duration_s:.1f} s in all)"))


def render_result(result: ProbeResult, console: Console) -> None:
    device = "" if result.device is None else f" (GPU {result.device})"
    console.rule(Text.assemble((f"{result.probe}{device}", "bold"), "  ", verdict_text(result.verdict)))
    console.print(Text(result.summary))
    for table in result.tables:
        console.print(fitted(data_table(table), console))
    for curve in result.curves:
        width = max(16, min(WIDTH, console.width - 12))  # the y axis labels take 11 columns
        console.print(Text("\n".join(plot_lines(curve, width=width))))
    if result.metrics and not result.tables:
        console.print(fitted(metrics_table(result.metrics), console))
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
        view.add_row(*[_cell_text(cell, floor, table.heat == "fraction") for cell in row])
    return view


def metrics_table(metrics: dict[str, Metric] | Any) -> RichTable:
    view = RichTable(title="Measured", title_justify="left")
    view.add_column("metric")
    view.add_column("value", justify="right")
    view.add_column("unit")
    for name, metric in metrics.items():
        view.add_row(Text(name), Text(_format(metric.value)), Text(metric.unit))
    return view


def fitted(view: RichTable, console: Console) -> RenderableType:
    """`view` when it fits the console with every cell whole, else the same rows stacked."""
    return view if _narrowest(view, console) <= console.width else stacked(view)


def _narrowest(view: RichTable, console: Console) -> int:
    """The table's width with each column as narrow as its longest word (header included) allows:
    what rich would have to go below, cutting words with '…', on a narrower console."""
    options = console.options
    widths = [max([Measurement.get(console, options, cell).minimum for cell in column.cells]
                  + [Measurement.get(console, options, Text(str(column.header))).minimum])
              for column in view.columns]
    left, right = view.padding[3], view.padding[1]
    return sum(widths) + len(widths) * (left + right) + len(widths) + 1  # padding and the borders


def stacked(view: RichTable) -> Group:
    """One block per row: the first cell as its heading, then "column: value" for each other cell."""
    columns = list(view.columns)
    cells = [list(column.cells) for column in columns]
    lines: list[RenderableType] = [Text(str(view.title), style="bold")] if view.title else []
    for row in zip(*cells):
        lines.append(Text.assemble("  ", _as_text(row[0])))
        for column, cell in zip(columns[1:], row[1:]):
            lines.append(Text.assemble("    ", (f"{column.header}: ", "dim"), _as_text(cell)))
    return Group(*lines)


def _as_text(cell: RenderableType) -> Text:
    return cell if isinstance(cell, Text) else Text(str(cell))


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


_NONE_WORD = re.compile(r"(?<![\w.])None(?![\w.])")


def _row_floor(row: tuple[Cell, ...]) -> float | None:
    numbers = [c for c in row[1:] if isinstance(c, (int, float)) and c > 0]
    return min(numbers) if numbers else None


def _cell_text(cell: Cell, floor: float | None, fraction: bool = False) -> Text:
    """A cell, coloured by how far it is from its reference: the row's floor, or 1.0 for fractions."""
    text = Text(_format(cell))
    if isinstance(cell, (int, float)) and not isinstance(cell, bool) and cell > 0 and (floor or fraction):
        ratio = 1 / min(cell, 1.0) if fraction else cell / (floor or 1.0)
        text.stylize("green" if ratio <= 1.2 else "yellow" if ratio <= 1.6 else "red")
    return text


def _format(value: Any) -> str:
    if value is None:
        return UNKNOWN
    if isinstance(value, str):
        return _NONE_WORD.sub(UNKNOWN, value)  # "None / None" from a fact formatted unread
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"
    return str(value)
