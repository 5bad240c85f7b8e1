"""Compile the kernels a run will call before it times anything: in parallel, into numba's cache.

Why: a cold run (a fresh clone, a CI container, a node after an upgrade) spent 14 of its 23 s
compiling on a 2-vCPU guest, one kernel after another on one CPU, while the other CPU idled. numba
compiles a kernel at its first call, from the types of its arguments, so those types are recorded
here: kernel_signatures.json, written by tools/kernel_signatures.py from real `--quick` runs of each
probe. `perfprobe warmup`, and `all` or any probe when numba's cache lacks some of its kernels,
compiles them first, split over child processes (one per usable CPU, as many as memory allows),
and waits for all of them before the first timing: speed does not buy noise. A kernel whose types
the file does not hold (a full run's, a GPU probe's) still compiles at its first call, as before.

Where the compiled kernels live: numba's cache (NUMBA_CACHE_DIR, or as kernels/__init__.py
chooses). Each entry is keyed to the CPU (numba's codegen key: target triple, CPU name and its
features) and to the source file's size and mtime: a cache carried to another CPU model, or to a
fresh checkout, compiles again.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Sequence

SIGNATURES = Path(__file__).with_name("kernel_signatures.json")
COMPILER_BYTES = 400 << 20
"""Memory set aside per compiling child: numba, LLVM and the kernel modules peaked at 216 and 227
MiB (max RSS) in the two children compiling all 73 recorded kernels, 2-vCPU EPYC guest, 2026-12-02."""
ASM_READ = ("perfprobe.kernels.layout_kernels", "perfprobe.kernels.branch_kernels")
"""Modules whose probes read their kernels' assembly (compiled.asm_text): a child compiling one of
their kernels saves its text too, or the run would compile the kernel again to read it."""


@dataclass(frozen=True)
class Kernel:
    """One compile: a kernel of a module, for one signature (encoded: see encode)."""

    module: str
    function: str
    signature: tuple[Any, ...]
    seconds: float = 0.0   # what it took when recorded (the children are balanced on it)

    def as_json(self) -> list[Any]:
        return [self.module, self.function, list(self.signature), round(self.seconds, 3)]


@dataclass
class Warmed:
    """What a warm-up did: kernels compiled, by how many children, in how long, and what failed."""

    compiled: int = 0
    jobs: int = 0
    seconds: float = 0.0
    failed: list[str] = field(default_factory=list)
    cache: str = ""


# --- signatures as JSON (numba's repr of a type does not read back) ---

def encode(numba_type: Any) -> Any:
    """A numba argument type as JSON: 'int64', {'array': 'float64', 'ndim': 1, 'layout': 'C'},
    {'literal': 1}, {'omitted': 1}; None for a type not kept here (that kernel compiles lazily)."""
    from numba.core import types

    if isinstance(numba_type, types.Array):
        if numba_type.dtype.name not in vars(types) or not numba_type.aligned:
            return None
        return {"array": numba_type.dtype.name, "ndim": numba_type.ndim, "layout": numba_type.layout,
                "readonly": not numba_type.mutable}
    if isinstance(numba_type, types.IntegerLiteral):
        return {"literal": numba_type.literal_value}
    if isinstance(numba_type, types.Omitted):
        value = numba_type.value
        return {"omitted": value} if value is None or isinstance(value, (bool, int, float)) else None
    if isinstance(numba_type, (types.Integer, types.Float, types.Boolean)):
        return numba_type.name
    return None


def decode(text: Any) -> Any:
    """The numba type of encode's JSON (a value a file holds: anything else is a ValueError)."""
    from numba.core import types

    if isinstance(text, str) and isinstance(getattr(types, text, None), (types.Integer, types.Float, types.Boolean)):
        return getattr(types, text)
    if isinstance(text, dict) and set(text) == {"array", "ndim", "layout", "readonly"}:
        layout: Any = text["layout"]
        if layout not in ("C", "F", "A"):
            raise ValueError(f"not an array layout: {layout!r}")
        return types.Array(decode(text["array"]), int(text["ndim"]), layout, readonly=bool(text["readonly"]))
    if isinstance(text, dict) and set(text) == {"literal"} and isinstance(text["literal"], int):
        return types.literal(text["literal"])
    if isinstance(text, dict) and set(text) == {"omitted"}:
        return types.Omitted(text["omitted"])
    raise ValueError(f"not a kernel argument type: {text!r}")


# --- which kernels a run needs, and which of them numba's cache lacks ---

