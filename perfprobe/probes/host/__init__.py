"""`perfprobe host`: what this host is and how it is set up, with what to fix before measuring.

Nothing is measured: the figures are the runner's host facts (perfprobe.host), read once per run.
`judge` lays them out as metrics and tables (tables.py) and runs the set-up checks (rules.py).
"""

from __future__ import annotations

from typing import Any, Mapping

from perfprobe.engine.model import Assessment
from perfprobe.engine.probe import Probe
from perfprobe.host.facts import Facts
from perfprobe.probes.host import figures, rules, tables
from perfprobe.probes.host.declared import DECLARED


def judge(raw: Mapping[str, Any], host: Facts) -> Assessment:
    """Host facts -> metrics, tables and set-up findings (pure)."""
    return Assessment(summary=tables.summary(host), metrics=tables.metrics(host),
                      findings=rules.findings(figures.typed(raw), host), tables=tables.host_tables(host),
                      key_figure=tables.key_figure(host))


PROBE = Probe(name=DECLARED.name, title="Host facts and set-up", judge=judge,
              measure_module="perfprobe.probes.host.measure")
