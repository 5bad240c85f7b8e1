"""How busy the host was with other work while the cache probe measured.

On a shared box another job's threads take cache, memory bandwidth and the CPUs a parallel region
waits for; the probe's figures are then this host's under that load. /proc/stat gives the CPU time
all processes used, getrusage this process's: the difference is everyone else's.
"""

from __future__ import annotations

import os
import resource
import time
from pathlib import Path


class BackgroundMeter:
    """Start at construction; `share()` is other processes' CPU time since then, in CPUs."""

    def __init__(self, stat: Path = Path("/proc/stat")) -> None:
        self._stat = stat
        self._wall = time.perf_counter()
        self._busy = _busy_seconds(stat)
        self._own = _own_seconds()

    def share(self) -> float | None:
        """Average number of CPUs kept busy by other processes (None when /proc/stat is unreadable)."""
        busy = _busy_seconds(self._stat)
        wall = time.perf_counter() - self._wall
        if busy is None or self._busy is None or wall <= 0:
            return None
        others = (busy - self._busy) - (_own_seconds() - self._own)
        return round(max(others, 0.0) / wall, 2)


def _own_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _busy_seconds(stat: Path) -> float | None:
    """CPU seconds spent busy (user, nice, system, irq, softirq, steal) by all CPUs so far."""
    try:
        first = stat.read_text().splitlines()[0].split()
    except (OSError, IndexError):
        return None
    if first[0] != "cpu" or len(first) < 8:
        return None
    user, nice, system, _idle, _iowait, irq, softirq = (int(v) for v in first[1:8])
    steal = int(first[8]) if len(first) > 8 else 0
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")
