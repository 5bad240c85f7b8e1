"""NVML, the one place it is called: the GPUs' list for the host facts, one GPU's state for pinned,
and the NVLink / PCIe topology between GPUs for p2p.

Read-only: nothing here changes a setting. Every query that the driver, the GPU or the host cannot
answer comes back as None instead of raising, so a missing NVML (no nvidia-ml-py, a container
without libnvidia-ml) costs figures, not the run. sysfs (the PCIe link files, the NUMA node) is
read by perfprobe/host/pci.py through the root-aware SysRoot, never here.
"""

from __future__ import annotations

import os
from typing import Any, Callable

from perfprobe.host.pci import sysfs_address

GPU_HINT = "pip install 'perfprobe[gpu]' (nvidia-ml-py) to read GPU facts"
NVML_CLOCK_SM, NVML_CLOCK_MEM = 1, 2


def list_gpus() -> tuple[list[dict[str, Any]], str | None]:
    """(every GPU as NVML reports it, a note when some or all could not be read); never raises.

    Each GPU: index, name, uuid, memory_total_bytes, pci_bus_id (sysfs spelling), numa_node (NVML's,
    None when unknown), pcie (current and max link) and driver_version."""
    try:
        import pynvml
    except ImportError:
        return [], f"nvidia-ml-py (pynvml) is not installed; {GPU_HINT}"
    try:
        pynvml.nvmlInit()
    except Exception as exc:
        return [], f"NVML did not start ({_message(exc)}): no NVIDIA driver on this host"
    try:
        driver = _text(_call(pynvml.nvmlSystemGetDriverVersion))
        count = _call(pynvml.nvmlDeviceGetCount) or 0
        found = [_gpu(pynvml, index, driver) for index in range(count)]
    finally:
        _call(pynvml.nvmlShutdown)
    gpus = [gpu for gpu in found if gpu is not None]
    if len(gpus) < count:
        return gpus, f"NVML counts {count} GPUs but {count - len(gpus)} did not answer"
    return gpus, None if gpus else "NVML reports no GPU"


def _gpu(pynvml: Any, index: int, driver: str | None) -> dict[str, Any] | None:
    handle = _call(pynvml.nvmlDeviceGetHandleByIndex, index)
    if handle is None:
        return None
    pci = _call(pynvml.nvmlDeviceGetPciInfo, handle)
    memory = _call(pynvml.nvmlDeviceGetMemoryInfo, handle)
    node = _call(getattr(pynvml, "nvmlDeviceGetNumaNodeId", None), handle)
    return {"index": index, "name": _text(_call(pynvml.nvmlDeviceGetName, handle)) or f"GPU {index}",
            "uuid": _text(_call(pynvml.nvmlDeviceGetUUID, handle)),
            "memory_total_bytes": int(memory.total) if memory else None,
            "pci_bus_id": sysfs_address(_text(getattr(pci, "busId", None)) or "") if pci else "",
            "numa_node": node if isinstance(node, int) and node >= 0 else None,
            "pcie": _pcie(pynvml, handle), "driver_version": driver}


def _pcie(pynvml: Any, handle: Any) -> dict[str, int | None]:
    """Current and max link; max is what this GPU *in this slot* can reach (NVML's "Max")."""
    return {"gen_current": _call(pynvml.nvmlDeviceGetCurrPcieLinkGeneration, handle),
            "gen_max": _call(pynvml.nvmlDeviceGetMaxPcieLinkGeneration, handle),
            "width_current": _call(pynvml.nvmlDeviceGetCurrPcieLinkWidth, handle),
            "width_max": _call(pynvml.nvmlDeviceGetMaxPcieLinkWidth, handle)}


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
            self._handle = self._find(sysfs_address(bus_id))
        except Exception as exc:  # ImportError, NVMLError: no NVML here, the figures stay None
            self.error = f"NVML unavailable: {type(exc).__name__}: {exc}"

    def _find(self, bus_id: str) -> Any:
        nvml = self._nvml
        for index in range(nvml.nvmlDeviceGetCount()):
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            if sysfs_address(nvml.nvmlDeviceGetPciInfo(handle).busId) == bus_id:
                return handle
        raise LookupError(f"no NVML device with PCI bus id {bus_id}")

    def _ask(self, name: str, *args: Any) -> Any:
        if self._handle is None:
            return None
        return _call(getattr(self._nvml, name, None), self._handle, *args)

    def driver_version(self) -> str | None:
        if self._nvml is None:
            return None
        return _text(_call(self._nvml.nvmlSystemGetDriverVersion))

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

    def activity(self) -> dict[str, Any]:
        """Other work on this GPU now: NVML's utilisation over its last sample period (percent of
        time a kernel ran; memory: percent of time memory was read or written) and the compute and
        graphics processes it lists. `own_pid` lets the reader leave this process out; in a PID
        namespace NVML's pids are the host's, so `own_listed` says whether it matched at all."""
        util = self._ask("nvmlDeviceGetUtilizationRates")
        found: dict[int, int | None] = {}
        for name in ("nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetGraphicsRunningProcesses"):
            for proc in self._ask(name) or []:
                used = getattr(proc, "usedGpuMemory", None)
                found[int(proc.pid)] = int(used) if isinstance(used, int) else None
        own = os.getpid()
        return {"gpu_util_percent": getattr(util, "gpu", None), "memory_util_percent": getattr(util, "memory", None),
                "processes": [{"pid": pid, "used_bytes": used} for pid, used in sorted(found.items())],
                "own_pid": own, "own_listed": own in found, "readable": self._handle is not None}

    def close(self) -> None:
        if self._nvml is not None:
            _call(self._nvml.nvmlShutdown)
            self._nvml = self._handle = None


