"""What the probes' stability tests share: a recording in tests/data judged by its probe, the figures
its relations and spread bound name (perfprobe/stability.py), one figure planted broken."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from types import ModuleType

from perfprobe.model import Metric
from perfprobe.stability import unstable

DATA = Path(__file__).parent / "data"


def judged(probe: ModuleType, name: str) -> dict[str, Metric]:
    """The metrics `probe` (its package, e.g. perfprobe.probes.numa) judges recording `name` to."""
    recording = json.loads((DATA / name).read_text())
    key = probe.PROBE.name
    return dict(probe.judge(recording["raw"][key], recording["host"]).metrics)


def broken(probe: ModuleType, metrics: dict[str, Metric]) -> dict[str, str]:
    """What the probe's relations and spread bound name in these metrics."""
    return unstable(metrics, probe.PROBE.relations, probe.PROBE.spread_bound)


def planted(metrics: dict[str, Metric], name: str, value: float) -> dict[str, Metric]:
    """`metrics` with figure `name` set to `value` (its statistics kept)."""
    return {**metrics, name: dataclasses.replace(metrics[name], value=value)}
