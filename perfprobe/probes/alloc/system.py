"""The OS side of `perfprobe alloc`: allocator libraries, mmap/madvise/mlock, huge pages in smaps.

Impure (ctypes calls into libc and the kernel); imported only by measure.py and bench/. No numba.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import resource
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from perfprobe.probes.alloc.plan import ALLOCATORS, LIBRARY_DIRS

PROT_RW = 0x1 | 0x2
MAP_PRIVATE_ANON = 0x02 | 0x20
MAP_POPULATE = 0x8000
MADV_HUGEPAGE, MADV_NOHUGEPAGE, MADV_POPULATE_WRITE = 14, 15, 23
MAP_FAILED = ctypes.c_void_p(-1).value


@dataclass
class Allocator:
    """One allocator's malloc and free (addresses for the kernels) and where they came from."""

    name: str
    path: str
    malloc: int
    free: int
    lib: Any                       # the ctypes.CDLL, kept alive while its functions are used


def libc() -> ctypes.CDLL:
    lib = ctypes.CDLL(None, use_errno=True)
    lib.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    lib.mmap.restype = ctypes.c_void_p
    lib.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    for name in ("madvise", "mlock", "munlock"):
        fn = getattr(lib, name)
        fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t] + ([ctypes.c_int] if name == "madvise" else [])
        fn.restype = ctypes.c_int
    return lib


def address(function: Any) -> int:
    """The address of a ctypes function (what the kernels call through)."""
    return int(ctypes.cast(function, ctypes.c_void_p).value or 0)


def _functions(lib: ctypes.CDLL) -> tuple[int, int]:
    lib.malloc.argtypes, lib.malloc.restype = [ctypes.c_size_t], ctypes.c_void_p
    lib.free.argtypes, lib.free.restype = [ctypes.c_void_p], None
    return address(lib.malloc), address(lib.free)


def system_allocator() -> Allocator:
    """The process's own malloc (glibc's, unless something was preloaded), named by its library."""
    lib = libc()
    malloc, free = _functions(lib)
    return Allocator("system", _library_of(malloc) or "libc", malloc, free, lib)


def _library_of(address: int) -> str | None:
    """The shared object holding `address` (dladdr)."""
    class DlInfo(ctypes.Structure):
        _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                    ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]
    info = DlInfo()
    try:
        dladdr = ctypes.CDLL(None).dladdr
    except AttributeError:
        return None
    dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(DlInfo)]
    if not dladdr(ctypes.c_void_p(address), ctypes.byref(info)) or not info.dli_fname:
        return None
    return os.path.realpath(info.dli_fname.decode())


def candidates(name: str) -> list[str]:
    """Where `name` is looked for: ctypes.util.find_library, then its sonames in the usual dirs."""
    short, sonames = ALLOCATORS[name]
    found = ctypes.util.find_library(short)
    out = [found] if found else []
    out += [str(Path(d) / s) for d in LIBRARY_DIRS for s in sonames if (Path(d) / s).exists()]
    return list(dict.fromkeys(out))


def find_allocators(extra: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """A record of each allocator looked for: its sonames and the library found (or None).

    Nothing is loaded here: jemalloc and tcmalloc use initial-exec TLS and often cannot be
    dlopen()ed into a running process ("cannot allocate memory in static TLS block"), so each is
    measured in a child process that preloads it (LD_PRELOAD), as programs use them."""
    looked: list[dict[str, Any]] = []
    wanted = [(name, candidates(name), list(ALLOCATORS[name][1])) for name in ALLOCATORS]
    wanted += [(Path(p).name.split(".so")[0].removeprefix("lib"), [p], [p]) for p in extra]
    for name, paths, sonames in wanted:
        found = next((p for p in paths if "/" in p), paths[0] if paths else None)
        looked.append({"name": name, "looked_for": sonames,
                       "found": os.path.realpath(found) if found and "/" in found else found, "error": None})
    return looked


def preloaded_env(path: str) -> dict[str, str]:
    """The environment of a child process that runs with `path` as its malloc (LD_PRELOAD)."""
    env = dict(os.environ)
    env["LD_PRELOAD"] = " ".join(filter(None, [path, env.get("LD_PRELOAD", "")]))
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return env


def release_free_memory(a: Allocator) -> None:
    """Hand what the process's allocator keeps after free() back to the kernel (the run frees all)."""
    trim = getattr(a.lib, "malloc_trim", None)
    if trim is not None:
        trim(0)


@dataclass
class Mapping:
    address: int
    length: int


def mmap(lib: ctypes.CDLL, length: int, populate: bool = False, align: int = 0) -> Mapping:
    """An anonymous private mapping (aligned to `align` by over-mapping and trimming)."""
    flags = MAP_PRIVATE_ANON | (MAP_POPULATE if populate and not align else 0)
    total = length + align
    addr = lib.mmap(None, total, PROT_RW, flags, -1, 0)
    if addr in (None, MAP_FAILED):
        raise OSError(ctypes.get_errno(), f"mmap of {total} bytes failed")
    if not align:
        return Mapping(int(addr), length)
    start = (int(addr) + align - 1) // align * align
    if start > addr:
        lib.munmap(addr, start - addr)
    tail = int(addr) + total - (start + length)
    if tail:
        lib.munmap(start + length, tail)
    return Mapping(start, length)


def munmap(lib: ctypes.CDLL, m: Mapping) -> None:
    lib.munmap(m.address, m.length)


def madvise(lib: ctypes.CDLL, m: Mapping, advice: int) -> bool:
    return int(lib.madvise(m.address, m.length, advice)) == 0


def timed_ns(call: Any) -> tuple[int, Any]:
    start = time.perf_counter_ns()
    result = call()
    return time.perf_counter_ns() - start, result


def huge_bytes_of(m: Mapping) -> int | None:
    """AnonHugePages of the mapping holding `m` (/proc/self/smaps), bytes; None when unreadable."""
    try:
        lines = Path("/proc/self/smaps").read_text().splitlines()
    except OSError:
        return None
    return _smaps_field(lines, m.address, "AnonHugePages")


def _smaps_field(lines: list[str], address: int, field: str) -> int | None:
    inside = False
    for line in lines:
        head = line.split(" ", 1)[0]
        if "-" in head and not head.endswith(":"):
            lo, _, hi = head.partition("-")
            inside = int(lo, 16) <= address < int(hi, 16)
        elif inside and line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return None


def locked_bytes() -> int:
    """VmLck of this process now (bytes)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmLck:"):
            return int(line.split()[1]) * 1024
    return 0


def memlock_limit() -> int | None:
    """RLIMIT_MEMLOCK soft limit in bytes (None: unlimited)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    return None if soft == resource.RLIM_INFINITY else int(soft)


def page_addresses(m: Mapping, count: int, page: int = 4096) -> Iterator[int]:
    step = max(page, m.length // max(count, 1) // page * page)
    return iter(range(m.address, m.address + m.length, step))
