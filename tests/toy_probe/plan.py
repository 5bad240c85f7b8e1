"""Pure: how many counters and repeats, from the options and the preset."""

from __future__ import annotations

from dataclasses import dataclass

from perfprobe.engine.config import Presets, RunConfig


@dataclass(frozen=True)
class Preset:
    width: int
    repeats: int


PRESETS = Presets(full=Preset(width=8, repeats=10), quick=Preset(width=4, repeats=5))


def width(config: RunConfig) -> int:
    """--width (a declared option with no typed Knobs field: read with Knobs.get), else the preset's."""
    given = config.options.get("width")
    return given if isinstance(given, int) else config.preset(PRESETS).width
