"""IPC kernels: ping-pong and one-way streams over file descriptors and a shared-memory ring.

Only numbers come out of here. The hot loops are numba nopython code that calls libc itself, so a
figure is the transport's cost, never the interpreter's:
- libc's read/write/send/recv/syscall(SYS_futex)/__errno_location are declared as external symbols
  in the kernel's LLVM module (the way compiled.now_ns calls clock_gettime) rather than called
  through ctypes function pointers: numba refuses to cache a kernel that holds a ctypes pointer
  ("uses dynamic globals"), and compiling every kernel anew in both processes on every run would
  cost seconds. The symbols resolve against the process's own libc when the kernel is loaded.
- The ring (one per direction, single producer, single consumer) is polled in the slot itself:
  every slot ends in a sequence word (the message's index + 1, written last with a release store),
  so a message of up to 56 bytes travels in one cache line with its sequence word, and the
  consumer spins on the line that brings it the data. Neither side touches a shared head on the
  fast path: the producer keeps its head and a cached copy of the consumer's tail, reading the
  tail word again only when the cached one says the ring is full; the consumer publishes its tail
  once every quarter of the ring. The wait flags (and the full fence that orders a flag against a
  publish) are touched only in the futex and eventfd modes. After a publish the producer demotes a
  slot of up to DEMOTE_MAX bytes line by line (CLDEMOTE, where the compiled-for CPU has it), so the
  consumer reads the lines from the shared LLC rather than snooping the producer's core: the
  64 B message's two lines then cost about what one line costs. Loads are LLVM atomic (acquire) so the
  compiler can neither hoist one out of a spin loop nor reorder a copy around a publish, on x86
  and Arm alike; on x86 they are plain moves.
- Copies: a message of up to COPY_INLINE bytes (a multiple of 8) is copied in 8-byte words in the
  kernel itself (a libc call costs more than the copy at 64 B: four copies a round trip); larger
  ones go to libc's memcpy, the fastest copy there is for KiB to MiB (vector loops, `rep movsb`).

Every kernel takes a deadline (CLOCK_MONOTONIC ns, the clock of Python's time.monotonic_ns()) or
relies on a socket timeout, and every wait re-reads the shared abort word, so no wait outlasts a dead
peer: a kernel returns an error code (an errno, EOF, TIMEOUT or ABORTED), never hangs. A signal
(Ctrl-C) interrupts a blocking system call with EINTR, returned as such, so Python raises
KeyboardInterrupt as soon as the kernel returns.
"""

# numba intrinsics are called with fewer arguments than they are defined with (numba passes typingctx):
# mypy: disable-error-code="call-arg,var-annotated"
from __future__ import annotations

import platform
from typing import Any

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from perfprobe.kernels.compiled import atomic_load64, atomic_store64, now_ns

_I64, _I32 = ir.IntType(64), ir.IntType(32)
_PTR = ir.IntType(8).as_pointer()

EOF, TIMEOUT, ABORTED = -1, -2, -3          # kernel error codes besides a positive errno
EINTR, EAGAIN = 4, 11
SYS_FUTEX = {"x86_64": 202, "aarch64": 98, "ppc64le": 221, "s390x": 238}.get(platform.machine(), 202)
FUTEX_WAIT, FUTEX_WAKE = 0, 1               # shared (not _PRIVATE): the word is in a shared mapping
SPIN, FUTEX, EVENTFD = 0, 1, 2              # how a ring waiter waits
# The control words, in int64 units, each on its own 64-byte line (ring r's words at RING_WORDS*(r+1)):
# the consumer's published tail and the two wait flags. There is no shared head: the slots carry it.
ABORT = 0
TAIL, CONSUMER_WAITS, PRODUCER_WAITS = 0, 8, 16
RING_WORDS = 24
CTL_WORDS = RING_WORDS * 3
LINE = 64
SEQ_BYTES = 8                               # the sequence word at the end of every slot
COPY_INLINE = 256                           # copies up to this size stay in the kernel
CHECK_EVERY = 1024                          # spins between reads of the clock and the abort word
FUTEX_SLICE_NS = 50_000_000                 # a futex wait returns at least this often to re-check


