"""The harness's own look at placement, independent of perfprobe's numa_sys: what the kernel says
this process's CPU affinity, memory policy and page locations are.

As a script (`python guest_syscalls.py NODE`, run in a fresh process): call perfprobe's
bind_to_node(NODE), then — whether or not it raised — check with raw system calls, and print one
JSON line. Exit 0 when bind_to_node returned, 1 when it raised.
"""

from __future__ import annotations

import ctypes
import json
import mmap
import os
import sys
from pathlib import Path
from typing import Any

SYS_GET_MEMPOLICY, SYS_MOVE_PAGES = 239, 279  # x86-64
MPOL_BIND = 2
MODES = {0: "default", 1: "preferred", 2: "bind", 3: "interleave", 4: "local"}
BUFFER_BYTES = 16 << 20


def sysfs_nodes() -> dict[str, Any]:
    """The guest kernel's own view (to tell a harness problem from a perfprobe one)."""
    root = Path("/sys/devices/system/node")
    read = lambda p: (root / p).read_text().strip() if (root / p).exists() else None  # noqa: E731
    return {"online": read("online"), "has_cpu": read("has_cpu"), "has_memory": read("has_memory"),
            "distances": {d.name: read(f"{d.name}/distance") for d in sorted(root.glob("node[0-9]*"))}}


def uptime() -> float:
    return float(Path("/proc/uptime").read_text().split()[0])


def _syscall() -> Any:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc.syscall


def memory_policy() -> tuple[str, list[int]]:
    """This thread's policy mode and node set, straight from get_mempolicy(2)."""
    mode, mask = ctypes.c_int(0), (ctypes.c_ulong * 16)()
    if _syscall()(ctypes.c_long(SYS_GET_MEMPOLICY), ctypes.byref(mode), mask, ctypes.c_ulong(1024),
                  None, ctypes.c_ulong(0)) < 0:
        raise OSError(ctypes.get_errno(), "get_mempolicy")
    nodes = [w * 64 + b for w, word in enumerate(mask) for b in range(64) if word >> b & 1]
    return MODES.get(mode.value & 0xFF, str(mode.value)), nodes


def pages_by_node() -> dict[str, int]:
    """Fault in a fresh buffer under the current policy and count its pages per node (move_pages)."""
    size, page = BUFFER_BYTES, mmap.PAGESIZE
    region = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    try:
        for offset in range(0, size, page):
            region[offset] = 1
        anchor = ctypes.c_char.from_buffer(region)
        base = ctypes.addressof(anchor)
        del anchor
        count = size // page
        pages = (ctypes.c_void_p * count)(*[base + k * page for k in range(count)])
        status = (ctypes.c_int * count)()
        if _syscall()(ctypes.c_long(SYS_MOVE_PAGES), 0, ctypes.c_ulong(count), pages, None, status, 0) < 0:
            raise OSError(ctypes.get_errno(), "move_pages")
        counts: dict[str, int] = {}
        for node in status:
            counts[str(node)] = counts.get(str(node), 0) + 1
        return counts
    finally:
        region.close()


def placement_problems(seen: dict[str, Any], node: int, cpus: list[int]) -> list[str]:
    """What is wrong with `seen` (this script's output) for a process bound to `node`."""
    problems = []
    if seen.get("bind_error"):
        problems.append(f"bind_to_node raised: {seen['bind_error']}")
    if seen["affinity"] != cpus:
        problems.append(f"affinity {seen['affinity']} != node {node}'s CPUs {cpus}")
    if seen["policy"] != "bind" or seen["policy_nodes"] != [node]:
        problems.append(f"memory policy {seen['policy']} {seen['policy_nodes']}, expected bind [{node}]")
    if seen["pages_on"].get(str(node), 0) != seen["pages"]:
        problems.append(f"pages by node {seen['pages_on']}, expected all {seen['pages']} on {node}")
    return problems


def main(node: int) -> int:
    from perfprobe.host import read_host_facts
    from perfprobe.system.bind import bind_to_node

    bind_error = None
    try:
        bind_to_node(node, read_host_facts())
    except Exception as exc:  # noqa: BLE001 - reported, then checked independently anyway
        bind_error = f"{type(exc).__name__}: {exc}"
    policy, policy_nodes = memory_policy()
    pages = pages_by_node()
    print(json.dumps({"node": node, "bind_error": bind_error, "affinity": sorted(os.sched_getaffinity(0)),
                      "policy": policy, "policy_nodes": policy_nodes, "pages": sum(pages.values()),
                      "pages_on": pages}))
    return 1 if bind_error else 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1])))
