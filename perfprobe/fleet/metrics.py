"""What a metric means for comparison: which way is better, and whether it is a key figure.

Pure tables keyed by metric name patterns (fnmatch on "probe:metric"; a GPU probe's "[N]" is taken
off first). A probe added later needs no entry: its timings and rates are read by unit. No noise
band is kept here: the noise of a figure comes from its own samples (compare.py) and from a
baseline's spread across hosts.
"""

from __future__ import annotations

import re
from fnmatch import fnmatchcase

HIGHER_UNITS = {"GB/s", "GiB/s", "MB/s", "Gops/s", "ops/s", "msg/s"}
LOWER_UNITS = {"ns", "us", "µs", "ms", "s", "ms/GiB", "ns/op"}
RATIO_HIGHER = ("*efficiency*", "*fraction*", "*speedup*")
RATIO_LOWER = ("*slowdown*", "*remote_over_local*", "*host_over_device*")

# Key figures: what `compare` judges by default, `fleet` looks for outliers in and the health check
# drains on (the rest is judged by `compare --all`). Host facts that are counts are compared as
# facts. Timings are: cache latency per level, DRAM read on one and all threads, false sharing's
# atomic update at 64 B, NUMA latency and read per node pair, pinned H2D and D2H, the GPU's DRAM
# read. Each of these keeps at least five repeats in --quick (their docs pages say so), enough for
# a Mann-Whitney test to reach significance.
KEY_METRICS = (
    "host:cpus.online", "host:cpus.usable", "host:memory.total_bytes", "host:gpus", "host:numa.nodes",
    "cache:latency_ns.L?", "cache:latency_ns.DRAM",
    "cache:read_gbs.DRAM.1t", "cache:read_gbs.DRAM.all",
    "falseshare:ns_per_update.atomic.64B", "falseshare:recommended_padding_bytes",
    "numa:latency_ns.*", "numa:read_gbs.*",
    "pinned:pinned.h2d_gbs", "pinned:pinned.d2h_gbs", "pinned:link.rate_gbs",
    "gpumem:dram_gbs.read",
)
KNOWN_PROBES = {pattern.split(":")[0] for pattern in KEY_METRICS} | {
    "layout", "branch", "alloc", "ipc", "streams", "uvm", "p2p"}
"""Probes whose key figures are listed above (none, for some): a probe not known here yet has its
every rate and timing taken for a key figure until it is listed."""
_DEVICE = re.compile(r"\[\d+\]:")


def generic(key: str) -> str:
    """'pinned[0]:pinned.h2d_gbs' -> 'pinned:pinned.h2d_gbs'."""
    return _DEVICE.sub(":", key, count=1)


def better(key: str, unit: str) -> str | None:
    """'higher', 'lower', or None where the number is a fact rather than a speed (counts, bytes)."""
    if unit in HIGHER_UNITS:
        return "higher"
    if unit in LOWER_UNITS:
        return "lower"
    if unit == "ratio":
        name = generic(key)
        if any(fnmatchcase(name, p) for p in RATIO_HIGHER):
            return "higher"
        if any(fnmatchcase(name, p) for p in RATIO_LOWER):
            return "lower"
    return None


def is_key(key: str, unit: str, patterns: tuple[str, ...] | None = None) -> bool:
    """A key figure: one of `patterns` when given; else listed above, or any rate or timing of a
    probe this table does not know yet."""
    name = generic(key)
    if any(fnmatchcase(name, p) for p in (patterns or KEY_METRICS)):
        return True
    return patterns is None and name.split(":")[0] not in KNOWN_PROBES and better(key, unit) is not None