def _extern(builder, name, ret, args, var_arg=False):
    return cgutils.get_or_insert_function(builder.module, ir.FunctionType(ret, args, var_arg=var_arg), name)


_FD_CALL = types.int64(types.int64, types.int64, types.int64)


def _fd_call(name: str, flags: int | None = None):
    """The codegen of an intrinsic calling libc `name(fd, (void*)addr, n[, flags])` -> ssize_t."""
    def codegen(context, builder, sig, args):
        extra = [] if flags is None else [ir.Constant(_I32, flags)]
        fn = _extern(builder, name, _I64, [_I32, _PTR, _I64] + [_I32] * len(extra))
        return builder.call(fn, [builder.trunc(args[0], _I32), builder.inttoptr(args[1], _PTR), args[2]] + extra)
    return codegen


@intrinsic
def c_read(typingctx, fd, addr, n):
    """read(fd, (void*)addr, n) -> ssize_t."""
    return _FD_CALL, _fd_call("read")


@intrinsic
def c_write(typingctx, fd, addr, n):
    """write(fd, (const void*)addr, n) -> ssize_t."""
    return _FD_CALL, _fd_call("write")


@intrinsic
def c_send(typingctx, fd, addr, n):
    """send(fd, addr, n, MSG_NOSIGNAL): a closed peer is EPIPE, not SIGPIPE."""
    return _FD_CALL, _fd_call("send", 0x4000)


@intrinsic
def c_recv(typingctx, fd, addr, n):
    """recv(fd, addr, n, 0)."""
    return _FD_CALL, _fd_call("recv", 0)


@intrinsic
def c_futex(typingctx, addr, op, val, timeout_ns):
    """syscall(SYS_futex, addr, op, val, &timespec or NULL, NULL, 0); timeout_ns < 0: none."""
    def codegen(context, builder, sig, args):
        fn = _extern(builder, "syscall", _I64, [_I64], var_arg=True)
        ts_type = ir.ArrayType(_I64, 2)
        ts = cgutils.alloca_once(builder, ts_type)
        zero, billion = ir.Constant(_I32, 0), ir.Constant(_I64, 1_000_000_000)
        builder.store(builder.sdiv(args[3], billion), builder.gep(ts, [zero, zero]))
        builder.store(builder.srem(args[3], billion), builder.gep(ts, [zero, ir.Constant(_I32, 1)]))
        has_timeout = builder.icmp_signed(">=", args[3], ir.Constant(_I64, 0))
        ts_arg = builder.select(has_timeout, builder.ptrtoint(ts, _I64), ir.Constant(_I64, 0))
        call_args = [ir.Constant(_I64, SYS_FUTEX), args[0], args[1], builder.trunc(args[2], _I32), ts_arg,
                     ir.Constant(_I64, 0), ir.Constant(_I64, 0)]
        return builder.call(fn, call_args)
    return types.int64(types.int64, types.int64, types.int64, types.int64), codegen


@intrinsic
def c_memcpy(typingctx, dst, src, n):
    """memcpy((void*)dst, (const void*)src, n): libc's vectorised copy (numba's slice assignment
    of uint8 arrays compiles to a byte loop, several times slower from a few KiB on)."""
    def codegen(context, builder, sig, args):
        fn = _extern(builder, "memcpy", _PTR, [_PTR, _PTR, _I64])
        builder.call(fn, [builder.inttoptr(args[0], _PTR), builder.inttoptr(args[1], _PTR), args[2]])
        return context.get_dummy_value()
    return types.none(types.int64, types.int64, types.int64), codegen


