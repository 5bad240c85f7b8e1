"""Layers stay apart: start-up and probe modules import no numba, cupy or NVML; only kernels do."""

import re
import subprocess
import sys
from pathlib import Path

from perfprobe.registry import PROBE_MODULES

HEAVY = ("numba", "cupy", "pynvml", "llvmlite")


def _modules_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys; print(' '.join(sys.modules))"],
                         capture_output=True, text=True, check=True).stdout
    return set(out.split())


def test_cli_start_up_imports_nothing_heavy():
    loaded = _modules_after("import perfprobe.cli")
    assert not [m for m in loaded if m.split(".")[0] in HEAVY]


def test_probe_modules_import_their_kernels_lazily():
    loaded = _modules_after("import importlib, importlib.util\n" + "\n".join(
        f"if importlib.util.find_spec('{m}'): importlib.import_module('{m}')" for m in PROBE_MODULES.values()))
    assert not [m for m in loaded if m.split(".")[0] in HEAVY]


PACKAGE = Path(__file__).resolve().parents[1] / "perfprobe"
GPU_PROBES = ("pinned", "streams", "uvm")


def _sources_containing(pattern: str) -> set[str]:
    """Paths (relative to perfprobe/) of the modules whose source matches `pattern`."""
    found = re.compile(pattern, re.MULTILINE)
    return {str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py") if found.search(p.read_text())}


def test_nvml_is_called_from_one_module():
    assert _sources_containing(r"^\s*(import pynvml|from pynvml)") == {"kernels/nvml.py"}


def test_the_pcie_link_files_are_read_in_one_place():
    """host/pci.py reads them through SysRoot, for the host facts and the GPU probes alike."""
    assert _sources_containing(r"current_link_speed") == {"host/pci.py"}


def test_gpu_probe_packages_import_no_kernels_until_measured():
    loaded = _modules_after("\n".join(f"import perfprobe.probes.{name}" for name in GPU_PROBES))
    assert not [m for m in loaded if m.startswith("perfprobe.kernels") or m.endswith(".measure")]


def test_only_measure_imports_the_uvm_paths_helper():
    assert _sources_containing(r"perfprobe\.probes\.uvm import paths|probes\.uvm\.paths") == {"probes/uvm/measure.py"}
