"""Layout kernels: loads at any byte offset (split or not), and one field of AoS against SoA.

Only numbers come out of here; every kernel times itself inside compiled code (`now_ns`).

- `throughput`: `count` loads of `width` bytes (4, 8, 16, 32) at base + j*stride, four per loop
  iteration, each an unaligned (`align 1`) llvmlite load whose value feeds an empty asm statement:
  the load is kept, no ALU work follows it, so the loop is bound by the loads themselves.
- `latency`: a chain in which each load's low 32 bits are the byte offset of the next load, so each
  load waits for the one before: the load-to-use latency at that alignment. Every value passes
  through an empty asm in a register (a vector register for 16/32 bytes), so the load stays full
  width; then its low 32 bits are taken (vmovq + a 32-bit mov for 16/32 bytes, a 32-bit mov for
  8): the same instructions as bench/layout_ref.c's `next_of`, in every figure of that width.
- AoS/SoA: records are int64 fields; AoS is a C-ordered (N, K) array — the same bytes as a numpy
  structured array of K int64 fields — and SoA is a (K, N) array, one row per field. One field
  summed, one field incremented, and every field summed record by record.
`vector_bytes(kernel)` reads the compiled loop's assembly for SIMD registers (vectorised or not).
"""

# numba intrinsics are called with fewer arguments than they are defined with (numba passes typingctx):
# mypy: disable-error-code="call-arg,var-annotated"
from __future__ import annotations

import mmap
import re

import numpy as np
from llvmlite import binding as llvm_binding
from llvmlite import ir
from numba import literally, njit, types
from numba.extending import intrinsic

from perfprobe.kernels.compiled import asm_text, innermost_loops, loop_vector_bytes, now_ns

WIDTHS = (4, 8, 16, 32)
_I64 = ir.IntType(64)
_TYPES = {4: ir.IntType(32), 8: _I64, 16: ir.VectorType(_I64, 2), 32: ir.VectorType(_I64, 4)}


def _width(width):
    if not isinstance(width, types.IntegerLiteral) or width.literal_value not in _TYPES:
        return None
    return width.literal_value


@intrinsic
def _load_sink(typingctx, addr, width):
    """One unaligned load of `width` bytes at `addr`, its value consumed by an empty asm."""
    w = _width(width)
    if w is None:
        return None
    ty = _TYPES[w]

    def codegen(context, builder, sig, args):
        value = builder.load(builder.inttoptr(args[0], ty.as_pointer()), align=1)
        builder.asm(ir.FunctionType(ir.VoidType(), [ty]), "", "x" if w >= 16 else "r", [value], True)
        return context.get_dummy_value()
    return types.none(types.int64, width), codegen


# Inline asm in a kernel needs LLVM's x86 asm parser (numba initialises only the printer).
llvm_binding.initialize_native_asmparser()

_TP_LOADS = {4: "movl {a}, %eax", 8: "movq {a}, %rax", 16: "vmovdqu {a}, %xmm0", 32: "vmovdqu {a}, %ymm0"}
# Each of a step's 4 addresses is loaded this many times in turn (16 loads a step): with 4 loads a
# step, the page test's pass was 4 loads and 7 loop instructions, and the H200 Xeon ran it at 2 or
# 3 cycles by the loop's state (C and numba -22%/+52% apart on identical bytes); 16 loads keep the
# load ports, not the loop, the bound on both CPUs. Callers divide by count x reps x this.
LOADS_PER_ADDRESS = 4


def throughput_asm(width: int) -> list[str]:
    """The timed throughput loop, instruction for instruction; bench/layout_ref.c's tp() holds the
    same lines (tests/test_layout_method.py compares them). Registers are fixed: r8 base, rcx stride,
    rbx 3 x stride, rdi 4 x stride, r9 loop count (count/4), r10 reps; each step loads its 4 addresses
    LOADS_PER_ADDRESS times in turn; rsi, rdx and the destination
    are scratch. Fixed registers and a 64-byte-aligned loop give both compilers the same bytes: left
    to themselves LLVM and gcc chose different loop counters and compare-and-branch forms, and with
    4 loads per pass of a page test the loop overhead was 20-25% of an aligned load's time."""
    load = _TP_LOADS[width]
    addresses = ("(%rsi)", "(%rsi,%rcx)", "(%rsi,%rcx,2)", "(%rsi,%rbx)") * LOADS_PER_ADDRESS
    return [".p2align 6", "1:", "mov %r9, %rdx", "mov %r8, %rsi", "2:", *(load.format(a=a) for a in addresses),
            "add %rdi, %rsi", "dec %rdx", "jnz 2b", "dec %r10", "jnz 1b", *(["vzeroupper"] if width >= 16 else [])]


