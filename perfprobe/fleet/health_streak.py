"""How many consecutive health checks showed each regressed metric (Policy.regression_checks), kept
between checks in --state DIR/streaks.json.

Only a judged check moves the count: a check cut off on a busy host, or a run that marked itself
disturbed, judged no figure, so it neither extends a streak nor breaks one. A record older than the
policy's gap (or from the future: a clock set back) starts the count again. A run is counted once:
`--detached` judges the last background run at every check until the next one finishes, so the
file names the run it counted (its report's host.time_utc). The file is read as every
input is (perfprobe/system/untrusted.py, schema health-streak) and written whole (a temporary file,
renamed). Where it cannot be read or written the check cannot count, and a confirmed regression
drains at once, saying why: a count the check cannot keep never keeps a slow node in service.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import NamedTuple

STREAK_FILE = "streaks.json"


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


def save(state: Path, streaks: Streaks, now: float) -> None:
    """Write the counts of this check (whole, or not at all); StreakError when the folder is not writable."""
    path, temporary = state / STREAK_FILE, state / f"{STREAK_FILE}.{os.getpid()}.tmp"
    try:
        state.mkdir(parents=True, exist_ok=True)
        temporary.write_text(json.dumps({"time": now, "run": streaks.run, "counts": streaks.counts}) + "\n", encoding="utf-8")
        os.replace(temporary, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise StreakError(f"cannot write {path} ({exc.strerror or exc})") from exc