NVLINK_MAX_LINKS = 18  # NVML_NVLINK_MAX_LINKS
P2P_CAPS = {"read": 0, "write": 1, "nvlink": 2}  # NVML_P2P_CAPS_INDEX_*


def p2p_topology(bus_ids: dict[int, str]) -> dict[str, Any]:
    """NVLink links of each GPU (CUDA index → PCI bus id) and, for each pair, the PCIe common
    ancestor and NVML's P2P status; never raises. {"gpus": {"0": {"links": [...], "pcie": {...}}},
    "pairs": {"0.1": {"common_ancestor": 30, "p2p_status": {"read": 0, "nvlink": 0}}}, "error"}."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception as exc:  # no nvidia-ml-py, no driver: the topology stays unknown
        return {"gpus": {}, "pairs": {}, "error": f"NVML unavailable: {type(exc).__name__}: {exc}"}
    try:
        handles = {i: _handle_by_bus(pynvml, bus) for i, bus in bus_ids.items()}
        gpus = {str(i): {"links": _nvlinks(pynvml, h), "pcie": _pcie(pynvml, h)} if h is not None else {}
                for i, h in handles.items()}
        pairs = {f"{i}.{j}": _pair(pynvml, handles[i], handles[j])
                 for i in handles for j in handles if i != j}
    finally:
        _call(pynvml.nvmlShutdown)
    return {"gpus": gpus, "pairs": pairs, "error": None}


def _handle_by_bus(pynvml: Any, bus_id: str) -> Any:
    """The NVML handle whose PCI bus id is `bus_id` (NVML's numbering may differ from CUDA's)."""
    for index in range(_call(pynvml.nvmlDeviceGetCount) or 0):
        handle = _call(pynvml.nvmlDeviceGetHandleByIndex, index)
        pci = _call(pynvml.nvmlDeviceGetPciInfo, handle) if handle is not None else None
        if pci is not None and sysfs_address(_text(pci.busId) or "") == sysfs_address(bus_id):
            return handle
    return None


def _nvlinks(pynvml: Any, handle: Any) -> list[dict[str, Any]]:
    """Each link NVML answers for: up (NVML_FEATURE_ENABLED), NVML's version code, the remote
    end's PCI bus id and type (0 GPU, 1 IBM NPU, 2 NVSwitch)."""
    links = []
    for link in range(NVLINK_MAX_LINKS):
        state = _call(getattr(pynvml, "nvmlDeviceGetNvLinkState", None), handle, link)
        if state is None:
            continue
        remote = _call(getattr(pynvml, "nvmlDeviceGetNvLinkRemotePciInfo_v2", None), handle, link) or \
            _call(getattr(pynvml, "nvmlDeviceGetNvLinkRemotePciInfo", None), handle, link)
        bus = _text(getattr(remote, "busId", None)) if remote is not None else None
        links.append({"link": link, "up": bool(state),
                      "version": _call(pynvml.nvmlDeviceGetNvLinkVersion, handle, link),
                      "remote_bus_id": sysfs_address(bus) if bus else None,
                      "remote_type": _call(getattr(pynvml, "nvmlDeviceGetNvLinkRemoteDeviceType", None),
                                           handle, link)})
    return links


def _pair(pynvml: Any, a: Any, b: Any) -> dict[str, Any]:
    """PCIe common ancestor (0 same board, 10 one switch, 20 several switches, 30 host bridge,
    40 same NUMA node, 50 across sockets) and NVML's P2P status (0 OK; 1 chipset, 2 GPU, 3 IOH
    topology not supported; 4 disabled by a registry key; 5 not supported)."""
    if a is None or b is None:
        return {"common_ancestor": None, "p2p_status": {}}
    status = {name: _call(getattr(pynvml, "nvmlDeviceGetP2PStatus", None), a, b, index)
              for name, index in P2P_CAPS.items()}
    return {"common_ancestor": _call(getattr(pynvml, "nvmlDeviceGetTopologyCommonAncestor", None), a, b),
            "p2p_status": status}


def _call(function: Callable[..., Any] | None, *args: Any) -> Any:
    """Call one NVML query; "not supported" and other NVML errors become None."""
    if function is None:
        return None
    try:
        return function(*args)
    except Exception:  # NVMLError_NotSupported and kin: this GPU cannot say
        return None


def _text(value: Any) -> str | None:
    if isinstance(value, bytes):
        value = value.decode(errors="replace")
    return str(value) if value else None


def _message(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
