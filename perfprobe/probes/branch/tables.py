"""Metrics, tables, the period curve and the summary of `perfprobe branch`. Pure."""

from __future__ import annotations

from typing import Any

from perfprobe.engine.model import Curve, Metric, Table
from perfprobe.host.facts import Facts
from perfprobe.probes.branch import figures as f
from perfprobe.probes.branch.figures import Raw
from perfprobe.pure import stats

LABELS = {"sorted": "branchy, sorted", "shuffled": "branchy, shuffled",
          "branch_free_sorted": "branch-free, sorted", "branch_free_shuffled": "branch-free, shuffled"}


def metrics(raw: Raw, host: Facts) -> dict[str, Metric]:
    clock = stats.metric(f.clock_stat(raw), "GHz", 3)
    if not f.branch_in_code(raw):
        return {"core_clock_ghz": clock}
    out = {"core_clock_ghz": clock,
           "reported_clock_ghz": Metric(_round(f.reported_ghz(raw)[0]), "GHz"),
           "mispredict_cycles": Metric(round(f.mispredict_cycles(raw), 2), "cycles"),
           "mispredict_ns": Metric(round(f.mispredict_ns(raw), 3), "ns"),
           "branch_free_speedup": Metric(round(f.branch_free_speedup(raw), 3), "ratio"),
           "branch_free_cost_sorted": Metric(round(f.branch_free_cost_sorted(raw), 3), "ratio")}
    for case in LABELS:
        out[f"ns_per_element.{case}"] = stats.metric(f.case_stat(raw, case), "ns", 4)
        # cycles: the same repeats in cycles at the measured (median) clock
        out[f"cycles_per_element.{case}"] = stats.metric(f.case_stat(raw, case), "cycles", 3, scale=f.ghz(raw))
    best, failed = f.reach(raw)
    out["predictor_reach_period"] = Metric(best, "branches")
    out["predictor_fail_period"] = Metric(failed, "branches")
    for period, stat in f.period_stats(raw):
        out[f"ns_per_element.period.{period}"] = stats.metric(stat, "ns", 4)
    return out


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def tables(raw: Raw) -> tuple[Table, ...]:
    if not f.branch_in_code(raw):
        return ()
    rows = []
    for case, label in LABELS.items():
        stat = raw["cases"][case]["ns_per_element"]
        rows.append((label, round(stat["median"], 3), f"{stat['min']:.3f}-{stat['max']:.3f}",
                     round(f.cycles(raw, case), 2)))
    cases = Table(f"{raw['elements']} int32 values, `if v >= {raw['threshold']}` (taken "
                  f"{raw['taken_fraction']:.0%} on shuffled data)",
                  ("case", "ns/element", "min-max", "cycles/element"), tuple(rows))
    sorted_ns, shuffled_ns = f.ns(raw, "sorted"), f.ns(raw, "shuffled")
    sweep = tuple((p, round(v, 3), round(v * f.ghz(raw), 2), "yes" if f.predicted(v, sorted_ns, shuffled_ns) else "no")
                  for p, v in f.period_points(raw))
    return (cases, Table("repeating pattern of period P (half taken)",
                         ("period", "ns/element", "cycles/element", "predicted"), sweep))


def curves(raw: Raw) -> tuple[Curve, ...]:
    points = tuple((float(p), v) for p, v in f.period_points(raw))
    if not points or not f.branch_in_code(raw):
        return ()
    return (Curve("ns per element against the pattern's period", "period (branches)", "ns/element", points),)


def summary(raw: Raw, host: Facts) -> str:
    if not f.branch_in_code(raw):
        return "no conditional jump in the compiled branchy loop: nothing measured"
    best, _ = f.reach(raw)
    reach = f"; patterns learned up to period {best}" if best else ""
    return (f"mispredict {f.mispredict_cycles(raw):.0f} cycles ({f.mispredict_ns(raw):.1f} ns) at "
            f"{f.ghz(raw):.2f} GHz; branch-free {f.branch_free_speedup(raw):.1f}x faster on random data{reach}")


def key_figure(raw: Raw, host: Facts) -> str:
    return f"mispredict {f.mispredict_cycles(raw):.0f} cyc" if f.branch_in_code(raw) else "no branch compiled"


def facts(raw: Raw) -> dict[str, Any]:
    return {"method": raw.get("method"), "clock": raw.get("clock", {}).get("how"),
            "reported_clock": raw.get("reported_clock"), "check": raw.get("check"),
            "loadavg": raw.get("loadavg"), "elements": raw.get("elements")}