@intrinsic
def _load_loop(typingctx, base, stride, groups, reps, width):
    """reps passes of `groups` x 4 loads of `width` bytes at base + j*stride: throughput_asm's loop."""
    w = _width(width)
    if w is None:
        return None

    def codegen(context, builder, sig, args):
        base_, stride_, groups_, reps_ = args[:4]
        three = builder.mul(stride_, ir.Constant(_I64, 3))
        four = builder.mul(stride_, ir.Constant(_I64, 4))
        constraints = ("={r10},{r8},{rcx},{rbx},{rdi},{r9},0,~{rax},~{rdx},~{rsi},~{xmm0},~{memory},"
                       "~{dirflag},~{fpsr},~{flags}")
        fnty = ir.FunctionType(_I64, [_I64] * 6)
        builder.asm(fnty, "\n\t".join(throughput_asm(w)), constraints,
                    [base_, stride_, three, four, groups_, reps_], True)
        return context.get_dummy_value()
    return types.none(types.int64, types.int64, types.int64, types.int64, width), codegen


@intrinsic
def _load_next(typingctx, addr, width):
    """Unaligned load of `width` bytes at `addr`; its low 32 bits, zero-extended."""
    w = _width(width)
    if w is None:
        return None
    ty = _TYPES[w]

    def codegen(context, builder, sig, args):
        value = builder.load(builder.inttoptr(args[0], ty.as_pointer()), align=1)
        # Through a register first (as bench/layout_ref.c's next_of does), or LLVM narrows the load
        # to the 4 bytes that are used: an 8-byte load at offset 60 would not split at all.
        value = builder.asm(ir.FunctionType(ty, [ty]), "", "=x,0" if w >= 16 else "=r,0", [value], False)
        if w >= 16:
            value = builder.extract_element(value, ir.Constant(ir.IntType(32), 0))
        if w == 4:
            return builder.zext(value, _I64)
        return builder.and_(value, ir.Constant(_I64, 0xFFFFFFFF))
    return types.int64(types.int64, width), codegen


