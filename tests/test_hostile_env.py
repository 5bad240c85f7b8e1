"""What a new user and a hostile environment hit (issue 14), each reproduced and kept fixed.

The resource-limit, signal, terminal-width and non-root cases run perfprobe as a subprocess, as a
user would; none runs a measuring kernel (recorded numbers through --replay, captured trees).
"""

from __future__ import annotations

import json
import os
import pty
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

import perfprobe.kernels as kernels
from perfprobe.errors import UsageError
from perfprobe.host import read_host_facts
from perfprobe.host.parse import CPU_ID_LIMIT, parse_cpulist, parse_cpumask
from perfprobe.pure.units import parse_device, parse_size
from perfprobe.system import bind, budget

REPO = Path(__file__).resolve().parents[1]
RECORDING = REPO / "tests" / "data" / "all_quick_h200x2.rec.json"
ESC = "\x1b["


def perfprobe(*args: str, env: dict[str, str] | None = None, timeout: float = 60,
              preexec=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "perfprobe", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, **(env or {})}, preexec_fn=preexec)


def on_terminal(*args: str, columns: int, env: dict[str, str] | None = None) -> tuple[int, str]:
    """Run perfprobe with stdout on a pseudo-terminal `columns` wide: (exit code, what it drew)."""
    master, slave = pty.openpty()
    full_env = {**os.environ, "COLUMNS": str(columns), "LINES": "50", **(env or {})}
    proc = subprocess.Popen([sys.executable, "-m", "perfprobe", *args], cwd=REPO, stdout=slave,
                            stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, env=full_env)
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    return proc.wait(timeout=60), b"".join(chunks).decode(errors="replace")


# 1. No writable home: numba's cache falls back, never fails a measurement.

def _no_home(monkeypatch, tmp_path) -> None:
    """HOME that cannot hold a folder even for root (a file), no XDG_CACHE_HOME, no NUMBA_CACHE_DIR."""
    (tmp_path / "home-is-a-file").write_text("")
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home-is-a-file"))


def test_no_writable_home_caches_in_a_private_temporary_dir(monkeypatch, capsys, tmp_path):
    _no_home(monkeypatch, tmp_path)
    monkeypatch.setattr(os, "access", lambda path, mode: False)  # the package folder is read-only
    kernels._ensure_numba_cache_dir()
    chosen = os.environ["NUMBA_CACHE_DIR"]
    assert Path(chosen).is_dir() and Path(chosen).name.startswith("perfprobe-numba-")
    assert "for this run only" in capsys.readouterr().err
    shutil.rmtree(chosen)


def test_no_directory_at_all_compiles_uncached(monkeypatch, capsys, tmp_path):
    from numba.core import dispatcher

    def no_locator(self):
        raise RuntimeError("cannot cache function 'f': no locator available for file 'x.py'")

    monkeypatch.setattr(dispatcher.Dispatcher, "enable_caching", no_locator)
    _no_home(monkeypatch, tmp_path)
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    monkeypatch.setattr(kernels.tempfile, "mkdtemp", lambda **kw: (_ for _ in ()).throw(OSError(30, "ro")))
    kernels._ensure_numba_cache_dir()
    assert "compiled on every run" in capsys.readouterr().err
    import numba

    @numba.njit(cache=True)
    def add_one(x):
        return x + 1

    assert add_one(1) == 2  # decorated and ran, uncached


# nobody, with every capability dropped (setpriv alone keeps root's, and with them every file)
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all",
          "--bounding-set=-all"]


def _nobody_can_run_python() -> str | None:
    """Why the non-root case cannot run here, or None when it can."""
    if os.geteuid() != 0:
        return "not root: no second user can be made to run as"
    if shutil.which("setpriv") is None:
        return "setpriv is not installed"
    probe = subprocess.run([*NOBODY, sys.executable, "-c", "import perfprobe"], cwd=REPO, capture_output=True)
    if probe.returncode != 0:
        return (f"user nobody (no capabilities) cannot run {sys.executable} with this checkout: the "
                f"interpreter or the checkout lives where only root may read (e.g. under /root)")
    return None


def test_as_nobody_without_home_the_kernels_still_load():
    why = _nobody_can_run_python()
    if why:
        pytest.skip(f"non-root case skipped: {why}")
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "XDG_CACHE_HOME")}
    tmp = Path(tempfile.mkdtemp(prefix="perfprobe-test-tmp-"))
    try:
        tmp.chmod(0o777)  # nobody's TMPDIR: where the private numba cache goes, and must be gone from after
        proc = subprocess.run([*NOBODY, sys.executable, "-c", "import perfprobe.kernels.cache_kernels"],
                              cwd=REPO, capture_output=True, text=True,
                              env={**env, "HOME": "/nonexistent", "TMPDIR": str(tmp)}, timeout=120)
        assert proc.returncode == 0, proc.stderr[-500:]
        assert "no locator" not in proc.stderr and "for this run only" in proc.stderr
        assert list(tmp.iterdir()) == []
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# 2. A damaged cpulist is bounded by what can exist.

