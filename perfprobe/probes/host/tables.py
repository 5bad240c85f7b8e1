"""The `host` probe's metrics, summary and tables: host facts laid out for people. Pure."""

from __future__ import annotations

from perfprobe.engine.model import Cell, Metric, Table
from perfprobe.host.facts import Facts, PcieFacts, caches_of, memory_value
from perfprobe.host.parse import format_cpulist
from perfprobe.probes.host import limits
from perfprobe.probes.host.figures import cpu, cpu_list, cpus, distances, gpus, nodes, pcie, section
from perfprobe.pure.units import format_bytes

_CACHE_SUFFIX = {"Data": "d", "Instruction": "i", "Unified": ""}


def metrics(host: Facts) -> dict[str, Metric]:
    """Counts and cache sizes under their JSON names (cpus.online, cache_bytes.L1d, ...)."""
    facts = cpu(host)
    found = {
        "cpus.online": Metric(len(cpu_list(host, "online")), "count"),
        "cpus.offline": Metric(len(cpu_list(host, "offline")), "count"),
        "cpus.usable": Metric(len(cpu_list(host, "usable")), "count"),
        "cpu.sockets": Metric(facts.get("sockets"), "count"),
        "cpu.cores": Metric(len(cpus(host).get("cores") or []), "count"),
        "cpu.threads_per_core": Metric(facts.get("threads_per_core"), "count"),
        "numa.nodes": Metric(len(nodes(host)), "count"),
        "memory.total_bytes": Metric(memory_value(host, "total_bytes"), "bytes"),
        "memory.available_bytes": Metric(memory_value(host, "available_bytes"), "bytes"),
        "gpus": Metric(len(gpus(host)), "count"),
        **limits.metrics(host),
    }
    for cache in caches_of(host):
        name = f"L{cache.get('level')}{_CACHE_SUFFIX.get(cache.get('type') or '', '')}"
        found.setdefault(f"cache_bytes.{name}", Metric(cache.get("size_bytes"), "bytes"))
    return found


def summary(host: Facts) -> str:
    facts = cpu(host)
    where = f"captured tree {host.get('root')}" if host.get("source") == "fsroot" else "this host"
    shape = " × ".join((_count(facts.get("sockets"), "socket"), _count(facts.get("cores_per_socket"), "core"),
                        _count(facts.get("threads_per_core"), "thread")))
    return (f"{where}: {facts.get('model') or 'unknown CPU'}, {_count(len(cpu_list(host, 'online')), 'online CPU')} "
            f"({shape}), {_count(len(nodes(host)), 'NUMA node')}, {_count(len(gpus(host)), 'GPU')}")


def _count(number: int | None, unit: str) -> str:
    """3 -> "3 sockets", 1 -> "1 socket", None -> "? sockets"."""
    return f"{'?' if number is None else number} {unit}{'' if number == 1 else 's'}"


def key_figure(host: Facts) -> str:
    return (f"{len(cpu_list(host, 'usable'))}/{len(cpu_list(host, 'online'))} CPUs, {len(nodes(host))} node(s), "
            f"{len(gpus(host))} GPU(s)")


def _size(value: int | None) -> str | None:
    return None if value is None else format_bytes(value)


def _cpus(listed: list[int] | None) -> str:
    return format_cpulist(listed or []) or "none"


