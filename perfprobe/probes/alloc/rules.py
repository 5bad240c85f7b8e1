"""Judgement for `perfprobe alloc`: pure rules from recorded numbers to findings (docs/probes/alloc.md).

That a pool beats malloc, that a fresh page costs a fault and a copy costs bandwidth is true of every
host: a pass with this host's figures and the advice. Warnings are kept for what is wrong here and
fixable: an allocator that stops scaling across the CPUs, page faults far slower than they should
be, huge pages asked for and not given, memory that did not land on the --bind node, a busy host.
"""

from __future__ import annotations

from typing import Callable, Optional

from perfprobe.engine.confirm import held_back
from perfprobe.engine.model import Finding, Verdict
from perfprobe.host.facts import Facts, quota_bound_note
from perfprobe.probes.alloc import figures as f
from perfprobe.probes.alloc.figures import Raw

CONTENDED = 2.0          # all-CPU ns per op over one thread's: the allocator stops scaling
FAULT_SLOW_NS = 5000.0   # a 4 KiB first touch slower than this (under 0.8 GB/s of zeroing) is broken
HUGE_MATTERS = 2.0       # a 2 MiB page faulted this many times faster than 512 small ones
HUGE_GRANTED = 0.5       # share of a MADV_HUGEPAGE buffer the kernel must back with huge pages
TOUCH_DOMINANT = 10.0    # first touch over a reused buffer's touch
MAX_DISTURBED = 0.25     # share of all-thread runs preempted or not overlapping: a busy host
POOL_ADVICE = ("serve hot fixed-size objects from a per-thread free-list pool (one preallocated "
               "buffer, pop/push in a few instructions; C++ std::pmr::unsynchronized_pool_resource, "
               "a slab, or numpy buffers reused across iterations)")
TOUCH_ADVICE = ("allocate big buffers once and reuse them; pre-fault what a hot loop will write "
                "(MAP_POPULATE or madvise(MADV_POPULATE_WRITE), or touch it at start-up), so page "
                "faults are paid outside the timed or latency-critical path")

Rule = Callable[[Raw, Facts], list[Finding]]


def _x(value: Optional[float]) -> str:
    return "n/a" if value is None else f"{value:.1f}x"


def _ns(value: Optional[float]) -> str:
    return "n/a" if value is None else (f"{value:.0f} ns" if value >= 10 else f"{value:.2f} ns")


def _key(raw: Raw) -> str:
    return "64" if 64 in f.sizes(raw) else str(f.sizes(raw)[0])


def _better_allocator(raw: Raw, key: str) -> str:
    """Advice naming the fastest other allocator under all CPUs, with its figure, when it wins."""
    name, value = f.best_allocator(raw, key, "all")
    system = f.malloc_ns(raw, key, "all")
    if name == f.SYSTEM or value is None or system is None:
        found = [n for n in f.allocators(raw) if n != f.SYSTEM]
        return f" (other allocators measured: {', '.join(found)}; none faster here)" if found else \
            " (no other allocator library was found: install jemalloc, tcmalloc or mimalloc to compare)"
    path = f.raw_path(raw, name)
    return (f", or switch allocator: {name} does it in {_ns(value)} against {_ns(system)} on every CPU "
            f"(LD_PRELOAD={path})")


def rule_contention(raw: Raw, host: Facts) -> list[Finding]:
    """The process's malloc on every CPU at once against one thread alone."""
    n = f.threads(raw)
    if n < 2:
        return [Finding(Verdict.PASS, "one usable CPU: allocator contention was not measured")]
    parts, worst = [], 0.0
    for key in (_key(raw), "mixed"):
        ratio = f.contention(raw, key)
        worst = max(worst, ratio or 0.0)
        label = "mixed 16 B-4 KiB" if key == "mixed" else f"{key} B"
        parts.append(f"{label}: {_ns(f.malloc_ns(raw, key, '1t'))} alone, {_ns(f.malloc_ns(raw, key, 'all'))} "
                     f"on {n} CPUs ({_x(ratio)})")
    if worst >= CONTENDED:
        key = "mixed" if (f.contention(raw, "mixed") or 0) >= CONTENDED else _key(raw)
        return [Finding(Verdict.WARN, "malloc+free slows down when every CPU allocates at once: "
                        + "; ".join(parts), "give each thread its own pool" + _better_allocator(raw, key),
                        confirm=("contention",), figure=worst)]
    return [Finding(Verdict.PASS, "the allocator scales across the CPUs: " + "; ".join(parts))]


