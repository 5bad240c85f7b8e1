"""`perfprobe uvm`: unified memory on this GPU — on-demand migration, prefetch, advice, zero-copy.

measure.py times one read-reduce kernel over data that reaches the GPU in different ways (page
faults, prefetch, advice, explicit copy, mapped pinned memory, pageable memory) and the way back
(the host reading GPU-written managed memory); paths.py holds each path's timed steps. judge() is
pure: rules.py's findings and tables.py's tables and metrics, both over figures.py.
"""

from __future__ import annotations

from typing import Any, Mapping

from perfprobe.engine.model import Assessment
from perfprobe.engine.probe import Gpu, Probe
from perfprobe.engine.stability import NotBelow, Relation
from perfprobe.host.facts import Facts
from perfprobe.probes.uvm import rules, tables
from perfprobe.probes.uvm.declared import DECLARED
from perfprobe.probes.uvm.figures import TO_GPU, TO_HOST, typed
from perfprobe.probes.uvm.plan import check_knobs

SPREAD_BOUND = 0.20
"""uvm's repeats are wider than the 0.10 default: page-fault migration (managed_on_demand, advice
without a prefetch) and the host-side paths timed by the wall clock around threads that fault
pages back. Healthy H200 recordings (tests/data/uvm_h200_*.json, all_quick_h200x2.rec.json; 3
repeats, whose MAD is the nearer of two distances to the median) reach 8.4% (managed_on_demand),
11.4% (host_on_demand) and 12.8% (host_local); 0.20 leaves room above them."""
SAME_WORK_NOISE = 0.9
"""A path's end-to-end time at least this share of its ceiling's: the ceiling does the same read
with nothing moved first, so a path only passes it by the noise of two measurements."""

RELATIONS: tuple[Relation, ...] = (
    NotBelow("time_ms.{}", "time_ms.device_memory", SAME_WORK_NOISE,
             "a GPU path faster than the same kernel on data already in device memory",
             each=tuple(p for p in TO_GPU if p != "device_memory")),
    NotBelow("time_ms.{}", "time_ms.host_local", SAME_WORK_NOISE,
             "a way back faster than host threads reading host memory",
             each=tuple(p for p in TO_HOST if p != "host_local")),
    NotBelow("time_ms.{}_passes", "time_ms.{}", SAME_WORK_NOISE,
             "several kernel passes faster than one", each=("explicit_copy", "zero_copy")),
)


def judge(recorded: Mapping[str, Any], host: Facts) -> Assessment:
    """The recorded numbers and host facts → a table per direction, metrics, findings with advice."""
    raw = typed(recorded)
    return Assessment(summary=tables.summary(raw), metrics=tables.metrics(raw),
                      findings=tuple(rules.findings(raw, host)), tables=tables.tables(raw),
                      facts=tables.facts(raw), key_figure=tables.key_figure(raw))


PROBE = Probe(name=DECLARED.name, title="Unified memory: on-demand migration, prefetch, advice, zero-copy",
              judge=judge, measure_module="perfprobe.probes.uvm.measure", requires=(Gpu(),),
              check_knobs=check_knobs, relations=RELATIONS, spread_bound=SPREAD_BOUND)
