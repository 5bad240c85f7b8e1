"""`perfprobe uvm`: unified memory on this GPU — on-demand migration, prefetch, advice, zero-copy.

measure.py times one read-reduce kernel over data that reaches the GPU in different ways (page
faults, prefetch, advice, explicit copy, mapped pinned memory, pageable memory) and the way back
(the host reading GPU-written managed memory); paths.py holds each path's timed steps. judge() is
pure: rules.py's findings and tables.py's tables and metrics, both over figures.py.
"""

from __future__ import annotations

from perfprobe.host.facts import Facts
from perfprobe.model import Assessment
from perfprobe.probe import Gpu, Probe
from perfprobe.probes.uvm import rules, tables
from perfprobe.probes.uvm.figures import Raw


def judge(raw: Raw, host: Facts) -> Assessment:
    """The recorded numbers and host facts → a table per direction, metrics, findings with advice."""
    return Assessment(summary=tables.summary(raw), metrics=tables.metrics(raw),
                      findings=tuple(rules.findings(raw, host)), tables=tables.tables(raw),
                      facts=tables.facts(raw), key_figure=tables.key_figure(raw))


PROBE = Probe(name="uvm", title="Unified memory: on-demand migration, prefetch, advice, zero-copy",
              judge=judge, measure_module="perfprobe.probes.uvm.measure", requires=(Gpu(),))
