"""Pinning numba's parallel workers, from inside the parallel region. Numbers only come out.

Why this way (docs/probes/cache.md, "Thread placement"):
- The workqueue layer never pins its threads, and the OpenMP layer pins only through OMP_PLACES /
  OMP_PROC_BIND read once, when libgomp starts with numba's pool: one placement for the life of
  the process (a probe could not then run its sweep, its pairs or a --bind node), the main Python
  thread bound with it, and a user's own OMP_* silently changing it. TBB steals work: two shares
  can land on one thread. So each parallel kernel pins *itself*: iteration t of
  `for t in prange(n)` first calls sched_setaffinity(0, ...) with the mask of cpus[t] (0 = the
  calling thread), then works on share t. Placement follows the share, not the thread, so it holds
  whichever worker runs it and on every layer; `where[t]` (sched_getcpu) records the CPU it ran on.
- Layer: OpenMP when present, else workqueue, TBB last (set below, before numba's pool starts:
  each prange(n) with n threads then gives each thread exactly one share, statically). The pip
  wheel of numba does not bundle libgomp (omppool links the system's libgomp.so.1), so a host
  without it runs on workqueue: the pinning is the same there.
- The syscalls are llvmlite calls of the libc symbols (as compiled.now_ns calls clock_gettime), so
  the kernels stay cacheable (a ctypes function pointer would bake an address into the cache).
"""

# numba intrinsics are called with fewer arguments than they are defined with (numba passes typingctx):
# mypy: disable-error-code="call-arg"
from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Sequence, TypeVar

import numba
import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.core import cgutils
from numba.extending import intrinsic

from perfprobe.pure import cpu_order

T = TypeVar("T")

MASK_WORDS = 16  # 1024 CPUs, glibc's cpu_set_t; more words when a CPU number needs them
LAYER_PRIORITY = ["omp", "workqueue", "tbb"]
_I32 = ir.IntType(32)
_I64 = ir.IntType(64)


def _prefer_omp() -> None:
    """Ask numba for OpenMP, then workqueue, then TBB — unless the user chose, or the pool runs."""
    parallel = __import__("numba.np.ufunc.parallel", fromlist=["_is_initialized"])
    if getattr(parallel, "_is_initialized", False):
        return
    if os.environ.get("NUMBA_THREADING_LAYER") or os.environ.get("NUMBA_THREADING_LAYER_PRIORITY"):
        return
    if numba.config.THREADING_LAYER == "default":  # type: ignore[attr-defined]
        numba.config.THREADING_LAYER_PRIORITY = list(LAYER_PRIORITY)  # type: ignore[attr-defined]


_prefer_omp()


@intrinsic
def _sched_setaffinity(typingctx, address, nbytes):
    """sched_setaffinity(0, nbytes, (cpu_set_t *)address): pin the calling thread; returns rc."""
    def codegen(context, builder, sig, args):
        fnty = ir.FunctionType(_I32, [_I32, _I64, _I64.as_pointer()])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "sched_setaffinity")
        mask = builder.inttoptr(args[0], _I64.as_pointer())
        return builder.call(fn, [ir.Constant(_I32, 0), args[1], mask])
    return types.int32(types.uint64, types.int64), codegen


@intrinsic
def _sched_getcpu(typingctx):
    """sched_getcpu(): the CPU the calling thread runs on now."""
    def codegen(context, builder, sig, args):
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(_I32, []), "sched_getcpu")
        return builder.call(fn, [])
    return types.int32(), codegen


@njit(cache=True, inline="always")
def pin_share(masks: np.ndarray, t: int, where: np.ndarray) -> None:
    """Pin the calling thread to row `t` of `masks` and record the CPU it is on in `where[t]`."""
    row = np.uint64(masks.ctypes.data) + np.uint64(t * masks.shape[1] * 8)
    _sched_setaffinity(row, masks.shape[1] * 8)
    where[t] = _sched_getcpu()


@njit(cache=True, parallel=True)
def pin_each(masks: np.ndarray, where: np.ndarray) -> int:
    """One region: share t pinned to row t (also how the workers are given their CPUs back)."""
    for t in prange(masks.shape[0]):
        pin_share(masks, t, where)
    return masks.shape[0]


