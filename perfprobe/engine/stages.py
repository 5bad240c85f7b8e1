"""Where one probe's time goes: compiling, measuring, re-measuring, judging.

One clock for two readers: a `--quick` run past its budget names these stages (quick_budget.py),
and tools/bench_speed.py tabulates them. Stages nest (judging re-measures a warn, the stability
check measures again): each second is counted once, in the innermost stage open, and the seconds
numba spent compiling meanwhile (kernels/compile_clock.py) are moved out of it into "compile", so
a cold cache shows as compiling, not as a slow measurement.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Iterator

STAGES = ("compile", "measure", "remeasure", "judge")
"""The stages, in the order they are shown."""


@dataclass
class StageClock:
    """Seconds per stage of one probe. `clock` and `compiling` (numba's compile seconds so far) are
    injected, so tests drive them by hand and the runner hands in its own."""

    clock: Callable[[], float]
    compiling: Callable[[], float] = lambda: 0.0
    seconds: dict[str, float] = field(default_factory=dict)
    _open: list[str] = field(default_factory=list)
    _mark: tuple[float, float] = (0.0, 0.0)

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Count the time inside the block as `name`, less any inner stage's and any compiling."""
        self._charge()
        self._open.append(name)
        try:
            yield
        finally:
            self._charge()
            self._open.pop()

    def _charge(self) -> None:
        """Give the time since the last mark to the innermost open stage (compiles to "compile")."""
        now, compiled = self.clock(), self.compiling()
        if self._open:
            compiling = max(0.0, compiled - self._mark[1])
            self._add("compile", compiling)
            self._add(self._open[-1], now - self._mark[0] - compiling)
        self._mark = (now, compiled)

    def _add(self, name: str, seconds: float) -> None:
        if seconds > 0:
            self.seconds[name] = self.seconds.get(name, 0.0) + seconds
