"""Reports for the fleet tests: real recordings judged through the real runner (replay), and fleets
built from them with labelled synthetic outliers (every change planted here is named)."""

from __future__ import annotations

import copy
import json
import random
from functools import lru_cache
from pathlib import Path
from typing import Any

from perfprobe.engine import runner
from perfprobe.engine.config import RunConfig
from perfprobe.engine.registry import all_probe_names
from perfprobe.render.json import report_to_dict

DATA = Path(__file__).resolve().parent / "data"


@lru_cache(maxsize=None)
def _replayed(recording: str, names: tuple[str, ...]) -> str:
    config = RunConfig(replay=DATA / recording, device="all")
    return json.dumps(report_to_dict(runner.run(list(names), config)))


def replayed(recording: str, names: tuple[str, ...] | None = None) -> dict[str, Any]:
    """A fresh copy of the report the real runner makes from a recording in tests/data. Recordings
    made before summarize() kept its repeats carry n, min, median and max only: their `samples` are
    filled in here as n points spread from min through the median to max (synthetic), so compare's test has samples of the recorded spread."""
    report = json.loads(_replayed(recording, names or tuple(all_probe_names())))
    for result in report["results"]:
        for metric in result["metrics"].values():
            stats = metric.get("stats")
            if stats and not stats.get("samples") and stats["n"] >= 2:
                stats["samples"] = _spread_points(stats["min"], stats["median"], stats["max"], stats["n"])
    return report


def _spread_points(low: float, median: float, high: float, n: int) -> list[float]:
    """n points from `low` to `high`, half below the median and half above, evenly."""
    out = []
    for i in range(n):
        q = i / (n - 1)
        out.append(low + (median - low) * 2 * q if q <= 0.5 else median + (high - median) * (2 * q - 1))
    return out


def scale_metric(metric: dict[str, Any], factor: float) -> None:
    """A metric's value and everything in its stats moved by `factor` (a host, or a planted change)."""
    metric["value"] *= factor
    stats = metric.get("stats")
    if stats:
        for key in ("median", "min", "max", "mad", "iqr"):
            if isinstance(stats.get(key), (int, float)):
                stats[key] *= factor
        stats["samples"] = [v * factor for v in stats.get("samples") or []]


def h200() -> dict[str, Any]:
    """`all --quick --device all` on the two-H200 host (recorded there)."""
    return replayed("all_quick_h200x2.rec.json")


def as_host(report: dict[str, Any], name: str, seed: int, jitter: float = 0.03) -> dict[str, Any]:
    """`report` as if host `name` ran it: every numeric metric moved by up to ±jitter (run-to-run noise)."""
    out = copy.deepcopy(report)
    out["host"]["hostname"] = name
    out["host"]["slurm_node"] = name
    rng = random.Random(seed)
    for result in out["results"]:
        for metric in result["metrics"].values():
            if isinstance(metric["value"], float):
                scale_metric(metric, 1 + rng.uniform(-jitter, jitter))
    return out


def set_metric(report: dict[str, Any], probe: str, device: int | None, name: str, factor: float) -> None:
    for result in report["results"]:
        if result["probe"] == probe and result["device"] == device:
            scale_metric(result["metrics"][name], factor)
            return
    raise KeyError((probe, device, name))


def set_verdict(report: dict[str, Any], probe: str, verdict: str, summary: str) -> None:
    for result in report["results"]:
        if result["probe"] == probe:
            result.update(verdict=verdict, summary=summary, metrics={})


def planted_fleet() -> tuple[list[dict[str, Any]], set[tuple[str, str]]]:
    """Eight H200 hosts with run-to-run noise; the planted outliers, as (host, metric key)."""
    base = h200()
    hosts = [as_host(base, f"gpu{n:02d}", seed=n) for n in range(1, 9)]
    set_metric(hosts[2], "pinned", 1, "pinned.h2d_gbs", 0.55)     # gpu03: GPU 1's link trained down
    set_metric(hosts[2], "pinned", 1, "pinned.d2h_gbs", 0.55)
    set_metric(hosts[5], "cache", None, "latency_ns.DRAM", 1.6)   # gpu06: memory slower
    planted = {("gpu03", "pinned[1]:pinned.h2d_gbs"), ("gpu03", "pinned[1]:pinned.d2h_gbs"),
               ("gpu06", "cache:latency_ns.DRAM")}
    return hosts, planted


def write_all(reports: list[dict[str, Any]], folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for report in reports:
        (folder / f"{report['host']['hostname']}.json").write_text(json.dumps(report))
    return folder
