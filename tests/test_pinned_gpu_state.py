"""GPU state readers without a GPU: PCI bus id spelling, the GPU's sysfs link read through the
root-aware SysRoot on a small tree, and NVML's absence turning into None figures, not an exception."""

from __future__ import annotations

import string
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from perfprobe.host.pci import gpu_link, sysfs_address
from perfprobe.host.sysroot import SysRoot
from perfprobe.kernels import nvml


@pytest.mark.parametrize(("given_id", "expected"), [
    ("00000000:3B:00.0", "0000:3b:00.0"), (b"0000:3b:00.0", "0000:3b:00.0"), ("0000:00:06.0", "0000:00:06.0"),
    ("garbage", "garbage"), (":00.0", ":00.0"), ("00010000:3B:00.0", "10000:3b:00.0"),
])
def test_sysfs_address(given_id, expected: str) -> None:
    assert sysfs_address(given_id) == expected


@given(st.text(max_size=20))
def test_sysfs_address_is_lowercase_stripped_and_stable(text: str) -> None:
    address = sysfs_address(text)
    assert address == address.strip().lower()
    assert sysfs_address(address) == address  # already sysfs's spelling: unchanged


@given(st.text(alphabet="0123456789abcdefABCDEF", min_size=1, max_size=8),
       st.text(alphabet=string.hexdigits + ":.", min_size=1, max_size=10))
def test_hex_domains_become_at_least_four_digits(domain: str, rest: str) -> None:
    head, _, tail = sysfs_address(f"{domain}:{rest}").partition(":")
    assert int(head, 16) == int(domain, 16) and len(head) >= 4 and tail == rest.lower()


def _tree(root: Path, files: dict[str, str]) -> SysRoot:
    folder = root / "sys" / "bus" / "pci" / "devices" / "0000:3b:00.0"
    folder.mkdir(parents=True)
    for name, text in files.items():
        (folder / name).write_text(text + "\n")
    return SysRoot(root)


def test_gpu_link_reads_generation_width_and_node(tmp_path: Path) -> None:
    sr = _tree(tmp_path, {"current_link_speed": "16.0 GT/s PCIe", "max_link_speed": "32.0 GT/s PCIe",
                          "current_link_width": "8", "max_link_width": "16", "numa_node": "1"})
    assert gpu_link(sr, "00000000:3B:00.0") == {
        "gen_current": 4, "gen_max": 5, "width_current": 8, "width_max": 16, "numa_node": 1}


def test_gpu_link_without_files_or_node_is_all_none(tmp_path: Path) -> None:
    sr = _tree(tmp_path, {"numa_node": "-1"})
    assert set(gpu_link(sr, "0000:3b:00.0").values()) == {None}
    assert set(gpu_link(sr, "0000:99:00.0").values()) == {None}


def test_nvml_missing_gives_none_readings(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml raises ImportError
    session = nvml.Nvml("0000:3b:00.0")
    assert session.error and "NVML unavailable" in session.error
    state = session.state()
    assert state["pstate"] is None and set(state["link"].values()) == {None}
    assert session.driver_version() is None
    session.close()
    gpus, note = nvml.list_gpus()
    assert gpus == [] and note and "not installed" in note
