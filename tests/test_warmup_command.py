"""`perfprobe warmup`: names checked before anything compiles (exit 2, one line), a failed kernel is
exit 3 and named, and a real warm-up leaves the kernels in numba's cache, where a second one finds them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from perfprobe.cli import main
from perfprobe.kernels import warmup

pytest.importorskip("numba")


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    out, err = capsys.readouterr()
    return int(exited.value.code or 0), out, err


@pytest.mark.parametrize("argv", [["warmup", "cahce"], ["warmup", "--jobs", "0"], ["warmup", "--jobs", "x"],
                                  ["warmup", "cache", "--jobs", "999"]])
def test_bad_usage_is_one_line_and_exit_2_before_anything_compiles(
        argv: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(warmup, "compile_ahead", lambda *a, **k: pytest.fail("compiled on bad usage"))
    code, out, err = _run(argv, capsys)
    assert code == 2 and out == ""
    assert err.startswith("perfprobe: error: ") and err.count("\n") == 1


def test_a_kernel_that_does_not_compile_is_named_and_exit_3(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(warmup, "missing", lambda kernels: list(kernels))
    monkeypatch.setattr(warmup, "compile_ahead", lambda kernels, jobs=None: warmup.Warmed(
        compiled=len(kernels) - 1, jobs=jobs or 1, failed=["branch_kernels.taken"], cache="/c"))
    code, out, _ = _run(["warmup", "branch", "--jobs", "1", "--json"], capsys)
    summary = json.loads(out)
    assert code == 3
    assert summary["failed"] == ["branch_kernels.taken"] and summary["processes"] == 1
    assert summary["kernels"] == len(warmup.needed(["branch"])) == summary["compiled"] + 1


def test_a_probe_without_recorded_kernels_is_said_not_refused(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(warmup, "compile_ahead", lambda kernels, jobs=None: warmup.Warmed(compiled=len(kernels)))
    code, out, _ = _run(["warmup", "gpumem"], capsys)
    assert code == 0
    assert "no kernels recorded for gpumem" in out


def test_a_real_warmup_fills_the_cache_and_a_second_finds_it(tmp_path: Path) -> None:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    env.pop("NUMBA_CPU_NAME", None)

    def warm() -> dict[str, object]:
        done = subprocess.run([sys.executable, "-m", "perfprobe", "warmup", "branch", "--json"], env=env,
                              capture_output=True, text=True, timeout=300, check=False)
        assert done.returncode == 0, done.stderr
        result: dict[str, object] = json.loads(done.stdout)
        return result

    first = warm()
    assert first["kernels"] == first["compiled"] and first["cached_before"] == 0
    assert any((tmp_path / "numba").rglob("*.nbi")), "numba's index files are in the cache named"
    second = warm()
    assert second["cached_before"] == second["kernels"] and second["compiled"] == 0
