"""`perfprobe alloc`: what allocation, first touch and copies cost here, and what a pool buys.

measure.py times malloc+free pairs (per size and a mixed working set) of the process's allocator
and of every other allocator library found (jemalloc, tcmalloc, mimalloc), on one thread and on
every usable CPU; the same patterns from a free-list pool; the fault-in cost of fresh 4 KiB and
2 MiB pages (lazy, pre-faulted, all threads, mlock, reused); memcpy by cache level against a move.
rules.py and tables.py judge the numbers (pure).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from perfprobe.engine.config import RunConfig
from perfprobe.engine.model import Assessment
from perfprobe.engine.probe import Probe, PythonModule
from perfprobe.engine.stability import NotBelow
from perfprobe.errors import UsageError
from perfprobe.host.facts import Facts
from perfprobe.probes.alloc import rules, tables
from perfprobe.probes.alloc.declared import DECLARED
from perfprobe.probes.alloc.figures import typed
from perfprobe.probes.alloc.plan import SIZES


def judge(recorded: Mapping[str, Any], host: Facts) -> Assessment:
    """Findings, metrics and tables from the recorded numbers."""
    raw = typed(recorded)
    return Assessment(summary=tables.summary(raw), metrics=tables.metrics(raw), findings=rules.findings(raw, host),
                      tables=tables.tables(raw), facts=tables.facts(raw), key_figure=tables.key_figure(raw))


def check_knobs(config: RunConfig, host: Facts) -> None:
    """An --allocator that is not a file is exit 2 before anything runs."""
    for path in config.options.allocators or ():
        if not Path(path).is_file():
            raise UsageError(f"--allocator {path}: no such file; give a shared library exporting malloc and free")


RELATIONS = (
    NotBelow("malloc_ns.{}", "pool_ns.{}", 1.0, "malloc+free cheaper than a free-list pool's pop+push, a part of "
             "what any allocator does", each=tuple(f"{scope}.{size}" for scope in ("1t", "all")
                                                   for size in (*(f"{s}B" for s in SIZES), "mixed"))),
    NotBelow("first_touch_ns.4K", "reuse_ns.4K", 1.0, "a first touch (fault and zeroing) cheaper than touching "
             "a page already mapped"),
    NotBelow("first_touch_ns.all.4K", "first_touch_ns.4K", 0.8, "page faults from every CPU at once cheaper "
             "per thread than from one thread alone, though they share the process's page tables"),
    NotBelow("mlock_ns.4K", "mlock_added_ns.4K", 1.0, "mlock of fresh memory (faults and pins) cheaper than mlock "
             "of memory already touched (pins only)"),
)

SPREAD_BOUND = 0.25
"""The ~20 ns touch of a mapped page runs at about 9 or 22 ns from one run to the next: its repeats'
MAD reached 16% of the median in a quiet full run on the H200 guest (26% over --quick's three, too
few to judge: stability.MIN_REPEATS)."""

PROBE = Probe(name=DECLARED.name, title="Allocation: malloc/free per allocator, pools, first touch, copy against move",
              judge=judge, measure_module="perfprobe.probes.alloc.measure",
              requires=(PythonModule("numba", "pip install numba"),), check_knobs=check_knobs,
              relations=RELATIONS, spread_bound=SPREAD_BOUND)
