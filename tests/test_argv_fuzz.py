"""Argument lists fuzzed over every command and option (issue 14): valid, boundary and junk values.

Whatever is typed, perfprobe ends in one of its exit codes (0, 1, 2, 3, 130) with no traceback,
and under --json prints nothing but JSON on stdout. Runs in-process through cli.main, bounded in
count (max_examples) and time (nothing measures: a measurement becomes a skip, probe commands
judge a recording through --replay), so it fits in `make test` on a 2-core machine.

Content fuzzing (issue 27, test_fuzzed_file_contents_end_cleanly): reports and baselines drawn
from the shipped schemas (tests/report_strategies.py), then damaged, fed to every command that
reads them: a damaged file is exit 2, one line, nothing written.

Left out on purpose: `fleet run` (submits Slurm jobs), `healthcheck --detached` (starts background
runs); healthcheck always gets --dry-run (it would otherwise call scontrol to drain this node).
"""

from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
import typer
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from cli_invoke import run_captured
from perfprobe import cli
from perfprobe.engine import runner
from perfprobe.errors import ProbeSkipped

REPO = Path(__file__).resolve().parents[1]
RECORDING = str(REPO / "tests" / "data" / "all_quick_h200x2.rec.json")
REPORT_FILE = str(REPO / "tests" / "data" / "cache_kvm2c_quick.json")
EXIT_CODES = {0, 1, 2, 3, 130}
SKIPPED_COMMANDS = {("fleet", "run")}
SKIPPED_OPTIONS = {"--detached"}

NUMBERS = ["0", "1", "2", "3", "7", "16", "253", "254", "1000", "1001", "4096", "4097", "-1", "-0",
           "99999999999999999999999", "1.5", "1e3", "nan", "inf", "0x10", " 4 "]
SIZES = ["256", "300", "4K", "64K", "1M", "4M", "16M", "1G", "1P", "2P", "1GiB", "1Gb", "-5", "0", "1Q",
         "1 G", "99999999999999999999P", "0.5G"]
WORDS = ["", " ", "all", "ALL", "gpu0", "x", "--json", "-", "health", "prolog", "cache", "host,cache",
         "nosuch", "é", "0,1", "*", "💥"]


def _paths(tmp: Path) -> list[str]:
    """Files to read and to write: copies of the recorded files (a --record may overwrite them).
    No device file: the fuzzer runs as root in CI, and an atomic writer renames over its target."""
    return [str(tmp / "out.json"), str(tmp / "no-folder" / "out.json"), "/proc/version", str(tmp), "",
            "-", str(tmp / "recording.json"), str(tmp / "report.json"), str(tmp / "missing.json")]


def _dirs(tmp: Path) -> list[str]:
    return [str(tmp), str(tmp / "missing"), "/proc/version", "", "/", str(REPO / "tests" / "data")]


def _leaf_commands() -> dict[tuple[str, ...], Any]:
    group = typer.main.get_group(cli.app)
    leaves: dict[tuple[str, ...], Any] = {}
    for name, command in group.commands.items():
        subs = getattr(command, "commands", None)
        for sub_name, sub in (subs or {None: command}).items():
            key = (name,) if sub_name is None else (name, sub_name)
            if key not in SKIPPED_COMMANDS:
                leaves[key] = sub
    return leaves


COMMANDS = _leaf_commands()


def _value_strategy(param: Any, tmp: Path) -> st.SearchStrategy[str]:
    metavar = str(getattr(param, "metavar", None) or "").upper()
    kind = type(getattr(param, "type", None)).__name__
    if metavar.startswith("DIR"):
        return st.sampled_from(_dirs(tmp) + WORDS)
    if metavar.startswith(("FILE", "REPORT", "BASE", "NEW")) or "Path" in kind:
        return st.sampled_from(_paths(tmp) + WORDS)
    if metavar.startswith("BYTES"):
        return st.sampled_from(SIZES + NUMBERS + WORDS)
    return st.sampled_from(NUMBERS + SIZES + WORDS)


