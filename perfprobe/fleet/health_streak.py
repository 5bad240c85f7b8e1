"""How many consecutive health checks showed each regressed metric (Policy.regression_checks), kept
between checks in --state DIR/streaks.json.

Only a check whose timings were judged to the end moves the count (health_command.Checked.timed):
one cut off on a busy host, whose confirmation failed or was disturbed, whose run marked itself
disturbed, or that timed nothing because a fact differed neither extends a streak nor breaks one.
Counts are read and written under a lock (flock on streaks.lock): a Prolog and a HealthCheckProgram
may share the folder. A record older than the policy's gap (or from the future: a clock set back)
starts the count again. A run is counted once: `--detached` judges the last background run at
every check until the next one finishes, so the file names the run it counted (its report's
host.time_utc). The file is read as every input is (perfprobe/system/untrusted.py, schema
health-streak) and written whole (a temporary file, flushed to disk, renamed). Where it cannot be read or written the check cannot count, and a confirmed regression
drains at once, saying why: a count the check cannot keep never keeps a slow node in service.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Iterator, NamedTuple

STREAK_FILE = "streaks.json"
LOCK_FILE = "streaks.lock"
RUN_CHARS = 64
"""The schema's bound on the counted run's name (a report's host.time_utc is 20 characters)."""


class Streaks(NamedTuple):
    counts: dict[str, int]
    """{metric: consecutive checks that showed it}."""
    run: str = ""
    """The counted run's start (its report's host.time_utc); '' when not known."""


class StreakError(Exception):
    """Why the count could not be read or kept (the file's path included)."""


def previous(state: Path, now: float, gap_s: float) -> Streaks:
    """The counts as the last judged check left them; none when there is no record, or it is older
    than `gap_s` seconds. StreakError when the file is there but cannot be used."""
    from perfprobe.system import untrusted

    path = state / STREAK_FILE
    if not os.path.lexists(path):
        return Streaks({})
    try:
        data = untrusted.load(path, "health-streak")
    except untrusted.InputError as exc:
        raise StreakError(f"{path}: {exc}") from exc
    if not 0 <= now - float(data["time"]) <= gap_s:
        return Streaks({})
    return Streaks({str(key): int(count) for key, count in data["counts"].items()}, str(data.get("run", "")))


def run_name(run: str) -> str:
    """The run's name as the file keeps it (at most RUN_CHARS characters)."""
    return run[:RUN_CHARS]


@contextlib.contextmanager
def locked(state: Path) -> Iterator[None]:
    """Hold the folder's lock (flock on LOCK_FILE) while counts are read and written: two checks at
    once count one after the other. StreakError when the folder or lock cannot be made."""
    import fcntl

    try:
        state.mkdir(parents=True, exist_ok=True)
        fd = os.open(state / LOCK_FILE, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
    except OSError as exc:
        raise StreakError(f"cannot write {state / LOCK_FILE} ({exc.strerror or exc})") from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def save(state: Path, streaks: Streaks, now: float) -> None:
    """Write the counts of this check (whole, or not at all: written, flushed to disk, renamed);
    StreakError when the folder is not writable."""
    path, temporary = state / STREAK_FILE, state / f"{STREAK_FILE}.{os.getpid()}.tmp"
    record = {"time": now, "run": run_name(streaks.run), "counts": streaks.counts}
    try:
        state.mkdir(parents=True, exist_ok=True)
        with open(temporary, "w", encoding="utf-8") as stream:
            stream.write(json.dumps(record) + "\n")
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise StreakError(f"cannot write {path} ({exc.strerror or exc})") from exc
