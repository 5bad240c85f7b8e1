"""How compare, fleet and healthcheck results look to people (rich) and to scripts (JSON)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from perfprobe.fleet.compare import OTHER_PLACEMENT, Comparison
from perfprobe.fleet.peers import Fleet, Group
from perfprobe.fleet.reports import result_key

UNKNOWN = "unknown"


QUIET = ("no significant change", "same")


def comparison_lines(c: Comparison, base_name: str, new_name: str, show_all: bool = False) -> list[Any]:
    from rich.table import Table

    table = Table(title=f"{base_name} → {new_name}", title_justify="left")
    for column in ("metric", "base", "new", "change", "p (U test)", "counts from", "judged"):
        table.add_column(column, justify="left" if column in ("metric", "judged") else "right")
    style = {"regression": "bold red", "improvement": "green", "changed": "yellow", "unstable": "yellow",
             OTHER_PLACEMENT: "yellow"}
    shown = [ch for ch in c.changes if show_all or ch.kind not in QUIET + ("untested",)]
    for ch in shown:
        change = f"{ch.ratio:.3f}x" if ch.ratio is not None else "from 0"
        p_value = "" if ch.p_value is None else f"{ch.p_value:.3g}"
        table.add_row(ch.metric, f"{ch.base:.4g} {ch.unit}", f"{ch.new:.4g} {ch.unit}", change, p_value,
                      f"±{ch.band:.0%}", f"[{style.get(ch.kind, '')}]{ch.kind}[/]" if ch.kind in style else ch.kind)
    out: list[Any] = [table] if shown else []
    quiet = sum(1 for ch in c.changes if ch.kind in QUIET)
    counts = {kind: sum(1 for ch in c.changes if ch.kind == kind)
              for kind in ("untested", "unstable", OTHER_PLACEMENT, "not called (disturbed run)")}
    extra = "".join(f", {n} {kind}" for kind, n in counts.items() if n)
    out.append(f"{len(c.changes)} figures judged; {len(c.regressions)} regression(s), "
               f"{len(c.improvements)} improvement(s), {quiet} with no significant change{extra}")
    if c.disturbed:
        out.append("[yellow]no regression called: a run was disturbed[/] (" + "; ".join(c.disturbed) + ")")
    elif not c.regressions:
        out.append("no significant change" if not c.improvements else "no significant regression")
    if c.facts:
        facts = Table(title="Host facts that differ", title_justify="left")
        for column in ("fact", base_name, new_name):
            facts.add_column(column)
        for name, a, b in c.facts:
            facts.add_row(name, a, b)
        out.append(facts)
    for ch in c.regressions:
        if ch.advice:
            out.append(f"[bold red]{ch.metric}[/]: {ch.advice}")
    for label, keys in (("only in the base", c.only_base), ("only in the new run", c.only_new)):
        if keys:
            out.append(f"{len(keys)} metric(s) {label}: {', '.join(keys[:6])}{' …' if len(keys) > 6 else ''}")
    return out + [f"note: {n}" for n in c.notes]


def comparison_json(c: Comparison) -> dict[str, Any]:
    return {"regressions": len(c.regressions), "improvements": len(c.improvements),
            "disturbed": c.disturbed, "changes": [asdict(ch) for ch in c.changes],
            "facts": [{"fact": n, "base": a, "new": b} for n, a, b in c.facts],
            "only_base": c.only_base, "only_new": c.only_new, "notes": c.notes}


def fleet_lines(fleet: Fleet) -> list[Any]:
    out: list[Any] = []
    for group in fleet.groups:
        out.append(_group_table(group))
        for o in group.outliers:
            way = "" if o.worse is None else (" (worse)" if o.worse else " (better)")
            out.append(f"[bold red]outlier[/] {o.host}: {o.metric} {o.value:.4g} {o.unit} vs group median "
                       f"{o.median:.4g} ± {o.mad:.3g} MAD ({o.change:+.0%}){way}")
        for nm in group.not_measured:
            out.append(f"[bold yellow]{nm.verdict}[/] {nm.host}: {nm.probe} ({nm.reason}) where peers measured")
    for host in fleet.missing:
        out.append(f"[bold red]missing[/] {host}: no report")
    for r in fleet.rejected:
        out.append(f"[bold red]unreadable[/] {r.source}: {r.reason}")
    out += [f"note: {n}" for n in fleet.notes]
    hosts = sum(len(g.hosts) for g in fleet.groups)
    out.append(f"{hosts} host(s) in {len(fleet.groups)} hardware group(s); {_count(fleet)}")
    return out


def fleet_json(fleet: Fleet) -> dict[str, Any]:
    return {"groups": [{"label": g.label, "signature": g.signature, "hosts": g.hosts,
                        "outliers": [asdict(o) for o in g.outliers],
                        "not_measured": [asdict(n) for n in g.not_measured]} for g in fleet.groups],
            "missing": fleet.missing, "rejected": [asdict(r) for r in fleet.rejected],
            "notes": fleet.notes, "problems": fleet.problems}


def _group_table(group: Group) -> Any:
    from rich.table import Table

    keys: list[str] = []
    for report in group.reports.values():
        for result in report.get("results") or []:
            if result_key(result) not in keys:
                keys.append(result_key(result))
    table = Table(title=f"{group.label} — {len(group.hosts)} host(s)", title_justify="left")
    table.add_column("host")
    for key in keys:
        table.add_column(key)
    odd = {(o.host, o.metric.split(":")[0]) for o in group.outliers}
    odd |= {(n.host, n.probe) for n in group.not_measured}
    for host, report in group.reports.items():
        figures = {result_key(r): f"{r.get('verdict')}: {r.get('key_figure') or r.get('summary', '')}"
                   for r in report.get("results") or []}
        cells = [f"[bold red]{figures.get(k, 'absent')}[/]" if (host, k) in odd else figures.get(k, "absent")
                 for k in keys]
        table.add_row(f"[bold red]{host}[/]" if any(h == host for h, _ in odd) else host, *cells)
    return table


def _count(fleet: Fleet) -> str:
    outliers = sum(len(g.outliers) for g in fleet.groups)
    flagged = sorted({o.host for g in fleet.groups for o in g.outliers}
                     | {n.host for g in fleet.groups for n in g.not_measured} | set(fleet.missing))
    return (f"{outliers} outlier figure(s); hosts to look at: {', '.join(flagged)}" if flagged or fleet.rejected
            else "no outliers")
