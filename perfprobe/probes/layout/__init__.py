"""`perfprobe layout`: what split loads and array-of-structures layouts cost on this core.

measure.py times loads of 4-32 bytes at every offset of a line and across page boundaries
(throughput and dependent-load latency), and one field of K-field records as AoS against SoA in
L1, L2 and DRAM, checking the compiled loops for SIMD. rules.py and tables.py judge the numbers.
"""

from __future__ import annotations

from typing import Any, Mapping

from perfprobe.engine.model import Assessment
from perfprobe.engine.probe import Probe, PythonModule
from perfprobe.engine.stability import NotBelow
from perfprobe.host.facts import Facts
from perfprobe.probes.layout import rules, tables
from perfprobe.probes.layout.declared import DECLARED
from perfprobe.probes.layout.figures import typed
from perfprobe.probes.layout.plan import FIELDS, WIDTHS


def judge(recorded: Mapping[str, Any], host: Facts) -> Assessment:
    """Findings, metrics, tables and the offset curves from the recorded numbers."""
    raw = typed(recorded)
    return Assessment(summary=tables.summary(raw, host), metrics=tables.metrics(raw, host),
                      findings=rules.findings(raw, host), tables=tables.tables(raw),
                      curves=tables.curves(raw), facts=tables.facts(raw), key_figure=tables.key_figure(raw, host))


RELATIONS = (
    NotBelow("load_latency_ns.aligned.{}", "load_ns.aligned.{}", 1.0, "a dependent load's latency below "
             "the time per load of independent loads", each=tuple(f"{w}B" for w in WIDTHS)),
    NotBelow("ns_per_record.aos.sum.{}", "ns_per_record.soa.sum.{}", 0.9, "one field summed faster from "
             "records (AoS) than from its own array (SoA), which reads a K-th of the bytes",
             each=tuple(f"k{k}.{level}" for k in FIELDS for level in ("l1", "l2", "dram"))),
)

SPREAD_BOUND = 0.20
"""One record loop's runs last about a millisecond and move from run to run: their repeats' MAD
reached 13% of the median in quiet full runs on the H200 guest (--quick's 3 repeats are too few to
judge: stability.MIN_REPEATS)."""

PROBE = Probe(name=DECLARED.name, title="Data layout: split loads, AoS against SoA",
              judge=judge, measure_module="perfprobe.probes.layout.measure",
              requires=(PythonModule("numba", "pip install numba"),), relations=RELATIONS,
              spread_bound=SPREAD_BOUND)
