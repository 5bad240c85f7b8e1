"""Pure readers of the raw numbers: what rules and tables both read."""

from __future__ import annotations

from typing import Any, Mapping


def ns_per_update(raw: Mapping[str, Any]) -> float:
    return float(raw["ns_per_update"]["median"])
