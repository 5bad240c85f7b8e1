"""The JSON report: results as data, for ops scripts and CI (schema: perfprobe/schema/report.schema.json)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from perfprobe.engine.model import Curve, Finding, Metric, ProbeResult, QuickBudget, Report, Table
from perfprobe.render import unstable_figures


def report_to_dict(report: Report) -> dict[str, Any]:
    """The report as plain JSON-ready data, in the documented schema's shape."""
    out = {
        "schema_version": report.schema_version,
        "perfprobe_version": report.perfprobe_version,
        "host": _clean(report.host),
        "results": [_result(r) for r in report.results],
        "verdict": report.verdict.value,
        "duration_s": round(report.duration_s, 3),
        "disturbance": _clean(dict(report.disturbance)),
        "unstable": [{"probe": r.probe, "device": r.device, "metric": name, "reason": m.unstable}
                     for r, name, m in unstable_figures(report.results)],
    }
    if report.quick_budget is not None:  # a live --quick run only (schema: optional)
        out["quick_budget"] = _quick_budget(report.quick_budget)
    return out


def report_to_json(report: Report) -> str:
    return json.dumps(report_to_dict(report), indent=2, allow_nan=False)


def _result(result: ProbeResult) -> dict[str, Any]:
    return {
        "probe": result.probe,
        "device": result.device,
        "verdict": result.verdict.value,
        "summary": result.summary,
        "key_figure": result.key_figure,
        "metrics": {name: _metric(m) for name, m in result.metrics.items()},
        "findings": [_finding(f) for f in result.findings],
        "facts": _clean(result.facts),
        "tables": [_table(t) for t in result.tables],
        "curves": [_curve(c) for c in result.curves],
        "duration_s": round(result.duration_s, 3),
    }


def _quick_budget(budget: QuickBudget) -> dict[str, Any]:
    """The run against its --quick budget; `over`: each probe past its own, with its stages."""
    return {"budget_s": round(budget.budget_s, 3), "spent_s": round(budget.spent_s, 3),
            "exceeded": budget.exceeded, "wall_s": round(budget.wall_s, 3), "outside_s": round(budget.outside_s, 3),
            "compile_ahead_s": round(budget.compile_ahead_s, 3),
            "over": [{"probe": o.probe, "device": o.device, "budget_s": round(o.budget_s, 3),
                      "wall_s": round(o.wall_s, 3), "stages_s": {k: round(v, 3) for k, v in o.stages_s.items()}}
                     for o in budget.over]}


def _finding(finding: Finding) -> dict[str, Any]:
    out: dict[str, Any] = {"verdict": finding.verdict.value, "message": finding.message, "advice": finding.advice}
    if finding.confirmation is not None:  # only re-measured findings carry it (schema: optional)
        out["confirmation"] = _clean(dict(finding.confirmation))
    return out


def _metric(metric: Metric) -> dict[str, Any]:
    out: dict[str, Any] = {"value": _clean(metric.value), "unit": metric.unit}
    if metric.spread is not None:  # a timed figure: its repeats (schema: stats)
        s = metric.spread
        out["stats"] = _clean({"n": s.n, "median": _sig(s.median), "min": _sig(s.min), "max": _sig(s.max),
                               "mad": None if s.mad is None else _sig(s.mad),
                               "iqr": None if s.iqr is None else _sig(s.iqr),
                               "samples": [_sig(v) for v in s.samples]})
        if s.trials:  # the samples are independent trials (schema: stats.trials)
            out["stats"]["trials"] = True
        if s.placement:  # where the threads sat (schema: stats.placement)
            out["stats"]["placement"] = s.placement
    if metric.unstable:
        out["unstable"] = metric.unstable
    return out


def _sig(value: float) -> float:
    """Six significant digits: a timing's noise is far above that, and the JSON stays readable."""
    return float(f"{value:.6g}")


def _table(table: Table) -> dict[str, Any]:
    return {"title": table.title, "columns": list(table.columns),
            "rows": [[_clean(c) for c in row] for row in table.rows], "heat": table.heat}


def _curve(curve: Curve) -> dict[str, Any]:
    return {"title": curve.title, "x_label": curve.x_label, "y_label": curve.y_label,
            "points": [[_clean(x), _clean(y)] for x, y in curve.points],
            "log_x": curve.log_x, "log_y": curve.log_y,
            "marks": [{"x": _clean(x), "label": label} for x, label in curve.marks]}


def _clean(value: Any) -> Any:
    """Make any nested value JSON-safe: NaN and infinities become null, tuples lists, keys str."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_clean(v) for v in value]
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        return _clean(value.item())
    if value is None or isinstance(value, (str, int, bool)):
        return value
    return str(value)
