"""`perfprobe pinned`: host-GPU copies from pageable and pinned memory, measured against the link.

measure.py sweeps copy sizes (64 KiB up to --size) in both directions from a plain numpy buffer
and from a cudaHostAlloc buffer, both directions at once from pinned memory, the host time of each
enqueue call, the cost of page-locking, the PCIe link (idle and under load) and where the buffers'
pages live. judge() is pure: rules.py's findings and tables.py's figures, both read from figures.py.
"""

from __future__ import annotations

from typing import Any, Mapping

from perfprobe.engine.model import Assessment
from perfprobe.engine.probe import Gpu, Probe
from perfprobe.engine.stability import AtMost, NotBelow, Relation
from perfprobe.host.facts import Facts
from perfprobe.probes.pinned import rules, tables
from perfprobe.probes.pinned.declared import DECLARED
from perfprobe.probes.pinned.figures import typed
from perfprobe.probes.pinned.plan import check_knobs

PINNED_OVER_PAGEABLE = 0.9
"""Pinned copies at least this share of pageable ones: a pageable copy goes through the driver's
own pinned staging buffers, so it never outruns a DMA straight from pinned memory; 10% for the
noise of two separate measurements."""

RELATIONS: tuple[Relation, ...] = (
    AtMost("link.fraction_*", 1.0, "a copy faster than the PCIe link's raw rate (the link reading or the "
           "timing is wrong)"),
    NotBelow("pinned.{}_gbs", "pageable.{}_gbs", PINNED_OVER_PAGEABLE,
             "pinned copies slower than pageable ones", each=("h2d", "d2h")),
)


def judge(recorded: Mapping[str, Any], host: Facts) -> Assessment:
    """The recorded numbers and host facts → findings, metrics, tables and curves."""
    raw = typed(recorded)
    return Assessment(summary=tables.summary(raw, host), metrics=tables.metrics(raw, host),
                      findings=tuple(rules.findings(raw, host)), tables=tables.tables(raw, host),
                      curves=tables.curves(raw), facts=tables.facts(raw, host),
                      key_figure=tables.key_figure(raw, host))


PROBE = Probe(name=DECLARED.name, title="Host-GPU copies: pageable vs pinned, against the PCIe link",
              judge=judge, measure_module="perfprobe.probes.pinned.measure", requires=(Gpu(),),
              check_knobs=check_knobs, relations=RELATIONS,
              rests_on={"bandwidth": ("pinned.*", "link.*")})
