"""A real cgroup with a CPU quota and/or a memory limit, for tests that run perfprobe inside one.

Needs root and a writable cgroup file system: v1 (a `cpu` and a `memory` hierarchy mounted, as on
this project's test host) or v2 (the cpu and memory controllers enabled in the unified tree). Each
group is made inside this process's own group of that hierarchy (never above it), entered by a
wrapper (`sh -c 'echo $$ > cgroup.procs; exec "$@"'`), and removed afterwards; `Sandbox.create`
returns None, with the reason in `why_not`, where none can be made, so tests skip cleanly.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

CGROUP = Path("/sys/fs/cgroup")


@dataclass
class Sandbox:
    folders: list[Path] = field(default_factory=list)
    version: int = 0
    why_not: str = ""

    @classmethod
    def create(cls, name: str, quota_cpus: float | None = None, memory_bytes: int | None = None) -> "Sandbox | None":
        box = cls()
        try:
            box._make(f"{name}-{os.getpid()}", quota_cpus, memory_bytes)
        except OSError as exc:
            box.remove()
            cls.why_not = f"cannot make a cgroup here ({exc})"
            return None
        return box

    def _make(self, name: str, quota_cpus: float | None, memory_bytes: int | None) -> None:
        period = 100_000
        if (CGROUP / "cpu").is_dir() and (CGROUP / "memory").is_dir() and _v1_usable():
            self.version = 1
            if quota_cpus is not None:
                cpu = self._folder(CGROUP / "cpu", "cpu", name)
                (cpu / "cpu.cfs_period_us").write_text(f"{period}\n")
                (cpu / "cpu.cfs_quota_us").write_text(f"{int(quota_cpus * period)}\n")
            if memory_bytes is not None:
                memory = self._folder(CGROUP / "memory", "memory", name)
                (memory / "memory.limit_in_bytes").write_text(f"{memory_bytes}\n")
            return
        self.version = 2
        top = CGROUP if (CGROUP / "cgroup.controllers").exists() else CGROUP / "unified"
        wanted = {"cpu"} if quota_cpus is not None else set()
        wanted |= {"memory"} if memory_bytes is not None else set()
        if not wanted <= set((top / "cgroup.controllers").read_text().split()):
            raise OSError(f"the unified tree at {top} offers no {' or '.join(sorted(wanted))} controller")
        folder = self._folder(top, "", name)
        if quota_cpus is not None:
            (folder / "cpu.max").write_text(f"{int(quota_cpus * period)} {period}\n")
        if memory_bytes is not None:
            (folder / "memory.max").write_text(f"{memory_bytes}\n")

    def _folder(self, mount: Path, controller: str, name: str) -> Path:
        own = _own_group(controller)
        folder = mount / own.lstrip("/") / name
        folder.mkdir()
        self.folders.append(folder)
        return folder

    def wrap(self) -> list[str]:
        """argv prefix that runs a command inside every group of this sandbox."""
        joins = "; ".join(f"echo $$ > {f}/cgroup.procs" for f in self.folders)
        return ["sh", "-c", f'{joins} && exec "$@"', "sh"]

    def remove(self, wait_s: float = 20.0) -> None:
        """Remove the groups once their processes are gone (waits for stragglers, then moves them out)."""
        for folder in reversed(self.folders):
            deadline = time.monotonic() + wait_s
            while folder.exists():
                try:
                    folder.rmdir()
                except OSError:
                    if time.monotonic() > deadline:
                        _move_out(folder)
                    time.sleep(0.2)
        self.folders.clear()


def _v1_usable() -> bool:
    return (CGROUP / "cpu" / "cpu.cfs_quota_us").exists() and os.access(CGROUP / "cpu", os.W_OK)


def _own_group(controller: str) -> str:
    """This process's group in the hierarchy of `controller` ("" = the v2 tree)."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, names, path = line.split(":", 2)
        if (controller and controller in names.split(",")) or (not controller and names == ""):
            return path
    return "/"


def _move_out(folder: Path) -> None:
    parent = folder.parent / "cgroup.procs"
    for pid in (folder / "cgroup.procs").read_text().split():
        try:
            parent.write_text(pid)
        except OSError:
            pass
