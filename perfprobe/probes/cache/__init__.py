"""`perfprobe cache`: the memory hierarchy of this host — latency curve, levels, bandwidth, line
size, what the prefetcher buys, what huge pages buy.

measure.py plans sizes (plan.py), times the numba kernels (timing.py, on page-aligned buffers from
buffers.py) and returns plain numbers; judge reads them once (figures.py, levels off the curve by
curve.py), then the rules (rules.py) say what they mean and the tables (tables.py) show them.
Nothing here imports a kernel: measure.py is imported only when the probe runs.
"""

from __future__ import annotations

from typing import Any, Mapping

from perfprobe.host.facts import Facts
from perfprobe.model import Assessment
from perfprobe.probe import Probe, PythonModule
from perfprobe.probes.cache import tables
from perfprobe.probes.cache.figures import read_figures
from perfprobe.probes.cache.rules import findings


def judge(raw: Mapping[str, Any], host: Facts) -> Assessment:
    """Levels, bandwidth, line and pages read off the raw numbers, judged against the host."""
    fig = read_figures(raw, host)
    return Assessment(summary=tables.summary(fig), metrics=tables.metrics(fig),
                      findings=tuple(findings(fig, host)), tables=tables.tables(fig),
                      curves=(tables.curve_view(fig),), facts=tables.facts_view(fig),
                      key_figure=tables.key_figure(fig))


PROBE = Probe(name="cache", title="CPU cache hierarchy", judge=judge,
              measure_module="perfprobe.probes.cache.measure",
              requires=(PythonModule("numba", "pip install numba (a perfprobe dependency)"),))
