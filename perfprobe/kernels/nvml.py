"""The GPU's state as NVML and sysfs report it: PCIe link, performance state, clocks, NUMA node.

Read-only: nothing here changes a setting. Every query that the driver, the GPU or the host cannot
answer comes back as None instead of raising, so a missing NVML (no nvidia-ml-py, a container
without libnvidia-ml) costs figures, not the probe. The sysfs reading is the fallback for the link
and the only source for the GPU's NUMA node.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from perfprobe.pcie import gen_from_speed, width_from_text

SYSFS_PCI = Path("/sys/bus/pci/devices")
NVML_CLOCK_SM, NVML_CLOCK_MEM = 1, 2


def normalize_bus_id(bus_id: str | bytes) -> str:
    """'00000000:3B:00.0' / b'0000:3b:00.0' -> '0000:3b:00.0' (sysfs' spelling)."""
    text = bus_id.decode() if isinstance(bus_id, bytes) else str(bus_id)
    text = text.strip().lower()
    domain, _, rest = text.partition(":")
    if not rest:
        return text
    is_hex = bool(domain) and all(c in "0123456789abcdef" for c in domain)
    return f"{int(domain, 16):04x}:{rest}" if is_hex else text


def sysfs_link(bus_id: str, root: Path = SYSFS_PCI) -> dict[str, Any]:
    """Link generation and width (current, max) and the NUMA node from sysfs; None where absent."""
    folder = root / normalize_bus_id(bus_id)

    def read(name: str) -> str | None:
        try:
            return (folder / name).read_text().strip()
        except OSError:
            return None

    node_text = read("numa_node")
    digits = (node_text or "").lstrip("-")
    node = int(node_text) if node_text and digits.isascii() and digits.isdigit() else None
    return {
        "gen_current": gen_from_speed(read("current_link_speed")),
        "gen_max": gen_from_speed(read("max_link_speed")),
        "width_current": width_from_text(read("current_link_width")),
        "width_max": width_from_text(read("max_link_width")),
        "numa_node": node if node is not None and node >= 0 else None,
    }


class Nvml:
    """An NVML session on one GPU (by PCI bus id); every reading is None when unavailable."""

    def __init__(self, bus_id: str) -> None:
        self.error: str | None = None
        self._nvml: Any = None
        self._handle: Any = None
        try:
            import pynvml

            pynvml.nvmlInit()
            self._nvml = pynvml
            self._handle = self._find(normalize_bus_id(bus_id))
        except Exception as exc:  # ImportError, NVMLError: no NVML here, the figures stay None
            self.error = f"NVML unavailable: {type(exc).__name__}: {exc}"

    def _find(self, bus_id: str) -> Any:
        nvml = self._nvml
        for index in range(nvml.nvmlDeviceGetCount()):
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            if normalize_bus_id(nvml.nvmlDeviceGetPciInfo(handle).busId) == bus_id:
                return handle
        raise LookupError(f"no NVML device with PCI bus id {bus_id}")

    def _ask(self, name: str, *args: Any) -> Any:
        if self._handle is None:
            return None
        func: Callable[..., Any] | None = getattr(self._nvml, name, None)
        if func is None:
            return None
        try:
            return func(self._handle, *args)
        except Exception:  # NVMLError_NotSupported and kin: this GPU cannot say
            return None

    def driver_version(self) -> str | None:
        if self._nvml is None:
            return None
        try:
            version = self._nvml.nvmlSystemGetDriverVersion()
        except Exception:
            return None
        return version.decode() if isinstance(version, bytes) else str(version)

    def link(self) -> dict[str, Any]:
        """Current and maximum link (max: what this GPU in this slot can train to)."""
        return {
            "gen_current": self._ask("nvmlDeviceGetCurrPcieLinkGeneration"),
            "gen_max": self._ask("nvmlDeviceGetMaxPcieLinkGeneration"),
            "gen_max_gpu": self._ask("nvmlDeviceGetGpuMaxPcieLinkGeneration"),
            "width_current": self._ask("nvmlDeviceGetCurrPcieLinkWidth"),
            "width_max": self._ask("nvmlDeviceGetMaxPcieLinkWidth"),
        }

    def state(self) -> dict[str, Any]:
        """Performance state, clocks and clock-event reasons, with the link, read now."""
        reasons = self._ask("nvmlDeviceGetCurrentClocksEventReasons")
        if reasons is None:
            reasons = self._ask("nvmlDeviceGetCurrentClocksThrottleReasons")
        return {
            "pstate": self._ask("nvmlDeviceGetPerformanceState"),
            "sm_clock_mhz": self._ask("nvmlDeviceGetClockInfo", NVML_CLOCK_SM),
            "mem_clock_mhz": self._ask("nvmlDeviceGetClockInfo", NVML_CLOCK_MEM),
            "sm_clock_max_mhz": self._ask("nvmlDeviceGetMaxClockInfo", NVML_CLOCK_SM),
            "clock_event_reasons": reasons,
            "link": self.link(),
        }

    def close(self) -> None:
        if self._nvml is not None:
            try:
                self._nvml.nvmlShutdown()
            except Exception:
                pass
            self._nvml = self._handle = None