def rule_pool(raw: Raw, host: Facts) -> list[Finding]:
    """A fixed-size free-list pool against malloc, per size and thread count."""
    key = _key(raw)
    parts = [f"{key} B {_x(f.pool_speedup(raw, key, '1t'))} on one thread, {_x(f.pool_speedup(raw, key, 'all'))} "
             f"on {f.threads(raw)}", f"mixed {_x(f.pool_speedup(raw, 'mixed', '1t'))} / "
             f"{_x(f.pool_speedup(raw, 'mixed', 'all'))}"]
    return [Finding(Verdict.PASS, "a free-list pool against malloc+free: " + "; ".join(parts)
                    + f" (pool pop+push {_ns(f.pool_ns(raw, key, '1t'))})", POOL_ADVICE)]


def rule_allocators(raw: Raw, host: Facts) -> list[Finding]:
    """Which allocator libraries were looked for, which were found, and their figures."""
    looked = f.looked_for(raw)
    missing = [f"{e['name']} ({', '.join(e['looked_for'])})" for e in looked if not e.get("found")]
    found = [n for n in f.allocators(raw) if n != f.SYSTEM]
    key = _key(raw)
    parts = [f"{n}: {key} B {_ns(f.malloc_ns(raw, key, '1t', n))} / {_ns(f.malloc_ns(raw, key, 'all', n))}, mixed "
             f"{_ns(f.malloc_ns(raw, 'mixed', '1t', n))} / {_ns(f.malloc_ns(raw, 'mixed', 'all', n))}"
             for n in f.allocators(raw)]
    message = "allocators (one thread / every CPU): " + "; ".join(parts)
    if missing:
        message += "; looked for and not found: " + "; ".join(missing)
    errors = [str(e["error"]) for e in looked if e.get("error") and not e.get("found")]
    if errors:
        message += "; found but not loadable: " + "; ".join(errors)
    advice = "" if found else "install libjemalloc2, libtcmalloc-minimal4 or libmimalloc2.0 to compare them here"
    return [Finding(Verdict.PASS, message, advice)]


def rule_first_touch(raw: Raw, host: Facts) -> list[Finding]:
    """Fault-in cost of fresh 4 KiB pages against writing the same pages again."""
    lazy, ratio = f.first_touch_4k(raw), f.first_touch_over_reuse(raw)
    msg = (f"first touch of a fresh 4 KiB page costs {_ns(lazy)} (a page fault and zeroing), a reused "
           f"page {_ns(f.reuse_4k(raw))} ({_x(ratio)}); after MAP_POPULATE the first pass costs "
           f"{_ns(f.prefaulted_touch_4k(raw))} per page ({_x(f.prefault_speedup(raw))} faster; the mmap "
           f"call paid {_ns(f.populate_4k(raw))} per page)")
    write = f.populate_write_4k(raw)
    msg += f"; MADV_POPULATE_WRITE {_ns(write)} per page" if write is not None else \
        "; MADV_POPULATE_WRITE unavailable (Linux < 5.14)"
    if lazy >= FAULT_SLOW_NS:
        return [Finding(Verdict.WARN, msg + f": over {FAULT_SLOW_NS / 1000:.0f} µs per page is slow",
                        "check for memory ballooning, KSM or a hypervisor overcommitting memory; "
                        + TOUCH_ADVICE, figure=lazy)]
    advice = TOUCH_ADVICE if (ratio or 0) >= TOUCH_DOMINANT else ""
    return [Finding(Verdict.PASS, msg, advice)]


def rule_huge_pages(raw: Raw, host: Facts) -> list[Finding]:
    """2 MiB pages against 4 KiB ones on first touch; THP never; huge pages asked for, not given."""
    small = f.first_touch_4k(raw) * f.HUGE_PER_4K
    if not f.huge_available(raw):
        return [Finding(Verdict.PASS, f"transparent huge pages are 'never': 2 MiB of fresh memory costs "
                        f"{small / 1000:.0f} µs here in 512 small-page faults, and huge pages could not be "
                        "measured", "set /sys/kernel/mm/transparent_hugepage/enabled to madvise and "
                        "madvise(MADV_HUGEPAGE) big buffers, then rerun to see the gain")]
    factor, share, huge = f.huge_factor(raw), f.huge_fraction(raw) or 0.0, f.first_touch_2m(raw)
    msg = (f"a 2 MiB huge page (MADV_HUGEPAGE) faults in {(huge or 0) / 1000:.0f} µs against "
           f"{small / 1000:.0f} µs for 512 small pages ({_x(factor)}); {share:.0%} of the buffer got huge pages")
    if share < HUGE_GRANTED:
        return [Finding(Verdict.WARN, msg, "the kernel did not grant huge pages: check "
                        "transparent_hugepage/defrag (madvise or defer+madvise) and memory fragmentation "
                        "(/proc/buddyinfo; echo 1 > /proc/sys/vm/compact_memory)", figure=share)]
    advice = ("madvise(MADV_HUGEPAGE) buffers of several MiB (THP 'madvise'), aligned to 2 MiB"
              if (factor or 0) >= HUGE_MATTERS else "")
    return [Finding(Verdict.PASS, msg, advice)]


