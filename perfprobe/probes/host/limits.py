"""The `host` probe's cgroup limits: CPU quota, throttling, memory limit, pids limit. Pure.

The limits are host facts (perfprobe.host.cgroup, read when the run starts); the throttling
counters are read again at the end of host's measure (`raw["cgroup_after"]`), so what was
throttled in between is said with both counts. A quota below the usable CPUs, and a memory limit
below the memory the host has available, are what every figure of the run is bounded by: warns.
"""

from __future__ import annotations

from perfprobe.engine.model import Cell, Finding, Metric, Table, Verdict
from perfprobe.host.facts import Facts, cgroup_facts, cpu_quota, memory_limit
from perfprobe.probes.host.figures import HostRaw, cpu_list, section
from perfprobe.pure.units import format_bytes

Raw = HostRaw
QUOTA_ADVICE = ("Raise or remove the quota where it is set (docker --cpus, Kubernetes resources.limits.cpu, "
                "systemd CPUQuota=, the job's cgroup), or run at most {threads} busy thread(s) so the quota "
                "is not throttled every period")
MEMORY_ADVICE = ("Raise the limit where it is set (docker --memory, Kubernetes resources.limits.memory, "
                 "systemd MemoryMax=, Slurm's ConstrainRAMSpace / --mem); perfprobe's memory budgets stay "
                 "below it")


def _cpus(value: float) -> str:
    return f"{value:g} CPU{'' if value == 1 else 's'}"


def quota_words(host: Facts) -> str:
    """'0.2 CPUs (cpu.cfs_quota_us 20000 / cfs_period_us 100000 on /job)', for findings and notes."""
    facts, quota = cgroup_facts(host), cpu_quota(host) or 0.0
    file = facts.get("cpu_quota_file")
    pair = (f"cpu.max {facts.get('cpu_quota_us')} {facts.get('cpu_period_us')}" if file == "cpu.max" else
            f"cpu.cfs_quota_us {facts.get('cpu_quota_us')} / cpu.cfs_period_us {facts.get('cpu_period_us')}")
    return f"{_cpus(quota)} ({pair} on {facts.get('cpu_quota_group') or '?'})"


def rule_cpu_quota(raw: Raw, host: Facts) -> list[Finding]:
    """A quota below the usable CPUs: the process sees N CPUs and is throttled once its threads use
    the quota's share of each period, so every many-thread figure is the quota's, not the CPUs'."""
    quota, usable = cpu_quota(host), _usable(host)
    if quota is None:
        return []
    if usable and quota < usable:
        return [Finding(Verdict.WARN, f"CPU quota of {quota_words(host)} is below the {usable} usable CPUs: "
                        f"threads beyond {_cpus(quota)} of work are throttled every period, and every "
                        "many-thread figure measures the quota, not the CPUs",
                        QUOTA_ADVICE.format(threads=max(1, int(quota))))]
    return [Finding(Verdict.PASS, f"CPU quota of {quota_words(host)}: not below the {usable} usable CPUs")]


def rule_throttling(raw: Raw, host: Facts) -> list[Finding]:
    """Throttled periods between the facts (run start) and the end of host's measure, with both counts."""
    before, after = cgroup_facts(host), raw.get("cgroup_after") or {}
    first, last = before.get("nr_throttled"), after.get("nr_throttled")
    if not isinstance(first, int) or not isinstance(last, int):
        if isinstance(first, int) and first > 0:
            return [Finding(Verdict.PASS, f"Throttled in {first} CPU period(s) before this run "
                            f"({_seconds(before.get('throttled_usec'))} in all, since the group was created)")]
        return []
    if last <= first:
        return []
    periods = _delta(after.get("nr_periods"), before.get("nr_periods"))
    spent = _delta(after.get("throttled_usec"), before.get("throttled_usec"))
    window = raw.get("window_s")
    during = f"during the run ({window:g} s of one busy thread)" if isinstance(window, (int, float)) else "during the run"
    of = f" of {periods}" if periods is not None else ""
    return [Finding(Verdict.PASS, f"Throttled {during}: in {last - first}{of} CPU period(s), nr_throttled "
                    f"{first} before and {last} after, {_seconds(spent)} throttled",
                    "The CPU quota was in force while measuring: timings of busy threads include the waits")]


