"""The sysfs/procfs text parsers: CPU lists, CPU masks, sizes, meminfo, bracketed choices."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from perfprobe.host.parse import (
    format_cpulist,
    parse_bracketed,
    parse_cpulist,
    parse_cpumask,
    parse_meminfo,
    parse_size,
)

cpu_sets = st.sets(st.integers(min_value=0, max_value=4095), max_size=300)


def test_cpulist_examples() -> None:
    assert parse_cpulist("0-3,8,10-11") == [0, 1, 2, 3, 8, 10, 11]
    assert parse_cpulist("") == []
    assert parse_cpulist("5\n") == [5]
    assert parse_cpulist("0-7:2") == [0, 2, 4, 6]
    assert parse_cpulist(None) is None


def test_cpulist_garbage_is_none() -> None:
    for text in ("x", "3-1", "1-", "-1", "0-3,a", "0x3"):
        assert parse_cpulist(text) is None, text


@given(cpu_sets)
def test_cpulist_round_trip(cpus: set[int]) -> None:
    assert parse_cpulist(format_cpulist(cpus)) == sorted(cpus)


@given(cpu_sets)
def test_cpulist_format_is_canonical(cpus: set[int]) -> None:
    text = format_cpulist(cpus)
    assert format_cpulist(parse_cpulist(text) or []) == text
    assert " " not in text and ",," not in text


def _mask(cpus: set[int], words: int) -> str:
    value = sum(1 << cpu for cpu in cpus)
    return ",".join(f"{(value >> (32 * w)) & 0xFFFFFFFF:08x}" for w in reversed(range(words)))


@given(cpu_sets)
def test_cpumask_round_trip(cpus: set[int]) -> None:
    assert parse_cpumask(_mask(cpus, 4096 // 32)) == sorted(cpus)


def test_cpumask_examples() -> None:
    assert parse_cpumask("00000000,0000ffff") == list(range(16))
    assert parse_cpumask("00000000,00000101") == [0, 8]
    assert parse_cpumask("zz") is None


@given(st.integers(min_value=0, max_value=1 << 20), st.sampled_from(["", "K", "M", "G", "k"]),
       st.sampled_from(["", "B", "iB"]))
def test_size_round_trip(number: int, unit: str, suffix: str) -> None:
    factor = {"": 1, "K": 1024, "k": 1024, "M": 1 << 20, "G": 1 << 30}[unit]
    suffix = suffix if unit else ""
    assert parse_size(f"{number}{unit}{suffix}") == number * factor


def test_size_examples() -> None:
    assert parse_size("48K") == 48 * 1024
    assert parse_size("2048K") == 2 << 20
    assert parse_size("1M") == 1 << 20
    assert parse_size("32768 kB") == 32 << 20
    assert parse_size("64") == 64
    for text in ("", "K", "1.5M", "-1K", "12Q", None):
        assert parse_size(text) is None


def test_meminfo_node_and_proc_forms() -> None:
    text = "Node 3 MemTotal:       16777216 kB\nNode 3 MemFree:  1024 kB\nHugePages_Total:   4\nbad line"
    assert parse_meminfo(text) == {"MemTotal": 16 << 30, "MemFree": 1 << 20, "HugePages_Total": 4}
    assert parse_meminfo(None) == {}


def test_bracketed() -> None:
    assert parse_bracketed("always [madvise] never") == "madvise"
    assert parse_bracketed("[never]") == "never"
    assert parse_bracketed("always madvise") is None
    assert parse_bracketed(None) is None
