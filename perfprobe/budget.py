"""How much host memory a probe may take: checked before every large allocation, never guessed."""

from __future__ import annotations

from typing import Any, Mapping


def host_memory_budget(host: Mapping[str, Any], fraction: float = 0.25) -> int:
    """Bytes of host memory a probe may take: a quarter of what is available (read now, live)."""
    try:
        import psutil

        available = int(psutil.virtual_memory().available)
    except Exception:
        available = int((host.get("memory") or {}).get("available_bytes") or 0)
    return int(available * fraction)
