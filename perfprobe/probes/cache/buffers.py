"""Page-aligned buffers with a chosen page policy, for the cache probe.

An anonymous mmap, advised MADV_HUGEPAGE or MADV_NOHUGEPAGE before its first touch (THP decides at
fault time), seen through numpy. Python's `mmap.madvise` is the libc call itself, without ctypes
pointer handling. The mapping is closed when the probe is done with it, so nothing outlives it.
"""

from __future__ import annotations

import mmap
import re
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

import numpy as np

HUGE_ALIGN = 2 << 20  # THP size on x86-64 and most arm64 kernels: align so whole huge pages fit


@contextmanager
def page_buffer(n_bytes: int, huge: bool | None, dtype: type = np.int64,
                touch: Callable[[np.ndarray], None] | None = None) -> Iterator[np.ndarray]:
    """A zero-filled numpy view of `n_bytes` (rounded up to whole pages) of fresh anonymous memory,
    huge pages asked (True) or refused (False), or no advice given (None: the pages THP's own
    setting gives, as numpy's arrays get), first touched by `touch` (of the view) where given.

    The mapping is over-allocated by one huge page and the view starts at a 2 MiB boundary.
    """
    n_bytes = -(-n_bytes // mmap.PAGESIZE) * mmap.PAGESIZE
    mapping = mmap.mmap(-1, n_bytes + HUGE_ALIGN, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    raw: np.ndarray | None = None
    view: np.ndarray | None = None
    try:
        advice = None if huge is None else getattr(mmap, "MADV_HUGEPAGE" if huge else "MADV_NOHUGEPAGE", None)
        if advice is not None:
            try:
                mapping.madvise(advice)
            except OSError:
                pass  # THP compiled out: the buffer is simply small-paged
        raw = np.frombuffer(mapping, dtype=np.uint8)
        skip = (-raw.ctypes.data) % HUGE_ALIGN
        view = raw[skip:skip + n_bytes].view(dtype)
        if touch is not None:
            touch(view)
        yield view
    finally:
        raw = view = None
        try:
            mapping.close()
        except BufferError:
            pass  # the caller still holds a view: the mapping goes with its last reference


def huge_fraction(view: np.ndarray, smaps: Path = Path("/proc/self/smaps")) -> float | None:
    """Fraction of `view`'s mapping backed by transparent huge pages (None when unreadable)."""
    start = view.ctypes.data
    try:
        text = smaps.read_text()
    except OSError:
        return None
    return _huge_fraction_in(text, start)


def _huge_fraction_in(smaps_text: str, address: int) -> float | None:
    """AnonHugePages / Size of the smaps entry containing `address`."""
    size = huge = None
    inside = False
    for line in smaps_text.splitlines():
        head = re.match(r"^([0-9a-f]+)-([0-9a-f]+) ", line)
        if head:
            if inside:
                break
            inside = int(head.group(1), 16) <= address < int(head.group(2), 16)
            continue
        if inside and line.startswith("Size:"):
            size = int(line.split()[1])
        elif inside and line.startswith("AnonHugePages:"):
            huge = int(line.split()[1])
    if not size or huge is None:
        return None
    return huge / size
