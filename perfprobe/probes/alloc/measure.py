"""Measure `perfprobe alloc`: malloc/free per allocator, a free-list pool, first touch, memcpy, move.

Only this module (with the kernels) imports numba. It returns plain numbers; figures.py reads them.
The functions below take explicit sizes so bench/bench_alloc.py times exactly the same points.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from typing import Any, Callable, Sequence

import numpy as np

from perfprobe.engine.probe import ProbeContext
from perfprobe.host.facts import numa_nodes
from perfprobe.probes.alloc import pages
from perfprobe.probes.alloc import system as osys
from perfprobe.probes.alloc.plan import (
    MIXED_MAX,
    MIXED_SLOTS,
    POOL_BLOCKS,
    PRESETS,
    SIZES,
    Settings,
    copy_levels,
    copy_reps,
    iterations,
    mixed_bytes,
    tensor_bytes,
    touch_bytes,
)
from perfprobe.pure.stats import summarize
from perfprobe.system.bind import usable_cpus
from perfprobe.system.budget import host_memory_budget

METHOD = ("numba nopython kernels call malloc/free through their C addresses (ctypes) and time "
          "themselves with clock_gettime(CLOCK_MONOTONIC); each block is touched once; mixed: the working "
          "set filled and warmed up before the barrier, only the ops timed; all-CPU runs: "
          "one pinned thread per usable CPU, a spin barrier, per-thread ns per op (median of threads); "
          "first touch: fresh anonymous mmap per repeat, one byte written per 4 KiB; medians of repeats")
CHILD_TIMEOUT_S = 120
PREEMPTED_BELOW = 0.9    # a thread that had less of its wall time on a CPU was preempted
START_SKEW = 0.1         # threads leaving the barrier further apart than this share of a run: not together
MIXED_SEED = 0x1E3779B97F4A7C15  # thread i's xorshift seed in the mixed pattern is MIXED_SEED + i


def measure(ctx: ProbeContext) -> dict[str, Any]:
    from perfprobe.kernels import alloc_kernels as kernels

    settings: Settings = ctx.config.preset(PRESETS)
    budget = host_memory_budget(ctx.host, ctx.config.bind)
    cpus = usable_cpus(ctx.host)
    threads = cpus
    while len(threads) > 1 and mixed_bytes(len(threads)) > budget.bytes // 4:
        threads = threads[: len(threads) // 2]
    system = osys.system_allocator()
    looked = osys.find_allocators(tuple(ctx.config.options.allocators or ()))
    found = [e for e in looked if e["found"]]
    iters_hint = ctx.config.options.iterations
    out: dict[str, Any] = {"method": METHOD, "quick": ctx.quick, "bind": ctx.config.bind, "repeats": settings.repeats,
                           "threads": len(threads), "cpus": list(threads), "sizes_bytes": list(SIZES),
                           "mixed": {"slots": MIXED_SLOTS, "min_bytes": 16, "max_bytes": MIXED_MAX},
                           "looked_for": looked, "budget": {"bytes": budget.bytes, "basis": budget.basis}}
    try:
        with ctx.progress("alloc: allocators", len(found) + 2) as task:
            out["allocators"] = {"system": {"path": system.path, **allocator_figures(kernels, system, threads,
                                                                                   settings, iters_hint)}}
            task.advance()
            out["pool"] = pool_figures(kernels, threads, settings, iters_hint)
            task.advance()
            for entry in found:
                got = preloaded_figures(entry["found"], threads, ctx.quick, iters_hint)
                if "error" in got:
                    entry["error"] = got["error"]
                else:
                    out["allocators"][entry["name"]] = got
                task.advance()
    finally:
        osys.release_free_memory(system)
    size_cap = ctx.config.options.size
    nbytes, basis = touch_bytes(settings, budget, size_cap)
    with ctx.progress("alloc: first touch", 1):
        out["first_touch"] = pages.first_touch(kernels, nbytes, threads, settings, ctx.host)
    out["first_touch"]["capped_by"] = basis
    out["copy"] = copy_figures(kernels, copy_levels(ctx.host, settings, budget, size_cap), settings,
                               fillers=threads[:2] if len(numa_nodes(ctx.host)) <= 1 else ())
    return out


def remeasure(ctx: ProbeContext, raw: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """Confirmation (perfprobe/engine/confirm.py): the system allocator's one-thread and all-CPU figures
    again, on the same CPUs, when the contention warn ("contention") is to be issued."""
    from perfprobe.kernels import alloc_kernels as kernels

    if "contention" not in keys:
        return raw
    settings: Settings = ctx.config.preset(PRESETS)
    system = osys.system_allocator()
    try:
        again = allocator_figures(kernels, system, list(raw["cpus"]), settings, ctx.config.options.iterations)
    finally:
        osys.release_free_memory(system)
    out = dict(raw)
    out["allocators"] = {**raw["allocators"], "system": {**raw["allocators"]["system"], **again}}
    return out


def preloaded_figures(path: str, cpus: Sequence[int], quick: bool, iters_hint: int | None) -> dict[str, Any]:
    """allocator_figures in a child process that runs with `path` preloaded as its malloc."""
    args = json.dumps({"cpus": list(cpus), "quick": quick, "iterations": iters_hint, "expect": path})
    try:
        done = subprocess.run([sys.executable, "-m", "perfprobe.probes.alloc.measure", args],
                              env=osys.preloaded_env(path), capture_output=True, text=True, timeout=CHILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {"error": f"{path}: the measuring child ran past {CHILD_TIMEOUT_S} s"}
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"{path}: the measuring child failed ({tail})"}
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def _child(args: dict[str, Any]) -> dict[str, Any]:
    """In the child: the preloaded allocator is the process's own malloc; check it is, measure it."""
    from perfprobe.kernels import alloc_kernels as kernels

    system = osys.system_allocator()
    if os.path.realpath(system.path) != os.path.realpath(args["expect"]):
        return {"error": f"{args['expect']}: preloading it left malloc in {system.path}"}
    settings: Settings = PRESETS.pick(bool(args["quick"]))
    return {"path": system.path, **allocator_figures(kernels, system, args["cpus"], settings, args["iterations"],
                                                     settings.other_sizes)}


