"""Layers stay apart: start-up and probe packages import no numba, cupy or NVML (only kernels/ and
probes/*/measure.py do; ruff's TID251 catches the import lines, these tests catch what is loaded),
every probe is a package of the same shape, and rules and tables never import each other."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from perfprobe.engine.registry import PROBE_MODULES, declarations

HEAVY = ("numba", "cupy", "cupyx", "pynvml", "llvmlite", "cuda")
PROBES = Path(__file__).resolve().parents[1] / "perfprobe" / "probes"
SHAPE = ("__init__.py", "declared.py", "plan.py", "measure.py", "figures.py", "rules.py", "tables.py")
PURE = ("plan", "figures", "rules", "tables")


def _modules_after(code: str) -> set[str]:
    """Every module a fresh interpreter has loaded after running `code`."""
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys; print(' '.join(sys.modules))"],
                         capture_output=True, text=True, check=True).stdout
    return set(out.split())


def _heavy_after(code: str) -> list[str]:
    """Heavy modules loaded by a fresh interpreter after running `code`."""
    return sorted(m for m in _modules_after(code) if m.split(".")[0] in HEAVY)


HELP = "from perfprobe import cli\ntry:\n    cli.main(['--help'])\nexcept SystemExit:\n    pass"
"""What `perfprobe --help` runs: the CLI and its commands, built from every probe's declaration."""


def test_cli_start_up_imports_nothing_heavy() -> None:
    assert _heavy_after(HELP) == []


def test_cli_start_up_reads_the_declarations_only() -> None:
    """The commands are built from declared.py; no probe package's __init__, rules or tables runs."""
    loaded = _modules_after(HELP)
    assert {m for m in loaded if m.startswith("perfprobe.probes.")} == {f"{m}.declared" for m in PROBE_MODULES.values()}


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
    """Every probe is a package; a flat module beside them is shared by several (gpu_raw.py's types)."""
    assert {p.stem for p in PROBES.glob("*.py")} & set(PROBE_MODULES) == set()
    assert sorted(p.name for p in PROBES.iterdir() if p.is_dir() and p.name != "__pycache__") == sorted(PROBE_MODULES)


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


PACKAGE = PROBES.parent
GPU_PROBES = tuple(d.name for d in declarations() if d.gpu)


def _sources_containing(pattern: str) -> set[str]:
    """Paths (relative to perfprobe/) of the modules whose source matches `pattern`."""
    found = re.compile(pattern, re.MULTILINE)
    return {str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py") if found.search(p.read_text())}


def test_nvml_is_called_from_one_module() -> None:
    assert _sources_containing(r"^\s*(import pynvml|from pynvml)") == {"kernels/nvml.py"}


def test_the_pcie_link_files_are_read_in_one_place() -> None:
    """host/pci.py reads them through SysRoot, for the host facts and the GPU probes alike."""
    assert _sources_containing(r"current_link_speed") == {"host/pci.py"}


def test_the_gpu_probes_are_read_off_the_registry() -> None:
    assert set(GPU_PROBES) == {"pinned", "streams", "uvm", "gpumem", "p2p"}


def test_declarations_load_without_their_packages() -> None:
    """--help reads every probe's declared.py: that loads none of the packages' rules or tables."""
    loaded = _modules_after("from perfprobe.engine.registry import declarations\ndeclarations()")
    probes = {m for m in loaded if m.startswith("perfprobe.probes.")}
    assert probes == {f"{m}.declared" for m in PROBE_MODULES.values()}


def test_gpu_probe_packages_import_no_kernels_until_measured() -> None:
    loaded = _modules_after("\n".join(f"import perfprobe.probes.{name}" for name in GPU_PROBES))
    assert not [m for m in loaded if m.startswith("perfprobe.kernels") or m.endswith(".measure")]


def test_only_measure_imports_the_uvm_paths_helper() -> None:
    assert _sources_containing(r"perfprobe\.probes\.uvm import paths|probes\.uvm\.paths") == {"probes/uvm/measure.py"}


TOP_LEVEL = {"__init__", "__main__", "errors"}
"""The only modules at the top of perfprobe/: the version and schema, `python -m perfprobe`, the leaf
exceptions. Everything else lives in a folder that says where it sits in the flow."""
FOLDERS = {"cli", "engine", "system", "pure", "host", "kernels", "probes", "render", "fleet", "schema"}


def test_the_top_level_keeps_at_most_eight_modules() -> None:
    modules = {p.stem for p in PACKAGE.glob("*.py")}
    assert modules == TOP_LEVEL and len(modules) <= 8
    assert {p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"} == FOLDERS


def test_the_console_script_and_python_m_reach_the_cli(capsys: pytest.CaptureFixture[str]) -> None:
    """pyproject's `perfprobe = "perfprobe.cli:console"` and `python -m perfprobe` (perfprobe/__main__.py):
    `main`, then the fast exit (tests/test_fast_exit.py)."""
    from perfprobe import __version__, cli
    from perfprobe.cli import commands

    assert cli.app is commands.app
    with pytest.raises(SystemExit) as exit_:
        cli.main(["--version"])
    assert exit_.value.code == 0 and __version__ in capsys.readouterr().out
    assert 'perfprobe = "perfprobe.cli:console"' in (PACKAGE.parent / "pyproject.toml").read_text()
    assert "from perfprobe.cli import console" in (PACKAGE / "__main__.py").read_text()


def test_the_cli_helpers_load_without_the_app() -> None:
    """fleet/commands.py imports cli/help.py while cli/commands.py imports fleet/commands.py: the
    package's __init__ loads commands.py only when `main` or `app` is used, so either order works."""
    assert "perfprobe.cli.commands" not in _modules_after("import perfprobe.cli.help")
    assert "perfprobe.cli.help" in _modules_after("import perfprobe.fleet.commands")  # check=True: it imports
    assert "perfprobe.fleet.commands" in _modules_after("import perfprobe.cli.commands")


IO_MODULES = {"os", "sys", "io", "pathlib", "shutil", "subprocess", "socket", "ctypes", "resource", "mmap",
              "signal", "threading", "multiprocessing", "tempfile", "glob"}
PURE_MAY_IMPORT = ("perfprobe.errors", "perfprobe.pure", "perfprobe.engine.model", "perfprobe.engine.confirm")


def _imports_of(path: Path) -> set[str]:
    """What `path` imports, by absolute name: `from a.b import c` is a.b.c (the module or the name
    in it; the pure helpers use no relative imports)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            names.update(f"{node.module or '.'}.{alias.name}" for alias in node.names)
    return names


@pytest.mark.parametrize("path", sorted((PACKAGE / "pure").glob("*.py")), ids=lambda p: p.name)
def test_the_pure_helpers_touch_no_file_process_or_machine(path: Path) -> None:
    """pure/ is what its name says: no I/O module, no open(), nothing from system/, host/ or kernels/."""
    imported = _imports_of(path)
    assert {name.split(".")[0] for name in imported} & IO_MODULES == set()
    ours = {name for name in imported if name.startswith("perfprobe")}
    assert [name for name in ours if not name.startswith(PURE_MAY_IMPORT)] == []
    assert not re.search(r"\bopen\(", path.read_text())


def test_the_pure_check_sees_io(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("import os\nfrom perfprobe.system import bind\nfrom pathlib import Path\n")
    assert _imports_of(sample) == {"os", "perfprobe.system.bind", "pathlib.Path"}
