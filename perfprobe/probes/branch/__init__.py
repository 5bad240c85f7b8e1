"""`perfprobe branch`: what a mispredicted branch costs on this core, and what branch-free code saves.

measure.py times a data-dependent branch over sorted and shuffled values, a repeating pattern of
growing period, a branch-free twin, and the core clock (a dependent add chain), after checking
the compiled loop for a real conditional jump. rules.py and tables.py judge the numbers (pure).
"""

from __future__ import annotations

from typing import Any, Mapping

from perfprobe.host.facts import Facts
from perfprobe.model import Assessment
from perfprobe.probe import Probe, PythonModule
from perfprobe.probes.branch import rules, tables


def judge(raw: Mapping[str, Any], host: Facts) -> Assessment:
    """Findings, metrics, tables and the period curve from the recorded numbers."""
    return Assessment(summary=tables.summary(raw, host), metrics=tables.metrics(raw, host),
                      findings=rules.findings(raw, host), tables=tables.tables(raw),
                      curves=tables.curves(raw), facts=tables.facts(raw), key_figure=tables.key_figure(raw, host))


PROBE = Probe(name="branch", title="Branch prediction: mispredict cost, patterns, branch-free code",
              judge=judge, measure_module="perfprobe.probes.branch.measure",
              requires=(PythonModule("numba", "pip install numba"),))
