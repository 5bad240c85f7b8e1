"""The health check's deadline counts the interpreter's start-up only when the process is the
perfprobe command itself; called inside a longer-lived program it counts from the call."""

from __future__ import annotations

import sys
import time

import pytest

from perfprobe.fleet import health_run


@pytest.mark.parametrize("argv0, counts_startup", [
    ("/usr/local/bin/perfprobe", True), ("/srv/perfprobe/perfprobe/__main__.py", True),
    ("/usr/bin/pytest", False), ("/venv/lib/python3.11/site-packages/pytest/__main__.py", False), ("-c", False)])
def test_deadline_start(argv0: str, counts_startup: bool, monkeypatch) -> None:
    monkeypatch.setattr(sys, "argv", [argv0])
    age = time.monotonic() - health_run.Deadline(40).started
    if counts_startup:  # this test process has lived for a while: its age is counted (up to 60 s)
        assert age > 0.05
    else:
        assert age < 0.05
