"""The health check's measurement, in a child process that must finish before a deadline.

Slurm kills a HealthCheckProgram after 60 s and a killed check says nothing: the node is never
drained, however slow it is. So `healthcheck` measures in a child (`python -m
perfprobe.fleet.health_run SPEC`) and waits at most until its deadline; a child still running then
is killed with its process group, and the check answers "ran past N s (the node is slow)" itself.
The same child keeps an out-of-memory kill (a cgroup memory limit) from taking the check with it:
the parent, which imports no kernel, is left to say so.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from perfprobe.engine.stability import busy_because
from perfprobe.host.load import LoadWatch

ACT_RESERVE_S = 4.0
"""Left after the measurement for scontrol's `show node` and `update` (each answers in well under
a second against a live slurmctld)."""


def _process_start() -> float:
    """When this process started, on the monotonic clock: the deadline counts the interpreter's
    start-up too (seconds under a small CPU quota), since Slurm's 60 s do. Only when this process
    is the perfprobe command itself (`perfprobe`, or perfprobe/__main__.py under `python -m`): a
    check called inside a longer-lived program (a test run, `python -m pytest` included, whose
    argv[0] is pytest/__main__.py; a script calling cli.main) counts from the call."""
    argv0 = Path(sys.argv[0])
    if argv0.name != "perfprobe" and (argv0.name, argv0.parent.name) != ("__main__.py", "perfprobe"):
        return time.monotonic()
    try:
        import psutil

        age = time.time() - psutil.Process().create_time()
    except Exception:  # noqa: BLE001 - psutil missing or /proc unreadable: count from now
        age = 0.0
    return time.monotonic() - max(0.0, min(age, 60.0))


@dataclass
class Deadline:
    """Seconds from the check's start (this process's) until it must have answered."""

    total_s: float
    started: float = field(default_factory=_process_start)

    def left(self, reserve: float = ACT_RESERVE_S) -> float:
        return self.total_s - reserve - (time.monotonic() - self.started)

    def slow(self) -> str:
        return f"health check ran past {self.total_s:g} s (the node is slow)"

    def slow_while_busy(self) -> str:
        return f"health check ran past {self.total_s:g} s while the host was busy, nothing judged"


@dataclass(frozen=True)
class Measured:
    """A finished run's report, or why there is none (a problem to drain on)."""

    report: dict[str, Any] | None
    problem: str | None = None
    busy: str | None = None
    """Set instead of `problem` when the measurement ran past the deadline while the host was busy
    with other work: a busy node is named, not drained as slow (nothing was judged)."""


def measure(names: Sequence[str], deadline: Deadline, outputs: dict[str, str | None] | None = None,
            confirm_warns: bool = True, judged: Sequence[str] | None = None,
            meanwhile: Callable[[], object] | None = None, avoid_cpus: Sequence[int] = ()) -> Measured:
    """Run `names` (quick) in a child; the report, or the problem when it ran past the deadline or
    died. `confirm_warns` False: no timing warn is re-measured (RunConfig.confirm_warns); `judged`:
    the only figures measured for (RunConfig.judged; None: all); `avoid_cpus`: CPUs the one-thread
    figures are not timed on (RunConfig.avoid_cpus). `meanwhile`: work of this process
    done while the child starts (its interpreter, numba, the probes' cached kernels), before it
    measures: the child waits for the word to go (`_go`), so the two never overlap a timing."""
    with tempfile.TemporaryDirectory(prefix="perfprobe-healthcheck-") as folder:
        out = Path(folder) / "report.json"
        spec = {"names": list(names), "out": str(out), "confirm_warns": confirm_warns,
                "judged": None if judged is None else list(judged), "avoid_cpus": [int(c) for c in avoid_cpus],
                "wait_for_go": True, **(outputs or {})}
        watch = LoadWatch.start()
        child = subprocess.Popen([sys.executable, "-m", "perfprobe.fleet.health_run", json.dumps(spec)],
                                 stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, start_new_session=True)
        _go(child, meanwhile)
        try:
            code = child.wait(timeout=max(0.0, deadline.left()))
        except subprocess.TimeoutExpired:
            _kill(child)  # reaped: its CPU time is this process's own, not the others'
            why = busy_because(*watch.fractions())
            if why:
                return Measured(None, busy=f"{deadline.slow_while_busy()}: {'; '.join(why)}")
            return Measured(None, deadline.slow())
        if code < 0:
            return Measured(None, f"health check's measurement killed by {_signal(-code)}{_oom_hint(-code)}")
        try:
            data = json.loads(out.read_text())
        except (OSError, ValueError):
            return Measured(None, f"health check's measurement ended with exit {code} and no report")
        return Measured(data if isinstance(data, dict) else None)


