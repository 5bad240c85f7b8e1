"""The report for people: a rich table per result, the verdict coloured, the advice under it.

Numbers are never cut: a table wider than the terminal even with every column at its narrowest
(each number on one line) is stacked instead, one block per row: the row's first cell, then one
"column: value" line per other cell. Unknown values (None) read as one word, UNKNOWN.

A timed figure reads with its spread, `73.5 ±2.1 GB/s (n=5)`: the median absolute deviation of its
repeats as the ±. A figure judged unstable says so in words (`unstable: WHY`), not by colour alone,
so NO_COLOR and piped output keep it; the report lists such figures after the results.
"""

from __future__ import annotations

import math
import re
from typing import Any, Mapping

from rich.console import Console, Group, RenderableType
from rich.measure import Measurement
from rich.table import Table as RichTable
from rich.text import Text

from perfprobe.engine.model import Cell, Finding, Metric, ProbeResult, Report, Table, Verdict
from perfprobe.render import figure_name, unstable_figures
from perfprobe.render.plot import WIDTH, plot_lines

UNKNOWN = "unknown"
UNSTABLE_STYLE = "yellow"
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
    left_out = unstable_view(report)
    if left_out is not None:
        console.print(left_out)


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
    elif result.metrics:  # the tables show the figures; one line says how far their repeats spread
        line = spread_line(result.metrics)
        if line is not None:
            console.print(line)
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


def metrics_table(metrics: Mapping[str, Metric]) -> RichTable:
    """metric | value | unit, the value with its ± where timed; a fourth column, the repeats or the
    unstable mark, only when some metric has either."""
    view = RichTable(title="Measured", title_justify="left")
    view.add_column("metric")
    view.add_column("value", justify="right")
    view.add_column("unit")
    noted = any(m.spread is not None or m.unstable for m in metrics.values())
    if noted:
        view.add_column("repeats")
    for name, metric in metrics.items():
        cells = [Text(name), Text(value_text(metric)), Text(metric.unit)]
        if noted:
            cells.append(_note(metric))
        view.add_row(*cells)
    return view


def value_text(metric: Metric) -> str:
    """The value, and where the figure is timed its spread: `73.5 ±2.1` (MAD), or `73.5 [70–80]`
    (min–max) when no MAD was kept; a single repeat has no spread to show."""
    text = _format(metric.value)
    spread = metric.spread
    if spread is None or spread.n < 2 or not isinstance(metric.value, (int, float)):
        return text
    if spread.mad is not None and math.isfinite(spread.mad):
        return f"{text} ±{_short(spread.mad)}"
    return f"{text} [{_format(spread.min)}–{_format(spread.max)}]"


def _note(metric: Metric) -> Text:
    if metric.unstable:
        return Text(f"unstable: {metric.unstable}", style=UNSTABLE_STYLE)
    return Text(f"n={metric.spread.n}" if metric.spread is not None else "", style="dim")


def spread_line(metrics: Mapping[str, Metric]) -> Text | None:
    """One line under a result's tables: how many figures are timed, their repeats, and the widest
    relative MAD of those judged (which figure it is); None when no metric carries a spread."""
    timed = [(name, m, m.spread) for name, m in metrics.items() if m.spread is not None]
    if not timed:
        return None
    counts = sorted({s.n for _, _, s in timed})
    repeats = f"n={counts[0]}" if len(counts) == 1 else f"n={counts[0]}–{counts[-1]}"
    text = f"repeats: {len(timed)} timed figure{'s' if len(timed) != 1 else ''}, {repeats}"
    judged = [(name, m, s) for name, m, s in timed if not m.unstable and s.median]
    by_mad = any(s.mad is not None for _, _, s in judged)  # older reports kept only min and max
    widest = max(((s.relative_mad if by_mad else abs((s.max - s.min) / s.median), name, m)
                  for name, m, s in judged if not by_mad or s.relative_mad is not None),
                 key=lambda t: t[0] or 0.0, default=None)
    if widest is not None and widest[0] is not None:
        share, name, metric = widest
        text += (f", {'MAD' if by_mad else 'min–max'} ≤ {share:.1%} of the median "
                 f"(widest: {name} {value_text(metric)} {metric.unit})")
    line = Text(text, style="dim")
    unstable = sum(1 for m in metrics.values() if m.unstable)
    if unstable:
        line.append(f"; {unstable} unstable (listed at the end)", style=UNSTABLE_STYLE)
    return line


def unstable_rows(report: Report) -> list[tuple[str, Metric]]:
    """Every unstable figure of the report as ('probe:metric', metric), device named for GPU probes."""
    return [(figure_name(r, name), m) for r, name, m in unstable_figures(report.results)]


def unstable_view(report: Report) -> Group | None:
    """After the results: the figures left out of judgement, each with its value and why."""
    rows = unstable_rows(report)
    if not rows:
        return None
    lines: list[RenderableType] = [Text(f"Left out of judgement: {len(rows)} unstable figure"
                                        f"{'s' if len(rows) != 1 else ''}", style=f"bold {UNSTABLE_STYLE}")]
    for name, metric in rows:
        lines.append(Text.assemble("  ", (name, "bold"), f"  {value_text(metric)} {metric.unit}".rstrip(),
                                   (f" — {metric.unstable}", UNSTABLE_STYLE)))
    return Group(*lines)


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


def _short(value: float) -> str:
    """A spread in two significant digits, never in exponent notation below a million."""
    if value == 0:
        return "0"
    digits = 1 - math.floor(math.log10(abs(value)))
    rounded = round(value, digits)
    return f"{rounded:,.0f}" if abs(rounded) >= 100 else f"{rounded:.{max(digits, 0)}f}"


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