@lru_cache(maxsize=1)
def recorded() -> dict[str, tuple[Kernel, ...]]:
    """{probe: its kernels} from kernel_signatures.json ({} when the file is missing or unreadable:
    nothing is compiled ahead then, and every kernel compiles at its first call)."""
    try:
        data = json.loads(SIGNATURES.read_text())
        return {probe: tuple(Kernel(str(m), str(f), tuple(s), float(t)) for m, f, s, t in rows)
                for probe, rows in data["probes"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def needed(probes: Sequence[str]) -> list[Kernel]:
    """The recorded kernels of `probes`, each once."""
    seen: dict[tuple[str, str, str], Kernel] = {}
    for probe in probes:
        for kernel in recorded().get(probe, ()):
            seen.setdefault((kernel.module, kernel.function, json.dumps(kernel.signature)), kernel)
    return list(seen.values())


def missing(kernels: Sequence[Kernel]) -> list[Kernel]:
    """Those of `kernels` numba's cache holds no fresh code for, on this CPU. Reads the cache's
    index files only (no kernel is loaded); a kernel that cannot be looked up counts as missing."""
    out = []
    for kernel in kernels:
        try:
            dispatcher = getattr(importlib.import_module(kernel.module), kernel.function)
            cache = dispatcher._cache
            signature = tuple(decode(t) for t in kernel.signature)
            magic = dispatcher.targetctx.codegen().magic_tuple()
            index = cache._cache_file._load_index()
            if not any(key[0] == signature and key[1] == magic for key in index):
                out.append(kernel)
        except Exception:  # noqa: BLE001 - no module, no cache, an odd index: compile it
            out.append(kernel)
    return out


def jobs_for(count: int) -> int:
    """Children to compile `count` kernels with: one per usable CPU, no more than the kernels and
    than the memory free now (and under the cgroup limit) holds COMPILER_BYTES each."""
    from perfprobe.host.cgroup import memory_room_now

    cpus = len(os.sched_getaffinity(0))
    free = [room[0]] if (room := memory_room_now()) else []
    try:
        import psutil

        free.append(int(psutil.virtual_memory().available))
    except Exception:  # noqa: BLE001 - no psutil or no /proc/meminfo: the cgroup's room alone
        pass
    by_memory = max(1, min(free) // COMPILER_BYTES) if free else cpus
    return max(1, min(cpus, count, by_memory))


def balanced(kernels: Sequence[Kernel], jobs: int) -> list[list[Kernel]]:
    """The kernels in `jobs` groups of about equal compile time, each module's kernels kept in
    one group (a kernel's callees are its module's: compiled once there, not once per child);
    modules longest first, each to the least loaded group (the recorded seconds as weights)."""
    modules: dict[str, list[Kernel]] = {}
    for kernel in kernels:
        modules.setdefault(kernel.module, []).append(kernel)
    groups: list[list[Kernel]] = [[] for _ in range(jobs)]
    load = [0.0] * jobs
    for members in sorted(modules.values(), key=lambda ks: -sum(k.seconds for k in ks)):
        i = load.index(min(load))
        groups[i] += sorted(members, key=lambda k: -k.seconds)  # callers first: callees come free
        load[i] += sum(k.seconds for k in members) + 0.05
    return [g for g in groups if g]


def compile_ahead(kernels: Sequence[Kernel], jobs: int | None = None) -> Warmed:
    """Compile `kernels` in `jobs` children (default jobs_for) and wait for them all; each child's
    failures are named (a failed compile costs nothing but time: the run compiles it again)."""
    started = time.perf_counter()
    done = Warmed(cache=cache_dir())
    if not kernels:
        return done
    groups = balanced(kernels, jobs or jobs_for(len(kernels)))
    children = [subprocess.Popen([sys.executable, "-m", "perfprobe.kernels.warmup",
                                  json.dumps([k.as_json() for k in group])],
                                 stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                 text=True)
                for group in groups]
    try:
        for child, group in zip(children, groups):
            out, _ = child.communicate()
            failed = [line for line in out.splitlines() if line.strip()]
            if child.returncode != 0 and not failed:
                failed = [f"{k.module.rsplit('.', 1)[-1]}.{k.function}" for k in group]
            done.failed += failed
            done.compiled += len(group) - len(failed)
    finally:
        for child in children:  # interrupted: reap them all, leave none behind
            if child.poll() is None:
                child.kill()
                child.wait()
    done.jobs, done.seconds = len(groups), time.perf_counter() - started
    return done


def cache_dir() -> str:
    """Where numba caches: NUMBA_CACHE_DIR (which kernels/__init__.py, imported with this module,
    sets where the package directory is not writable), else the kernels' own __pycache__."""
    return os.environ.get("NUMBA_CACHE_DIR") or str(Path(__file__).with_name("__pycache__"))


def before_run(probes: Sequence[str]) -> Warmed | None:
    """What `all` and each probe call before measuring: compile in parallel what the cache lacks,
    when more than one CPU can share the work (on one, compiling ahead saves nothing). None when
    nothing was done. Not when NUMBA_CPU_NAME names the CPU to build for (a portable cache, an
    emulated guest): code built for another CPU may not compile at all (the layout kernels for
    `generic`: LLVM "couldn't allocate output register for constraint 'x'"), and under emulation
    (tools/numa-vm, TCG) compiling every probe's kernels ahead ran past a check's 180 s; those
    runs compile at first call what they run, as before."""
    if os.environ.get("NUMBA_CPU_NAME") or len(os.sched_getaffinity(0)) < 2:
        return None
    lacking = missing(needed(probes))
    return compile_ahead(lacking) if lacking else None


def load(kernels: Sequence[Kernel]) -> list[str]:
    """Compile each of `kernels` in this process (numba loads it from its cache when the cache holds
    it), the assembly too where its probe reads it; the names of those that failed."""
    from perfprobe.kernels.compiled import asm_text

    failed = []
    for kernel in kernels:
        try:
            dispatcher = getattr(importlib.import_module(kernel.module), kernel.function)
            sig = tuple(decode(t) for t in kernel.signature)
            dispatcher.compile(sig)
            if kernel.module in ASM_READ:
                asm_text(dispatcher, sig)
        except Exception:  # noqa: BLE001 - the run compiles it at its first call instead
            failed.append(f"{kernel.module.rsplit('.', 1)[-1]}.{kernel.function}")
    return failed


def _child(rows_text: str) -> int:
    """A compiling child: each kernel compiled (and cached), a failed one's name printed."""
    failed = load([Kernel(str(m), str(f), tuple(s)) for m, f, s, _ in json.loads(rows_text)])
    sys.stdout.writelines(f"{name}\n" for name in failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(_child(sys.argv[1]))
