"""What the probes' stability tests share: a recording in tests/data judged by its probe, the figures
its relations and spread bound name (perfprobe/engine/stability.py), one figure planted broken."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from types import ModuleType
from typing import Any

from perfprobe.engine.model import Metric
from perfprobe.engine.stability import unstable

DATA = Path(__file__).parent / "data"


def recorded(name: str, key: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Recording `name`'s raw numbers under `key` ("cache", "pinned[0]"), and its host."""
    data = json.loads((DATA / name).read_text())
    return data["raw"][key], data["host"]


def recordings_with(prefix: str) -> list[tuple[str, str]]:
    """(recording name, raw key) for every raw key starting with `prefix` in every recording."""
    return [(path.name, key) for path in sorted(DATA.glob("*.json"))
            for key in json.loads(path.read_text()).get("raw", {}) if key.startswith(prefix)]


def set_median(stat: dict[str, Any], value: float) -> None:
    """One recorded summary moved to `value`, its extremes with it."""
    stat.update(median=value, min=value * 0.999, max=value * 1.001)


def judged(probe: ModuleType, name: str) -> dict[str, Metric]:
    """The metrics `probe` (its package, e.g. perfprobe.probes.numa) judges recording `name` to."""
    return dict(probe.judge(*recorded(name, probe.PROBE.name)).metrics)


def broken(probe: ModuleType, metrics: dict[str, Metric]) -> dict[str, str]:
    """What the probe's relations and spread bound name in these metrics."""
    return unstable(metrics, probe.PROBE.relations, probe.PROBE.spread_bound)


def planted(metrics: dict[str, Metric], name: str, value: float) -> dict[str, Metric]:
    """`metrics` with figure `name` set to `value` (its statistics kept)."""
    return {**metrics, name: dataclasses.replace(metrics[name], value=value)}
