"""`perfprobe toy`: a probe package that lives in tests/ (tests/test_toy_probe.py registers it).

It has the shape of every probe (docs/DEVELOPING.md, "How to add a probe"): declared.py, plan.py,
measure.py, figures.py, rules.py, tables.py; its measure makes its numbers up from its options, so
the test knows what every output must say.
"""

from __future__ import annotations

from typing import Any, Mapping

from perfprobe.engine.model import Assessment
from perfprobe.engine.probe import Probe
from perfprobe.host.facts import Facts
from toy_probe import rules, tables
from toy_probe.declared import DECLARED


def judge(raw: Mapping[str, Any], host: Facts) -> Assessment:
    """Findings, metrics and the table from the recorded numbers."""
    return Assessment(summary=tables.summary(raw), metrics=tables.metrics(raw), findings=rules.findings(raw, host),
                      tables=tables.tables(raw), key_figure=tables.key_figure(raw))


PROBE = Probe(name=DECLARED.name, title="Toy: made-up counter updates", judge=judge,
              measure_module="toy_probe.measure")
