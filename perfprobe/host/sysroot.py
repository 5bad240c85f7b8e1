"""One root-aware reader for /sys and /proc, so every fact can be read from a captured tree.

Readers return None instead of raising: a missing, unreadable or garbled file is a fact to report
(as null or a note), never a crash. `SysRoot(None)` reads the live host; `SysRoot(path)` reads
`path/sys/...` and `path/proc/...` of a captured tree.
"""

from __future__ import annotations

import os
from pathlib import Path


class SysRoot:
    """Read files under a root ("/" for the live host)."""

    def __init__(self, root: Path | str | None = None) -> None:
        self.live = root is None
        self.root = Path("/") if root is None else Path(root)

    def path(self, rel: str) -> Path:
        """The real path of `rel` ("sys/devices/...", leading "/" allowed) under the root."""
        return self.root / rel.lstrip("/")

    def read_text(self, rel: str) -> str | None:
        """The file's text with surrounding whitespace and NULs stripped, or None."""
        try:
            data = self.path(rel).read_bytes()
        except (OSError, ValueError):
            return None
        return data.decode("utf-8", errors="replace").strip().strip("\x00").strip()

    def read_int(self, rel: str) -> int | None:
        """The file's content as an int (decimal, or 0x hex), or None."""
        text = self.read_text(rel)
        if not text:
            return None
        try:
            return int(text, 0) if text.lower().startswith("0x") else int(text)
        except ValueError:
            return None

    def read_lines(self, rel: str) -> list[str]:
        """The file's lines ([] when missing)."""
        text = self.read_text(rel)
        return text.splitlines() if text else []

    def listdir(self, rel: str) -> list[str] | None:
        """Sorted entry names of a directory, or None when it is missing."""
        try:
            return sorted(os.listdir(self.path(rel)))
        except OSError:
            return None

    def exists(self, rel: str) -> bool:
        return self.path(rel).exists()

    def numbered(self, rel: str, prefix: str) -> list[int]:
        """Sorted N of the entries `prefix`N in directory `rel` (cpu0, node3, index2, ...)."""
        ids = []
        for name in self.listdir(rel) or []:
            suffix = name[len(prefix):]
            if name.startswith(prefix) and suffix.isdigit():
                ids.append(int(suffix))
        return sorted(ids)
