"""The seconds numba has spent compiling in this process, counted from numba's own events.

Why: a probe's time splits into compiling and measuring only by numba's word (its `numba:compile`
events fire for real compiles; a kernel loaded from the cache raises none). The runner's stage
clock (engine/stages.py) reads `seconds()` to move compiles out of the stage they fell in, and
tools/bench_speed.py reads `by_kernel()` for its slowest compiles. Listening needs numba imported,
which costs a few tenths of a second: `listen(probes)` imports it only for a run whose probes have
numba kernels (they import it anyway), and `seconds()` starts listening once numba is imported.
"""

from __future__ import annotations

import sys
import time
from typing import Any, Sequence

_total = [0.0]
_by_kernel: dict[str, float] = {}
_listening = [False]


def listen(probes: Sequence[str]) -> None:
    """Count compiles from now on, when numba is imported or one of `probes` has recorded numba
    kernels (kernels/kernel_signatures.json)."""
    from perfprobe.kernels import warmup

    if "numba" in sys.modules or warmup.needed(probes):
        _install()


def seconds() -> float:
    """numba's compile seconds so far in this process (0.0 while numba is not imported)."""
    if not _listening[0] and "numba" in sys.modules:
        _install()
    return _total[0]


def by_kernel() -> dict[str, float]:
    """Compile seconds per kernel ('cache_kernels.read_loads'), top-level compiles only."""
    return dict(_by_kernel)


def _install() -> None:
    """Register a listener for numba's compile events (once): top-level compiles only, since a
    kernel's callees compile inside it and are counted there."""
    if _listening[0]:
        return
    from numba.core import event

    class Listener(event.Listener):
        depth, started = 0, 0.0

        def on_start(self, ev: Any) -> None:
            self.depth += 1
            if self.depth == 1:
                self.started = time.perf_counter()

        def on_end(self, ev: Any) -> None:
            self.depth -= 1
            if self.depth == 0:
                spent = time.perf_counter() - self.started
                _total[0] += spent
                _by_kernel[_name(ev)] = _by_kernel.get(_name(ev), 0.0) + spent

    event.register("numba:compile", Listener())
    _listening[0] = True


def _name(ev: Any) -> str:
    """'module.function' of the kernel an event is about ('cache_kernels.read_loads')."""
    dispatcher = ev.data.get("dispatcher") if isinstance(ev.data, dict) else None
    function = getattr(dispatcher, "py_func", None)
    module = str(getattr(function, "__module__", "")).rsplit(".", 1)[-1]
    return f"{module}.{getattr(function, '__qualname__', '?')}"
