"""Allocation kernels: the C allocator called from compiled loops, a free-list pool, page touches, memcpy.

Only numbers come out of here. Every kernel times itself inside compiled code (`now_ns`).

Allocators are C functions: `malloc`/`free` of the process (ctypes.CDLL(None)) or of another
allocator's shared library (ctypes.CDLL(path)). numba can call a ctypes function object from
nopython code, but a kernel that does is never cached (the address is a "dynamic global"), and
`--quick` must not pay a compile each run. So the kernels take the function *addresses* as int64
arguments (probes/alloc/system.py `address`) and call them through `_call1`/`_call_void1`/`_call3`
(an llvmlite indirect call): the same machine
code a C program emits for a call through a function pointer, compiled once and cached.

Workers for the all-CPU runs are Python threads that pin themselves (`os.sched_setaffinity(0,
{cpu})` applies to the calling thread) and call `nogil` kernels; they meet at a spin barrier inside
compiled code, so thread start-up and the GIL stay outside the timed region. Each also reads its
own CPU time, so a preempted run can be told apart from a contended one.
"""

# numba intrinsics are called with fewer arguments than they are defined with (numba passes typingctx):
# mypy: disable-error-code="call-arg,var-annotated"
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from perfprobe.kernels.compiled import atomic_load64, atomic_store64, now_ns, opaque, spin_barrier, thread_cpu_ns
from perfprobe.kernels.placement import on_pinned_threads

_I64 = ir.IntType(64)
_I32 = ir.IntType(32)
_I8 = ir.IntType(8)
MIXED_MIN, MIXED_MAX = 16, 4096
MIXED_WARMUP = 64    # untimed mixed ops per slot before timing: the heap reaches its steady size


@intrinsic
def _call1(typingctx, fn, arg):
    """`((int64 (*)(int64)) fn)(arg)`: malloc through its address."""
    def codegen(context, builder, sig, args):
        fnty = ir.FunctionType(_I64, [_I64])
        return builder.call(builder.inttoptr(args[0], fnty.as_pointer()), [args[1]])
    return types.int64(types.int64, types.int64), codegen


@intrinsic
def _call_void1(typingctx, fn, arg):
    """`((void (*)(int64)) fn)(arg)`: free through its address."""
    def codegen(context, builder, sig, args):
        fnty = ir.FunctionType(ir.VoidType(), [_I64])
        builder.call(builder.inttoptr(args[0], fnty.as_pointer()), [args[1]])
        return context.get_dummy_value()
    return types.none(types.int64, types.int64), codegen


@intrinsic
def _call3(typingctx, fn, a, b, c):
    """`((int64 (*)(int64, int64, int64)) fn)(a, b, c)`: memcpy through its address."""
    def codegen(context, builder, sig, args):
        fnty = ir.FunctionType(_I64, [_I64, _I64, _I64])
        return builder.call(builder.inttoptr(args[0], fnty.as_pointer()), list(args[1:]))
    return types.int64(types.int64, types.int64, types.int64, types.int64), codegen


@intrinsic
def _poke(typingctx, addr, value):
    """Store one byte at `addr` (the touch a program makes of memory it just got)."""
    def codegen(context, builder, sig, args):
        ptr = builder.inttoptr(args[0], _I8.as_pointer())
        builder.store(builder.trunc(args[1], _I8), ptr, align=1)
        return context.get_dummy_value()
    return types.none(types.int64, types.int64), codegen


_load64: Any = atomic_load64("monotonic", "An atomic (monotonic) load of the int64 at addr.")
_store64: Any = atomic_store64("monotonic", "An atomic (monotonic) store of value to the int64 at addr.")


@intrinsic
def _clobber(typingctx):
    """An empty asm with a memory clobber: the pool's free list is re-read from memory after it,
    as when pop and push are separate calls (without it LLVM folds the pop/push pair away)."""
    def codegen(context, builder, sig, args):
        builder.asm(ir.FunctionType(ir.VoidType(), []), "", "~{memory}", [], True)
        return context.get_dummy_value()
    return types.none(), codegen






@njit(cache=True, nogil=True)
def _xorshift(x: int) -> int:
    x ^= x << 13
    x ^= (x >> 7) & 0x01FFFFFFFFFFFFFF
    x ^= x << 17
    return x


@njit(cache=True, nogil=True)
def mixed_size(r: int) -> int:
    """A size from 16 B to 4 KiB, log-uniform by class (as small blocks outnumber large ones):
    class k in 0..8 picks [16 << k, 32 << k), capped at 4 KiB. The C reference draws the same."""
    k = ((r >> 3) & 0xFFFF) % 9
    base = 16 << k
    size = base + ((r >> 16) & 0xFFFFFFFF) % base
    return min(size, 4096)


# --- malloc/free: one kernel per pattern; `kind` 0 = the allocator, 1 = a fixed-size pool ---

@njit(cache=True, nogil=True)
def _pool_init(base: int, block: int, count: int) -> int:
    """Thread a free list through `count` blocks of `block` bytes at `base`; the head."""
    for i in range(count - 1):
        _store64(base + i * block, base + (i + 1) * block)
    _store64(base + (count - 1) * block, 0)
    return base


@njit(cache=True, nogil=True)
def _pairs(malloc: int, free: int, size: int, iters: int, kind: int, pool: int, block: int) -> int:
    """`iters` malloc(size)+free pairs (kind 0) or pool pop+push pairs (kind 1), each block
    touched once; ns for the loop."""
    head = 0
    if kind == 1:
        head = _pool_init(pool, block, 64)
    start = now_ns()
    p: int
    if kind == 0:
        for i in range(iters):
            p = _call1(malloc, size)
            _poke(p, i)
            _call_void1(free, p)
    else:
        for i in range(iters):
            p = head
            head = _load64(p)
            _poke(p + 8, i)
            _clobber()
            _store64(p, head)
            head = p
            _clobber()
    return now_ns() - start


