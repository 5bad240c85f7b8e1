"""Thin typed wrappers over the Linux NUMA system calls: memory policy, page placement, page location.

Why raw system calls: glibc has no wrappers for them, and py-libnuma (the `numa` module) wraps only
libnuma's bitmask helpers — no mbind, no move_pages — and fails at import on a host without libnuma.
So this module calls the kernel directly through libc's `syscall()` (x86-64 and aarch64 numbers
below) and falls back to the identically named wrappers that libnuma.so.1 exports on other
architectures. Nothing here decides anything: callers in bind.py and the numa probe do.

Node sets cross this boundary as sorted lists of ints; bitmasks stay inside.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import platform
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Iterable, Sequence

# Memory policy modes (linux/mempolicy.h).
MPOL_DEFAULT, MPOL_PREFERRED, MPOL_BIND, MPOL_INTERLEAVE, MPOL_LOCAL = 0, 1, 2, 3, 4
MPOL_PREFERRED_MANY, MPOL_WEIGHTED_INTERLEAVE = 5, 6
MODE_NAMES = {0: "default", 1: "preferred", 2: "bind", 3: "interleave", 4: "local",
              5: "preferred_many", 6: "weighted_interleave"}
_MODE_FLAGS = (1 << 15) | (1 << 14) | (1 << 13)  # STATIC_NODES, RELATIVE_NODES, NUMA_BALANCING

# get_mempolicy flags.
MPOL_F_NODE, MPOL_F_ADDR, MPOL_F_MEMS_ALLOWED = 1, 2, 4
# mbind flags.
MPOL_MF_STRICT, MPOL_MF_MOVE = 1, 2

MASK_BITS = 1024  # the kernel's MAX_NUMNODES on x86-64 (NODES_SHIFT=10); get_mempolicy needs >= nr_node_ids
_WORD_BITS = ctypes.sizeof(ctypes.c_ulong) * 8
_Mask = ctypes.c_ulong * (MASK_BITS // _WORD_BITS)

_SYSCALL_NUMBERS = {
    "x86_64": {"mbind": 237, "set_mempolicy": 238, "get_mempolicy": 239, "move_pages": 279},
    "aarch64": {"mbind": 235, "get_mempolicy": 236, "set_mempolicy": 237, "move_pages": 239},
}


class NumaUnavailable(OSError):
    """The kernel (or this architecture without libnuma) offers no NUMA memory-policy calls."""


@dataclass(frozen=True)
class Policy:
    """A thread's or an address's memory policy: mode name and its node set."""

    mode: str
    nodes: list[int]


def nodes_to_mask(nodes: Iterable[int]) -> ctypes.Array[ctypes.c_ulong]:
    """A kernel nodemask with the bits of `nodes` set."""
    mask = _Mask()
    for node in nodes:
        if not 0 <= node < MASK_BITS:
            raise ValueError(f"NUMA node {node} is outside 0..{MASK_BITS - 1}")
        mask[node // _WORD_BITS] |= 1 << (node % _WORD_BITS)
    return mask


def mask_to_nodes(mask: Iterable[int]) -> list[int]:
    """The sorted node ids whose bits are set in `mask` (a sequence of machine words)."""
    return [w * _WORD_BITS + b for w, word in enumerate(mask) for b in range(_WORD_BITS)
            if word >> b & 1]


@lru_cache(maxsize=1)
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


@lru_cache(maxsize=1)
def _libnuma() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("numa")
    return ctypes.CDLL(name, use_errno=True) if name else None


def _call(name: str) -> Callable[..., int]:
    """A callable for system call `name`: libc syscall() by number, else libnuma's wrapper."""
    numbers = _SYSCALL_NUMBERS.get(platform.machine())
    if numbers:
        syscall = _libc().syscall
        syscall.restype = ctypes.c_long
        return lambda *args: syscall(ctypes.c_long(numbers[name]), *args)
    lib = _libnuma()
    if lib is None:
        raise NumaUnavailable(errno.ENOSYS, f"no {name}: unknown architecture "
                              f"{platform.machine()} and no libnuma.so.1 to call it through")
    func = getattr(lib, name)
    func.restype = ctypes.c_long
    return func


def _check(result: int, what: str) -> None:
    if result < 0:
        err = ctypes.get_errno()
        if err == errno.ENOSYS:
            raise NumaUnavailable(err, f"{what}: this kernel has no NUMA support (ENOSYS)")
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _ulong(value: int) -> ctypes.c_ulong:
    return ctypes.c_ulong(value)


def set_mempolicy(mode: int, nodes: Iterable[int]) -> None:
    """Set the calling thread's memory policy (threads it creates later inherit it)."""
    node_list = list(nodes)
    mask = nodes_to_mask(node_list) if node_list else None
    maxnode = MASK_BITS + 1 if node_list else 0
    _check(_call("set_mempolicy")(ctypes.c_int(mode), mask, _ulong(maxnode)), "set_mempolicy")


def get_mempolicy() -> Policy:
    """The calling thread's memory policy."""
    mode = ctypes.c_int(0)
    mask = _Mask()
    _check(_call("get_mempolicy")(ctypes.byref(mode), mask, _ulong(MASK_BITS), None, _ulong(0)),
           "get_mempolicy")
    return Policy(MODE_NAMES.get(mode.value & ~_MODE_FLAGS, f"mode{mode.value}"), mask_to_nodes(mask))


def mems_allowed() -> list[int]:
    """The nodes this thread may allocate on (its cpuset's mems)."""
    mask = _Mask()
    _check(_call("get_mempolicy")(None, mask, _ulong(MASK_BITS), None, _ulong(MPOL_F_MEMS_ALLOWED)),
           "get_mempolicy(MPOL_F_MEMS_ALLOWED)")
    return mask_to_nodes(mask)


def node_of_address(address: int) -> int:
    """The node holding the (already faulted-in) page at `address`."""
    node = ctypes.c_int(-1)
    _check(_call("get_mempolicy")(ctypes.byref(node), None, _ulong(0), ctypes.c_void_p(address),
                                  _ulong(MPOL_F_NODE | MPOL_F_ADDR)), "get_mempolicy(MPOL_F_ADDR)")
    return node.value


def mbind(address: int, length: int, mode: int, nodes: Iterable[int], flags: int = 0) -> None:
    """Set the memory policy of the page-aligned range [address, address+length)."""
    node_list = list(nodes)
    mask = nodes_to_mask(node_list) if node_list else None
    maxnode = MASK_BITS + 1 if node_list else 0
    _check(_call("mbind")(ctypes.c_void_p(address), _ulong(length), ctypes.c_int(mode), mask,
                          _ulong(maxnode), ctypes.c_uint(flags)), "mbind")


def page_nodes(addresses: Sequence[int]) -> list[int]:
    """Where each page is now (move_pages with no target: a query, nothing moves).

    Each entry is a node id, or a negative errno (-ENOENT: page not present, -EFAULT: not mapped).
    """
    count = len(addresses)
    pages = (ctypes.c_void_p * count)(*addresses)
    status = (ctypes.c_int * count)()
    _check(_call("move_pages")(ctypes.c_int(0), _ulong(count), pages, None, status, ctypes.c_int(0)),
           "move_pages")
    return list(status)


def numa_syscalls_available() -> tuple[bool, str]:
    """Whether the memory-policy calls work here, and why not when they don't."""
    try:
        get_mempolicy()
    except NumaUnavailable as exc:
        return False, str(exc.strerror or exc)
    except OSError as exc:
        return False, f"get_mempolicy failed: {exc.strerror or exc}"
    return True, ""
