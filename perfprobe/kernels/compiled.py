"""Shared by the layout and branch kernels: a clock read inside compiled code, and their assembly.

- `now_ns()`: clock_gettime(CLOCK_MONOTONIC) called from nopython code (a libc symbol), so a timed
  loop is timed around the loop itself, never around numba's dispatch (~0.2 µs per call).
- `asm_text(dispatcher, sig)`: the x86-64 (or other) assembly of one compiled kernel. numba cannot
  show the code of a kernel loaded from its on-disk cache ("Inspection disabled for cached code"),
  so the text is saved beside numba's cache the first time the kernel is compiled, keyed by numba's
  own cache key (signature, CPU and target, bytecode hash); a kernel loaded from the cache with no
  saved text is compiled once more, uncached, to read it. The checks run on every measurement
  without paying a compile each time.
"""

# numba intrinsics are called with fewer arguments than they are defined with (numba passes typingctx):
# mypy: disable-error-code="call-arg,var-annotated"
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

_I64 = ir.IntType(64)
_I32 = ir.IntType(32)
_CLOCK_MONOTONIC = 1
_CLOCK_THREAD_CPUTIME_ID = 3


def clock_reader(clock_id: int, doc: str) -> Callable[..., Any]:
    """The typing function of an intrinsic reading clock_gettime(clock_id) in ns, callable from
    nopython code without the GIL (the libc symbol in the kernel's own module): `intrinsic(...)` of it
    is `now_ns` here and the thread-CPU clocks of the alloc and falseshare kernels."""
    def clock(typingctx):
        def codegen(context, builder, sig, args):
            ts_type = ir.ArrayType(_I64, 2)
            fnty = ir.FunctionType(_I32, [_I32, ts_type.as_pointer()])
            fn = cgutils.get_or_insert_function(builder.module, fnty, "clock_gettime")
            ts = cgutils.alloca_once(builder, ts_type)
            builder.call(fn, [ir.Constant(_I32, clock_id), ts])
            zero = ir.Constant(_I32, 0)
            sec = builder.load(builder.gep(ts, [zero, zero]))
            nsec = builder.load(builder.gep(ts, [zero, ir.Constant(_I32, 1)]))
            return builder.add(builder.mul(sec, ir.Constant(_I64, 1_000_000_000)), nsec)
        return types.int64(), codegen
    clock.__doc__ = doc
    return clock


def atomic_load64(ordering: str, doc: str) -> Any:
    """An intrinsic loading the int64 at a byte address atomically with `ordering` (LLVM's:
    "monotonic", "acquire", ...): on x86 a plain move, but never merged or hoisted out of a loop.
    The ring (ipc) and the pool (alloc) kernels each make the ones they need from this."""
    def load(typingctx, addr):
        def codegen(context, builder, sig, args):
            return builder.load_atomic(builder.inttoptr(args[0], _I64.as_pointer()), ordering, 8)
        return types.int64(types.int64), codegen
    load.__doc__ = doc
    return intrinsic(load)


def atomic_store64(ordering: str, doc: str) -> Any:
    """An intrinsic storing an int64 to a byte address atomically with `ordering`."""
    def store(typingctx, addr, value):
        def codegen(context, builder, sig, args):
            builder.store_atomic(args[1], builder.inttoptr(args[0], _I64.as_pointer()), ordering, 8)
            return context.get_dummy_value()
        return types.none(types.int64, types.int64), codegen
    store.__doc__ = doc
    return intrinsic(store)


now_ns: Any = intrinsic(clock_reader(_CLOCK_MONOTONIC, "Wall time, CLOCK_MONOTONIC in ns, read from inside a compiled loop."))
thread_cpu_ns: Any = intrinsic(clock_reader(_CLOCK_THREAD_CPUTIME_ID, "This thread's CPU time (CLOCK_THREAD_CPUTIME_ID), ns."))


