"""Shared test fixtures: captured /sys and /proc trees of real machines.

The trees live outside the repo, in ../shared/fixtures/sysfs/NAME.tar.bz2 (beside the checkout, as
on CI). `fixture_tree("16amd64-8n2c")` unpacks one once per session and returns the directory
holding its `sys/` and `proc/` (what `read_host_facts(root)` and `--fsroot` take).
"""

from __future__ import annotations

import shutil
import subprocess
import tarfile
from pathlib import Path
from typing import Callable, Iterator

import pytest
from hypothesis import HealthCheck, settings

# CI is a small, busy 2-core machine: hypothesis must judge correctness, never speed.
settings.register_profile("perfprobe", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("perfprobe")


@pytest.fixture(autouse=True)
def _process_state_restored() -> Iterator[None]:
    """Each test leaves the process's CPU affinity, memory policy and numba threads as it found them.
    An in-process `--bind 0` (the argv fuzz draws it; only measuring is stubbed there) binds the
    pytest process itself, and every child started after it inherits the memory policy:
    test_bind's "CPUs bound but memory not" child then saw MPOL_BIND and nothing to catch."""
    from perfprobe.system.process_state import preserved

    with preserved():
        yield

REPO_ROOT = Path(__file__).resolve().parent.parent
FIXTURES_DIR = REPO_ROOT.parent / "shared" / "fixtures" / "sysfs"


def fixture_names() -> list[str]:
    """Names of every captured tree (the tarball names without .tar.bz2); [] when none are here."""
    return sorted(p.name[: -len(".tar.bz2")] for p in FIXTURES_DIR.glob("*.tar.bz2"))


def _unpack(archive: Path, into: Path) -> Path:
    """Unpack `archive` into `into` and return the tree root (the folder with sys/ in it).

    System tar is ~10x faster than tarfile on these trees (10k small files); tarfile is the fallback.
    """
    tar_bin = shutil.which("tar")
    done = tar_bin and subprocess.run([tar_bin, "-xjf", str(archive), "-C", str(into)],
                                      capture_output=True).returncode == 0
    if not done:
        _unpack_with_tarfile(archive, into)
    tops = [p for p in into.iterdir() if p.is_dir()]
    return tops[0] if len(tops) == 1 and not (into / "sys").exists() else into


def _unpack_with_tarfile(archive: Path, into: Path) -> None:
    with tarfile.open(archive) as tar:
        members = [m for m in tar.getmembers() if not (m.isdev() or m.name.startswith(("/", "..")))]
        if hasattr(tarfile, "data_filter"):
            tar.extractall(into, members=members, filter="fully_trusted")
        else:
            tar.extractall(into, members=members)


@pytest.fixture(scope="session")
def fixture_tree(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """Factory: NAME -> root of the unpacked tree (cached for the session; skips if absent)."""
    cache: dict[str, Path] = {}

    def unpack(name: str) -> Path:
        if name not in cache:
            archive = FIXTURES_DIR / f"{name}.tar.bz2"
            if not archive.exists():
                pytest.skip(f"fixture tree {archive} is not here")
            cache[name] = _unpack(archive, tmp_path_factory.mktemp(name.replace("+", "_")))
        return cache[name]

    return unpack