def rule_fault_scaling(raw: Raw, host: Facts) -> list[Finding]:
    """Page faults from every CPU into one address space at once."""
    n = f.fault_threads(raw)
    if n < 2:
        return []
    return [Finding(Verdict.PASS, f"{n} threads faulting one mapping at once: {_ns(f.first_touch_all_4k(raw))} per "
                    f"page per thread against {_ns(f.first_touch_4k(raw))} alone (scaling "
                    f"{(f.fault_scaling(raw) or 0):.2f})", "")]


def rule_mlock(raw: Raw, host: Facts) -> list[Finding]:
    entry = f.mlock(raw)
    if not entry.get("available"):
        return [Finding(Verdict.PASS, f"mlock not measured: {entry.get('reason')}")]
    return [Finding(Verdict.PASS, f"mlock of {int(entry['bytes']) >> 20} MiB: {_ns(f.mlock_fresh_4k(raw))} per page "
                    f"on fresh memory (faults and locks), {_ns(f.mlock_added_4k(raw))} per page on memory "
                    "already touched (the pinning alone)",
                    "pin (mlock, cudaHostRegister) once at start-up, never per transfer")]


def rule_copy(raw: Raw, host: Facts) -> list[Finding]:
    """What a deep copy costs against handing the buffer over."""
    mib = f.tensor_bytes(raw) >> 20
    levels = ", ".join(f"{lv['name']} {float(lv['gbs']['median']):.1f}" for lv in f.copy_levels(raw))
    return [Finding(Verdict.PASS, f"copying a {mib} MiB tensor here costs {f.copy_ms(raw):.1f} ms; handing the "
                    f"buffer over costs {_ns(f.move_ns(raw))} ({f.copy_over_move(raw) or 0:.1e}x); memcpy GB/s: "
                    + levels, "move, don't copy: pass ownership (std::move, return the array, views "
                    "instead of .copy()), copy only what must diverge")]


def rule_bind(raw: Raw, host: Facts) -> list[Finding]:
    """Under --bind, the first-touch pages must be on the bound node."""
    node, nodes = raw.get("bind"), f.page_nodes(raw)
    if node is None or not nodes or nodes == [node]:
        return []
    return [Finding(Verdict.WARN, f"under --bind {node} the first-touch pages landed on node(s) "
                    f"{', '.join(map(str, nodes))}", "check the memory policy (numactl --show) and cpuset mems")]


def rule_capped(raw: Raw, host: Facts) -> list[Finding]:
    return [Finding(Verdict.PASS, f"the {what} was capped at {nbytes >> 20} MiB ({basis})")
            for what, nbytes, basis in f.capped(raw)]


def rule_busy(raw: Raw, host: Facts) -> list[Finding]:
    share = f.disturbed_fraction(raw)
    if share <= MAX_DISTURBED:
        return []
    return [Finding(Verdict.PASS, f"{share:.0%} of the all-CPU runs were preempted or did not overlap "
                    "even after retries: the host was busy, so the all-CPU warns are held back",
                    "rerun on an idle host")]


def rule_cpu_quota(raw: Raw, host: Facts) -> list[Finding]:
    """A note when a cgroup CPU quota grants fewer CPUs than the all-CPU runs ran threads."""
    note = quota_bound_note(host, f.threads(raw), "the all-CPU malloc and first-touch runs")
    return [Finding(Verdict.PASS, *note)] if note is not None else []


RULES: list[Rule] = [rule_contention, rule_pool, rule_allocators, rule_first_touch, rule_huge_pages,
                     rule_fault_scaling, rule_mlock, rule_copy, rule_bind, rule_capped, rule_busy, rule_cpu_quota]


LOAD_SENSITIVE = (rule_contention, rule_fault_scaling)
"""Rules whose warns other work on the CPUs can produce: held back as notes on a busy host."""


def findings(raw: Raw, host: Facts) -> tuple[Finding, ...]:
    """Every rule's findings; when the all-CPU runs were disturbed, the load-sensitive warns are
    held back as pass notes (a busy host is named, not misread)."""
    busy = f.disturbed_fraction(raw) > MAX_DISTURBED
    out: list[Finding] = []
    for rule in RULES:
        for item in rule(raw, host):
            out.append(held_back(item, "the host was busy") if busy and rule in LOAD_SENSITIVE else item)
    return tuple(out)
