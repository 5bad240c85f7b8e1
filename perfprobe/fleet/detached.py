"""Detached health checks (as the LBNL node health check does): the check Slurm runs returns at
once with the last finished result, and the next full run goes on in the background.

State folder: last.json (the last finished report), running.pid (the background run's pid while it
runs), background.log. A run is written to next.json and renamed, so last.json is always whole.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

BACKGROUND_ARGS = ("all", "--quick")


def last_result(state: Path) -> dict[str, Any] | None:
    """The last finished report, read as any input is (perfprobe/system/untrusted.py: no FIFO, no device,
    bounded, the report schema); None when there is none or it is not a whole report."""
    from perfprobe.system import untrusted

    try:
        data: dict[str, Any] = untrusted.load(state / "last.json", "report")
    except untrusted.InputError:
        return None
    return data


def running(state: Path) -> bool:
    try:
        pid = int((state / "running.pid").read_text().strip())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return False
    return True


def start(state: Path, args: tuple[str, ...] = BACKGROUND_ARGS) -> int | None:
    """Start the next background run unless one is running; its pid (None when one already runs)."""
    state.mkdir(parents=True, exist_ok=True)
    if running(state):
        return None
    script = ("import os, subprocess, sys; s = sys.argv[1]; "
              "r = subprocess.run([sys.executable, '-m', 'perfprobe', *sys.argv[2:], '--output', s + '/next.json'],"
              " stdout=subprocess.DEVNULL); "
              "os.path.exists(s + '/next.json') and os.replace(s + '/next.json', s + '/last.json'); "
              "os.path.exists(s + '/running.pid') and os.unlink(s + '/running.pid')")
    with open(state / "background.log", "ab") as log:
        child = subprocess.Popen([sys.executable, "-c", script, str(state), *args], stdin=subprocess.DEVNULL,
                                 stdout=log, stderr=log, start_new_session=True)
    (state / "running.pid").write_text(f"{child.pid}\n")
    return child.pid
