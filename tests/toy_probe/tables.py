"""Pure: metrics, the table, the summary and the key figure."""

from __future__ import annotations

from typing import Any, Mapping

from perfprobe.engine.model import Metric, Table
from perfprobe.pure.stats import metric
from toy_probe import figures


def metrics(raw: Mapping[str, Any]) -> dict[str, Metric]:
    return {"ns_per_update": metric(raw["ns_per_update"], "ns", 2), "width": Metric(raw["width"], "counters")}


def tables(raw: Mapping[str, Any]) -> tuple[Table, ...]:
    return (Table("Counters", ("counters", "ns per update"), ((raw["width"], figures.ns_per_update(raw)),)),)


def summary(raw: Mapping[str, Any]) -> str:
    return f"{raw['width']} counters, {figures.ns_per_update(raw):.0f} ns per update"


def key_figure(raw: Mapping[str, Any]) -> str:
    return f"{figures.ns_per_update(raw):.0f} ns"
