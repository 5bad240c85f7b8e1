"""`perfprobe branch`: what a mispredicted branch costs on this core, and what branch-free code saves.

measure.py times a data-dependent branch over sorted and shuffled values, a repeating pattern of
growing period, a branch-free twin, and the core clock (a dependent add chain), after checking
the compiled loop for a real conditional jump. rules.py and tables.py judge the numbers (pure).
"""

from __future__ import annotations

from typing import Any, Mapping

from perfprobe.engine.model import Assessment
from perfprobe.engine.probe import Probe, PythonModule
from perfprobe.engine.stability import NotBelow, Ordered
from perfprobe.host.facts import Facts
from perfprobe.probes.branch import rules, tables
from perfprobe.probes.branch.declared import DECLARED
from perfprobe.probes.branch.figures import typed


def judge(recorded: Mapping[str, Any], host: Facts) -> Assessment:
    """Findings, metrics, tables and the period curve from the recorded numbers."""
    raw = typed(recorded)
    return Assessment(summary=tables.summary(raw, host), metrics=tables.metrics(raw, host),
                      findings=rules.findings(raw, host), tables=tables.tables(raw),
                      curves=tables.curves(raw), facts=tables.facts(raw), key_figure=tables.key_figure(raw, host))


ORDER_NOISE = 1.25
"""How far apart the branch-free loop's two medians may land: it does the same work on sorted and
on shuffled data (at most 15% apart in the recordings; repeats' MAD up to 16% in a full run)."""
RELATIONS = (
    NotBelow("ns_per_element.shuffled", "ns_per_element.sorted", 1.0,
             "a mispredicted branch cheaper than a predicted one: the branchy loop ran faster on shuffled data"),
    Ordered(("ns_per_element.branch_free_shuffled", "ns_per_element.branch_free_sorted"), ORDER_NOISE,
            "branch-free code slower on shuffled than on sorted data, though it does the same work"),
    Ordered(("ns_per_element.branch_free_sorted", "ns_per_element.branch_free_shuffled"), ORDER_NOISE,
            "branch-free code slower on sorted than on shuffled data, though it does the same work"),
)
SPREAD_BOUND = 0.20
"""A loop at 1.5-2 cycles an element switches between speeds from run to run: the sorted case's
repeats had a MAD of 16% of their median in a quiet full run on the H200 guest."""

PROBE = Probe(name=DECLARED.name, title="Branch prediction: mispredict cost, patterns, branch-free code",
              judge=judge, measure_module="perfprobe.probes.branch.measure",
              requires=(PythonModule("numba", "pip install numba"),), relations=RELATIONS,
              spread_bound=SPREAD_BOUND)
