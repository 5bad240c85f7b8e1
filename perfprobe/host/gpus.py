"""NVIDIA GPUs: live through NVML (optional, imported lazily), in a captured tree through sysfs.

Nothing here raises: no pynvml, no driver or no device gives `gpus = []` and a `gpu_note` saying
why. A GPU's NUMA node comes from sysfs first (what the kernel routes by), NVML second.
"""

from __future__ import annotations

from typing import Any, Callable

from perfprobe.host.pci import PCI_DIR, device_facts, link_facts, local_node, sysfs_address
from perfprobe.host.sysroot import SysRoot

NVIDIA_VENDOR = "0x10de"
NVIDIA_PROC = "proc/driver/nvidia"
GPU_HINT = "pip install 'perfprobe[gpu]' (nvidia-ml-py) to read GPU facts"


def read_gpus(sr: SysRoot, nodes: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str | None]:
    """(gpus, gpu_note): NVML live, sysfs for a captured tree."""
    if sr.live:
        return nvml_gpus(sr, nodes)
    gpus = sysfs_gpus(sr, nodes)
    return gpus, None if gpus else "no NVIDIA GPU in the tree's PCI devices"


def nvidia_addresses(sr: SysRoot) -> list[str]:
    """PCI addresses of NVIDIA display/3D controllers (class 0x03xxxx), or of the GPUs the
    NVIDIA driver lists under /proc when the tree has no vendor files."""
    found = []
    for address in sr.listdir(PCI_DIR) or []:
        facts = device_facts(sr, address)
        is_gpu = (facts["class"] or "").startswith("0x03")
        driver_lists = sr.exists(f"{NVIDIA_PROC}/gpus/{address}")
        if is_gpu and (facts["vendor"] == NVIDIA_VENDOR or (facts["vendor"] is None and driver_lists)):
            found.append(address)
    return found


def sysfs_gpus(sr: SysRoot, nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """GPUs of a captured tree, with what sysfs and /proc/driver/nvidia say about them."""
    driver = _driver_version(sr)
    gpus = []
    for index, address in enumerate(nvidia_addresses(sr)):
        info = _proc_information(sr, address)
        device_id = sr.read_text(f"{PCI_DIR}/{address}/device")
        node, source = _sysfs_node(sr, address, nodes)
        gpus.append({"index": index, "name": info.get("model") or f"NVIDIA GPU {device_id or address}",
                     "uuid": info.get("gpu uuid"), "memory_total_bytes": None, "pci_bus_id": address,
                     "numa_node": node, "numa_node_source": source,
                     "pcie": link_facts(sr, address), "driver_version": driver})
    return gpus


def _sysfs_node(sr: SysRoot, address: str, nodes: list[dict[str, Any]]) -> tuple[int | None, str]:
    node = device_facts(sr, address)["numa_node"]
    if node is None:
        node = local_node(sr, address, nodes)
    return node, "unknown" if node is None else "sysfs"


def _proc_information(sr: SysRoot, address: str) -> dict[str, str]:
    info = {}
    for line in sr.read_lines(f"{NVIDIA_PROC}/gpus/{address}/information"):
        key, sep, value = line.partition(":")
        if sep:
            info[key.strip().lower()] = value.strip()
    return info


def _driver_version(sr: SysRoot) -> str | None:
    """"NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  ..." -> "550.54.15"."""
    words = (sr.read_text(f"{NVIDIA_PROC}/version") or "").split()
    if "Module" in words and words.index("Module") + 1 < len(words):
        return words[words.index("Module") + 1]
    return None


def nvml_gpus(sr: SysRoot, nodes: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str | None]:
    """Live GPUs through NVML; never raises."""
    try:
        import pynvml
    except ImportError:
        return [], f"nvidia-ml-py (pynvml) is not installed; {GPU_HINT}"
    try:
        pynvml.nvmlInit()
    except Exception as exc:
        return [], f"NVML did not start ({_message(exc)}): no NVIDIA driver on this host"
    try:
        driver = _text(_nvml(pynvml.nvmlSystemGetDriverVersion))
        count = _nvml(pynvml.nvmlDeviceGetCount) or 0
        found = [_nvml_gpu(pynvml, sr, index, driver, nodes) for index in range(count)]
    finally:
        _nvml(pynvml.nvmlShutdown)
    gpus = [gpu for gpu in found if gpu is not None]
    if len(gpus) < count:
        return gpus, f"NVML counts {count} GPUs but {count - len(gpus)} did not answer"
    return gpus, None if gpus else "NVML reports no GPU"


def _nvml_gpu(pynvml: Any, sr: SysRoot, index: int, driver: str | None,
              nodes: list[dict[str, Any]]) -> dict[str, Any] | None:
    handle = _nvml(pynvml.nvmlDeviceGetHandleByIndex, index)
    if handle is None:
        return None
    pci = _nvml(pynvml.nvmlDeviceGetPciInfo, handle)
    bus_id = sysfs_address(_text(getattr(pci, "busId", None)) or "") if pci else ""
    memory = _nvml(pynvml.nvmlDeviceGetMemoryInfo, handle)
    node, source = _sysfs_node(sr, bus_id, nodes) if bus_id else (None, "unknown")
    if node is None:
        node = _nvml(getattr(pynvml, "nvmlDeviceGetNumaNodeId", None), handle)
        node, source = (node, "nvml") if isinstance(node, int) and node >= 0 else (None, "unknown")
    return {"index": index, "name": _text(_nvml(pynvml.nvmlDeviceGetName, handle)) or f"GPU {index}",
            "uuid": _text(_nvml(pynvml.nvmlDeviceGetUUID, handle)),
            "memory_total_bytes": int(memory.total) if memory else None, "pci_bus_id": bus_id,
            "numa_node": node, "numa_node_source": source, "pcie": _nvml_pcie(pynvml, handle),
            "driver_version": driver}


def _nvml_pcie(pynvml: Any, handle: Any) -> dict[str, int | None]:
    """Current and max link; max is what this GPU *in this slot* can reach (NVML's "Max")."""
    return {"gen_current": _nvml(pynvml.nvmlDeviceGetCurrPcieLinkGeneration, handle),
            "gen_max": _nvml(pynvml.nvmlDeviceGetMaxPcieLinkGeneration, handle),
            "width_current": _nvml(pynvml.nvmlDeviceGetCurrPcieLinkWidth, handle),
            "width_max": _nvml(pynvml.nvmlDeviceGetMaxPcieLinkWidth, handle)}


def _nvml(function: Callable[..., Any] | None, *args: Any) -> Any:
    """Call one NVML query; "not supported" and other NVML errors become None."""
    if function is None:
        return None
    try:
        return function(*args)
    except Exception:
        return None


def _text(value: Any) -> str | None:
    if isinstance(value, bytes):
        value = value.decode(errors="replace")
    return str(value) if value else None


def _message(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
