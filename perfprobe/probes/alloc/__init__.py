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

from perfprobe.config import RunConfig, UsageError
from perfprobe.host.facts import Facts
from perfprobe.model import Assessment
from perfprobe.probe import Probe, PythonModule
from perfprobe.probes.alloc import rules, tables


def judge(raw: Mapping[str, Any], host: Facts) -> Assessment:
    """Findings, metrics and tables from the recorded numbers."""
    return Assessment(summary=tables.summary(raw), metrics=tables.metrics(raw), findings=rules.findings(raw, host),
                      tables=tables.tables(raw), facts=tables.facts(raw), key_figure=tables.key_figure(raw))


def check_knobs(config: RunConfig, host: Facts) -> None:
    """An --allocator that is not a file is exit 2 before anything runs."""
    for path in config.options.allocators or ():
        if not Path(path).is_file():
            raise UsageError(f"--allocator {path}: no such file; give a shared library exporting malloc and free")


PROBE = Probe(name="alloc", title="Allocation: malloc/free per allocator, pools, first touch, copy against move",
              judge=judge, measure_module="perfprobe.probes.alloc.measure",
              requires=(PythonModule("numba", "pip install numba"),), check_knobs=check_knobs)
