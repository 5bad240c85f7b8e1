"""GPU state readers without a GPU: PCI bus id spelling, the sysfs link reading on a small tree,
and NVML's absence turning into None figures rather than an exception."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from perfprobe.kernels import gpu_state


@pytest.mark.parametrize(("given_id", "expected"), [
    ("00000000:3B:00.0", "0000:3b:00.0"), (b"0000:3b:00.0", "0000:3b:00.0"), ("0000:00:06.0", "0000:00:06.0"),
    ("garbage", "garbage"), (":00.0", ":00.0"),
])
def test_normalize_bus_id(given_id, expected: str) -> None:
    assert gpu_state.normalize_bus_id(given_id) == expected


@given(st.text(max_size=20))
def test_normalize_bus_id_never_raises(text: str) -> None:
    gpu_state.normalize_bus_id(text)


def _device(root: Path, files: dict[str, str]) -> Path:
    folder = root / "0000:3b:00.0"
    folder.mkdir(parents=True)
    for name, text in files.items():
        (folder / name).write_text(text + "\n")
    return root


def test_sysfs_link_reads_generation_width_and_node(tmp_path: Path) -> None:
    root = _device(tmp_path, {"current_link_speed": "16.0 GT/s PCIe", "max_link_speed": "32.0 GT/s PCIe",
                              "current_link_width": "8", "max_link_width": "16", "numa_node": "1"})
    assert gpu_state.sysfs_link("00000000:3B:00.0", root) == {
        "gen_current": 4, "gen_max": 5, "width_current": 8, "width_max": 16, "numa_node": 1}


def test_sysfs_link_without_files_or_node_is_all_none(tmp_path: Path) -> None:
    root = _device(tmp_path, {"numa_node": "-1"})
    assert set(gpu_state.sysfs_link("0000:3b:00.0", root).values()) == {None}
    assert set(gpu_state.sysfs_link("0000:99:00.0", root).values()) == {None}


def test_nvml_missing_gives_none_readings(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml raises ImportError
    nvml = gpu_state.Nvml("0000:3b:00.0")
    assert nvml.error and "NVML unavailable" in nvml.error
    state = nvml.state()
    assert state["pstate"] is None and set(state["link"].values()) == {None}
    assert nvml.driver_version() is None
    nvml.close()
