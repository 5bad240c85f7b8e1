"""False-sharing and core-to-core kernels: pinned threads hammering counters in one shared page.

Only numbers come out of here. Each worker is a Python thread that pins itself with
`os.sched_setaffinity(0, {cpu})` (Linux applies it to the calling thread only, and it dies with
the thread, so the main thread's affinity never changes) and then calls a `nogil` numba function,
so the workers truly run in parallel.

Memory operations are llvmlite intrinsics on raw addresses, because numba has no atomics:
- atomic update: `atomicrmw add seq_cst` (x86: `lock add`/`lock xadd`),
- plain update: a relaxed (monotonic) atomic load, an add, and a relaxed atomic store, with an empty
  asm memory clobber between them. LLVM may not merge, hoist or drop those, so every iteration loads
  and stores memory, with no lock prefix or fence (x86: `mov`, `inc`, `mov`) — the code a C
  compiler emits for a `volatile` increment.
  `plain_loop_touches_memory()` checks this in the generated assembly.
Timing is `clock_gettime(CLOCK_MONOTONIC)` called from inside the kernel, after a spin barrier, so
thread start-up and the GIL are outside the timed region.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from perfprobe.kernels.compiled import now_ns, spin_barrier, thread_cpu_ns
from perfprobe.kernels.placement import on_pinned_threads

PAGE_BYTES = 4096
KIND_ATOMIC = 0
KIND_PLAIN = 1
KINDS = {"atomic": KIND_ATOMIC, "plain": KIND_PLAIN}
_intrinsic: Any = intrinsic  # its typed __call__ counts typingctx, which numba passes itself
_I64 = ir.IntType(64)
_I32 = ir.IntType(32)
PREEMPTED_BELOW = 0.9  # a thread that got less than 90% of its wall time on the CPU was preempted


def _ptr(builder: ir.IRBuilder, addr: ir.Value) -> ir.Value:
    return builder.inttoptr(addr, _I64.as_pointer())


@_intrinsic
def _atomic_add(typingctx, addr, value):
    """`*addr += value` as one seq_cst atomic read-modify-write; returns the old value."""
    def codegen(context, builder, sig, args):
        return builder.atomic_rmw("add", _ptr(builder, args[0]), args[1], "seq_cst")
    return types.int64(types.int64, types.int64), codegen


@_intrinsic
def _load(typingctx, addr, ordering):
    """An atomic 8-byte load the optimiser must perform (`ordering`: 0 relaxed, 1 acquire)."""
    order = "acquire" if getattr(ordering, "literal_value", 0) else "monotonic"

    def codegen(context, builder, sig, args):
        return builder.load_atomic(_ptr(builder, args[0]), order, 8)
    return types.int64(types.int64, ordering), codegen


@_intrinsic
def _store(typingctx, addr, value, ordering):
    """An atomic 8-byte store the optimiser must perform (`ordering`: 0 relaxed, 1 release)."""
    order = "release" if getattr(ordering, "literal_value", 0) else "monotonic"

    def codegen(context, builder, sig, args):
        builder.store_atomic(args[1], _ptr(builder, args[0]), order, 8)
        return context.get_dummy_value()
    return types.none(types.int64, types.int64, ordering), codegen




@_intrinsic
def _compiler_barrier(typingctx):
    """An empty asm with a memory clobber: keeps a load and the following store separate
    instructions (no `incq (mem)` fusion), as a C compiler emits a `volatile` increment."""
    def codegen(context, builder, sig, args):
        builder.asm(ir.FunctionType(ir.VoidType(), []), "", "~{memory}", [], True)
        return context.get_dummy_value()
    return types.none(), codegen




@njit(nogil=True, cache=True)
def atomic_loop(addr: int, iters: int) -> None:
    """`iters` atomic increments of the counter at `addr`."""
    for _ in range(iters):
        _atomic_add(addr, 1)


@njit(nogil=True, cache=True)
def plain_loop(addr: int, iters: int) -> None:
    """`iters` plain increments (load, add, store) of the counter at `addr`, none kept in a register."""
    for _ in range(iters):
        value = _load(addr, 0)
        _compiler_barrier()
        _store(addr, value + 1, 0)


@njit(nogil=True, cache=True)
def counter_worker(addr: int, ready_addr: int, parties: int, iters: int, kind: int) -> tuple:
    """Meet the others at the barrier, then update one counter.

    Returns (start_ns, end_ns, cpu_ns): wall clock at both ends and the thread's CPU time between.
    """
    spin_barrier(ready_addr, parties)
    cpu = thread_cpu_ns()
    start = now_ns()
    if kind == 0:
        atomic_loop(addr, iters)
    else:
        plain_loop(addr, iters)
    end = now_ns()
    return start, end, thread_cpu_ns() - cpu


@njit(nogil=True, cache=True)
def pingpong_worker(flag_addr: int, ready_addr: int, role: int, rounds: int) -> tuple:
    """Hand the flag's line back and forth `rounds` times: role 0 writes odd, role 1 even values."""
    spin_barrier(ready_addr, 2)
    cpu = thread_cpu_ns()
    start = now_ns()
    for i in range(rounds):
        wait_for = 2 * i + role
        while _load(flag_addr, 1) != wait_for:
            pass
        _store(flag_addr, wait_for + 1, 1)
    end = now_ns()
    return start, end, thread_cpu_ns() - cpu


