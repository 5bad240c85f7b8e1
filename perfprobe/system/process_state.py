"""A probe leaves the process as it found it: numba's thread count, CPU affinity, memory policy.

`perfprobe all` runs every probe in one process, so a probe that narrowed its affinity, changed the
thread count of numba's pool or set a memory policy would change what the next probe measures. The
runner wraps each `measure` in `preserved()`. What `--bind` set before the first probe is the state
saved, so the binding itself stays.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

_NAME_TO_MODE = {"default": 0, "preferred": 1, "bind": 2, "interleave": 3, "local": 4}


@dataclass(frozen=True)
class ProcessState:
    """What was saved: affinity (None if unreadable), numba threads (None if its pool never
    started), memory policy mode and nodes (None if the kernel has no NUMA calls)."""

    affinity: frozenset[int] | None
    numba_threads: int | None
    policy: tuple[str, tuple[int, ...]] | None


def capture() -> ProcessState:
    """The current thread's affinity, numba pool size and memory policy."""
    return ProcessState(_affinity(), _numba_threads(), _policy())


def restore(state: ProcessState) -> None:
    """Put back what `capture` saw; each part is restored only if it changed."""
    if state.affinity is not None and _affinity() != state.affinity:
        os.sched_setaffinity(0, state.affinity)
    if state.numba_threads is not None and _numba_threads() != state.numba_threads:
        sys.modules["numba"].set_num_threads(state.numba_threads)
    if state.policy is not None and _policy() != state.policy:
        from perfprobe.system import numa_sys

        mode, nodes = state.policy
        numa_sys.set_mempolicy(_NAME_TO_MODE.get(mode, 0), list(nodes) if mode != "default" else [])


@contextmanager
def preserved() -> Iterator[ProcessState]:
    """Run the body, then restore the process state it started with (on every path)."""
    state = capture()
    try:
        yield state
    finally:
        restore(state)


def _affinity() -> frozenset[int] | None:
    try:
        return frozenset(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None


def _numba_threads() -> int | None:
    """numba's thread count, only when its pool already started (asking would start it).

    Read through sys.modules: this module must not import numba (a probe that never used it
    should not pay for it), and if numba is not loaded there is nothing to restore."""
    parallel = sys.modules.get("numba.np.ufunc.parallel")
    if parallel is None or not getattr(parallel, "_is_initialized", False):
        return None
    return int(sys.modules["numba"].get_num_threads())


def _policy() -> tuple[str, tuple[int, ...]] | None:
    try:
        from perfprobe.system import numa_sys

        policy = numa_sys.get_mempolicy()
    except OSError:
        return None
    return policy.mode, tuple(policy.nodes)
