"""The run configuration: one frozen object built by the CLI and read by every probe."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping


class UsageError(Exception):
    """Bad usage or bad input: the CLI prints the message as one line and exits 2."""


@dataclass(frozen=True)
class RunConfig:
    """What the user asked for.

    `device` is None (the default GPU, 0), an index, or "all". `options` holds the knobs of one
    probe command (e.g. {"max_size": 1 << 30, "repeats": 5}); each probe reads its own with defaults.
    """

    quick: bool = False
    json: bool = False
    output: Path | None = None
    device: int | str | None = None
    require_gpu: bool = False
    bind: int | None = None
    fsroot: Path | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    record: Path | None = None
    replay: Path | None = None

    def option(self, name: str, default: Any) -> Any:
        """A probe knob, or `default` when the user did not give it."""
        value = self.options.get(name)
        return default if value is None else value
