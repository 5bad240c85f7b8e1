"""Numba kernels of the cache probe: pointer chases, read and triad sweeps. They only return numbers.

Every kernel is compiled once (`cache=True`) and loops internally, so Python call overhead never
enters a timed region. Chase buffers are uint64 arrays holding, at the first word of each line, the
address of the next line to load: `p = *p`, one dependent load, exactly as in C.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, prange, types, uint64
from numba.extending import intrinsic

from perfprobe.kernels.placement import Placed, pin_share  # noqa: F401  (Placed: for timing.py)

# Reassociation lets LLVM vectorise the reduction with several accumulators (as -ffast-math would);
# no-NaN/no-Inf assumptions are left out so nothing else about the arithmetic changes.
_FAST = {"reassoc", "nsz", "contract", "arcp"}


MAX_LINES = 1 << 32  # `_below` draws indices from the top 32 bits of a 64-bit random number; the
# cycle builder keeps line indices in 4 bytes


@njit(cache=True, inline="always")
def _splitmix64(state: np.uint64) -> tuple[np.uint64, np.uint64]:
    """One step of splitmix64: (new state, random 64-bit value). Twice as fast as np.random here,
    which halves the time to link a gigabyte-sized chase."""
    state = state + uint64(0x9E3779B97F4A7C15)
    z = state
    z = (z ^ (z >> uint64(30))) * uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> uint64(27))) * uint64(0x94D049BB133111EB)
    return state, z ^ (z >> uint64(31))


@njit(cache=True, inline="always")
def _below(z: np.uint64, m: int) -> int:
    """A number in [0, m) from random `z` (multiply-shift; m < 2**32)."""
    return np.int64(((z >> uint64(32)) * uint64(m)) >> uint64(32))


@intrinsic
def _load_u64(typingctx, address):
    """*(uint64_t *)address: a plain load from an address, as `p = *p` is in C. Indexing an array
    instead adds address arithmetic (and numba's negative-index fix-up) to every dependent load,
    which made an L1 hit 40% slower than C's."""
    if address != types.uint64:
        return None

    def codegen(context, builder, signature, args):
        return builder.load(builder.inttoptr(args[0], ir.IntType(64).as_pointer()))

    return types.uint64(types.uint64), codegen


@njit(cache=True)
def build_random_cycle(buf: np.ndarray, n_lines: int, line_words: int, seed: int = 1) -> None:
    """Link `n_lines` lines of `buf` (uint64) into one uniformly random cycle (random insertion):
    the first word of each line holds the address of the next line.

    Line i is inserted after a random line j < i of the cycle built so far: (n-1)! equally likely
    outcomes, i.e. every cyclic order of the lines is equally likely, and it is always one cycle.

    The insertion runs on a dense array of 4-byte line indices kept in the buffer's own first
    4 * n_lines bytes (no memory beyond the buffer), then one backward pass writes each line's
    address: line i's word lands on indices 2i and up (a line is at least 8 bytes), all already
    written out. The random accesses then stay within a sixteenth of a set of 64-byte lines (fewer
    pages and cache lines to miss on); the cycle is the same, word for word, as inserting into the
    lines themselves. Measured on the 2-vCPU EPYC guest (12-07 15:25 UTC): 9 ms against 27 for a
    64 MiB set, 147-155 against 330-349 for 600 MiB (the DRAM set of a host reporting a 300 MiB L3).
    """
    index = buf.view(np.uint32)
    state = uint64(seed)
    index[0] = 0
    for i in range(1, n_lines):
        state, z = _splitmix64(state)
        j = _below(z, i)
        index[i] = index[j]
        index[j] = i
    base = np.uint64(buf.ctypes.data)
    stride = np.uint64(line_words * 8)
    for i in range(n_lines - 1, -1, -1):
        buf[i * line_words] = base + np.uint64(index[i]) * stride


@njit(cache=True)
def build_sequential_cycle(buf: np.ndarray, n_lines: int, line_words: int) -> None:
    """Link lines in address order (the prefetcher's best case), last back to first."""
    base = np.uint64(buf.ctypes.data)
    stride = np.uint64(line_words * 8)
    for i in range(n_lines - 1):
        buf[i * line_words] = base + np.uint64(i + 1) * stride
    buf[(n_lines - 1) * line_words] = base


@njit(cache=True)
def build_pair_blocks(buf: np.ndarray, n_blocks: int, block_words: int, second_word: int,
                      seed: int = 1) -> None:
    """Random cycle over blocks, two dependent loads per block: word 0, then word `second_word`.

    The second load hits the line of the first while `second_word * 8` is below the line size:
    the cost of the second load against its offset reveals the line (and any prefetched pair).
    """
    build_random_cycle(buf, n_blocks, block_words, seed)
    base = np.uint64(buf.ctypes.data)
    for b in range(n_blocks):
        first = b * block_words
        if second_word > 0:
            nxt = buf[first]
            buf[first] = base + np.uint64((first + second_word) * 8)
            buf[first + second_word] = nxt


@njit(cache=True)
def chase(address: np.uint64, steps: int) -> np.uint64:
    """Follow `steps` pointers from `address` (inside a linked buffer that is still alive);
    returns where it stopped, so nothing is elided and the next run can go on from there."""
    p = uint64(address)  # a returned address comes back to Python as a plain int
    for _ in range(steps):
        p = _load_u64(p)  # type: ignore[call-arg]  # an intrinsic: numba supplies the typing context
    return p


def _widest_vector_bytes() -> int:
    """The widest vector register of this CPU, in bytes: 64 with AVX-512, 32 with AVX, else 16.
    numba compiles for the host CPU (its cache is keyed to it), so a <lanes x i64> load of this
    width is one instruction: vmovdqu64 zmm, vmovdqu ymm, movdqu xmm."""
    from llvmlite import binding

    features = binding.get_host_cpu_features()
    if features.get("avx512f"):
        return 64
    return 32 if features.get("avx") else 16


VECTOR_BYTES = _widest_vector_bytes()
ACCUMULATORS = 8  # independent OR chains: two loads a cycle never wait on a 1-cycle OR
READ_BLOCK = VECTOR_BYTES * ACCUMULATORS  # bytes one step of the load loop reads


@intrinsic
def _or_loads(typingctx, address, n_bytes):
    """OR of every 64-bit word in [address, address + n_bytes), n_bytes a multiple of READ_BLOCK:
    one loop of VECTOR_BYTES-wide loads into ACCUMULATORS independent OR accumulators, written in
    LLVM IR so that it is exactly these loads (as bench/cache_ref.c's read loop), whatever LLVM's
    vectoriser would prefer. An empty asm with a memory clobber comes first: a caller's repeat loop
    cannot merge one call's loads with the next call's."""
    if (address, n_bytes) != (types.uint64, types.uint64):
        return None

    def codegen(context, builder, signature, args):
        start, length = args
        i64 = ir.IntType(64)
        vec = ir.VectorType(i64, VECTOR_BYTES // 8)
        zero = ir.Constant(vec, None)
        barrier = ir.InlineAsm(ir.FunctionType(ir.VoidType(), []), "", "~{memory}", side_effect=True)
        builder.call(barrier, [])
        end = builder.add(start, length)
        entry = builder.block
        loop = builder.append_basic_block("or_loads.loop")
        done = builder.append_basic_block("or_loads.done")
        builder.cbranch(builder.icmp_unsigned("<", start, end), loop, done)
        builder.position_at_end(loop)
        at = builder.phi(i64)
        accs = [builder.phi(vec) for _ in range(ACCUMULATORS)]
        at.add_incoming(start, entry)
        folded = []
        for k, acc in enumerate(accs):
            acc.add_incoming(zero, entry)
            where = builder.inttoptr(builder.add(at, ir.Constant(i64, k * VECTOR_BYTES)), vec.as_pointer())
            folded.append(builder.or_(acc, builder.load(where, align=8)))
        after = builder.add(at, ir.Constant(i64, READ_BLOCK))
        at.add_incoming(after, loop)
        for acc, value in zip(accs, folded):
            acc.add_incoming(value, loop)
        builder.cbranch(builder.icmp_unsigned("<", after, end), loop, done)
        builder.position_at_end(done)
        merged = []
        for value in folded:  # every phi first: LLVM wants them at the top of the block
            merged.append(builder.phi(vec))
            merged[-1].add_incoming(zero, entry)
            merged[-1].add_incoming(value, loop)
        total = merged[0]
        for value in merged[1:]:
            total = builder.or_(total, value)
        word = builder.extract_element(total, ir.Constant(ir.IntType(32), 0))
        for lane in range(1, VECTOR_BYTES // 8):
            word = builder.or_(word, builder.extract_element(total, ir.Constant(ir.IntType(32), lane)))
        return word

    return types.uint64(types.uint64, types.uint64), codegen


@njit(cache=True)
def read_loads(a: np.ndarray, reps: int) -> np.uint64:
    """Read `a` (8-byte elements, contiguous) `reps` times on one thread by vector loads alone
    (_or_loads), the last elements one by one: the bytes a core's loads can read per second. The
    bits OR'ed together come back, so no load can be dropped."""
    words = a.view(np.uint64)
    n = words.shape[0]
    blocked = n * 8 // READ_BLOCK * READ_BLOCK
    start = np.uint64(a.ctypes.data)
    total = uint64(0)
    for _ in range(reps):
        total |= _or_loads(start, np.uint64(blocked))  # type: ignore[call-arg]  # an intrinsic
        for i in range(blocked // 8, n):
            total |= words[i]
    return total


@njit(cache=True, parallel=True)
def read_loads_parallel(a: np.ndarray, nthreads: int, reps: int) -> np.uint64:
    """Each of `nthreads` threads reads its own contiguous share of `a`, `reps` times, in one
    parallel region (a region per repeat would cost more than an L1-sized sweep). A share is
    passed as a contiguous view: a slice taken inside a prange body is typed 'any layout'."""
    chunk = a.shape[0] // nthreads
    total = uint64(0)
    for t in prange(nthreads):
        total += read_loads(np.ascontiguousarray(a[t * chunk:(t + 1) * chunk]), reps)  # prange: + only
    return total


@intrinsic
def _triad4(typingctx, a, b, c, scalar):
    """*(a) = *(b) + scalar * *(c) on 4 doubles at byte addresses a, b, c: one 256-bit load of b,
    one (contracted) multiply-add with c, one store, whatever vector width LLVM would have chosen.
    LLVM widens the plain triad loop to 512-bit vectors on Zen 4, where they were 9-12% slower
    from DRAM than 256-bit ones (docs/benchmarks.md); on Intel AVX-512 CPUs it picks 256 anyway."""
    if (a, b, c, scalar) != (types.uint64, types.uint64, types.uint64, types.float64):
        return None

    def codegen(context, builder, signature, args):
        vec = ir.VectorType(ir.DoubleType(), 4)
        pa, pb, pc = (builder.inttoptr(x, vec.as_pointer()) for x in args[:3])
        lb, lc = builder.load(pb, align=8), builder.load(pc, align=8)
        s = builder.insert_element(ir.Constant(vec, ir.Undefined), args[3], ir.Constant(ir.IntType(32), 0))
        s = builder.shuffle_vector(s, s, ir.Constant(ir.VectorType(ir.IntType(32), 4), [0, 0, 0, 0]))
        product = builder.fmul(s, lc, flags=["contract"])
        builder.store(builder.fadd(lb, product, flags=["contract"]), pa, align=8)
        return context.get_dummy_value()

    return types.none(types.uint64, types.uint64, types.uint64, types.float64), codegen


@njit(cache=True, fastmath=_FAST)
def triad(a: np.ndarray, b: np.ndarray, c: np.ndarray, scalar: float, reps: int) -> float:
    """STREAM triad a = b + scalar*c, `reps` times on one thread (24 bytes counted per element).

    Four 256-bit steps a block (as bench/cache_ref.c's gcc loop: unrolled 4, ymm), the last
    elements one by one (all of them one by one when an array is strided)."""
    n = a.shape[0]
    contiguous = a.strides[0] == 8 and b.strides[0] == 8 and c.strides[0] == 8
    blocks = n // 16 * 16 if contiguous else 0
    pa, pb, pc = np.uint64(a.ctypes.data), np.uint64(b.ctypes.data), np.uint64(c.ctypes.data)
    for _ in range(reps):
        for i in range(0, blocks, 16):
            at = np.uint64(i * 8)
            for k in range(4):  # unrolled by LLVM: four independent 32-byte steps
                step = at + np.uint64(32 * k)
                _triad4(pa + step, pb + step, pc + step, scalar)  # type: ignore[call-arg]  # intrinsic
        for i in range(blocks, n):
            a[i] = b[i] + scalar * c[i]
    return a[0]


@njit(cache=True, parallel=True)
def triad_parallel(a: np.ndarray, b: np.ndarray, c: np.ndarray, scalar: float, nthreads: int,
                   reps: int) -> float:
    """Triad with each thread on its own contiguous share, `reps` times, in one parallel region."""
    chunk = a.shape[0] // nthreads
    for t in prange(nthreads):
        lo = t * chunk
        hi = lo + chunk
        # contiguous views (no copies: the shares are contiguous), as in read_loads_parallel
        triad(np.ascontiguousarray(a[lo:hi]), np.ascontiguousarray(b[lo:hi]),
              np.ascontiguousarray(c[lo:hi]), scalar, reps)
    return a[0]


@njit(cache=True, parallel=True)
def fill_parallel(a: np.ndarray, value: float, nthreads: int) -> None:
    """First touch by the thread that will use each share (pages land on that thread's node)."""
    chunk = a.shape[0] // nthreads
    for t in prange(nthreads):
        lo = t * chunk
        hi = a.shape[0] if t == nthreads - 1 else lo + chunk
        for i in range(lo, hi):
            a[i] = value


# --- placed variants: share t pinned to its own CPU (perfprobe/kernels/placement.py) ---
# `masks` holds one affinity mask per share (its row count is the thread count); `where[t]` gets
# the CPU share t ran on. Chunking is STREAM's: n // threads contiguous elements a share, the
# last share taking the remainder, and the same shares for first touch, read and triad.


@njit(cache=True, parallel=True)
def touch_pages_placed(a: np.ndarray, page_words: int, masks: np.ndarray, where: np.ndarray) -> None:
    """Write a zero to the first word of each `page_words` page of fresh `a` (uint64), share t's
    pages by a thread pinned to cpus[t]: the first touch in parallel (page faults are each CPU's
    own work, and a guest's cost a host fault each). Shares are whole pages, contiguous."""
    nthreads = masks.shape[0]
    pages = (a.shape[0] + page_words - 1) // page_words
    per = (pages + nthreads - 1) // nthreads
    for t in prange(nthreads):
        pin_share(masks, t, where)
        for p in range(t * per, min(pages, (t + 1) * per)):
            a[p * page_words] = 0


@njit(cache=True, parallel=True)
def fill_placed(a: np.ndarray, value: float, masks: np.ndarray, where: np.ndarray) -> None:
    """First touch of each share by the CPU that will use it (its pages land on that CPU's node)."""
    nthreads = masks.shape[0]
    chunk = a.shape[0] // nthreads
    for t in prange(nthreads):
        pin_share(masks, t, where)
        lo = t * chunk
        hi = a.shape[0] if t == nthreads - 1 else lo + chunk
        for i in range(lo, hi):
            a[i] = value


@njit(cache=True, parallel=True)
def read_loads_placed(a: np.ndarray, masks: np.ndarray, where: np.ndarray, reps: int) -> np.uint64:
    """read_loads_parallel with share t on its own CPU: each share read `reps` times in one region."""
    nthreads = masks.shape[0]
    chunk = a.shape[0] // nthreads
    total = uint64(0)
    for t in prange(nthreads):
        pin_share(masks, t, where)
        total += read_loads(np.ascontiguousarray(a[t * chunk:(t + 1) * chunk]), reps)  # prange: + only
    return total


@njit(cache=True, parallel=True)
def triad_placed(a: np.ndarray, b: np.ndarray, c: np.ndarray, scalar: float, masks: np.ndarray,
                 where: np.ndarray, reps: int) -> float:
    """triad_parallel with share t on its own CPU, `reps` times in one region."""
    nthreads = masks.shape[0]
    chunk = a.shape[0] // nthreads
    for t in prange(nthreads):
        pin_share(masks, t, where)
        lo = t * chunk
        hi = lo + chunk
        triad(np.ascontiguousarray(a[lo:hi]), np.ascontiguousarray(b[lo:hi]),
              np.ascontiguousarray(c[lo:hi]), scalar, reps)
    return a[0]
