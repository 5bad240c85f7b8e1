"""Pure readers of alloc's raw numbers: what rules and tables both read."""

from __future__ import annotations

from typing import Any, Mapping, Optional, cast

from perfprobe.stats import Stat

Raw = Mapping[str, Any]
SYSTEM = "system"
HUGE_PER_4K = 512          # 4 KiB pages in a 2 MiB huge page


def _median(stat: Optional[Mapping[str, Any]]) -> Optional[float]:
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


def _stat(stat: Optional[Mapping[str, Any]]) -> Optional[Stat]:
    return cast(Stat, stat) if stat else None


def _point_stat(section: Mapping[str, Any], key: str, scope: str) -> Optional[Stat]:
    entry = section["mixed"] if key == "mixed" else section["pairs"].get(key)
    return None if not entry else _stat(entry[scope]["ns_per_op"])


def malloc_stat(raw: Raw, key: str, scope: str, name: str = SYSTEM) -> Optional[Stat]:
    """The repeats of ns per malloc+free pair (key: a size in bytes as text, or "mixed"); scope "1t" or "all"."""
    section = raw["allocators"].get(name)
    return None if section is None else _point_stat(section, key, scope)


def pool_stat(raw: Raw, key: str, scope: str) -> Optional[Stat]:
    return _point_stat(raw["pool"], key, scope)


def malloc_ns(raw: Raw, key: str, scope: str, name: str = SYSTEM) -> Optional[float]:
    """ns per malloc+free pair (key: a size in bytes as text, or "mixed"); scope "1t" or "all"."""
    return _median(malloc_stat(raw, key, scope, name))


def pool_ns(raw: Raw, key: str, scope: str) -> Optional[float]:
    return _median(pool_stat(raw, key, scope))


def pool_speedup(raw: Raw, key: str, scope: str) -> Optional[float]:
    """The process's malloc+free over the pool's pop+push, same pattern and threads."""
    return _ratio(malloc_ns(raw, key, scope), pool_ns(raw, key, scope))


def contention(raw: Raw, key: str, name: str = SYSTEM) -> Optional[float]:
    """ns per op with every CPU allocating at once over one thread alone (1 = scales perfectly)."""
    return _ratio(malloc_ns(raw, key, "all", name), malloc_ns(raw, key, "1t", name))


def best_allocator(raw: Raw, key: str = "mixed", scope: str = "all") -> tuple[str, Optional[float]]:
    """The fastest measured allocator for `key` under `scope`, and its ns per op."""
    figures = [(malloc_ns(raw, key, scope, n), n) for n in allocators(raw)]
    known = [(v, n) for v, n in figures if v is not None]
    if not known:
        return SYSTEM, None
    value, name = min(known)
    return name, value


def looked_for(raw: Raw) -> list[Mapping[str, Any]]:
    return list(raw.get("looked_for") or [])


def disturbed_fraction(raw: Raw) -> float:
    """Share of all-thread runs in which a thread was preempted or the threads did not overlap."""
    bad = total = 0
    sections = [raw["pool"], *raw["allocators"].values()]
    for section in sections:
        for entry in [*section["pairs"].values(), section["mixed"]]:
            point = entry["all"]
            bad += int(point.get("disturbed_runs", 0))
            total += int(point["ns_per_op"]["repeats"])
    return bad / total if total else 0.0


# --- first touch ---

def touch(raw: Raw) -> Mapping[str, Any]:
    return raw["first_touch"]  # type: ignore[no-any-return]


TOUCH_STATS: dict[str, tuple[str, str, bool]] = {
    # metric -> (section of raw["first_touch"], "" for its top level; the key of the repeats; whether
    # the section says if it was `available` here)
    "first_touch_ns.4K": ("", "lazy_ns_per_4k", False), "first_touch_ns.2M": ("huge", "ns_per_2m", False),
    "reuse_ns.4K": ("", "reuse_ns_per_4k", False), "populate_ns.4K": ("populate", "mmap_ns_per_4k", False),
    "populate_write_ns.4K": ("populate_write", "ns_per_4k", True),
    "first_touch_ns.all.4K": ("threads", "ns_per_4k_per_thread", False),
    "mlock_ns.4K": ("mlock", "fresh_ns_per_4k", True), "mlock_added_ns.4K": ("mlock", "touched_ns_per_4k", True),
}


def touch_stat(raw: Raw, name: str) -> Optional[Stat]:
    """The repeats behind one first-touch metric (TOUCH_STATS), None where that case was not
    measured (no huge pages, no MADV_POPULATE_WRITE, mlock refused)."""
    part, key, gated = TOUCH_STATS[name]
    section: Mapping[str, Any] = touch(raw)[part] if part else touch(raw)
    return None if gated and not section.get("available") else _stat(section.get(key))


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


def mlock(raw: Raw) -> Mapping[str, Any]:
    return touch(raw)["mlock"]  # type: ignore[no-any-return]


def mlock_fresh_4k(raw: Raw) -> Optional[float]:
    return _median(mlock(raw).get("fresh_ns_per_4k")) if mlock(raw).get("available") else None


def mlock_added_4k(raw: Raw) -> Optional[float]:
    """mlock of memory already touched: what pinning alone adds per page."""
    return _median(mlock(raw).get("touched_ns_per_4k")) if mlock(raw).get("available") else None


def page_nodes(raw: Raw) -> list[int]:
    return [int(n) for n in touch(raw).get("nodes") or []]


# --- copy against move ---

def copy_levels(raw: Raw) -> list[Mapping[str, Any]]:
    return list(raw["copy"]["levels"])


def copy_stat(raw: Raw, what: str) -> Stat:
    """The repeats of the tensor copy ("ms") or of the move ("move_ns")."""
    return cast(Stat, raw["copy"]["tensor"]["ms"] if what == "ms" else raw["copy"]["move_ns"])


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