def test_cpulist_past_any_kernel_is_unreadable_not_built():
    started = time.perf_counter()
    assert parse_cpulist("0-99999999") is None
    assert parse_cpulist(f"0-{CPU_ID_LIMIT - 1}") == list(range(CPU_ID_LIMIT))
    assert parse_cpumask("f" * 100000) is None
    assert time.perf_counter() - started < 5  # not minutes (the bug took over 120 s)


def _damaged_tree(root: Path) -> Path:
    node = root / "sys/devices/system/node/node0"
    node.mkdir(parents=True)
    (node / "cpulist").write_text("0-99999999\n")
    (root / "sys/devices/system/cpu/cpu0").mkdir(parents=True)
    (root / "sys/devices/system/cpu/online").write_text("0\n")
    (root / "proc").mkdir()
    return root


def test_damaged_node_cpulist_is_a_note(tmp_path):
    facts = read_host_facts(_damaged_tree(tmp_path))
    assert any("node0/cpulist" in note and "damaged" in note for note in facts["numa"]["notes"])


def test_damaged_tree_under_a_memory_limit_is_no_traceback(tmp_path):
    tree = _damaged_tree(tmp_path)

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2_000_000_000, resource.RLIM_INFINITY))

    proc = perfprobe("host", "--fsroot", str(tree), "--json", preexec=limit, timeout=60)
    assert proc.returncode == 1, proc.stderr[-500:]  # warn: CPU 0 is in no NUMA node, node 0's distances unknown
    assert "Traceback" not in proc.stderr and "MemoryError" not in proc.stderr
    result = json.loads(proc.stdout)["results"][0]
    assert result["probe"] == "host" and result["verdict"] == "warn"


# 4. --record to an unwritable path: one line, exit 2, before anything runs.

@pytest.mark.parametrize("path", ["missing-folder/x.json", "/proc/version"])
def test_record_to_an_unwritable_path_is_one_line(path, tmp_path):
    proc = perfprobe("host", "--record", str(tmp_path / path))
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "--record" in proc.stderr and "Traceback" not in proc.stderr


# 5. Narrow terminals never cut numbers.

def _numbers(text: str) -> set[str]:
    return set(re.findall(r"\d[\d,]*(?:\.\d+)?", text))


def test_narrow_terminal_keeps_every_number_whole():
    code, wide = on_terminal("cache", "--replay", str(RECORDING), columns=160, env={"NO_COLOR": "1"})
    assert code == 0  # the recorded cache run passes
    code, narrow = on_terminal("cache", "--replay", str(RECORDING), columns=50, env={"NO_COLOR": "1"})
    assert code == 0
    table_part = narrow.split("Load latency")[0]
    assert not re.search(r"\d…", table_part), "a number was cut with an ellipsis"
    cache_levels = wide.split("Cache levels")[1].split("Access pattern")[0]
    wanted = {n for n in _numbers(cache_levels) if len(n) > 1}
    assert wanted <= _numbers(narrow), f"missing at 50 columns: {wanted - _numbers(narrow)}"


# 7. Help is printed once and reads hand-written.

def test_no_command_prints_the_help_once():
    proc = perfprobe()
    assert proc.returncode == 0 and proc.stdout.count("Usage: perfprobe") == 1


def _every_command() -> list[str]:
    from perfprobe.cli.completions import command_options

    return [*command_options(), "fleet show", "fleet run"]  # "" is `perfprobe --help` itself


@pytest.mark.parametrize("command", _every_command())
def test_help_has_no_generated_type_marks(command):
    proc = perfprobe(*command.split(), "--help")
    text = proc.stdout
    assert proc.returncode == 0 and "Usage: perfprobe" in text, proc.stderr
    for mark in ("<bool>", "<int", "<str>", "<path>", "<list", "x>=", "<=x", "[required]", "[default:", "{", ESC):
        assert mark not in text, f"{command} --help shows {mark!r}"


# 8. A GPU index that cannot exist.

def test_gpu_index_that_cannot_exist_is_exit_2():
    for text in ("254", "99999999999999999999999"):
        with pytest.raises(UsageError, match="--device"):
            parse_device(text)
    assert parse_device("7") == 7


def test_unknown_gpu_count_is_said_in_the_skip_reason():
    # No CUDA device is visible on any host (CUDA_VISIBLE_DEVICES=""): cupy is missing or counts
    # none, so the device count is unknown, --device 7 cannot be refused and the probe skips, saying so.
    proc = perfprobe("pinned", "--device", "7", "--json", env={"CUDA_VISIBLE_DEVICES": ""})
    assert proc.returncode == 0, proc.stderr[-500:]
    result = json.loads(proc.stdout)["results"][0]
    assert result["verdict"] == "skip", result
    assert "GPU 7" in result["summary"] and "cannot be known" in result["summary"]


# 9. Unknown reads one word, never Python's None.

def test_captured_tree_tables_never_show_none(tmp_path):
    proc = perfprobe("host", "--fsroot", str(_damaged_tree(tmp_path)), env={"NO_COLOR": "1"})
    assert "None" not in proc.stdout and "unknown" in proc.stdout


