"""The health check's child starts while the parent does its own start-up work, and measures only
after the parent's word (health_run._go, _child's wait_for_go): the two never overlap a timing."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from typing import Any

from perfprobe.engine.config import RunConfig
from perfprobe.fleet import health_run

ECHO = [sys.executable, "-c", "import sys; sys.stdout.write(sys.stdin.readline())"]


def _echo_child() -> subprocess.Popen[bytes]:
    return subprocess.Popen(ECHO, stdin=subprocess.PIPE, stdout=subprocess.PIPE)


def _said(child: subprocess.Popen[bytes]) -> bytes:
    assert child.stdout is not None
    out = child.stdout.read()
    child.stdout.close()
    child.wait(timeout=30)
    return out


def test_the_parent_does_its_work_before_the_word_to_go() -> None:
    child, still_waiting = _echo_child(), []
    health_run._go(child, lambda: still_waiting.append(child.poll() is None))
    assert still_waiting == [True] and _said(child) == b"go\n"


def test_a_failing_meanwhile_still_lets_the_child_go() -> None:
    def fails() -> None:
        raise ImportError("no scipy here")

    child = _echo_child()
    health_run._go(child, fails)
    assert _said(child) == b"go\n"


def test_a_slow_meanwhile_lets_the_child_go_after_the_wait() -> None:
    """Under a CPU quota the parent's import can outlast the deadline: the child goes after wait_s."""
    import threading
    import time

    release = threading.Event()
    child = _echo_child()
    started = time.monotonic()
    health_run._go(child, release.wait, wait_s=0.2)
    try:
        assert _said(child) == b"go\n" and time.monotonic() - started < 10
    finally:
        release.set()


def test_a_child_already_gone_is_no_error() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"], stdin=subprocess.PIPE)
    child.wait(timeout=30)
    health_run._go(child, None)  # a closed pipe: the caller reads the child's exit
    assert child.returncode == 0


def test_the_child_measures_only_after_the_word(tmp_path, monkeypatch) -> None:
    from perfprobe.engine import runner

    events: list[str] = []
    stdin = io.BytesIO(b"go\n")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(stdin))
    monkeypatch.setattr(health_run, "_ready", lambda names: events.append(f"ready {list(names)}"))
    real_run = runner.run

    def run(names: Any, config: RunConfig) -> Any:
        events.append(f"run after reading {stdin.tell()} bytes")
        return real_run([], RunConfig(quick=True, json=True))

    monkeypatch.setattr(runner, "run", run)
    spec = {"names": ["cache"], "out": str(tmp_path / "report.json"), "wait_for_go": True}
    health_run._child(json.dumps(spec))
    assert events == ["ready ['cache']", "run after reading 3 bytes"]


def test_a_child_whose_parent_ended_before_the_word_measures_nothing(tmp_path, monkeypatch) -> None:
    from perfprobe.engine import runner

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"")))
    monkeypatch.setattr(health_run, "_ready", lambda names: None)
    monkeypatch.setattr(runner, "run", lambda names, config: (_ for _ in ()).throw(AssertionError("measured")))
    spec = {"names": ["cache"], "out": str(tmp_path / "report.json"), "wait_for_go": True}
    assert health_run._child(json.dumps(spec)) == health_run.PARENT_GONE
    assert not (tmp_path / "report.json").exists()


def test_without_the_flag_the_child_waits_for_nothing(tmp_path, monkeypatch) -> None:
    from perfprobe.engine import runner

    monkeypatch.setattr(health_run, "_ready", lambda names: (_ for _ in ()).throw(AssertionError("ready")))
    real_run = runner.run
    monkeypatch.setattr(runner, "run", lambda names, config: real_run([], RunConfig(quick=True, json=True)))
    health_run._child(json.dumps({"names": ["cache"], "out": str(tmp_path / "report.json")}))
    assert json.loads((tmp_path / "report.json").read_text())["results"] == []


def test_ready_loads_the_cached_kernels_and_leaves_the_missing_to_the_run(monkeypatch) -> None:
    from perfprobe.kernels import warmup

    kernels = [warmup.Kernel("m", "cached", ("int64",)), warmup.Kernel("m", "lacking", ("int64",))]
    loaded: list[list[str]] = []
    monkeypatch.setattr(warmup, "needed", lambda names: kernels)
    monkeypatch.setattr(warmup, "missing", lambda ks: [k for k in ks if k.function == "lacking"])
    monkeypatch.setattr(warmup, "load", lambda ks: loaded.append([k.function for k in ks]) or [])
    health_run._ready(["cache"])
    assert loaded == [["cached"]]
