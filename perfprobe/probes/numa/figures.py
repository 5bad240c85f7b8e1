"""Pure readers of numa's raw numbers and of the distance table: what rules and tables both read.

The raw dict is measure()'s (or one recorded on another host); the TypedDicts name its shape.
Pairs are (CPU node, memory node). A remote/local ratio is only comparable when both pairs were
measured on the same working set: a capped node's smaller set hits cache more and reads faster.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, TypedDict, cast

from perfprobe.host.facts import Facts, NumaFacts, numa_nodes
from perfprobe.pure.stats import Stat

Pair = tuple[int, int]


class PairRecord(TypedDict, total=False):
    cpu_node: int
    mem_node: int
    working_set_bytes: int
    latency_ns: Stat
    read_gbs: Stat
    threads: int


class PageCheck(TypedDict, total=False):
    node: int
    checked: int
    on_node: int
    elsewhere: dict[str, int]
    absent: int
    method: str
    error: str
    checked_when: str


class Skipped(TypedDict):
    mem_node: int
    cpu_nodes: list[int]
    reason: str


class Sampling(TypedDict):
    pairs_total: int
    pairs_measured: int
    rule: Optional[str]


class NumaRaw(TypedDict, total=False):
    """measure()'s dict (`measured: False` with a `reason` when only the topology is shown)."""

    measured: bool
    reason: str
    bind: Optional[int]
    placement: dict[str, Any]
    cpu_nodes: list[int]
    mem_nodes: list[int]
    largest_cache_bytes: int
    sampling: Sampling
    method: dict[str, Any]
    pairs: list[PairRecord]
    pages: list[PageCheck]
    skipped: list[Skipped]
    notes: list[str]


def typed(raw: Mapping[str, Any]) -> NumaRaw:
    """The raw dict under its shape's name (no copy, no check: it is measure()'s or a recording)."""
    return cast(NumaRaw, raw)


def misplaced_nodes(raw: NumaRaw) -> list[int]:
    """Memory nodes whose checked pages were not all found on that node."""
    return [p["node"] for p in raw.get("pages", []) if p.get("on_node", 0) < p.get("checked", 0)]


def stat_of(pair: PairRecord, key: str) -> Stat:
    """The pair's "latency_ns" or "read_gbs" statistics (empty when not recorded)."""
    return cast(Stat, cast(Mapping[str, Any], pair).get(key) or {})


def pair_stats(raw: NumaRaw, key: str) -> dict[Pair, Stat]:
    """The repeats' statistics of `key` ("latency_ns" or "read_gbs") for every measured pair whose
    pages verified."""
    bad = set(misplaced_nodes(raw))
    found = {}
    for pair in raw.get("pairs", []):
        stat = stat_of(pair, key)
        if stat.get("median") is not None and pair["mem_node"] not in bad:
            found[(pair["cpu_node"], pair["mem_node"])] = stat
    return found


def pair_figures(raw: NumaRaw, key: str) -> dict[Pair, float]:
    """Median of `key` ("latency_ns" or "read_gbs") for every measured pair whose pages verified."""
    return {pair: float(stat["median"]) for pair, stat in pair_stats(raw, key).items()}


def working_sets(raw: NumaRaw) -> dict[Pair, int]:
    """The working set each pair was measured on (pairs recorded without one are left out)."""
    return {(p["cpu_node"], p["mem_node"]): int(size) for p in raw.get("pairs", [])
            if (size := p.get("working_set_bytes"))}


def unlike_pairs(raw: NumaRaw) -> dict[Pair, tuple[int, int]]:
    """Remote pairs measured on another working set than their local pair: (remote, local) bytes."""
    sizes = working_sets(raw)
    return {(i, j): (size, sizes[(i, i)]) for (i, j), size in sizes.items()
            if i != j and (i, i) in sizes and sizes[(i, i)] != size}


def remote_ratios(raw: NumaRaw) -> dict[Pair, float]:
    """Measured latency(i, j) / latency(i, i) for each remote pair whose local pair was measured."""
    latency = pair_figures(raw, "latency_ns")
    return {(i, j): v / latency[(i, i)] for (i, j), v in latency.items()
            if i != j and latency.get((i, i))}


def comparable_ratios(raw: NumaRaw) -> dict[Pair, float]:
    """remote_ratios of the pairs measured on the same working set as their local pair."""
    unlike = unlike_pairs(raw)
    return {pair: r for pair, r in remote_ratios(raw).items() if pair not in unlike}


def local_working_set(raw: NumaRaw, node: int) -> int | None:
    return working_sets(raw).get((node, node))


def numa_facts(host: Facts) -> NumaFacts:
    """The host's `numa` section (empty when the facts have none)."""
    return cast(NumaFacts, host.get("numa") or {})


def distance(host: Facts, i: int, j: int) -> int | None:
    """The distance table's entry for (i, j), or None when the table doesn't have it."""
    ids = [n.get("id") for n in numa_nodes(host)]
    rows = numa_facts(host).get("distances") or []
    try:
        value = rows[ids.index(i)][ids.index(j)]
    except (ValueError, IndexError, TypeError):
        return None
    return None if value is None else int(value)


def implied_ratio(host: Facts, i: int, j: int) -> float | None:
    """What the distance table implies for remote/local: distance(i, j) / distance(i, i)."""
    local, remote = distance(host, i, i), distance(host, i, j)
    return remote / local if local and remote else None


def mib(size: int) -> str:
    return f"{size >> 20} MiB"
