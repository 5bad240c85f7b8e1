"""The page around the charts: one self-contained HTML file (plotly.js inlined, system fonts, no
request leaves the file), light and dark schemes from prefers-color-scheme, and print rules."""

from __future__ import annotations

import html
import re
from typing import Any, Mapping

from perfprobe.engine.model import Finding, Verdict, host_name

NUMBER = re.compile(r"^[-+]?[\d.,]+(e[-+]?\d+)?( ?[%×x])?( \[.*\])?$")

CSS = """
:root { --bg:#ffffff; --fg:#1d2330; --muted:#5b6473; --card:#f5f7fa; --line:#d9dee6; --grid:#e3e7ee;
  --pass:#1f7a3a; --warn:#9a6700; --skip:#2f5f9e; --error:#b42318; color-scheme: light dark; }
@media (prefers-color-scheme: dark) { :root { --bg:#12151b; --fg:#e4e8ef; --muted:#9aa4b2; --card:#1b2029;
  --line:#2e3543; --grid:#2a303c; --pass:#4cc06f; --warn:#e8b339; --skip:#7aa7e6; --error:#f07167; } }
* { box-sizing: border-box; }
body { margin:0; background:var(--bg); color:var(--fg); font:14px/1.45 system-ui, -apple-system, "Segoe UI",
  Roboto, "DejaVu Sans", sans-serif; }
header, main { max-width:1200px; margin:0 auto; padding:16px 24px; }
header { border-bottom:1px solid var(--line); }
h1 { font-size:22px; margin:0 0 6px; } h2 { font-size:18px; margin:28px 0 6px; }
h3 { font-size:15px; margin:0 0 4px; }
.host { display:flex; flex-wrap:wrap; gap:4px 18px; color:var(--muted); margin:0; padding:0; list-style:none; }
.host b { color:var(--fg); font-weight:600; }
.badge { display:inline-block; padding:1px 8px; border-radius:10px; font-weight:700; font-size:12px;
  letter-spacing:.04em; color:#fff; vertical-align:middle; }
.v-pass { background:var(--pass); } .v-warn { background:var(--warn); } .v-skip { background:var(--skip); }
.v-error { background:var(--error); }
.summary { color:var(--muted); margin:4px 0 12px; }
figure { display:grid; grid-template-columns:minmax(0, 2.2fr) minmax(220px, 1fr); gap:16px; margin:14px 0;
  padding:12px; background:var(--card); border:1px solid var(--line); border-radius:8px; break-inside:avoid; }
figure .chart { min-height:260px; }
figcaption .units, figcaption .method { color:var(--muted); margin:2px 0; font-size:13px; }
ul.findings { list-style:none; padding:0; margin:8px 0 0; }
ul.findings li { margin:0 0 8px; }
.advice { display:block; margin-left:4px; padding-left:8px; border-left:3px solid var(--line); color:var(--fg); }
.advice::before { content:"→ "; color:var(--muted); }
table { border-collapse:collapse; margin:8px 0; font-size:13px; }
th, td { border-bottom:1px solid var(--line); padding:3px 10px; text-align:left; vertical-align:top; }
td.num { text-align:right; font-variant-numeric:tabular-nums; }
caption { display:none; text-align:left; font-weight:600; }
th { color:var(--muted); font-weight:600; }
details { margin:8px 0; } summary { cursor:pointer; color:var(--muted); }
td.d0 { } td.d1 { background:rgba(244,184,57,.25); } td.d2 { background:rgba(240,113,103,.35); }
td.d3 { background:rgba(180,35,24,.45); }
.modebar-container { opacity:0; transition:opacity .2s; } figure:hover .modebar-container { opacity:1; }
.wide { overflow-x:auto; } td.advice-cell { min-width:260px; }
.unstable { border-left:4px solid var(--warn); padding:2px 10px; margin:8px 0; }
.unstable h3 { color:var(--warn); } .unstable ul { margin:4px 0; padding-left:18px; }
footer { max-width:1200px; margin:0 auto; padding:16px 24px 40px; color:var(--muted); font-size:12px; }
@media (max-width: 800px) { figure { grid-template-columns:1fr; } }
@media print {
  :root { --bg:#fff; --fg:#000; --muted:#333; --card:#fff; --line:#bbb; --grid:#ddd; color-scheme: light; }
  body { font-size:11pt; } header, main, .modebar-container { opacity:0; transition:opacity .2s; } figure:hover .modebar-container { opacity:1; }
.wide { overflow-x:auto; } td.advice-cell { min-width:260px; }
footer { max-width:none; padding:0 8mm; }
  figure { grid-template-columns:minmax(0, 2fr) minmax(0, 1fr); border-color:#999; }
  .modebar-container { display:none !important; } summary { display:none; } caption { display:table-caption; }
  h2 { break-after:avoid; } section.result { break-before:auto; }
}
"""

