"""Layers stay apart: start-up and probe packages import no numba, cupy or NVML (only kernels/ and
probes/*/measure.py do; ruff's TID251 catches the import lines, these tests catch what is loaded),
every probe is a package of the same shape, and rules and tables never import each other."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from perfprobe.registry import PROBE_MODULES

HEAVY = ("numba", "cupy", "cupyx", "pynvml", "llvmlite", "cuda")
PROBES = Path(__file__).resolve().parents[1] / "perfprobe" / "probes"
SHAPE = ("__init__.py", "plan.py", "measure.py", "figures.py", "rules.py", "tables.py")
PURE = ("plan", "figures", "rules", "tables")


def _heavy_after(code: str) -> list[str]:
    """Heavy modules loaded by a fresh interpreter after running `code`."""
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys; print(' '.join(sys.modules))"],
                         capture_output=True, text=True, check=True).stdout
    return sorted(m for m in out.split() if m.split(".")[0] in HEAVY)


def test_cli_start_up_imports_nothing_heavy() -> None:
    assert _heavy_after("import perfprobe.cli") == []


def test_probe_packages_and_their_pure_modules_import_no_kernel() -> None:
    modules = [*PROBE_MODULES.values(), *(f"{m}.{part}" for m in PROBE_MODULES.values() for part in PURE)]
    assert _heavy_after("import importlib\n" + "\n".join(f"importlib.import_module('{m}')" for m in modules)) == []


def test_the_check_sees_a_heavy_import() -> None:
    """The subprocess check above can fail: it does see numba when something loads it."""
    assert "numba" in _heavy_after("import numba")


@pytest.mark.parametrize("name", list(PROBE_MODULES))
def test_every_probe_is_a_package_of_the_same_shape(name: str) -> None:
    assert PROBE_MODULES[name] == f"perfprobe.probes.{name}"
    missing = [part for part in SHAPE if not (PROBES / name / part).is_file()]
    assert missing == [], f"probes/{name}/ lacks {missing}"


def test_no_flat_probe_modules_remain() -> None:
    assert sorted(p.name for p in PROBES.glob("*.py")) == ["__init__.py"]


def _imported(path: Path) -> set[str]:
    """Every module `path` imports, top level or inside functions, relative imports made absolute."""
    package = f"perfprobe.probes.{path.parent.name}"
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package if node.level else (node.module or "")
            if node.level and node.module:
                base = f"{package}.{node.module}"
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


@pytest.mark.parametrize("name", list(PROBE_MODULES))
def test_rules_and_tables_do_not_import_each_other(name: str) -> None:
    package = f"perfprobe.probes.{name}"
    rules, tables = PROBES / name / "rules.py", PROBES / name / "tables.py"
    assert f"{package}.tables" not in _imported(rules)
    assert f"{package}.rules" not in _imported(tables)
    assert f"{package}.measure" not in _imported(rules) | _imported(tables) | _imported(PROBES / name / "__init__.py")


def test_the_import_reader_sees_relative_and_function_level_imports(tmp_path: Path) -> None:
    probe = tmp_path / "demo"
    probe.mkdir()
    (probe / "rules.py").write_text("def f():\n    from . import tables\n    from .figures import x\n")
    assert {"perfprobe.probes.demo.tables", "perfprobe.probes.demo.figures"} <= _imported(probe / "rules.py")