def masks_for(cpu_sets: Sequence[Sequence[int]]) -> np.ndarray:
    """One affinity mask (uint64 words of a cpu_set_t) per share, from its CPU set."""
    top = max((c for cpus in cpu_sets for c in cpus), default=0)
    words = max(MASK_WORDS, top // 64 + 1)
    masks = np.zeros((len(cpu_sets), words), dtype=np.uint64)
    for row, cpus in enumerate(cpu_sets):
        for c in cpus:
            masks[row, c // 64] |= np.uint64(1) << np.uint64(c % 64)
    return masks


class Placed:
    """The CPUs of one multi-threaded run: share t on cpus[t]. `masks` and `where` go to the
    kernel; numba's thread count is set to len(cpus) so each thread gets one share."""

    def __init__(self, cpus: Sequence[int]) -> None:
        if not cpus:
            raise ValueError("a placed run needs at least one CPU")
        self.cpus = list(cpus)
        self.masks = masks_for([[c] for c in self.cpus])
        self.where = np.full(len(self.cpus), -1, dtype=np.int64)
        pool = int(numba.config.NUMBA_NUM_THREADS)  # type: ignore[attr-defined]
        if len(self.cpus) > pool:
            raise ValueError(f"{len(self.cpus)} threads asked, numba's pool has {pool} (NUMBA_NUM_THREADS)")
        numba.set_num_threads(len(self.cpus))

    @property
    def threads(self) -> int:
        return len(self.cpus)

    def verified(self) -> bool:
        """Whether every share last ran on its own CPU (sched_getcpu after pinning)."""
        return [int(c) for c in self.where] == self.cpus


@contextmanager
def pinned_pool(caller: int | None = None) -> Iterator[dict[str, Any]]:
    """Run placed kernels in the block; afterwards every worker gets the CPUs the calling thread had
    when the block began (the process's affinity, --bind included), so the next probe finds the
    pool as it was. `caller`: the calling thread runs the block on that CPU alone (what it times
    itself, one thread's figures, stays on one core: the OpenMP layer pins it with share 0 of each
    region, the workqueue layer never would). Yields the record for the report (`layer` filled in
    once a region ran)."""
    allowed = sorted(os.sched_getaffinity(0))
    record: dict[str, Any] = {"layer": None, "how": "sched_setaffinity from inside each parallel "
                              "region, share t on cpus[t]; sched_getcpu recorded per share"}
    try:
        if caller is not None:
            os.sched_setaffinity(0, {caller})
        yield record
    finally:
        pool = int(numba.config.NUMBA_NUM_THREADS)  # type: ignore[attr-defined]
        before = numba.get_num_threads()
        numba.set_num_threads(pool)
        pin_each(masks_for([allowed] * pool), np.zeros(pool, dtype=np.int64))
        numba.set_num_threads(before)
        os.sched_setaffinity(0, allowed)
        record["layer"] = threading_layer()


def threading_layer() -> str | None:
    """numba's threading layer in use (None before the pool started)."""
    try:
        return str(numba.threading_layer())
    except ValueError:
        return None


def order_of(host: Any, usable: Sequence[int]) -> tuple[list[int], int]:
    """(placement order of `usable` on this host, physical cores among them)."""
    cores = cpu_order.cpu_cores(host)
    order = cpu_order.placement_order(usable, cores)
    return order, cpu_order.physical_cores(order, cores)


def on_pinned_threads(cpus: Sequence[int], work: Callable[[int], T],
                      on_error: Callable[[], None] | None = None) -> list[T]:
    """Run `work(i)` on one Python thread per CPU, thread i pinned to cpus[i] (its own affinity,
    gone with the thread); the results in order. A failure in any thread is re-raised here, after
    `on_error` (e.g. releasing the others from a barrier) and every thread has ended.

    Every thread is pinned before any begins its work (a sleeping gate, not the kernels' spinning
    barrier). Why: a new thread starts with the caller's affinity, and one that landed on the CPU
    where an earlier thread already spun waited for that thread's time slice to end. On the 2-vCPU
    EPYC guest a start took 2 ms that way against 0.1 ms alone, 0.5 s of a 1.3 s `falseshare
    --quick` (12-07 04:55 UTC)."""
    results: list[T | None] = [None] * len(cpus)
    errors: list[BaseException] = []
    gate = threading.Barrier(len(cpus))

    def body(i: int) -> None:
        try:
            os.sched_setaffinity(0, {cpus[i]})
            gate.wait()
            results[i] = work(i)
        except threading.BrokenBarrierError:
            pass  # another thread failed before the work began: its error is the one raised
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            errors.append(exc)
            gate.abort()
            if on_error is not None:
                on_error()

    threads = [threading.Thread(target=body, args=(i,), daemon=True) for i in range(len(cpus))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return [r for r in results if r is not None]
