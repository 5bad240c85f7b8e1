"""Pure readers of alloc's raw numbers: what rules and tables both read."""

from __future__ import annotations

from typing import Any, Callable, Literal, Mapping, Optional, TypedDict, cast

from perfprobe.pure.stats import Stat

Scope = Literal["1t", "all"]
SCOPES: tuple[Scope, ...] = ("1t", "all")
"""One thread alone, or one pinned thread per usable CPU at once."""


class Threaded(TypedDict, total=False):
    """One pattern timed on one thread or on every CPU at once (measure.threaded): ns per op per
    thread over the repeats, how many runs stayed disturbed after the retries, ops per run."""

    ns_per_op: Stat
    disturbed_runs: int
    iterations: int


Point = TypedDict("Point", {"1t": Threaded, "all": Threaded})
"""One pattern (a size's malloc+free pairs, or the mixed working set) by scope."""


class Section(TypedDict):
    """An allocator's or the pool's patterns: pairs by size (bytes, as text) and the mixed set."""

    pairs: dict[str, Point]
    mixed: Point


class Allocator(Section, total=False):
    path: str
    """The library that served malloc (the process's own, or the one preloaded in a child)."""


class Pool(Section, total=False):
    blocks: int


class LookedFor(TypedDict, total=False):
    """An allocator library looked for (system.find_allocators): its sonames, the file found, and
    why a found one could not be measured."""

    name: str
    looked_for: list[str]
    found: Optional[str]
    error: Optional[str]


class Huge(TypedDict, total=False):
    """2 MiB pages under MADV_HUGEPAGE, or why not (THP 'never')."""

    available: bool
    reason: str
    ns_per_2m: Stat
    huge_fraction: float


class Populate(TypedDict):
    mmap_ns_per_4k: Stat
    touch_ns_per_4k: Stat


class PopulateWrite(TypedDict, total=False):
    available: bool
    reason: str
    ns_per_4k: Stat


class FaultThreads(TypedDict):
    threads: int
    ns_per_4k_per_thread: Stat
    wall_ns_per_4k: Stat


class Mlock(TypedDict, total=False):
    """mlock of fresh and of touched memory within RLIMIT_MEMLOCK, or why not."""

    available: bool
    reason: str
    bytes: int
    limit_bytes: Optional[int]
    fresh_ns_per_4k: Stat
    touched_ns_per_4k: Stat


class FirstTouch(TypedDict, total=False):
    """pages.first_touch: the cost of fresh pages, lazy and every other way, per 4 KiB page."""

    bytes: int
    pages_4k: int
    thp: Optional[str]
    lazy_ns_per_4k: Stat
    reuse_ns_per_4k: Stat
    nodes: list[int]
    huge: Huge
    populate: Populate
    populate_write: PopulateWrite
    threads: FaultThreads
    mlock: Mlock
    capped_by: Optional[str]


class Level(TypedDict, total=False):
    """memcpy at one cache level's size (or DRAM): GB/s over the repeats of `reps` copies."""

    name: str
    bytes: int
    capped_by: Optional[str]
    reps: int
    gbs: Stat


class Tensor(TypedDict):
    bytes: int
    ms: Stat


class Copies(TypedDict):
    levels: list[Level]
    tensor: Tensor
    move_ns: Stat


class Mixed(TypedDict):
    slots: int
    min_bytes: int
    max_bytes: int


class HostBudget(TypedDict):
    bytes: int
    basis: str


class AllocRaw(TypedDict, total=False):
    """What measure() returns (docs/probes/alloc.md)."""

    method: str
    quick: bool
    bind: Optional[int]
    repeats: int
    threads: int
    cpus: list[int]
    sizes_bytes: list[int]
    mixed: Mixed
    looked_for: list[LookedFor]
    budget: HostBudget
    allocators: dict[str, Allocator]
    """The process's own ("system") first, then each other library measured."""
    pool: Pool
    first_touch: FirstTouch
    copy: Copies


Raw = AllocRaw
SYSTEM = "system"
HUGE_PER_4K = 512          # 4 KiB pages in a 2 MiB huge page


def typed(raw: Mapping[str, Any]) -> AllocRaw:
    """The raw dict under its shape's name (no copy, no check: it is measure()'s or a recording)."""
    return cast(AllocRaw, raw)


def _median(stat: Optional[Stat]) -> Optional[float]:
    return None if not stat else float(stat["median"])


def _ratio(a: Optional[float], b: Optional[float]) -> Optional[float]:
    return a / b if a is not None and b else None


def sizes(raw: Raw) -> list[int]:
    return [int(s) for s in raw["sizes_bytes"]]


def threads(raw: Raw) -> int:
    return int(raw["threads"])