@intrinsic
def c_errno(typingctx):
    """The calling thread's errno."""
    def codegen(context, builder, sig, args):
        fn = _extern(builder, "__errno_location", _I32.as_pointer(), [])
        return builder.sext(builder.load(builder.call(fn, [])), _I64)
    return types.int64(), codegen


@njit(cache=True, nogil=True)
def _error(ret: int) -> int:
    """A positive errno, or EOF for a zero-length read."""
    return EOF if ret == 0 else c_errno()


@njit(cache=True, nogil=True)
def fd_send(fd: int, addr: int, n: int, sock: bool) -> int:
    """Send n bytes whole (a stream may take them in parts); 0 or an error code."""
    done = 0
    while done < n:
        ret = c_send(fd, addr + done, n - done) if sock else c_write(fd, addr + done, n - done)
        if ret <= 0:
            return _error(ret) if ret < 0 else EOF
        done += ret
    return 0


@njit(cache=True, nogil=True)
def fd_recv(fd: int, addr: int, n: int, sock: bool, packet: bool) -> int:
    """Receive one n-byte message (a datagram in one recv, a stream until n bytes); 0 or an error."""
    done = 0
    while done < n:
        ret = c_recv(fd, addr + done, n - done) if sock else c_read(fd, addr + done, n - done)
        if ret <= 0:
            return _error(ret)
        done += ret
        if packet:
            return 0
    return 0


@njit(cache=True, nogil=True)
def fd_pingpong(wfd: int, rfd: int, buf: np.ndarray, lat_ns: np.ndarray, sock: bool, packet: bool) -> int:
    """lat_ns.size round trips of buf.size bytes (send, then wait for the echo), each timed; 0 or an error."""
    addr, n = buf.ctypes.data, buf.size
    for i in range(lat_ns.size):
        start = now_ns()
        err = fd_send(wfd, addr, n, sock)
        if err == 0:
            err = fd_recv(rfd, addr, n, sock, packet)
        if err != 0:
            return err
        lat_ns[i] = now_ns() - start
    return 0


@njit(cache=True, nogil=True)
def fd_echo(rfd: int, wfd: int, buf: np.ndarray, count: int, sock: bool, packet: bool) -> int:
    """The worker's side of fd_pingpong: receive, send back, count times."""
    addr, n = buf.ctypes.data, buf.size
    for _ in range(count):
        err = fd_recv(rfd, addr, n, sock, packet)
        if err == 0:
            err = fd_send(wfd, addr, n, sock)
        if err != 0:
            return err
    return 0


@njit(cache=True, nogil=True)
def fd_stream(wfd: int, rfd: int, buf: np.ndarray, count: int, sock: bool, packet: bool) -> tuple:
    """(ns, error) for count one-way messages and the worker's 8-byte acknowledgement of the last;
    one untimed round trip first, so both ends are in their loops when the clock starts."""
    addr, n = buf.ctypes.data, buf.size
    err = fd_send(wfd, addr, 8, sock)
    if err == 0:
        err = fd_recv(rfd, addr, 8, sock, packet)
    start = now_ns()
    for _ in range(count):
        if err != 0:
            break
        err = fd_send(wfd, addr, n, sock)
    if err == 0:
        err = fd_recv(rfd, addr, 8, sock, packet)
    return now_ns() - start, err


@njit(cache=True, nogil=True)
def fd_sink(rfd: int, wfd: int, buf: np.ndarray, count: int, sock: bool, packet: bool) -> int:
    """The worker's side of fd_stream: the handshake, count messages, then the acknowledgement."""
    addr, n = buf.ctypes.data, buf.size
    err = fd_recv(rfd, addr, 8, sock, packet)
    if err == 0:
        err = fd_send(wfd, addr, 8, sock)
    for _ in range(count):
        if err != 0:
            return err
        err = fd_recv(rfd, addr, n, sock, packet)
    return fd_send(wfd, addr, 8, sock) if err == 0 else err


load_acquire: Any = atomic_load64("acquire", "An acquire load of the int64 at addr (x86: a plain move).")
store_release: Any = atomic_store64("release", "A release store to addr: every copy before it is seen first.")