@intrinsic
def _arrive(typingctx, addr):
    """Atomic `*addr += 1` (seq_cst): one more thread at the barrier."""
    def codegen(context, builder, sig, args):
        builder.atomic_rmw("add", builder.inttoptr(args[0], _I64.as_pointer()), ir.Constant(_I64, 1), "seq_cst")
        return context.get_dummy_value()
    return types.none(types.int64), codegen


@intrinsic
def _arrived(typingctx, addr):
    """An acquire load of the barrier's count (re-read on every spin)."""
    def codegen(context, builder, sig, args):
        return builder.load_atomic(builder.inttoptr(args[0], _I64.as_pointer()), "acquire", 8)
    return types.int64(types.int64), codegen


@njit(cache=True, nogil=True)
def spin_barrier(addr: int, parties: int) -> None:
    """Spin until `parties` threads have arrived at the int64 at `addr`, so timed loops on several
    threads start together (the alloc and falseshare kernels)."""
    _arrive(addr)
    while _arrived(addr) < parties:
        pass


@intrinsic
def opaque(typingctx):
    """An empty volatile asm statement: emits no instruction, but the optimiser may neither
    speculate the block holding it (no select/cmov in its place) nor vectorise its loop."""
    def codegen(context, builder, sig, args):
        builder.asm(ir.FunctionType(ir.VoidType(), []), "", "", [], True)
        return context.get_dummy_value()
    return types.none(), codegen


def asm_text(dispatcher: Any, sig: Any) -> tuple[str, str]:
    """(assembly of the compiled `sig` of `dispatcher`, how it was obtained)."""
    key = _cache_key(dispatcher, sig)
    saved = _saved_path(dispatcher, key)
    if sig in dispatcher.stats.cache_misses or getattr(dispatcher, "_cache", None) is None:
        text, how = _body(dispatcher.inspect_asm(sig)), "numba inspect_asm of the compiled kernel"
    elif saved is not None and saved.is_file():
        return saved.read_text(), "numba inspect_asm, saved when the cached kernel was compiled"
    else:
        options = {k: v for k, v in dispatcher.targetoptions.items() if k not in ("cache", "nopython")}
        twin = njit(sig, **options)(dispatcher.py_func)
        text, how = _body(twin.inspect_asm(twin.signatures[0])), "numba inspect_asm of an uncached twin"
    if saved is not None:
        try:
            saved.write_text(text)
        except OSError:
            pass
    return text, how


def _body(asm: str) -> str:
    """The kernel's own code, without the CPython wrapper numba appends."""
    return asm.split("_ZN7cpython")[0]


def _cache_key(dispatcher: Any, sig: Any) -> str:
    cache = getattr(dispatcher, "_cache", None)
    if cache is None or not hasattr(cache, "_index_key"):
        return ""
    codegen = dispatcher.targetctx.codegen()
    return hashlib.sha256(repr(cache._index_key(sig, codegen)).encode()).hexdigest()[:20]


def _saved_path(dispatcher: Any, key: str) -> Path | None:
    cache = getattr(dispatcher, "_cache", None)
    folder = getattr(cache, "_cache_path", None)
    if not key or folder is None:
        return None
    name = dispatcher.py_func.__qualname__
    return Path(folder) / f"{name}-{key}.asm.txt"



# --- reading the assembly (pure text functions, tested on sample text) ---

_LABEL = re.compile(r"^([.\w$]+):")
_JUMP = re.compile(r"^\s*(j[a-z]+|b\.[a-z]+|cbn?z|tbn?z|b)\s+(?:[^,\s]+,\s*)*([.\w$]+)\s*(?:#.*)?$")
_VECTOR_REG = re.compile(r"%([xyz])mm\d+|\b([qvz])\d+\.\d*[bhsd]\b")
_WIDTH = {"x": 16, "y": 32, "z": 64, "q": 16, "v": 16}


def _instructions(asm: str) -> list[str]:
    """Code lines: labels and instructions, without directives, comments and blank lines."""
    out = []
    for line in asm.splitlines():
        text = line.split("//")[0].rstrip()
        stripped = text.strip()
        if not stripped or stripped.startswith(("#", ";", "@")):
            continue
        if stripped.startswith(".") and not _LABEL.match(stripped):
            continue
        out.append(stripped)
    return out


