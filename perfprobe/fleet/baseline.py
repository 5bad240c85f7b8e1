"""Baselines: per hardware group, the median and spread (MAD) of every metric across a fleet.

Written by `fleet --baseline-out`, read by `compare` and `healthcheck` in place of a report. A host's
value on a metric where it is an outlier is left out of that metric's median and MAD, so one bad node
in the fleet the baseline was taken from does not widen what counts as normal.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Mapping, Sequence

from perfprobe import __version__
from perfprobe.errors import UsageError
from perfprobe.fleet.compare import Figure, report_reference
from perfprobe.fleet.facts import flat_facts
from perfprobe.fleet.outliers import MIN_HOSTS, spread
from perfprobe.fleet.peers import Fleet, Group
from perfprobe.fleet.reports import BASELINE_KEY as KEY
from perfprobe.fleet.reports import BASELINE_VERSION, numeric_metrics, probe_of, verdicts
from perfprobe.fleet.reports import is_baseline as is_baseline  # commands.py, health_command.py: bl.is_baseline
from perfprobe.fleet.signature import differences, label, same_hardware, signature
from perfprobe.host.identity import run_time_utc
from perfprobe.pure.stats import thinned

POOLED = 256


def build(fleet: Fleet) -> dict[str, Any]:
    """The baseline of every group of `fleet`."""
    return {KEY: BASELINE_VERSION, "perfprobe_version": __version__, "created_utc": run_time_utc(),
            "groups": [_group(g) for g in fleet.groups]}


def _group(group: Group) -> dict[str, Any]:
    left_out = {(o.host, o.metric) for o in group.outliers}
    values: dict[str, list[float]] = {}
    pooled: dict[str, list[float]] = {}
    trials: dict[str, bool] = {}
    units: dict[str, str] = {}
    placed: dict[str, dict[str, tuple[list[float], list[float]]]] = {}
    for host, report in group.reports.items():
        figures = report_reference(report)
        for key, (value, unit) in numeric_metrics(report).items():
            if (host, key) not in left_out:
                figure = figures.get(key)
                samples = figure.samples if figure else ()
                values.setdefault(key, []).append(value)
                pooled.setdefault(key, []).extend(samples)
                trials[key] = trials.get(key, True) and figure is not None and figure.trials
                units[key] = unit
                where = figure.placement if figure else None
                if where:
                    vals, pool = placed.setdefault(key, {}).setdefault(where, ([], []))
                    vals.append(value)
                    pool.extend(samples)
    stats = {key: spread(vals) for key, vals in sorted(values.items())}
    return {
        "label": group.label, "signature": group.signature, "hosts": list(group.hosts),
        "metrics": {key: {**_pool(s, values[key], pooled[key]), "unit": units[key],
                          **({"trials": True} if trials.get(key) else {}),
                          **({"placements": {where: _pool(spread(vals), vals, pool)
                                             for where, (vals, pool) in sorted(placed[key].items())
                                             if len(vals) >= MIN_HOSTS}}
                             if key in placed else {})}
                    for key, s in stats.items()},
        "facts": _majority([flat_facts(r.get("host") or {}) for r in group.reports.values()]),
        "verdicts": _majority([verdicts(r) for r in group.reports.values()]),
    }


def _pool(s: Any, values: list[float], samples: list[float]) -> dict[str, Any]:
    """A metric's median and MAD across the runs, their values and their repeats pooled."""
    return {"median": s.median, "mad": s.mad, "n": s.n, "values": sorted(values),
            "samples": thinned(sorted(samples), POOLED)}


def _majority(rows: list[dict[str, str]]) -> dict[str, str]:
    names = {name for row in rows for name in row}
    return {name: Counter(row[name] for row in rows if name in row).most_common(1)[0][0] for name in sorted(names)}


def check(data: Mapping[str, Any], source: str) -> None:
    """A baseline this perfprobe reads, or exit 2 naming what is wrong."""
    if data.get(KEY) != BASELINE_VERSION or not isinstance(data.get("groups"), list):
        raise UsageError(f"{source}: baseline version {data.get(KEY)!r}; this perfprobe reads version "
                         f"{BASELINE_VERSION} (write a new one with fleet --baseline-out)")


def require_figures(data: Mapping[str, Any], probes: Sequence[str], source: str) -> None:
    """Exit 2 before anything is measured unless the baseline (or a peer's report) holds a usable
    figure for every probe asked but `host` (judged by its facts): a check that can compare nothing
    must never say healthy. A baseline of several groups passes when one of them holds each probe."""
    if is_baseline(data):
        held = [set(g.get("metrics") or {}) for g in data.get("groups") or ()]
    else:
        held = [set(numeric_metrics(data))]
    for probe in (p for p in probes if p != "host"):
        if not any(probe_of(key) == probe for keys in held for key in keys):
            what = "a baseline" if is_baseline(data) else "a report"
            raise UsageError(f"{source}: {what} with no usable figure of {probe}; make it from runs of {probe} "
                             f"(fleet --baseline-out over `all --quick` reports), or leave {probe} out of --probes")


def group_for(data: Mapping[str, Any], host: Mapping[str, Any], source: str) -> dict[str, Any]:
    """The baseline group of `host`'s hardware, or exit 2 naming the nearest group and how it differs."""
    check(data, source)
    sig = signature(host)
    groups = data["groups"]
    for group in groups:
        if same_hardware(group.get("signature") or {}, sig):
            return dict(group)
    if not groups:
        raise UsageError(f"{source}: a baseline with no groups in it")
    nearest = min(groups, key=lambda g: len(differences(g.get("signature") or {}, sig)))
    why = "; ".join(differences(nearest.get("signature") or {}, sig))
    raise UsageError(f"{source}: no group for this hardware ({label(sig)}); nearest differs in {why}")


def reference(group: Mapping[str, Any]) -> dict[str, Figure]:
    """{metric: Figure} of one baseline group: the hosts' median, their repeats pooled as the
    samples a report is tested against (each host's value where no repeats were kept), and their
    MAD across hosts as the spread; per placement as well where the runs recorded one."""
    out: dict[str, Figure] = {}
    for key, v in (group.get("metrics") or {}).items():
        unit, trials = str(v.get("unit", "")), v.get("trials") is True
        placed = tuple((where, _figure(p, unit, trials, placement=where))
                       for where, p in sorted((v.get("placements") or {}).items()))
        out[key] = _figure(v, unit, trials, by_placement=placed)
    return out


def _figure(v: Mapping[str, Any], unit: str, trials: bool, placement: str | None = None,
            by_placement: tuple[tuple[str, Figure], ...] = ()) -> Figure:
    return Figure(float(v["median"]), unit, tuple(float(x) for x in v.get("samples") or v.get("values") or ()),
                  float(v.get("mad") or 0.0), trials=trials, placement=placement, by_placement=by_placement)