def rule_memory_limit(raw: Raw, host: Facts) -> list[Finding]:
    """A memory limit below the host's available memory binds before the host does: the budgets
    (perfprobe.system.budget) stay under it, and programs that outgrow it are OOM-killed."""
    limit, facts = memory_limit(host), cgroup_facts(host)
    if limit is None:
        return []
    which = "memory.high" if limit == facts.get("memory_high_bytes") and limit != facts.get("memory_max_bytes") else (
        "memory.max" if facts.get("version") == 2 else "memory.limit_in_bytes")
    used = facts.get("memory_current_bytes")
    where = (f"{format_bytes(limit)} ({which} on {facts.get('memory_limit_group') or '?'}"
             f"{f', {format_bytes(used)} in use' if isinstance(used, int) else ''})")
    available = section(host, "memory").get("available_bytes")
    if isinstance(available, int) and limit < available:
        return [Finding(Verdict.WARN, f"Memory limit of {where} is below the {format_bytes(available)} the host "
                        "has available: this process is OOM-killed past it, and perfprobe's working sets are "
                        "capped by it", MEMORY_ADVICE)]
    return [Finding(Verdict.PASS, f"Memory limit of {where}: not below the memory the host has available")]


def rule_pids(raw: Raw, host: Facts) -> list[Finding]:
    """pids.max counts threads too: a limit without room for a thread per CPU fails thread pools."""
    facts, usable = cgroup_facts(host), _usable(host)
    limit, current = facts.get("pids_max"), facts.get("pids_current")
    if not isinstance(limit, int):
        return []
    room = limit - current if isinstance(current, int) else None
    text = f"pids limit {limit}" + (f" ({current} in use)" if isinstance(current, int) else "")
    if room is not None and room < usable:
        return [Finding(Verdict.WARN, f"{text}: too few left for a thread per usable CPU ({usable})",
                        "Raise pids.max (docker --pids-limit, systemd TasksMax=, Kubernetes podPidsLimit)")]
    return [Finding(Verdict.PASS, f"{text}: threads and processes count against it")]


RULES = (rule_cpu_quota, rule_memory_limit, rule_throttling, rule_pids)


def metrics(host: Facts) -> dict[str, Metric]:
    """The limits that are set, under their JSON names (cgroup.cpu_quota_cpus, cgroup.memory_limit_bytes)."""
    found = {}
    quota, limit = cpu_quota(host), memory_limit(host)
    if quota is not None:
        found["cgroup.cpu_quota_cpus"] = Metric(quota, "CPUs")
    if limit is not None:
        found["cgroup.memory_limit_bytes"] = Metric(limit, "bytes")
    return found


def limits_table(host: Facts) -> Table | None:
    """The cgroup limits, or None when no cgroup could be read."""
    facts = cgroup_facts(host)
    if not facts or facts.get("version") is None:
        return None
    quota = cpu_quota(host)
    rows: list[tuple[Cell, ...]] = [
        ("cgroup version", facts.get("version")),
        ("CPU group", facts.get("cpu_group")),
        ("CPU quota", quota_words(host) if quota is not None else "none"),
        ("CPU periods / throttled / time", f"{_known(facts.get('nr_periods'))} / {_known(facts.get('nr_throttled'))}"
                                           f" / {_seconds(facts.get('throttled_usec'))}"),
        ("memory group", facts.get("memory_group")),
        ("memory max / high", f"{_bytes(facts.get('memory_max_bytes'))} / {_bytes(facts.get('memory_high_bytes'))}"),
        ("memory in use (limiting group)", _bytes(facts.get("memory_current_bytes"), "unknown")),
        ("pids max / current", f"{_known(facts.get('pids_max'), 'none')} / {_known(facts.get('pids_current'))}"),
    ]
    return Table("cgroup limits", ("limit", "value"), tuple(rows))


def _usable(host: Facts) -> int:
    return len(cpu_list(host, "usable") or cpu_list(host, "online"))


def _delta(after: object, before: object) -> int | None:
    return after - before if isinstance(after, int) and isinstance(before, int) else None


def _seconds(usec: object) -> str:
    return f"{usec / 1e6:.3g} s" if isinstance(usec, int) else "unknown"


def _bytes(value: object, none: str = "none") -> str:
    return format_bytes(value) if isinstance(value, int) else none


def _known(value: object, none: str = "unknown") -> str:
    return none if value is None else str(value)
