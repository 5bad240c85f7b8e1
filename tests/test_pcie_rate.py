"""PCIe link arithmetic: theoretical per-direction rates and sysfs text parsing."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from perfprobe.pure.pcie_rate import gen_from_speed, link_rate, link_rate_or_none, width_from_text


@pytest.mark.parametrize(("gen", "width", "gbs"), [
    (1, 16, 4.0),          # 2.5 GT/s x 8/10 x 16 / 8
    (2, 16, 8.0),
    (3, 16, 15.754),       # 8 x 128/130 x 16 / 8
    (4, 16, 31.508),
    (5, 16, 63.015),
    (5, 8, 31.508),
    (4, 4, 7.877),
    (6, 16, 121.0),        # 64 x 242/256 x 16 / 8
])
def test_link_rate_per_direction(gen: int, width: int, gbs: float) -> None:
    assert link_rate(gen, width).gbs_per_direction == pytest.approx(gbs, abs=5e-3)


def test_link_rate_names_its_encoding() -> None:
    assert link_rate(2, 1).encoding == "8b/10b"
    assert link_rate(3, 1).encoding == "128b/130b"
    assert link_rate(5, 16).label == "Gen5 x16"


@pytest.mark.parametrize(("gen", "width"), [(0, 16), (8, 16), (5, 3), (5, 0)])
def test_link_rate_rejects_unknown_links(gen: int, width: int) -> None:
    with pytest.raises(ValueError):
        link_rate(gen, width)


def test_link_rate_or_none_on_missing_figures() -> None:
    assert link_rate_or_none(None, 16) is None
    assert link_rate_or_none(5, None) is None
    assert link_rate_or_none(9, 16) is None
    assert link_rate_or_none(4, 16) is not None


@pytest.mark.parametrize(("text", "gen"), [
    ("32.0 GT/s PCIe", 5), ("16.0 GT/s PCIe", 4), ("8.0 GT/s PCIe", 3), ("8 GT/s", 3),
    ("5.0 GT/s PCIe", 2), ("2.5 GT/s PCIe", 1), ("64.0 GT/s PCIe", 6),
    ("Unknown", None), ("", None), (None, None), ("3.0 GT/s", None),
])
def test_gen_from_sysfs_speed(text: str | None, gen: int | None) -> None:
    assert gen_from_speed(text) == gen


@pytest.mark.parametrize(("text", "width"), [("16", 16), ("x8\n", 8), ("0", None), ("", None),
                                             (None, None), ("wide", None), ("²", None)])
def test_width_from_sysfs_text(text: str | None, width: int | None) -> None:
    assert width_from_text(text) == width


@given(st.text(max_size=30))
def test_parsers_give_a_known_link_or_none(text: str) -> None:
    gen = gen_from_speed(text)
    width = width_from_text(text)
    assert gen is None or link_rate(gen, 1).gen == gen  # a generation link_rate knows
    assert width is None or (isinstance(width, int) and width > 0)


@given(st.integers(1, 6), st.sampled_from([1, 2, 4, 8, 16]))
def test_rate_grows_with_width_and_gen(gen: int, width: int) -> None:
    rate = link_rate(gen, width).gbs_per_direction
    if width < 16:
        assert link_rate(gen, width * 2).gbs_per_direction == pytest.approx(2 * rate)
    if gen < 6:
        assert link_rate(gen + 1, width).gbs_per_direction > rate
