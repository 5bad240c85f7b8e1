"""system/fast_exit.py: a perfprobe process ends with its exit code, its output flushed and its
atexit handlers run, without the interpreter's teardown."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from perfprobe.system.fast_exit import exit_code


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)


def test_leave_flushes_runs_atexit_and_keeps_the_code() -> None:
    done = _python("import atexit, sys\n"
                   "atexit.register(lambda: print('atexit ran'))\n"
                   "sys.stdout.write('unflushed line\\n')\n"
                   "from perfprobe.system.fast_exit import leave\n"
                   "leave(3)\n")
    assert done.returncode == 3
    assert done.stdout.splitlines() == ["unflushed line", "atexit ran"]


@pytest.mark.parametrize("code,status", [(None, 0), (0, 0), (2, 2), (130, 130), ("a message", 1)])
def test_exit_codes_are_the_interpreters(code: object, status: int) -> None:
    assert exit_code(code) == status


def test_the_console_script_keeps_usage_errors_one_line_and_exit_2() -> None:
    done = subprocess.run([sys.executable, "-m", "perfprobe", "numa", "--bind", "nope"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


def test_a_reader_gone_before_the_flush_is_no_traceback() -> None:
    """`perfprobe ... | true`: the reader left before the last buffered output was flushed."""
    code = ("import sys, time; sys.stdout.write('x' * 100); time.sleep(0.5); "
            "from perfprobe.system.fast_exit import leave; leave(0)")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # the line stays buffered
    done = subprocess.run(f'{sys.executable} -c "{code}" | true', shell=True, capture_output=True,
                          text=True, timeout=60, env=env)
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr, done.stderr


def test_under_a_profiler_the_exit_is_the_normal_one(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """`python -m cProfile -o F -m perfprobe ...` (tools/device/profile_probes.sh) writes F after
    the program returns: os._exit would leave no profile."""
    out = tmp_path / "p.prof"
    done = subprocess.run([sys.executable, "-m", "cProfile", "-o", str(out), "-m", "perfprobe", "--version"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and out.exists()


def test_atexit_output_is_flushed_and_a_missing_stdout_is_no_error() -> None:
    """The handlers run first, as at a normal exit, so what they print is flushed; a process
    started without a stdout (sys.stdout None) still leaves with its code."""
    done = _python("import atexit, sys\n"
                   "atexit.register(lambda: sys.stdout.write('from atexit\\n'))\n"
                   "from perfprobe.system.fast_exit import leave\n"
                   "leave(4)\n")
    assert done.returncode == 4 and done.stdout == "from atexit\n"
    closed = subprocess.run([sys.executable, "-c", "import sys; sys.stdout = None\n"
                             "from perfprobe.system.fast_exit import leave; leave(5)"],
                            capture_output=True, text=True, timeout=60)
    assert closed.returncode == 5 and "Traceback" not in closed.stderr



def test_a_sys_monitoring_tool_keeps_the_normal_exit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Python 3.12's cProfile and coverage register with sys.monitoring and leave sys.getprofile()
    None: a tool registered there counts as watching, so the profile still gets written."""
    import types

    from perfprobe.system import fast_exit

    tools = {2: "cProfile"}
    monkeypatch.setattr(sys, "monitoring", types.SimpleNamespace(get_tool=tools.get), raising=False)
    assert fast_exit.watched()
    with pytest.raises(SystemExit) as ended:
        fast_exit.leave(3)
    assert ended.value.code == 3
    tools.clear()
    assert not fast_exit.watched()
