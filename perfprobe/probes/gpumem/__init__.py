"""`perfprobe gpumem`: inside the GPU — whether the HBM delivers, coalescing, shared-memory banks,
occupancy, tiling and warp divergence.

measure.py drives the cupy RawKernels of perfprobe/kernels/gpumem_kernels.py (CUDA events, warm-up,
medians with spread) and reads NVML's memory clock, bus width and clock-event reasons. judge() is
pure: rules.py's findings and tables.py's figures, both read from figures.py.
"""

from __future__ import annotations

from typing import Any, Mapping

from perfprobe.engine.model import Assessment
from perfprobe.engine.probe import Gpu, Probe
from perfprobe.engine.stability import AtMost, Ordered, Relation
from perfprobe.host.facts import Facts
from perfprobe.probes.gpumem import rules, tables
from perfprobe.probes.gpumem.declared import DECLARED
from perfprobe.probes.gpumem.figures import typed
from perfprobe.probes.gpumem.plan import check_knobs

ORDER_NOISE = 1.1
"""Each slowdown in a sequence at most this times the next: 10% for the noise of two ratios."""

RELATIONS: tuple[Relation, ...] = (
    AtMost("dram_fraction_of_peak", 1.0, "DRAM bandwidth above its theoretical peak (NVML clock x bus width "
           "x 2): cache hits (a buffer not far larger than L2) or a wrong timing"),
    Ordered(tuple(f"bank_conflict_slowdown.{ways}way" for ways in (2, 4, 8, 16, 32)), ORDER_NOISE,
            "more lanes on one shared-memory bank cost less"),
    Ordered(tuple(f"coalesce_slowdown.stride{stride}" for stride in (2, 4, 8, 16, 32)), ORDER_NOISE,
            "a wider stride between threads read faster"),
    Ordered(("warps_per_sm_to_saturate.ilp4", "warps_per_sm_to_saturate"), 1.0,
            "four loads in flight per thread needed more warps than one"),
)


def judge(recorded: Mapping[str, Any], host: Facts) -> Assessment:
    """The recorded numbers → findings, metrics, tables and curves."""
    raw = typed(recorded)
    return Assessment(summary=tables.summary(raw, host), metrics=tables.metrics(raw, host),
                      findings=tuple(rules.findings(raw, host)), tables=tables.tables(raw, host),
                      curves=tables.curves(raw), facts=tables.facts(raw, host),
                      key_figure=tables.key_figure(raw, host))


PROBE = Probe(name=DECLARED.name, title="Inside the GPU: DRAM bandwidth, coalescing, banks, occupancy, tiling",
              judge=judge, measure_module="perfprobe.probes.gpumem.measure", requires=(Gpu(),),
              check_knobs=check_knobs, relations=RELATIONS)