def allocators(raw: Raw) -> list[str]:
    """The measured allocators, the process's own first."""
    return list(raw["allocators"])


def _stat(stat: Optional[Stat]) -> Optional[Stat]:
    return stat if stat else None


def _point_stat(section: Section, key: str, scope: Scope) -> Optional[Stat]:
    entry = section["mixed"] if key == "mixed" else section["pairs"].get(key)
    return None if not entry else _stat(entry[scope]["ns_per_op"])


def malloc_stat(raw: Raw, key: str, scope: Scope, name: str = SYSTEM) -> Optional[Stat]:
    """The repeats of ns per malloc+free pair (key: a size in bytes as text, or "mixed"); scope "1t" or "all"."""
    section = raw["allocators"].get(name)
    return None if section is None else _point_stat(section, key, scope)


def pool_stat(raw: Raw, key: str, scope: Scope) -> Optional[Stat]:
    return _point_stat(raw["pool"], key, scope)


def malloc_ns(raw: Raw, key: str, scope: Scope, name: str = SYSTEM) -> Optional[float]:
    """ns per malloc+free pair (key: a size in bytes as text, or "mixed"); scope "1t" or "all"."""
    return _median(malloc_stat(raw, key, scope, name))


def pool_ns(raw: Raw, key: str, scope: Scope) -> Optional[float]:
    return _median(pool_stat(raw, key, scope))


def pool_speedup(raw: Raw, key: str, scope: Scope) -> Optional[float]:
    """The process's malloc+free over the pool's pop+push, same pattern and threads."""
    return _ratio(malloc_ns(raw, key, scope), pool_ns(raw, key, scope))


def contention(raw: Raw, key: str, name: str = SYSTEM) -> Optional[float]:
    """ns per op with every CPU allocating at once over one thread alone (1 = scales perfectly)."""
    return _ratio(malloc_ns(raw, key, "all", name), malloc_ns(raw, key, "1t", name))


def best_allocator(raw: Raw, key: str = "mixed", scope: Scope = "all") -> tuple[str, Optional[float]]:
    """The fastest measured allocator for `key` under `scope`, and its ns per op."""
    figures = [(malloc_ns(raw, key, scope, n), n) for n in allocators(raw)]
    known = [(v, n) for v, n in figures if v is not None]
    if not known:
        return SYSTEM, None
    value, name = min(known)
    return name, value


def looked_for(raw: Raw) -> list[LookedFor]:
    return list(raw.get("looked_for") or [])


def disturbed_fraction(raw: Raw) -> float:
    """Share of all-thread runs in which a thread was preempted or the threads did not overlap."""
    bad = total = 0
    sections: list[Section] = [raw["pool"], *raw["allocators"].values()]
    for section in sections:
        for entry in [*section["pairs"].values(), section["mixed"]]:
            point = entry["all"]
            bad += int(point.get("disturbed_runs", 0))
            total += int(point["ns_per_op"]["repeats"])
    return bad / total if total else 0.0


# --- first touch ---

def touch(raw: Raw) -> FirstTouch:
    return raw["first_touch"]


def _available(section: PopulateWrite | Mlock, stat: Optional[Stat]) -> Optional[Stat]:
    """`stat` where the section says its case could be measured here."""
    return _stat(stat) if section.get("available") else None


TOUCH_STATS: dict[str, Callable[[FirstTouch], Optional[Stat]]] = {
    # metric -> the repeats behind it in raw["first_touch"]
    "first_touch_ns.4K": lambda t: _stat(t.get("lazy_ns_per_4k")),
    "first_touch_ns.2M": lambda t: _stat(t["huge"].get("ns_per_2m")),
    "reuse_ns.4K": lambda t: _stat(t.get("reuse_ns_per_4k")),
    "populate_ns.4K": lambda t: _stat(t["populate"].get("mmap_ns_per_4k")),
    "populate_write_ns.4K": lambda t: _available(t["populate_write"], t["populate_write"].get("ns_per_4k")),
    "first_touch_ns.all.4K": lambda t: _stat(t["threads"].get("ns_per_4k_per_thread")),
    "mlock_ns.4K": lambda t: _available(t["mlock"], t["mlock"].get("fresh_ns_per_4k")),
    "mlock_added_ns.4K": lambda t: _available(t["mlock"], t["mlock"].get("touched_ns_per_4k")),
}


def touch_stat(raw: Raw, name: str) -> Optional[Stat]:
    """The repeats behind one first-touch metric (TOUCH_STATS), None where that case was not
    measured (no huge pages, no MADV_POPULATE_WRITE, mlock refused)."""
    return TOUCH_STATS[name](touch(raw))


def first_touch_4k(raw: Raw) -> float:
    return float(touch(raw)["lazy_ns_per_4k"]["median"])