@intrinsic
def fence(typingctx):
    """A full (seq_cst) fence: orders a publish against the read of the other side's wait flag."""
    def codegen(context, builder, sig, args):
        builder.fence("seq_cst")
        return context.get_dummy_value()
    return types.none(), codegen


@intrinsic
def _peek(typingctx, addr):
    """A plain 8-byte load from addr (any alignment)."""
    def codegen(context, builder, sig, args):
        return builder.load(builder.inttoptr(args[0], _I64.as_pointer()), align=1)
    return types.int64(types.int64), codegen


@intrinsic
def _poke(typingctx, addr, value):
    """A plain 8-byte store to addr (any alignment)."""
    def codegen(context, builder, sig, args):
        builder.store(args[1], builder.inttoptr(args[0], _I64.as_pointer()), align=1)
        return context.get_dummy_value()
    return types.none(types.int64, types.int64), codegen


def _can_demote() -> bool:
    """Whether the kernels are compiled for a CPU with CLDEMOTE (llvm.x86.cldemote cannot be
    selected for one without it): the host's own features, unless numba is told to compile for a
    named CPU or feature set (NUMBA_CPU_NAME / NUMBA_CPU_FEATURES, a portable cache)."""
    from llvmlite import binding
    from numba import config

    name, features = getattr(config, "CPU_NAME", None), getattr(config, "CPU_FEATURES", None)
    if name or features:
        return "+cldemote" in str(features or "")
    try:
        return bool(binding.get_host_cpu_features().get("cldemote"))
    except RuntimeError:   # no feature list on this platform
        return False


DEMOTE = _can_demote()
DEMOTE_MAX = 512                            # slots up to this stride are demoted line by line after a publish


@intrinsic
def _demote(typingctx, addr):
    """CLDEMOTE the line at addr (llvm.x86.cldemote), where the CPU has it: a hint that moves the
    line from this core's caches to the shared LLC, where the consumer's next read finds it without
    a snoop of this core. Elsewhere nothing is emitted. The ring's publish ends with it."""
    def codegen(context, builder, sig, args):
        if DEMOTE:
            fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), [_PTR]),
                                                "llvm.x86.cldemote")
            builder.call(fn, [builder.inttoptr(args[0], _PTR)])
        return context.get_dummy_value()
    return types.none(types.int64), codegen


@njit(cache=True, nogil=True, inline="always")
def copy(dst: int, src: int, n: int) -> None:
    """n bytes from src to dst: in 8-byte words here up to COPY_INLINE bytes, else libc's memcpy."""
    if n <= COPY_INLINE and n % 8 == 0:
        for i in range(0, n, 8):
            _poke(dst + i, _peek(src + i))
    else:
        c_memcpy(dst, src, n)


store_sc: Any = atomic_store64("seq_cst", "An atomic seq_cst store to the int64 at addr (a wait flag: the re-read after it cannot pass it).")
load_sc: Any = atomic_load64("seq_cst", "An atomic seq_cst load of the int64 at addr.")


# The ring kernels work on raw addresses (ints), never on arrays below the entry point: an array
# passed on, even to an inlined function, costs numba's reference counting (NRT_incref/decref, each
# a call and a locked add) on every push and pop, which read as 20-25% of a 64 B round trip.
@njit(cache=True, nogil=True)
def _wait_change(ctl: int, addr: int, old: int, flag: int, mode: int, my_efd: int,
                 scratch: int, deadline_ns: int) -> int:
    """Wait until the int64 at addr != old (spinning, or asleep on a futex or an eventfd with the
    flag word at `flag` raised so the other side knows to wake us); 0, ABORTED, TIMEOUT or an errno.
    `ctl` is the control words' address (the abort word is its first)."""
    spins = 0
    while load_acquire(addr) == old:
        if mode == SPIN:
            spins += 1
            if spins % CHECK_EVERY != 0:
                continue
        elif mode == FUTEX or mode == EVENTFD:
            store_sc(flag, 1)
            if load_sc(ctl + 8 * ABORT) == 0 and load_sc(addr) == old:   # the other side publishes, fences, reads the flag
                if mode == FUTEX:
                    ret = c_futex(addr, FUTEX_WAIT, old & 0xFFFFFFFF, FUTEX_SLICE_NS)
                    if ret < 0 and c_errno() == EINTR:
                        store_sc(flag, 0)
                        return EINTR
                else:
                    ret = c_read(my_efd, scratch, 8)
                    if ret < 0:
                        store_sc(flag, 0)
                        return c_errno()
            store_sc(flag, 0)
        if load_acquire(ctl + 8 * ABORT) != 0:
            return ABORTED
        if now_ns() > deadline_ns:
            return TIMEOUT
    return 0


