"""PCIe link arithmetic: what a link of a given generation and width can carry, per direction.

Pure functions, no I/O: the pinned probe reads the link (NVML, sysfs) and asks here what that link's
theoretical rate is, so that measured bandwidth can be judged as a fraction of the link's own rate
rather than against a number hard-coded for one machine.

Rate per direction = transfer rate (GT/s per lane) x encoding efficiency x lanes / 8 bits per byte.
Gen1/Gen2 encode 8b/10b, Gen3-Gen5 128b/130b. Gen6 runs FLIT mode (PAM4 + FEC): 256-byte flits of
which 242 carry TLP and DLLP bytes, so its efficiency is taken as 242/256. Packet headers (TLP/DLLP
overhead, ~10-15% for large copies) are not subtracted: the rate is the link's raw payload ceiling.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Generation -> (GT/s per lane, encoding efficiency, encoding name).
_GENERATIONS: dict[int, tuple[float, float, str]] = {
    1: (2.5, 8 / 10, "8b/10b"),
    2: (5.0, 8 / 10, "8b/10b"),
    3: (8.0, 128 / 130, "128b/130b"),
    4: (16.0, 128 / 130, "128b/130b"),
    5: (32.0, 128 / 130, "128b/130b"),
    6: (64.0, 242 / 256, "flit 242/256"),
    7: (128.0, 242 / 256, "flit 242/256"),
}
VALID_WIDTHS = (1, 2, 4, 8, 12, 16, 32)


@dataclass(frozen=True)
class LinkRate:
    """A link's theoretical payload rate per direction and how it was derived."""

    gen: int
    width: int
    gts_per_lane: float
    encoding: str
    gbs_per_direction: float  # GB/s (10^9 bytes per second), each direction

    @property
    def label(self) -> str:
        return f"Gen{self.gen} x{self.width}"


def link_rate(gen: int, width: int) -> LinkRate:
    """The theoretical rate per direction of a Gen`gen` x`width` link (ValueError if unknown)."""
    if gen not in _GENERATIONS:
        raise ValueError(f"unknown PCIe generation {gen!r} (known: 1-{max(_GENERATIONS)})")
    if width not in VALID_WIDTHS:
        raise ValueError(f"unusual PCIe width x{width!r} (expected one of {VALID_WIDTHS})")
    gts, efficiency, encoding = _GENERATIONS[gen]
    return LinkRate(gen, width, gts, encoding, gts * efficiency * width / 8)


def link_rate_or_none(gen: int | None, width: int | None) -> LinkRate | None:
    """Like link_rate, but None when either figure is missing or not a known link."""
    if gen is None or width is None:
        return None
    try:
        return link_rate(int(gen), int(width))
    except (TypeError, ValueError):
        return None


_SPEED = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*GT/s", re.IGNORECASE)


def gen_from_speed(text: str | None) -> int | None:
    """PCIe generation from sysfs' link-speed text ('32.0 GT/s PCIe', '8 GT/s', '2.5 GT/s').

    None for 'Unknown', empty or unparsable text, or a speed that matches no generation.
    """
    if not text:
        return None
    match = _SPEED.match(text)
    if not match:
        return None
    speed = float(match.group(1))
    for gen, (gts, _eff, _enc) in _GENERATIONS.items():
        if abs(gts - speed) < 0.05:
            return gen
    return None


def width_from_text(text: str | None) -> int | None:
    """Link width from sysfs' width text ('16', 'x16'); None when absent, zero or unparsable."""
    if not text:
        return None
    cleaned = text.strip().lower().lstrip("x")
    if not (cleaned.isascii() and cleaned.isdigit()):  # '²'.isdigit() is True, int('²') fails
        return None
    width = int(cleaned)
    return width if width > 0 else None
