"""First touch for `perfprobe alloc`: fault-in cost per 4 KiB and 2 MiB page, pre-faulted, all
threads, mlock, reuse. A fresh anonymous mapping per repeat; everything is unmapped before return.

Impure (mmap through ctypes, the kernels passed in); imported only by measure.py and bench/.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from perfprobe.probes.alloc import system as osys
from perfprobe.probes.alloc.plan import HUGE_BYTES, PAGE_BYTES, Settings
from perfprobe.pure.stats import Stat, summarize

MIN_LOCK_PAGES = 64


def first_touch(kernels: Any, nbytes: int, cpus: Sequence[int], settings: Settings,
                host: Any) -> dict[str, Any]:
    lib = osys.libc()
    pages = nbytes // PAGE_BYTES
    out: dict[str, Any] = {"bytes": nbytes, "pages_4k": pages, "thp": (host.get("thp") or {}).get("enabled")}
    lazy, reuse, nodes = _lazy(kernels, lib, nbytes, settings)
    out["lazy_ns_per_4k"], out["reuse_ns_per_4k"], out["nodes"] = lazy, reuse, nodes
    out["huge"] = _huge(kernels, lib, nbytes, settings, out["thp"])
    out["populate"] = _populate(kernels, lib, nbytes, settings)
    out["populate_write"] = _populate_write(lib, nbytes, settings)
    out["threads"] = _all_threads(kernels, lib, nbytes, cpus, settings)
    out["mlock"] = _mlock(kernels, lib, nbytes, settings)
    return out


def _repeat(settings: Settings, run: Callable[[], float]) -> Stat:
    return summarize([run() for _ in range(settings.repeats)])


def _with_mapping(lib: Any, nbytes: int, body: Callable[[osys.Mapping], Any], advice: int | None = None,
                  align: int = 0, populate: bool = False) -> Any:
    m = osys.mmap(lib, nbytes, populate=populate, align=align)
    try:
        if advice is not None:
            osys.madvise(lib, m, advice)
        return body(m)
    finally:
        osys.munmap(lib, m)


def _lazy(kernels: Any, lib: Any, nbytes: int, settings: Settings) -> tuple[Any, Any, list[int]]:
    """4 KiB pages (MADV_NOHUGEPAGE): the first write of each page, then the same writes again."""
    pages = nbytes // PAGE_BYTES
    firsts, agains, nodes = [], [], set()
    for _ in range(settings.repeats):
        def body(m: osys.Mapping) -> None:
            firsts.append(kernels.touch(m.address, nbytes, PAGE_BYTES) / pages)
            agains.append(kernels.touch(m.address, nbytes, PAGE_BYTES) / pages)
            nodes.update(_nodes(m))
        _with_mapping(lib, nbytes, body, osys.MADV_NOHUGEPAGE)
    return summarize(firsts), summarize(agains), sorted(nodes)


def _nodes(m: osys.Mapping) -> set[int]:
    """The NUMA nodes a sample of the mapping's pages landed on (move_pages query)."""
    try:
        from perfprobe.system.numa_sys import page_nodes

        return {n for n in page_nodes(list(osys.page_addresses(m, 16))) if n >= 0}
    except OSError:
        return set()


def _huge(kernels: Any, lib: Any, nbytes: int, settings: Settings, thp: str | None) -> dict[str, Any]:
    """2 MiB-aligned mapping with MADV_HUGEPAGE: ns per 2 MiB of first writes, and how much of it
    the kernel backed with huge pages (AnonHugePages)."""
    if thp == "never":
        return {"available": False, "reason": "transparent huge pages are 'never' on this host"}
    huge = nbytes // HUGE_BYTES
    fractions: list[float] = []

    def one() -> float:
        def body(m: osys.Mapping) -> float:
            ns = kernels.touch(m.address, nbytes, PAGE_BYTES) / huge
            got = osys.huge_bytes_of(m)
            fractions.append((got or 0) / nbytes)
            return float(ns)
        return float(_with_mapping(lib, nbytes, body, osys.MADV_HUGEPAGE, align=HUGE_BYTES))
    stat = _repeat(settings, one)
    return {"available": True, "ns_per_2m": stat, "huge_fraction": min(fractions) if fractions else 0.0}