# 10. NO_COLOR on a terminal: no escape at all; Ctrl-C says so.

def test_no_color_on_a_terminal_prints_no_escape():
    code, drawn = on_terminal("cache", "--replay", str(RECORDING), columns=120, env={"NO_COLOR": "1"})
    assert code == 0 and "L1" in drawn  # the recorded cache run passes
    assert ESC not in drawn


def test_sigint_says_interrupted_and_exits_130(tmp_path):
    tree = tmp_path / "tree"
    (tree / "sys/devices/system/cpu").mkdir(parents=True)
    (tree / "proc").mkdir()
    os.mkfifo(tree / "sys/devices/system/cpu/online")  # reading it blocks: the run is mid-way
    proc = subprocess.Popen([sys.executable, "-m", "perfprobe", "host", "--fsroot", str(tree)], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(2.0)
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert err.strip() == "perfprobe: interrupted"


# 11. Limits documented, agreeing with the errors, and an address-space limit named.

def test_the_largest_size_the_error_names_is_accepted():
    assert parse_size("1P", "--max-size", minimum=64 << 10) == 1 << 50
    with pytest.raises(UsageError, match="1 PiB"):
        parse_size("2P", "--max-size", minimum=64 << 10)


@pytest.mark.parametrize("command, words", [
    ("cache", ["64K", "1P", "1 to 1000"]), ("falseshare", ["256", "1M", "usable CPUs"]),
    ("numa", ["at least 16M"]), ("pinned", ["at least 64K"]), ("streams", ["at least 4M"]),
    ("uvm", ["at least 1M"]),
])
def test_limits_are_in_the_help(command, words):
    text = " ".join(perfprobe(command, "--help").stdout.split())
    for word in words:
        assert word in text, f"{command} --help lacks {word!r}"


def test_address_space_limit_caps_the_budget_and_is_named(monkeypatch):
    monkeypatch.setattr(budget, "_address_space_limit", lambda: 1_000_000 * 1024)
    host = {"memory": {"available_bytes": 64 << 30}}
    monkeypatch.setattr(budget, "_available_now", lambda facts: 64 << 30)
    capped = budget.host_memory_budget(host)
    assert capped.bytes < 1_000_000 * 1024 // 4 + 1
    assert "RLIMIT_AS" in capped.basis and "ulimit -v 1000000" in capped.basis


def test_enomem_under_ulimit_names_the_limit(monkeypatch):
    from perfprobe.engine import runner

    monkeypatch.setattr(budget, "_address_space_limit", lambda: 1_000_000 * 1024)
    result = runner._failed("cache", None, "measuring", OSError(12, "Cannot allocate memory"), time.perf_counter())
    assert "RLIMIT_AS" in result.findings[0].message and "ulimit -v" in result.findings[0].advice


# 13. Completions: file and folder options complete to files and folders.

def test_bash_completes_files_and_folders(tmp_path):
    if shutil.which("bash") is None:
        pytest.skip("no bash")
    (tmp_path / "afolder").mkdir()
    (tmp_path / "afile.json").write_text("{}")
    script = REPO / "completions" / "perfprobe.bash"

    def complete(*words: str) -> list[str]:
        line = " ".join(f'"{w}"' for w in words)
        proc = subprocess.run(["bash", "-c", f'source "{script}"; COMP_WORDS=({line}); '
                               f'COMP_CWORD={len(words) - 1}; _perfprobe; printf "%s\\n" "${{COMPREPLY[@]}}"'],
                              cwd=tmp_path, capture_output=True, text=True)
        return [w for w in proc.stdout.splitlines() if w]

    assert complete("perfprobe", "host", "--fsroot", "") == ["afolder"]
    assert set(complete("perfprobe", "cache", "--output", "")) == {"afolder", "afile.json"}
    assert complete("perfprobe", "cache", "--max-size", "") == []


# 14. --bind to a node too small to run on: one line, exit 2, before binding.

def test_bind_to_a_node_too_small_is_refused(monkeypatch):
    host = {"cpus": {"usable": [0, 1]}, "numa": {"nodes": [
        {"id": 0, "cpus": [0], "memory_free_bytes": 8 << 30},
        {"id": 1, "cpus": [1], "memory_free_bytes": 64 << 20}]}}
    monkeypatch.setattr("perfprobe.host.numa.node_free_bytes", lambda node, sr=None: None)
    with pytest.raises(UsageError, match=r"node 1 has 64 MiB free.*nodes with room: 0"):
        bind.check_node_memory(1, host)
    bind.check_node_memory(0, host)  # a roomy node passes


def test_bound_budget_is_the_nodes(monkeypatch):
    monkeypatch.setattr(budget, "_node_free_now", lambda node, host: 128 << 20)
    monkeypatch.setattr(budget, "_available_now", lambda host: 64 << 30)
    monkeypatch.setattr(budget, "_address_space_limit", lambda: None)
    capped, basis = budget.host_memory_budget({}, bind=1).cap(256 << 20)
    assert capped == 32 << 20 and basis is not None and "node 1" in basis
