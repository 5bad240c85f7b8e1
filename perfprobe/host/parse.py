"""Parsers for the text formats of /sys and /proc: CPU lists, CPU masks, cache sizes, meminfo.

Each returns None (or skips the bad part) on input it cannot read, never raises: host facts are
read from trees that may be damaged or from kernels older than the format.
"""

from __future__ import annotations

import re
from typing import Iterable

_SIZE_UNITS = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_SIZE_RE = re.compile(r"^\s*(\d+)\s*([KMGT]?)(?:I?B)?\s*$", re.IGNORECASE)

# No kernel numbers CPUs past this (NR_CPUS tops out at 8192 today; this leaves room): a CPU list or
# mask that names a higher CPU is a damaged file, read as unreadable instead of built in memory.
CPU_ID_LIMIT = 1 << 15


def parse_cpulist(text: str | None, limit: int = CPU_ID_LIMIT) -> list[int] | None:
    """"0-3,8,10-11" -> [0, 1, 2, 3, 8, 10, 11] (sorted, unique); "" -> []; garbage -> None.

    Also reads the stride form "0-15:2" (or "0-15:2/4") that the kernel accepts. A CPU id at or
    past `limit` is garbage too (a damaged "0-99999999" would otherwise take minutes and gigabytes).
    """
    if text is None:
        return None
    cpus: set[int] = set()
    for part in text.replace("\n", ",").split(","):
        part = part.strip()
        if not part:
            continue
        found = _parse_range(part)
        if found is None or (found and found[-1] >= limit):
            return None
        cpus.update(found)
    return sorted(cpus)


def _parse_range(part: str) -> range | None:
    match = re.fullmatch(r"(\d+)(?:-(\d+)(?::(\d+)(?:/(\d+))?)?)?", part)
    if not match:
        return None
    first = int(match.group(1))
    last = int(match.group(2)) if match.group(2) else first
    if last < first:
        return None
    stride = int(match.group(3) or 1)
    used = int(match.group(4) or 1)
    if stride < 1 or used < 1:
        return None
    return range(first, last + 1) if stride == 1 and used == 1 else _strided(first, last, stride, used)


def _strided(first: int, last: int, stride: int, used: int) -> range | None:
    """The kernel's "a-b:used/group" form is rare; read only its common "a-b:stride" meaning."""
    if used != 1:
        return None
    return range(first, last + 1, stride)


def format_cpulist(cpus: Iterable[int]) -> str:
    """[0, 1, 2, 3, 8] -> "0-3,8" (the kernel's own form)."""
    ordered = sorted(set(cpus))
    parts: list[str] = []
    start = prev = None
    for cpu in ordered:
        if prev is not None and cpu == prev + 1:
            prev = cpu
            continue
        if start is not None:
            parts.append(_span(start, prev))
        start = prev = cpu
    if start is not None:
        parts.append(_span(start, prev))
    return ",".join(parts)


def _span(start: int, end: int | None) -> str:
    return str(start) if end == start else f"{start}-{end}"


def cpulist_damaged(text: str | None, limit: int = CPU_ID_LIMIT) -> bool:
    """True when a CPU list file is there and not blank but cannot be read (say so in a note)."""
    return bool(text and text.strip()) and parse_cpulist(text, limit) is None


def parse_cpumask(text: str | None, limit: int = CPU_ID_LIMIT) -> list[int] | None:
    """"00000000,0000ffff" (32-bit hex words, most significant first) -> [0..15]; garbage -> None.

    A mask with a bit at or past `limit` is garbage too (see CPU_ID_LIMIT)."""
    if text is None:
        return None
    digits = text.strip().replace(",", "").lstrip("0")
    if not digits:
        return []
    if len(digits) > limit // 4 + 1:  # too long to hold only CPUs below `limit`
        return None
    try:
        value = int(digits, 16)
    except ValueError:
        return None
    if value.bit_length() > limit:
        return None
    return [bit for bit in range(value.bit_length()) if value >> bit & 1]


def parse_size(text: str | None) -> int | None:
    """Cache and page sizes: "48K" -> 49152, "2048K", "1M", "32768 kB", "64" -> bytes; else None."""
    if text is None:
        return None
    match = _SIZE_RE.match(text)
    if not match:
        return None
    return int(match.group(1)) * _SIZE_UNITS[match.group(2).upper()]


def parse_meminfo(text: str | None) -> dict[str, int]:
    """/proc/meminfo or node*/meminfo -> {"MemTotal": bytes, "HugePages_Total": count, ...}.

    Node files prefix each line with "Node 0 "; values in kB become bytes, bare counts stay counts.
    """
    values: dict[str, int] = {}
    for line in (text or "").splitlines():
        key, sep, rest = line.partition(":")
        if not sep:
            continue
        key = re.sub(r"^Node\s+\d+\s+", "", key.strip())
        fields = rest.split()
        if not fields or not fields[0].isdigit():
            continue
        scale = 1024 if len(fields) > 1 and fields[1].lower() == "kb" else 1
        values[key] = int(fields[0]) * scale
    return values


def parse_bracketed(text: str | None) -> str | None:
    """"always [madvise] never" -> "madvise" (the selected choice of a sysfs setting)."""
    match = re.search(r"\[([^\]]+)\]", text or "")
    return match.group(1) if match else None