@st.composite
def argv_lists(draw: st.DrawFn, tmp: Path) -> list[str]:
    key = draw(st.sampled_from(sorted(COMMANDS)))
    command = COMMANDS[key]
    argv = list(key)
    options = [p for p in command.params if p.param_type_name == "option" and not set(p.opts) & SKIPPED_OPTIONS]
    for param in draw(st.lists(st.sampled_from(options), max_size=4)) if options else []:
        argv.append(draw(st.sampled_from(param.opts)))
        if not param.is_flag:
            if draw(st.integers(0, 9)) > 0:  # now and then the value is missing
                argv.append(draw(_value_strategy(param, tmp)))
    for param in (p for p in command.params if p.param_type_name == "argument"):
        for _ in range(draw(st.integers(0 if not param.required else 1, 2))):
            argv.append(draw(_value_strategy(param, tmp)))
    if "--replay" in {o for p in command.params for o in p.opts} and draw(st.integers(0, 4)) > 0:
        argv += ["--replay", str(tmp / "replay.json")]  # mostly judge recorded numbers: no kernel
    if key == ("healthcheck",):
        argv.append("--dry-run")
    if draw(st.integers(0, 5)) == 0:
        argv.append(draw(st.sampled_from(["--json", "--help", "--nosuch", "extra"])))
    return argv


def _json_asked(argv: list[str]) -> bool:
    """Whether --json is a flag of this argv (not the value of an option before it, e.g. --record)."""
    key = tuple(argv[:2]) if tuple(argv[:2]) in COMMANDS else tuple(argv[:1])
    command = COMMANDS.get(key)
    if command is None:
        return False
    takes_value = {o for p in command.params if p.param_type_name == "option" and not p.is_flag for o in p.opts}
    words = iter(argv[len(key):])
    for word in words:
        if word in takes_value:
            next(words, None)
        elif word == "--json":
            return True
    return False


def _no_measuring(probe: Any, ctx: Any) -> dict[str, Any]:
    raise ProbeSkipped("fuzzing: nothing is measured")


def run_argv(argv: list[str]) -> tuple[int, str, str]:
    return run_captured(argv)


@pytest.fixture(scope="module")
def fuzz_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("fuzz")
    for name, source in (("recording.json", RECORDING), ("replay.json", RECORDING), ("report.json", REPORT_FILE)):
        (folder / name).write_text(Path(source).read_text())
    return folder


