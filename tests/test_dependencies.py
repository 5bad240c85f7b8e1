"""pyproject's dependencies and perfprobe's imports agree: nothing declared that nothing imports,
nothing imported (outside the standard library) that is not declared."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
IMPORT_NAME = {"py-cpuinfo": "cpuinfo", "nvidia-ml-py": "pynvml", "cuda-bindings": "cuda",
               "cupy-cuda12x": "cupy", "cupy-cuda13x": "cupy", "prometheus-client": "prometheus_client"}
# click: imported only under typer < 0.20, which depends on it itself (cli._click_exceptions).
UNDECLARED_OK = {"click"}
RUNTIME_EXTRAS = ("gpu", "gpu-cuda13")


def _declared() -> set[str]:
    """Import names of the runtime dependencies and the GPU extras."""
    tomllib = pytest.importorskip("tomllib", reason="reading pyproject.toml needs tomllib (Python >= 3.11)")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    specs = [*project["dependencies"], *(s for extra in RUNTIME_EXTRAS for s in project["optional-dependencies"][extra])]
    names = {re.split(r"[<>=!~\[; ]", spec, maxsplit=1)[0].strip().lower() for spec in specs}
    return {IMPORT_NAME.get(name, name.replace("-", "_")) for name in names}


def _imported() -> dict[str, str]:
    """Top-level third-party modules perfprobe/ imports (anywhere in a module) → one file importing it."""
    found: dict[str, str] = {}
    for path in sorted((ROOT / "perfprobe").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            else:
                continue
            for module in modules:
                top = module.split(".")[0]
                if top != "perfprobe" and top not in sys.stdlib_module_names:
                    found.setdefault(top, str(path.relative_to(ROOT)))
    return found


def test_every_declared_dependency_is_imported() -> None:
    assert sorted(_declared() - set(_imported())) == []


def test_every_third_party_import_is_declared() -> None:
    undeclared = {m: where for m, where in _imported().items() if m not in _declared() | UNDECLARED_OK}
    assert undeclared == {}