@njit(cache=True, nogil=True, inline="always")
def _wake(addr: int, flag: int, mode: int, peer_efd: int, scratch: int) -> None:
    """After a publish, in the sleeping modes only: wake the other side if it said it sleeps."""
    if mode != SPIN:
        fence()
        if load_sc(flag) != 0:
            if mode == FUTEX:
                c_futex(addr, FUTEX_WAKE, 1, -1)
            else:
                c_write(peer_efd, scratch + 8, 8)  # scratch[1] holds 1: the eventfd's increment


# Each side's private indices, words of its scratch buffer (never shared): as producer on its
# outgoing ring, its head, the slot the head is in, and its cached copy of the consumer's tail; as
# consumer on its incoming ring, its tail, the slot the tail is in, and the tail it last published.
HEAD_I, HEAD_SLOT, CACHED_TAIL, TAIL_I, TAIL_SLOT, PUBLISHED = 2, 3, 4, 5, 6, 7
SCRATCH_WORDS = 8


@njit(cache=True, nogil=True, inline="always")
def _get(sc: int, word: int) -> int:
    return _peek(sc + 8 * word)


@njit(cache=True, nogil=True, inline="always")
def _set(sc: int, word: int, value: int) -> None:
    _poke(sc + 8 * word, value)


@njit(cache=True, nogil=True, inline="always")
def _fresh(sc: int) -> int:
    """Both rings start empty at index 0 (ring_reset): this side's indices back to 0."""
    for word in range(HEAD_I, SCRATCH_WORDS):
        _poke(sc + 8 * word, 0)
    return sc


@njit(cache=True, nogil=True, inline="always")
def _ring_word(ctl: int, ring: int, word: int) -> int:
    return ctl + 8 * (RING_WORDS * (ring + 1) + word)


# inline="always" (numba's own inlining): compiled as separate functions, every push and pop was a
# call with its arguments passed on the stack and an exception-status check, and the 64 B
# spinning-ring round trip read ~25 ns (7-22%) slower than bench/ipc_ref.c on both hosts.
@njit(cache=True, nogil=True, inline="always")
def ring_push(ctl: int, data: int, half: int, ring: int, slots: int, stride: int, src: int, n: int,
              mode: int, my_efd: int, peer_efd: int, sc: int, deadline_ns: int) -> int:
    """Copy n bytes from address src into the next slot of ring `ring` (waiting while the ring is
    full) and publish it through the slot's sequence word."""
    head = _get(sc, HEAD_I)
    if head - _get(sc, CACHED_TAIL) >= slots:     # full by the cached tail: read the published one
        tail_addr = _ring_word(ctl, ring, TAIL)
        _set(sc, CACHED_TAIL, load_acquire(tail_addr))
        while head - _get(sc, CACHED_TAIL) >= slots:
            err = _wait_change(ctl, tail_addr, _get(sc, CACHED_TAIL), _ring_word(ctl, ring, PRODUCER_WAITS),
                               mode, my_efd, sc, deadline_ns)
            if err != 0:
                return err
            _set(sc, CACHED_TAIL, load_acquire(tail_addr))
    slot = data + ring * half + _get(sc, HEAD_SLOT) * stride
    copy(slot, src, n)
    seq = slot + stride - SEQ_BYTES
    store_release(seq, head + 1)
    if stride <= DEMOTE_MAX:
        for line in range(0, stride, LINE):
            _demote(slot + line)
    _wake(seq, _ring_word(ctl, ring, CONSUMER_WAITS), mode, peer_efd, sc)
    _set(sc, HEAD_I, head + 1)
    nxt = _get(sc, HEAD_SLOT) + 1
    _set(sc, HEAD_SLOT, 0 if nxt == slots else nxt)
    return 0