@njit(cache=True, nogil=True)
def _throughput(base: int, stride: int, count: int, reps: int, width: int) -> int:
    literally(width)
    if reps < 1 or count < 4:
        return 0
    start = now_ns()
    _load_loop(base, stride, count // 4, reps, width)
    return now_ns() - start


@njit(cache=True, nogil=True)
def _latency(base: int, first: int, steps: int, width: int) -> tuple:
    literally(width)
    offset = first
    start = now_ns()
    for _ in range(steps):
        offset = _load_next(base + offset, width)
    return now_ns() - start, offset


@njit(cache=True, nogil=True)
def throughput(base: int, stride: int, count: int, reps: int, width: int) -> int:
    """ns for reps x count loads of `width` bytes at base + j*stride (count a multiple of 4).

    Called from Python with a plain width: the literal-width versions are picked here, in compiled
    code, so a call never goes through numba's literal dispatch (milliseconds each from Python)."""
    if width == 4:
        return _throughput(base, stride, count, reps, 4)
    if width == 8:
        return _throughput(base, stride, count, reps, 8)
    if width == 16:
        return _throughput(base, stride, count, reps, 16)
    return _throughput(base, stride, count, reps, 32)


@njit(cache=True, nogil=True)
def latency(base: int, first: int, steps: int, width: int) -> tuple:
    """(ns for `steps` dependent loads, the final offset): each load gives the next offset."""
    if width == 4:
        return _latency(base, first, steps, 4)
    if width == 8:
        return _latency(base, first, steps, 8)
    if width == 16:
        return _latency(base, first, steps, 16)
    return _latency(base, first, steps, 32)


@njit(cache=True, nogil=True)
def _touch_pages(addr: int, stride: int, count: int, width: int) -> None:
    """An aligned 8-byte load in the page of the first and of the last byte of each access."""
    for j in range(count):
        a = addr + j * stride
        last = a + width - 1
        _load_sink(a - a % 4096, 8)
        _load_sink(last - last % 4096, 8)


@njit(cache=True, nogil=True)
def throughput_runs(addr: int, stride: int, count: int, reps: int, width: int, runs: int, page: bool) -> np.ndarray:
    """ns of each of `runs` back-to-back runs of `throughput` (page: each after an aligned load in
    every page the accesses touch, which puts both pages' translations in the L1 DTLB: a
    page-splitting load does not seem to refill it), with nothing between them: bench/layout_ref.c's timed_point runs its repeats
    so. With the interpreter between runs (measure calling once a run), the Zen 4 guest's page split
    read ~1 ns per load in most runs where the same loop, repeats back to back, read 0.19 (C and
    numba alike, one process, one buffer)."""
    out = np.empty(runs, dtype=np.int64)
    for i in range(runs):
        if page:
            _touch_pages(addr, stride, count, width)
        out[i] = throughput(addr, stride, count, reps, width)
    return out


@njit(cache=True, nogil=True)
def page_latency(base: int, first: int, steps: int, width: int, stride: int, count: int) -> tuple:
    """`latency` right after plain loads in the pages of count accesses at base + first + j*stride."""
    _touch_pages(base + first, stride, count, width)
    return latency(base, first, steps, width)


@njit(cache=True, nogil=True)
def aos_sum(a: np.ndarray, field: int, reps: int) -> tuple:
    total = 0
    start = now_ns()
    for _ in range(reps):
        for r in range(a.shape[0]):
            total += a[r, field]
    return now_ns() - start, total


@njit(cache=True, nogil=True)
def soa_sum(s: np.ndarray, field: int, reps: int) -> tuple:
    total = 0
    start = now_ns()
    for _ in range(reps):
        row = s[field]
        for r in range(row.size):
            total += row[r]
    return now_ns() - start, total


@njit(cache=True, nogil=True)
def aos_update(a: np.ndarray, field: int, reps: int) -> tuple:
    start = now_ns()
    for _ in range(reps):
        for r in range(a.shape[0]):
            a[r, field] += 1
    return now_ns() - start, a[0, field]


@njit(cache=True, nogil=True)
def soa_update(s: np.ndarray, field: int, reps: int) -> tuple:
    start = now_ns()
    for _ in range(reps):
        row = s[field]
        for r in range(row.size):
            row[r] += 1
    return now_ns() - start, s[field, 0]


@njit(cache=True, nogil=True)
def aos_all(a: np.ndarray, reps: int) -> tuple:
    total = 0
    start = now_ns()
    for _ in range(reps):
        for r in range(a.shape[0]):
            for k in range(a.shape[1]):
                total += a[r, k]
    return now_ns() - start, total


@njit(cache=True, nogil=True)
def soa_all(s: np.ndarray, reps: int) -> tuple:
    total = 0
    start = now_ns()
    for _ in range(reps):
        for r in range(s.shape[1]):
            for k in range(s.shape[0]):
                total += s[k, r]
    return now_ns() - start, total


@njit(cache=True, nogil=True)
def flush(buf: np.ndarray) -> int:
    """Read one word of every 64-byte line of `buf`: evicts from the caches what came before."""
    total = 0
    for i in range(0, buf.size, 8):
        total += buf[i]
    return total


@intrinsic
def _clflushopt(typingctx, addr):
    """clflushopt of the line holding `addr` (LLVM's x86 intrinsic: no asm parser needed)."""
    def codegen(context, builder, sig, args):
        i8p = ir.IntType(8).as_pointer()
        fn = builder.module.declare_intrinsic("llvm.x86.clflushopt", fnty=ir.FunctionType(ir.VoidType(), [i8p]))
        builder.call(fn, [builder.inttoptr(args[0], i8p)])
        return context.get_dummy_value()
    return types.none(types.int64), codegen


@intrinsic
def _fence(typingctx):
    """A full fence (mfence): the clflushopts before it have completed."""
    def codegen(context, builder, sig, args):
        builder.fence("seq_cst")
        return context.get_dummy_value()
    return types.none(), codegen


@njit(cache=True, nogil=True)
def _evict(addr: int, nbytes: int) -> int:
    for a in range(addr - addr % 64, addr + nbytes, 64):
        _clflushopt(a)
    _fence()
    return nbytes


def _has_clflushopt() -> bool:
    try:
        return bool(llvm_binding.get_host_cpu_features().get("clflushopt"))
    except RuntimeError:      # not x86 (or features unreadable): no clflushopt to compile
        return False


CAN_EVICT = _has_clflushopt()


def evict(buf: np.ndarray) -> int:
    """Write back and drop every line of `buf` from every cache level (clflushopt): the next pass
    reads it from DRAM whatever the size of the last-level cache. Only when CAN_EVICT."""
    return int(_evict(buf.ctypes.data, buf.nbytes))


RECORD_KERNELS = {("aos", "sum"): aos_sum, ("soa", "sum"): soa_sum, ("aos", "update"): aos_update,
                  ("soa", "update"): soa_update, ("aos", "all"): aos_all, ("soa", "all"): soa_all}


def aligned_bytes(nbytes: int, align: int = 4096) -> np.ndarray:
    """A zeroed uint8 buffer starting on an `align` boundary (the caller keeps it alive).

    Every page is written: untouched calloc'd pages all map the kernel's one zero page, and loads
    that split across two such aliases of one physical page cost ten times a real page split."""
    raw = np.empty(nbytes + align, dtype=np.uint8)
    raw.fill(0)
    offset = (-raw.ctypes.data) % align
    return raw[offset:offset + nbytes]


HUGE_PAGE = 2 << 20


def record_buffer(nbytes: int) -> np.ndarray:
    """int64 ones for the record sets: an anonymous mapping advised MADV_HUGEPAGE, used from its
    first 2 MiB boundary (bench/layout_ref.c's record_buffer does the same).

    numpy's own allocation starts 16 bytes past a page (ones of 128 KiB: 48 bytes off a line), so
    every zmm load of a SoA row split a line; and whether its first 2 MiB got a huge page depended on
    where the block fell. Here both are fixed: rows line-aligned, the set on 2 MiB pages where THP
    allows (madvise or always), 4 KiB pages elsewhere, on both sides alike."""
    length = -(-max(nbytes, 8) // HUGE_PAGE) * HUGE_PAGE
    region = mmap.mmap(-1, length + HUGE_PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    raw = np.frombuffer(region, dtype=np.uint8)
    start = (-raw.ctypes.data) % HUGE_PAGE
    if hasattr(region, "madvise") and hasattr(mmap, "MADV_HUGEPAGE"):
        region.madvise(mmap.MADV_HUGEPAGE, start, length)
    words = raw[start:start + length].view(np.int64)
    words.fill(1)
    return words[:nbytes // 8]


_MEMORY = re.compile(r"\(([^)]*)\)")
_REGISTER = re.compile(r"%(\w+)")
_STEP = re.compile(r"^(?:add|sub|lea)[a-z]*\s+%(\w+),\s*%(\w+)$")


def _strided(loop: list[str]) -> bool:
    """A loop whose loads step by a register (the runtime stride): an address register is advanced
    by `add %reg, %addr`, or it gathers. A loop that steps its addresses by constants only reads
    consecutive words: LLVM's unit-stride version, which a record of K >= 2 fields never runs."""
    addressed = {r for line in loop for m in _MEMORY.finditer(line) for r in _REGISTER.findall(m.group(1))}
    for line in loop:
        if "gather" in line.split()[0]:
            return True
        m = _STEP.match(line)
        if m and m.group(2) in addressed:
            return True
    return False


def strided_vector_bytes(asm: str) -> int:
    """The widest SIMD register in the innermost loops that step by a runtime stride (0: scalar)."""
    return max((loop_vector_bytes("\n".join(loop)) for loop in innermost_loops(asm) if _strided(loop)), default=0)


# The kernels whose loop runs at a stride of K x 8 bytes (K >= 2): AoS one field, SoA every field.
STRIDED = ("aos_sum", "aos_update", "soa_all")


def vector_bytes(kernel) -> tuple[int, str]:
    """(widest SIMD register in the loop that runs, how it was read); the kernel must have run once.

    For the strided kernels that is the loop stepping by the stride: LLVM also emits a zmm version
    of the AoS one-field loops, guarded by a unit stride that K >= 2 fields never have, so the widest
    register anywhere in the function said "vectorised" of a loop that runs scalar."""
    text, how = asm_text(kernel, kernel.signatures[0])
    if kernel.py_func.__name__ in STRIDED:
        return strided_vector_bytes(text), how + "; the loop stepping by the record stride"
    return loop_vector_bytes(text), how