def _populate(kernels: Any, lib: Any, nbytes: int, settings: Settings) -> dict[str, Any]:
    """MAP_POPULATE: what the mmap call costs per page, and the first writes after it."""
    pages = nbytes // PAGE_BYTES
    calls, touches = [], []
    for _ in range(settings.repeats):
        ns, m = osys.timed_ns(lambda: osys.mmap(lib, nbytes, populate=True))
        try:
            calls.append(ns / pages)
            touches.append(kernels.touch(m.address, nbytes, PAGE_BYTES) / pages)
        finally:
            osys.munmap(lib, m)
    return {"mmap_ns_per_4k": summarize(calls), "touch_ns_per_4k": summarize(touches)}


def _populate_write(lib: Any, nbytes: int, settings: Settings) -> dict[str, Any]:
    """madvise(MADV_POPULATE_WRITE) (Linux 5.14+) on a lazy mapping: ns per page; or why not."""
    pages = nbytes // PAGE_BYTES
    samples = []
    for _ in range(settings.repeats):
        def body(m: osys.Mapping) -> float | None:
            ns, ok = osys.timed_ns(lambda: osys.madvise(lib, m, osys.MADV_POPULATE_WRITE))
            return ns / pages if ok else None
        got = _with_mapping(lib, nbytes, body, osys.MADV_NOHUGEPAGE)
        if got is None:
            return {"available": False, "reason": "madvise(MADV_POPULATE_WRITE) failed: the kernel predates 5.14"}
        samples.append(got)
    return {"available": True, "ns_per_4k": summarize(samples)}


def _all_threads(kernels: Any, lib: Any, nbytes: int, cpus: Sequence[int], settings: Settings) -> dict[str, Any]:
    """Every CPU faults its own slice of one mapping at once (one address space: the kernel's
    page-fault scalability): ns per page per thread, and the wall time per page of the whole."""
    n = len(cpus)
    share = nbytes // n // PAGE_BYTES * PAGE_BYTES
    per_thread, wall = [], []
    for _ in range(settings.repeats):
        def body(m: osys.Mapping) -> None:
            runs = kernels.run_threads(cpus, lambda ready, parties, i: kernels.touch_worker(
                ready, parties, m.address + i * share, share, PAGE_BYTES))
            per_thread.append(sorted((e - s) / (share // PAGE_BYTES) for s, e, _ in runs)[n // 2])
            wall.append((max(e for _, e, _ in runs) - min(s for s, _, _ in runs)) / (n * share // PAGE_BYTES))
        _with_mapping(lib, nbytes, body, osys.MADV_NOHUGEPAGE)
    return {"threads": n, "ns_per_4k_per_thread": summarize(per_thread), "wall_ns_per_4k": summarize(wall)}


def _mlock(kernels: Any, lib: Any, nbytes: int, settings: Settings) -> dict[str, Any]:
    """mlock on a fresh mapping (faults and locks) and on a touched one (the lock alone), ns per
    page, within RLIMIT_MEMLOCK's soft limit (less what is locked already)."""
    limit = osys.memlock_limit()
    room = nbytes if limit is None else min(nbytes, limit - osys.locked_bytes())
    size = room // PAGE_BYTES * PAGE_BYTES
    if size < MIN_LOCK_PAGES * PAGE_BYTES:
        return {"available": False, "limit_bytes": limit,
                "reason": f"RLIMIT_MEMLOCK allows {max(room, 0) >> 10} KiB more; at least "
                          f"{MIN_LOCK_PAGES * PAGE_BYTES >> 10} KiB needed"}
    pages = size // PAGE_BYTES
    fresh: list[float] = []
    touched: list[float] = []
    for _ in range(settings.repeats):
        for target, pre in ((fresh, False), (touched, True)):
            def body(m: osys.Mapping, pre: bool = pre) -> float | None:
                if pre:
                    kernels.touch(m.address, size, PAGE_BYTES)
                ns, rc = osys.timed_ns(lambda: lib.mlock(m.address, size))
                lib.munlock(m.address, size)
                return ns / pages if rc == 0 else None
            got = _with_mapping(lib, size, body, osys.MADV_NOHUGEPAGE)
            if got is None:
                return {"available": False, "limit_bytes": limit, "reason": "mlock failed (EPERM or ENOMEM)"}
            target.append(got)
    return {"available": True, "bytes": size, "limit_bytes": limit, "fresh_ns_per_4k": summarize(fresh),
            "touched_ns_per_4k": summarize(touched)}
