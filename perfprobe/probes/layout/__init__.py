"""`perfprobe layout`: what split loads and array-of-structures layouts cost on this core.

measure.py times loads of 4-32 bytes at every offset of a line and across page boundaries
(throughput and dependent-load latency), and one field of K-field records as AoS against SoA in
L1, L2 and DRAM, checking the compiled loops for SIMD. rules.py and tables.py judge the numbers.
"""

from __future__ import annotations

from typing import Any, Mapping

from perfprobe.host.facts import Facts
from perfprobe.model import Assessment
from perfprobe.probe import Probe, PythonModule
from perfprobe.probes.layout import rules, tables


def judge(raw: Mapping[str, Any], host: Facts) -> Assessment:
    """Findings, metrics, tables and the offset curves from the recorded numbers."""
    return Assessment(summary=tables.summary(raw, host), metrics=tables.metrics(raw, host),
                      findings=rules.findings(raw, host), tables=tables.tables(raw),
                      curves=tables.curves(raw), facts=tables.facts(raw), key_figure=tables.key_figure(raw, host))


PROBE = Probe(name="layout", title="Data layout: split loads, AoS against SoA",
              judge=judge, measure_module="perfprobe.probes.layout.measure",
              requires=(PythonModule("numba", "pip install numba"),))