def threaded(kernels: Any, cpus: Sequence[int], make: Callable[[int], Callable[[int, int], tuple]],
             iters: int, settings: Settings) -> dict[str, Any]:
    """ns per op per thread, `cpus` threads at once, `settings.repeats` runs; a run in which a
    thread was preempted or the threads did not overlap is retried (up to `settings.retries`)."""
    samples, disturbed = [], 0
    for _ in range(settings.repeats):
        for attempt in range(settings.retries + 1):
            works = [make(i) for i in range(len(cpus))]
            runs = kernels.run_threads(cpus, lambda ready, parties, i, w=works: w[i](ready, parties))
            per_op, bad = _reading(runs, iters)
            if not bad or attempt == settings.retries:
                break
        samples.append(per_op)
        disturbed += bad
    return {"ns_per_op": summarize(samples), "disturbed_runs": disturbed, "iterations": iters}


def _reading(runs: list[tuple], iters: int) -> tuple[float, bool]:
    """(median over threads of ns per op, whether the run was disturbed)."""
    per_thread = [(end - start) / iters for start, end, _ in runs]
    cpu_share = min(cpu / max(end - start, 1) for start, end, cpu in runs)
    skew = max(s for s, _, _ in runs) - min(s for s, _, _ in runs)
    typical = statistics.median(end - start for start, end, _ in runs)
    return statistics.median(per_thread), cpu_share < PREEMPTED_BELOW or skew > START_SKEW * typical


def _calibrate(kernels: Any, cpu: int, make: Callable[[int], Callable[[int, int], tuple]], probe_iters: int,
               settings: Settings, iters_hint: int | None) -> int:
    if iters_hint:
        return iters_hint
    start, end, _ = kernels.run_threads([cpu], lambda ready, parties, i: make(probe_iters)(ready, parties))[0]
    return iterations((end - start) / probe_iters, settings.run_ms)


def allocator_figures(kernels: Any, a: Any, cpus: Sequence[int], settings: Settings,
                      iters_hint: int | None = None, sizes: Sequence[int] = SIZES) -> dict[str, Any]:
    """malloc+free pairs per size and the mixed pattern, on one thread and on every CPU in `cpus`."""
    out: dict[str, Any] = {"pairs": {}, "mixed": {}}
    for size in sizes:
        def pairs(n: int, size: int = size) -> Callable[[int, int], tuple]:
            return lambda ready, parties: kernels.pairs_worker(ready, parties, a.malloc, a.free, size, n, 0, 0, 0)
        iters = _calibrate(kernels, cpus[0], pairs, 2000, settings, iters_hint)
        out["pairs"][str(size)] = _both(kernels, cpus, _same(pairs(iters)), iters, settings)
    slots = [np.zeros(MIXED_SLOTS, dtype=np.int64) for _ in cpus]

    def mixed(n: int) -> Callable[[int], Callable[[int, int], tuple]]:
        return lambda i: (lambda ready, parties: kernels.mixed_worker(ready, parties, a.malloc, a.free, slots[i],
                                                                        n, MIXED_SEED + i, 0, 0))
    iters = _calibrate(kernels, cpus[0], lambda n: mixed(n)(0), 4000, settings, iters_hint)
    out["mixed"] = _both(kernels, cpus, mixed(iters), iters, settings)
    return out


def _same(work: Callable[[int, int], tuple]) -> Callable[[int], Callable[[int, int], tuple]]:
    """Every thread runs `work` (it holds no per-thread state)."""
    def make(i: int) -> Callable[[int, int], tuple]:
        return work
    return make


def _both(kernels: Any, cpus: Sequence[int], make: Callable[[int], Callable[[int, int], tuple]], iters: int,
          settings: Settings) -> dict[str, Any]:
    one = threaded(kernels, cpus[:1], make, iters, settings)
    return {"1t": one, "all": threaded(kernels, cpus, make, iters, settings) if len(cpus) > 1 else one}


