"""perfprobe: measure what makes a program fast on this host, judge it against the host's own facts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__version__ = "0.1.0"

SCHEMA_FILE = "report.schema.json"


def schema_path() -> Path:
    """The report's JSON Schema inside this installation (package data, so a wheel carries it)."""
    from importlib import resources

    return Path(str(resources.files(__name__) / "schema" / SCHEMA_FILE))


def load_schema() -> dict[str, Any]:
    """The report's JSON Schema as data, for validating `--json` output."""
    import json

    schema: dict[str, Any] = json.loads(schema_path().read_text(encoding="utf-8"))
    return schema