@njit(cache=True, nogil=True, inline="always")
def ring_pop(ctl: int, data: int, half: int, ring: int, slots: int, stride: int, dst: int, n: int,
             mode: int, my_efd: int, peer_efd: int, sc: int, deadline_ns: int) -> int:
    """Wait for the next message of ring `ring` in its slot, copy its n bytes to address dst; publish
    the tail once every quarter of the ring (the producer reads it only when it finds the ring full)."""
    tail = _get(sc, TAIL_I)
    slot = data + ring * half + _get(sc, TAIL_SLOT) * stride
    seq = slot + stride - SEQ_BYTES
    now = load_acquire(seq)
    if now != tail + 1:    # the slot still holds the previous lap's message (or nothing yet)
        err = _wait_change(ctl, seq, now, _ring_word(ctl, ring, CONSUMER_WAITS), mode, my_efd, sc, deadline_ns)
        if err != 0:
            return err
    copy(dst, slot, n)
    tail += 1
    _set(sc, TAIL_I, tail)
    nxt = _get(sc, TAIL_SLOT) + 1
    _set(sc, TAIL_SLOT, 0 if nxt == slots else nxt)
    if tail - _get(sc, PUBLISHED) >= max(1, slots // 4):
        tail_addr = _ring_word(ctl, ring, TAIL)
        store_release(tail_addr, tail)
        _set(sc, PUBLISHED, tail)
        _wake(tail_addr, _ring_word(ctl, ring, PRODUCER_WAITS), mode, peer_efd, sc)
    return 0


@njit(cache=True, nogil=True)
def ring_pingpong(ctl_a: np.ndarray, data_a: np.ndarray, slots: int, stride: int, buf: np.ndarray,
                  lat_ns: np.ndarray, batch: int, mode: int, my_efd: int, peer_efd: int, scratch: np.ndarray,
                  deadline_ns: int) -> int:
    """lat_ns.size samples of `batch` round trips of buf.size bytes each (push on ring 0, pop the
    echo from ring 1), each sample the mean round trip in ns. A batch keeps the clock out of the
    figure: a clock_gettime costs 50-60 ns on a KVM guest, as much as a spinning round trip."""
    ctl, data, half, n, sc, addr = ctl_a.ctypes.data, data_a.ctypes.data, data_a.size // 2, buf.size, _fresh(scratch.ctypes.data), buf.ctypes.data
    for i in range(lat_ns.size):
        start = now_ns()
        for _ in range(batch):
            err = ring_push(ctl, data, half, 0, slots, stride, addr, n, mode, my_efd, peer_efd, sc, deadline_ns)
            if err == 0:
                err = ring_pop(ctl, data, half, 1, slots, stride, addr, n, mode, my_efd, peer_efd, sc, deadline_ns)
            if err != 0:
                return err
        lat_ns[i] = (now_ns() - start) // batch
    return 0


@njit(cache=True, nogil=True)
def ring_echo(ctl_a: np.ndarray, data_a: np.ndarray, slots: int, stride: int, buf: np.ndarray, count: int,
              mode: int, my_efd: int, peer_efd: int, scratch: np.ndarray, deadline_ns: int) -> int:
    """The worker's side of ring_pingpong: pop from ring 0, push it back on ring 1."""
    ctl, data, half, n, sc, addr = ctl_a.ctypes.data, data_a.ctypes.data, data_a.size // 2, buf.size, _fresh(scratch.ctypes.data), buf.ctypes.data
    for _ in range(count):
        err = ring_pop(ctl, data, half, 0, slots, stride, addr, n, mode, my_efd, peer_efd, sc, deadline_ns)
        if err == 0:
            err = ring_push(ctl, data, half, 1, slots, stride, addr, n, mode, my_efd, peer_efd, sc, deadline_ns)
        if err != 0:
            return err
    return 0


@njit(cache=True, nogil=True)
def ring_stream(ctl_a: np.ndarray, data_a: np.ndarray, slots: int, stride: int, buf: np.ndarray, count: int,
                mode: int, my_efd: int, peer_efd: int, scratch: np.ndarray, deadline_ns: int) -> tuple:
    """(ns, error) for count one-way messages on ring 0 and the worker's 8-byte acknowledgement on
    ring 1, after one untimed round trip."""
    ctl, data, half, n, sc, addr = ctl_a.ctypes.data, data_a.ctypes.data, data_a.size // 2, buf.size, _fresh(scratch.ctypes.data), buf.ctypes.data
    err = ring_push(ctl, data, half, 0, slots, stride, addr, 8, mode, my_efd, peer_efd, sc, deadline_ns)
    if err == 0:
        err = ring_pop(ctl, data, half, 1, slots, stride, addr, 8, mode, my_efd, peer_efd, sc, deadline_ns)
    start = now_ns()
    for _ in range(count):
        if err != 0:
            break
        err = ring_push(ctl, data, half, 0, slots, stride, addr, n, mode, my_efd, peer_efd, sc, deadline_ns)
    if err == 0:
        err = ring_pop(ctl, data, half, 1, slots, stride, addr, 8, mode, my_efd, peer_efd, sc, deadline_ns)
    return now_ns() - start, err


@njit(cache=True, nogil=True)
def ring_sink(ctl_a: np.ndarray, data_a: np.ndarray, slots: int, stride: int, buf: np.ndarray, count: int,
              mode: int, my_efd: int, peer_efd: int, scratch: np.ndarray, deadline_ns: int) -> int:
    """The worker's side of ring_stream."""
    ctl, data, half, n, sc, addr = ctl_a.ctypes.data, data_a.ctypes.data, data_a.size // 2, buf.size, _fresh(scratch.ctypes.data), buf.ctypes.data
    err = ring_pop(ctl, data, half, 0, slots, stride, addr, 8, mode, my_efd, peer_efd, sc, deadline_ns)
    if err == 0:
        err = ring_push(ctl, data, half, 1, slots, stride, addr, 8, mode, my_efd, peer_efd, sc, deadline_ns)
    for _ in range(count):
        if err != 0:
            return err
        err = ring_pop(ctl, data, half, 0, slots, stride, addr, n, mode, my_efd, peer_efd, sc, deadline_ns)
    if err == 0:
        err = ring_push(ctl, data, half, 1, slots, stride, addr, 8, mode, my_efd, peer_efd, sc, deadline_ns)
    return err


def ring_reset(ctl: np.ndarray, data: np.ndarray, slots: int, stride: int) -> None:
    """Both rings empty before a command: the control words and every slot's sequence word zeroed
    (each process starts its indices at 0)."""
    ctl[:] = 0
    words = data.view(np.int64)
    half = data.size // 2
    for ring in (0, 1):
        words[(ring * half + np.arange(slots) * stride + stride - SEQ_BYTES) // 8] = 0


def scratch_buffer() -> np.ndarray:
    """A ring kernel's private words: an eventfd is read into word 0 and written from word 1 (= 1);
    words 2-7 are its ring indices (HEAD_I..PUBLISHED), zeroed by each kernel as it starts."""
    out = np.zeros(SCRATCH_WORDS, dtype=np.int64)
    out[1] = 1
    return out
