"""`perfprobe gpumem`: inside the GPU — whether the HBM delivers, coalescing, shared-memory banks,
occupancy, tiling and warp divergence.

measure.py drives the cupy RawKernels of perfprobe/kernels/gpumem_kernels.py (CUDA events, warm-up,
medians with spread) and reads NVML's memory clock, bus width and clock-event reasons. judge() is
pure: rules.py's findings and tables.py's figures, both read from figures.py.
"""

from __future__ import annotations

from perfprobe.host.facts import Facts
from perfprobe.model import Assessment
from perfprobe.probe import Gpu, Probe
from perfprobe.probes.gpumem import rules, tables
from perfprobe.probes.gpumem.figures import Raw
from perfprobe.probes.gpumem.plan import check_knobs


def judge(raw: Raw, host: Facts) -> Assessment:
    """The recorded numbers → findings, metrics, tables and curves."""
    return Assessment(summary=tables.summary(raw, host), metrics=tables.metrics(raw, host),
                      findings=tuple(rules.findings(raw, host)), tables=tables.tables(raw, host),
                      curves=tables.curves(raw), facts=tables.facts(raw, host),
                      key_figure=tables.key_figure(raw, host))


PROBE = Probe(name="gpumem", title="Inside the GPU: DRAM bandwidth, coalescing, banks, occupancy, tiling",
              judge=judge, measure_module="perfprobe.probes.gpumem.measure", requires=(Gpu(),),
              check_knobs=check_knobs)