def cpu_table(host: Facts) -> Table:
    facts, listed = cpu(host), cpus(host)
    memory, thp, huge = section(host, "memory"), section(host, "thp"), section(host, "hugepages")
    freq, lock = section(host, "cpufreq"), section(host, "memlock")
    rows: list[tuple[Cell, ...]] = [
        ("CPU model", facts.get("model")), ("vendor", facts.get("vendor")),
        ("sockets × cores × threads", f"{_known(facts.get('sockets'))} × {_known(facts.get('cores_per_socket'))}"
                                      f" × {_known(facts.get('threads_per_core'))}"),
        ("online CPUs", _cpus(listed.get("online"))), ("offline CPUs", _cpus(listed.get("offline"))),
        ("usable CPUs", f"{_cpus(listed.get('usable'))} ({_known(listed.get('usable_source'))})"),
        ("memory total / available", f"{_known(_size(memory.get('total_bytes')))} / "
                                     f"{_known(_size(memory.get('available_bytes')))}"),
        ("kernel", host.get("kernel")),
        ("cpufreq governor / driver", f"{freq.get('governor') or 'not exposed'} / {_known(freq.get('driver'))}"),
        ("transparent huge pages", f"{_known(thp.get('enabled'))} (defrag {_known(thp.get('defrag'))})"),
        ("huge pages (size, reserved, free)", f"{_known(_size(huge.get('size_bytes')))}, "
                                              f"{_known(huge.get('total'))}, {_known(huge.get('free'))}"),
        ("memlock soft / hard", f"{_limit(lock.get('soft_bytes'))} / {_limit(lock.get('hard_bytes'))}"),
    ]
    return Table("CPU and set-up", ("fact", "value"), tuple(rows))


def _known(value: object) -> str:
    """A fact inside a sentence: "unknown" (the renderer's word for a None cell) when unread."""
    return "unknown" if value is None or value == "" else str(value)


def _limit(value: int | None) -> str:
    return "unlimited or unknown" if value is None else format_bytes(value)


def cache_table(host: Facts) -> Table:
    rows = tuple((f"L{c.get('level')}", c.get("type"), _size(c.get("size_bytes")), c.get("line_bytes"),
                  c.get("ways"), _cpus(c.get("shared_cpus")), c.get("instances"))
                 for c in caches_of(host))
    return Table("Caches (as seen from the first online CPU)",
                 ("level", "type", "size", "line B", "ways", "shared by CPUs", "instances"), rows)


def node_table(host: Facts) -> Table:
    rows = tuple((f"node {n.get('id')}", _cpus(n.get("cpus")), _size(n.get("memory_total_bytes")),
                  _size(n.get("memory_free_bytes")))
                 for n in nodes(host))
    return Table("NUMA nodes", ("node", "CPUs", "memory", "free"), rows)


def distance_table(host: Facts) -> Table:
    ids = [n.get("id") for n in nodes(host)]
    rows = tuple((f"node {node}", *row) for node, row in zip(ids, distances(host)))
    return Table("NUMA distances (10 = local)", ("from \\ to", *(str(i) for i in ids)), rows, heat="row")


def gpu_table(host: Facts) -> Table:
    rows = tuple((g.get("index"), g.get("name"), g.get("pci_bus_id"),
                  _node(g.get("numa_node"), g.get("numa_node_source")), _link(pcie(g), "current"),
                  _link(pcie(g), "max"), _size(g.get("memory_total_bytes")), g.get("driver_version"))
                 for g in gpus(host))
    return Table("GPUs", ("GPU", "name", "PCI bus", "NUMA node", "link now", "link max", "memory",
                          "driver"), rows)


def _node(node: int | None, source: str | None) -> str:
    return "unknown" if node is None else f"{node} ({source})"


def _link(link: PcieFacts, which: str) -> str | None:
    gen = link.get("gen_current" if which == "current" else "gen_max")
    width = link.get("width_current" if which == "current" else "width_max")
    if gen is None and width is None:
        return None
    return f"Gen{gen or '?'} x{width or '?'}"


def host_tables(host: Facts) -> tuple[Table, ...]:
    """Every table; the GPU table only when there are GPUs, distances only with several nodes."""
    tables = [cpu_table(host), cache_table(host), node_table(host)]
    cgroup = limits.limits_table(host)
    if cgroup is not None:
        tables.insert(1, cgroup)
    if len(nodes(host)) > 1:
        tables.append(distance_table(host))
    if gpus(host):
        tables.append(gpu_table(host))
    return tuple(tables)
