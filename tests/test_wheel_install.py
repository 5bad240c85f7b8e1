"""The package as users get it: a wheel built from the tree, installed (not editable) into a fresh
venv, run from `/`, and its reports valid against the schema inside that installation.

An editable install hides what a wheel leaves out (package data, a probe package without
__init__.py); running from `/` keeps the checkout off sys.path. No network: the wheel is built
with this interpreter's setuptools and wheel (the test extra), installed with --no-deps, and the
fresh venv reaches the already installed dependencies through a .pth file written after the
install (so pip never sees this interpreter's editable perfprobe).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path
from typing import Any

import jsonschema
import pytest

REPO = Path(__file__).resolve().parents[1]
SCHEMA_IN_WHEEL = "perfprobe/schema/report.schema.json"
RECORDING = REPO / "tests" / "data" / "all_quick_h200x2.rec.json"  # the H200 guest: its host probe passes


class Installed:
    """A fresh venv holding the wheel: its interpreter, its perfprobe script, and what it imports."""

    def __init__(self, venv: Path, wheel: Path) -> None:
        self.venv, self.wheel = venv, wheel
        self.python, self.script = venv / "bin" / "python", venv / "bin" / "perfprobe"

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
        return {**env, "PATH": f"{self.venv / 'bin'}:{env.get('PATH', '')}", "PYTHONNOUSERSITE": "1"}

    def run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """Run `args` from `/` with this venv first on PATH and nothing of the checkout importable."""
        return subprocess.run(args, cwd="/", env=self.env(), capture_output=True, text=True, timeout=timeout)

    def where(self) -> dict[str, str]:
        """Where the installed perfprobe and its schema live, as that interpreter sees them."""
        code = "import json, perfprobe; print(json.dumps({'module': perfprobe.__file__, 'schema': str(perfprobe.schema_path())}))"
        done = self.run(str(self.python), "-c", code)
        assert done.returncode == 0, done.stderr
        where: dict[str, str] = json.loads(done.stdout)
        return where

    def report(self, *args: str, timeout: float = 120) -> tuple[int, dict[str, Any]]:
        """Exit code and JSON report of `perfprobe ARGS --json`, run from `/`."""
        done = self.run(str(self.script), *args, "--json", timeout=timeout)
        assert done.returncode in (0, 1, 3), f"exit {done.returncode}: {done.stderr[-2000:]}"
        report: dict[str, Any] = json.loads(done.stdout)
        return done.returncode, report


def _need(condition: bool, reason: str) -> None:
    """Skip, saying why, when this interpreter cannot build or install offline — except in CI
    (CI=true), whose .venv has the test extra, so there it is a broken setup and fails."""
    if not condition:
        if os.environ.get("CI", "").strip().lower() in ("1", "true", "yes"):
            pytest.fail(reason + " (CI=true: the test extra should have provided it)")
        pytest.skip(reason)


def _build_wheel(into: Path) -> Path:
    """`pip wheel --no-deps` of a copy of the tree (the copy keeps build/ and egg-info out of the checkout)."""
    _need(importlib.util.find_spec("setuptools") is not None and importlib.util.find_spec("wheel") is not None,
          "building offline needs setuptools and wheel in this interpreter (pip install -e '.[test]')")
    source = into / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, source / name)
    shutil.copytree(REPO / "perfprobe", source / "perfprobe",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.nbi", "*.nbc"))
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                            "--quiet", "-w", str(into / "dist"), str(source)],
                           capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    (wheel,) = (into / "dist").glob("perfprobe-*.whl")
    return wheel


def _install(wheel: Path, venv: Path) -> None:
    """A bare venv, the wheel installed into it by this interpreter's pip, then a .pth to the dependencies."""
    made = subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)],
                          capture_output=True, text=True, timeout=120)
    _need(made.returncode == 0, f"python -m venv cannot make a venv here: {made.stderr.strip()[-300:]}")
    general = subprocess.run([sys.executable, "-m", "pip", "--help"], capture_output=True, text=True).stdout
    _need("--python" in general, "this pip has no --python option (pip >= 22.3) to install into a venv without pip")
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install",
                           "--no-deps", "--no-index", "--quiet", str(wheel)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    site = subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    deps = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    (Path(site) / "_perfprobe_test_dependencies.pth").write_text("\n".join(deps) + "\n")


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    work = tmp_path_factory.mktemp("wheel")
    wheel = _build_wheel(work)
    _install(wheel, work / "venv")
    return Installed(work / "venv", wheel)


def test_the_wheel_carries_the_schema_and_every_probe_package(installed: Installed) -> None:
    names = set(zipfile.ZipFile(installed.wheel).namelist())
    assert SCHEMA_IN_WHEEL in names
    from perfprobe.engine.registry import PROBE_MODULES

    for module in PROBE_MODULES.values():
        path = module.replace(".", "/")
        assert f"{path}/__init__.py" in names or f"{path}.py" in names, module


def test_the_installed_copy_is_the_one_that_runs(installed: Installed) -> None:
    where = installed.where()
    venv = str(installed.venv.resolve())
    assert where["module"].startswith(venv) and where["schema"].startswith(venv), where
    assert Path(where["schema"]).is_file()


def test_host_json_from_root_validates_against_the_installed_schema(installed: Installed) -> None:
    code, report = installed.report("host", "--replay", str(RECORDING))  # recorded facts: one outcome
    schema = json.loads(Path(installed.where()["schema"]).read_text())
    jsonschema.validate(report, schema)
    assert code == 0 and [(r["probe"], r["verdict"]) for r in report["results"]] == [("host", "pass")]


@pytest.mark.slow
def test_all_quick_json_from_root_validates_and_no_probe_errors(installed: Installed) -> None:
    code, report = installed.report("all", "--quick", timeout=900)
    jsonschema.validate(report, json.loads(Path(installed.where()["schema"]).read_text()))
    errors = {r["probe"]: r["summary"] for r in report["results"] if r["verdict"] == "error"}
    assert not errors and code in (0, 1), errors
