"""Renderers: they see only a Report (perfprobe.engine.model) and know nothing of how it was measured."""

from __future__ import annotations

from typing import Iterable

from perfprobe.engine.model import Metric, ProbeResult


def unstable_figures(results: Iterable[ProbeResult]) -> list[tuple[ProbeResult, str, Metric]]:
    """Every figure of `results` left out of judgement as unstable: (result, metric name, metric)."""
    return [(r, name, m) for r in results for name, m in r.metrics.items() if m.unstable]


def figure_name(result: ProbeResult, name: str) -> str:
    """'probe:metric', the GPU after it for GPU probes: how the lists of unstable figures name one."""
    return f"{result.probe}:{name}" + ("" if result.device is None else f" (GPU {result.device})")
