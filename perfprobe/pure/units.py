"""Parsing what users type: sizes like 64K, 1G or 1GiB, and GPU selections like 0, 0,1 or all."""

from __future__ import annotations

import re

from perfprobe.errors import UsageError

_SIZE = re.compile(r"^\s*(\d+)\s*([kmgtp]?)(i?b)?\s*$", re.IGNORECASE)
_FACTORS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50}
# The NVIDIA driver numbers its devices /dev/nvidia0 to /dev/nvidia253 (minors 254 and 255 are its
# control nodes): a GPU index past that cannot exist on any host.
MAX_GPU_INDEX = 253


def parse_size(text: str | None, option: str, minimum: int = 1, maximum: int = 1 << 50,
               power_of_two: bool = False) -> int | None:
    """Bytes from '4096', '64K', '256M', '1G', '1GiB', '1P' (binary units); None stays None.

    Anything else — negative, fractional, unknown suffix, out of range — is a UsageError naming the
    option and what is valid.
    """
    if text is None:
        return None
    match = _SIZE.match(text)
    if not match:
        raise UsageError(f"{option} {text!r}: not a size; use bytes or K/M/G/T/P (binary), e.g. 64K, 1G")
    value = int(match.group(1)) * _FACTORS[match.group(2).lower()]
    if not minimum <= value <= maximum:
        raise UsageError(f"{option} {text}: must be between {format_bytes(minimum)} and "
                         f"{format_bytes(maximum)}")
    if power_of_two and value & (value - 1):
        raise UsageError(f"{option} {text}: must be a power of two (e.g. 256, 512, 1K)")
    return value


def parse_device(text: str | None) -> int | str | tuple[int, ...] | None:
    """A GPU selection: None (the default GPU), an index ≥ 0, a list of distinct indices ('0,1',
    as a tuple in the order given), or 'all'."""
    if text is None:
        return None
    cleaned = text.strip().lower()
    if cleaned == "all":
        return "all"
    if "," in cleaned:
        return _device_list(text, cleaned)
    if cleaned.isascii() and cleaned.isdigit():
        return _device_index(text.strip(), cleaned)
    raise UsageError(f"--device {text!r}: expected a GPU index (0, 1, …), a list (0,1) or 'all'")


def _device_index(shown: str, cleaned: str) -> int:
    if len(cleaned) > 6 or int(cleaned) > MAX_GPU_INDEX:
        raise UsageError(f"--device {shown}: no host has that GPU (indices run 0 to "
                         f"{MAX_GPU_INDEX}); give a GPU index, a list (0,1) or 'all'")
    return int(cleaned)


def _device_list(text: str, cleaned: str) -> tuple[int, ...]:
    """'0,1' or '0, 2,3' -> (0, 1) / (0, 2, 3); empty items, non-indices and repeats are errors."""
    items = [item.strip() for item in cleaned.split(",")]
    if not all(item.isascii() and item.isdigit() for item in items):
        raise UsageError(f"--device {text!r}: a list is GPU indices separated by commas, e.g. 0,1")
    indices = tuple(_device_index(text.strip(), item) for item in items)
    if len(set(indices)) != len(indices):
        raise UsageError(f"--device {text.strip()}: a GPU is listed twice; list each GPU once, e.g. 0,1")
    return indices


def parse_count(value: int | None, option: str, low: int, high: int) -> int | None:
    """An integer option within [low, high]; None stays None. Out of range: UsageError naming both."""
    if value is not None and not low <= value <= high:
        raise UsageError(f"{option} {value}: must be from {low} to {high}")
    return value


def parse_ratio(value: float, option: str, low: float = 0.0, high: float = 10.0) -> float:
    """A ratio option within [low, high] (0.10 = 10%). Out of range: UsageError naming both."""
    if not low <= value <= high:
        raise UsageError(f"{option} {value}: must be from {low:g} to {high:g}")
    return value


def size_word(value: int) -> str:
    """65536 -> '64K', 4194304 -> '4M': a size as the user would type it (for help texts)."""
    for suffix in "PTGMK":
        factor = _FACTORS[suffix.lower()]
        if value >= factor and value % factor == 0:
            return f"{value // factor}{suffix}"
    return str(value)


def format_bytes(value: float) -> str:
    """1024 -> '1 KiB', 1536 -> '1.5 KiB': for messages and tables."""
    for size, suffix in ((1 << 50, "PiB"), (1 << 40, "TiB"), (1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if abs(value) >= size:
            return f"{value / size:.3g} {suffix}"
    return f"{value:.0f} B"
