"""Branch kernels: one data-dependent branch per element, its branch-free twin, and a clock chain.

Only numbers come out of here. Every kernel times itself inside compiled code (`now_ns`), after one
untimed pass that warms the caches and trains the predictor, so a point is the steady state.

- `branchy`: `if v >= threshold: s += v`. The taken arm holds an empty volatile asm (`opaque`), so
  LLVM can neither turn the branch into a cmov/select nor vectorise the loop: the compiled loop
  keeps a real conditional jump, which `branch_check()` confirms in the assembly on every run.
- `branch_free`: `s += v & -(v >= threshold)`, the same work as arithmetic, which LLVM makes a
  select: on x86 the loop is `movslq; movl $0; cmpq; cmovleq; addq` and the counter, one element a
  step, one accumulator, no unroll (`opaque` in the loop keeps it scalar, like the branchy loop, so
  the two differ only in the branch). Same on znver4 and sapphirerapids; an explicit IR select
  compiled to a different loop on znver4 (pointer bump, hoisted zero), so the mask stays.
  bench/branch_ref.c pins these instructions in inline asm; `branch_check()` reports both loops.
- `add_chain`: CHAIN dependent integer adds (`add reg, reg`, each result laundered through an empty asm) per iteration: one per core
  cycle on every current x86 and Arm core, so adds per ns is the core clock in GHz.
"""

# numba intrinsics are called with fewer arguments than they are defined with (numba passes typingctx):
# mypy: disable-error-code="call-arg,var-annotated"
from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from perfprobe.kernels.compiled import asm_text, innermost_loops, loop_branches, now_ns, opaque

CHAIN = 64  # dependent adds per inner block
_I64 = ir.IntType(64)


@intrinsic
def _launder(typingctx, x):
    """x unchanged, through an empty asm that keeps it in its register: the optimiser cannot see
    through it, so a chain of adds stays a chain of adds. (llvmlite's object emitter cannot
    assemble inline instructions, only an empty template.)"""
    def codegen(context, builder, sig, args):
        return builder.asm(ir.FunctionType(_I64, [_I64]), "", "=r,0", list(args), False)
    return types.int64(types.int64), codegen


@njit(cache=True, nogil=True, inline="always")
def _adds(x: int, step: int) -> int:
    for _ in range(CHAIN):
        x = _launder(x + step)
    return x


@njit(cache=True, nogil=True)
def add_chain(iters: int, step: int) -> tuple:
    """(ns for iters x CHAIN dependent adds, the sum): cycles = iters x CHAIN."""
    x = _adds(0, step)
    start = now_ns()
    for _ in range(iters):
        x = _adds(x, step)
    return now_ns() - start, x


@njit(cache=True, nogil=True)
def branchy(data: np.ndarray, threshold: int, reps: int) -> tuple:
    """(ns for reps passes, sum of the values >= threshold), after one untimed pass."""
    total = 0
    for i in range(data.size):
        v = data[i]
        if v >= threshold:
            opaque()
            total += v
    start = now_ns()
    for _ in range(reps):
        for i in range(data.size):
            v = data[i]
            if v >= threshold:
                opaque()
                total += v
    return now_ns() - start, total


@njit(cache=True, nogil=True)
def branch_free(data: np.ndarray, threshold: int, reps: int) -> tuple:
    """(ns for reps passes, the same sum), the condition turned into a mask."""
    total = 0
    for i in range(data.size):
        opaque()
        v = np.int64(data[i])
        total += v & -np.int64(v >= threshold)
    start = now_ns()
    for _ in range(reps):
        for i in range(data.size):
            opaque()
            v = np.int64(data[i])
            total += v & -np.int64(v >= threshold)
    return now_ns() - start, total


def branch_check() -> dict:
    """Whether the compiled branchy loop keeps a conditional jump (and the branch-free one has none),
    with both loops' instructions (what bench_branch.py sets beside the C reference's)."""
    text, how = _asm(branchy)
    free_text, _ = _asm(branch_free)
    found, free_shape = loop_branches(text), loop_shape(free_text)
    return {"branch_in_code": bool(found), "branch_instructions": found[:4],
            "branch_free_has_branch": bool(loop_branches(free_text)),
            "branch_free_cmov": any(m.startswith(("cmov", "csel")) for m in free_shape),
            "branchy_loop": loop_shape(text), "branch_free_loop": free_shape, "how": how}


def loop_shape(asm: str) -> list[str]:
    """The mnemonics of the first innermost loop, in program order (labels left out)."""
    loops = innermost_loops(asm)
    return [line.split()[0] for line in loops[0] if not line.endswith(":")] if loops else []


def _asm(kernel) -> tuple[str, str]:
    if not kernel.signatures:
        kernel(np.zeros(4, dtype=np.int32), 1, 1)
    return asm_text(kernel, kernel.signatures[0])