MEANWHILE_S = 2.0
"""The longest the child waits for `meanwhile` (scipy.stats' import took 0.55-0.77 s on the 2-vCPU
EPYC guest). Past it, on a node under a CPU quota, the child measures while the import goes on:
the deadline counts both, and a check under a 0.2-CPU quota answered after 13 s of its 12 when the
child waited for the import to end."""


def _go(child: subprocess.Popen[bytes], meanwhile: Callable[[], object] | None,
        wait_s: float = MEANWHILE_S) -> None:
    """Start `meanwhile` in a thread and tell the child to measure once it is done, or after
    `wait_s`. A child already gone leaves a closed pipe (its exit is read by the caller); a failing
    `meanwhile` only loses its head start."""
    if meanwhile is not None:
        worker = threading.Thread(target=_quietly, args=(meanwhile,), name="perfprobe-health-meanwhile",
                                  daemon=True)
        worker.start()
        worker.join(wait_s)
    try:
        assert child.stdin is not None
        child.stdin.write(b"go\n")
        child.stdin.close()
    except OSError:
        pass


def _quietly(work: Callable[[], object]) -> None:
    try:
        work()
    except Exception:  # noqa: BLE001 - an optimisation: what it would have loaded loads when used
        pass


def _kill(child: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(child.pid, signal.SIGKILL)  # its own session: numba's workers and ipc's children too
    except OSError:
        child.kill()
    child.wait()


def _signal(number: int) -> str:
    try:
        return f"{signal.Signals(number).name}"
    except ValueError:
        return f"signal {number}"


def _oom_hint(number: int) -> str:
    if number != signal.SIGKILL:
        return ""
    from perfprobe.host.cgroup import memory_room_now

    room = memory_room_now()
    return "" if room is None else f" (out of memory? the cgroup memory limit is {room[1] >> 20} MiB)"


PARENT_GONE = 4
"""The child's exit when its parent ended before the word to go (read by no one: it measures nothing)."""


def _child(spec_text: str) -> int:
    """The child's side: run, write the asked outputs and the report (atomically); the runner's exit code."""
    from perfprobe.engine import runner
    from perfprobe.engine.config import RunConfig
    from perfprobe.render import outputs
    from perfprobe.render.json import report_to_dict

    spec = json.loads(spec_text)
    path = {k: Path(spec[k]) if spec.get(k) else None for k in ("output", "prom", "junit")}
    config = RunConfig(quick=True, json=True, output=path["output"], prom=path["prom"], junit=path["junit"],
                       confirm_warns=spec.get("confirm_warns") is not False,
                       judged=None if spec.get("judged") is None else tuple(spec["judged"]),
                       avoid_cpus=tuple(int(c) for c in spec.get("avoid_cpus") or ()))
    if spec.get("wait_for_go"):
        _ready(spec["names"])
        if sys.stdin.buffer.readline() != b"go\n":  # the parent ended first: nobody waits for a report
            return PARENT_GONE
    report = runner.run(spec["names"], config)
    for line in outputs.write_all(report, config):
        sys.stderr.write(f"perfprobe: error: {line}\n")
    out = Path(spec["out"])
    part = out.with_suffix(".part")
    part.write_text(json.dumps(report_to_dict(report)))
    os.replace(part, out)
    return runner.exit_code(report)


def _ready(names: Sequence[str]) -> None:
    """Load numba and the probes' kernels from numba's cache while the parent does its own start-up
    work: the measurement then starts at once. Kernels the cache lacks are left to the run, which
    compiles them ahead in parallel (kernels/warmup.py)."""
    try:
        from perfprobe.kernels import warmup

        wanted = warmup.needed(names)
        lacking = warmup.missing(wanted)
        warmup.load([kernel for kernel in wanted if kernel not in lacking])
    except Exception:  # noqa: BLE001 - an optimisation only: the run loads them at first call
        pass


if __name__ == "__main__":
    from perfprobe.system.fast_exit import leave

    leave(_child(sys.argv[1]))  # the parent waits on this exit: no 0.2 s of interpreter teardown