def pool_figures(kernels: Any, cpus: Sequence[int], settings: Settings,
                 iters_hint: int | None = None) -> dict[str, Any]:
    """The same patterns served from a fixed-size free-list pool per thread (one buffer each)."""
    out: dict[str, Any] = {"pairs": {}, "mixed": {}, "blocks": POOL_BLOCKS}
    for size in SIZES:
        block = max(16, size)
        bufs = [np.zeros(POOL_BLOCKS * block, dtype=np.uint8) for _ in cpus]

        def pairs(n: int, block: int = block, bufs: list[np.ndarray] = bufs) -> Callable[[int], Callable]:
            return lambda i: (lambda ready, parties: kernels.pairs_worker(ready, parties, 0, 0, block, n, 1,
                                                                            bufs[i].ctypes.data, block))
        iters = _calibrate(kernels, cpus[0], lambda n: pairs(n)(0), 20000, settings, iters_hint)
        out["pairs"][str(size)] = _both(kernels, cpus, pairs(iters), iters, settings)
    bufs = [np.zeros((MIXED_SLOTS + 1) * MIXED_MAX, dtype=np.uint8) for _ in cpus]
    slots = [np.zeros(MIXED_SLOTS, dtype=np.int64) for _ in cpus]

    def mixed(n: int) -> Callable[[int], Callable]:
        return lambda i: (lambda ready, parties: kernels.mixed_worker(ready, parties, 0, 0, slots[i], n,
                                                                        MIXED_SEED + i, 1,
                                                                        bufs[i].ctypes.data))
    iters = _calibrate(kernels, cpus[0], lambda n: mixed(n)(0), 20000, settings, iters_hint)
    out["mixed"] = _both(kernels, cpus, mixed(iters), iters, settings)
    return out


def copy_figures(kernels: Any, levels: list[Any], settings: Settings, fillers: Sequence[int] = ()) -> dict[str, Any]:
    """memcpy GB/s per level (source and destination touched first), one 64 MiB copy in ms, and
    what handing the buffer over instead costs (ns). With two `fillers` CPUs (one NUMA node: first
    touch places nothing) source and destination are touched at once, one a CPU."""
    lib = osys.libc()
    memcpy = osys.address(lib.memcpy)
    top = max(lv.bytes for lv in levels)
    src, dst = touched_pair(top, fillers)
    out: dict[str, Any] = {"levels": []}
    for lv in levels:
        kernels.copy(memcpy, dst.ctypes.data, src.ctypes.data, lv.bytes, 1)
        first = kernels.copy(memcpy, dst.ctypes.data, src.ctypes.data, lv.bytes, 1)
        reps = copy_reps(lv.bytes, lv.bytes / max(first, 1), settings.run_ms)
        gbs = [lv.bytes * reps / kernels.copy(memcpy, dst.ctypes.data, src.ctypes.data, lv.bytes, reps)
               for _ in range(settings.repeats)]
        out["levels"].append({"name": lv.name, "bytes": lv.bytes, "capped_by": lv.basis, "reps": reps,
                              "gbs": summarize(gbs)})
    nbytes = tensor_bytes(levels)
    ms = [kernels.copy(memcpy, dst.ctypes.data, src.ctypes.data, nbytes, 1) / 1e6 for _ in range(settings.repeats)]
    out["tensor"] = {"bytes": nbytes, "ms": summarize(ms)}
    del src, dst
    slots = np.zeros(16, dtype=np.int64)
    reps = 1 << 20
    out["move_ns"] = summarize([kernels.move(slots.ctypes.data, reps) / reps for _ in range(settings.repeats)])
    return out


def touched_pair(nbytes: int, fillers: Sequence[int] = ()) -> tuple[np.ndarray, np.ndarray]:
    """Two `nbytes` arrays of ones, filled on two threads pinned to `fillers` where two are given,
    else one after the other. Why: filling is first touch, and memory new to the process cost the
    2-vCPU EPYC guest's host about 4 ms a MiB to back, on each vCPU at once: the two 64 MiB fills
    took 0.71-0.94 s one after the other and 0.44-0.47 s together (12-07 05:10 UTC)."""
    from perfprobe.kernels.placement import on_pinned_threads

    pair = np.empty(nbytes, dtype=np.uint8), np.empty(nbytes, dtype=np.uint8)
    if len(fillers) >= 2:
        on_pinned_threads(list(fillers[:2]), lambda i: pair[i].fill(1))  # numpy's fill drops the GIL
    else:
        for array in pair:
            array.fill(1)
    return pair


if __name__ == "__main__":  # the child of preloaded_figures
    from perfprobe.system.fast_exit import leave

    try:
        print(json.dumps(_child(json.loads(sys.argv[1]))))
    except Exception as exc:  # noqa: BLE001 - reported to the parent as this allocator's error
        print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}))
    leave(0)  # the parent waits on this exit: no 0.2 s of interpreter teardown
