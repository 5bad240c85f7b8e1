"""What a probe is: a name, `measure` (kernels, returns plain numbers) and a pure `judge`.

`measure(ctx)` returns a JSON-serialisable dict of raw numbers — nothing else. `judge(raw, host)`
turns raw numbers and the host facts (the JSON `host` object, see perfprobe/host) into an
Assessment. Because both ends are plain data, numbers recorded on a real host (`--record`) can be
fed back through `judge` in tests and through the real CLI (`--replay`) without running a kernel.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Protocol

from perfprobe.config import RunConfig
from perfprobe.model import Assessment


class ProbeSkipped(Exception):
    """Raised by `measure` when this host cannot be measured: the result is `skip` with the reason.

    `hint` says what would make it measurable (what to install, what to run), where one exists.
    """

    def __init__(self, reason: str, hint: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.hint = hint


class GpuUnavailable(ProbeSkipped):
    """No usable GPU (no cupy, no driver, no device): `skip`, or `error` under --require-gpu."""


class ProgressTask(Protocol):
    def advance(self, steps: float = 1) -> None: ...


ProgressFactory = Callable[[str, float], AbstractContextManager[ProgressTask]]
"""`ctx.progress("latency curve", total_steps)` opens a progress bar on stderr (or nothing when
piped / NO_COLOR / --json); use it as `with ctx.progress(...) as task: ... task.advance()`."""


@dataclass(frozen=True)
class ProbeContext:
    """What `measure` gets: the run configuration, the host facts, a progress factory and, for GPU
    probes, the device index to measure (the runner expands `--device all`)."""

    config: RunConfig
    host: Mapping[str, Any]
    progress: ProgressFactory
    device: int | None = None

    @property
    def quick(self) -> bool:
        return self.config.quick


@dataclass(frozen=True)
class Probe:
    """One probe. `needs_gpu` probes get one run per selected device and honour --require-gpu."""

    name: str
    title: str
    measure: Callable[[ProbeContext], dict[str, Any]]
    judge: Callable[[Mapping[str, Any], Mapping[str, Any]], Assessment]
    needs_gpu: bool = False
