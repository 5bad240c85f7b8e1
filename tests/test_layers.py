"""Layers stay apart: start-up and probe modules import no numba, cupy or NVML; only kernels do."""

import subprocess
import sys

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