THEME_JS = """
(function () {
  function colours() {
    var css = getComputedStyle(document.documentElement);
    return { fg: css.getPropertyValue('--fg').trim(), grid: css.getPropertyValue('--grid').trim() };
  }
  function apply() {
    var c = colours();
    document.querySelectorAll('.js-plotly-plot').forEach(function (el) {
      Plotly.relayout(el, { 'font.color': c.fg, 'xaxis.gridcolor': c.grid, 'yaxis.gridcolor': c.grid,
                            'xaxis.linecolor': c.grid, 'yaxis.linecolor': c.grid });
    });
  }
  window.addEventListener('load', apply);
  if (window.matchMedia) {
    var dark = window.matchMedia('(prefers-color-scheme: dark)');
    if (dark.addEventListener) { dark.addEventListener('change', apply); }
  }
  window.addEventListener('beforeprint', function () {
    document.querySelectorAll('details').forEach(function (d) { d.open = true; });
    apply();
    document.querySelectorAll('.js-plotly-plot').forEach(function (el) { Plotly.Plots.resize(el); });
  });
  window.addEventListener('afterprint', apply);
})();
"""


def page(title: str, header: str, body: str, plotly_js: str) -> str:
    """The whole document: styles, plotly.js inlined once, header, body, theme script."""
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<meta name=\"color-scheme\" content=\"light dark\">"
            f"<title>{esc(title)}</title><style>{CSS}</style>"
            f"<script>{plotly_js}</script></head><body>"
            f"<header>{header}</header><main>{body}</main>"
            f"<footer>Written by perfprobe: every chart is drawn from the report's own data; this file needs "
            f"no network.</footer><script>{THEME_JS}</script></body></html>\n")


def esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


def caption(title: str, units: str, method: str) -> str:
    """A chart's title, units and one-line method, as text (copied and printed with the page)."""
    return (f"<h3>{esc(title)}</h3><p class=\"units\"><b>units:</b> {esc(units)}</p>"
            f"<p class=\"method\"><b>method:</b> {esc(method)}</p>")


def badge(verdict: Verdict) -> str:
    return f'<span class="badge v-{verdict.value}">{verdict.value.upper()}</span>'


def findings_list(findings: tuple[Finding, ...] | list[Finding]) -> str:
    items = []
    for finding in findings:
        advice = f'<span class="advice">{esc(finding.advice)}</span>' if finding.advice else ""
        items.append(f"<li>{badge(finding.verdict)} {esc(finding.message)}{advice}</li>")
    return f'<ul class="findings">{"".join(items)}</ul>' if items else ""


def host_items(host: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The host in a line of facts: name, CPU, cores, memory, NUMA nodes, GPUs, kernel."""
    items: list[tuple[str, str]] = []
    name = host_name(host)
    if name:
        items.append(("host", name))
    cpu = part(host, "cpu")
    if cpu.get("model"):
        items.append(("CPU", str(cpu["model"])))
    cpus = part(host, "cpus")
    if cpus.get("online"):
        usable = cpus.get("usable") or cpus["online"]
        items.append(("CPUs", f"{len(usable)} usable of {len(cpus['online'])} online"))
    memory = part(host, "memory")
    total = memory.get("total_bytes") or memory.get("MemTotal")
    if isinstance(total, (int, float)):
        items.append(("memory", f"{total / (1 << 30):.1f} GiB"))
    numa = part(host, "numa")
    if numa.get("nodes"):
        items.append(("NUMA nodes", str(len(numa["nodes"]))))
    gpus = [g.get("name", "?") for g in host.get("gpus") or [] if isinstance(g, dict)]
    if gpus:
        items.append(("GPUs", f"{len(gpus)} × {gpus[0]}" if len(set(gpus)) == 1 else ", ".join(gpus)))
    if host.get("kernel"):
        items.append(("kernel", str(host["kernel"])))
    for key in ("time", "started", "date"):
        if host.get(key):
            items.append(("run", str(host[key])))
            break
    return items


def part(host: Mapping[str, Any], key: str) -> dict[str, Any]:
    """One object of the host facts, {} when absent or of another shape (old or damaged reports)."""
    value = host.get(key)
    return value if isinstance(value, dict) else {}


def host_line(host: Mapping[str, Any]) -> str:
    items = "".join(f"<li>{esc(k)}: <b>{esc(v)}</b></li>" for k, v in host_items(host))
    return f'<ul class="host">{items}</ul>'


def table_html(title: str, columns: tuple[str, ...] | list[str], rows: list[list[str]],
               classes: list[list[str]] | None = None) -> str:
    head = "".join(f"<th>{esc(c)}</th>" for c in columns)
    body = []
    for r, row in enumerate(rows):
        cells = []
        for c, cell in enumerate(row):
            names = " ".join(n for n in ((classes[r][c] if classes else ""), "num" if NUMBER.match(cell) else "") if n)
            css = f' class="{names}"' if names else ""
            cells.append(f"<td{css}>{cell}</td>")
        body.append(f"<tr>{''.join(cells)}</tr>")
    caption = f"<caption>{esc(title)}</caption>" if title else ""
    return f"<table>{caption}<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