@dataclass(frozen=True)
class ThreadTimes:
    """What one parallel run returns: each thread's wall-clock start and end, its CPU time in
    between, and the counters' final values."""

    starts_ns: tuple[int, ...]
    ends_ns: tuple[int, ...]
    cpu_ns: tuple[int, ...]
    counters: tuple[int, ...]

    @property
    def preempted(self) -> bool:
        """Whether some thread lost its CPU to other work for over 10% of its timed loop."""
        return any(c < PREEMPTED_BELOW * (e - s) for s, e, c in zip(self.starts_ns, self.ends_ns, self.cpu_ns))

    @property
    def span_ns(self) -> int:
        """From the first thread leaving the barrier to the last one finishing."""
        return max(self.ends_ns) - min(self.starts_ns)


def aligned_zeros(nbytes: int) -> np.ndarray:
    """A zeroed int64 array whose data starts on a page boundary (the caller keeps it alive)."""
    raw = np.zeros(nbytes + PAGE_BYTES, dtype=np.uint8)
    offset = (-raw.ctypes.data) % PAGE_BYTES
    return raw[offset:offset + nbytes].view(np.int64)


def counter_offsets(threads: int, spacing_bytes: int) -> list[int]:
    """Byte offset of each thread's counter; spacing 0 puts every thread on one counter."""
    return [i * spacing_bytes for i in range(threads)]


def compile_kernels() -> None:
    """Compile (or load from numba's cache) the workers in this thread, once, so that worker
    threads never compile concurrently. The barriers pass at once: parties 0, and a ready word
    already at 2 for the ping-pong."""
    if _compiled:
        return
    buf = aligned_zeros(2 * PAGE_BYTES)
    base, ready = buf.ctypes.data, buf.ctypes.data + PAGE_BYTES
    for code in KINDS.values():
        counter_worker(base, ready, 0, 1, code)
    buf[PAGE_BYTES // 8] = 1
    pingpong_worker(base, ready, 0, 0)
    _compiled.append(True)


_compiled: list[bool] = []


def _run_pinned(cpus: Sequence[int], work: Callable[[int], tuple]) -> list[tuple]:
    """Run `work(i)` in one thread per CPU, thread i pinned to cpus[i]; re-raise any failure."""
    compile_kernels()
    return on_pinned_threads(cpus, work)


def run_counters(cpus: Sequence[int], spacing_bytes: int, iters: int, kind: str) -> ThreadTimes:
    """One run: thread i on cpus[i] adds 1 `iters` times to its counter at i*spacing_bytes.

    All counters live in one page-aligned array (the barrier word sits on its own page after it).
    A `spacing_bytes` of 0 is true sharing: every thread updates the same counter.
    """
    if spacing_bytes % 8:
        raise ValueError(f"spacing must be a multiple of 8 bytes, got {spacing_bytes}")
    offsets = counter_offsets(len(cpus), spacing_bytes)
    area = -(-(offsets[-1] + 8) // PAGE_BYTES) * PAGE_BYTES
    buf = aligned_zeros(area + PAGE_BYTES)
    base, ready = buf.ctypes.data, buf.ctypes.data + area
    code = KINDS[kind]
    times = _run_pinned(cpus, lambda i: counter_worker(base + offsets[i], ready, len(cpus), iters, code))
    counters = tuple(int(buf[o // 8]) for o in sorted(set(offsets)))
    return _thread_times(times, counters)


def run_pingpong(cpu_a: int, cpu_b: int, rounds: int) -> ThreadTimes:
    """One ping-pong run between two CPUs on one flag; span/rounds is one round trip."""
    buf = aligned_zeros(2 * PAGE_BYTES)
    flag, ready = buf.ctypes.data, buf.ctypes.data + PAGE_BYTES
    times = _run_pinned([cpu_a, cpu_b], lambda i: pingpong_worker(flag, ready, i, rounds))
    return _thread_times(times, (int(buf[0]),))


def _thread_times(times: Sequence[tuple], counters: tuple[int, ...]) -> ThreadTimes:
    return ThreadTimes(tuple(t[0] for t in times), tuple(t[1] for t in times),
                       tuple(t[2] for t in times), counters)


def plain_loop_touches_memory() -> tuple[bool, str]:
    """Whether the plain loop's x86-64 code updates the counter in memory on every iteration.

    Looks for an unlocked read-modify-write on a memory operand (`incq (%rdx)`) or a load and a
    store of the same operand in the compiled loop. Returns (ok, how it was checked); on other ISAs
    the check is not made and says so.
    """
    machine = os.uname().machine
    if machine not in ("x86_64", "amd64"):
        return True, f"not checked: assembly check is x86-64 only (this is {machine})"
    fresh = njit(nogil=True)(plain_loop.py_func)  # cached code cannot be inspected: compile a twin
    scratch = aligned_zeros(PAGE_BYTES)  # kept alive while the kernel writes to it
    fresh(scratch.ctypes.data, 1)
    asm = next(iter(fresh.inspect_asm().values())).split("_ZN7cpython")[0]
    rmw = re.findall(r"^\s*(?:inc|add)q\s+(?:\$1,\s*)?(\(%\w+\))", asm, re.M)
    loads = set(re.findall(r"^\s*movq\s+(\(%\w+\)),\s*%\w+", asm, re.M))
    stores = set(re.findall(r"^\s*movq\s+%\w+,\s*(\(%\w+\))", asm, re.M))
    locked = re.search(r"^\s*lock", asm, re.M) is not None
    ok = (bool(rmw) or bool(loads & stores)) and not locked
    form = f"`incq {rmw[0]}`" if rmw else "load + store of the counter"
    return ok, f"inspect_asm of plain_loop: {form} each iteration, no lock prefix" if ok else \
        "inspect_asm of plain_loop: no unlocked memory update found in the loop"