def reuse_4k(raw: Raw) -> float:
    return float(touch(raw)["reuse_ns_per_4k"]["median"])


def first_touch_over_reuse(raw: Raw) -> Optional[float]:
    return _ratio(first_touch_4k(raw), reuse_4k(raw))


def huge_available(raw: Raw) -> bool:
    return bool(touch(raw)["huge"].get("available"))


def first_touch_2m(raw: Raw) -> Optional[float]:
    return _median(touch(raw)["huge"].get("ns_per_2m"))


def huge_fraction(raw: Raw) -> Optional[float]:
    value = touch(raw)["huge"].get("huge_fraction")
    return None if value is None else float(value)


def huge_factor(raw: Raw) -> Optional[float]:
    """512 first touches of 4 KiB pages over one of a 2 MiB huge page (same bytes)."""
    return _ratio(first_touch_4k(raw) * HUGE_PER_4K, first_touch_2m(raw))


def populate_4k(raw: Raw) -> float:
    """What the MAP_POPULATE mmap call costs per 4 KiB page (the faults moved out of the loop)."""
    return float(touch(raw)["populate"]["mmap_ns_per_4k"]["median"])


def prefaulted_touch_4k(raw: Raw) -> float:
    return float(touch(raw)["populate"]["touch_ns_per_4k"]["median"])


def prefault_speedup(raw: Raw) -> Optional[float]:
    """The first pass over fresh memory, lazy, over the same pass after MAP_POPULATE."""
    return _ratio(first_touch_4k(raw), prefaulted_touch_4k(raw))


def populate_write_4k(raw: Raw) -> Optional[float]:
    entry = touch(raw)["populate_write"]
    return _median(entry.get("ns_per_4k")) if entry.get("available") else None


def fault_threads(raw: Raw) -> int:
    return int(touch(raw)["threads"]["threads"])


def first_touch_all_4k(raw: Raw) -> float:
    """ns per page per thread while every CPU faults its own slice of one mapping."""
    return float(touch(raw)["threads"]["ns_per_4k_per_thread"]["median"])


def fault_scaling(raw: Raw) -> Optional[float]:
    """Pages per second from every CPU over threads x one thread's (1 = faults scale perfectly)."""
    wall = _median(touch(raw)["threads"]["wall_ns_per_4k"])
    return _ratio(first_touch_4k(raw), None if wall is None else wall * fault_threads(raw))


def mlock(raw: Raw) -> Mlock:
    return touch(raw)["mlock"]


def mlock_fresh_4k(raw: Raw) -> Optional[float]:
    return _median(mlock(raw).get("fresh_ns_per_4k")) if mlock(raw).get("available") else None


def mlock_added_4k(raw: Raw) -> Optional[float]:
    """mlock of memory already touched: what pinning alone adds per page."""
    return _median(mlock(raw).get("touched_ns_per_4k")) if mlock(raw).get("available") else None


def page_nodes(raw: Raw) -> list[int]:
    return [int(n) for n in touch(raw).get("nodes") or []]


# --- copy against move ---

def copy_levels(raw: Raw) -> list[Level]:
    return list(raw["copy"]["levels"])


def copy_stat(raw: Raw, what: str) -> Stat:
    """The repeats of the tensor copy ("ms") or of the move ("move_ns")."""
    return raw["copy"]["tensor"]["ms"] if what == "ms" else raw["copy"]["move_ns"]


def memcpy_gbs(raw: Raw, level: str) -> Optional[float]:
    for lv in copy_levels(raw):
        if lv["name"] == level:
            return float(lv["gbs"]["median"])
    return None


def tensor_bytes(raw: Raw) -> int:
    return int(raw["copy"]["tensor"]["bytes"])


def copy_ms(raw: Raw) -> float:
    return float(raw["copy"]["tensor"]["ms"]["median"])


def move_ns(raw: Raw) -> float:
    return float(raw["copy"]["move_ns"]["median"])


def copy_over_move(raw: Raw) -> Optional[float]:
    return _ratio(copy_ms(raw) * 1e6, move_ns(raw))


def capped(raw: Raw) -> list[tuple[str, int, str]]:
    """(what, bytes, basis) of every buffer the budget or --size made smaller than planned."""
    out = [(f"memcpy {lv['name']}", int(lv["bytes"]), str(lv["capped_by"])) for lv in copy_levels(raw)
           if lv.get("capped_by")]
    if touch(raw).get("capped_by"):
        out.append(("first-touch buffer", int(touch(raw)["bytes"]), str(touch(raw)["capped_by"])))
    return out


def raw_path(raw: Raw, name: str) -> str:
    return str(raw["allocators"][name].get("path") or name)