def is_conditional(mnemonic: str) -> bool:
    """x86 `jcc` (not `jmp`) or AArch64 `b.cond`, `cbz`/`cbnz`, `tbz`/`tbnz`."""
    return (mnemonic.startswith("j") and mnemonic != "jmp") or mnemonic.startswith(("b.", "cb", "tb"))


@dataclass
class _Block:
    lines: list[str]
    succ: list[int]


def _blocks(asm: str) -> list[_Block]:
    """Basic blocks (split at labels and after jumps) with their successors' indices."""
    cut: list[list[str]] = [[]]
    for line in _instructions(asm):
        if _LABEL.match(line) and cut[-1]:
            cut.append([])
        cut[-1].append(line)
        if _JUMP.match(line) or line.split()[0] in ("ret", "retq"):
            cut.append([])
    cut = [c for c in cut if c]
    where = {m.group(1): i for i, c in enumerate(cut) if (m := _LABEL.match(c[0]))}
    blocks = []
    for i, lines in enumerate(cut):
        last = lines[-1]
        m = _JUMP.match(last)
        succ = [where[m.group(2)]] if m and m.group(2) in where else []
        if last.split()[0] not in ("ret", "retq", "jmp", "b") and i + 1 < len(cut):
            succ.append(i + 1)
        blocks.append(_Block(lines, succ))
    return blocks


def _cycles(nodes: set[int], blocks: list[_Block]) -> list[set[int]]:
    """The strongly connected components of `nodes` that hold a cycle (Tarjan)."""
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    stack: list[int] = []
    out: list[set[int]] = []

    def visit(v: int) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in blocks[v].succ:
            if w not in nodes:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1 or v in blocks[v].succ:
                out.append(comp)

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def _innermost(loop: set[int], blocks: list[_Block]) -> list[set[int]]:
    """Loops holding no loop of their own: drop the loop's entry blocks and look for cycles left."""
    entries = {v for v in loop if any(v in blocks[u].succ for u in range(len(blocks)) if u not in loop)}
    inner = _cycles(loop - (entries or {min(loop)}), blocks)
    return [leaf for sub in inner for leaf in _innermost(sub, blocks)] if inner else [loop]


def innermost_loops(asm: str) -> list[list[str]]:
    """The code of each innermost loop, in program order (a loop nested inside is not innermost)."""
    blocks = _blocks(asm)
    loops = [leaf for top in _cycles(set(range(len(blocks))), blocks) for leaf in _innermost(top, blocks)]
    return [[line for v in sorted(loop) for line in blocks[v].lines] for loop in loops]


def loop_branches(asm: str) -> list[str]:
    """Conditional jumps inside an innermost loop with both ways staying in the loop: the
    data-dependent branches. A loop compiled to cmov/select or vector code has none (its one
    conditional jump is the exit test, which leaves the loop)."""
    blocks = _blocks(asm)
    found = []
    for top in _cycles(set(range(len(blocks))), blocks):
        for loop in _innermost(top, blocks):
            for v in sorted(loop):
                m = _JUMP.match(blocks[v].lines[-1])
                if m and is_conditional(m.group(1)) and len(blocks[v].succ) == 2 \
                        and all(w in loop for w in blocks[v].succ):
                    found.append(blocks[v].lines[-1])
    return found


def loop_vector_bytes(asm: str) -> int:
    """The widest SIMD register (bytes) used in any innermost loop; 0 when the loops are scalar."""
    widest = 0
    for loop in innermost_loops(asm):
        for line in loop:
            if _scalar_simd(line.split()[0]):
                continue
            for m in _VECTOR_REG.finditer(line):
                widest = max(widest, _WIDTH[m.group(1) or m.group(2)])
    return widest


def _scalar_simd(mnemonic: str) -> bool:
    """Scalar use of a SIMD register (one float, one moved integer): not vectorised code."""
    return mnemonic.endswith(("sd", "ss")) or mnemonic in ("movq", "movd", "vmovq", "vmovd", "fmov")