def test_fuzzed_argv_ends_cleanly(fuzz_dir: Path) -> None:
    patch = pytest.MonkeyPatch()
    patch.setattr(runner, "_measure", _no_measuring)
    patch.setenv("NO_COLOR", "1")
    patch.setenv("SLURMD_NODENAME", "fuzz-node")
    patch.chdir(fuzz_dir)
    patch.setattr(sys, "stdin", io.StringIO(""))  # `fleet show` with no paths reads stdin

    @settings(max_examples=200, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
    @given(argv=argv_lists(fuzz_dir))
    def check(argv: list[str]) -> None:
        code, out, err = run_argv(argv)
        assert code != -1, f"{argv}: traceback\n{err}"
        assert "Traceback (most recent call last)" not in err, f"{argv}: traceback on stderr\n{err}"
        assert code in EXIT_CODES, f"{argv}: exit {code}\n{err[-400:]}"
        if code == 2:
            assert err.strip(), f"{argv}: exit 2 without saying why"
        if _json_asked(argv) and out.strip() and not {"--help", "-h", "--version"} & set(argv):
            try:
                json.loads(out)
            except ValueError:
                pytest.fail(f"{argv}: stdout under --json is not JSON: {out[:300]!r}")

    try:
        check()
    finally:
        patch.undo()


@pytest.mark.parametrize("argv, verdict", [
    (["cache", "--replay", RECORDING, "--json"], "pass"),
    (["all", "--replay", RECORDING, "--json", "--device", "all"], "skip"),  # what the recording lacks is measured: a skip
    (["host", "--json"], "skip"),  # live, so measured: a skip
    (["pinned", "--replay", RECORDING, "--device", "1", "--json"], "pass"),
])
def test_known_good_argv_gives_json(argv: list[str], verdict: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fuzzer's valid end: these runs give a JSON report (so the fuzz checks real output), each
    exit 0 (a recording's judgement, or nothing measured)."""
    monkeypatch.setattr(runner, "_measure", _no_measuring)
    code, out, err = run_argv(argv)
    assert code == 0, err
    report = json.loads(out)
    assert report["results"] and report["verdict"] == verdict


# Content fuzzing (issue 27): files shaped by the shipped schemas, then damaged; every command that
# reads one. A damaged file is exit 2 with one line on stderr and no output file; a whole one is
# judged (or refused for what it holds: different hardware, no figure in common) without a traceback.
CONTENT_COMMANDS = {
    "report": [["compare", "FILE", "FILE", "--json"], ["fleet", "FILE", "--baseline-out", "OUT"],
               ["report", "FILE", "--html", "OUT"], ["compare", "GOOD", "FILE"]],
    "baseline": [["compare", "FILE", "GOOD"], ["healthcheck", "--baseline", "FILE", "--mode", "prolog", "-o", "OUT"],
                 ["healthcheck", "--baseline", "FILE", "--dry-run", "--prom", "OUT"]],
}


def _write(where: Path, content: Any) -> Path:
    from perfprobe.system import untrusted

    if content == "dev_zero":
        return Path("/dev/zero")
    path = where / {"huge": "huge.json", "fifo": "fifo.json"}.get(content, "fuzzed.json")
    if content == "fifo":
        if not path.exists():
            os.mkfifo(path)
    elif content == "huge":
        with open(path, "wb") as out:
            out.truncate(untrusted.max_bytes() + 1)
    else:
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return path


def test_fuzzed_file_contents_end_cleanly(fuzz_dir: Path) -> None:
    import report_strategies as rs
    from perfprobe.fleet import health_run
    from perfprobe.system import untrusted

    def measured(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a health check measured: its baseline was not refused first")

    patch = pytest.MonkeyPatch()
    patch.setattr(runner, "_measure", _no_measuring)
    patch.setattr(health_run, "measure", measured)
    patch.setenv("NO_COLOR", "1")
    patch.setenv("SLURMD_NODENAME", "fuzz-node")
    folder = fuzz_dir / "content"
    folder.mkdir(exist_ok=True)
    out = folder / "out"

    @settings(max_examples=150, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example])
    @given(data=st.data())
    def check(data: st.DataObject) -> None:
        kind, doc = data.draw(rs.documents())
        assert untrusted.problem(doc, kind) is None, f"the strategy broke its schema: {untrusted.problem(doc, kind)}"
        damage, content = data.draw(rs.damaged(kind, doc))
        path = _write(folder, content)
        words = {"FILE": str(path), "GOOD": str(fuzz_dir / "report.json"), "OUT": str(out)}
        commands = CONTENT_COMMANDS[kind]
        argv = [words.get(w, w) for w in commands[data.draw(st.integers(0, 1 << 16)) % len(commands)]]
        if out.exists():
            out.unlink()
        code, _, err = run_argv(argv)
        event(f"{damage}: exit {code}")
        assert code != -1 and "Traceback (most recent call last)" not in err, f"{damage}: {argv}: traceback\n{err}"
        assert code in EXIT_CODES, f"{damage}: {argv}: exit {code}\n{err[-400:]}"
        if damage != "none":
            lines = err.strip().splitlines()
            assert code == 2 and len(lines) == 1, f"{damage}: {argv}: exit {code}\n{err[-400:]}"
            assert not out.exists(), f"{damage}: {argv}: wrote {out}"
        elif argv[0] == "report":
            assert code == 0 and out.exists(), err

    try:
        check()
    finally:
        patch.undo()
