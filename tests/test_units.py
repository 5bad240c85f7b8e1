"""Sizes and device selections as users type them."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from perfprobe.errors import UsageError
from perfprobe.pure.units import format_bytes, parse_device, parse_size


@pytest.mark.parametrize("text, expected", [("4096", 4096), ("64K", 64 << 10), ("256m", 256 << 20),
                                            ("1G", 1 << 30), ("1GiB", 1 << 30), ("2 MB", 2 << 20)])
def test_sizes_in_binary_units(text, expected):
    assert parse_size(text, "--size") == expected


@pytest.mark.parametrize("text", ["-5", "1.5G", "abc", "", "12X", "0x10", "1e9"])
def test_nonsense_sizes_name_the_option(text):
    with pytest.raises(UsageError, match="--size"):
        parse_size(text, "--size")


def test_size_bounds_and_power_of_two():
    with pytest.raises(UsageError, match="between"):
        parse_size("8", "--max-spacing", minimum=16)
    with pytest.raises(UsageError, match="power of two"):
        parse_size("100", "--max-spacing", power_of_two=True)
    assert parse_size(None, "--size") is None


@given(st.integers(min_value=1, max_value=1 << 40), st.sampled_from(["", "K", "M", "G"]))
def test_any_whole_size_round_trips(number, suffix):
    factor = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[suffix]
    value = number * factor
    if value <= 1 << 50:
        assert parse_size(f"{number}{suffix}", "--size") == value


@given(st.text(max_size=12))
def test_parse_size_never_raises_anything_but_usage_error(text):
    try:
        result = parse_size(text, "--size")
    except UsageError:
        return
    assert isinstance(result, int) and result > 0


@given(st.text(max_size=8))
def test_parse_device_accepts_only_indices_and_all(text):
    try:
        result = parse_device(text)
    except UsageError as exc:
        assert "--device" in str(exc)
        return
    assert result == "all" or (isinstance(result, int) and result >= 0) or (
        isinstance(result, tuple) and len(set(result)) == len(result) and all(i >= 0 for i in result))


def test_format_bytes():
    assert format_bytes(1024) == "1 KiB"
    assert format_bytes(48 << 10) == "48 KiB"
    assert format_bytes(100) == "100 B"
