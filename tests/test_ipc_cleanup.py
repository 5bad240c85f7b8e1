"""`perfprobe ipc` leaves nothing behind: after a run, after Ctrl-C, and when its worker is killed.

Each test runs the real CLI (`python -m perfprobe ipc --quick`) with TMPDIR pointed at its own
directory (where the private socket directory is made) and a marker in its environment, which the
worker inherits: a process carrying the marker after the run is a leaked child.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
WORKER = "perfprobe.probes.ipc.worker"
pytestmark = pytest.mark.skipif(not hasattr(os, "memfd_create") or not Path("/proc/self/environ").exists(),
                                reason="needs Linux (memfd, /proc)")


def _marked(marker: str, worker_only: bool = False) -> list[int]:
    """Processes whose environment carries the marker (optionally only ipc workers)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker.encode() not in (entry / "environ").read_bytes():
                continue
            if worker_only and WORKER.encode() not in (entry / "cmdline").read_bytes():
                continue
        except OSError:
            continue
        found.append(int(entry.name))
    return found


def _shm() -> set[str]:
    try:
        return {p.name for p in Path("/dev/shm").iterdir()}
    except OSError:
        return set()


def _start(tmp_path: Path) -> tuple[subprocess.Popen[bytes], str]:
    marker = f"PERFPROBE_IPC_TEST={uuid.uuid4().hex}"
    env = dict(os.environ, TMPDIR=str(tmp_path), PERFPROBE_IPC_TEST=marker.split("=")[1], NO_COLOR="1")
    proc = subprocess.Popen([sys.executable, "-m", "perfprobe", "ipc", "--quick", "--json"], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return proc, marker


def _wait_for_worker(marker: str, timeout_s: float = 60.0) -> int:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        workers = _marked(marker, worker_only=True)
        if workers:
            return workers[0]
        time.sleep(0.02)
    raise AssertionError("the ipc worker never started")


def _assert_clean(tmp_path: Path, marker: str, shm_before: set[str]) -> None:
    deadline = time.monotonic() + 5.0
    while _marked(marker) and time.monotonic() < deadline:   # a killed child is reaped at once; allow a moment
        time.sleep(0.05)
    assert _marked(marker) == [], "a process of the run outlived it"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("perfprobe-ipc-")] == []
    assert _shm() - shm_before == set()


def test_a_run_leaves_nothing(tmp_path: Path) -> None:
    before = _shm()
    proc, marker = _start(tmp_path)
    out, err = proc.communicate(timeout=180)
    report = json.loads(out)
    assert [r["verdict"] for r in report["results"]] != ["error"], err.decode()
    _assert_clean(tmp_path, marker, before)


def test_ctrl_c_mid_run_leaves_nothing(tmp_path: Path) -> None:
    before = _shm()
    proc, marker = _start(tmp_path)
    _wait_for_worker(marker)
    time.sleep(0.4)   # inside the measurements
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=30)
    assert proc.returncode != 0
    _assert_clean(tmp_path, marker, before)


def test_killed_worker_is_an_error_with_its_reason(tmp_path: Path) -> None:
    before = _shm()
    proc, marker = _start(tmp_path)
    worker = _wait_for_worker(marker)
    time.sleep(0.4)
    os.kill(worker, signal.SIGKILL)
    out, err = proc.communicate(timeout=60)
    result = json.loads(out)["results"][0]
    assert result["verdict"] == "error", result
    text = json.dumps(result)
    assert "worker" in text and "SIGKILL" in text, text
    assert proc.returncode == 3
    _assert_clean(tmp_path, marker, before)