@njit(cache=True, nogil=True)
def _mixed_fill(malloc: int, slots: np.ndarray, seed: int, kind: int, pool: int) -> tuple:
    """Fill the working set: `slots.size` live blocks of random sizes (kind 1: from a pool of
    4 KiB blocks). The (random state, pool head) the ops continue from."""
    n = slots.size
    r = seed
    head = 0
    if kind == 1:
        head = _pool_init(pool, MIXED_MAX, n + 1)
    for j in range(n):
        r = _xorshift(r)
        if kind == 0:
            slots[j] = _call1(malloc, mixed_size(r))
        else:
            slots[j] = head
            head = _load64(head)
        _poke(slots[j] + 8, j)
    return r, head


@njit(cache=True, nogil=True)
def _mixed_ops(malloc: int, free: int, slots: np.ndarray, iters: int, r: int, head: int,
               kind: int) -> tuple:
    """`iters` ops on the working set: free a random block, allocate one of a new random size
    in its place, touch its last byte. The (random state, pool head) after them."""
    n = slots.size
    for i in range(iters):
        r = _xorshift(r)
        j = ((r >> 24) & 0xFFFFFFFF) % n
        size = mixed_size(r)
        if kind == 0:
            _call_void1(free, slots[j])
            p = _call1(malloc, size)
        else:
            _store64(slots[j], head)
            head = slots[j]
            _clobber()
            p = head
            head = _load64(p)
        _poke(p + size - 1, i)
        slots[j] = p
    return r, head


@njit(cache=True, nogil=True)
def _mixed_drain(free: int, slots: np.ndarray, kind: int) -> None:
    if kind == 0:
        for j in range(slots.size):
            _call_void1(free, slots[j])


@njit(cache=True, nogil=True)
def pairs_worker(ready: int, parties: int, malloc: int, free: int, size: int, iters: int,
                 kind: int, pool: int, block: int) -> tuple:
    """Warm up, meet the others, time the pairs: (start_ns, end_ns, cpu_ns)."""
    _pairs(malloc, free, size, 256, kind, pool, block)
    spin_barrier(ready, parties)
    cpu = thread_cpu_ns()
    start = now_ns()
    _pairs(malloc, free, size, iters, kind, pool, block)
    end = now_ns()
    return start, end, thread_cpu_ns() - cpu


@njit(cache=True, nogil=True)
def mixed_worker(ready: int, parties: int, malloc: int, free: int, slots: np.ndarray, iters: int,
                 seed: int, kind: int, pool: int) -> tuple:
    """Fill the working set and warm it up to its steady state (`MIXED_WARMUP` ops a slot, so the
    heap has grown and the timed ops fault in no new pages), meet the others, time only the ops:
    (start_ns, end_ns, cpu_ns); the working set is freed after the clock stops."""
    r, head = _mixed_fill(malloc, slots, seed, kind, pool)
    r, head = _mixed_ops(malloc, free, slots, MIXED_WARMUP * slots.size, r, head, kind)
    spin_barrier(ready, parties)
    cpu = thread_cpu_ns()
    start = now_ns()
    _mixed_ops(malloc, free, slots, iters, r, head, kind)
    end = now_ns()
    cpu = thread_cpu_ns() - cpu
    _mixed_drain(free, slots, kind)
    return start, end, cpu


# --- first touch, copies, moves ---

@njit(cache=True, nogil=True)
def touch(base: int, nbytes: int, stride: int) -> int:
    """Write one byte every `stride` bytes of [base, base + nbytes): ns."""
    start = now_ns()
    for off in range(0, nbytes, stride):
        _poke(base + off, off)
    return now_ns() - start


@njit(cache=True, nogil=True)
def touch_worker(ready: int, parties: int, base: int, nbytes: int, stride: int) -> tuple:
    spin_barrier(ready, parties)
    cpu = thread_cpu_ns()
    start = now_ns()
    touch(base, nbytes, stride)
    end = now_ns()
    return start, end, thread_cpu_ns() - cpu


@njit(cache=True, nogil=True)
def copy(memcpy: int, dst: int, src: int, nbytes: int, reps: int) -> int:
    """`reps` memcpy(dst, src, nbytes) calls: ns."""
    start = now_ns()
    for _ in range(reps):
        _call3(memcpy, dst, src, nbytes)
        opaque()
    return now_ns() - start


@njit(cache=True, nogil=True)
def move(slots: int, reps: int) -> int:
    """Hand a buffer over `reps` times: read the owner's pointer, store it in the new owner's
    slot, clear the old one (a C++ move of a unique_ptr), through memory each time. ns."""
    _store64(slots, slots + 64)
    start = now_ns()
    for i in range(reps):
        a = slots + (i & 1) * 8
        b = slots + 8 - (i & 1) * 8
        _store64(b, _load64(a))
        _store64(a, 0)
        opaque()
    return now_ns() - start


# --- Python side: threads ---

def run_threads(cpus: Sequence[int], work: Callable[[int, int, int], tuple]) -> list[tuple]:
    """Run `work(ready_addr, parties, i)` on one pinned thread per CPU; their (start, end, cpu)."""
    ready = np.zeros(8, dtype=np.int64)
    parties = len(cpus)

    def release() -> None:  # a failed thread lets the others past the start barrier
        ready[0] += parties

    return on_pinned_threads(cpus, lambda i: work(ready.ctypes.data, parties, i), on_error=release)
