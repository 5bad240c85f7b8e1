"""How disturbed a run was: the CPU time the hypervisor stole and other processes used during it
(/proc/stat's aggregate `cpu` line), read through the root-aware reader so tests point it at
captured trees. Reading measures nothing and never raises: None where unreadable."""

from __future__ import annotations

import os
from dataclasses import dataclass

from perfprobe.host.sysroot import SysRoot

STEAL_COLUMN = 7
"""/proc/stat `cpu  user nice system idle iowait irq softirq steal guest guest_nice` (0-based after
the label): steal is the eighth number."""


IDLE_COLUMNS = (3, 4)
"""idle and iowait: the ticks no process used."""


@dataclass(frozen=True)
class CpuTimes:
    """The aggregate `cpu` line's ticks: all of them (guest time is inside user), the busy ones
    (all but idle and iowait, steal included) and steal."""

    total: int
    busy: int
    steal: int


def cpu_times(sr: SysRoot) -> CpuTimes | None:
    """The aggregate CPU ticks of /proc/stat, or None."""
    for line in sr.read_lines("proc/stat"):
        words = line.split()
        if words and words[0] == "cpu":
            try:
                ticks = [int(w) for w in words[1:9]]
            except ValueError:
                return None
            ticks += [0] * (8 - len(ticks))
            idle = sum(ticks[i] for i in IDLE_COLUMNS)
            return CpuTimes(total=sum(ticks), busy=sum(ticks) - idle - ticks[STEAL_COLUMN],
                            steal=ticks[STEAL_COLUMN])
    return None


def steal_fraction(before: CpuTimes | None, after: CpuTimes | None) -> float | None:
    """The fraction of CPU time stolen between two readings (None when either is missing or no time passed)."""
    if before is None or after is None or after.total <= before.total:
        return None
    return max(0, after.steal - before.steal) / (after.total - before.total)


def others_fraction(before: CpuTimes | None, after: CpuTimes | None, own_cpu_s: float,
                    ticks_per_s: float) -> float | None:
    """The fraction of the host's CPU time that other processes used between two readings: busy
    ticks less this process's own CPU time (its threads and reaped children), over all ticks."""
    if before is None or after is None or after.total <= before.total or ticks_per_s <= 0:
        return None
    busy_s = (after.busy - before.busy) / ticks_per_s
    return max(0.0, busy_s - own_cpu_s) / ((after.total - before.total) / ticks_per_s)


def own_cpu_s() -> float:
    """This process's CPU time, its threads and reaped children included (ipc's worker processes,
    the health check's measuring child once it is waited for)."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def _ticks_per_s() -> float:
    try:
        return float(os.sysconf("SC_CLK_TCK"))
    except (ValueError, OSError):
        return 100.0


@dataclass(frozen=True)
class LoadWatch:
    """The host's CPU ticks and this process's CPU time at a start: at `fractions()`, how much of
    the host's CPU time the hypervisor stole and other processes used since then (this host's own
    /proc/stat: a live run's, never a captured tree's)."""

    ticks: CpuTimes | None
    own_s: float

    @classmethod
    def start(cls) -> "LoadWatch":
        return cls(cpu_times(SysRoot(None)), own_cpu_s())

    def fractions(self) -> tuple[float | None, float | None]:
        """(steal, others) since the start, each None when /proc/stat could not tell."""
        after = cpu_times(SysRoot(None))
        return (steal_fraction(self.ticks, after),
                others_fraction(self.ticks, after, own_cpu_s() - self.own_s, _ticks_per_s()))
